/* auth.c: the blocking side of auth.h: the handshake driven over one socket with a
 * deadline (for tools that talk to one peer at a time: the copy tool, the link probe,
 * the reliable-UDP set-up), and the job key: loading it safely from hex or from a
 * private file. The handshake itself is the state machine in auth_hs.c. Secrets are
 * wiped before returning and never formatted into error messages.
 */
#include "auth.h"

#include "aead.h"
#include "sock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

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

/* Runs the state machine over fd until it ends or deadline passes. */
typedef int (*early_fn)(void *arg, const ism_aead_keys *keys, int64_t deadline_ms);

static int run(int fd, int server, const ism_auth_key *k, ism_auth_id self, unsigned suites,
               int rekey_log2, const char *transport, ism_auth_id *peer_out,
               struct ism_aead_keys *keys, int timeout_ms, char *err, size_t errlen,
               early_fn early, void *arg);

int ism_auth_run(int fd, int server, const ism_auth_key *k, ism_auth_id self, unsigned suites,
                 int rekey_log2, const char *transport, ism_auth_id *peer_out,
                 struct ism_aead_keys *keys, int timeout_ms, char *err, size_t errlen)
{
    return run(fd, server, k, self, suites, rekey_log2, transport, peer_out, keys, timeout_ms,
               err, errlen, NULL, NULL);
}

int ism_auth_run_early(int fd, const ism_auth_key *k, ism_auth_id self, unsigned suites,
                       int rekey_log2, const char *transport, ism_auth_id *peer_out,
                       struct ism_aead_keys *keys, int timeout_ms, char *err, size_t errlen,
                       early_fn early, void *arg)
{
    if (!keys || !early) {
        set_err(err, errlen, "auth client: early data needs keys and a writer");
        return ISM_AUTH_EINVAL;
    }
    return run(fd, 0, k, self, suites, rekey_log2, transport, peer_out, keys, timeout_ms, err,
               errlen, early, arg);
}

static int run(int fd, int server, const ism_auth_key *k, ism_auth_id self, unsigned suites,
               int rekey_log2, const char *transport, ism_auth_id *peer_out,
               struct ism_aead_keys *keys, int timeout_ms, char *err, size_t errlen,
               early_fn early, void *arg)
{
    const char *role = server ? "server" : "client";
    if (err && errlen)
        err[0] = '\0';
    if (fd < 0 || k == NULL || timeout_ms <= 0) {
        set_err(err, errlen, "auth %s: invalid argument (fd %d, key %s, timeout %d ms)", role, fd,
                k ? "set" : "missing", timeout_ms);
        return ISM_AUTH_EINVAL;
    }
    int64_t deadline = ism_now_ms() + timeout_ms;
    char name[80];
    ism_sock_peer_name(fd, name, sizeof name);
    ism_auth_hs h;
    ism_auth_hs_start(&h, server, k, self, suites, rekey_log2, name);
    while (h.state == ISM_AUTH_HS_RUN) {
        const uint8_t *out;
        size_t n = ism_auth_hs_pending(&h, &out), done = 0;
        if (n > 0) {
            int rc = ism_sock_write_full(fd, out, n, deadline, &done);
            ism_auth_hs_sent(&h, done);
            if (rc != 0)
                ism_auth_hs_io_failed(&h, rc, timeout_ms);
            continue;
        }
        if (early && ism_auth_hs_client_verified(&h)) {
            ism_aead_keys ek;
            int rc = ism_aead_derive(&h, transport, &ek) != 0 ? ISM_SOCK_EIO
                                                                 : early(arg, &ek, deadline);
            ism_aead_keys_wipe(&ek);
            early = NULL; /* once */
            if (rc != 0) {
                ism_auth_hs_io_failed(&h, rc, timeout_ms);
                continue;
            }
        }
        uint8_t *in;
        n = ism_auth_hs_wanted(&h, &in);
        int rc = ism_sock_read_full(fd, in, n, deadline, &done);
        ism_auth_hs_received(&h, done);
        if (rc != 0)
            ism_auth_hs_io_failed(&h, rc, timeout_ms);
    }
    if (h.state == ISM_AUTH_HS_FAILED) {
        const uint8_t *out;
        size_t n = ism_auth_hs_pending(&h, &out);
        if (n > 0) /* a refusal: best effort, so the peer can say why */
            (void)ism_sock_write_full(fd, out, n, deadline, NULL);
        set_err(err, errlen, "%s", h.err);
    } else {
        if (peer_out)
            *peer_out = h.peer;
        if (keys && ism_aead_derive(&h, transport, keys) != 0) {
            set_err(err, errlen, "handshake with peer %s: deriving the traffic keys failed", name);
            h.state = ISM_AUTH_HS_FAILED;
            h.rc = ISM_AUTH_ECRYPTO;
        }
    }
    int rc = h.state == ISM_AUTH_HS_DONE ? 0 : h.rc;
    ism_auth_hs_wipe(&h);
    return rc;
}

int ism_auth_client(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen)
{
    return ism_auth_run(fd, 0, k, self, ISM_AUTH_SUITES_NONE, 0, "", peer_out, NULL, timeout_ms,
                        err, errlen);
}

int ism_auth_server(int fd, const ism_auth_key *k, ism_auth_id self, ism_auth_id *peer_out,
                    int timeout_ms, char *err, size_t errlen)
{
    return ism_auth_run(fd, 1, k, self, ISM_AUTH_SUITES_NONE, 0, "", peer_out, NULL, timeout_ms,
                        err, errlen);
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
    case ISM_AUTH_ESUITE:
        return "the two ends disagree on link encryption";
    default:
        return "unknown authentication error";
    }
}
