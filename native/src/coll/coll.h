/* coll.h: the collective layer: schedules run by isthmus's progress engine, composed in
 * two levels (a phase inside each site, a phase among the sites' leaders), and the
 * choice of algorithm for each phase (selection table, environment, communicator hints).
 *
 * The entry points below are called by the ABI layer for intracommunicators. Each
 * either runs the collective or returns ISM_COLL_PASS, which tells the caller to run the
 * core's two-level collective of before (core/coll.c, coll_general.c, coll_reduce.c):
 * that is what happens when nothing selects an algorithm of ours, so the default
 * behaviour is the one measured before this layer existed.
 */
#ifndef ISM_COLL_H
#define ISM_COLL_H

#include "../core/core.h"
#include "sched.h"

#define ISM_COLL_PASS (-1)

/* levels of a two-level collective */
enum { ISM_LVL_INTRA = 0, ISM_LVL_WAN = 1, ISM_LVL_N };

/* algorithm ids beyond a collective's schedules (sched.c's catalogue) */
enum {
    ISM_ALG_DEFAULT = -1,  /* nothing chosen */
    ISM_ALG_VENDOR = -2,   /* intra: the vendor's own collective */
    ISM_ALG_PIPELINE = -3  /* wan, allreduce: segmented and overlapped with the site phases */
};

typedef struct ism_coll_choice {
    int alg;
    int radix;
    int64_t seg;
} ism_coll_choice;

/* ---- entry points (twolevel.c); NULL send buffer = MPI_IN_PLACE ---- */
int ism_coll_barrier(ism_comm *c);
int ism_coll_bcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c);
int ism_coll_reduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                    ism_comm *c);
int ism_coll_allreduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                       ism_comm *c);
int ism_coll_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt,
                            ism_op *op, ism_comm *c);
int ism_coll_scan(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                  int exclusive, ism_comm *c);
int ism_coll_allgather(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, int rcount,
                       ism_dt *rdt, ism_comm *c);
int ism_coll_alltoall(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, int rcount,
                      ism_dt *rdt, ism_comm *c);

/* ---- start-up, communicators, reports (select.c) ---- */
/* Reads ISTHMUS_COLL_TABLE and the ISTHMUS_COLL_* overrides; on a bad value prints what
 * and where and returns an error class. */
int ism_coll_init(void);
void ism_coll_finalize(void); /* the ISTHMUS_COLL_STATS report */
void ism_coll_comm_free(ism_comm *c);
/* A communicator hint isthmus_coll_<coll> or isthmus_coll_wan_<coll>: 1 taken, 0 not
 * ours, negative an error class (*why says what is wrong). */
int ism_coll_hint(ism_comm *c, const char *key, const char *value, const char **why);
/* The hints in effect, for MPI_Comm_get_info: calls fn for each. */
void ism_coll_hints_each(ism_comm *c, void (*fn)(void *arg, const char *k, const char *v),
                         void *arg);
/* "alg[:radix][:segment]" for collective coll at level lvl. */
int ism_coll_parse_choice(int coll, int lvl, const char *s, ism_coll_choice *out,
                          char *why, size_t whylen);
ism_coll_choice ism_coll_select(ism_comm *c, int coll, int lvl, int p, int64_t bytes,
                                int commute);
void ism_coll_count(int coll, int lvl, int alg);
const char *ism_coll_alg_name(int coll, int alg);

/* ---- the selection table (table.c) ---- */
int ism_coll_table_load(const char *path);
/* First rule matching; 0 if none. */
int ism_coll_table_lookup(int coll, int lvl, int p, int64_t bytes, ism_coll_choice *out);
void ism_coll_table_free(void);

/* ---- running schedules (exec.c) ---- */
/* The group a schedule runs over: member i is comm rank members[i]. */
typedef struct ism_coll_view {
    int p, me;
    const int *members;
} ism_coll_view;

/* How RED applies the op to packed bytes: with the type itself when it is contiguous,
 * with its one basic type for a predefined op on a type made of one basic type, and
 * otherwise by unpacking both operands into the type's layout and packing back. */
