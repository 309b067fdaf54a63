/* buffer.c: the chunks of a trace buffer, its writer thread and the count of what was
 * dropped (see buffer.h). */
#include "buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(ism_tr_call) % 8 == 0 && sizeof(ism_tr_p2p) % 8 == 0 &&
                   sizeof(ism_tr_coll) % 8 == 0 && sizeof(ism_tr_done) % 8 == 0 &&
                   sizeof(ism_tr_req) % 8 == 0 && sizeof(ism_tr_comm) % 8 == 0 &&
                   sizeof(ism_tr_sync) % 8 == 0 && sizeof(ism_tr_loss) % 8 == 0 &&
                   sizeof(ism_tr_end) % 8 == 0 && sizeof(ism_tr_gw_frame) % 8 == 0 &&
                   sizeof(ism_tr_gw_sample) % 8 == 0 && sizeof(ism_tr_gw_app) % 8 == 0 &&
                   sizeof(ism_tr_gw_link) % 8 == 0 && sizeof(ism_tr_gw_ack) % 8 == 0 &&
                   sizeof(ism_tr_event) % 8 == 0 && sizeof(ism_tr_mark) % 8 == 0,
               "trace records are multiples of 8 bytes");

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Direct while the writer keeps up; through the page cache when chunks queue behind
 * this one (it takes a burst faster than the disk) or for a chunk of partial blocks (the
 * last), or for good once the file system refuses a direct write (EINVAL). Every chunk
 * before the last is whole blocks, so switching keeps the offsets aligned. */
static void set_direct(ism_tr_buf *b, int on)
{
    int fl = fcntl(b->fd, F_GETFL);
    if (fl >= 0 && !fcntl(b->fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT))
        b->direct = on;
}

static int write_chunk(ism_tr_buf *b, const ism_tr_chunk *c, int backlog)
{
    int want = b->direct_ok && !backlog && c->used % ISM_TR_BLOCK == 0;
    if (want != b->direct)
        set_direct(b, want);
    int e = write_all(b->fd, c->mem, c->used);
    if (e == EINVAL && b->direct) {
        set_direct(b, 0);
        b->direct_ok = 0; /* for good; the chunks' padding stays harmless */
        e = write_all(b->fd, c->mem, c->used);
    }
    return e;
}

static void *writer_main(void *arg)
{
    ism_tr_buf *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->full_head && !b->closing)
            pthread_cond_wait(&b->cv, &b->mu);
        ism_tr_chunk *c = b->full_head;
        if (!c)
            break; /* closing and nothing left */
        b->full_head = c->next;
        if (!b->full_head)
            b->full_tail = NULL;
        int backlog = b->full_head != NULL;
        pthread_mutex_unlock(&b->mu);
        int e = b->write_errno ? b->write_errno : write_chunk(b, c, backlog);
        pthread_mutex_lock(&b->mu);
        if (e && !b->write_errno)
            b->write_errno = e;
        c->used = 0;
        c->next = b->free_list;
        b->free_list = c;
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int ism_tr_buf_open(ism_tr_buf *b, const char *path, uint32_t proc_kind, int32_t id,
                    size_t total, size_t chunk, uint64_t (*now)(void), char *err,
                    size_t errlen)
{
    memset(b, 0, sizeof *b);
    b->fd = -1;
    b->now = now;
    chunk = (chunk + ISM_TR_BLOCK - 1) & ~(size_t)(ISM_TR_BLOCK - 1);
    if (chunk < ISM_TR_BLOCK)
        chunk = ISM_TR_BLOCK;
    b->nchunks = (int)(total / chunk);
    if (b->nchunks < 2)
        b->nchunks = 2;
    b->chunk_size = chunk;
    b->chunks = calloc((size_t)b->nchunks, sizeof *b->chunks);
    if (!b->chunks)
        goto nomem;
    for (int i = 0; i < b->nchunks; i++) {
        if (posix_memalign((void **)&b->chunks[i].mem, ISM_TR_BLOCK, chunk))
            goto nomem;
        b->chunks[i].next = i + 1 < b->nchunks ? &b->chunks[i + 1] : NULL;
    }
    b->free_list = b->chunks[0].next;
    b->filling = &b->chunks[0];
    b->cur = b->filling->mem;
    b->end = b->cur + chunk;
    b->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (b->fd < 0) {
        snprintf(err, errlen, "cannot create the trace file %s: %s", path, strerror(errno));
        goto fail;
    }
    /* direct writes to regular files whose file system takes them (tmpfs refuses) */
    struct stat st;
    b->direct = b->direct_ok = b->pad = !fstat(b->fd, &st) && S_ISREG(st.st_mode) &&
                         !fcntl(b->fd, F_SETFL, fcntl(b->fd, F_GETFL) | O_DIRECT);
    /* the header leads the first chunk: every write then starts on a block */
    ism_tr_file_hdr fh = {ISM_TR_MAGIC, ISM_TR_VERSION, proc_kind, id};
    memcpy(b->cur, &fh, sizeof fh);
    b->cur += sizeof fh;
    int e;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if ((e = pthread_create(&b->writer, NULL, writer_main, b))) {
        snprintf(err, errlen, "cannot start the trace writer thread: %s", strerror(e));
        goto fail;
    }
    b->writer_up = 1;
    return 0;
nomem:
    snprintf(err, errlen, "cannot allocate %zu bytes of trace buffer (ISTHMUS_TRACE_BUFFER)",
             total);
fail:
    if (b->fd >= 0)
        close(b->fd);
    if (b->chunks)
        for (int i = 0; i < b->nchunks; i++)
            free(b->chunks[i].mem);
    free(b->chunks);
    b->chunks = NULL;
    b->cur = b->end = NULL;
    return -1;
}

