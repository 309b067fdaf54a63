/* auth.c: the gateway-to-gateway handshake and job key handling declared in auth.h.
 *
 * Owns the message layouts, the HMAC-SHA256 transcripts, the order of checks (cheap
 * public checks before any MAC, our MAC only after theirs verified) and the wording of
 * every failure. Secrets, nonces and MACs are wiped before returning and are never
 * formatted into error messages.
 */
#include "auth.h"

#include "sock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define AUTH_VERSION 1
#define NONCE_LEN 32
#define MAC_LEN 32
#define PRE_LEN 8
#define LABEL_LEN 19 /* both labels have this length, so transcripts cannot be shifted */

enum { MSG_HELLO = 1, MSG_CHALLENGE = 2, MSG_RESPONSE = 3, MSG_REFUSE = 4 };

enum {
    HELLO_LEN = PRE_LEN + 8 + NONCE_LEN + ISM_AUTH_JOB_LEN,
    CHALLENGE_LEN = PRE_LEN + 8 + NONCE_LEN + MAC_LEN,
    RESPONSE_LEN = PRE_LEN + MAC_LEN,
    TRANSCRIPT_LEN = LABEL_LEN + ISM_AUTH_JOB_LEN + 8 + 8 + NONCE_LEN + NONCE_LEN
};

static const char LABEL_SERVER[] = "isthmus-auth-server";
static const char LABEL_CLIENT[] = "isthmus-auth-client";
_Static_assert(sizeof LABEL_SERVER - 1 == LABEL_LEN && sizeof LABEL_CLIENT - 1 == LABEL_LEN,
               "MAC labels must have equal length");

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
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

static int same_id(ism_auth_id a, ism_auth_id b)
{
    return a.site == b.site && a.gw == b.gw;
}

static void put_preamble(uint8_t *p, int type, int code)
{
    memcpy(p, "ISAU", 4);
    p[4] = AUTH_VERSION;
    p[5] = (uint8_t)type;
    p[6] = (uint8_t)code;
    p[7] = 0;
}

/* Everything one handshake needs; sensitive fields are wiped together at the end. */
typedef struct hs {
    int fd;
    int timeout_ms;
    int64_t deadline;
    const char *role; /* "client" or "server", for messages */
    char peer[80];
    char *err;
    size_t errlen;
    /* sensitive */
    uint8_t nc[NONCE_LEN], ns[NONCE_LEN];
    uint8_t mac[MAC_LEN], expect[MAC_LEN];
    uint8_t buf[CHALLENGE_LEN];
} hs;

static void hs_wipe(hs *h)
{
    OPENSSL_cleanse(h->nc, sizeof h->nc);
    OPENSSL_cleanse(h->ns, sizeof h->ns);
    OPENSSL_cleanse(h->mac, sizeof h->mac);
    OPENSSL_cleanse(h->expect, sizeof h->expect);
    OPENSSL_cleanse(h->buf, sizeof h->buf);
}

static int io_fail(hs *h, int rc, int writing, size_t done, size_t n, const char *what)
{
    if (rc == ISM_SOCK_ECLOSED) {
        set_err(h->err, h->errlen,
                "peer %s closed the connection during the handshake (%s %s, %zu of %zu bytes "
                "%s)",
                h->peer, writing ? "while sending" : "while waiting for", what, done, n,
                writing ? "sent" : "received");
        return ISM_AUTH_ECLOSED;
    }
    if (rc == ISM_SOCK_ETIMEDOUT) {
        set_err(h->err, h->errlen,
                "handshake with peer %s timed out after %d ms (%s %s; is the peer an isthmus "
                "gateway of this job?)",
                h->peer, h->timeout_ms, writing ? "while sending" : "waiting for", what);
        return ISM_AUTH_ETIMEDOUT;
    }
    set_err(h->err, h->errlen, "handshake with peer %s failed: %s error %s %s: %s", h->peer,
            writing ? "write" : "read", writing ? "sending" : "receiving", what, strerror(errno));
    return ISM_AUTH_EIO;
}

