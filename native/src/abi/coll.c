/* coll.c (abi): collective entry points: argument checks, MPI_IN_PLACE, then the coll
 * layer (coll/), which runs the algorithms selected for the call or passes it on to the
 * core's two-level algorithms (ISM_COLL_PASS). The v/w forms and the rooted forms check only the arguments MPI
 * says are significant on the calling rank.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "../coll/coll.h"

/* Collectives on intercommunicators: all that MPI defines there (not scan, exscan). */
static int inter_ok(const char *fn)
{
    static const char *ok[] = {"MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather",
                               "MPI_Scatter", "MPI_Alltoall", "MPI_Alltoallv",
                               "MPI_Reduce_scatter", "MPI_Reduce_scatter_block"};
    for (unsigned i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(fn, ok[i]))
            return 1;
    return 0;
}

static int inter_unsupported(ism_comm *c, const char *fn)
{
    return ism_abi_error(c, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                         "not defined on intercommunicators");
}

/* The core reads a NULL send buffer (a NULL receive buffer, for scatter) as MPI_IN_PLACE.
 * A program's own NULL that carries no data on this rank (count 0: mpi4py passes NULL for
 * empty buffers) must not read so, or ranks take different paths and a vendor refuses
 * MPI_IN_PLACE on some of them only; it becomes an address nothing is read from. */
static const void *core_buf(const void *b, int empty)
{
    static const char nothing;
    return b == MPI_IN_PLACE ? NULL : !b && empty ? &nothing : b;
}

/* A collective whose count is the same on every rank (MPI requires it of the reductions
 * and of a broadcast's bytes) and moves no data ends at once on every rank alike, after
 * its argument checks, as MPICH does: a NULL buffer then never reaches a vendor that would
 * read it as MPI_IN_PLACE or as aliased. */
static int moves_nothing(const ism_comm *c, int count, const ism_dt *d)
{
    return !c->is_inter && (count == 0 || d->size == 0);
}

static int all_zero(const int *v, int n)
{
    for (int i = 0; v && i < n; i++)
        if (v[i])
            return 0;
    return 1;
}

static int coll_args(const char *fn, MPI_Comm comm, MPI_Datatype dt, int count, ism_comm **c,
                     ism_dt **d)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    ism_nbc_drain(*c); /* collectives start in order: finish the nonblocking ones first */
    if ((*c)->is_inter && !inter_ok(fn))
        return inter_unsupported(*c, fn);
    *d = ism_abi_dt(dt);
    if (!*d)
        return ism_abi_error(*c, MPI_ERR_TYPE, fn, "invalid or unsupported datatype");
    if (count < 0)
        return ism_abi_error(*c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    return 0;
}

static int root_arg(const char *fn, ism_comm *c, int root)
{
    if (c->is_inter && (root == MPI_ROOT || root == MPI_PROC_NULL))
        return 0; /* the root's group; the other group names the root's remote rank */
    if (root < 0 || root >= c->size)
        return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the communicator (size %d)",
                             root, c->size);
    return 0;
}

int PMPI_Barrier(MPI_Comm comm)
{
    ISM_CHECK_INIT("MPI_Barrier");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Barrier", "invalid communicator");
    ism_nbc_drain(c);
    ism_req *q = NULL; /* an intercommunicator's: started in flight and waited for */
    int rc = c->is_inter ? ism_coll_inter_ibarrier(c, &q) : ism_coll_barrier(c);
    if (c->is_inter && !rc)
        rc = ism_coll_nb_wait(q);
    if (rc == ISM_COLL_PASS)
        rc = ism_barrier(c);
    return rc ? ism_abi_error(c, rc, "MPI_Barrier", "barrier failed") : MPI_SUCCESS;
}
ISM_PMPI(Barrier)

