/* shm_ring.c: one direction of a shared-memory channel between two members of a site,
 * for the short messages of collective schedules (shm.c maps the channels).
 *
 * A ring of ISM_SHM_NCELL cells with one writer and one reader. Messages are numbered
 * from 0 in the order the schedule posts them, on both ends: the k-th send to a peer is
 * the k-th receive from it there, as the vendor's non-overtaking rule pairs the same
 * messages (both ends build the same schedule). Message k goes to cell k mod NCELL; the
 * writer copies it there and then stores the cell's stamp k + 1 (release); the reader
 * waits for that stamp (acquire), copies the message out and stores tail k + 1. So a
 * message of up to 48 bytes travels in the one cache line that holds its stamp, and
 * nothing else crosses between the cores on the way (the vendors' "fast boxes" do the
 * same); the writer reads tail only when the last value it saw says the ring is full.
 * Nothing blocks: a call that cannot proceed yet returns 0 and is made again from the
 * executor's wait loop.
 */
#include <string.h>

#include "coll.h"

size_t ism_shm_chan_size(void) { return sizeof(ism_shm_chan); }

int ism_shm_chan_room(ism_shm_chan *ch)
{
    if (ch->head - ch->tail_seen < ISM_SHM_NCELL)
        return 1;
    ch->tail_seen = __atomic_load_n(&ch->tail, __ATOMIC_ACQUIRE);
    return ch->head - ch->tail_seen < ISM_SHM_NCELL;
}

int ism_shm_chan_send(ism_shm_chan *ch, uint64_t seq, const void *buf, int64_t len)
{
    if (ch->head != seq) /* an earlier message of ours is still waiting for room */
        return 0;
    if (len < 0 || len > ISM_SHM_CELL)
        return -1; /* the caller sends only what fits a cell */
    if (seq - ch->tail_seen >= ISM_SHM_NCELL) {
        ch->tail_seen = __atomic_load_n(&ch->tail, __ATOMIC_ACQUIRE);
        if (seq - ch->tail_seen >= ISM_SHM_NCELL)
            return 0; /* full: the reader has not yet taken message seq - NCELL */
    }
    ism_shm_cell *cell = &ch->cell[seq % ISM_SHM_NCELL];
    if (len)
        memcpy(cell->data, buf, (size_t)len);
    cell->len = len;
    __atomic_store_n(&cell->stamp, seq + 1, __ATOMIC_RELEASE);
    ch->head = seq + 1;
    return 1;
}

/* A message of another length than want is consumed without a copy: *got tells the
 * caller, whose schedule is then broken (the executor reports ISM_ERR_TRUNCATE). */
int ism_shm_chan_recv(ism_shm_chan *ch, uint64_t seq, void *buf, int64_t want, int64_t *got)
{
    const ism_shm_cell *cell = &ch->cell[seq % ISM_SHM_NCELL];
    if (__atomic_load_n(&cell->stamp, __ATOMIC_ACQUIRE) != seq + 1 ||
        __atomic_load_n(&ch->tail, __ATOMIC_RELAXED) != seq)
        return 0; /* not written yet, or an earlier message not yet taken */
    int64_t len = cell->len;
    *got = len;
    if (len == want && len > 0 && len <= ISM_SHM_CELL)
        memcpy(buf, cell->data, (size_t)len);
    __atomic_store_n(&ch->tail, seq + 1, __ATOMIC_RELEASE); /* consumed either way */
    return 1;
}
