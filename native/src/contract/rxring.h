/* rxring.h: the receiving end of the app–gateway channel, one for both sides. A ring of
 * vendor receives pre-posted on one tag from any source and taken strictly in posting
 * order: the vendor matches receives of one tag in the order they were posted, so the
 * frames of one sender come out in the order it sent them (MPI's non-overtaking order),
 * however many receives are outstanding. An app rank posts the same buffer again once it
 * has handled its frame (core/gwlink.c); the gateway hands each buffer on and posts a
 * fresh one from its pool (gateway/loop.c). */
#ifndef ISM_CONTRACT_RXRING_H
#define ISM_CONTRACT_RXRING_H

#include <stddef.h>

#include "../backend/backend.h"

typedef struct ism_rxring_slot {
    void *token; /* what the poster gets back with the frame (its buffer, or what owns it) */
    ism_vh vreq;
} ism_rxring_slot;

typedef struct ism_rxring {
    const ism_backend *be;
    ism_vh comm;
    int tag, cap, head, count;
    ism_rxring_slot *slot; /* NULL until ism_rxring_init (and after ism_rxring_cancel_all) */
} ism_rxring;

/* An empty ring of up to cap receives on tag over comm. 0, or -1 out of memory. */
int ism_rxring_init(ism_rxring *r, const ism_backend *be, ism_vh comm, int tag, int cap);

static inline int ism_rxring_full(const ism_rxring *r) { return r->count == r->cap; }

/* Post a receive of up to len bytes into mem at the ring's tail (the ring must not be
 * full); token comes back from ism_rxring_take with the frame. The vendor's return code. */
int ism_rxring_post(ism_rxring *r, void *token, void *mem, size_t len);

/* The oldest receive if it has completed: its token, out of the ring, and its status;
 * NULL while it has not (or the ring is empty). */
void *ism_rxring_take(ism_rxring *r, ism_vstatus *st);

/* Cancel every receive still posted and hand each token to release (if not NULL); the
 * ring's memory is freed and it is empty until initialized again. */
void ism_rxring_cancel_all(ism_rxring *r, void (*release)(void *token));

#endif
