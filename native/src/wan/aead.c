/* aead.c: the key schedule and the AEAD records of aead.h, on OpenSSL's EVP. Keys are
 * wiped when replaced or freed; nothing here formats a key into any message. */
#include "aead.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_AES
#define HWCAP_AES (1 << 3)
#endif
#endif

#define UPDATE_LABEL "isthmus v2 key update"

const char *ism_aead_suite_name(int suite)
{
    switch (suite) {
    case ISM_AEAD_NONE:
        return "none";
    case ISM_AEAD_AES256GCM:
        return "aes-256-gcm";
    case ISM_AEAD_CHACHA20POLY1305:
        return "chacha20-poly1305";
    default:
        return "unknown";
    }
}

int ism_aead_suite_parse(const char *name)
{
    for (int s = ISM_AEAD_NONE; s <= ISM_AEAD_CHACHA20POLY1305; s++)
        if (strcmp(name, ism_aead_suite_name(s)) == 0)
            return s;
    return -1;
}

int ism_aead_cpu_has_aes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_AES) != 0;
#elif defined(__aarch64__)
    return (getauxval(AT_HWCAP) & HWCAP_AES) != 0;
#else
    return 0;
#endif
}

static const EVP_CIPHER *cipher_of(int suite)
{
    return suite == ISM_AEAD_AES256GCM          ? EVP_aes_256_gcm()
           : suite == ISM_AEAD_CHACHA20POLY1305 ? EVP_chacha20_poly1305()
                                                : NULL;
}

/* HKDF-SHA256: extract-and-expand (salt given) or expand only (salt NULL: ikm is a PRK). */
static int hkdf(const uint8_t *salt, size_t saltlen, const uint8_t *ikm, size_t ikmlen,
                const uint8_t *info, size_t infolen, uint8_t *out, size_t outlen)
{
    EVP_PKEY_CTX *p = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    int ok = p && EVP_PKEY_derive_init(p) > 0 && EVP_PKEY_CTX_set_hkdf_md(p, EVP_sha256()) > 0 &&
             (salt ? EVP_PKEY_CTX_set1_hkdf_salt(p, salt, (int)saltlen) > 0
                   : EVP_PKEY_CTX_set_hkdf_mode(p, EVP_PKEY_HKDEF_MODE_EXPAND_ONLY) > 0) &&
             EVP_PKEY_CTX_set1_hkdf_key(p, ikm, (int)ikmlen) > 0 &&
             EVP_PKEY_CTX_add1_hkdf_info(p, info, (int)infolen) > 0 &&
             EVP_PKEY_derive(p, out, &outlen) > 0;
    EVP_PKEY_CTX_free(p);
    return ok ? 0 : -1;
}

static void put_id(uint8_t *p, ism_auth_id id)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(id.site >> (8 * i));
        p[4 + i] = (uint8_t)(id.gw >> (8 * i));
    }
}

static int derive_dir(const uint8_t *prk, const char *dir, const char *transport,
                      const ism_auth_hs *h, ism_aead_dir_keys *out)
{
    uint8_t info[160];
    size_t n = (size_t)snprintf((char *)info, 64, "isthmus v2 %s %s", dir, transport);
    if (n >= 64)
        return -1;
    ism_auth_id cid = h->server ? h->peer : h->self, sid = h->server ? h->self : h->peer;
    memcpy(info + n, h->key->job, ISM_AUTH_JOB_LEN);
    n += ISM_AUTH_JOB_LEN;
    put_id(info + n, cid);
    put_id(info + n + 8, sid);
    n += 16;
    info[n++] = (uint8_t)h->suite;
    uint8_t okm[ISM_AEAD_KEY_LEN + ISM_AEAD_IV_LEN];
    int rc = hkdf(NULL, 0, prk, 32, info, n, okm, sizeof okm);
    memcpy(out->key, okm, ISM_AEAD_KEY_LEN);
    memcpy(out->iv, okm + ISM_AEAD_KEY_LEN, ISM_AEAD_IV_LEN);
    OPENSSL_cleanse(okm, sizeof okm);
    return rc;
}