static int hs_read(hs *h, void *buf, size_t n, const char *what)
{
    size_t done = 0;
    int rc = ism_sock_read_full(h->fd, buf, n, h->deadline, &done);
    return rc == 0 ? 0 : io_fail(h, rc, 0, done, n, what);
}

static int hs_write(hs *h, const void *buf, size_t n, const char *what)
{
    size_t done = 0;
    int rc = ism_sock_write_full(h->fd, buf, n, h->deadline, &done);
    return rc == 0 ? 0 : io_fail(h, rc, 1, done, n, what);
}

/* Best effort: the peer learns why, but our own error is what the caller reports. */
static void send_refuse(hs *h, int code)
{
    uint8_t m[PRE_LEN];
    put_preamble(m, MSG_REFUSE, code);
    (void)ism_sock_write_full(h->fd, m, sizeof m, h->deadline, NULL);
}

/* Read and check a preamble; returns its type or a negative ISM_AUTH_E* code. */
static int read_preamble(hs *h, const char *what, int *code)
{
    uint8_t p[PRE_LEN];
    int rc = hs_read(h, p, sizeof p, what);
    if (rc != 0)
        return rc;
    if (memcmp(p, "ISAU", 4) != 0) {
        set_err(h->err, h->errlen,
                "peer %s is not an isthmus gateway (bad handshake magic while waiting for %s)",
                h->peer, what);
        return ISM_AUTH_EPROTO;
    }
    if (p[4] != AUTH_VERSION) {
        set_err(h->err, h->errlen,
                "peer %s speaks handshake version %u, this gateway speaks %d (mixed isthmus "
                "releases?)",
                h->peer, (unsigned)p[4], AUTH_VERSION);
        if (strcmp(h->role, "server") == 0)
            send_refuse(h, ISM_AUTH_R_VERSION);
        return ISM_AUTH_EPROTO;
    }
    *code = p[6];
    return p[5];
}

static int refused(hs *h, int code)
{
    switch (code) {
    case ISM_AUTH_R_JOB:
        set_err(h->err, h->errlen,
                "job id mismatch: peer %s belongs to another job (it refused our job id)",
                h->peer);
        return ISM_AUTH_EJOB;
    case ISM_AUTH_R_VERSION:
        set_err(h->err, h->errlen,
                "peer %s does not support handshake version %d (mixed isthmus releases?)",
                h->peer, AUTH_VERSION);
        return ISM_AUTH_EPROTO;
    case ISM_AUTH_R_BADMAC:
        set_err(h->err, h->errlen,
                "peer %s rejected our authentication: wrong job secret (HMAC mismatch)", h->peer);
        return ISM_AUTH_EAUTH;
    case ISM_AUTH_R_IDENT:
        set_err(h->err, h->errlen,
                "peer %s refused the handshake: both ends claim the same gateway identity "
                "(duplicate site/gateway numbers in the configuration?)",
                h->peer);
        return ISM_AUTH_EIDENT;
    default:
        set_err(h->err, h->errlen, "peer %s refused the handshake (reason code %d)", h->peer, code);
        return ISM_AUTH_EPROTO;
    }
}

static int unexpected(hs *h, int type, const char *what)
{
    set_err(h->err, h->errlen, "peer %s sent handshake message type %d where %s was expected",
            h->peer, type, what);
    return ISM_AUTH_EPROTO;
}

static int compute_mac(hs *h, const ism_auth_key *k, const char *label, ism_auth_id cid,
                       ism_auth_id sid, const uint8_t *n1, const uint8_t *n2, uint8_t *out)
{
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
    unsigned int outlen = 0;
    const unsigned char *r =
        HMAC(EVP_sha256(), k->secret, (int)k->secret_len, t, sizeof t, out, &outlen);
    OPENSSL_cleanse(t, sizeof t);
    if (r == NULL || outlen != MAC_LEN) {
        unsigned long e = ERR_get_error();
        const char *why = e ? ERR_reason_error_string(e) : NULL;
        set_err(h->err, h->errlen, "handshake with peer %s: HMAC-SHA256 failed (%s)", h->peer,
                why ? why : "OpenSSL error");
        return ISM_AUTH_ECRYPTO;
    }
    return 0;
}

