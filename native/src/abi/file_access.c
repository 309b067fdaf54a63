/* file_access.c (abi): the data path of MPI-IO: a view turned into file segments, the
 * program's data packed, and the bytes moved at the file's site, by this rank's own
 * POSIX calls or through the file agent there in frames of at most ISTHMUS_CHUNK bytes,
 * a window of them in flight (file.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../contract/fileio.h"
#include "../common/le.h"
#include "file.h"

static int seg_add(ism_fseg_list *l, int64_t off, int64_t len)
{
    if (len <= 0)
        return 0;
    l->bytes += len;
    if (l->n && l->seg[l->n - 1].off + l->seg[l->n - 1].len == off) {
        l->seg[l->n - 1].len += len; /* adjacent: one segment */
        return 0;
    }
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        ism_io_seg *s = realloc(l->seg, sizeof *s * cap);
        if (!s)
            return -1;
        l->seg = s;
        l->cap = cap;
    }
    l->seg[l->n].off = off;
    l->seg[l->n].len = len;
    l->n++;
    return 0;
}

int ism_abi_file_segments(const ism_file *f, MPI_Offset pos, int64_t nbytes, ism_fseg_list *out)
{
    memset(out, 0, sizeof *out);
    const ism_tmap *m = ism_dt_map(ism_abi_dt_any(f->filetype));
    int64_t tsize = m->size, ext = m->ub - m->lb;
    int64_t p = pos * f->esize; /* bytes into the view's data */
    if (nbytes == 0)
        return MPI_SUCCESS;
    if (tsize <= 0)
        return MPI_ERR_TYPE;
    int64_t tile = p / tsize, rem = p % tsize;
    int64_t b = 0;
    while (b < m->nblk && rem >= m->blk[b].len)
        rem -= m->blk[b++].len;
    while (nbytes > 0) {
        const ism_blk *k = &m->blk[b];
        int64_t n = k->len - rem < nbytes ? k->len - rem : nbytes;
        if (seg_add(out, f->disp + tile * ext + k->off + rem, n))
            return MPI_ERR_NO_MEM;
        nbytes -= n;
        rem = 0;
        if (++b == m->nblk)
            b = 0, tile++;
    }
    return MPI_SUCCESS;
}

int ism_abi_file_buffer(const void *buf, int64_t count, ism_dt *dt, int write, char **data,
                        char **tmp)
{
    *tmp = NULL;
    if (ism_dt_is_contig(dt)) {
        *data = (char *)buf + dt->contig_off;
        return MPI_SUCCESS;
    }
    size_t n = (size_t)count * (size_t)dt->size;
    if (!(*tmp = malloc(n ? n : 1)))
        return MPI_ERR_NO_MEM;
    if (write)
        ism_dt_pack(dt, buf, count, *tmp);
    *data = *tmp;
    return MPI_SUCCESS;
}

void ism_abi_file_status(MPI_Status *st, int64_t bytes)
{
    ism_status s = {MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0, (size_t)bytes};
    ism_abi_status(st, &s);
}

/* --- at the file's site: POSIX, under a byte-range lock in atomic mode --- */

static int64_t span(const ism_io_seg *seg, uint32_t n, int64_t *lo)
{
    int64_t a = seg[0].off, z = seg[0].off + seg[0].len;
    for (uint32_t i = 1; i < n; i++) {
        if (seg[i].off < a)
            a = seg[i].off;
        if (seg[i].off + seg[i].len > z)
            z = seg[i].off + seg[i].len;
    }
    *lo = a;
    return z - a;
}

static int64_t move_here(ism_file *f, const ism_io_seg *seg, uint32_t n, char *data, int write)
{
    int64_t lo = 0, len = f->atomic && n ? span(seg, n, &lo) : 0;
    if (len && ism_io_lock(f->fd, lo, len, write, 1))
        return -EIO;
    int64_t r = write ? ism_io_write(f->fd, seg, n, data) : ism_io_read(f->fd, seg, n, data);
    if (len)
        ism_io_unlock(f->fd, lo, len);
    return r;
}

/* --- elsewhere: through the agent --- */

typedef struct piece {
    int slot;
    int64_t data_off, want;
} piece;