int ism_aead_derive(const ism_auth_hs *h, const char *transport, ism_aead_keys *out)
{
    memset(out, 0, sizeof *out);
    if (h->state != ISM_AUTH_HS_DONE)
        return -1;
    out->suite = h->suite;
    uint8_t salt[2 * ISM_AUTH_NONCE_LEN], prk[32];
    memcpy(salt, h->nc, ISM_AUTH_NONCE_LEN);
    memcpy(salt + ISM_AUTH_NONCE_LEN, h->ns, ISM_AUTH_NONCE_LEN);
    /* extract alone: HKDF-Expand with an empty info is not what we want, so the PRK is
     * taken from a 32-byte expand of the extract step under its own label */
    static const uint8_t label[] = "isthmus v2 prk";
    int rc = hkdf(salt, sizeof salt, h->key->secret, h->key->secret_len, label,
                  sizeof label - 1, prk, sizeof prk);
    if (rc == 0)
        rc = derive_dir(prk, "c2s", transport, h, &out->c2s) |
             derive_dir(prk, "s2c", transport, h, &out->s2c);
    OPENSSL_cleanse(prk, sizeof prk);
    OPENSSL_cleanse(salt, sizeof salt);
    if (rc)
        ism_aead_keys_wipe(out);
    return rc ? -1 : 0;
}

void ism_aead_keys_wipe(ism_aead_keys *k) { OPENSSL_cleanse(k, sizeof *k); }

static int next_key(const uint8_t k[ISM_AEAD_KEY_LEN], uint8_t out[ISM_AEAD_KEY_LEN])
{
    return hkdf(NULL, 0, k, ISM_AEAD_KEY_LEN, (const uint8_t *)UPDATE_LABEL,
                sizeof UPDATE_LABEL - 1, out, ISM_AEAD_KEY_LEN);
}

static void *ctx_new(int suite, const uint8_t *key, int sealing)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return NULL;
    if (EVP_CipherInit_ex(c, cipher_of(suite), NULL, key, NULL, sealing) != 1) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    return c;
}

int ism_aead_init(ism_aead *a, int suite, const ism_aead_dir_keys *k, int sealing,
                  uint64_t rekey)
{
    memset(a, 0, sizeof *a);
    if (!cipher_of(suite))
        return -1;
    a->suite = suite;
    a->sealing = sealing;
    a->rekey = rekey ? rekey : ISM_AEAD_REKEY_DEFAULT;
    memcpy(a->key, k->key, ISM_AEAD_KEY_LEN);
    memcpy(a->iv, k->iv, ISM_AEAD_IV_LEN);
    a->ctx = ctx_new(suite, a->key, sealing);
    return a->ctx ? 0 : -1;
}

void ism_aead_free(ism_aead *a)
{
    EVP_CIPHER_CTX_free(a->ctx);
    EVP_CIPHER_CTX_free(a->prev_ctx);
    OPENSSL_cleanse(a, sizeof *a);
}

/* Step the current key to epoch e (> a->epoch): the old one stays as prev. */
static int step_to(ism_aead *a, uint64_t e)
{
    if (e - a->epoch > 2)
        return -1; /* never jump far on a number from the network */
    while (a->epoch < e) {
        uint8_t nk[ISM_AEAD_KEY_LEN];
        if (next_key(a->key, nk) != 0)
            return -1;
        void *nc = ctx_new(a->suite, nk, a->sealing);
        if (!nc) {
            OPENSSL_cleanse(nk, sizeof nk);
            return -1;
        }
        EVP_CIPHER_CTX_free(a->prev_ctx);
        a->prev_ctx = a->ctx;
        memcpy(a->prev, a->key, ISM_AEAD_KEY_LEN);
        a->ctx = nc;
        memcpy(a->key, nk, ISM_AEAD_KEY_LEN);
        OPENSSL_cleanse(nk, sizeof nk);
        a->epoch++;
        a->rekeys++;
    }
    return 0;
}

static void nonce_of(const ism_aead *a, uint64_t seq, uint8_t n[ISM_AEAD_IV_LEN])
{
    memcpy(n, a->iv, ISM_AEAD_IV_LEN);
    for (int i = 0; i < 8; i++)
        n[ISM_AEAD_IV_LEN - 1 - i] ^= (uint8_t)(seq >> (8 * i));
}

