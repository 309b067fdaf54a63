/* aead.h: authenticated encryption of everything that crosses a WAN link after the
 * handshake (auth.h), and the keys for it.
 *
 * Keys. The handshake ends with both sides holding the job secret, a fresh X25519 shared
 * secret DH, both nonces (Nc, Ns), both identities, the suite and the key-update
 * interval (auth.h). From them, with HKDF-SHA256 (RFC 5869):
 *     PRK = HKDF(salt = Nc || Ns, IKM = secret || DH, info = "isthmus v3 prk")
 *     traffic secret || IV = HKDF-Expand(PRK, "isthmus v3 traffic " dir || len(transport)
 *                            || transport || job || cid || sid || suite, 32 + 12)
 * per direction (dir "c2s" or "s2c"; transport names what the connection carries:
 * "gw-tcp", "gw-udp", "copy", "copy-udp"). So a key of one direction, connection,
 * transport or job is useless on any other, every connection has fresh keys, and
 * recorded traffic stays sealed to whoever obtains the job secret later (DH).
 * ism_aead_keys_bind() mixes more context in (a UDP connection's id and set-up nonces);
 * ism_aead_keys_sub() derives independent keys for another use of the same handshake.
 *
 * Records. A record is sealed under a 64-bit sequence number that the caller keeps per
 * direction and never repeats: the nonce is the IV with the number XORed into its last 8
 * bytes (as TLS 1.3 and QUIC). The caller's additional data (a length, a packet header)
 * is authenticated with it; the 16-byte tag follows the ciphertext.
 *
 * Key update. Records are sealed in epochs of 2^rekey_log2 sequence numbers (agreed at
 * the handshake); epoch e uses the key HKDF-Expand(traffic secret, "isthmus v3 key" ||
 * e, 32), so each side steps on its own at the same number, with no message to lose or
 * forge, and an opener can compute any epoch's key (a long loss of datagrams is no
 * dead end). The sealing side keeps only the current key; an opener keeps the previous
 * one for late datagrams and the next one ready, and tries a key further ahead only for
 * a record that then opens with it (a forged number moves nothing).
 */
#ifndef ISM_WAN_AEAD_H
#define ISM_WAN_AEAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "auth.h"

#define ISM_AEAD_KEY_LEN 32
#define ISM_AEAD_IV_LEN 12
#define ISM_AEAD_TAG_LEN 16

/* Cipher suites (auth.h negotiates them; values are on the wire). */
enum {
    ISM_AEAD_NONE = 0,              /* explicit opt-out: bytes in the clear */
    ISM_AEAD_AES256GCM = 1,
    ISM_AEAD_CHACHA20POLY1305 = 2
};

const char *ism_aead_suite_name(int suite);
/* "aes-256-gcm", "chacha20-poly1305", "none" -> suite, or -1. */
int ism_aead_suite_parse(const char *name);
/* 1 when this CPU encrypts AES in hardware (x86 AES-NI, arm64 AES instructions). */
int ism_aead_cpu_has_aes(void);

typedef struct ism_aead_dir_keys {
    uint8_t secret[ISM_AEAD_KEY_LEN]; /* the direction's traffic secret: epoch keys come from it */
    uint8_t iv[ISM_AEAD_IV_LEN];
} ism_aead_dir_keys;

typedef struct ism_aead_keys {
    int suite;
    int rekey_log2; /* epochs of 2^rekey_log2 sequence numbers */
    ism_aead_dir_keys c2s, s2c;
} ism_aead_keys;

/* Derive both directions' keys from a handshake that ended DONE (before its wipe), or
 * of a client that verified the server and awaits the verdict (the same keys). */
int ism_aead_derive(const ism_auth_hs *h, const char *transport, ism_aead_keys *out);
/* Mix ctx into both directions' secrets and IVs (in place): keys bound to more context. */
int ism_aead_keys_bind(ism_aead_keys *k, const char *label, const uint8_t *ctx, size_t n);
/* Independent keys for another use of the same handshake (out != k). */
int ism_aead_keys_sub(const ism_aead_keys *k, const char *label, ism_aead_keys *out);
void ism_aead_keys_wipe(ism_aead_keys *k);

/* One direction's sealing or opening state. */
typedef struct ism_aead {
    int suite;
    int sealing;           /* 1: this side seals, 0: it opens */
    int rekey_log2;
    uint64_t epoch;        /* of the current key */
    uint8_t secret[ISM_AEAD_KEY_LEN];
    uint8_t iv[ISM_AEAD_IV_LEN];
    void *ctx, *prev_ctx, *next_ctx; /* EVP_CIPHER_CTX of epochs epoch, epoch-1, epoch+1 */
    uint64_t rekeys;       /* key updates so far */
    uint64_t failed;       /* records that did not open */
} ism_aead;

/* sealing: 1 for the direction this side sends; rekey_log2 from the handshake. The
 * direction's secret is copied; wipe yours. Returns 0, or -1 (OpenSSL failure). */
int ism_aead_init(ism_aead *a, int suite, const ism_aead_dir_keys *k, int sealing,
                  int rekey_log2);
void ism_aead_free(ism_aead *a);

/* Seal the bytes of iov[0..n) (plaintext) into out (as many bytes), the tag into tag.
 * 0, or -1 (a sequence number before the current key's, or OpenSSL failure). */
int ism_aead_seal(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const struct iovec *iov, int n, uint8_t *out, uint8_t tag[ISM_AEAD_TAG_LEN]);
/* Open len bytes of in into out (may be the same buffer) and check the tag: 0, or -1
 * when the record is not authentic (or its key is gone); out is then wiped. */
int ism_aead_open(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const uint8_t *in, size_t len, const uint8_t tag[ISM_AEAD_TAG_LEN],
                  uint8_t *out);

/* n more states of a's direction, keys and epoch 0 (the crypto workers' own, one per
 * thread: sstream.c, udp/sealbatch.c), or NULL (no memory, OpenSSL). */
ism_aead *ism_aead_clones(const ism_aead *a, int n);
void ism_aead_clones_free(ism_aead *w, int n);
/* Key updates of a direction run on a and its clones w[0..n): each counted once. */
uint64_t ism_aead_clones_rekeys(const ism_aead *a, const ism_aead *w, int n);

/* A window of the last ISM_AEAD_WINDOW - 64 sequence numbers opened (datagrams): a
 * number seen before, or older than that, is a replay or too late. */
#define ISM_AEAD_WINDOW 4096
typedef struct ism_aead_window {
    uint64_t top; /* highest number accepted + 1 (0: none yet) */
    uint64_t bits[ISM_AEAD_WINDOW / 64];
} ism_aead_window;
/* 1 if seq may be opened (new and inside the window); call _mark after it opened. */
int ism_aead_window_check(const ism_aead_window *w, uint64_t seq);
void ism_aead_window_mark(ism_aead_window *w, uint64_t seq);

#endif