typedef struct ism_coll_redop {
    ism_op *op;
    ism_dt *dt;
    ism_dt *basic; /* dt itself, a predefined basic type, or NULL */
    char *scr[2];  /* the unpacking path's buffers */
    char *raw[2];
    int64_t scrlen;
} ism_coll_redop;

void ism_coll_redop_init(ism_coll_redop *r, ism_op *op, ism_dt *dt);
void ism_coll_redop_free(ism_coll_redop *r);
int ism_coll_apply(ism_coll_redop *r, const void *in, void *inout, int64_t len);
/* The predefined type whose packed array a type's packed bytes are, or NULL. */
ism_dt *ism_coll_basic_of(ism_dt *dt);

/* Byte copies of this layer (move.c): memmove, except where the destination lies 1..31
 * bytes past the source modulo 4 KiB and the size is one glibc copies with `rep movsb`
 * (2 KiB up to ism_coll_skew_limit(): the L2's size on AMD x86, else 0), which runs at a
 * fifteenth of the speed on AMD Zen 3; those go backwards in 64-byte blocks. */
void ism_coll_move(void *dst, const void *src, size_t n);
int ism_coll_skewed(const void *dst, const void *src, size_t n);
size_t ism_coll_skew_limit(void);
/* ism_coll_move's skewed path: backwards in 64-byte blocks (right unless dst lies below
 * src inside it); its own name so that it is tested on every CPU, not only where taken */
void ism_coll_move_backward(void *dst, const void *src, size_t n);
/* The page offset for the executor's temporaries that matches buffer ref (0 for NULL),
 * and page-aligned memory for them (need rounded up to pages). */
size_t ism_coll_place(const void *ref);
char *ism_coll_page_alloc(int64_t need);
/* For ISTHMUS_COLL_STATS: schedules run with temporaries (exec.c), allocations of
 * temporaries, copies that took the skewed path, messages sent through the site's
 * shared-memory channels (exec.c). */
typedef struct ism_coll_temp_counts {
    uint64_t runs, allocs, skewed, shm_msgs;
} ism_coll_temp_counts;
extern ism_coll_temp_counts ism_coll_temps;

/* ---- shared-memory channels between the members of a site (shm_ring.c, shm.c) ----
 * A schedule's messages of at most ISM_SHM_CELL bytes between members of one site go
 * through these instead of the vendor's point-to-point: the vendor's blocking collective
 * is one of its own messages plus ~0.1 us, and a schedule over the vendor's messages
 * cannot beat it (bench/notebook/collectives.md, issue 8, "shared-memory channels"). */
#define ISM_SHM_CELL 8192
#define ISM_SHM_NCELL 4
#define ISM_SHM_MEMBERS 8 /* larger sites: n^2 channels, the vendor's messages instead */
typedef struct ism_shm_cell {
    _Alignas(64) uint64_t stamp; /* message number + 1 once the cell holds it (writer) */
    int64_t len;
    char data[ISM_SHM_CELL]; /* from byte 16: a short message shares stamp's cache line */
} ism_shm_cell;
typedef struct ism_shm_chan {
    _Alignas(64) uint64_t head; /* writer's own: messages written, and the last tail seen */
    uint64_t tail_seen;
    _Alignas(64) uint64_t tail; /* messages read; stored by the reader, read by the
                                 * writer only when tail_seen says the ring is full */
    ism_shm_cell cell[ISM_SHM_NCELL];
} ism_shm_chan;
size_t ism_shm_chan_size(void);
/* 1 when the writer's next message finds a free cell */
int ism_shm_chan_room(ism_shm_chan *ch);
/* 1: message seq written; 0: not yet (an earlier one waits, or no room); -1: too long */
int ism_shm_chan_send(ism_shm_chan *ch, uint64_t seq, const void *buf, int64_t len);
/* 1: message seq taken, its length in *got (copied to buf only when it is want); 0: not
 * yet there */
int ism_shm_chan_recv(ism_shm_chan *ch, uint64_t seq, void *buf, int64_t want, int64_t *got);