/* Hand the chunk being filled to the writer (with the lock held); for a direct write,
 * filled up to the next block with a PAD record (it fits: chunks are whole blocks). */
static void hand_over(ism_tr_buf *b, int pad)
{
    ism_tr_chunk *c = b->filling;
    if (!c)
        return;
    c->used = (size_t)(b->cur - c->mem);
    size_t gap = (ISM_TR_BLOCK - c->used % ISM_TR_BLOCK) % ISM_TR_BLOCK;
    if (pad && b->pad && gap) {
        ism_tr_hdr_set(b->cur, (uint32_t)gap, ISM_TR_PAD, 0, 0);
        memset(b->cur + sizeof(ism_tr_hdr), 0, gap - sizeof(ism_tr_hdr));
        c->used += gap;
        b->records++;
        b->bytes += gap;
    }
    b->filling = NULL;
    b->cur = b->end = NULL;
    if (!c->used) {
        c->next = b->free_list;
        b->free_list = c;
        return;
    }
    c->next = NULL;
    if (b->full_tail)
        b->full_tail->next = c;
    else
        b->full_head = c;
    b->full_tail = c;
    pthread_cond_broadcast(&b->cv);
}

void *ism_tr_reserve_slow(ism_tr_buf *b, size_t len)
{
    if (!b->chunks)
        goto drop;
    if (len > b->chunk_size - sizeof(ism_tr_loss)) {
        b->end = b->cur; /* the LOSS record must come before any later record */
        goto drop;
    }
    size_t need = len + (b->pend_lost_records ? sizeof(ism_tr_loss) : 0);
    if ((size_t)(b->end - b->cur) < need) {
        pthread_mutex_lock(&b->mu);
        hand_over(b, 1);
        ism_tr_chunk *c = b->free_list;
        if (c) {
            b->free_list = c->next;
            c->next = NULL;
            c->used = 0;
            b->filling = c;
            b->cur = c->mem;
            b->end = c->mem + b->chunk_size;
        }
        pthread_mutex_unlock(&b->mu);
        if (!c)
            goto drop;
    }
    if (b->pend_lost_records) {
        ism_tr_loss *l = (ism_tr_loss *)(void *)b->cur;
        ism_tr_hdr_set(l, sizeof *l, ISM_TR_LOSS, 0, 0);
        l->t = b->now();
        l->records = b->pend_lost_records;
        l->bytes = b->pend_lost_bytes;
        b->cur += sizeof *l;
        b->records++;
        b->bytes += sizeof *l;
        b->pend_lost_records = b->pend_lost_bytes = 0;
    }
    void *p = b->cur;
    b->cur += len;
    b->records++;
    b->bytes += len;
    return p;
drop:
    b->lost_records++;
    b->lost_bytes += len;
    b->pend_lost_records++;
    b->pend_lost_bytes += len;
    return NULL;
}

int ism_tr_put(ism_tr_buf *b, uint8_t kind, uint8_t flags, uint16_t fn, const void *head,
               size_t head_len, const void *tail, size_t tail_len)
{
    size_t len = (head_len + tail_len + 7) & ~(size_t)7;
    char *p = ism_tr_reserve(b, len);
    if (!p)
        return -1;
    memcpy(p, head, head_len);
    if (tail_len)
        memcpy(p + head_len, tail, tail_len);
    memset(p + head_len + tail_len, 0, len - head_len - tail_len);
    ism_tr_hdr_set(p, (uint32_t)len, kind, flags, fn);
    return 0;
}

/* At the end the recording thread may wait: the last LOSS and the END record must be
 * written even when every chunk is full. */
static void *reserve_waiting(ism_tr_buf *b, size_t len)
{
    void *p = ism_tr_reserve(b, len);
    if (p || !b->writer_up)
        return p;
    /* the failed try was counted as a drop: this record is not lost, it waits */
    b->lost_records--;
    b->lost_bytes -= len;
    b->pend_lost_records--;
    b->pend_lost_bytes -= len;
    pthread_mutex_lock(&b->mu);
    hand_over(b, 1);
    while (!b->free_list && !b->write_errno)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    return ism_tr_reserve(b, len);
}

int ism_tr_buf_close(ism_tr_buf *b)
{
    if (!b->chunks)
        return 0;
    ism_tr_end *e = reserve_waiting(b, sizeof *e);
    if (e) {
        ism_tr_hdr_set(e, sizeof *e, ISM_TR_END, 0, 0);
        e->t = b->now();
        e->records = b->records;
        e->bytes = b->bytes;
        e->lost_records = b->lost_records;
        e->lost_bytes = b->lost_bytes;
    }
    pthread_mutex_lock(&b->mu);
    hand_over(b, 0); /* the last: through the page cache, END last in the file */
    b->closing = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (b->writer_up)
        pthread_join(b->writer, NULL);
    int rc = b->write_errno;
    if (close(b->fd) && !rc)
        rc = errno;
    for (int i = 0; i < b->nchunks; i++)
        free(b->chunks[i].mem);
    free(b->chunks);
    b->chunks = NULL;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    return rc;
}