int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    ism_comm *c;
    ism_dt *d;
    int rc = coll_args("MPI_Bcast", comm, datatype, count, &c, &d);
    if (rc || (rc = root_arg("MPI_Bcast", c, root)) || moves_nothing(c, count, d))
        return rc;
    ism_req *q = NULL; /* an intercommunicator's: started in flight and waited for */
    rc = c->is_inter ? ism_coll_inter_ibcast(buffer, count, d, root, c, &q)
                     : ism_coll_bcast(buffer, count, d, root, c);
    if (c->is_inter && !rc)
        rc = ism_coll_nb_wait(q);
    if (rc == ISM_COLL_PASS)
        rc = ism_bcast(buffer, count, d, root, c);
    return rc ? ism_abi_error(c, rc, "MPI_Bcast", "broadcast from root %d failed", root) : 0;
}
ISM_PMPI(Bcast)

int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm)
{
    ism_comm *c;
    ism_dt *d;
    int rc = coll_args("MPI_Reduce", comm, datatype, count, &c, &d);
    if (rc || (rc = root_arg("MPI_Reduce", c, root)))
        return rc;
    ism_op *o = ism_abi_op(op);
    if (!o)
        return ism_abi_error(c, MPI_ERR_OP, "MPI_Reduce", "invalid or unsupported op");
    if (sendbuf == MPI_IN_PLACE && c->rank != root && !c->is_inter)
        return ism_abi_error(c, MPI_ERR_BUFFER, "MPI_Reduce",
                             "MPI_IN_PLACE is only allowed at the root");
    if (moves_nothing(c, count, d))
        return MPI_SUCCESS;
    if (c->is_inter) { /* started in flight and waited for */
        ism_req *q = NULL;
        if (root >= 0 && sendbuf == MPI_IN_PLACE)
            return ism_abi_error(c, MPI_ERR_BUFFER, "MPI_Reduce",
                                 "MPI_IN_PLACE is not allowed on an intercommunicator");
        rc = ism_coll_inter_ireduce(sendbuf, recvbuf, count, d, o, root, c, &q);
        rc = rc ? rc : ism_coll_nb_wait(q);
        return rc ? ism_abi_error(c, rc, "MPI_Reduce", "reduction failed") : 0;
    }
    const void *sb = core_buf(sendbuf, count == 0);
    rc = ism_coll_reduce(sb, recvbuf, count, d, o, root, c);
    if (rc == ISM_COLL_PASS)
        rc = ism_reduce_any(sb, recvbuf, count, d, o, root, c);
    return rc ? ism_abi_error(c, rc, "MPI_Reduce", "reduction to root %d failed", root) : 0;
}
ISM_PMPI(Reduce)

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm)
{
    ism_comm *c;
    ism_dt *d;
    int rc = coll_args("MPI_Allreduce", comm, datatype, count, &c, &d);
    if (rc)
        return rc;
    ism_op *o = ism_abi_op(op);
    if (!o)
        return ism_abi_error(c, MPI_ERR_OP, "MPI_Allreduce", "invalid or unsupported op");
    if (c->is_inter && sendbuf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, "MPI_Allreduce",
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    if (moves_nothing(c, count, d))
        return MPI_SUCCESS;
    const void *sb = core_buf(sendbuf, count == 0);
    ism_req *q = NULL; /* an intercommunicator's: started in flight and waited for */
    rc = c->is_inter ? ism_coll_inter_iallreduce(sendbuf, recvbuf, count, d, o, c, &q)
                     : ism_coll_allreduce(sb, recvbuf, count, d, o, c);
    if (c->is_inter && !rc)
        rc = ism_coll_nb_wait(q);
    if (rc == ISM_COLL_PASS)
        rc = ism_allreduce_any(sb, recvbuf, count, d, o, c);
    return rc ? ism_abi_error(c, rc, "MPI_Allreduce", "allreduce failed") : 0;
}
ISM_PMPI(Allreduce)

int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                      MPI_Op op)
{
    ISM_CHECK_INIT("MPI_Reduce_local");
    ism_dt *d = ism_abi_dt(datatype);
    ism_op *o = ism_abi_op(op);
    if (!d || !o || count < 0)
        return ism_abi_error(NULL, !d ? MPI_ERR_TYPE : !o ? MPI_ERR_OP : MPI_ERR_COUNT,
                             "MPI_Reduce_local", "invalid argument");
    int rc = ism_op_apply(o, inbuf, inoutbuf, count, d);
    return rc ? ism_abi_error(NULL, rc, "MPI_Reduce_local", "local reduction failed") : 0;
}
ISM_PMPI(Reduce_local)

