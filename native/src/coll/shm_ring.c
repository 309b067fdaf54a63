/* shm_ring.c: one direction of a shared-memory channel between two members of a site,
 * for the short messages of collective schedules (shm.c maps the channels).
 *
 * A ring of ISM_SHM_NCELL cells with one writer and one reader. Messages are numbered
 * from 0 in the order the schedule posts them, on both ends: the k-th send to a peer is
 * the k-th receive from it there, as the vendor's non-overtaking rule pairs the same
 * messages (both ends build the same schedule). head counts the messages written, tail
 * those read; each is stored by one side only (release) and read by the other
 * (acquire), so a cell's bytes are complete before the reader sees its number, and free
 * again before the writer reuses it. Nothing blocks: a call that cannot proceed yet
 * returns 0 and is made again from the executor's wait loop.
 */
#include <string.h>

#include "coll.h"

size_t ism_shm_chan_size(void) { return sizeof(ism_shm_chan); }

int ism_shm_chan_send(ism_shm_chan *ch, uint64_t seq, const void *buf, int64_t len)
{
    uint64_t head = __atomic_load_n(&ch->head, __ATOMIC_RELAXED);
    if (head != seq) /* an earlier message of ours is still waiting for room */
        return 0;
    if (len < 0 || len > ISM_SHM_CELL)
        return -1; /* the caller sends only what fits (ism_coll_shm_fits) */
    if (head - __atomic_load_n(&ch->tail, __ATOMIC_ACQUIRE) >= ISM_SHM_NCELL)
        return 0; /* full: the reader has not yet taken the oldest */
    ism_shm_cell *cell = &ch->cell[head % ISM_SHM_NCELL];
    if (len)
        memcpy(cell->data, buf, (size_t)len);
    cell->len = len;
    __atomic_store_n(&ch->head, head + 1, __ATOMIC_RELEASE);
    return 1;
}

/* A message of another length than want is consumed without a copy: *got tells the
 * caller, whose schedule is then broken (the executor reports ISM_ERR_TRUNCATE). */
int ism_shm_chan_recv(ism_shm_chan *ch, uint64_t seq, void *buf, int64_t want, int64_t *got)
{
    uint64_t tail = __atomic_load_n(&ch->tail, __ATOMIC_RELAXED);
    if (tail != seq || __atomic_load_n(&ch->head, __ATOMIC_ACQUIRE) <= seq)
        return 0;
    const ism_shm_cell *cell = &ch->cell[tail % ISM_SHM_NCELL];
    int64_t len = cell->len;
    *got = len;
    if (len == want && len > 0 && len <= ISM_SHM_CELL)
        memcpy(buf, cell->data, (size_t)len);
    __atomic_store_n(&ch->tail, tail + 1, __ATOMIC_RELEASE); /* consumed either way */
    return 1;
}
