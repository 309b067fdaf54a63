/* cache.c (patterns): read-mostly data owned by one rank, fetched once per node of every
 * site and shared there (the RNAfold case of seed 000, section 5: remote queries went
 * from 130.9 s to 13.7 s with a cache and prefetching).
 *
 * The owner exposes its blocks in an MPI window; every node holds one copy slot per
 * block in a shared-memory window (MPI_Win_allocate_shared on the ranks of one node of
 * one site) with a state word per block: empty, being fetched, present. A rank that
 * needs an empty block claims it (compare-and-swap on the state in shared memory), also
 * claims up to `prefetch` empty blocks after it, and brings the whole run in with one
 * MPI_Get: one round trip for the run, however many ranks of the node want it. A rank
 * that finds a block being fetched waits, making MPI calls meanwhile so that, whoever
 * the owner is, its passive-target accesses progress. A site of one node (what isthmus
 * emulates here) fetches each block once.
 *
 * There is no eviction: each node has room for every block, which is what read-mostly
 * data that one rank can hold allows. A change at the owner is published with the
 * collective ism_pat_cache_invalidate.
 */
#include "patterns.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { EMPTY = 0, FETCHING = 1, PRESENT = 2 };

struct ism_pat_cache {
    MPI_Comm comm;        /* a duplicate of the caller's */
    MPI_Comm node;        /* the ranks of this node at this site */
    MPI_Win data;         /* the owner's blocks */
    MPI_Win shared;       /* this node's copies and their states */
    MPI_Datatype block_t; /* block_bytes bytes */
    int rank, owner, node_rank;
    size_t block_bytes;
    long nblocks;
    int prefetch;
    char *copies;         /* [nblocks * block_bytes], in shared memory */
    atomic_int *state;    /* [nblocks], in shared memory */
    ism_pat_cache_stats st;
};

/* Brings blocks [first, first + n) from the owner into this node's copies. */
static int fetch_run(ism_pat_cache *c, long first, long n)
{
    MPI_Aint disp = (MPI_Aint)first * (MPI_Aint)c->block_bytes;
    int rc = MPI_Win_lock(MPI_LOCK_SHARED, c->owner, 0, c->data);
    if (rc == MPI_SUCCESS)
        rc = MPI_Get(c->copies + (size_t)first * c->block_bytes, (int)n, c->block_t, c->owner,
                     disp, (int)n, c->block_t, c->data);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_unlock(c->owner, c->data);
    if (rc != MPI_SUCCESS) {
        /* given back, so that the node's other ranks try again instead of waiting */
        for (long b = first; b < first + n; b++)
            atomic_store_explicit(&c->state[b], EMPTY, memory_order_release);
        return pat_fail(rc, "rank %d: fetching blocks %ld..%ld (%zu bytes each) from owner "
                        "rank %d failed", c->rank, first, first + n - 1, c->block_bytes,
                        c->owner);
    }
    MPI_Win_sync(c->shared);
    for (long b = first; b < first + n; b++)
        atomic_store_explicit(&c->state[b], PRESENT, memory_order_release);
    c->st.fetches++;
    c->st.blocks_fetched += n;
    return MPI_SUCCESS;
}

/* Claims block b (known empty a moment ago) and what follows it, up to prefetch more. */
static int claim_and_fetch(ism_pat_cache *c, long b)
{
    int want = EMPTY;
    if (!atomic_compare_exchange_strong(&c->state[b], &want, FETCHING))
        return MPI_SUCCESS; /* another rank of the node took it */
    long n = 1;
    while (n <= c->prefetch && b + n < c->nblocks && n < INT_MAX) {
        want = EMPTY;
        if (!atomic_compare_exchange_strong(&c->state[b + n], &want, FETCHING))
            break;
        n++;
    }
    return fetch_run(c, b, n);
}

/* Until block b is present: fetch it if nobody is (again, if a fetch failed and gave it
 * back), else wait for the rank that is. */
static int bring(ism_pat_cache *c, long b)
{
    c->st.waits++;
    for (;;) {
        int s = atomic_load_explicit(&c->state[b], memory_order_acquire), rc, flag;
        if (s == PRESENT)
            break;
        if (s == EMPTY)
            rc = claim_and_fetch(c, b);
        else /* any MPI call lets this process serve passive-target accesses meanwhile */
            rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return pat_fail(rc, "rank %d: waiting for block %ld failed", c->rank, b);
    }
    MPI_Win_sync(c->shared);
    return MPI_SUCCESS;
}

int ism_pat_cache_get(ism_pat_cache *c, long block, const void **ptr)
{
    *ptr = NULL;
    if (block < 0 || block >= c->nblocks)
        return pat_fail(MPI_ERR_ARG, "rank %d: ism_pat_cache_get of block %ld; the cache has "
                        "blocks 0..%ld", c->rank, block, c->nblocks - 1);
    c->st.reads++;
    int rc = MPI_SUCCESS;
    if (atomic_load_explicit(&c->state[block], memory_order_acquire) == PRESENT)
        c->st.hits++;
    else
        rc = bring(c, block);
    if (rc == MPI_SUCCESS)
        *ptr = c->copies + (size_t)block * c->block_bytes;
    return rc;
}

