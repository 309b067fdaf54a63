/* sstream.c: the AEAD record stream of sstream.h. */
#include "sstream.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "../common/le.h"
#include "sock.h"

#define REC_MAX (ISM_SSTREAM_OVERHEAD + ISM_SSTREAM_MAX)
#define TXB_CAP (2 * REC_MAX)
#define RXB_CAP (4 * REC_MAX)

int ism_sstream_init(ism_sstream *s, const ism_aead_keys *keys, int client)
{
    memset(s, 0, sizeof *s);
    const ism_aead_dir_keys *out = client ? &keys->c2s : &keys->s2c;
    const ism_aead_dir_keys *in = client ? &keys->s2c : &keys->c2s;
    s->txb = malloc(TXB_CAP);
    s->rxb = malloc(RXB_CAP);
    s->pt = malloc(ISM_SSTREAM_MAX);
    if (!s->txb || !s->rxb || !s->pt ||
        ism_aead_init(&s->tx, keys->suite, out, 1, keys->rekey_log2) != 0 ||
        ism_aead_init(&s->rx, keys->suite, in, 0, keys->rekey_log2) != 0) {
        ism_sstream_free(s);
        return -1;
    }
    return 0;
}

void ism_sstream_free(ism_sstream *s)
{
    ism_aead_free(&s->tx);
    ism_aead_free(&s->rx);
    if (s->pt) /* opened plaintext, the last thing that may hold it */
        OPENSSL_cleanse(s->pt, ISM_SSTREAM_MAX);
    free(s->txb);
    free(s->rxb);
    free(s->pt);
    memset(s, 0, sizeof *s);
}

size_t ism_sstream_pending(const ism_sstream *s) { return s->tx_len - s->tx_off; }

int ism_sstream_seal_end(ism_sstream *s)
{
    if (s->end_sent)
        return 0;
    if (s->tx_off == s->tx_len)
        s->tx_off = s->tx_len = 0;
    if (TXB_CAP - s->tx_len < ISM_SSTREAM_OVERHEAD)
        return -1;
    uint8_t *r = s->txb + s->tx_len;
    ism_put_le32(r, 0);
    if (ism_aead_seal(&s->tx, s->tx_seq, r, 4, NULL, 0, r + 4, r + 4) != 0)
        return -1;
    s->tx_seq++;
    s->tx_len += ISM_SSTREAM_OVERHEAD;
    s->end_sent = 1;
    return 0;
}

ssize_t ism_sstream_seal(ism_sstream *s, const struct iovec *iov, int n)
{
    if (s->tx_off == s->tx_len)
        s->tx_off = s->tx_len = 0;
    else if (s->tx_off > 0 && s->tx_len - s->tx_off < REC_MAX) {
        memmove(s->txb, s->txb + s->tx_off, s->tx_len - s->tx_off);
        s->tx_len -= s->tx_off;
        s->tx_off = 0;
    }
    size_t taken = 0;
    int i = 0;
    size_t skip = 0; /* bytes of iov[i] already sealed */
    while (i < n && TXB_CAP - s->tx_len > ISM_SSTREAM_OVERHEAD) {
        /* one record: up to ISM_SSTREAM_MAX bytes gathered from the iovecs */
        size_t room = TXB_CAP - s->tx_len - ISM_SSTREAM_OVERHEAD;
        if (room > ISM_SSTREAM_MAX)
            room = ISM_SSTREAM_MAX;
        struct iovec part[16];
        int np = 0;
        size_t len = 0;
        while (i < n && len < room && np < 16) {
            size_t avail = iov[i].iov_len - skip, k = avail < room - len ? avail : room - len;
            if (k) {
                part[np].iov_base = (char *)iov[i].iov_base + skip;
                part[np++].iov_len = k;
                len += k;
            }
            skip += k;
            if (skip == iov[i].iov_len) {
                i++;
                skip = 0;
            }
        }
        if (len == 0)
            break;
        uint8_t *r = s->txb + s->tx_len;
        ism_put_le32(r, (uint32_t)len);
        if (ism_aead_seal(&s->tx, s->tx_seq, r, 4, part, np, r + 4, r + 4 + len) != 0)
            return -1;
        s->tx_seq++;
        s->sealed++;
        s->tx_len += 4 + len + ISM_AEAD_TAG_LEN;
        taken += len;
    }
    return (ssize_t)taken;
}

