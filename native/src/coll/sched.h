/* sched.h: a collective as a schedule, the form every algorithm of the coll layer is
 * written in (LibNBC's idea; the same algorithms as python/isthmus/model/schedule.py).
 *
 * A schedule is one rank's part of a collective: rounds of actions on byte ranges of
 * buffer slots. Slot IN is the caller's input and OUT its result, both as packed bytes
 * (esize bytes per element); the other slots are temporaries the executor provides.
 * Within a round the actions run in order: SEND and RECV are posted (they complete
 * later), RED and COPY run at once; the round ends when everything it posted has
 * completed. A local action on data that a RECV of the same round delivers therefore
 * belongs to the next round, and that is how a builder overlaps the reduction of one
 * segment with the transfer of the next (receive k+1 posted, then reduce k).
 *
 * Peers are member indices 0..p-1 of the group the schedule runs over (a site's
 * members, the sites' leaders, or a whole communicator), in rank order, so a builder
 * that combines contributions in member order is right for non-commutative ops.
 * This header and the builders depend on nothing else, so tests/test_coll_sched.c
 * runs every algorithm for every rank in one process without MPI.
 */
#ifndef ISM_COLL_SCHED_H
#define ISM_COLL_SCHED_H

#include <stdint.h>

enum { ISM_CA_SEND = 1, ISM_CA_RECV, ISM_CA_RED, ISM_CA_COPY };

/* Buffer slots: IN and OUT are the caller's; slots from ISM_SL_TMP are temporaries. */
enum { ISM_SL_IN = 0, ISM_SL_OUT = 1, ISM_SL_TMP = 2 };
#define ISM_SL_MAX 12

typedef struct ism_coll_act {
    uint8_t kind;
    uint8_t a, b;  /* SEND/RECV: the buffer a; RED: inout(b) = in(a) op inout(b);
                      COPY: from a to b */
    int32_t peer;  /* SEND/RECV: member index */
    int64_t aoff, boff, len; /* bytes */
} ism_coll_act;

typedef struct ism_coll_sched {
    int p, me;
    ism_coll_act *act;
    int nact, capact;
    int *rend; /* round i is act[rend[i-1] .. rend[i]) */
    int nround, capround;
    int nslot;
    int64_t slot[ISM_SL_MAX]; /* bytes of each slot (IN and OUT included) */
    int64_t out_off, out_len; /* the part of OUT that is the caller's result here */
    int in_place_ok;          /* IN may be OUT itself (in-place): the builder reads IN only
                                 where OUT still holds the same bytes */
    int maxpost;              /* most SEND+RECV in one round */
    int64_t maxred;           /* largest RED */
    int nomem;                /* a builder ran out of memory: the schedule is unusable */
    ism_coll_act pend[8];     /* local actions deferred to the next round (ism_coll_flush) */
    int npend;
} ism_coll_sched;

/* What a builder needs to know. Sizes in bytes; esize divides every size. */
typedef struct ism_coll_args {
    int p, me, root;
    int64_t esize;      /* bytes of one element: segments and blocks end on elements */
    int64_t bytes;      /* the vector (bcast, reductions, scan), or one member's block
                           (allgather, alltoall) when blk is NULL */
    const int64_t *blk; /* per-member block sizes (reduce_scatter, allgather with unequal
                           blocks), or NULL */
    int radix;          /* k-nomial trees (>= 2) */
    int64_t seg;        /* segment size of pipelined algorithms, 0: the builder's default */
    int commute;        /* the op is commutative: trees may be rooted anywhere */
    int exclusive;      /* exscan */
} ism_coll_args;

typedef int (*ism_coll_build_fn)(ism_coll_sched *s, const ism_coll_args *a);

/* schedule building (sched.c) */
void ism_coll_sched_init(ism_coll_sched *s, int p, int me);
void ism_coll_sched_free(ism_coll_sched *s);
int ism_coll_tmp(ism_coll_sched *s, int64_t len); /* a new temporary slot */
void ism_coll_round(ism_coll_sched *s);           /* end the current round */
void ism_coll_send(ism_coll_sched *s, int peer, int slot, int64_t off, int64_t len);
void ism_coll_recv(ism_coll_sched *s, int peer, int slot, int64_t off, int64_t len);
void ism_coll_red(ism_coll_sched *s, int in, int64_t inoff, int inout, int64_t iooff,
                  int64_t len);
void ism_coll_copy(ism_coll_sched *s, int from, int64_t foff, int to, int64_t toff,
                   int64_t len);
/* the same, leaving out empty messages (both sides compute the same sizes) */
static inline void ism_coll_send_nz(ism_coll_sched *s, int peer, int slot, int64_t off,
                                    int64_t len)
{
    if (len > 0)
        ism_coll_send(s, peer, slot, off, len);
}
static inline void ism_coll_recv_nz(ism_coll_sched *s, int peer, int slot, int64_t off,
                                    int64_t len)
{
    if (len > 0)
        ism_coll_recv(s, peer, slot, off, len);
}
/* end the last round; the builder's result */
int ism_coll_sched_done(ism_coll_sched *s);

/* helpers shared by the builders (sched.c) */
int64_t ism_coll_split(int64_t total, int parts, int i, int64_t unit, int64_t *off);
int ism_coll_pow2_below(int p);
int64_t ism_coll_nseg(int64_t bytes, int64_t seg, int64_t esize, int64_t *segbytes);
/* a->seg rounded down to whole elements (at least one); 0 stays 0 (unsegmented) */
int64_t ism_coll_seg_elems(const ism_coll_args *a);

