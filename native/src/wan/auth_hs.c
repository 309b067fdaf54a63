/* auth_hs.c: the gateway handshake of auth.h as a state machine that does no I/O.
 *
 * Owns the message layouts, the HMAC-SHA256 transcripts, the order of checks (cheap
 * public checks before any MAC, our MAC only after theirs verified) and the wording of
 * every failure. The caller moves bytes: the blocking drivers in auth.c for tools that
 * talk to one peer, the gateway's event loop for the listener that strangers can reach
 * (a peer that sends nothing must cost the loop nothing). Input is asked for one
 * message part at a time (a preamble, then the body its type announces), so nothing
 * after the handshake is ever consumed. Secrets, nonces and MACs are wiped by
 * ism_auth_hs_wipe() and are never formatted into error messages.
 */
#include "auth.h"

#include "aead.h"
#include "sock.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define AUTH_VERSION 3
#define NONCE_LEN ISM_AUTH_NONCE_LEN
#define MAC_LEN ISM_AUTH_MAC_LEN
#define PRE_LEN 8
#define LABEL_LEN 19 /* both labels have this length, so transcripts cannot be shifted */

enum { MSG_HELLO = 1, MSG_CHALLENGE = 2, MSG_RESPONSE = 3, MSG_REFUSE = 4 };

#define EPUB_LEN ISM_AUTH_EPUB_LEN
/* Where the fields are (auth.h has the layouts). */
enum {
    H_ID = PRE_LEN, H_NONCE = H_ID + 8, H_JOB = H_NONCE + NONCE_LEN, H_EPUB = H_JOB + 16,
    H_REKEY = H_EPUB + EPUB_LEN, HELLO_LEN = H_REKEY + 8,
    C_ID = PRE_LEN, C_NONCE = C_ID + 8, C_EPUB = C_NONCE + NONCE_LEN,
    C_REKEY = C_EPUB + EPUB_LEN, C_MAC = C_REKEY + 8, CHALLENGE_LEN = C_MAC + MAC_LEN,
    RESPONSE_LEN = PRE_LEN + MAC_LEN,
    TRANSCRIPT_LEN = LABEL_LEN + ISM_AUTH_JOB_LEN + 8 + 8 + NONCE_LEN + NONCE_LEN + 2 +
                     2 * EPUB_LEN + 2
};
#define OFFER_AES_HW 0x80u /* in the offer: the client's CPU has AES instructions */
_Static_assert(HELLO_LEN <= ISM_AUTH_MSG_MAX && CHALLENGE_LEN <= ISM_AUTH_MSG_MAX,
               "handshake messages must fit the buffers");

/* What the handshake waits for next. Each phase reads `need` bytes into `in`. */
enum {
    P_SEND_ONLY,       /* output pending; when it has gone, the handshake is DONE */
    P_C_PRE_CHALLENGE, /* client: CHALLENGE's (or REFUSE's) preamble */
    P_C_CHALLENGE,     /* client: the rest of the CHALLENGE */
    P_C_VERDICT,       /* client: the verdict byte */
    P_S_PRE_HELLO,     /* server: HELLO's preamble */
    P_S_HELLO,         /* server: the rest of the HELLO */
    P_S_PRE_RESPONSE,  /* server: RESPONSE's (or REFUSE's) preamble */
    P_S_RESPONSE       /* server: the rest of the RESPONSE */
};

/* ---- ephemeral X25519 (forward secrecy) ---- */

/* A fresh key pair: the private half stays in h->eph until the shared secret is made. */
static int eph_new(ism_auth_hs *h, uint8_t pub[EPUB_LEN])
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
    size_t n = EPUB_LEN;
    if (!k || EVP_PKEY_get_raw_public_key(k, pub, &n) != 1 || n != EPUB_LEN) {
        EVP_PKEY_free(k);
        return -1;
    }
    h->eph = k;
    return 0;
}

/* X25519 of our private half and the peer's public one into h->dh; refuses a result of
 * all zeros (a low-order point, RFC 7748 section 6.1). The private half is freed. */