int ism_pat_cache_invalidate(ism_pat_cache *c)
{
    int rc = MPI_Barrier(c->comm); /* the owner's change is done, no fetch is running */
    if (rc == MPI_SUCCESS && c->node_rank == 0)
        for (long b = 0; b < c->nblocks; b++)
            atomic_store_explicit(&c->state[b], EMPTY, memory_order_relaxed);
    MPI_Win_sync(c->shared);
    if (rc == MPI_SUCCESS)
        rc = MPI_Barrier(c->node);
    if (rc != MPI_SUCCESS)
        return pat_fail(rc, "rank %d: ism_pat_cache_invalidate failed", c->rank);
    return MPI_SUCCESS;
}

static void cache_release(ism_pat_cache *c)
{
    if (c->shared != MPI_WIN_NULL) {
        MPI_Win_unlock_all(c->shared);
        MPI_Win_free(&c->shared);
    }
    if (c->data != MPI_WIN_NULL)
        MPI_Win_free(&c->data);
    if (c->block_t != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->block_t);
    if (c->node != MPI_COMM_NULL)
        MPI_Comm_free(&c->node);
    if (c->comm != MPI_COMM_NULL)
        MPI_Comm_free(&c->comm);
    free(c);
}

/* This node's shared copies: the node's first rank allocates them all. */
static int make_shared(ism_pat_cache *c)
{
    size_t states = sizeof(atomic_int) * (size_t)c->nblocks;
    size_t bytes = states + (size_t)c->nblocks * c->block_bytes;
    MPI_Aint mine = c->node_rank == 0 ? (MPI_Aint)bytes : 0, size;
    void *base;
    int disp;
    int rc = MPI_Win_allocate_shared(mine, 1, MPI_INFO_NULL, c->node, &base, &c->shared);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_shared_query(c->shared, 0, &size, &disp, &base);
    if (rc != MPI_SUCCESS)
        return pat_fail(rc, "rank %d: a shared window of %zu bytes for %ld blocks on this "
                        "node failed", c->rank, bytes, c->nblocks);
    c->state = base;
    c->copies = (char *)base + states;
    if (c->node_rank == 0)
        for (long b = 0; b < c->nblocks; b++)
            atomic_init(&c->state[b], EMPTY);
    rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, c->shared);
    MPI_Win_sync(c->shared);
    if (rc == MPI_SUCCESS)
        rc = MPI_Barrier(c->node);
    return rc;
}

int ism_pat_cache_create(MPI_Comm comm, int owner, const void *data, size_t block_bytes,
                         long nblocks, int prefetch, ism_pat_cache **out)
{
    *out = NULL;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (owner < 0 || owner >= size || block_bytes < 1 || block_bytes > INT_MAX ||
        nblocks < 1 || prefetch < 0 || (rank == owner && !data))
        return pat_fail(MPI_ERR_ARG, "rank %d: ism_pat_cache_create(owner %d, block %zu "
                        "bytes, %ld blocks, prefetch %d, data %s): the owner must be a rank "
                        "of 0..%d holding the data, a block 1..%d bytes, blocks >= 1, "
                        "prefetch >= 0", rank, owner, block_bytes, nblocks, prefetch,
                        data ? "given" : "NULL", size - 1, INT_MAX);
    ism_pat_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return pat_fail(MPI_ERR_NO_MEM, "no memory for a cache");
    *c = (ism_pat_cache){.comm = MPI_COMM_NULL, .node = MPI_COMM_NULL, .data = MPI_WIN_NULL,
                         .shared = MPI_WIN_NULL, .block_t = MPI_DATATYPE_NULL, .rank = rank,
                         .owner = owner, .block_bytes = block_bytes, .nblocks = nblocks,
                         .prefetch = prefetch};
    ism_pat_sites *s = NULL;
    int rc = MPI_Comm_dup(comm, &c->comm);
    if (rc == MPI_SUCCESS)
        rc = ism_pat_sites_create(comm, &s);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_split_type(s->site, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c->node);
    ism_pat_sites_free(&s);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(c->node, &c->node_rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_contiguous((int)block_bytes, MPI_BYTE, &c->block_t);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&c->block_t);
    MPI_Aint exposed = rank == owner ? (MPI_Aint)(block_bytes * (size_t)nblocks) : 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_create(rank == owner ? (void *)data : NULL, exposed, 1, MPI_INFO_NULL,
                            c->comm, &c->data);
    if (rc == MPI_SUCCESS)
        rc = make_shared(c);
    if (rc != MPI_SUCCESS) {
        pat_fail(rc, "rank %d: creating a cache of %ld blocks of %zu bytes owned by rank %d "
                 "failed", rank, nblocks, block_bytes, owner);
        cache_release(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

int ism_pat_cache_free(ism_pat_cache **cp)
{
    ism_pat_cache *c = *cp;
    if (!c)
        return MPI_SUCCESS;
    /* no rank may free the owner's window while another still fetches from it */
    int rc = MPI_Barrier(c->comm);
    cache_release(c);
    *cp = NULL;
    return rc;
}

void ism_pat_cache_get_stats(const ism_pat_cache *c, ism_pat_cache_stats *st)
{
    *st = c->st;
}