/* Allgather(v) on an intercommunicator: my one block to every remote process. */
int ism_abi_inter_allgather(const char *fn, ism_comm *c, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                            const int *displs, MPI_Datatype recvtype, MPI_Request *request)
{
    int *sc = malloc(sizeof(int) * (size_t)(c->size + 1));
    if (!sc)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; r < c->size; r++)
        sc[r] = sendcount;
    int rc = ism_abi_inter_exchange(fn, c, sendbuf, sc, NULL, sendtype, NULL, recvbuf,
                                    recvcounts, displs, recvtype, NULL, 0, 0, request);
    free(sc);
    return rc;
}

static int *uniform(int n, int count);

static int inter_allgather_uniform(ism_comm *c, const void *sendbuf, int sendcount,
                                   MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                   MPI_Datatype recvtype)
{
    int *cd = uniform(c->size, recvcount);
    if (!cd)
        return ism_abi_error(c, MPI_ERR_NO_MEM, "MPI_Allgather", "out of memory");
    int rc = ism_abi_inter_allgather("MPI_Allgather", c, sendbuf, sendcount, sendtype, recvbuf,
                                     cd, cd + c->size, recvtype, NULL);
    free(cd);
    return rc;
}

int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    ism_comm *ic = ism_abi_comm(comm);
    if (ic && ic->is_inter && ism.initialized) {
        ism_nbc_drain(ic);
        return inter_allgather_uniform(ic, sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype);
    }
    ism_comm *c;
    ism_dt *d;
    int rc = coll_args("MPI_Allgather", comm, recvtype, recvcount, &c, &d);
    if (rc)
        return rc;
    if (sendbuf != MPI_IN_PLACE) {
        ism_dt *sd = ism_abi_dt(sendtype);
        if (!sd)
            return ism_abi_error(c, MPI_ERR_TYPE, "MPI_Allgather", "invalid send datatype");
        if ((size_t)sendcount * (size_t)sd->size != (size_t)recvcount * (size_t)d->size)
            return ism_abi_error(c, MPI_ERR_TRUNCATE, "MPI_Allgather",
                                 "send and receive sizes differ (%d x %lld vs %d x %lld bytes)",
                                 sendcount, (long long)sd->size, recvcount,
                                 (long long)d->size);
    }
    const void *sb = core_buf(sendbuf, sendcount == 0);
    ism_dt *sd = sb ? ism_abi_dt(sendtype) : d;
    rc = ism_coll_allgather(sb, sendcount, sd, recvbuf, recvcount, d, c);
    if (rc == ISM_COLL_PASS && sb && (sd != d || sendcount != recvcount)) {
        /* the core's allgather reads the send buffer with the receive type: a send type
         * of the same signature but another layout goes the per-side-type way */
        int *cd = uniform(c->size, recvcount);
        rc = cd ? ism_allgatherv(sb, sendcount, sd, recvbuf, cd, cd + c->size, d, c)
                : MPI_ERR_NO_MEM;
        free(cd);
    } else if (rc == ISM_COLL_PASS) {
        rc = ism_allgather(sb, recvbuf, recvcount, d, c);
    }
    return rc ? ism_abi_error(c, rc, "MPI_Allgather", "allgather failed") : 0;
}
ISM_PMPI(Allgather)

/* ---- gather, scatter, allgatherv, all-to-all ---- */

int ism_abi_buf_type(const char *fn, ism_comm *c, MPI_Datatype h, int count, const char *what,
                    ism_dt **d)
{
    *d = ism_abi_dt(h);
    if (!*d)
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "invalid or uncommitted %s datatype", what);
    if (count < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "%s count %d is negative", what, count);
    return 0;
}

static int counts_n(const char *fn, ism_comm *c, const int *counts, int n, const char *what)
{
    if (!counts)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "%s counts are NULL", what);
    for (int r = 0; r < n; r++)
        if (counts[r] < 0)
            return ism_abi_error(c, MPI_ERR_COUNT, fn, "%s count for rank %d is negative (%d)",
                                 what, r, counts[r]);
    return 0;
}