/* The channels of c's members at this site, mapped at the first schedule run inside the
 * site (collective over those members); NULL when c does not use them (one member, more
 * than ISM_SHM_MEMBERS, ISTHMUS_COLL_SHM=0 at any member, or no shared memory). */
typedef struct ism_coll_shm {
    int n, me;        /* members at the site, and my index among them (c->lrank) */
    ism_shm_chan *ch; /* n * n channels, [from * n + to] */
    size_t len;
    uint64_t *seq;    /* next message number: [peer] towards peer, [n + peer] from peer */
} ism_coll_shm;
int ism_coll_shm_get(ism_comm *c, ism_coll_shm **out);
void ism_coll_shm_free(ism_coll_shm *s);
/* The channel from site member `from` to site member `to` (ranks in c's site group). */
static inline ism_shm_chan *ism_coll_shm_chan(ism_coll_shm *s, int from, int to)
{
    return &s->ch[(size_t)from * (size_t)s->n + (size_t)to];
}
/* Next message number towards (is_send) or from peer. */
static inline uint64_t ism_coll_shm_seq(ism_coll_shm *s, int peer, int is_send)
{
    return s->seq[(is_send ? 0 : s->n) + peer]++;
}

/* Runs schedule s over view v of c. in: the packed input (slot IN); out: the packed
 * result (slot OUT) where this member has one, else NULL and the executor provides the
 * slot. in may lie inside out (in place) when s allows it; otherwise it is copied first. */
int ism_coll_exec(const ism_coll_sched *s, const ism_coll_view *v, ism_comm *c, const void *in,
                  void *out, ism_coll_redop *r);

/* A built schedule for these arguments, from c's cache (cache.c). */
typedef struct ism_coll_key {
    int8_t coll, lvl, alg, commute, exclusive;
    int radix, p, me, root;
    int64_t seg, bytes, esize;
    uint64_t blkhash; /* unequal blocks: their sizes hashed (also stored) */
} ism_coll_key;
const ism_coll_sched *ism_coll_cached(ism_comm *c, const ism_coll_key *k, const int64_t *blk);

/* The per-communicator state of this layer (c->coll), made on first need. */
typedef struct ism_coll_hints ism_coll_hints; /* select.c */
typedef struct ism_coll_centry ism_coll_centry; /* cache.c */
typedef struct ism_coll_comm {
    ism_coll_hints *hints;
    ism_coll_centry *cache;
    int ncache, last; /* last: the entry found or built last */
    uint64_t tick;
    char *arena; /* the executor's temporaries, kept between calls (exec.c) */
    int64_t arena_len;
    int arena_busy;
    ism_coll_shm *shm; /* shm.c */
    int shm_tried;
    uint32_t nb_seq;   /* nonblocking collectives started on it (nb.c) */
} ism_coll_comm;
ism_coll_comm *ism_coll_state(ism_comm *c);
/* A persistent collective's private duplicate chooses as its parent does. */
int ism_coll_copy_hints(const ism_comm *from, ism_comm *to);

/* The schedule (never the vendor's, never the pipeline) a phase runs: select.c's choice,
 * or the default (twolevel.c). */
ism_coll_choice ism_coll_schedule_choice(ism_comm *c, int coll, int lvl, int p, int64_t bytes,
                                         int commute);

/* The members of a collective's phases (twolevel.c): the site's members; one member per
 * site in the order of the sites' leaders (the root at the root's site when root >= 0,
 * its index in *wroot; else the leader, or with last the site's last member). m has
 * room for ism.lay.nsites. */
ism_coll_view ism_coll_intra_view(ism_comm *c);
ism_coll_view ism_coll_wan_view(ism_comm *c, int root, int last, int *m, int *wroot);

/* ---- nonblocking collectives in flight (nb.c, nb_start.c) ---- */
typedef struct ism_coll_nb ism_coll_nb;
/* Start one and give its request, or ISM_COLL_PASS where the coroutine must run it
 * (core/nbc.c): where nb_site.c does not take a communicator within one site, an
 * intercommunicator (nb_inter.c's below), a scan or reduce-scatter on a non-contiguous
 * type (allreduce and reduce take any, packed), a non-commutative op over sites whose
 * members are not consecutive ranks. sbuf ISM_IN_PLACE: in place (NULL is MPI_BOTTOM). */