/* the collectives and their algorithms */
enum {
    ISM_COLL_BARRIER,
    ISM_COLL_BCAST,
    ISM_COLL_REDUCE,
    ISM_COLL_ALLREDUCE,
    ISM_COLL_REDUCE_SCATTER,
    ISM_COLL_SCAN,
    ISM_COLL_EXSCAN,
    ISM_COLL_ALLGATHER,
    ISM_COLL_ALLTOALL,
    ISM_COLL_N
};

typedef struct ism_coll_alg {
    const char *name;
    ism_coll_build_fn build;
    uint8_t commute_only; /* wrong for non-commutative ops */
    uint8_t radix;        /* takes a radix */
    uint8_t seg;          /* takes a segment size */
} ism_coll_alg;

/* The algorithms of one collective, NULL-terminated; index = algorithm id. */
const ism_coll_alg *ism_coll_algs(int coll);
const char *ism_coll_name(int coll);
int ism_coll_by_name(const char *name); /* -1 if unknown */
int ism_coll_alg_by_name(int coll, const char *name); /* -1 if unknown */
/* A k-nomial algorithm's default radix and a pipeline's default segment. */
#define ISM_COLL_DEFAULT_RADIX 4
#define ISM_COLL_DEFAULT_SEG (64 << 10)

/* builders, one file per family */
int ism_coll_bcast_knomial(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_bcast_binomial(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_bcast_linear(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_bcast_chain(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_bcast_scatter_allgather(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_binomial(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_knomial(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_linear(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_chain(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_rabenseifner(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allreduce_recursive_doubling(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allreduce_rabenseifner(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allreduce_ring(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allreduce_knomial(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allreduce_linear(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allreduce_exchange(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_scatter_ring(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_scatter_recursive_halving(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_reduce_scatter_pairwise(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_scan_recursive_doubling(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_scan_chain(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allgather_ring(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allgather_recursive_doubling(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allgather_bruck(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_allgather_exchange(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_alltoall_pairwise(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_alltoall_bruck(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_barrier_dissemination(ism_coll_sched *s, const ism_coll_args *a);
int ism_coll_barrier_linear(ism_coll_sched *s, const ism_coll_args *a);

/* pieces several families share (b_common.c) */
/* Fold for a non-power-of-two group (MPICH's): of the first 2*rem members the even ones
 * give their whole vector (slot v) to the odd neighbour, which combines it on the left,
 * and sit out. Returns my new index among the pp = pow2_below(p) that go on, or -1. */
int ism_coll_fold_in(ism_coll_sched *s, int p, int me, int from, int v, int64_t len);
/* The folded-out members get the result (slot v) back from their neighbour. */
void ism_coll_fold_out(ism_coll_sched *s, int p, int me, int v, int64_t len);
int ism_coll_real(int p, int x); /* member of new index x after the fold */
/* k-nomial trees rooted at 0 over p: children of v in increasing order (returns how
 * many; out has room for (k-1) * ceil(log_k p)), parent, size of the subtree of v */
int ism_coll_kn_children(int v, int p, int k, int *out);
int ism_coll_kn_parent(int v, int k);
int ism_coll_kn_subtree(int v, int p, int k);
/* k-nomial reduction in member order over rot-rotated indices into the
 * accumulator; returns the slot that holds my partial (at index 0: the result). Slot
 * `first` holds my contribution; temporaries are taken as needed. */
int ism_coll_kn_reduce(ism_coll_sched *s, int p, int me, int rot, int k, int first,
                       int64_t len);
/* The same for a commutative op, with no copy: the result lands in slot final at the
 * tree's top (member rot); combining order is free, receives are one at a time. */
int ism_coll_kn_reduce_commutative(ism_coll_sched *s, int p, int me, int rot, int k, int final,
                                   int64_t len);
/* k-nomial broadcast from member root of len bytes: the root sends from slot rslot, the
 * others receive into slot oslot and forward from it. */
void ism_coll_kn_bcast(ism_coll_sched *s, int p, int me, int root, int k, int rslot, int oslot,
                       int64_t len);
/* Ring reduce-scatter over blocks off[0..p] of slot v (rank me ends with block me
 * reduced, every contribution combined on the left), segments of at most seg bytes
 * received into a temporary. The last reduction is left pending: the caller's next
 * round must start with ism_coll_flush(). */
void ism_coll_ring_rs(ism_coll_sched *s, int p, int me, int v, const int64_t *off, int64_t seg);
/* Ring allgather over blocks off[0..p] of slot v; me starts with block me. */
void ism_coll_ring_ag(ism_coll_sched *s, int p, int me, int v, const int64_t *off);
/* Local actions a builder left for the start of the next round. */
void ism_coll_defer_red(ism_coll_sched *s, int in, int64_t inoff, int inout, int64_t iooff,
                        int64_t len);
void ism_coll_defer_copy(ism_coll_sched *s, int from, int64_t foff, int to, int64_t toff,
                         int64_t len);
void ism_coll_flush(ism_coll_sched *s);
/* Rabenseifner's reduce-scatter by recursive halving over pp = 2^k new indices (x is
 * mine) on blocks off[0..pp] of OUT, with slot alt as the second buffer. Returns the
 * slot holding my piece, positions [*lo, *hi); trace gets the range before each step.
 * The last reduction is left pending for the next round. */
typedef struct { int mask, lo, hi; } ism_coll_step;
int ism_coll_rab_rs(ism_coll_sched *s, int pp, int x, int p, const int64_t *off, int start, int alt,
                    int *lo, int *hi, ism_coll_step *trace, int *ntrace);
/* The members' blocks (a->blk, or a->bytes each): offsets of p+1 boundaries. */
int64_t *ism_coll_member_blocks(const ism_coll_args *a);
/* Block offsets of n blocks: blk[i] bytes each, or total split evenly (on elements). */
int64_t *ism_coll_blocks(int n, const int64_t *blk, int64_t total, int64_t esize);

#endif
