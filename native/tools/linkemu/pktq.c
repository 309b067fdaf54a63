/* pktq.c: buffer pool and release-time min-heap (see pktq.h). */
#include "pktq.h"

#include <stdlib.h>

int ism_le_pktq_init(ism_le_pktq *q, uint32_t nslots, uint32_t bufsize)
{
    *q = (ism_le_pktq){.nslots = nslots, .bufsize = bufsize};
    q->bufs = malloc((size_t)nslots * bufsize);
    q->meta = calloc(nslots, sizeof *q->meta);
    q->free_slots = malloc((size_t)nslots * sizeof *q->free_slots);
    q->heap = malloc((size_t)nslots * sizeof *q->heap);
    if (!q->bufs || !q->meta || !q->free_slots || !q->heap) {
        ism_le_pktq_free(q);
        return -1;
    }
    for (uint32_t i = 0; i < nslots; i++)
        q->free_slots[i] = nslots - 1 - i;
    q->nfree = nslots;
    return 0;
}

void ism_le_pktq_free(ism_le_pktq *q)
{
    free(q->bufs);
    free(q->meta);
    free(q->free_slots);
    free(q->heap);
    *q = (ism_le_pktq){0};
}

int64_t ism_le_pktq_alloc(ism_le_pktq *q)
{
    if (q->nfree == 0)
        return -1;
    return q->free_slots[--q->nfree];
}

void ism_le_pktq_release(ism_le_pktq *q, uint32_t slot)
{
    q->free_slots[q->nfree++] = slot;
}

static int before(const ism_le_pktq_entry *a, const ism_le_pktq_entry *b)
{
    return a->release_ns < b->release_ns || (a->release_ns == b->release_ns && a->seq < b->seq);
}

void ism_le_pktq_push(ism_le_pktq *q, uint32_t slot, uint64_t release_ns)
{
    ism_le_pktq_entry e = {.release_ns = release_ns, .seq = q->next_seq++, .slot = slot};
    uint32_t i = q->nheap++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(&e, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
}

const ism_le_pktq_entry *ism_le_pktq_peek(const ism_le_pktq *q)
{
    return q->nheap ? &q->heap[0] : NULL;
}

uint32_t ism_le_pktq_pop(ism_le_pktq *q)
{
    uint32_t slot = q->heap[0].slot;
    ism_le_pktq_entry last = q->heap[--q->nheap];
    uint32_t i = 0, n = q->nheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!before(&q->heap[c], &last))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (n)
        q->heap[i] = last;
    return slot;
}
