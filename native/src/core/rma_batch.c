/* rma_batch.c: small puts to a rank at another site, gathered into one frame (issue 28).
 *
 * A put of at most ism.rma_batch_max packed bytes (ISTHMUS_RMA_BATCH, at most a sixteenth
 * of a chunk) to a target at another site is not sent at once: its bytes are copied into
 * that target's pending batch, which goes out as one PUTV frame (win.h: {id 0, 0, nseg},
 * the segments, their data), the format the target already checks segment by segment
 * against its window before any byte moves, and applies in order (so a later put over the
 * same bytes wins, as it would frame by frame). A segment that starts where the previous
 * one ends is extended instead, so a run of adjacent puts is one segment.
 *
 * Order is kept because nothing else reaches that target before the batch: ism_rma_send,
 * through which every other frame of the window goes (gets, accumulates, the fetching
 * operations, LOCK, UNLOCK, FLUSH, FENCE), posts the target's batch first; the calls that
 * order or complete operations without a frame to the target (MPI_Win_complete's message,
 * MPI_Win_sync, MPI_Win_free) post all of the window's batches (win.c). A batch is also
 * posted when the next put would not fit one chunk, and when this process's progress
 * engine finds nothing to do (ism_idle): a program that waits in another call, or computes
 * after its last MPI call returned, has had its puts sent, as before, rather than at its
 * next synchronisation, which is all MPI promises. Memory: one buffer per target that
 * received a batched put, grown up to one chunk, kept until the window is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "win.h"

/* One target's pending puts: data from the front of buf, segments (offset, length: two
 * u64 each) from its back, so that both grow in one buffer without knowing how many. */
struct ism_rma_batch {
    char *buf;
    size_t cap, used, nseg;
    uint32_t epoch; /* the sender's fence count when the first put went in */
};

int ism_rma_batched; /* batches pending in all windows */

static size_t room(void) { return ism.chunk - 24; } /* a PUTV frame's segments and data */

/* The segments end at the first 16-byte boundary at or after cap (buf has 16 bytes more
 * than cap), so they are aligned whatever the chunk size. */
static char *seg_end(const ism_rma_batch *b) { return b->buf + ((b->cap + 15) & ~(size_t)15); }

static uint64_t *seg(ism_rma_batch *b, size_t i) { return (uint64_t *)seg_end(b) - 2 * (i + 1); }

static size_t frame_len(const ism_rma_batch *b) { return 24 + 16 * b->nseg + b->used; }

static void fill_batch(void *dst, size_t len, void *arg)
{
    ism_rma_batch *b = arg;
    char *p = dst;
    uint64_t head[3] = {0, 0, b->nseg};
    memcpy(p, head, 24);
    p += 24;
    for (size_t i = 0; i < b->nseg; i++, p += 16)
        memcpy(p, seg(b, i), 16);
    memcpy(p, b->buf, b->used);
    (void)len;
}

/* The batch as one frame; the channel to the gateway has room for it (no wait). */
static int post(ism_win *w, int target, ism_rma_batch *b)
{
    int rc = ism_rma_post(w, target, ISM_RMA_PUTV, 0, ISM_RMA_B(0, 0, b->epoch), frame_len(b),
                          fill_batch, b);
    if (rc)
        return rc;
    b->nseg = 0;
    b->used = 0;
    w->nbatched--;
    ism_rma_batched--;
    return 0;
}

int ism_rma_batch_flush(ism_win *w, int target)
{
    ism_rma_batch *b = w->batch ? &w->batch[target] : NULL;
    unsigned spins = 0;
    /* wait for room first, then post in one step: the frame is never half gone while
     * other code runs (a frame handler, another thread while ism_idle gives up the lock),
     * which may add to this batch or post it itself meanwhile */
    for (;;) {
        if (!b || !b->nseg)
            return 0;
        if (ism_gw_room(frame_len(b)))
            return post(w, target, b);
        if (!ism_progress())
            ism_idle(&spins);
    }
}

int ism_rma_batch_flush_win(ism_win *w)
{
    int rc = 0;
    for (int t = 0; !rc && w->nbatched > 0 && t < w->c->size; t++)
        rc = ism_rma_batch_flush(w, t);
    return rc;
}