int ism_abi_counts_arg(const char *fn, ism_comm *c, const int *counts, const char *what)
{
    return counts_n(fn, c, counts, c->size, what);
}

static int comm_only(const char *fn, MPI_Comm comm, ism_comm **c)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    ism_nbc_drain(*c);
    if ((*c)->is_inter && !inter_ok(fn))
        return inter_unsupported(*c, fn);
    return 0;
}

static int done(ism_comm *c, int rc, const char *fn)
{
    return rc ? ism_abi_error(c, rc, fn, "the collective failed") : MPI_SUCCESS;
}

int ism_abi_coll_in_flight(const ism_comm *c)
{
    return !c->is_inter && !c->all_local && ism.multisite && !ism_nbc_cur_args();
}

int ism_abi_coll_movers_in_flight(const ism_comm *c)
{
    return ism_abi_coll_in_flight(c) && ism_core_knob(ISM_K_COLL_INFLIGHT, 1) != 0;
}

/* The wait of start + wait: rc is the start's answer (ISM_ABI_NB_PASS: not taken). */
static int wait_started(ism_comm *c, int rc, MPI_Request q, const char *fn)
{
    if (rc != MPI_SUCCESS)
        return rc;
    return done(c, ism_coll_nb_wait((ism_req *)q), fn);
}


/* The arguments of a rooted v-collective: the single buffer (send for gather, receive
 * for scatter; MPI_IN_PLACE only at the root) on every rank, counts, displacements and
 * type of the vector side at the root only. */
int ism_abi_rooted_checks(const char *fn, ism_comm *c, int root, int in_place,
                          MPI_Datatype one_t, int one_n, const char *one_what, const int *counts,
                          const int *displs, MPI_Datatype many_t, const char *many_what,
                          ism_dt **one, ism_dt **many)
{
    int rc = root_arg(fn, c, root);
    *one = *many = NULL;
    if (rc)
        return rc;
    if (in_place && c->rank != root)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is only allowed at the root");
    if (!in_place && (rc = ism_abi_buf_type(fn, c, one_t, one_n, one_what, one)))
        return rc;
    if (c->rank != root)
        return 0;
    if ((rc = ism_abi_counts_arg(fn, c, counts, many_what)))
        return rc;
    if (!displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements are NULL");
    return ism_abi_buf_type(fn, c, many_t, 0, many_what, many);
}

static int rooted_args(const char *fn, MPI_Comm comm, int root, int in_place, MPI_Datatype one_t,
                       int one_n, const char *one_what, const int *counts, const int *displs,
                       MPI_Datatype many_t, const char *many_what, ism_comm **c, ism_dt **one,
                       ism_dt **many)
{
    int rc = comm_only(fn, comm, c);
    *one = *many = NULL;
    return rc ? rc
              : ism_abi_rooted_checks(fn, *c, root, in_place, one_t, one_n, one_what, counts,
                                      displs, many_t, many_what, one, many);
}

int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm)
{
    ism_comm *ic = ism_abi_comm(comm);
    if (ic && ic->is_inter && ism.initialized) {
        ism_nbc_drain(ic);
        return ism_abi_inter_rooted("MPI_Gatherv", ic, sendbuf, sendcount, sendtype, recvbuf,
                                    recvcounts, displs, recvtype, root, 0, 0, NULL);
    }
    const char *fn = "MPI_Gatherv";
    ism_comm *c;
    ism_dt *sd, *rd;
    int in_place = sendbuf == MPI_IN_PLACE;
    int rc = rooted_args(fn, comm, root, in_place, sendtype, sendcount, "send", recvcounts,
                         displs, recvtype, "receive", &c, &sd, &rd);
    if (rc)
        return rc;
    MPI_Request q;
    int ifl = ISM_ABI_NB_PASS;
    if (ism_abi_coll_movers_in_flight(c))
        ifl = ism_abi_isched_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                     recvtype, root, comm, &q);
    if (ifl != ISM_ABI_NB_PASS)
        return wait_started(c, ifl, q, fn);
    rc = ism_gatherv(core_buf(sendbuf, sendcount == 0), sendcount, sd, recvbuf, recvcounts,
                     displs, rd, root, c);
    return done(c, rc, fn);
}
ISM_PMPI(Gatherv)