static int make_nonce(hs *h, uint8_t *n)
{
    if (RAND_bytes(n, NONCE_LEN) != 1) {
        unsigned long e = ERR_get_error();
        set_err(h->err, h->errlen, "handshake with peer %s: cannot generate a nonce (%s)", h->peer,
                e && ERR_reason_error_string(e) ? ERR_reason_error_string(e)
                                                : "RAND_bytes failed");
        return ISM_AUTH_ECRYPTO;
    }
    return 0;
}

static int hs_begin(hs *h, int fd, const ism_auth_key *k, int timeout_ms, const char *role,
                    char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    h->fd = fd;
    h->timeout_ms = timeout_ms;
    h->role = role;
    h->err = err;
    h->errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    if (fd < 0 || k == NULL || timeout_ms <= 0) {
        set_err(err, errlen, "auth %s: invalid argument (fd %d, key %s, timeout %d ms)", role, fd,
                k ? "set" : "missing", timeout_ms);
        return ISM_AUTH_EINVAL;
    }
    if (k->secret_len < ISM_AUTH_SECRET_MIN || k->secret_len > ISM_AUTH_SECRET_MAX) {
        set_err(err, errlen, "auth %s: job secret length %zu is outside %d..%d bytes", role,
                k->secret_len, ISM_AUTH_SECRET_MIN, ISM_AUTH_SECRET_MAX);
        return ISM_AUTH_EINVAL;
    }
    h->deadline = ism_now_ms() + timeout_ms;
    ism_sock_peer_name(fd, h->peer, sizeof h->peer);
    return 0;
}

static int client_run(hs *h, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out)
{
    int rc, code = 0;
    uint8_t *m = h->buf;

    if ((rc = make_nonce(h, h->nc)) != 0)
        return rc;
    put_preamble(m, MSG_HELLO, 0);
    put_id(m + PRE_LEN, self);
    memcpy(m + PRE_LEN + 8, h->nc, NONCE_LEN);
    memcpy(m + PRE_LEN + 8 + NONCE_LEN, k->job, ISM_AUTH_JOB_LEN);
    if ((rc = hs_write(h, m, HELLO_LEN, "HELLO")) != 0)
        return rc;

    int type = read_preamble(h, "CHALLENGE", &code);
    if (type < 0)
        return type;
    if (type == MSG_REFUSE)
        return refused(h, code);
    if (type != MSG_CHALLENGE)
        return unexpected(h, type, "CHALLENGE");
    if ((rc = hs_read(h, m + PRE_LEN, CHALLENGE_LEN - PRE_LEN, "CHALLENGE")) != 0)
        return rc;
    ism_auth_id peer = get_id(m + PRE_LEN);
    memcpy(h->ns, m + PRE_LEN + 8, NONCE_LEN);
    memcpy(h->mac, m + PRE_LEN + 8 + NONCE_LEN, MAC_LEN);

    if (same_id(peer, self) || CRYPTO_memcmp(h->ns, h->nc, NONCE_LEN) == 0) {
        send_refuse(h, ISM_AUTH_R_IDENT);
        set_err(h->err, h->errlen,
                "peer %s claims to be this very gateway (site %u, gateway %u) or echoed our "
                "nonce: refusing (reflected connection or duplicate configuration?)",
                h->peer, (unsigned)self.site, (unsigned)self.gw);
        return ISM_AUTH_EIDENT;
    }
    if ((rc = compute_mac(h, k, LABEL_SERVER, self, peer, h->nc, h->ns, h->expect)) != 0)
        return rc;
    if (CRYPTO_memcmp(h->mac, h->expect, MAC_LEN) != 0) {
        send_refuse(h, ISM_AUTH_R_BADMAC);
        set_err(h->err, h->errlen,
                "peer %s (site %u, gateway %u) failed authentication: wrong job secret (HMAC "
                "mismatch)",
                h->peer, (unsigned)peer.site, (unsigned)peer.gw);
        return ISM_AUTH_EAUTH;
    }

    if ((rc = compute_mac(h, k, LABEL_CLIENT, self, peer, h->ns, h->nc, h->mac)) != 0)
        return rc;
    put_preamble(m, MSG_RESPONSE, 0);
    memcpy(m + PRE_LEN, h->mac, MAC_LEN);
    if ((rc = hs_write(h, m, RESPONSE_LEN, "RESPONSE")) != 0)
        return rc;

    uint8_t verdict = 0;
    if ((rc = hs_read(h, &verdict, 1, "the verdict")) != 0)
        return rc;
    if (verdict == 0) {
        set_err(h->err, h->errlen,
                "peer %s rejected our authentication: wrong job secret (HMAC mismatch)", h->peer);
        return ISM_AUTH_EAUTH;
    }
    if (verdict != 1) {
        set_err(h->err, h->errlen, "peer %s sent an invalid handshake verdict %u", h->peer,
                (unsigned)verdict);
        return ISM_AUTH_EPROTO;
    }
    if (peer_out)
        *peer_out = peer;
    return 0;
}

