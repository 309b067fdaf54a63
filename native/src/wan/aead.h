/* aead.h: authenticated encryption of everything that crosses a WAN link after the
 * handshake (auth.h), and the keys for it.
 *
 * Keys. The handshake ends with both sides holding the job secret, both fresh nonces
 * (Nc, Ns), both identities and the cipher suite the server chose (auth.h). From them,
 * HKDF-SHA256 (RFC 5869) gives each direction of one connection its own key and IV:
 *     PRK = HKDF-Extract(salt = Nc || Ns, IKM = secret)
 *     key || iv = HKDF-Expand(PRK, "isthmus v2 " dir " " transport || job || cid || sid
 *                             || suite, 32 + 12)
 * with dir "c2s" or "s2c" and transport naming what the connection carries ("gw-tcp",
 * "gw-udp", "copy", "probe"), so a key of one direction, connection, transport or job is
 * useless on any other, and every reconnection (fresh nonces) has fresh keys.
 *
 * Records. A record is sealed under a 64-bit sequence number that the caller keeps per
 * direction and never repeats under one key: the nonce is the IV with the number XORed
 * into its last 8 bytes (as TLS 1.3 and QUIC). The caller's additional data (a length, a
 * packet header) is authenticated with it; the 16-byte tag follows the ciphertext.
 *
 * Key update. Every `rekey` records (from the start, by sequence number) both sides step
 * to the next key, k' = HKDF-Expand(k, "isthmus v2 key update", 32), on their own: no
 * message, so nothing to lose or forge. The default keeps each AES-256-GCM key to 2^22
 * records of at most 16 KiB (64 GiB), below TLS 1.3's usage limit of 2^24.5 such records.
 * A receiver keeps the previous key as well, for datagrams of the last epoch that arrive
 * late; a sequence number older than that is refused.
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
#define ISM_AEAD_REKEY_DEFAULT (1ull << 22)

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
    uint8_t key[ISM_AEAD_KEY_LEN];
    uint8_t iv[ISM_AEAD_IV_LEN];
} ism_aead_dir_keys;

typedef struct ism_aead_keys {
    int suite;
    ism_aead_dir_keys c2s, s2c;
} ism_aead_keys;

/* Derive both directions' keys from a handshake that ended DONE (before its wipe). */
int ism_aead_derive(const ism_auth_hs *h, const char *transport, ism_aead_keys *out);
void ism_aead_keys_wipe(ism_aead_keys *k);

/* One direction's sealing or opening state. */
typedef struct ism_aead {
    int suite;
    int sealing;           /* 1: this side seals, 0: it opens */
    uint64_t rekey;        /* records per key */
    uint64_t epoch;        /* seq / rekey of the current key */
    uint8_t key[ISM_AEAD_KEY_LEN], prev[ISM_AEAD_KEY_LEN];
    uint8_t iv[ISM_AEAD_IV_LEN];
    void *ctx, *prev_ctx;  /* EVP_CIPHER_CTX with the current / previous key */
    uint64_t rekeys;       /* key updates so far */
} ism_aead;

/* sealing: 1 for the direction this side sends. rekey 0 means the default. The keys of
 * the given direction are copied; wipe yours. Returns 0, or -1 (OpenSSL failure). */
int ism_aead_init(ism_aead *a, int suite, const ism_aead_dir_keys *k, int sealing,
                  uint64_t rekey);
void ism_aead_free(ism_aead *a);

/* Seal the bytes of iov[0..n) (plaintext) into out (as many bytes), the tag into tag.
 * 0, or -1 (a sequence number before the current key's, or OpenSSL failure). */
int ism_aead_seal(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const struct iovec *iov, int n, uint8_t *out, uint8_t tag[ISM_AEAD_TAG_LEN]);
/* Open len bytes of in into out (may be the same buffer) and check the tag: 0, or -1
 * when the record is not authentic (or its key is gone); out is then not to be used. */
int ism_aead_open(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const uint8_t *in, size_t len, const uint8_t tag[ISM_AEAD_TAG_LEN],
                  uint8_t *out);

/* A window of the last ISM_AEAD_WINDOW sequence numbers opened (datagrams): a number
 * seen before, or older than the window, is a replay or too late. */
#define ISM_AEAD_WINDOW 4096
typedef struct ism_aead_window {
    uint64_t top; /* highest number accepted + 1 (0: none yet) */
    uint64_t bits[ISM_AEAD_WINDOW / 64];
} ism_aead_window;
/* 1 if seq may be opened (new and inside the window); call _mark after it opened. */
int ism_aead_window_check(const ism_aead_window *w, uint64_t seq);
void ism_aead_window_mark(ism_aead_window *w, uint64_t seq);

#endif
