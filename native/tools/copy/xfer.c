/* xfer.c: messages on a stream, a file's bytes as DATA/END with SHA-256 (OpenSSL's
 * libcrypto, which the WAN layer already links for its HMACs), and the progress meter
 * (xfer.h). */
#define _GNU_SOURCE
#include "xfer.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double icp_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void icp_meter_start(icp_meter *m, uint64_t total, int quiet)
{
    m->quiet = quiet;
    m->total = total;
    m->t0 = m->last = icp_now_s();
    m->printed = 0;
    m->base = 0;
    atomic_init(&m->done, 0);
}

void icp_meter_update(icp_meter *m, uint64_t done)
{
    atomic_store_explicit(&m->done, done, memory_order_relaxed);
    double now = icp_now_s();
    if (m->quiet || now - m->t0 < 1.0 || now - m->last < 0.5)
        return;
    m->last = now;
    double rate = (done > m->base ? done - m->base : 0) / (now - m->t0);
    double eta = rate > 0 && m->total > done ? (m->total - done) / rate : 0;
    fprintf(stderr, "%llu of %llu bytes (%.0f%%), %.1f Mbit/s, ETA %.0f s\n",
            (unsigned long long)done, (unsigned long long)m->total,
            m->total ? 100.0 * done / m->total : 100.0, rate * 8 / 1e6, eta);
    m->printed = 1;
}

void icp_meter_end(icp_meter *m)
{
    if (m->printed)
        fflush(stderr);
}

size_t icp_msg_put(uint8_t *out, int type, const void *body, size_t n)
{
    icp_hdr_encode(out, type, (uint32_t)n);
    if (n)
        memcpy(out + ICP_HDR, body, n);
    return ICP_HDR + n;
}

int icp_msg_send(icp_stream *s, int type, const void *body, size_t n)
{
    if (n <= ICP_MAX_BODY) { /* header and body in one send: one packet, one record */
        uint8_t m[ICP_HDR + ICP_MAX_BODY];
        return icp_send(s, m, icp_msg_put(m, type, body, n));
    }
    uint8_t h[ICP_HDR];
    icp_hdr_encode(h, type, (uint32_t)n);
    if (icp_send(s, h, sizeof h) != 0)
        return -1;
    return icp_send(s, body, n);
}

int icp_msg_recv(icp_stream *s, uint8_t *buf, uint32_t *len)
{
    uint8_t h[ICP_HDR];
    int type;
    const char *why = NULL;
    if (icp_recv(s, h, sizeof h) != 0)
        return -1;
    if (icp_hdr_decode(h, &type, len, &why) != 0) {
        snprintf(s->err, sizeof s->err, "%s sent a malformed message: %s", s->peer, why);
        return -1;
    }
    if (*len && icp_recv(s, buf, *len) != 0)
        return -1;
    return type;
}

void icp_send_error(icp_stream *s, uint32_t status, const char *msg)
{
    uint8_t b[ICP_MAX_MSG + 8];
    size_t n = icp_error_encode(status, msg, b);
    icp_msg_send(s, ICP_ERROR, b, n);
}

void icp_describe_error(const uint8_t *body, uint32_t len, char *out, size_t outlen)
{
    uint32_t status;
    char msg[ICP_MAX_MSG + 1];
    const char *why = NULL;
    if (icp_error_decode(body, len, &status, msg, &why) != 0)
        snprintf(out, outlen, "a malformed ERROR message (%s)", why);
    else
        snprintf(out, outlen, "%s: %s", icp_status_name(status), msg);
}