static int server_run(hs *h, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out)
{
    int rc, code = 0;
    uint8_t *m = h->buf;

    int type = read_preamble(h, "HELLO", &code);
    if (type < 0)
        return type;
    if (type != MSG_HELLO)
        return unexpected(h, type, "HELLO");
    if ((rc = hs_read(h, m + PRE_LEN, HELLO_LEN - PRE_LEN, "HELLO")) != 0)
        return rc;
    ism_auth_id peer = get_id(m + PRE_LEN);
    memcpy(h->nc, m + PRE_LEN + 8, NONCE_LEN);
    /* The job id is public, so a plain compare is fine and lets us refuse early. */
    if (memcmp(m + PRE_LEN + 8 + NONCE_LEN, k->job, ISM_AUTH_JOB_LEN) != 0) {
        send_refuse(h, ISM_AUTH_R_JOB);
        set_err(h->err, h->errlen,
                "job id mismatch: peer %s (site %u, gateway %u) belongs to another job", h->peer,
                (unsigned)peer.site, (unsigned)peer.gw);
        return ISM_AUTH_EJOB;
    }
    if (same_id(peer, self)) {
        send_refuse(h, ISM_AUTH_R_IDENT);
        set_err(h->err, h->errlen,
                "peer %s claims to be this very gateway (site %u, gateway %u): refusing "
                "(reflected connection or duplicate configuration?)",
                h->peer, (unsigned)self.site, (unsigned)self.gw);
        return ISM_AUTH_EIDENT;
    }

    if ((rc = make_nonce(h, h->ns)) != 0)
        return rc;
    if ((rc = compute_mac(h, k, LABEL_SERVER, peer, self, h->nc, h->ns, h->mac)) != 0)
        return rc;
    put_preamble(m, MSG_CHALLENGE, 0);
    put_id(m + PRE_LEN, self);
    memcpy(m + PRE_LEN + 8, h->ns, NONCE_LEN);
    memcpy(m + PRE_LEN + 8 + NONCE_LEN, h->mac, MAC_LEN);
    if ((rc = hs_write(h, m, CHALLENGE_LEN, "CHALLENGE")) != 0)
        return rc;

    type = read_preamble(h, "RESPONSE", &code);
    if (type < 0)
        return type;
    if (type == MSG_REFUSE)
        return refused(h, code);
    if (type != MSG_RESPONSE)
        return unexpected(h, type, "RESPONSE");
    if ((rc = hs_read(h, h->mac, MAC_LEN, "RESPONSE")) != 0)
        return rc;
    if ((rc = compute_mac(h, k, LABEL_CLIENT, peer, self, h->ns, h->nc, h->expect)) != 0)
        return rc;
    if (CRYPTO_memcmp(h->mac, h->expect, MAC_LEN) != 0) {
        uint8_t no = 0;
        (void)ism_sock_write_full(h->fd, &no, 1, h->deadline, NULL);
        set_err(h->err, h->errlen,
                "peer %s (site %u, gateway %u) failed authentication: wrong job secret (HMAC "
                "mismatch)",
                h->peer, (unsigned)peer.site, (unsigned)peer.gw);
        return ISM_AUTH_EAUTH;
    }
    uint8_t yes = 1;
    if ((rc = hs_write(h, &yes, 1, "the verdict")) != 0)
        return rc;
    if (peer_out)
        *peer_out = peer;
    return 0;
}

