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
#define TXB_RECS 2 /* without workers: a seal call fills at most two records */
#define RXB_RECS 4
#define POOL_RECS_PER_SLOT 4 /* with workers: four records per thread and batch (each */
#define POOL_RECS_MAX 16     /* handoff costs a wake-up), at most 16 (256 KiB per direction) */

int ism_sstream_init(ism_sstream *s, const ism_aead_keys *keys, int client)
{
    memset(s, 0, sizeof *s);
    const ism_aead_dir_keys *out = client ? &keys->c2s : &keys->s2c;
    const ism_aead_dir_keys *in = client ? &keys->s2c : &keys->c2s;
    s->nslots = 1;
    s->txb_cap = TXB_RECS * REC_MAX;
    s->rxb_cap = RXB_RECS * REC_MAX;
    s->txb = malloc(s->txb_cap);
    s->rxb = malloc(s->rxb_cap);
    s->pt = malloc(ISM_SSTREAM_MAX);
    s->jobs = malloc(sizeof *s->jobs * ISM_SSTREAM_JOBS);
    if (!s->txb || !s->rxb || !s->pt || !s->jobs ||
        ism_aead_init(&s->tx, keys->suite, out, 1, keys->rekey_log2) != 0 ||
        ism_aead_init(&s->rx, keys->suite, in, 0, keys->rekey_log2) != 0) {
        ism_sstream_free(s);
        return -1;
    }
    return 0;
}

int ism_sstream_use_pool(ism_sstream *s, ism_sealpool *pool)
{
    int workers = ism_sealpool_workers(pool);
    if (workers == 0 || s->pool)
        return 0;
    int recs = POOL_RECS_PER_SLOT * (workers + 1);
    if (recs > POOL_RECS_MAX)
        recs = POOL_RECS_MAX;
    size_t txcap = (size_t)recs * REC_MAX, rxcap = txcap > s->rxb_cap ? txcap : s->rxb_cap;
    uint8_t *txb = malloc(txcap), *rxb = malloc(rxcap);
    ism_aead *txw = ism_aead_clones(&s->tx, workers), *rxw = ism_aead_clones(&s->rx, workers);
    if (!txb || !rxb || !txw || !rxw || s->tx_len || s->rx_len) {
        free(txb);
        free(rxb);
        ism_aead_clones_free(txw, workers);
        ism_aead_clones_free(rxw, workers);
        return -1;
    }
    free(s->txb);
    free(s->rxb);
    s->txb = txb;
    s->rxb = rxb;
    s->txb_cap = txcap;
    s->rxb_cap = rxcap;
    s->txw = txw;
    s->rxw = rxw;
    s->pool = pool;
    s->nslots = workers + 1;
    return 0;
}

void ism_sstream_free(ism_sstream *s)
{
    ism_aead_free(&s->tx);
    ism_aead_free(&s->rx);
    ism_aead_clones_free(s->txw, s->nslots - 1);
    ism_aead_clones_free(s->rxw, s->nslots - 1);
    if (s->pt) /* opened plaintext, the last thing that may hold it */
        OPENSSL_cleanse(s->pt, ISM_SSTREAM_MAX);
    free(s->txb);
    free(s->rxb);
    free(s->pt);
    free(s->jobs);
    memset(s, 0, sizeof *s);
}

uint64_t ism_sstream_rekeys(const ism_sstream *s)
{
    return ism_aead_clones_rekeys(&s->tx, s->txw, s->nslots - 1) +
           ism_aead_clones_rekeys(&s->rx, s->rxw, s->nslots - 1);
}

/* Slot k's cipher state for a direction. */
static ism_aead *slot_aead(ism_aead *a0, ism_aead *w, int slot) { return slot ? &w[slot - 1] : a0; }

static int seal_job(void *ctx, int i, int slot)
{
    ism_sstream *s = ctx;
    ism_sstream_job *j = &s->jobs[i];
    uint8_t *r = j->rec;
    j->failed = ism_aead_seal(slot_aead(&s->tx, s->txw, slot), j->seq, r, 4, j->part, j->np,
                              r + 4, r + 4 + j->len) != 0;
    return -j->failed;
}

static int open_job(void *ctx, int i, int slot)
{
    ism_sstream *s = ctx;
    ism_sstream_job *j = &s->jobs[i];
    const uint8_t *r = j->rec;
    j->failed = ism_aead_open(slot_aead(&s->rx, s->rxw, slot), j->seq, r, 4, r + 4, j->len,
                              r + 4 + j->len, j->out) != 0;
    return -j->failed;
}