/* Room for need more bytes of data and segments; grows the buffer up to room(). */
static int reserve(ism_rma_batch *b, size_t need)
{
    size_t want = b->used + 16 * b->nseg + need;
    if (want <= b->cap)
        return 0;
    size_t cap = b->cap ? 2 * b->cap : 4096;
    while (cap < want)
        cap *= 2;
    if (cap > room())
        cap = room();
    ism_rma_batch g = {malloc(cap + 16), cap, b->used, b->nseg, b->epoch};
    if (!g.buf)
        return ISM_ERR_NO_MEM;
    if (b->buf) {
        memcpy(g.buf, b->buf, b->used);
        memcpy(seg_end(&g) - 16 * b->nseg, seg_end(b) - 16 * b->nseg, 16 * b->nseg);
    }
    free(b->buf);
    *b = g;
    return 0;
}

static void add_segment(ism_rma_batch *b, uint64_t at, uint64_t len)
{
    if (b->nseg) {
        uint64_t *last = seg(b, b->nseg - 1);
        if (last[0] + last[1] == at) { /* its data ends where this one's begins, too */
            last[1] += len;
            return;
        }
    }
    uint64_t *s = seg(b, b->nseg++);
    s[0] = at;
    s[1] = len;
}

int ism_rma_batch_put(ism_win *w, int target, int64_t off, int64_t tn, ism_dt *tdt,
                      const char *data, size_t bytes, int *taken)
{
    *taken = 0;
    int whole = tdt->abi && tdt->contig; /* one run of bytes at off */
    const ism_tmap *m = whole ? NULL : ism_dt_map(tdt);
    if (bytes > ism.rma_batch_max || (!whole && (!m || m->nblk < 1)))
        return 0;
    /* at most this many segments (fewer where blocks follow each other); a put whose
     * segments would fill much of a frame goes on its own */
    int64_t nseg = whole ? 1 : tn * m->nblk;
    if (nseg > (int64_t)(room() / 64) || 16 * (size_t)nseg + bytes > room() / 4)
        return 0;
    size_t need = 16 * (size_t)nseg + bytes;
    if (!w->batch && !(w->batch = calloc((size_t)w->c->size, sizeof *w->batch)))
        return ISM_ERR_NO_MEM;
    ism_rma_batch *b = &w->batch[target];
    if (b->nseg && (b->epoch != w->fences || frame_len(b) + need > ism.chunk)) {
        int rc = ism_rma_batch_flush(w, target);
        if (rc)
            return rc;
    }
    int rc = reserve(b, need);
    if (rc)
        return rc;
    if (!b->nseg) {
        b->epoch = w->fences;
        w->nbatched++;
        ism_rma_batched++;
    }
    memcpy(b->buf + b->used, data, bytes);
    b->used += bytes;
    if (whole) {
        add_segment(b, (uint64_t)off, bytes);
    } else {
        for (int64_t k = 0; k < tn; k++)
            for (int64_t j = 0; j < m->nblk; j++)
                if (m->blk[j].len > 0)
                    add_segment(b, (uint64_t)(off + k * tdt->extent + m->blk[j].off),
                                (uint64_t)m->blk[j].len);
    }
    *taken = 1;
    return 0;
}

/* Never waits: a batch the channel cannot take now waits for the next idle round (the
 * channel is busy with this process's earlier frames meanwhile). */
int ism_rma_batch_idle(void)
{
    int n = 0;
    for (ism_win *w = ism_win_next(NULL); w && ism_rma_batched; w = ism_win_next(w))
        for (int t = 0; w->nbatched > 0 && t < w->c->size; t++) {
            ism_rma_batch *b = &w->batch[t];
            if (!b->nseg || !ism_gw_room(frame_len(b)))
                continue;
            if (post(w, t, b))
                ism_die("site %s rank %d: cannot send the puts gathered for rank %d of a window "
                        "(out of memory)", ism_site_name(ism.lay.site), ism.grank, t);
            n++;
        }
    return n;
}

void ism_rma_batch_free(ism_win *w)
{
    if (!w->batch)
        return;
    for (int t = 0; t < w->c->size; t++) {
        if (w->batch[t].nseg) { /* not sent: an epoch left open, MPI_Win_free reports it */
            w->nbatched--;
            ism_rma_batched--;
        }
        free(w->batch[t].buf);
    }
    free(w->batch);
    w->batch = NULL;
}
