/* auth.h: mutual authentication of two gateways of the same job over a fresh TCP link,
 * and the ephemeral key exchange the link's traffic keys come from.
 *
 * Owns the job key (job id + shared secret), loading it safely from hex or a private
 * file, and the handshake below. It proves that both ends hold the job secret, learns
 * the peer's identity, agrees on the link's cipher suite and key-update interval, and
 * makes a fresh X25519 shared secret, so that the traffic keys (aead.h) depend on both:
 * recorded traffic stays unreadable to someone who obtains the job secret later
 * (forward secrecy, as WireGuard's PSK mode and TLS 1.3's psk_dhe_ke). Every member of a
 * job holds the same secret, so the identity a peer claims is only as good as the
 * members: any of them could claim another's (docs/security.md).
 *
 * Wire protocol (version 3). Integers little-endian. Every message except the verdict
 * starts with an 8-byte preamble: "ISAU", version (3), type, code, 0.
 *
 *   client -> server  HELLO     (type 1, 104 bytes): preamble with code = the suites the
 *                               client accepts (bit 1 << ISM_AEAD_*, aead.h) | 0x80 when
 *                               its CPU has AES instructions; site u32, gw u32,
 *                               Nc[32] (fresh RAND_bytes nonce), job[16], Ec[32] (X25519
 *                               public key), rekey u8 (log2 of the records per key it
 *                               wants), 0[7]
 *   server -> client  CHALLENGE (type 2, 120 bytes): preamble with code = the suite the
 *                               server chose; site u32, gw u32, Ns[32], Es[32], rekey u8,
 *                               0[7], MACs[32]
 *   client -> server  RESPONSE  (type 3, 40 bytes): preamble, MACc[32]
 *   server -> client  VERDICT   (1 byte): 1 = accepted, 0 = refused
 *   either direction  REFUSE    (type 4, 8 bytes): preamble with code = ISM_AUTH_R_*,
 *                               sent instead of the next message when a check fails
 *
 *   MACs = HMAC-SHA256(secret, "isthmus-auth-server" || job || cid || sid || Nc || Ns ||
 *                      offer || suite || Ec || Es || rekey_c || rekey_s)
 *   MACc = HMAC-SHA256(secret, "isthmus-auth-client" || job || cid || sid || Ns || Nc ||
 *                      offer || suite || Ec || Es || rekey_c || rekey_s)
 *   where cid/sid are the client/server identities as site u32 || gw u32 (LE), offer the
 *   HELLO's code byte and suite the CHALLENGE's.
 *
 * The suite: what both sides accept. A side set to "none" (an explicit opt-out) accepts
 * only ISM_AEAD_NONE, a side set to encrypt accepts only real ciphers, so a job is never
 * silently downgraded; when both accept both ciphers the server takes AES-256-GCM if both
 * CPUs have AES instructions, else ChaCha20-Poly1305. The key-update interval is the
 * smaller of the two asked for. Offer, choice, key shares and intervals are under both
 * MACs, so a change on the path fails the handshake.
 *
 * The server answers a HELLO with a foreign job id or version by REFUSE (no MAC is ever
 * computed for the wrong job). The client checks MACs in constant time before revealing
 * MACc and sends REFUSE(BADMAC) if it is wrong, so both ends report the failure. The
 * distinct labels stop a reflected MAC from being replayed in the other role; a peer
 * claiming our own identity or echoing our own nonce is refused for the same reason; a
 * key share whose result is all zeros (a low-order point) is refused.
 */
#ifndef ISM_WAN_AUTH_H
#define ISM_WAN_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define ISM_AUTH_JOB_LEN 16
#define ISM_AUTH_SECRET_MIN 16 /* 128 bits: below this a secret is guessable offline */
#define ISM_AUTH_SECRET_MAX 64

typedef struct ism_auth_id {
    uint32_t site, gw;
} ism_auth_id;

typedef struct ism_auth_key {
    uint8_t job[ISM_AUTH_JOB_LEN];
    uint8_t secret[ISM_AUTH_SECRET_MAX];
    size_t secret_len; /* ISM_AUTH_SECRET_MIN..ISM_AUTH_SECRET_MAX */
} ism_auth_key;