int ism_sstream_flush(ism_sstream *s, int fd)
{
    while (s->tx_off < s->tx_len) {
        ssize_t w = send(fd, s->txb + s->tx_off, s->tx_len - s->tx_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        if (w < 0)
            return -1;
        s->tx_off += (size_t)w;
    }
    s->tx_off = s->tx_len = 0;
    return 0;
}

/* The whole record at the front of rxb, if one is there: its plaintext length, else -1
 * (not whole yet) or -2 (malformed). */
static long front_record(const ism_sstream *s)
{
    size_t have = s->rx_len - s->rx_off;
    if (have < 4)
        return -1;
    uint32_t len = ism_get_le32(s->rxb + s->rx_off);
    if (len > ISM_SSTREAM_MAX)
        return -2;
    return have >= 4 + len + ISM_AEAD_TAG_LEN ? (long)len : -1;
}

int ism_sstream_readable(const ism_sstream *s)
{
    return s->pt_off < s->pt_len || s->err || front_record(s) >= 0 || front_record(s) == -2;
}

/* Open the front record into out; drop it from rxb. */
static int open_front(ism_sstream *s, size_t len, uint8_t *out)
{
    const uint8_t *r = s->rxb + s->rx_off;
    if (ism_aead_open(&s->rx, s->rx_seq, r, 4, r + 4, len, r + 4 + len, out) != 0) {
        s->rejected++;
        return -1;
    }
    s->rx_seq++;
    s->opened++;
    s->rx_off += 4 + len + ISM_AEAD_TAG_LEN;
    if (s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    return 0;
}

/* A failure: reported now if nothing was delivered in this call, else at the next one. */
static ssize_t failure(ism_sstream *s, size_t got, int e)
{
    if (got > 0) {
        s->err = e;
        return (ssize_t)got;
    }
    errno = e;
    return -1;
}

ssize_t ism_sstream_read(ism_sstream *s, int fd, void *buf, size_t n)
{
    uint8_t *out = buf;
    size_t got = 0;
    if (s->err) {
        errno = s->err;
        return -1;
    }
    while (got < n) {
        if (s->pt_off < s->pt_len) {
            size_t k = s->pt_len - s->pt_off < n - got ? s->pt_len - s->pt_off : n - got;
            memcpy(out + got, s->pt + s->pt_off, k);
            s->pt_off += k;
            got += k;
            continue;
        }
        long len = front_record(s);
        if (s->ended && s->rx_len > s->rx_off) { /* bytes after the end mark */
            s->rejected++;
            return failure(s, got, EBADMSG);
        }
        if (len == -2) {
            s->rejected++;
            return failure(s, got, EBADMSG);
        }
        if (len == 0) { /* the end mark */
            if (open_front(s, 0, s->pt) != 0)
                return failure(s, got, EBADMSG);
            s->ended = 1;
            break;
        }
        if (len > 0) {
            if (n - got >= (size_t)len) { /* straight into the caller's buffer */
                if (open_front(s, (size_t)len, out + got) != 0)
                    return failure(s, got, EBADMSG);
                got += (size_t)len;
            } else {
                if (open_front(s, (size_t)len, s->pt) != 0)
                    return failure(s, got, EBADMSG);
                s->pt_off = 0;
                s->pt_len = (size_t)len;
            }
            continue;
        }
        if (got > 0 || s->eof || s->ended)
            break;
        if (RXB_CAP - s->rx_len < REC_MAX) { /* room for at least a whole record */
            memmove(s->rxb, s->rxb + s->rx_off, s->rx_len - s->rx_off);
            s->rx_len -= s->rx_off;
            s->rx_off = 0;
        }
        ssize_t r = recv(fd, s->rxb + s->rx_len, RXB_CAP - s->rx_len, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0) {
            s->eof = 1;
            if (s->rx_len > s->rx_off) { /* the peer stopped inside a record: cut off */
                s->rejected++;
                return failure(s, got, EBADMSG);
            }
            break;
        }
        s->rx_len += (size_t)r;
    }
    if (got == 0 && s->eof && !s->ended)
        return failure(s, 0, EPIPE); /* closed at a record boundary without the end mark */
    if (got == 0 && !s->eof && !s->ended) {
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)got;
}

static int wait_for(int fd, short ev, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - ism_now_ms();
        if (deadline_ms >= 0 && left <= 0)
            return ISM_SOCK_ETIMEDOUT;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, deadline_ms < 0 ? -1 : (int)left);
        if (r > 0 || (r < 0 && errno != EINTR))
            return r > 0 ? 0 : ISM_SOCK_EIO;
    }
}

int ism_sstream_write_full(ism_sstream *s, int fd, const void *buf, size_t n, int64_t deadline_ms)
{
    size_t done = 0;
    while (done < n || ism_sstream_pending(s)) {
        if (done < n) {
            struct iovec v = {(char *)buf + done, n - done};
            ssize_t k = ism_sstream_seal(s, &v, 1);
            if (k < 0)
                return ISM_SOCK_EIO;
            done += (size_t)k;
        }
        int f = ism_sstream_flush(s, fd);
        if (f < 0)
            return errno == EPIPE || errno == ECONNRESET ? ISM_SOCK_ECLOSED : ISM_SOCK_EIO;
        if (f == 1) {
            int w = wait_for(fd, POLLOUT, deadline_ms);
            if (w)
                return w;
        }
    }
    return 0;
}

int ism_sstream_read_full(ism_sstream *s, int fd, void *buf, size_t n, int64_t deadline_ms)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = ism_sstream_read(s, fd, (char *)buf + done, n - done);
        if (r > 0) {
            done += (size_t)r;
            continue;
        }
        if (r == 0)
            return ISM_SOCK_ECLOSED;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == ECONNRESET ? ISM_SOCK_ECLOSED : ISM_SOCK_EIO;
        int w = wait_for(fd, POLLIN, deadline_ms);
        if (w)
            return w;
    }
    return 0;
}
