/* pktq.h: the emulator's packet store: a pool of fixed-size buffers allocated once, and a
 * min-heap of the packets in flight keyed by release time (ties in arrival order).
 *
 * Memory is bounded by the pool: when it is empty a new packet is dropped (and counted),
 * never queued elsewhere. No allocation happens per packet. */
#ifndef ISM_LE_PKTQ_H
#define ISM_LE_PKTQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t release_ns;
    uint64_t seq;      /* arrival order, for stable ties */
    uint32_t slot;
} ism_le_pktq_entry;

typedef struct {
    uint32_t len;      /* bytes of packet data in the slot */
    uint16_t dst;      /* destination site */
    uint16_t link;     /* link index, for statistics */
} ism_le_pkt_meta;

typedef struct {
    uint32_t nslots, bufsize;
    unsigned char *bufs;      /* nslots * bufsize bytes */
    ism_le_pkt_meta *meta;    /* per slot */
    uint32_t *free_slots;     /* stack of free slot numbers */
    uint32_t nfree;
    ism_le_pktq_entry *heap;  /* nslots entries at most */
    uint32_t nheap;
    uint64_t next_seq;
} ism_le_pktq;

/* Allocate a store of nslots buffers of bufsize bytes. Returns 0, or -1 if out of memory. */
int ism_le_pktq_init(ism_le_pktq *q, uint32_t nslots, uint32_t bufsize);
void ism_le_pktq_free(ism_le_pktq *q);

/* Take a free slot; returns -1 if the pool is empty. */
int64_t ism_le_pktq_alloc(ism_le_pktq *q);
void ism_le_pktq_release(ism_le_pktq *q, uint32_t slot);

static inline unsigned char *ism_le_pktq_buf(ism_le_pktq *q, uint32_t slot)
{
    return q->bufs + (size_t)slot * q->bufsize;
}

/* Schedule a slot for release at release_ns. Cannot fail: the heap has a place for
 * every slot. */
void ism_le_pktq_push(ism_le_pktq *q, uint32_t slot, uint64_t release_ns);

/* The earliest entry (NULL if none). */
const ism_le_pktq_entry *ism_le_pktq_peek(const ism_le_pktq *q);

/* Remove the earliest entry and return its slot. The heap must not be empty. */
uint32_t ism_le_pktq_pop(ism_le_pktq *q);

#endif