/* Uniform counts and displacements for the non-v forms. */
static int *uniform(int n, int count)
{
    int *cd = malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
    for (int r = 0; cd && r < n; r++) {
        cd[r] = count;
        cd[n + r] = r * count;
    }
    return cd;
}

/* The uniform counts and displacements of MPI_Gather/MPI_Scatter, whose count is
 * significant at the root only. */
static int rooted_uniform(const char *fn, MPI_Comm comm, int root, int count, const char *what,
                          ism_comm **c, int **cd)
{
    int rc = comm_only(fn, comm, c);
    if (rc)
        return rc;
    if (count < 0 && (*c)->rank == root)
        return ism_abi_error(*c, MPI_ERR_COUNT, fn, "%s count %d is negative", what, count);
    if (!(*cd = uniform((*c)->size, count)))
        return ism_abi_error(*c, MPI_ERR_NO_MEM, fn, "out of memory");
    return MPI_SUCCESS;
}

int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    ism_comm *c;
    int *cd;
    int rc = rooted_uniform("MPI_Gather", comm, root, recvcount, "receive", &c, &cd);
    if (rc)
        return rc;
    rc = PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, cd, cd + c->size, recvtype, root,
                      comm);
    free(cd);
    return rc;
}
ISM_PMPI(Gather)

int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm)
{
    ism_comm *ic = ism_abi_comm(comm);
    if (ic && ic->is_inter && ism.initialized) {
        ism_nbc_drain(ic);
        return ism_abi_inter_rooted("MPI_Scatterv", ic, recvbuf, recvcount, recvtype,
                                    (void *)sendbuf, sendcounts, displs, sendtype, root, 1, 0, NULL);
    }
    const char *fn = "MPI_Scatterv";
    ism_comm *c;
    ism_dt *sd, *rd;
    int in_place = recvbuf == MPI_IN_PLACE;
    int rc = rooted_args(fn, comm, root, in_place, recvtype, recvcount, "receive", sendcounts,
                         displs, sendtype, "send", &c, &rd, &sd);
    if (rc)
        return rc;
    MPI_Request q;
    int ifl = ISM_ABI_NB_PASS;
    if (ism_abi_coll_movers_in_flight(c))
        ifl = ism_abi_isched_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                      recvtype, root, comm, &q);
    if (ifl != ISM_ABI_NB_PASS)
        return wait_started(c, ifl, q, fn);
    rc = ism_scatterv(sendbuf, sendcounts, displs, sd, (void *)core_buf(recvbuf, recvcount == 0),
                      recvcount, rd, root, c);
    return done(c, rc, fn);
}
ISM_PMPI(Scatterv)

int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    ism_comm *c;
    int *cd;
    int rc = rooted_uniform("MPI_Scatter", comm, root, sendcount, "send", &c, &cd);
    if (rc)
        return rc;
    rc = PMPI_Scatterv(sendbuf, cd, cd + c->size, sendtype, recvbuf, recvcount, recvtype, root,
                       comm);
    free(cd);
    return rc;
}
ISM_PMPI(Scatter)

int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm)
{
    ism_comm *ic = ism_abi_comm(comm);
    if (ic && ic->is_inter && ism.initialized) {
        ism_nbc_drain(ic);
        return ism_abi_inter_allgather("MPI_Allgatherv", ic, sendbuf, sendcount, sendtype,
                                       recvbuf, recvcounts, displs, recvtype, NULL);
    }
    const char *fn = "MPI_Allgatherv";
    ism_comm *c;
    ism_dt *sd = NULL, *rd = NULL;
    int rc = comm_only(fn, comm, &c);
    if (rc || (rc = ism_abi_counts_arg(fn, c, recvcounts, "receive")))
        return rc;
    if (!displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements are NULL");
    int in_place = sendbuf == MPI_IN_PLACE;
    if (!in_place && (rc = ism_abi_buf_type(fn, c, sendtype, sendcount, "send", &sd)))
        return rc;
    if ((rc = ism_abi_buf_type(fn, c, recvtype, 0, "receive", &rd)))
        return rc;
    MPI_Request q;
    int ifl = ISM_ABI_NB_PASS;
    if (ism_abi_coll_movers_in_flight(c))
        ifl = ism_abi_isched_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                        recvtype, comm, &q);
    if (ifl != ISM_ABI_NB_PASS)
        return wait_started(c, ifl, q, fn);
    rc = ism_allgatherv(core_buf(sendbuf, sendcount == 0), sendcount, sd, recvbuf, recvcounts,
                        displs, rd, c);
    return done(c, rc, fn);
}
ISM_PMPI(Allgatherv)

