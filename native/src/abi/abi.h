/* abi.h: translation between the public MPI ABI and the core, shared by the abi/ files.
 *
 * Predefined handles are small ABI constants and map to static core objects; all other
 * handles are pointers to core objects. Argument checks and the invocation of error
 * handlers live in this layer and nowhere else. Every MPI_X is a weak alias of PMPI_X,
 * so PMPI tools can interpose.
 */
#ifndef ISM_ABI_H
#define ISM_ABI_H

#include "mt_names.h" /* before mpi.h: renames the definitions the locking entries wrap */
#include <mpi.h>

#include "../core/core.h"

#define ISM_LIKELY(x) __builtin_expect(!!(x), 1)
#define ISM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* the weak alias MPI_name of PMPI_name, or nothing where abi/mt_entry.c makes both */
#define ISM_PMPI(name) ISM_PMPI_##name

static inline ism_comm *ism_abi_comm(MPI_Comm h)
{
    uintptr_t v = (uintptr_t)h;
    if (ISM_LIKELY(v == (uintptr_t)MPI_COMM_WORLD))
        return &ism_comm_world;
    if (v == (uintptr_t)MPI_COMM_SELF)
        return &ism_comm_self;
    if (v < 0x1000)
        return NULL;
    return (ism_comm *)h;
}

static inline MPI_Comm ism_abi_comm_handle(ism_comm *c)
{
    if (c == &ism_comm_world)
        return MPI_COMM_WORLD;
    if (c == &ism_comm_self)
        return MPI_COMM_SELF;
    return (MPI_Comm)c;
}

/* Derived datatypes (abi/datatype.c): a live type, committed if need_commit; else NULL. */
ism_dt *ism_abi_dt_derived(MPI_Datatype h, int need_commit);

/* MPI-1's MPI_LB and MPI_UB (abi/legacy.c): a struct with them is built as the struct of
 * its other entries, resized to the bounds the markers set. */
static inline int ism_abi_is_bound_marker(MPI_Datatype h)
{
    return h == MPI_LB || h == MPI_UB;
}
int ism_abi_struct_with_markers(const char *fn, int count, const int blocklengths[],
                                const MPI_Aint displacements[], const MPI_Datatype types[],
                                MPI_Datatype *newtype);
/* Whether the running nonblocking collective holds d (it may use d after MPI_Type_free). */
int ism_abi_nbc_kept(const ism_dt *d);

/* coll_nb.c: run body(args) as a nonblocking collective on c, holding the derived types
 * t1, t2 until it returns; a persistent collective's run names its template (owner),
 * which holds its types and is told when the run ends. Returns an MPI error class. */
typedef struct ism_pcoll ism_pcoll;
/* The communicator of a nonblocking or persistent collective call, checked with its
 * request argument; and the error of a run that could not start. */
int ism_abi_nbc_comm(const char *fn, MPI_Comm comm, MPI_Request *request, ism_comm **c);
int ism_abi_nbc_error(ism_comm *c, int rc, const char *fn);
/* For other nonblocking operations built the same way (MPI_Comm_idup). */
int ism_abi_nbc_start(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                      size_t len, MPI_Request *request);
/* The same, holding the derived types t1 and t2 until the operation ends (the nonblocking
 * collectives' start; the generated large-count forms use it). */
int ism_abi_nbc_start_types(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                            size_t len, MPI_Request *request, MPI_Datatype t1, MPI_Datatype t2);
/* coll_nb_sched.c: the nonblocking collectives that start as schedules in flight; each
 * returns ISM_ABI_NB_PASS where the coroutine must run it (coll_nb_gen.c calls them). */
#define ISM_ABI_NB_PASS (-1)
/* The blocking collectives' argument checks (coll.c), which the nonblocking forms that
 * start as collectives in flight make too: a type and its count; a count per rank; the
 * rooted v-forms' arguments significant on this rank (one: the single buffer's type,
 * many: the vector side's, at the root only; NULL where not significant). */
int ism_abi_buf_type(const char *fn, ism_comm *c, MPI_Datatype h, int count, const char *what,
                     ism_dt **d);
/* Whether a blocking neighbourhood collective on c runs as start + wait on the engine of
 * collectives in flight (coll/nb_move.c): across sites, and not on a coroutine (a
 * nonblocking collective's fallback there would take the communicator's sequence numbers
 * in an order of its own). Every member decides alike: its int and _c forms both come
 * through ism_abi_nbr_w. */