int ism_coll_iallreduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                        ism_comm *c, ism_req **out);
int ism_coll_ireduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                     ism_comm *c, ism_req **out);
int ism_coll_ibcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c, ism_req **out);
int ism_coll_ibarrier(ism_comm *c, ism_req **out);
int ism_coll_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt,
                             ism_op *op, ism_comm *c, ism_req **out);
int ism_coll_iscan(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                   int exclusive, ism_comm *c, ism_req **out);
/* sbuf ISM_IN_PLACE: in place (my block in rbuf); sdt is then not read */
int ism_coll_iallgather(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, int rcount,
                        ism_dt *rdt, ism_comm *c, ism_req **out);
/* The data-movement collectives (nb_move.c), any type: counts in elements, displacements
 * in bytes; ISM_COLL_PASS only off a communicator spanning sites. Gather(v) and
 * scatter(v) are alltoallws whose vectors are zero but towards the root. sbuf
 * ISM_IN_PLACE: what goes out is read with the receive side's counts, displacements and
 * types (allgatherv: my block at its place in rbuf). Vectors are read at the call only.
 * root: a gather's or scatter's root (-1: none), the hub of its site (nb_hub.c). */
int ism_coll_ialltoallw64(const void *sbuf, const int64_t *scnt, const int64_t *sdsp,
                          ism_dt *const *st, void *rbuf, const int64_t *rcnt, const int64_t *rdsp,
                          ism_dt *const *rt, ism_comm *c, int root, ism_req **out);
/* The same started and waited for (a blocking alltoallw): 0, an error, or ISM_COLL_PASS. */
int ism_coll_ialltoallw64_wait(const void *sbuf, const int64_t *scnt, const int64_t *sdsp,
                               ism_dt *const *st, void *rbuf, const int64_t *rcnt,
                               const int64_t *rdsp, ism_dt *const *rt, ism_comm *c);
int ism_coll_iallgatherv64(const void *sbuf, int64_t scount, ism_dt *sdt, void *rbuf,
                           const int64_t *rcnt, const int64_t *rdsp, ism_dt *rdt, ism_comm *c,
                           ism_req **out);
/* ---- on a communicator within one site (nb_site.c) ---- */
enum {
    ISM_SITE_BARRIER, ISM_SITE_BCAST, ISM_SITE_REDUCE, ISM_SITE_ALLREDUCE, ISM_SITE_SCAN,
    ISM_SITE_EXSCAN, ISM_SITE_REDUCE_SCATTER, ISM_SITE_ALLGATHER, ISM_SITE_GATHERV,
    ISM_SITE_SCATTERV, ISM_SITE_ALLGATHERV, ISM_SITE_ALLTOALLW
};
/* A collective's arguments as its MPI_I<x> got them: s ISM_IN_PLACE for in place (NULL is
 * MPI_BOTTOM); rcount, rdt the reductions' and bcast's count and type; root a
 * communicator rank (-1: none); vectors (n each, NULL: none) in elements, but for
 * alltoallw's displacements in bytes, read at the call only; op NULL but for reductions. */
typedef struct ism_coll_site {
    int coll, n;
    const void *s;
    void *r;
    int scount, rcount, root;
    ism_dt *sdt, *rdt;
    ism_op *op;
    const int64_t *scnt, *sdsp, *rcnt, *rdsp;
    ism_dt *const *st, *const *rt;
} ism_coll_site;
/* Starts it as a collective in flight (c->all_local), or ISM_COLL_PASS: the coroutine. */
int ism_coll_isite(const ism_coll_site *a, ism_comm *c, ism_req **out);

/* The next collective in flight launched calls fn(arg) once it has completed (NULL: none);
 * a start that does not launch one leaves it to the caller to clear. */
void ism_coll_nb_next_ends(void (*fn)(void *), void *arg);
/* A neighbourhood exchange (nb_move.c): nout blocks to outs, nin from ins (ISM_PROC_NULL:
 * none), byte displacements; cart: a Cartesian grid's slots (-1, +1 per dimension). */