static int eph_shared(ism_auth_hs *h, const uint8_t peer_pub[EPUB_LEN])
{
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer_pub, EPUB_LEN);
    EVP_PKEY_CTX *c = peer ? EVP_PKEY_CTX_new((EVP_PKEY *)h->eph, NULL) : NULL;
    size_t n = sizeof h->dh;
    int ok = c && EVP_PKEY_derive_init(c) == 1 && EVP_PKEY_derive_set_peer(c, peer) == 1 &&
             EVP_PKEY_derive(c, h->dh, &n) == 1 && n == sizeof h->dh;
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(peer);
    EVP_PKEY_free((EVP_PKEY *)h->eph);
    h->eph = NULL;
    uint8_t zero[sizeof h->dh] = {0};
    return ok && CRYPTO_memcmp(h->dh, zero, sizeof zero) != 0 ? 0 : -1;
}

static const char LABEL_SERVER[] = "isthmus-auth-server";
static const char LABEL_CLIENT[] = "isthmus-auth-client";
_Static_assert(sizeof LABEL_SERVER - 1 == LABEL_LEN && sizeof LABEL_CLIENT - 1 == LABEL_LEN,
               "MAC labels must have equal length");

static void fail(ism_auth_hs *h, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(ism_auth_hs *h, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->err, sizeof h->err, fmt, ap);
    va_end(ap);
    h->rc = rc;
    h->state = ISM_AUTH_HS_FAILED;
    h->need = h->have = 0;
    /* a failed handshake makes no shared secret: its private half goes now, whether or not
     * the caller wipes (a stranger's many failed attempts must not hold memory) */
    EVP_PKEY_free((EVP_PKEY *)h->eph);
    h->eph = NULL;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_id(uint8_t *p, ism_auth_id id)
{
    put_le32(p, id.site);
    put_le32(p + 4, id.gw);
}

static ism_auth_id get_id(const uint8_t *p)
{
    ism_auth_id id = {get_le32(p), get_le32(p + 4)};
    return id;
}

static int same_id(ism_auth_id a, ism_auth_id b) { return a.site == b.site && a.gw == b.gw; }

static int zero(const uint8_t *p, size_t n)
{
    uint8_t any = 0;
    for (size_t i = 0; i < n; i++)
        any |= p[i];
    return any == 0;
}

static int rekey_ok(uint8_t log2) { return log2 >= ISM_AUTH_REKEY_MIN && log2 <= ISM_AUTH_REKEY_MAX; }

static void put_preamble(uint8_t *p, int type, int code)
{
    memcpy(p, "ISAU", 4);
    p[4] = AUTH_VERSION;
    p[5] = (uint8_t)type;
    p[6] = (uint8_t)code;
    p[7] = 0;
}

/* Queue the n bytes built in h->out; `then` is the phase that follows once they have gone. */
static void emit(ism_auth_hs *h, size_t n, int then)
{
    h->out_len = n;
    h->out_off = 0;
    h->phase = then;
}

static void expect_input(ism_auth_hs *h, int phase, size_t n)
{
    h->phase = phase;
    h->need = n;
    h->have = 0;
}

/* Best effort: the peer learns why, but our own error is what the caller reports. */
static void queue_refuse(ism_auth_hs *h, int code)
{
    put_preamble(h->out, MSG_REFUSE, code);
    h->out_len = PRE_LEN;
    h->out_off = 0;
}

static const char *phase_what(int phase)
{
    switch (phase) {
    case P_C_PRE_CHALLENGE:
    case P_C_CHALLENGE:
        return "CHALLENGE";
    case P_C_VERDICT:
        return "the verdict";
    case P_S_PRE_HELLO:
    case P_S_HELLO:
        return "HELLO";
    case P_S_PRE_RESPONSE:
    case P_S_RESPONSE:
        return "RESPONSE";
    default:
        return "the handshake";
    }
}

/* The message being written, for messages about a failed write. */
static const char *out_what(const ism_auth_hs *h)
{
    if (h->out_len == 1)
        return "the verdict";
    switch (h->out[5]) {
    case MSG_HELLO:
        return "HELLO";
    case MSG_CHALLENGE:
        return "CHALLENGE";
    case MSG_RESPONSE:
        return "RESPONSE";
    default:
        return "REFUSE";
    }
}

/* Checks a preamble; returns its type, or -1 after failing the handshake. */
static int check_preamble(ism_auth_hs *h, const char *what, int *code)
{
    const uint8_t *p = h->in;
    if (memcmp(p, "ISAU", 4) != 0) {
        fail(h, ISM_AUTH_EPROTO,
             "peer %s is not an isthmus gateway (bad handshake magic while waiting for %s)",
             h->peer_name, what);
        return -1;
    }
    if (p[4] != AUTH_VERSION) {
        fail(h, ISM_AUTH_EPROTO,
             "peer %s speaks handshake version %u, this gateway speaks %d (mixed isthmus "
             "releases?)",
             h->peer_name, (unsigned)p[4], AUTH_VERSION);
        if (h->server)
            queue_refuse(h, ISM_AUTH_R_VERSION);
        return -1;
    }
    *code = p[6];
    return p[5];
}

static void refused(ism_auth_hs *h, int code)
{
    switch (code) {
    case ISM_AUTH_R_JOB:
        fail(h, ISM_AUTH_EJOB,
             "job id mismatch: peer %s belongs to another job (it refused our job id)",
             h->peer_name);
        break;
    case ISM_AUTH_R_VERSION:
        fail(h, ISM_AUTH_EPROTO,
             "peer %s does not support handshake version %d (mixed isthmus releases?)",
             h->peer_name, AUTH_VERSION);
        break;
    case ISM_AUTH_R_BADMAC:
        fail(h, ISM_AUTH_EAUTH,
             "peer %s rejected our authentication: wrong job secret (HMAC mismatch)",
             h->peer_name);
        break;
    case ISM_AUTH_R_SUITE:
        fail(h, ISM_AUTH_ESUITE,
             "peer %s and this side disagree on link encryption (this side accepts %s): give "
             "every site the same --wan-crypto / [job] crypto",
             h->peer_name, h->suites == ISM_AUTH_SUITES_NONE ? "only none" : "only aead");
        break;
    case ISM_AUTH_R_IDENT:
        fail(h, ISM_AUTH_EIDENT,
             "peer %s refused the handshake: both ends claim the same gateway identity "
             "(duplicate site/gateway numbers in the configuration?)",
             h->peer_name);
        break;
    default:
        fail(h, ISM_AUTH_EPROTO, "peer %s refused the handshake (reason code %d)", h->peer_name,
             code);
    }
}

static void unexpected(ism_auth_hs *h, int type, const char *what)
{
    fail(h, ISM_AUTH_EPROTO, "peer %s sent handshake message type %d where %s was expected",
         h->peer_name, type, what);
}

static int compute_mac(ism_auth_hs *h, const char *label, ism_auth_id cid, ism_auth_id sid,
                       const uint8_t *n1, const uint8_t *n2, uint8_t *out)
{
    const ism_auth_key *k = h->key;
    uint8_t t[TRANSCRIPT_LEN], *p = t;
    memcpy(p, label, LABEL_LEN);
    p += LABEL_LEN;
    memcpy(p, k->job, ISM_AUTH_JOB_LEN);
    p += ISM_AUTH_JOB_LEN;
    put_id(p, cid);
    p += 8;
    put_id(p, sid);
    p += 8;
    memcpy(p, n1, NONCE_LEN);
    p += NONCE_LEN;
    memcpy(p, n2, NONCE_LEN);
    p += NONCE_LEN;
    *p++ = h->offer;
    *p++ = (uint8_t)h->suite;
    memcpy(p, h->epub_c, EPUB_LEN);
    memcpy(p + EPUB_LEN, h->epub_s, EPUB_LEN);
    p += 2 * EPUB_LEN;
    *p++ = h->rekey_c;
    *p = h->rekey_s;
    unsigned int outlen = 0;
    const unsigned char *r =
        HMAC(EVP_sha256(), k->secret, (int)k->secret_len, t, sizeof t, out, &outlen);
    OPENSSL_cleanse(t, sizeof t);
    if (r == NULL || outlen != MAC_LEN) {
        unsigned long e = ERR_get_error();
        const char *why = e ? ERR_reason_error_string(e) : NULL;
        fail(h, ISM_AUTH_ECRYPTO, "handshake with peer %s: HMAC-SHA256 failed (%s)", h->peer_name,
             why ? why : "OpenSSL error");
        return -1;
    }
    return 0;
}

static int make_nonce(ism_auth_hs *h, uint8_t *n)
{
    if (RAND_bytes(n, NONCE_LEN) != 1) {
        unsigned long e = ERR_get_error();
        fail(h, ISM_AUTH_ECRYPTO, "handshake with peer %s: cannot generate a nonce (%s)",
             h->peer_name,
             e && ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "RAND_bytes failed");
        return -1;
    }
    return 0;
}

/* ---- client ---- */

static void client_hello(ism_auth_hs *h)
{
    if (make_nonce(h, h->nc) != 0)
        return;
    if (eph_new(h, h->epub_c) != 0)
        return fail(h, ISM_AUTH_ECRYPTO, "handshake with peer %s: no X25519 key pair (OpenSSL)",
                    h->peer_name);
    uint8_t *m = h->out;
    memset(m, 0, HELLO_LEN);
    h->offer = (uint8_t)(h->suites | (ism_aead_cpu_has_aes() ? OFFER_AES_HW : 0));
    put_preamble(m, MSG_HELLO, h->offer);
    put_id(m + H_ID, h->self);
    memcpy(m + H_NONCE, h->nc, NONCE_LEN);
    memcpy(m + H_JOB, h->key->job, ISM_AUTH_JOB_LEN);
    memcpy(m + H_EPUB, h->epub_c, EPUB_LEN);
    m[H_REKEY] = h->rekey_c;
    emit(h, HELLO_LEN, P_C_PRE_CHALLENGE);
}

static void client_challenge(ism_auth_hs *h)
{
    const uint8_t *m = h->in;
    ism_auth_id peer = get_id(m + C_ID);
    memcpy(h->ns, m + C_NONCE, NONCE_LEN);
    memcpy(h->epub_s, m + C_EPUB, EPUB_LEN);
    h->rekey_s = m[C_REKEY];
    memcpy(h->mac, m + C_MAC, MAC_LEN);
    h->suite = m[6]; /* checked after the MAC, which covers it */
    if (!zero(m + C_REKEY + 1, 7) || !rekey_ok(h->rekey_s))
        return fail(h, ISM_AUTH_EPROTO, "peer %s sent a malformed CHALLENGE", h->peer_name);
    if (same_id(peer, h->self) || CRYPTO_memcmp(h->ns, h->nc, NONCE_LEN) == 0) {
        fail(h, ISM_AUTH_EIDENT,
             "peer %s claims to be this very gateway (site %u, gateway %u) or echoed our "
             "nonce: refusing (reflected connection or duplicate configuration?)",
             h->peer_name, (unsigned)h->self.site, (unsigned)h->self.gw);
        queue_refuse(h, ISM_AUTH_R_IDENT);
        return;
    }
    if (compute_mac(h, LABEL_SERVER, h->self, peer, h->nc, h->ns, h->expect) != 0)
        return;
    if (CRYPTO_memcmp(h->mac, h->expect, MAC_LEN) != 0) {
        fail(h, ISM_AUTH_EAUTH,
             "peer %s (site %u, gateway %u) failed authentication: wrong job secret (HMAC "
             "mismatch)",
             h->peer_name, (unsigned)peer.site, (unsigned)peer.gw);
        queue_refuse(h, ISM_AUTH_R_BADMAC);
        return;
    }
    if (h->suite > ISM_AEAD_CHACHA20POLY1305 || !(h->suites >> h->suite & 1)) {
        fail(h, ISM_AUTH_ESUITE,
             "peer %s chose link encryption %s, which this side does not accept (it accepts "
             "%s): give every site the same --wan-crypto / [job] crypto",
             h->peer_name, ism_aead_suite_name(h->suite),
             h->suites == ISM_AUTH_SUITES_NONE ? "only none" : "only aead");
        queue_refuse(h, ISM_AUTH_R_SUITE);
        return;
    }
    h->peer = peer;
    if (eph_shared(h, h->epub_s) != 0)
        return fail(h, ISM_AUTH_EPROTO, "peer %s (site %u, gateway %u) sent an unusable key "
                    "share", h->peer_name, (unsigned)peer.site, (unsigned)peer.gw);
    h->rekey_log2 = h->rekey_c < h->rekey_s ? h->rekey_c : h->rekey_s;
    if (compute_mac(h, LABEL_CLIENT, h->self, peer, h->ns, h->nc, h->mac) != 0)
        return;
    put_preamble(h->out, MSG_RESPONSE, 0);
    memcpy(h->out + PRE_LEN, h->mac, MAC_LEN);
    emit(h, RESPONSE_LEN, P_C_VERDICT);
}

static void client_step(ism_auth_hs *h)
{
    int code = 0, type;
    switch (h->phase) {
    case P_C_PRE_CHALLENGE:
        type = check_preamble(h, "CHALLENGE", &code);
        if (type < 0)
            return;
        if (type == MSG_REFUSE)
            return refused(h, code);
        if (type != MSG_CHALLENGE)
            return unexpected(h, type, "CHALLENGE");
        h->phase = P_C_CHALLENGE;
        h->need = CHALLENGE_LEN; /* the preamble stays in in[0..8) */
        return;
    case P_C_CHALLENGE:
        return client_challenge(h);
    case P_C_VERDICT:
        if (h->in[0] == 0)
            return fail(h, ISM_AUTH_EAUTH,
                        "peer %s rejected our authentication: wrong job secret (HMAC mismatch)",
                        h->peer_name);
        if (h->in[0] != 1)
            return fail(h, ISM_AUTH_EPROTO, "peer %s sent an invalid handshake verdict %u",
                        h->peer_name, (unsigned)h->in[0]);
        h->state = ISM_AUTH_HS_DONE;
        h->need = 0;
        return;
    }
}

/* ---- server ---- */

/* The suite both accept: AES-256-GCM when both CPUs have AES instructions, else
 * ChaCha20-Poly1305 (fast in software), else what is left; -1 when nothing is common. */
static int choose_suite(uint8_t offer, unsigned ours)
{
    unsigned common = offer & ours & 7u;
    int aes = common >> ISM_AEAD_AES256GCM & 1, chacha = common >> ISM_AEAD_CHACHA20POLY1305 & 1;
    if (aes && (!chacha || ((offer & OFFER_AES_HW) && ism_aead_cpu_has_aes())))
        return ISM_AEAD_AES256GCM;
    if (chacha)
        return ISM_AEAD_CHACHA20POLY1305;
    return common & 1u ? ISM_AEAD_NONE : -1;
}

static void server_hello(ism_auth_hs *h)
{
    const uint8_t *m = h->in;
    ism_auth_id peer = get_id(m + H_ID);
    memcpy(h->nc, m + H_NONCE, NONCE_LEN);
    memcpy(h->epub_c, m + H_EPUB, EPUB_LEN);
    h->rekey_c = m[H_REKEY];
    /* The job id is public, so a plain compare is fine and lets us refuse early. */
    if (memcmp(m + H_JOB, h->key->job, ISM_AUTH_JOB_LEN) != 0) {
        fail(h, ISM_AUTH_EJOB, "job id mismatch: peer %s (site %u, gateway %u) belongs to another job",
             h->peer_name, (unsigned)peer.site, (unsigned)peer.gw);
        queue_refuse(h, ISM_AUTH_R_JOB);
        return;
    }
    if (same_id(peer, h->self)) {
        fail(h, ISM_AUTH_EIDENT,
             "peer %s claims to be this very gateway (site %u, gateway %u): refusing "
             "(reflected connection or duplicate configuration?)",
             h->peer_name, (unsigned)h->self.site, (unsigned)h->self.gw);
        queue_refuse(h, ISM_AUTH_R_IDENT);
        return;
    }
    h->peer = peer;
    h->offer = m[6];
    int suite = choose_suite(h->offer, h->suites);
    if (suite < 0) {
        fail(h, ISM_AUTH_ESUITE,
             "peer %s (site %u, gateway %u) and this side disagree on link encryption (this "
             "side accepts %s, the peer %s): give every site the same --wan-crypto / [job] "
             "crypto",
             h->peer_name, (unsigned)peer.site, (unsigned)peer.gw,
             h->suites == ISM_AUTH_SUITES_NONE ? "only none" : "only aead",
             (h->offer & 7) == ISM_AUTH_SUITES_NONE ? "only none"
             : (h->offer & ISM_AUTH_SUITES_NONE)    ? "both"
                                                    : "only aead");
        queue_refuse(h, ISM_AUTH_R_SUITE);
        return;
    }
    h->suite = suite;
    if (!zero(m + H_REKEY + 1, 7) || !rekey_ok(h->rekey_c))
        return fail(h, ISM_AUTH_EPROTO, "peer %s sent a malformed HELLO", h->peer_name);
    if (eph_new(h, h->epub_s) != 0)
        return fail(h, ISM_AUTH_ECRYPTO, "handshake with peer %s: no X25519 key pair (OpenSSL)",
                    h->peer_name);
    if (eph_shared(h, h->epub_c) != 0)
        return fail(h, ISM_AUTH_EPROTO, "peer %s sent an unusable key share", h->peer_name);
    h->rekey_log2 = h->rekey_c < h->rekey_s ? h->rekey_c : h->rekey_s;
    if (make_nonce(h, h->ns) != 0 ||
        compute_mac(h, LABEL_SERVER, peer, h->self, h->nc, h->ns, h->mac) != 0)
        return;
    uint8_t *o = h->out;
    memset(o, 0, CHALLENGE_LEN);
    put_preamble(o, MSG_CHALLENGE, suite);
    put_id(o + C_ID, h->self);
    memcpy(o + C_NONCE, h->ns, NONCE_LEN);
    memcpy(o + C_EPUB, h->epub_s, EPUB_LEN);
    o[C_REKEY] = h->rekey_s;
    memcpy(o + C_MAC, h->mac, MAC_LEN);
    emit(h, CHALLENGE_LEN, P_S_PRE_RESPONSE);
}

static void server_response(ism_auth_hs *h)
{
    memcpy(h->mac, h->in + PRE_LEN, MAC_LEN);
    if (compute_mac(h, LABEL_CLIENT, h->peer, h->self, h->ns, h->nc, h->expect) != 0)
        return;
    if (CRYPTO_memcmp(h->mac, h->expect, MAC_LEN) != 0) {
        fail(h, ISM_AUTH_EAUTH,
             "peer %s (site %u, gateway %u) failed authentication: wrong job secret (HMAC "
             "mismatch)",
             h->peer_name, (unsigned)h->peer.site, (unsigned)h->peer.gw);
        h->out[0] = 0; /* the verdict: refused */
        h->out_len = 1;
        h->out_off = 0;
        return;
    }
    h->out[0] = 1;
    emit(h, 1, P_SEND_ONLY);
}

static void server_step(ism_auth_hs *h)
{
    int code = 0, type;
    switch (h->phase) {
    case P_S_PRE_HELLO:
        type = check_preamble(h, "HELLO", &code);
        if (type < 0)
            return;
        if (type != MSG_HELLO)
            return unexpected(h, type, "HELLO");
        h->phase = P_S_HELLO;
        h->need = HELLO_LEN;
        return;
    case P_S_HELLO:
        return server_hello(h);
    case P_S_PRE_RESPONSE:
        type = check_preamble(h, "RESPONSE", &code);
        if (type < 0)
            return;
        if (type == MSG_REFUSE)
            return refused(h, code);
        if (type != MSG_RESPONSE)
            return unexpected(h, type, "RESPONSE");
        h->phase = P_S_RESPONSE;
        h->need = RESPONSE_LEN;
        return;
    case P_S_RESPONSE:
        return server_response(h);
    }
}

/* ---- the interface ---- */

void ism_auth_hs_start(ism_auth_hs *h, int server, const ism_auth_key *k, ism_auth_id self,
                       unsigned suites, int rekey_log2, const char *peer_name)
{
    memset(h, 0, sizeof *h);
    h->server = server;
    h->suites = suites & 7u;
    h->suite = -1;
    uint8_t r = (uint8_t)(rekey_log2 <= 0 ? ISM_AUTH_REKEY_DEFAULT : rekey_log2);
    r = r < ISM_AUTH_REKEY_MIN ? ISM_AUTH_REKEY_MIN : r > ISM_AUTH_REKEY_MAX ? ISM_AUTH_REKEY_MAX : r;
    *(server ? &h->rekey_s : &h->rekey_c) = r;
    h->key = k;
    h->self = self;
    h->peer.site = h->peer.gw = UINT32_MAX;
    snprintf(h->peer_name, sizeof h->peer_name, "%s", peer_name ? peer_name : "unknown peer");
    const char *role = server ? "server" : "client";
    if (k == NULL)
        return fail(h, ISM_AUTH_EINVAL, "auth %s: invalid argument (key missing)", role);
    if (k->secret_len < ISM_AUTH_SECRET_MIN || k->secret_len > ISM_AUTH_SECRET_MAX)
        return fail(h, ISM_AUTH_EINVAL, "auth %s: job secret length %zu is outside %d..%d bytes",
                    role, k->secret_len, ISM_AUTH_SECRET_MIN, ISM_AUTH_SECRET_MAX);
    if (h->suites == 0)
        return fail(h, ISM_AUTH_EINVAL, "auth %s: no cipher suite accepted", role);
    if (server)
        expect_input(h, P_S_PRE_HELLO, PRE_LEN);
    else
        client_hello(h);
}

size_t ism_auth_hs_pending(const ism_auth_hs *h, const uint8_t **p)
{
    *p = h->out + h->out_off;
    return h->out_len - h->out_off;
}

int ism_auth_hs_client_verified(const ism_auth_hs *h)
{
    return !h->server && h->state == ISM_AUTH_HS_RUN && h->phase == P_C_VERDICT;
}

void ism_auth_hs_sent(ism_auth_hs *h, size_t n)
{
    if (n > h->out_len - h->out_off)
        n = h->out_len - h->out_off;
    h->out_off += n;
    if (h->out_off < h->out_len || h->state != ISM_AUTH_HS_RUN)
        return;
    h->out_len = h->out_off = 0;
    switch (h->phase) {
    case P_SEND_ONLY:
        h->state = ISM_AUTH_HS_DONE;
        return;
    case P_C_PRE_CHALLENGE:
    case P_S_PRE_RESPONSE:
        expect_input(h, h->phase, PRE_LEN);
        return;
    case P_C_VERDICT:
        expect_input(h, h->phase, 1);
        return;
    }
}

size_t ism_auth_hs_wanted(ism_auth_hs *h, uint8_t **p)
{
    if (h->state != ISM_AUTH_HS_RUN || h->out_len > h->out_off) {
        *p = NULL;
        return 0;
    }
    *p = h->in + h->have;
    return h->need - h->have;
}

void ism_auth_hs_received(ism_auth_hs *h, size_t n)
{
    if (h->state != ISM_AUTH_HS_RUN || n == 0)
        return;
    if (n > h->need - h->have)
        n = h->need - h->have;
    h->have += n;
    if (h->have < h->need)
        return;
    if (h->server)
        server_step(h);
    else
        client_step(h);
}

void ism_auth_hs_io_failed(ism_auth_hs *h, int sock_rc, int timeout_ms)
{
    if (h->state != ISM_AUTH_HS_RUN)
        return;
    int writing = h->out_len > h->out_off;
    const char *what = writing ? out_what(h) : phase_what(h->phase);
    size_t done = writing ? h->out_off : h->have, n = writing ? h->out_len : h->need;
    if (sock_rc == ISM_SOCK_ECLOSED)
        return fail(h, ISM_AUTH_ECLOSED,
                    "peer %s closed the connection during the handshake (%s %s, %zu of %zu "
                    "bytes %s)",
                    h->peer_name, writing ? "while sending" : "while waiting for", what, done, n,
                    writing ? "sent" : "received");
    if (sock_rc == ISM_SOCK_ETIMEDOUT)
        return fail(h, ISM_AUTH_ETIMEDOUT,
                    "handshake with peer %s timed out after %d ms (%s %s; is the peer an "
                    "isthmus gateway of this job?)",
                    h->peer_name, timeout_ms, writing ? "while sending" : "waiting for", what);
    int e = errno;
    fail(h, ISM_AUTH_EIO, "handshake with peer %s failed: %s error %s %s: %s", h->peer_name,
         writing ? "write" : "read", writing ? "sending" : "receiving", what, strerror(e));
}

void ism_auth_hs_wipe(ism_auth_hs *h)
{
    EVP_PKEY_free((EVP_PKEY *)h->eph);
    h->eph = NULL;
    OPENSSL_cleanse(h->dh, sizeof h->dh);
    OPENSSL_cleanse(h->nc, sizeof h->nc);
    OPENSSL_cleanse(h->ns, sizeof h->ns);
    OPENSSL_cleanse(h->mac, sizeof h->mac);
    OPENSSL_cleanse(h->expect, sizeof h->expect);
    OPENSSL_cleanse(h->in, sizeof h->in);
    OPENSSL_cleanse(h->out, sizeof h->out);
}