/* Return codes (0 = success). */
enum {
    ISM_AUTH_EIO = -1,       /* socket error */
    ISM_AUTH_ECLOSED = -2,   /* peer closed the connection mid-handshake */
    ISM_AUTH_ETIMEDOUT = -3, /* handshake did not finish within timeout_ms */
    ISM_AUTH_EPROTO = -4,    /* peer is not speaking this protocol/version */
    ISM_AUTH_EJOB = -5,      /* peer belongs to another job */
    ISM_AUTH_EAUTH = -6,     /* a MAC did not verify (on either side): wrong secret */
    ISM_AUTH_EIDENT = -7,    /* peer claims our own identity or replays our nonce */
    ISM_AUTH_ECRYPTO = -8,   /* OpenSSL failure (RNG or HMAC) */
    ISM_AUTH_EINVAL = -9,    /* bad argument */
    ISM_AUTH_EKEY = -10,     /* malformed key, or key file missing or unsafe */
    ISM_AUTH_ESUITE = -11    /* no link-encryption setting both sides accept */
};

/* Reason codes carried by REFUSE. */
enum {
    ISM_AUTH_R_VERSION = 1,
    ISM_AUTH_R_JOB = 2,
    ISM_AUTH_R_BADMAC = 3,
    ISM_AUTH_R_IDENT = 4,
    ISM_AUTH_R_SUITE = 5
};

/* The suites a side accepts (bit 1 << ISM_AEAD_*): the default encrypts. */
#define ISM_AUTH_SUITES_AEAD 0x06u /* AES-256-GCM or ChaCha20-Poly1305 */
#define ISM_AUTH_SUITES_NONE 0x01u /* only in the clear: an explicit opt-out */

/* Run the handshake on a connected stream socket (blocking or not; its mode is left as
 * found). timeout_ms (> 0) bounds the whole exchange. On success returns 0 and stores
 * the peer's identity in *peer_out (may be NULL). On failure returns a negative
 * ISM_AUTH_E* code with a reason in err that names the peer and never contains the
 * secret or a MAC. The fd is never closed here: on failure the caller must close it
 * and must not use it for traffic. These drive the state machine below with blocking,
 * deadline-bounded reads and writes; a server that must stay responsive while a peer
 * is slow (the gateway) drives the state machine from its own event loop instead. */
int ism_auth_client(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen);
int ism_auth_server(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen);
/* The same, accepting the given suites and asking for a key-update interval (log2; 0:
 * the default), and on success deriving the traffic keys for transport into *keys
 * (aead.h; keys->suite says whether to encrypt). The plain forms above are for tools
 * that send nothing of value after the handshake: they agree on ISM_AEAD_NONE (what
 * the wire then says is what happens) and derive nothing. */
struct ism_aead_keys;
int ism_auth_run(int fd, int server, const ism_auth_key *k, ism_auth_id self, unsigned suites,
                 int rekey_log2, const char *transport, ism_auth_id *peer_out,
                 struct ism_aead_keys *keys, int timeout_ms, char *err, size_t errlen);
/* ism_auth_run for a client with something to say right after the handshake: once the
 * server's MAC has verified and our RESPONSE has gone, early(arg, keys, deadline) is
 * called with the traffic keys (those *keys gets) and may write to fd before the
 * server's verdict arrives, saving the round trip the verdict costs. Only an
 * authenticated server can read what it writes, and the server reads it only after the
 * verdict it sent (its handshake consumes nothing beyond RESPONSE). early returns 0, or
 * an ISM_SOCK_E* code that fails the handshake as an I/O error would. */
int ism_auth_run_early(int fd, const ism_auth_key *k, ism_auth_id self, unsigned suites,
                       int rekey_log2, const char *transport, ism_auth_id *peer_out,
                       struct ism_aead_keys *keys, int timeout_ms, char *err, size_t errlen,
                       int (*early)(void *arg, const struct ism_aead_keys *keys,
                                    int64_t deadline_ms),
                       void *arg);

/* The handshake without I/O (auth_hs.c): the caller moves the bytes, so one event loop
 * can run many handshakes at once and a silent or slow peer delays nobody but itself.
 * It never asks for more input than the message it waits for, so bytes that follow the
 * handshake on the stream stay unread. Use:
 *
 *   ism_auth_hs_start(&h, server, key, self, "1.2.3.4:5");
 *   while (h.state == ISM_AUTH_HS_RUN) {
 *       n = ism_auth_hs_pending(&h, &out);   // > 0: send these, report with _sent()
 *       m = ism_auth_hs_wanted(&h, &in);     // > 0: read up to m bytes into in, _received()
 *   }
 *   // FAILED: h.rc, h.err; ism_auth_hs_pending() may still hold a refusal to send
 *   //         (best effort, never wait for it). DONE: h.peer. Then ism_auth_hs_wipe().
 *
 * The key must outlive the handshake. The struct holds nonces and MACs: wipe it. */
