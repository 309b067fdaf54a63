/* auth.h: mutual authentication of two gateways of the same job over a fresh TCP link.
 *
 * Owns the job key (job id + shared secret), loading it safely from hex or a private
 * file, and the challenge-response handshake below. It proves that both ends hold the
 * job secret and learns the peer's identity; it does not encrypt or integrity-protect
 * the traffic that follows, so an on-path attacker can still read or hijack the stream
 * after the handshake (run the WAN over a VPN or tunnel where that matters).
 *
 * Wire protocol (version 1). Integers little-endian. Every message except the verdict
 * starts with an 8-byte preamble: "ISAU", version (1), type, code, 0.
 *
 *   client -> server  HELLO     (type 1, 64 bytes): preamble, site u32, gw u32,
 *                               Nc[32] (fresh RAND_bytes nonce), job[16]
 *   server -> client  CHALLENGE (type 2, 80 bytes): preamble, site u32, gw u32, Ns[32],
 *                               MACs[32]
 *   client -> server  RESPONSE  (type 3, 40 bytes): preamble, MACc[32]
 *   server -> client  VERDICT   (1 byte): 1 = accepted, 0 = refused
 *   either direction  REFUSE    (type 4, 8 bytes): preamble with code = ISM_AUTH_R_*,
 *                               sent instead of the next message when a check fails
 *
 *   MACs = HMAC-SHA256(secret, "isthmus-auth-server" || job || cid || sid || Nc || Ns)
 *   MACc = HMAC-SHA256(secret, "isthmus-auth-client" || job || cid || sid || Ns || Nc)
 *   where cid/sid are the client/server identities as site u32 || gw u32 (LE).
 *
 * The server answers a HELLO with a foreign job id or version by REFUSE (no MAC is ever
 * computed for the wrong job). The client checks MACs in constant time before revealing
 * MACc and sends REFUSE(BADMAC) if it is wrong, so both ends report the failure. The
 * distinct labels stop a reflected MAC from being replayed in the other role; a peer
 * claiming our own identity or echoing our own nonce is refused for the same reason.
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
    ISM_AUTH_EKEY = -10      /* malformed key, or key file missing or unsafe */
};

/* Reason codes carried by REFUSE. */
enum {
    ISM_AUTH_R_VERSION = 1,
    ISM_AUTH_R_JOB = 2,
    ISM_AUTH_R_BADMAC = 3,
    ISM_AUTH_R_IDENT = 4
};

/* Run the handshake on a connected stream socket (blocking or not; its mode is left as
 * found). timeout_ms (> 0) bounds the whole exchange. On success returns 0 and stores
 * the peer's identity in *peer_out (may be NULL). On failure returns a negative
 * ISM_AUTH_E* code with a reason in err that names the peer and never contains the
 * secret or a MAC. The fd is never closed here: on failure the caller must close it
 * and must not use it for traffic. */
int ism_auth_client(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen);
int ism_auth_server(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen);

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