int ism_auth_client(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen)
{
    hs h;
    int rc = hs_begin(&h, fd, k, timeout_ms, "client", err, errlen);
    if (rc == 0)
        rc = client_run(&h, k, self, peer_out);
    hs_wipe(&h);
    return rc;
}

int ism_auth_server(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen)
{
    hs h;
    int rc = hs_begin(&h, fd, k, timeout_ms, "server", err, errlen);
    if (rc == 0)
        rc = server_run(&h, k, self, peer_out);
    hs_wipe(&h);
    return rc;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes n (even) hex chars into n/2 bytes; returns the index of the first bad
 * character, or -1 if all are valid. Positions, never characters, go into messages. */
static long unhex(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0)
            return (long)i;
        if (lo < 0)
            return (long)i + 1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return -1;
}

int ism_auth_key_from_hex(ism_auth_key *k, const char *job_hex, const char *secret_hex, char *err,
                          size_t errlen)
{
    if (k == NULL) {
        set_err(err, errlen, "internal error: no key to fill");
        return ISM_AUTH_EINVAL;
    }
    memset(k, 0, sizeof *k);
    if (job_hex == NULL || *job_hex == '\0') {
        set_err(err, errlen, "no job id given (expected %d hex digits)", 2 * ISM_AUTH_JOB_LEN);
        return ISM_AUTH_EKEY;
    }
    size_t jl = strlen(job_hex);
    if (jl != 2 * ISM_AUTH_JOB_LEN) {
        set_err(err, errlen, "job id must be %d hex digits (got %zu characters)",
                2 * ISM_AUTH_JOB_LEN, jl);
        return ISM_AUTH_EKEY;
    }
    long bad = unhex(job_hex, jl, k->job);
    if (bad >= 0) {
        set_err(err, errlen, "job id is not valid hex (bad character at position %ld)", bad + 1);
        memset(k, 0, sizeof *k);
        return ISM_AUTH_EKEY;
    }
    if (secret_hex == NULL || *secret_hex == '\0') {
        set_err(err, errlen, "no job secret given");
        memset(k, 0, sizeof *k);
        return ISM_AUTH_EKEY;
    }
    size_t sl = strlen(secret_hex);
    if (sl % 2 != 0 || sl < 2 * ISM_AUTH_SECRET_MIN || sl > 2 * ISM_AUTH_SECRET_MAX) {
        set_err(err, errlen,
                "job secret must be an even number of hex digits between %d and %d (%d..%d "
                "bytes); got %zu characters",
                2 * ISM_AUTH_SECRET_MIN, 2 * ISM_AUTH_SECRET_MAX, ISM_AUTH_SECRET_MIN,
                ISM_AUTH_SECRET_MAX, sl);
        memset(k, 0, sizeof *k);
        return ISM_AUTH_EKEY;
    }
    bad = unhex(secret_hex, sl, k->secret);
    if (bad >= 0) {
        set_err(err, errlen, "job secret is not valid hex (bad character at position %ld)",
                bad + 1);
        ism_auth_key_clear(k);
        return ISM_AUTH_EKEY;
    }
    k->secret_len = sl / 2;
    return 0;
}

#define KEYFILE_MAX 1024