/* The batch of jobs [0, n) holding bytes of plaintext, on the pool when it is worth it. */
static int run_batch(ism_sstream *s, int n, size_t bytes, ism_sealpool_fn fn)
{
    ism_sealpool *p = bytes >= ISM_SSTREAM_PAR_MIN ? s->pool : NULL;
    if (p && n > 1)
        s->par_batches++;
    return ism_sealpool_run(p, n, fn, s);
}

size_t ism_sstream_pending(const ism_sstream *s) { return s->tx_len - s->tx_off; }

int ism_sstream_seal_end(ism_sstream *s)
{
    if (s->end_sent)
        return 0;
    if (s->tx_off == s->tx_len)
        s->tx_off = s->tx_len = 0;
    if (s->txb_cap - s->tx_len < ISM_SSTREAM_OVERHEAD)
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
    /* plan the records in order (numbers and places), then seal them all */
    size_t taken = 0, end = s->tx_len;
    int i = 0, nj = 0;
    size_t skip = 0; /* bytes of iov[i] already taken */
    while (i < n && nj < ISM_SSTREAM_JOBS && s->txb_cap - end > ISM_SSTREAM_OVERHEAD) {
        /* one record: up to ISM_SSTREAM_MAX bytes gathered from the iovecs */
        size_t room = s->txb_cap - end - ISM_SSTREAM_OVERHEAD;
        if (room > ISM_SSTREAM_MAX)
            room = ISM_SSTREAM_MAX;
        ism_sstream_job *j = &s->jobs[nj];
        j->np = 0;
        size_t len = 0;
        while (i < n && len < room && j->np < 16) {
            size_t avail = iov[i].iov_len - skip, k = avail < room - len ? avail : room - len;
            if (k) {
                j->part[j->np].iov_base = (char *)iov[i].iov_base + skip;
                j->part[j->np++].iov_len = k;
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
        j->len = (uint32_t)len;
        j->seq = s->tx_seq++;
        j->rec = s->txb + end;
        ism_put_le32(j->rec, j->len);
        end += 4 + len + ISM_AEAD_TAG_LEN;
        taken += len;
        nj++;
    }
    /* a failure is OpenSSL's: the stream is dead and its numbers are never used again */
    if (run_batch(s, nj, taken, seal_job) != 0)
        return -1;
    s->sealed += (uint64_t)nj;
    s->tx_len = end;
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

/* The whole records at the front of rxb that fit in n bytes, opened together into out
 * when they are worth a batch: the bytes delivered; 0 (too few: open them one by one);
 * or -(bytes delivered before the record that failed) - 1. */
static ssize_t open_batch(ism_sstream *s, uint8_t *out, size_t n)
{
    size_t off = s->rx_off, bytes = 0;
    int nj = 0;
    while (nj < ISM_SSTREAM_JOBS && s->rx_len - off >= 4) {
        uint32_t len = ism_get_le32(s->rxb + off);
        if (len == 0 || len > ISM_SSTREAM_MAX || s->rx_len - off < 4 + len + ISM_AEAD_TAG_LEN ||
            n - bytes < len)
            break; /* the end mark, a malformed or partial record: the one-by-one path */
        ism_sstream_job *j = &s->jobs[nj++];
        j->len = len;
        j->seq = s->rx_seq + (uint64_t)(nj - 1);
        j->rec = s->rxb + off;
        j->out = out + bytes;
        off += 4 + len + ISM_AEAD_TAG_LEN;
        bytes += len;
    }
    if (nj < 2 || bytes < ISM_SSTREAM_PAR_MIN)
        return 0;
    run_batch(s, nj, bytes, open_job);
    size_t done = 0;
    for (int i = 0; i < nj; i++) {
        ism_sstream_job *j = &s->jobs[i];
        if (j->failed) { /* nothing after it is delivered: wipe what opened */
            s->rejected++;
            for (int k = i + 1; k < nj; k++)
                OPENSSL_cleanse(s->jobs[k].out, s->jobs[k].len);
            return -(ssize_t)done - 1;
        }
        s->rx_seq++;
        s->opened++;
        s->rx_off += 4 + j->len + ISM_AEAD_TAG_LEN;
        done += j->len;
    }
    if (s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    return (ssize_t)done;
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
        if (len > 0 && s->pool && n - got >= (size_t)len) {
            ssize_t k = open_batch(s, out + got, n - got);
            if (k < 0)
                return failure(s, got + (size_t)(-k - 1), EBADMSG);
            if (k > 0) {
                got += (size_t)k;
                continue;
            }
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
        if (s->rxb_cap - s->rx_len < REC_MAX) { /* room for at least a whole record */
            memmove(s->rxb, s->rxb + s->rx_off, s->rx_len - s->rx_off);
            s->rx_len -= s->rx_off;
            s->rx_off = 0;
        }
        ssize_t r = recv(fd, s->rxb + s->rx_len, s->rxb_cap - s->rx_len, MSG_DONTWAIT);
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