/* The segments seg[*i] (from byte *k of it) on that fit one frame: into fs, *nf of them. */
static int64_t next_frame(const ism_io_seg *seg, uint32_t n, uint32_t *i, int64_t *k,
                          ism_io_seg *fs, uint32_t *nf, size_t room)
{
    int64_t bytes = 0;
    *nf = 0;
    size_t used = 4;
    while (*i < n && used + ISM_FIO_SEG_BYTES < room) {
        /* a write's frame carries the segments and the data; a read's answer the data */
        int64_t left = (int64_t)(room - used - ISM_FIO_SEG_BYTES) - bytes;
        if (left <= 0)
            break;
        int64_t take = seg[*i].len - *k < left ? seg[*i].len - *k : left;
        fs[(*nf)++] = (ism_io_seg){seg[*i].off + *k, take};
        used += ISM_FIO_SEG_BYTES;
        bytes += take;
        *k += take;
        if (*k == seg[*i].len)
            (*i)++, *k = 0;
    }
    return bytes;
}

static int lock_remote(ism_file *f, int64_t lo, int64_t len, int how)
{
    unsigned char p[16];
    ism_put_le64(p, (uint64_t)lo);
    ism_put_le64(p + 8, (uint64_t)len);
    for (;;) {
        int64_t res = 0;
        if (ism_fio_call(f->site, f->handle, ISM_FIO_LOCK, (uint64_t)how, p, 16, NULL, 0, NULL,
                         0, &res))
            return -ETIMEDOUT;
        if (res != -EAGAIN)
            return (int)res;
        unsigned spins = 0; /* held by another: let it finish */
        for (int t = 0; t < 64; t++)
            if (!ism_progress())
                ism_idle(&spins);
    }
}

static int64_t move_remote(ism_file *f, const ism_io_seg *seg, uint32_t n, char *data, int write)
{
    size_t room = ism_fio_max_payload();
    size_t maxseg = room / ISM_FIO_SEG_BYTES + 1;
    ism_io_seg *fs = malloc(sizeof *fs * maxseg);
    unsigned char *hdr = malloc(4 + ISM_FIO_SEG_BYTES * maxseg);
    int window = ism.window < ISM_FIO_SLOTS ? ism.window : ISM_FIO_SLOTS;
    piece *inflight = calloc((size_t)window, sizeof *inflight);
    if (!fs || !hdr || !inflight) {
        free(fs), free(hdr), free(inflight);
        return -ENOMEM;
    }
    int64_t lo = 0, len = f->atomic && n ? span(seg, n, &lo) : 0, res = 0, pos = 0, done = 0;
    int short_read = 0;
    if (len && (res = lock_remote(f, lo, len, write ? 1 : 2)) < 0)
        len = 0;
    uint32_t i = 0;
    int64_t k = 0;
    int head = 0, count = 0;
    while (res >= 0 && (i < n || count > 0)) {
        if (i < n && count < window) {
            uint32_t nf;
            int64_t bytes = next_frame(seg, n, &i, &k, fs, &nf, room);
            size_t hl = ism_io_segs_encode(fs, nf, hdr);
            piece *p = &inflight[(head + count) % window];
            p->data_off = pos;
            p->want = bytes;
            int rc = write ? ism_fio_post(f->site, f->handle, ISM_FIO_WRITE, 0, hdr, hl,
                                          data + pos, (size_t)bytes, NULL, 0, &p->slot)
                           : ism_fio_post(f->site, f->handle, ISM_FIO_READ, 0, hdr, hl, NULL, 0,
                                          data + pos, (size_t)bytes, &p->slot);
            if (rc) {
                res = -EIO;
                break;
            }
            pos += bytes;
            count++;
            continue;
        }
        piece *p = &inflight[head];
        int64_t r = 0;
        if (ism_fio_wait(p->slot, &r, NULL)) {
            res = -ETIMEDOUT;
            count = 0; /* the other answers are dropped when they come */
            break;
        }
        head = (head + 1) % window;
        count--;
        if (r < 0)
            res = r;
        else if (!short_read)
            done += r;
        if (r >= 0 && r < p->want) {
            short_read = 1;
            if (!write)
                memset(data + p->data_off + r, 0, (size_t)(p->want - r));
        }
    }
    while (count > 0) { /* after an error: collect what is outstanding */
        int64_t r;
        if (ism_fio_wait(inflight[head].slot, &r, NULL))
            break;
        head = (head + 1) % window;
        count--;
    }
    if (len)
        lock_remote(f, lo, len, 0);
    free(fs), free(hdr), free(inflight);
    return res < 0 ? res : done;
}

int ism_abi_file_move(ism_file *f, const ism_io_seg *seg, uint32_t n, char *data, int write,
                      int64_t *done)
{
    *done = 0;
    if (n == 0)
        return MPI_SUCCESS;
    int64_t r = f->here ? move_here(f, seg, n, data, write) : move_remote(f, seg, n, data, write);
    if (r < 0)
        return r == -ETIMEDOUT ? MPI_ERR_IO : ism_abi_file_errno_class(r);
    *done = r;
    return MPI_SUCCESS;
}