int ism_coll_ineighbor64(const void *sbuf, int nout, const int *outs, const int64_t *scnt,
                         const ptrdiff_t *sdsp, ism_dt *const *st, void *rbuf, int nin,
                         const int *ins, const int64_t *rcnt, const ptrdiff_t *rdsp,
                         ism_dt *const *rt, int cart, ism_comm *c, ism_req **out);
/* The same on any communicator, one spanning sites or not (an intercommunicator's merged
 * one, nb_inter.c): never ISM_COLL_PASS. */
int ism_coll_iexchange64(const void *sbuf, int nout, const int *outs, const int64_t *scnt,
                         const ptrdiff_t *sdsp, ism_dt *const *st, void *rbuf, int nin,
                         const int *ins, const int64_t *rcnt, const ptrdiff_t *rdsp,
                         ism_dt *const *rt, int cart, ism_comm *c, ism_req **out);
/* An intercommunicator's collectives in flight (nb_inter.c), on its merged communicator:
 * never ISM_COLL_PASS. root: ISM_ROOT at the root, ISM_PROC_NULL at the rest of its group,
 * else the root's rank in the remote group. No MPI_IN_PLACE. */
int ism_coll_inter_ibarrier(ism_comm *ic, ism_req **out);
int ism_coll_inter_ibcast(void *buf, int64_t count, ism_dt *dt, int root, ism_comm *ic,
                          ism_req **out);
int ism_coll_inter_iallreduce(const void *sbuf, void *rbuf, int64_t count, ism_dt *dt, ism_op *op,
                              ism_comm *ic, ism_req **out);
int ism_coll_inter_ireduce(const void *sbuf, void *rbuf, int64_t count, ism_dt *dt, ism_op *op,
                           int root, ism_comm *ic, ism_req **out);
/* rcounts: the local group's receive counts (elements, read at the call only) */
int ism_coll_inter_ireduce_scatter(const void *sbuf, void *rbuf, const int64_t *rcounts,
                                   ism_dt *dt, ism_op *op, ism_comm *ic, ism_req **out);
/* Gatherv (scatter 0) or scatterv (1): one, the block every non-root sends to (receives
 * from) the root; many, the root's blocks for the remote ranks, counts in elements and
 * displacements in elements of mdt. */
int ism_coll_inter_igatherv(const void *one, int64_t ocount, ism_dt *odt, void *many,
                            const int64_t *mcounts, const int64_t *mdispls, ism_dt *mdt,
                            int root, int scatter, ism_comm *ic, ism_req **out);
/* Every member sends a block to, and receives one from, every remote member: counts in
 * elements, byte displacements, types per remote rank. */
int ism_coll_inter_ialltoallw(const void *sbuf, const int64_t *scnt, const ptrdiff_t *sdsp,
                              ism_dt *const *st, void *rbuf, const int64_t *rcnt,
                              const ptrdiff_t *rdsp, ism_dt *const *rt, ism_comm *ic,
                              ism_req **out);
/* Waits for a collective in flight's request and frees it: its error, or 0 (the wait of
 * a blocking collective run as start + wait). */
int ism_coll_nb_wait(ism_req *r);
extern int ism_coll_nb_active;  /* collectives in flight */
int ism_coll_nb_poll(void);     /* advance them all; how many moved */
void ism_coll_nb_drain(ism_comm *c); /* wait until none is in flight on c */
typedef struct ism_coll_nb_stats {
    uint64_t started, done;
    int64_t max_bytes; /* the most one held besides temporaries */
    int64_t max_temps; /* and its temporaries */
} ism_coll_nb_stats;
extern ism_coll_nb_stats ism_coll_nb_st;
void ism_coll_nb_report(void); /* ISTHMUS_COLL_STATS: what they held (at finalize) */

/* ---- the pipelined inter-site phase (pipeline.c) ---- */
int ism_coll_pipe_allreduce(const void *in, void *out, int64_t bytes, ism_dt *vdt,
                            int64_t vcount, ism_op *op, ism_coll_redop *red, int64_t seg,
                            const ism_coll_view *wan, ism_comm *c);

#endif