int ism_auth_key_load_file(ism_auth_key *k, const char *job_hex, const char *path, char *err,
                           size_t errlen)
{
    if (k == NULL) {
        set_err(err, errlen, "internal error: no key to fill");
        return ISM_AUTH_EINVAL;
    }
    if (path == NULL || *path == '\0') {
        set_err(err, errlen, "no job secret file given");
        return ISM_AUTH_EKEY;
    }
    memset(k, 0, sizeof *k);
    /* O_NONBLOCK so a FIFO at that path cannot hang us before the S_ISREG check. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        set_err(err, errlen, "cannot open job secret file %s: %s", path, strerror(errno));
        return ISM_AUTH_EKEY;
    }
    /* fstat on the opened fd, not stat on the path, so the checked file is the read one. */
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, "cannot stat job secret file %s: %s", path, strerror(errno));
        close(fd);
        return ISM_AUTH_EKEY;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errlen, "job secret file %s is not a regular file", path);
        close(fd);
        return ISM_AUTH_EKEY;
    }
    if ((st.st_mode & 077) != 0) {
        set_err(err, errlen,
                "refusing job secret file %s: its permissions %04o let group/other users access "
                "it; run 'chmod 600 %s' (and consider the secret leaked if others could read it)",
                path, (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return ISM_AUTH_EKEY;
    }
    char buf[KEYFILE_MAX + 1];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            OPENSSL_cleanse(buf, sizeof buf);
            close(fd);
            set_err(err, errlen, "cannot read job secret file %s: %s", path, strerror(e));
            return ISM_AUTH_EKEY;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        if (got == sizeof buf - 1) {
            char extra;
            ssize_t more;
            do
                more = read(fd, &extra, 1);
            while (more < 0 && errno == EINTR);
            if (more != 0) {
                OPENSSL_cleanse(buf, sizeof buf);
                OPENSSL_cleanse(&extra, sizeof extra);
                close(fd);
                set_err(err, errlen,
                        "job secret file %s is too large to hold a hex secret (over %d bytes)",
                        path, KEYFILE_MAX);
                return ISM_AUTH_EKEY;
            }
            break;
        }
    }
    close(fd);
    buf[got] = '\0';

    size_t b = 0, e = got;
    while (b < e && (buf[b] == ' ' || buf[b] == '\t' || buf[b] == '\n' || buf[b] == '\r'))
        b++;
    while (e > b && (buf[e - 1] == ' ' || buf[e - 1] == '\t' || buf[e - 1] == '\n' ||
                     buf[e - 1] == '\r'))
        e--;
    buf[e] = '\0';

    char why[256];
    int rc = ism_auth_key_from_hex(k, job_hex, buf + b, why, sizeof why);
    OPENSSL_cleanse(buf, sizeof buf);
    if (rc != 0) {
        set_err(err, errlen, "job secret file %s: %s", path, why);
        return rc;
    }
    return 0;
}

void ism_auth_key_clear(ism_auth_key *k)
{
    if (k)
        OPENSSL_cleanse(k, sizeof *k);
}

const char *ism_auth_strerror(int code)
{
    switch (code) {
    case 0:
        return "ok";
    case ISM_AUTH_EIO:
        return "socket error during handshake";
    case ISM_AUTH_ECLOSED:
        return "peer closed during handshake";
    case ISM_AUTH_ETIMEDOUT:
        return "handshake timed out";
    case ISM_AUTH_EPROTO:
        return "peer does not speak the isthmus handshake";
    case ISM_AUTH_EJOB:
        return "job id mismatch: peer belongs to another job";
    case ISM_AUTH_EAUTH:
        return "authentication failed: wrong job secret";
    case ISM_AUTH_EIDENT:
        return "peer claims our own identity";
    case ISM_AUTH_ECRYPTO:
        return "cryptographic library failure";
    case ISM_AUTH_EINVAL:
        return "invalid argument";
    case ISM_AUTH_EKEY:
        return "invalid or unsafe job key";
    default:
        return "unknown authentication error";
    }
}