#define ISM_AUTH_NONCE_LEN 32
#define ISM_AUTH_MAC_LEN 32
#define ISM_AUTH_EPUB_LEN 32 /* an X25519 public key */
#define ISM_AUTH_MSG_MAX 120
/* log2 of the records (or datagrams) sealed under one key: 2^22 records of at most 16 KiB
 * is 64 GiB per AES-GCM key, under TLS 1.3's 2^24.5; at most 2^23, at least 2^4 (tests) */
#define ISM_AUTH_REKEY_DEFAULT 22
#define ISM_AUTH_REKEY_MIN 4
#define ISM_AUTH_REKEY_MAX 23

enum { ISM_AUTH_HS_RUN = 0, ISM_AUTH_HS_DONE = 1, ISM_AUTH_HS_FAILED = 2 };

typedef struct ism_auth_hs {
    /* read by callers */
    int state;          /* ISM_AUTH_HS_* */
    int rc;             /* 0, or the ISM_AUTH_E* code once FAILED */
    ism_auth_id peer;   /* the peer's identity once DONE */
    int suite;          /* the cipher suite agreed (ISM_AEAD_*), once DONE */
    int rekey_log2;     /* the key-update interval agreed (log2 of records per key) */
    char err[320];      /* why it FAILED; names the peer, never a secret */
    /* private */
    int server, phase;
    unsigned suites;    /* what this side accepts */
    uint8_t offer;      /* the HELLO's code byte (the client's suites) */
    uint8_t rekey_c, rekey_s; /* the intervals each side asked for */
    void *eph;          /* our ephemeral X25519 private key (EVP_PKEY) until used */
    uint8_t epub_c[ISM_AUTH_EPUB_LEN], epub_s[ISM_AUTH_EPUB_LEN];
    uint8_t dh[32];     /* the X25519 shared secret, once both shares are known */
    const ism_auth_key *key;
    ism_auth_id self;
    char peer_name[80];
    size_t need, have, out_len, out_off;
    uint8_t in[ISM_AUTH_MSG_MAX], out[ISM_AUTH_MSG_MAX];
    uint8_t nc[ISM_AUTH_NONCE_LEN], ns[ISM_AUTH_NONCE_LEN];
    uint8_t mac[ISM_AUTH_MAC_LEN], expect[ISM_AUTH_MAC_LEN];
} ism_auth_hs;

/* server: 1 for the accepting side; suites: what this side accepts (ISM_AUTH_SUITES_*,
 * or one suite's bit alone to force it); rekey_log2: the key-update interval it wants
 * (0: the default; clamped to ISM_AUTH_REKEY_MIN..MAX). peer_name (may be NULL) is only
 * used in messages. */
void ism_auth_hs_start(ism_auth_hs *h, int server, const ism_auth_key *k, ism_auth_id self,
                       unsigned suites, int rekey_log2, const char *peer_name);
/* Bytes to send now (0: none), and how many of them went out. */
size_t ism_auth_hs_pending(const ism_auth_hs *h, const uint8_t **p);
void ism_auth_hs_sent(ism_auth_hs *h, size_t n);
/* Room for input now (0 while output is pending or once ended), and how much arrived. */
size_t ism_auth_hs_wanted(ism_auth_hs *h, uint8_t **p);
void ism_auth_hs_received(ism_auth_hs *h, size_t n);
/* The transport failed: sock_rc is an ISM_SOCK_E* code (a closed peer, a deadline that
 * passed after timeout_ms, or errno). Ends the handshake with the matching message. */
void ism_auth_hs_io_failed(ism_auth_hs *h, int sock_rc, int timeout_ms);
/* 1 on a client whose handshake has verified the server's MAC and now waits for the
 * verdict (the keys can be derived: aead.h), else 0. */
int ism_auth_hs_client_verified(const ism_auth_hs *h);
void ism_auth_hs_wipe(ism_auth_hs *h);

/* Fill k from a 32-hex-digit job id and a 32..128-hex-digit secret. */
int ism_auth_key_from_hex(ism_auth_key *k, const char *job_hex, const char *secret_hex, char *err,
                          size_t errlen);

/* Like ism_auth_key_from_hex() with the secret read from a file holding it in hex
 * (surrounding whitespace ignored). The file must be a regular file with no group or
 * other permissions (chmod 600), else it is refused, as ssh does for private keys. */
int ism_auth_key_load_file(ism_auth_key *k, const char *job_hex, const char *path, char *err,
                           size_t errlen);

/* Wipe a key once it is no longer needed. */
void ism_auth_key_clear(ism_auth_key *k);

const char *ism_auth_strerror(int code);

#endif
