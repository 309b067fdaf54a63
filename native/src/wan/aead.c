/* aead.c: the key schedule and the AEAD records of aead.h, on OpenSSL's EVP. Keys are
 * wiped when replaced or freed; nothing here formats a key into any message. */
#include "aead.h"

#include <stdlib.h>
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

/* secret || iv of one direction from a PRK (or a secret) and an info string. */
static int expand_dir(const uint8_t *prk, const uint8_t *info, size_t n, ism_aead_dir_keys *out)
{
    uint8_t okm[ISM_AEAD_KEY_LEN + ISM_AEAD_IV_LEN];
    int rc = hkdf(NULL, 0, prk, 32, info, n, okm, sizeof okm);
    memcpy(out->secret, okm, ISM_AEAD_KEY_LEN);
    memcpy(out->iv, okm + ISM_AEAD_KEY_LEN, ISM_AEAD_IV_LEN);
    OPENSSL_cleanse(okm, sizeof okm);
    return rc;
}

static int derive_dir(const uint8_t *prk, const char *dir, const char *transport,
                      const ism_auth_hs *h, ism_aead_dir_keys *out)
{
    uint8_t info[200];
    size_t t = strlen(transport), n = 0;
    if (t > 64)
        return -1;
    n = (size_t)snprintf((char *)info, 64, "isthmus v3 traffic %s", dir);
    info[n++] = (uint8_t)t; /* the label's length: labels cannot run into the job id */
    memcpy(info + n, transport, t);
    n += t;
    ism_auth_id cid = h->server ? h->peer : h->self, sid = h->server ? h->self : h->peer;
    memcpy(info + n, h->key->job, ISM_AUTH_JOB_LEN);
    n += ISM_AUTH_JOB_LEN;
    put_id(info + n, cid);
    put_id(info + n + 8, sid);
    n += 16;
    info[n++] = (uint8_t)h->suite;
    return expand_dir(prk, info, n, out);
}

int ism_aead_derive(const ism_auth_hs *h, const char *transport, ism_aead_keys *out)
{
    memset(out, 0, sizeof *out);
    if (h->state != ISM_AUTH_HS_DONE && !ism_auth_hs_client_verified(h))
        return -1;
    out->suite = h->suite;
    out->rekey_log2 = h->rekey_log2;
    uint8_t salt[2 * ISM_AUTH_NONCE_LEN], ikm[ISM_AUTH_SECRET_MAX + sizeof h->dh], prk[32];
    memcpy(salt, h->nc, ISM_AUTH_NONCE_LEN);
    memcpy(salt + ISM_AUTH_NONCE_LEN, h->ns, ISM_AUTH_NONCE_LEN);
    memcpy(ikm, h->key->secret, h->key->secret_len);
    memcpy(ikm + h->key->secret_len, h->dh, sizeof h->dh);
    static const uint8_t label[] = "isthmus v3 prk";
    int rc = hkdf(salt, sizeof salt, ikm, h->key->secret_len + sizeof h->dh, label,
                  sizeof label - 1, prk, sizeof prk);
    if (rc == 0)
        rc = derive_dir(prk, "c2s", transport, h, &out->c2s) |
             derive_dir(prk, "s2c", transport, h, &out->s2c);
    OPENSSL_cleanse(prk, sizeof prk);
    OPENSSL_cleanse(ikm, sizeof ikm);
    OPENSSL_cleanse(salt, sizeof salt);
    if (rc)
        ism_aead_keys_wipe(out);
    return rc ? -1 : 0;
}

int ism_aead_keys_bind(ism_aead_keys *k, const char *label, const uint8_t *ctx, size_t n)
{
    uint8_t info[256];
    size_t l = strlen(label);
    if (l > 64 || n > sizeof info - 80)
        return -1;
    size_t m = (size_t)snprintf((char *)info, 32, "isthmus v3 bind ");
    info[m++] = (uint8_t)l;
    memcpy(info + m, label, l);
    m += l;
    memcpy(info + m, ctx, n);
    m += n;
    ism_aead_dir_keys c2s, s2c;
    int rc = expand_dir(k->c2s.secret, info, m, &c2s) | expand_dir(k->s2c.secret, info, m, &s2c);
    k->c2s = c2s;
    k->s2c = s2c;
    OPENSSL_cleanse(&c2s, sizeof c2s);
    OPENSSL_cleanse(&s2c, sizeof s2c);
    return rc ? -1 : 0;
}

int ism_aead_keys_sub(const ism_aead_keys *k, const char *label, ism_aead_keys *out)
{
    *out = *k;
    return ism_aead_keys_bind(out, label, (const uint8_t *)"sub", 3);
}

void ism_aead_keys_wipe(ism_aead_keys *k) { OPENSSL_cleanse(k, sizeof *k); }