int ism_abi_coll_in_flight(const ism_comm *c);
/* The same for the blocking gather(v), scatter(v), allgatherv and alltoall(v,w), when
 * ISTHMUS_COLL_INFLIGHT=1 (default 0: the core's exchange through each site's leader, one
 * WAN message per site pair, which test_wan_counts holds them to). Their _c forms
 * take it too: gather(v), scatter(v) and allgatherv by calling the int form while their
 * own arguments fit, the alltoalls with their 64-bit vectors (coll_large.c). */
int ism_abi_coll_movers_in_flight(const ism_comm *c);
int ism_abi_counts_arg(const char *fn, ism_comm *c, const int *counts, const char *what);
int ism_abi_rooted_checks(const char *fn, ism_comm *c, int root, int in_place,
                          MPI_Datatype one_t, int one_n, const char *one_what, const int *counts,
                          const int *displs, MPI_Datatype many_t, const char *many_what,
                          ism_dt **one, ism_dt **many);
int ism_abi_isched_barrier(MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                         MPI_Request *request);
int ism_abi_isched_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_reduce_scatter(const void *sendbuf, void *recvbuf, const int *recvcounts,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request *request);
int ism_abi_isched_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                        MPI_Request *request);
int ism_abi_isched_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request);
int ism_abi_isched_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int *recvcounts, const int *displs,
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                          MPI_Comm comm, MPI_Request *request);
/* The nonblocking data movers' _c forms beyond int, started in flight with 64-bit
 * vectors (abi/coll_large.c; largecount.c calls them), or ISM_ABI_NB_PASS. */
int ism_abi_wide_igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                           MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                             MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             MPI_Request *request);
int ism_abi_wide_iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[],
                               const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Request *request);
int ism_abi_wide_ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void *recvbuf, const MPI_Count recvcounts[],
                              const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                              MPI_Comm comm, MPI_Request *request);
/* The elementwise ones and allgather beyond int: on an intercommunicator one collective in
 * flight (coll/nb_inter.c), as their int forms there; elsewhere ISM_ABI_NB_PASS (cut in
 * pieces on a coroutine). */
int ism_abi_wide_ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                          MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request);
int ism_abi_wide_ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                           MPI_Request *request);
int ism_abi_wide_ireduce_scatter_c(const void *sendbuf, void *recvbuf,
                                   const MPI_Count recvcounts[], MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_ireduce_scatter_block_c(const void *sendbuf, void *recvbuf,
                                         MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                         MPI_Comm comm, MPI_Request *request);
int ism_abi_wide_iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPI_Request *request);
/* A gather(v) (scatter 0) or scatter(v) (1) in flight with 64-bit vectors in elements, its
 * arguments checked: one_buf, one_n, one: every rank's single block (MPI_IN_PLACE at the
 * root); many_buf, counts, displs, many: the root's vector side (read at the root only). */
int ism_abi_isched_rooted64(const char *fn, int scatter, const void *one_buf, int64_t one_n,
                            ism_dt *one, const void *many_buf, const int64_t *counts,
                            const int64_t *displs, ism_dt *many, int root, ism_comm *c,
                            MPI_Request *request);
int ism_abi_isched_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const int *recvcounts, const int *displs,
                           MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                           MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_scatterv(const void *sendbuf, const int *sendcounts, const int *displs,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request);
int ism_abi_isched_alltoallv(const void *sendbuf, const int *sendcounts, const int *sdispls,
                             MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                             const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request);
int ism_abi_isched_alltoallw(const void *sendbuf, const int *sendcounts, const int *sdispls,
                             const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts,
                             const int *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm,
                             MPI_Request *request);
/* abi/topo.c: the calling rank's in- and out-degree in comm's topology (0 and 0 without). */
void ism_abi_neighbor_degrees(MPI_Comm comm, int *nin, int *nout);
/* the neighborhood collectives with 64-bit counts (topo.c): the general form, and element
 * counts (ints, or MPI_Count when wide) turned into it; ism_abi_nbr_one_block as sdispls
 * marks per-neighbor send blocks (alltoall) */