/* Read exactly n bytes at the file's current offset: n, fewer at end of file, -1. */
static ssize_t read_full(int fd, uint8_t *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t r = write(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Add fd's first n bytes to md (pread: the file offset is left alone). 0 or -1. */
static int hash_range(EVP_MD_CTX *md, int fd, uint64_t n, uint8_t *buf)
{
    for (uint64_t at = 0; at < n;) {
        size_t want = n - at < ICP_CHUNK ? (size_t)(n - at) : ICP_CHUNK;
        ssize_t r = pread(fd, buf, want, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        EVP_DigestUpdate(md, buf, (size_t)r);
        at += (uint64_t)r;
    }
    return 0;
}

int icp_sha_buf(const void *p, size_t n, uint8_t out[ICP_SHA])
{
    unsigned int dl = 0;
    return EVP_Digest(p, n, out, &dl, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

int icp_sha_prefix(int fd, uint64_t n, uint8_t *buf, uint8_t out[ICP_SHA])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int dl = 0;
    int rc = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 && hash_range(md, fd, n, buf) == 0 &&
                     EVP_DigestFinal_ex(md, out, &dl) == 1
                 ? 0
                 : -1;
    EVP_MD_CTX_free(md);
    return rc;
}

int icp_send_file(icp_stream *s, int fd, uint64_t size, uint64_t offset, icp_meter *m,
                  uint8_t *chunk, uint8_t sha[ICP_SHA], char *err, size_t errlen)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "SHA-256 is not available from OpenSSL");
        EVP_MD_CTX_free(md);
        icp_send_error(s, ICP_S_IO, "the source could not compute SHA-256");
        return -1;
    }
    uint64_t off = offset;
    int rc = -1;
    m->base = offset;
    if (hash_range(md, fd, offset, chunk) != 0 || lseek(fd, (off_t)offset, SEEK_SET) < 0) {
        snprintf(err, errlen, "reading the first %llu bytes of the source again: %s",
                 (unsigned long long)offset, strerror(errno));
        icp_send_error(s, ICP_S_IO, err);
        goto out;
    }
    while (off < size) {
        size_t want = size - off < ICP_CHUNK ? (size_t)(size - off) : ICP_CHUNK;
        ssize_t r = read_full(fd, chunk, want);
        if (r != (ssize_t)want) {
            char msg[256];
            if (r < 0)
                snprintf(msg, sizeof msg, "reading the source near byte %llu: %s",
                         (unsigned long long)off, strerror(errno));
            else
                snprintf(msg, sizeof msg, "the source shrank to %llu bytes while it was read "
                         "(%llu expected)", (unsigned long long)(off + (uint64_t)r),
                         (unsigned long long)size);
            snprintf(err, errlen, "%s", msg);
            icp_send_error(s, r < 0 ? ICP_S_IO : ICP_S_SIZE, msg);
            goto out;
        }
        EVP_DigestUpdate(md, chunk, want);
        if (icp_msg_send(s, ICP_DATA, chunk, want) != 0) {
            snprintf(err, errlen, "%s", s->err);
            goto out;
        }
        off += want;
        uint64_t pending = icp_unacked(s);
        icp_meter_update(m, pending > off - offset ? offset : off - pending);
    }
    uint8_t extra;
    if (read_full(fd, &extra, 1) != 0) {
        snprintf(err, errlen, "the source grew while it was read (%llu bytes were announced)",
                 (unsigned long long)size);
        icp_send_error(s, ICP_S_SIZE, err);
        goto out;
    }
    unsigned int dl = 0;
    EVP_DigestFinal_ex(md, sha, &dl);
    icp_end e = {size, {0}};
    memcpy(e.sha, sha, ICP_SHA);
    uint8_t b[8 + ICP_SHA];
    if (icp_msg_send(s, ICP_END, b, icp_end_encode(&e, b)) != 0) {
        snprintf(err, errlen, "%s", s->err);
        goto out;
    }
    rc = 0;
out:
    EVP_MD_CTX_free(md);
    return rc;
}

int icp_recv_file(icp_stream *s, int fd, uint64_t size, uint64_t offset, icp_meter *m,
                  uint8_t *buf, uint8_t sha[ICP_SHA], char *err, size_t errlen)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        snprintf(err, errlen, "SHA-256 is not available from OpenSSL");
        return -1;
    }
    uint64_t got = offset;
    int status = ICP_OK, rc = -1;
    m->base = offset;
    /* the part kept from an earlier attempt counts in the digest; anything past it goes */
    if (hash_range(md, fd, offset, buf) != 0 || ftruncate(fd, (off_t)offset) != 0 ||
        lseek(fd, (off_t)offset, SEEK_SET) < 0) {
        snprintf(err, errlen, "reading the %llu bytes kept from the last attempt: %s",
                 (unsigned long long)offset, strerror(errno));
        icp_send_error(s, ICP_S_IO, err);
        goto out;
    }
    for (;;) {
        uint32_t len;
        int type = icp_msg_recv(s, buf, &len);
        if (type < 0) {
            snprintf(err, errlen, "%s (after %llu of %llu bytes)", s->err,
                     (unsigned long long)got, (unsigned long long)size);
            goto out;
        }
        if (type == ICP_ERROR) {
            char d[ICP_MAX_MSG + 64];
            icp_describe_error(buf, len, d, sizeof d);
            snprintf(err, errlen, "%s gave up after %llu bytes: %s", s->peer,
                     (unsigned long long)got, d);
            goto out;
        }
        if (type == ICP_END) {
            icp_end e;
            const char *why = NULL;
            unsigned int dl = 0;
            EVP_DigestFinal_ex(md, sha, &dl);
            if (icp_end_decode(buf, len, &e, &why) != 0 || e.size != got || got != size) {
                snprintf(err, errlen, "%s ended the data after %llu bytes, %llu were announced%s%s",
                         s->peer, (unsigned long long)got, (unsigned long long)size,
                         why ? ": " : "", why ? why : "");
                icp_send_error(s, ICP_S_PROTO, err);
                goto out;
            }
            if (status == ICP_OK && memcmp(e.sha, sha, ICP_SHA) != 0) {
                snprintf(err, errlen, "SHA-256 of the %llu bytes received differs from the "
                         "source's: the copy was discarded", (unsigned long long)got);
                status = ICP_S_CHECKSUM;
            }
            rc = status;
            goto out;
        }
        if (type != ICP_DATA || len > size - got) {
            snprintf(err, errlen, "%s sent %s", s->peer,
                     type != ICP_DATA ? "an unexpected message during the data"
                                      : "more data than the file's announced size");
            icp_send_error(s, ICP_S_PROTO, err);
            goto out;
        }
        EVP_DigestUpdate(md, buf, len);
        if (status == ICP_OK && write_full(fd, buf, len) != 0) {
            /* keep reading (bounded by size) so the source hears why in RESULT */
            snprintf(err, errlen, "writing at byte %llu: %s", (unsigned long long)got,
                     strerror(errno));
            status = ICP_S_IO;
        }
        got += len;
        icp_meter_update(m, got);
    }