int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    ism_comm *ic = ism_abi_comm(comm);
    if (ic && ic->is_inter && ism.initialized) {
        ism_nbc_drain(ic);
        return ism_abi_inter_exchange("MPI_Alltoallw", ic, sendbuf, sendcounts, sdispls,
                                      MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts,
                                      rdispls, MPI_DATATYPE_NULL, recvtypes, 1, 0, NULL);
    }
    const char *fn = "MPI_Alltoallw";
    ism_comm *c;
    int rc = comm_only(fn, comm, &c);
    if (rc)
        return rc;
    int n = c->size, in_place = sendbuf == MPI_IN_PLACE;
    if ((rc = ism_abi_counts_arg(fn, c, recvcounts, "receive")) ||
        (!in_place && (rc = ism_abi_counts_arg(fn, c, sendcounts, "send"))))
        return rc;
    if (!rdispls || !recvtypes || (!in_place && (!sdispls || !sendtypes)))
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements or types are NULL");
    MPI_Request q;
    int ifl = ISM_ABI_NB_PASS;
    if (ism_abi_coll_movers_in_flight(c))
        ifl = ism_abi_isched_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                       recvcounts, rdispls, recvtypes, comm, &q);
    if (ifl != ISM_ABI_NB_PASS)
        return wait_started(c, ifl, q, fn);
    ism_dt **t = calloc((size_t)n * 2 + 1, sizeof *t);
    if (!t)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; r < n && !rc; r++) {
        if (!(t[n + r] = ism_abi_dt(recvtypes[r])))
            rc = ism_abi_error(c, MPI_ERR_TYPE, fn, "receive type for rank %d is invalid", r);
        else if (!in_place && !(t[r] = ism_abi_dt(sendtypes[r])))
            rc = ism_abi_error(c, MPI_ERR_TYPE, fn, "send type for rank %d is invalid", r);
    }
    if (!rc)
        rc = done(c,
                  ism_alltoallw(in_place ? ISM_IN_PLACE : sendbuf, sendcounts, sdispls, t,
                                recvbuf, recvcounts, rdispls, t + n, c),
                  fn);
    free(t);
    return rc;
}
ISM_PMPI(Alltoallw)