int ism_aead_seal(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const struct iovec *iov, int n, uint8_t *out, uint8_t tag[ISM_AEAD_TAG_LEN])
{
    uint64_t e = seq / a->rekey;
    if (e < a->epoch || (e > a->epoch && step_to(a, e) != 0))
        return -1;
    EVP_CIPHER_CTX *c = a->ctx;
    uint8_t nonce[ISM_AEAD_IV_LEN];
    nonce_of(a, seq, nonce);
    int l = 0;
    if (EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
        (aadlen && EVP_EncryptUpdate(c, NULL, &l, aad, (int)aadlen) != 1))
        return -1;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len == 0)
            continue;
        if (EVP_EncryptUpdate(c, out + off, &l, iov[i].iov_base, (int)iov[i].iov_len) != 1)
            return -1;
        off += (size_t)l;
    }
    if (EVP_EncryptFinal_ex(c, out + off, &l) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, ISM_AEAD_TAG_LEN, tag) != 1)
        return -1;
    return 0;
}

static int open_with(EVP_CIPHER_CTX *c, const uint8_t *nonce, const uint8_t *aad, size_t aadlen,
                     const uint8_t *in, size_t len, const uint8_t *tag, uint8_t *out)
{
    int l = 0;
    if (EVP_DecryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
        (aadlen && EVP_DecryptUpdate(c, NULL, &l, aad, (int)aadlen) != 1) ||
        (len && EVP_DecryptUpdate(c, out, &l, in, (int)len) != 1) ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, ISM_AEAD_TAG_LEN, (void *)tag) != 1)
        return -1;
    return EVP_DecryptFinal_ex(c, out + l, &l) == 1 ? 0 : -1;
}

int ism_aead_open(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const uint8_t *in, size_t len, const uint8_t tag[ISM_AEAD_TAG_LEN],
                  uint8_t *out)
{
    uint8_t nonce[ISM_AEAD_IV_LEN];
    nonce_of(a, seq, nonce);
    uint64_t e = seq / a->rekey;
    if (e == a->epoch)
        return open_with(a->ctx, nonce, aad, aadlen, in, len, tag, out);
    if (e + 1 == a->epoch && a->prev_ctx)
        return open_with(a->prev_ctx, nonce, aad, aadlen, in, len, tag, out);
    if (e < a->epoch || e - a->epoch > 2)
        return -1;
    /* a later key: try it first, so a forged number cannot move our keys */
    uint8_t k[ISM_AEAD_KEY_LEN];
    memcpy(k, a->key, sizeof k);
    int rc = -1;
    for (uint64_t i = a->epoch; i < e; i++)
        if (next_key(k, k) != 0)
            goto out;
    EVP_CIPHER_CTX *c = ctx_new(a->suite, k, 0);
    if (!c)
        goto out;
    rc = open_with(c, nonce, aad, aadlen, in, len, tag, out);
    EVP_CIPHER_CTX_free(c);
    if (rc == 0)
        rc = step_to(a, e);
out:
    OPENSSL_cleanse(k, sizeof k);
    return rc;
}

/* A ring of ISM_AEAD_WINDOW bits, a word of 64 at a time; numbers more than a window less
 * a word below the top are too old, so the word being reused never aliases one in use. */
int ism_aead_window_check(const ism_aead_window *w, uint64_t seq)
{
    if (seq >= w->top)
        return 1;
    if (w->top - seq > ISM_AEAD_WINDOW - 64)
        return 0;
    return !(w->bits[(seq / 64) % (ISM_AEAD_WINDOW / 64)] >> (seq % 64) & 1);
}

void ism_aead_window_mark(ism_aead_window *w, uint64_t seq)
{
    const uint64_t words = ISM_AEAD_WINDOW / 64;
    if (seq >= w->top) {
        uint64_t first = w->top ? (w->top - 1) / 64 + 1 : 0, last = seq / 64;
        if (last >= first && last - first + 1 >= words)
            memset(w->bits, 0, sizeof w->bits);
        else
            for (uint64_t i = first; i <= last; i++)
                w->bits[i % words] = 0;
        w->top = seq + 1;
    }
    w->bits[(seq / 64) % words] |= 1ull << (seq % 64);
}