out:
    EVP_MD_CTX_free(md);
    return rc;
}

void icp_await_answer(icp_stream *s, icp_meter *m, uint64_t size)
{
    uint64_t last = icp_unacked(s);
    double since = icp_now_s();
    while (icp_wait_readable(s, 250) == 0) {
        uint64_t u = icp_unacked(s);
        icp_meter_update(m, u > size ? 0 : size - u);
        if (u != last) {
            last = u;
            since = icp_now_s();
        } else if (icp_now_s() - since > s->tmo_ms / 1000.0) {
            return;
        }
    }
}

int icp_result_send(icp_stream *s, uint32_t status, const uint8_t sha[ICP_SHA], const char *msg)
{
    icp_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    if (sha)
        memcpy(r.sha, sha, ICP_SHA);
    snprintf(r.msg, sizeof r.msg, "%s", msg ? msg : "");
    uint8_t b[ICP_MAX_MSG + 64];
    return icp_msg_send(s, ICP_RESULT, b, icp_result_encode(&r, b));
}

int icp_result_recv(icp_stream *s, uint8_t *buf, icp_result *r, char *err, size_t errlen)
{
    uint32_t len;
    const char *why = NULL;
    int type = icp_msg_recv(s, buf, &len);
    if (type < 0) {
        snprintf(err, errlen, "waiting for the result: %s", s->err);
        return -1;
    }
    if (type == ICP_ERROR) {
        char d[ICP_MAX_MSG + 64];
        icp_describe_error(buf, len, d, sizeof d);
        snprintf(err, errlen, "%s: %s", s->peer, d);
        return -1;
    }
    if (type != ICP_RESULT || icp_result_decode(buf, len, r, &why) != 0) {
        snprintf(err, errlen, "%s sent %s instead of the result", s->peer,
                 type != ICP_RESULT ? "another message" : "a malformed result");
        return -1;
    }
    return 0;
}