/* Alltoall(v): element displacements become byte displacements with one type for all. */
static int alltoall_v(const char *fn, const void *sendbuf, const int *sendcounts,
                      const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                      const int *recvcounts, const int *rdispls, MPI_Datatype recvtype,
                      MPI_Comm comm)
{
    ism_comm *ic = ism_abi_comm(comm);
    if (ic && ic->is_inter && ism.initialized) {
        ism_nbc_drain(ic);
        return ism_abi_inter_exchange(fn, ic, sendbuf, sendcounts, sdispls, sendtype, NULL,
                                      recvbuf, recvcounts, rdispls, recvtype, NULL, 0, 0, NULL);
    }
    ism_comm *c;
    ism_dt *sd = NULL, *rd = NULL;
    int rc = comm_only(fn, comm, &c);
    if (rc)
        return rc;
    int n = c->size, in_place = sendbuf == MPI_IN_PLACE;
    if ((rc = ism_abi_counts_arg(fn, c, recvcounts, "receive")) ||
        (!in_place && (rc = ism_abi_counts_arg(fn, c, sendcounts, "send"))))
        return rc;
    if (!rdispls || (!in_place && !sdispls))
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements are NULL");
    if ((rc = ism_abi_buf_type(fn, c, recvtype, 0, "receive", &rd)) ||
        (!in_place && (rc = ism_abi_buf_type(fn, c, sendtype, 0, "send", &sd))))
        return rc;
    MPI_Request q;
    int ifl = ISM_ABI_NB_PASS;
    if (ism_abi_coll_movers_in_flight(c))
        ifl = ism_abi_isched_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                       recvcounts, rdispls, recvtype, comm, &q);
    if (ifl != ISM_ABI_NB_PASS)
        return wait_started(c, ifl, q, fn);
    /* 64-bit: a displacement times the extent passes INT_MAX well before the counts do */
    int64_t *w = malloc(sizeof(int64_t) * 4 * (size_t)n + 1);
    ism_dt **t = malloc(sizeof *t * 2 * (size_t)n + 1);
    if (!w || !t) {
        free(w);
        free(t);
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int r = 0; r < n; r++) {
        w[r] = in_place ? 0 : sendcounts[r];
        w[n + r] = in_place ? 0 : (int64_t)sdispls[r] * sd->extent;
        w[2 * n + r] = recvcounts[r];
        w[3 * n + r] = (int64_t)rdispls[r] * rd->extent;
        t[r] = sd;
        t[n + r] = rd;
    }
    rc = ism_alltoallw64(in_place ? ISM_IN_PLACE : sendbuf, w, w + n, t, recvbuf, w + 2 * n,
                         w + 3 * n, t + n, c);
    free(w);
    free(t);
    return done(c, rc, fn);
}

int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall_v("MPI_Alltoallv", sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                      recvcounts, rdispls, recvtype, comm);
}
ISM_PMPI(Alltoallv)

int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    ism_comm *c;
    int rc = comm_only("MPI_Alltoall", comm, &c);
    if (rc)
        return rc;
    if (!c->is_inter && sendcount >= 0 && recvcount >= 0) {
        /* the coll layer, when an algorithm of ours is chosen; errors are the v-form's */
        int ip = sendbuf == MPI_IN_PLACE;
        ism_dt *sd = ip ? NULL : ism_abi_dt(sendtype), *rd = ism_abi_dt(recvtype);
        if (rd && (ip || (sd && (size_t)sendcount * (size_t)sd->size ==
                                    (size_t)recvcount * (size_t)rd->size))) {
            rc = ism_coll_alltoall(core_buf(sendbuf, sendcount == 0), sendcount, sd, recvbuf,
                                   recvcount, rd, c);
            if (rc != ISM_COLL_PASS)
                return done(c, rc, "MPI_Alltoall");
        }
    }
    int *s = uniform(c->size, sendcount), *r = uniform(c->size, recvcount);
    if (!s || !r) {
        free(s);
        free(r);
        return ism_abi_error(c, MPI_ERR_NO_MEM, "MPI_Alltoall", "out of memory");
    }
    rc = alltoall_v("MPI_Alltoall", sendbuf, s, s + c->size, sendtype, recvbuf, r, r + c->size,
                    recvtype, comm);
    free(s);
    free(r);
    return rc;
}
ISM_PMPI(Alltoall)

/* ---- reduce-scatter and prefix reductions ---- */

static int red_args(const char *fn, MPI_Comm comm, MPI_Datatype dt, MPI_Op op, ism_comm **c,
                    ism_dt **d, ism_op **o)
{
    int rc = comm_only(fn, comm, c);
    if (rc || (rc = ism_abi_buf_type(fn, *c, dt, 0, "", d)))
        return rc;
    *o = ism_abi_op(op);
    return *o ? 0 : ism_abi_error(*c, MPI_ERR_OP, fn, "invalid op");
}

/* On an intercommunicator: the local group's int counts, widened for the 64-bit core;
 * started in flight and waited for. */
static int inter_reduce_scatter(const void *sbuf, void *rbuf, const int *counts, ism_dt *d,
                                ism_op *o, ism_comm *c)
{
    int64_t *w = malloc(sizeof(int64_t) * (size_t)(c->local_size + 1));
    for (int r = 0; w && r < c->local_size; r++)
        w[r] = counts[r];
    ism_req *q = NULL;
    int rc = w ? ism_coll_inter_ireduce_scatter(sbuf, rbuf, w, d, o, c, &q) : ISM_ERR_NO_MEM;
    free(w);
    return rc ? rc : ism_coll_nb_wait(q);
}