/* The key of epoch e: HKDF-Expand(traffic secret, "isthmus v3 key" || e (u64 LE)). */
static int epoch_key(const ism_aead *a, uint64_t e, uint8_t out[ISM_AEAD_KEY_LEN])
{
    uint8_t info[14 + 8] = "isthmus v3 key";
    for (int i = 0; i < 8; i++)
        info[14 + i] = (uint8_t)(e >> (8 * i));
    return hkdf(NULL, 0, a->secret, ISM_AEAD_KEY_LEN, info, sizeof info, out, ISM_AEAD_KEY_LEN);
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

static void *epoch_ctx(const ism_aead *a, uint64_t e)
{
    uint8_t k[ISM_AEAD_KEY_LEN];
    void *c = epoch_key(a, e, k) == 0 ? ctx_new(a->suite, k, a->sealing) : NULL;
    OPENSSL_cleanse(k, sizeof k);
    return c;
}

int ism_aead_init(ism_aead *a, int suite, const ism_aead_dir_keys *k, int sealing,
                  int rekey_log2)
{
    memset(a, 0, sizeof *a);
    if (!cipher_of(suite) || rekey_log2 < ISM_AUTH_REKEY_MIN || rekey_log2 > ISM_AUTH_REKEY_MAX)
        return -1;
    a->suite = suite;
    a->sealing = sealing;
    a->rekey_log2 = rekey_log2;
    memcpy(a->secret, k->secret, ISM_AEAD_KEY_LEN);
    memcpy(a->iv, k->iv, ISM_AEAD_IV_LEN);
    a->ctx = epoch_ctx(a, 0);
    return a->ctx ? 0 : -1;
}

void ism_aead_free(ism_aead *a)
{
    EVP_CIPHER_CTX_free(a->ctx);
    EVP_CIPHER_CTX_free(a->prev_ctx);
    EVP_CIPHER_CTX_free(a->next_ctx);
    OPENSSL_cleanse(a, sizeof *a);
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
    uint64_t e = seq >> a->rekey_log2;
    if (e < a->epoch || seq == UINT64_MAX)
        return -1;
    if (e > a->epoch) { /* the sealing side keeps only the current key */
        void *c = epoch_ctx(a, e);
        if (!c)
            return -1;
        EVP_CIPHER_CTX_free(a->ctx);
        a->ctx = c;
        a->rekeys += e - a->epoch;
        a->epoch = e;
    }
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

/* The opener moves to epoch e (> current), whose context c opened a record. */
static void advance(ism_aead *a, uint64_t e, void *c)
{
    EVP_CIPHER_CTX_free(a->prev_ctx);
    if (e == a->epoch + 1) {
        a->prev_ctx = a->ctx;
    } else { /* a jump: the key before e is made when a late record asks for it */
        EVP_CIPHER_CTX_free(a->ctx);
        a->prev_ctx = NULL;
    }
    if (a->next_ctx != c)
        EVP_CIPHER_CTX_free(a->next_ctx);
    a->next_ctx = NULL;
    a->ctx = c;
    a->rekeys += e - a->epoch;
    a->epoch = e;
}

int ism_aead_open(ism_aead *a, uint64_t seq, const uint8_t *aad, size_t aadlen,
                  const uint8_t *in, size_t len, const uint8_t tag[ISM_AEAD_TAG_LEN],
                  uint8_t *out)
{
    uint8_t nonce[ISM_AEAD_IV_LEN];
    nonce_of(a, seq, nonce);
    uint64_t e = seq >> a->rekey_log2;
    int rc = -1;
    if (e == a->epoch) {
        rc = open_with(a->ctx, nonce, aad, aadlen, in, len, tag, out);
    } else if (e + 1 == a->epoch) {
        if (!a->prev_ctx)
            a->prev_ctx = epoch_ctx(a, e);
        if (a->prev_ctx)
            rc = open_with(a->prev_ctx, nonce, aad, aadlen, in, len, tag, out);
    } else if (e == a->epoch + 1) {
        if (!a->next_ctx)
            a->next_ctx = epoch_ctx(a, e); /* kept: forged numbers cost one key, once */
        if (a->next_ctx && (rc = open_with(a->next_ctx, nonce, aad, aadlen, in, len, tag, out)) == 0)
            advance(a, e, a->next_ctx);
    } else if (e > a->epoch) {
        /* far ahead (a long loss): that epoch's key, kept only if the record opens */
        void *c = epoch_ctx(a, e);
        if (c && (rc = open_with(c, nonce, aad, aadlen, in, len, tag, out)) == 0)
            advance(a, e, c);
        else
            EVP_CIPHER_CTX_free(c);
    }
    if (rc != 0) {
        a->failed++;
        if (len)
            OPENSSL_cleanse(out, len); /* nothing of an unauthentic record stays readable */
    }
    return rc;
}

ism_aead *ism_aead_clones(const ism_aead *a, int n)
{
    ism_aead *w = calloc((size_t)n, sizeof *w);
    ism_aead_dir_keys k;
    memcpy(k.secret, a->secret, sizeof k.secret);
    memcpy(k.iv, a->iv, sizeof k.iv);
    for (int i = 0; w && i < n; i++) {
        if (ism_aead_init(&w[i], a->suite, &k, a->sealing, a->rekey_log2) != 0) {
            while (i-- > 0)
                ism_aead_free(&w[i]);
            free(w);
            w = NULL;
        }
    }
    OPENSSL_cleanse(&k, sizeof k);
    return w;
}

void ism_aead_clones_free(ism_aead *w, int n)
{
    for (int i = 0; w && i < n; i++)
        ism_aead_free(&w[i]);
    free(w);
}

uint64_t ism_aead_clones_rekeys(const ism_aead *a, const ism_aead *w, int n)
{
    uint64_t r = a->rekeys; /* every state steps to the epoch of the numbers it sealed */
    for (int i = 0; w && i < n; i++)
        r = w[i].rekeys > r ? w[i].rekeys : r;
    return r;
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