int ism_abi_nbr_w(const char *fn, const void *sendbuf, const MPI_Count *scounts,
                  const MPI_Aint *sdispls, const MPI_Datatype *stypes, MPI_Datatype stype,
                  void *recvbuf, const MPI_Count *rcounts, const MPI_Aint *rdispls,
                  const MPI_Datatype *rtypes, MPI_Datatype rtype, MPI_Comm comm,
                  MPI_Request *request);
int ism_abi_nbr_v(const char *fn, int wide, const void *sendbuf, const void *scounts,
                  const void *sdispls, MPI_Count scount1, MPI_Datatype stype, void *recvbuf,
                  const void *rcounts, const void *rdispls, MPI_Count rcount1,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request);
extern const void *const ism_abi_nbr_one_block;
/* (request: NULL for the blocking call; else the nonblocking one, started as a collective
 * in flight, or ISM_ABI_NB_PASS where the coroutine must run it) */
int ism_abi_isched_neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, const int *recvcounts, const int *displs,
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_neighbor_alltoallv(const void *sendbuf, const int *sendcounts,
                                      const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                                      const int *recvcounts, const int *rdispls,
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int ism_abi_isched_neighbor_alltoallw(const void *sendbuf, const int *sendcounts,
                                      const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                                      void *recvbuf, const int *recvcounts,
                                      const MPI_Aint *rdispls, const MPI_Datatype *recvtypes,
                                      MPI_Comm comm, MPI_Request *request);
int ism_abi_nbc_run(ism_comm *c, int (*body)(void *), const void *args, size_t len, ism_dt *t1,
                    ism_dt *t2, ism_pcoll *owner, ism_req **out);
/* coll_persist.c: persistent collective requests (MPI_<x>_init). A persistent request
 * whose p_op is ISM_ABI_PCOLL is one; its tmp is the template. The argument block args
 * names comm at *slot (a pointer into args); sched, where not NULL, starts a run as a
 * collective in flight (coll_nb_sched.c) or answers ISM_ABI_NB_PASS; tv1, tv2 are the w-forms' type arrays, one
 * entry per peer (per neighbor if neighbor), NULL otherwise. */
#define ISM_ABI_PCOLL 6
int ism_abi_pcoll_init(const char *fn, MPI_Comm comm, MPI_Comm *slot, int (*body)(void *),
                       int (*sched)(void *, MPI_Request *), const void *args, size_t len,
                       MPI_Info info, MPI_Request *request,
                       MPI_Datatype t1, MPI_Datatype t2, const MPI_Datatype *tv1,
                       const MPI_Datatype *tv2, int neighbor);
int ism_abi_pcoll_start(ism_req *r);
/* The template whose MPI_Start is starting a collective in flight now (NULL: none): the
 * handle lookup accepts the freed types it holds (ism_abi_nbc_kept). */
extern const ism_pcoll *ism_abi_pcoll_starting;
void *ism_abi_pcoll_copy(const void *src, int n, size_t size, int *nomem);
void ism_abi_pcoll_adopt(MPI_Request request, void *mem);
void ism_abi_pcoll_free(ism_req *r);
int ism_abi_pcoll_holds(const ism_pcoll *p, const ism_dt *d);
void ism_abi_pcoll_ended(ism_pcoll *p);
/* Why h is not usable for communication, for error messages. */
const char *ism_abi_dt_problem(MPI_Datatype h);
/* datatype.c: builds a type from its envelope (integers widened to 64 bits, in the int
 * constructors' layout; datatype_large.c passes values beyond INT_MAX), and gives the old
 * types of an envelope back as handles (derived ones as new handles the caller frees). */
int ism_abi_type_make(const char *fn, int combiner, const int64_t *ints, const MPI_Aint *aints,
                      const MPI_Datatype *olds, int nold, MPI_Datatype *newtype);
void ism_abi_type_contents_types(ism_dtx *x, MPI_Datatype array_of_datatypes[]);
int ism_abi_darray_args(const char *fn, int size, int rank, int ndims, const int64_t *gsizes,
                        const int *distribs, const int *dargs, const int *psizes, int order);

/* A datatype for communication: predefined (the fast path: one compare and a load) or a
 * committed derived type. */
static inline ism_dt *ism_abi_dt(MPI_Datatype h)
{
    uintptr_t i = (uintptr_t)h - ISM_DT_BASE;
    if (ISM_LIKELY(i < ISM_DT_COUNT))
        return ism_dt_table[i].v ? &ism_dt_table[i] : NULL;
    return ism_abi_dt_derived(h, 1);
}

/* Any live datatype, committed or not (queries, constructors). */
static inline ism_dt *ism_abi_dt_any(MPI_Datatype h)
{
    uintptr_t i = (uintptr_t)h - ISM_DT_BASE;
    if (ISM_LIKELY(i < ISM_DT_COUNT))
        return ism_dt_table[i].v ? &ism_dt_table[i] : NULL;
    return ism_abi_dt_derived(h, 0);
}

static inline ism_op *ism_abi_op(MPI_Op h)
{
    uintptr_t i = (uintptr_t)h - ISM_OP_BASE;
    if (ISM_LIKELY(i < ISM_OP_COUNT))
        return ism_op_table[i].v ? &ism_op_table[i] : NULL;
    if ((uintptr_t)h < 0x1000)
        return NULL;
    return (ism_op *)h; /* a user op (abi/op.c) */
}

static inline ism_req *ism_abi_req(MPI_Request h)
{
    return h == MPI_REQUEST_NULL ? NULL : (ism_req *)h;
}

/* The status of a single completion (Recv, Wait, Test, Waitany, Probe, Mrecv, ...):
 * MPI_ERROR is left as the program set it -- "this field may be updated only by the
 * functions ... which return multiple statuses" (MPI 3.1 §3.2.5). */
static inline void ism_abi_status(MPI_Status *s, const ism_status *st)
{
    if (s == MPI_STATUS_IGNORE)
        return;
    s->MPI_SOURCE = st->source;
    s->MPI_TAG = st->tag;
    s->MPI_internal[0] = (int)(uint32_t)(st->bytes & 0xffffffffu);
    s->MPI_internal[1] = (int)(uint32_t)((uint64_t)st->bytes >> 32);
    s->MPI_internal[2] = st->cancelled;
}

/* The status of one of several completions (Waitall, Testall, Waitsome, Testsome) and
 * the empty status: MPI_ERROR too. */
static inline void ism_abi_status_err(MPI_Status *s, const ism_status *st)
{
    if (s == MPI_STATUS_IGNORE)
        return;
    ism_abi_status(s, st);
    s->MPI_ERROR = st->error;
}

static inline size_t ism_abi_status_bytes(const MPI_Status *s)
{
    return (size_t)(uint32_t)s->MPI_internal[0] | ((size_t)(uint32_t)s->MPI_internal[1] << 32);
}

/* Raise an error on communicator c (NULL: MPI_COMM_WORLD's handler): print and abort for
 * MPI_ERRORS_ARE_FATAL/ABORT, else return the code. */
int ism_abi_error(ism_comm *c, int code, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

int ism_abi_call_user_errh(ism_comm *c, int code);
const char *ism_abi_class_name(int c);
const char *ism_abi_class_text(int c);

/* attr.c: copy callbacks on dup, delete callbacks on free (return an MPI error code) */
int ism_abi_attr_copy(ism_comm *from, ism_comm *to);
int ism_abi_attr_delete_all(ism_comm *c);
int ism_abi_last_used_code(void);
int ism_abi_type_attr_copy(MPI_Datatype from, MPI_Datatype to);
int ism_abi_type_attr_delete_all(MPI_Datatype h);
/* topo.c: topologies follow communicators through dup and free */
int ism_abi_topo_copy(ism_comm *from, ism_comm *to);
void ism_abi_topo_free(ism_comm *c);
/* coll_inter.c: rooted and all-to-all collectives on intercommunicators; the arrays are
 * ints, or MPI_Count counts and MPI_Aint displacements when wide (the _c forms). request
 * NULL: the blocking form; else the nonblocking one, started in flight (coll/nb_inter.c). */
/* bcast's and the reductions' type, count (the root's, for a reduction everyone's), op (o
 * NULL: none), root (NULL: none; MPI_ROOT and MPI_PROC_NULL become ISM_ROOT and
 * ISM_PROC_NULL) and send buffer (no MPI_IN_PLACE where data leave) checked, the error
 * raised on c */
int ism_abi_inter_args(const char *fn, ism_comm *c, MPI_Datatype dt, int64_t count, MPI_Op op,
                       int *root, const void *sendbuf, ism_dt **d, ism_op **o);
int ism_abi_inter_rooted(const char *fn, ism_comm *c, const void *one_buf, int64_t one_count,
                         MPI_Datatype one_type, void *many_buf, const void *counts,
                         const void *displs, MPI_Datatype many_type, int root, int scatter,
                         int wide, MPI_Request *request);
int ism_abi_inter_exchange(const char *fn, ism_comm *c, const void *sbuf, const void *scounts,
                           const void *sdispls, MPI_Datatype stype, const MPI_Datatype *stypes,
                           void *rbuf, const void *rcounts, const void *rdispls,
                           MPI_Datatype rtype, const MPI_Datatype *rtypes, int bytes, int wide,
                           MPI_Request *request);
/* coll.c: allgather(v) on an intercommunicator, my one block to every remote rank (request
 * as above) */
int ism_abi_inter_allgather(const char *fn, ism_comm *c, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                            const int *displs, MPI_Datatype recvtype, MPI_Request *request);
/* greq.c: generalized requests. query fills st from query_fn (and returns its code);
 * finish queries, runs free_fn and sets *h to MPI_REQUEST_NULL (the first error code);
 * free is MPI_Request_free's part, cancel MPI_Cancel's. */
int ism_abi_greq_query(ism_req *r, ism_status *st);
int ism_abi_greq_finish(MPI_Request *h, ism_status *st);
int ism_abi_greq_free(ism_req *r);
int ism_abi_greq_cancel(ism_req *r);

/* info.c: communicator hints */
void ism_abi_hints_free(ism_comm *c);
/* A window's hints in use (info.c): prev (or the defaults, when MPI_INFO_NULL) with the
 * recognized hints of given applied; MPI_ERR_INFO for a bad handle, raised as fn. */
int ism_abi_win_hints(const char *fn, MPI_Info given, MPI_Info prev, MPI_Info *out);
/* coll.c: entries of a collective's per-rank vectors (largecount.c) */
int ism_abi_comm_peers(MPI_Comm comm, int local, int root);
/* coll.c: comm is an intracommunicator held at one site (0 for a bad handle) */
int ism_abi_comm_one_site(MPI_Comm comm);
/* group.c */
ism_group *ism_abi_group(MPI_Group h);

/* env.c: the runtime's users (the world model and each session); the first starts it,
 * the last stops it. start prints why it failed. */
int ism_abi_runtime_start(int *argc, char ***argv, int required, int *provided, const char *fn);
int ism_abi_runtime_stop(void);
/* errors.c: error handler handles <-> core objects (NULL: not an error handler) */
ism_errh *ism_abi_errh(MPI_Errhandler e);
MPI_Errhandler ism_abi_errh_handle(ism_errh *e);
/* fortran.c: call user error handler e on the handle at *handle (an MPI_Comm or
 * MPI_Session), converted to an integer first for a Fortran function */
void ism_abi_errh_call(ism_errh *e, void *handle, int *code);
/* a user function's error handler (communicator or session kind) */
int ism_abi_errh_create(const char *fn, void (*user)(void *, int *, ...), MPI_Errhandler *out);
/* session.c: raise code on error handler e, with no object (a user function gets
 * MPI_COMM_NULL) */
int ism_abi_raise_errh(ism_errh *e, int code, const char *fn, const char *msg);
/* the same on an object: a user function gets handle (a pointer to the object's handle:
 * an MPI_Win for windows) */
int ism_abi_raise_errh_on(ism_errh *e, void *handle, int code, const char *fn, const char *msg);

/* Common checks; each returns 0 or raises. */
int ism_abi_check_init(const char *fn);
extern int ism_abi_tag_ub_value;
static inline int ism_abi_tag_ub(void) { return ism_abi_tag_ub_value; }

#define ISM_CHECK_INIT(fn)                                                                         \
    do {                                                                                           \
        if (ISM_UNLIKELY(!ism.initialized || ism.finalized))                                       \
            return ism_abi_check_init(fn);                                                         \
    } while (0)

/* abi/session.c: a session's buffer slot (MPI 4.1 buffers, abi/buffers.c), or NULL */
ism_bbuf **ism_abi_session_bbuf(MPI_Session h);

/* Validates a point-to-point peer (rank in comm, or the given wildcard). */
static inline int ism_abi_bad_rank(const ism_comm *c, int r, int allow_any)
{
    if (ISM_LIKELY(r >= 0 && r < c->size))
        return 0;
    if (r == MPI_PROC_NULL || (allow_any && r == MPI_ANY_SOURCE))
        return 0;
    return 1;
}

#endif