int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    const char *fn = "MPI_Reduce_scatter";
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    int rc = red_args(fn, comm, datatype, op, &c, &d, &o);
    if (rc ||
        (rc = counts_n(fn, c, recvcounts, c->is_inter ? c->local_size : c->size, "receive")))
        return rc;
    if (c->is_inter && sendbuf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    if (all_zero(recvcounts, c->size) && moves_nothing(c, 0, d))
        return MPI_SUCCESS;
    const void *sb = core_buf(sendbuf, all_zero(recvcounts, c->size));
    if (c->is_inter)
        return done(c, inter_reduce_scatter(sendbuf, recvbuf, recvcounts, d, o, c), fn);
    rc = ism_coll_reduce_scatter(sb, recvbuf, recvcounts, d, o, c);
    if (rc == ISM_COLL_PASS)
        rc = ism_reduce_scatter(sb, recvbuf, recvcounts, d, o, c);
    return done(c, rc, fn);
}
ISM_PMPI(Reduce_scatter)

int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    const char *fn = "MPI_Reduce_scatter_block";
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    int rc = red_args(fn, comm, datatype, op, &c, &d, &o);
    if (rc)
        return rc;
    if (recvcount < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "count %d is negative", recvcount);
    if (c->is_inter && sendbuf == MPI_IN_PLACE)
        return done(c, MPI_ERR_BUFFER, fn);
    if (moves_nothing(c, recvcount, d))
        return MPI_SUCCESS;
    int n = c->is_inter ? c->local_size : c->size;
    int *cd = uniform(n, recvcount);
    if (!cd)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    if (c->is_inter && sendbuf == MPI_IN_PLACE) {
        rc = MPI_ERR_BUFFER;
    } else {
        const void *sb = core_buf(sendbuf, recvcount == 0);
        if (c->is_inter) {
            rc = inter_reduce_scatter(sendbuf, recvbuf, cd, d, o, c);
        } else {
            rc = ism_coll_reduce_scatter(sb, recvbuf, cd, d, o, c);
            if (rc == ISM_COLL_PASS)
                rc = ism_reduce_scatter(sb, recvbuf, cd, d, o, c);
        }
    }
    free(cd);
    return done(c, rc, fn);
}
ISM_PMPI(Reduce_scatter_block)

static int scan(const char *fn, const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, int exclusive)
{
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    int rc = red_args(fn, comm, datatype, op, &c, &d, &o);
    if (rc)
        return rc;
    if (count < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    if (moves_nothing(c, count, d))
        return MPI_SUCCESS;
    const void *sb = core_buf(sendbuf, count == 0);
    rc = ism_coll_scan(sb, recvbuf, count, d, o, exclusive, c);
    if (rc == ISM_COLL_PASS)
        rc = ism_scan(sb, recvbuf, count, d, o, exclusive, c);
    return done(c, rc, fn);
}

int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm)
{
    return scan("MPI_Scan", sendbuf, recvbuf, count, datatype, op, comm, 0);
}
ISM_PMPI(Scan)

int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm)
{
    return scan("MPI_Exscan", sendbuf, recvbuf, count, datatype, op, comm, 1);
}
ISM_PMPI(Exscan)

/* How many entries the per-rank vectors of a collective on comm have: the group size,
 * on an intercommunicator the remote group's (local = 1: the local group's, as for the
 * receive counts of a reduce-scatter); 0 where they are not significant (root >= 0 or
 * MPI_ROOT/MPI_PROC_NULL given and the caller is not the root) and for an invalid
 * handle, which the collective itself then reports. */
int ism_abi_comm_one_site(MPI_Comm comm)
{
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    return c && c->all_local && !c->is_inter;
}

int ism_abi_comm_peers(MPI_Comm comm, int local, int root)
{
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    if (!c)
        return 0;
    if (root != -1 && (c->is_inter ? root != MPI_ROOT : root != c->rank))
        return 0;
    return c->is_inter && local ? c->local_size : c->size;
}
