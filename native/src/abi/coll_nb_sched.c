/* coll_nb_sched.c (abi): MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast, MPI_Ibarrier,
 * MPI_Iallgather, MPI_Iscan, MPI_Iexscan and MPI_Ireduce_scatter(_block) as
 * collectives in flight (coll/nb.c), several of which progress together on one
 * communicator. Each checks its arguments as its blocking form does (an error is raised at
 * the call) and starts the collective; where that engine does not take it (coll.h says
 * where), it returns ISM_ABI_NB_PASS and the generated entry point (coll_nb_gen.c) starts
 * the coroutine that runs the blocking form instead.
 */
#include <stdlib.h>

#include "abi.h"
#include "../coll/coll.h"

/* The checks every one of them makes: communicator, request, type and count. */
static int args(const char *fn, MPI_Comm comm, MPI_Datatype dt, int count, MPI_Request *request,
                ism_comm **c, ism_dt **d)
{
    int rc = ism_abi_nbc_comm(fn, comm, request, c);
    if (rc)
        return rc;
    if ((*c)->is_inter)
        return ISM_ABI_NB_PASS; /* the coroutine's checks and algorithm */
    if (!(*d = ism_abi_dt(dt)))
        return ism_abi_error(*c, MPI_ERR_TYPE, fn, "invalid or unsupported datatype");
    if (count < 0)
        return ism_abi_error(*c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    return 0;
}

static int root_ok(const char *fn, ism_comm *c, int root)
{
    if (root < 0 || root >= c->size)
        return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the communicator (size %d)",
                             root, c->size);
    return 0;
}

static int op_of(const char *fn, ism_comm *c, MPI_Op op, ism_op **o)
{
    if (!(*o = ism_abi_op(op)))
        return ism_abi_error(c, MPI_ERR_OP, fn, "invalid or unsupported op");
    return 0;
}

/* The same for a reduction, with its op. */
static int red_args(const char *fn, MPI_Comm comm, MPI_Datatype dt, int count, MPI_Op op,
                    MPI_Request *request, ism_comm **c, ism_dt **d, ism_op **o)
{
    int rc = args(fn, comm, dt, count, request, c, d);
    return rc ? rc : op_of(fn, *c, op, o);
}

/* The engine's answer: started (the request given), not taken, or an error. */
static int started(const char *fn, ism_comm *c, int rc, ism_req *r, MPI_Request *request)
{
    if (rc == ISM_COLL_PASS)
        return ISM_ABI_NB_PASS;
    if (rc)
        return ism_abi_nbc_error(c, rc, fn);
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

static int iscan(const char *fn, const void *sendbuf, void *recvbuf, int count,
                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                 int exclusive)
{
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    ism_req *r = NULL;
    int rc = red_args(fn, comm, datatype, count, op, request, &c, &d, &o);
    if (rc)
        return rc;
    rc = ism_coll_iscan(sendbuf, recvbuf, count, d, o, exclusive,
                        c, &r);
    return started(fn, c, rc, r, request);
}

int ism_abi_isched_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return iscan("MPI_Iscan", sendbuf, recvbuf, count, datatype, op, comm, request, 0);
}

int ism_abi_isched_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return iscan("MPI_Iexscan", sendbuf, recvbuf, count, datatype, op, comm, request, 1);
}

int ism_abi_isched_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iallreduce";
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    ism_req *r = NULL;
    int rc = red_args(fn, comm, datatype, count, op, request, &c, &d, &o);
    if (rc)
        return rc;
    rc = ism_coll_iallreduce(sendbuf, recvbuf, count, d, o, c, &r);
    return started(fn, c, rc, r, request);
}

int ism_abi_isched_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ireduce";
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    ism_req *r = NULL;
    int rc = red_args(fn, comm, datatype, count, op, request, &c, &d, &o);
    if (rc || (rc = root_ok(fn, c, root)))
        return rc;
    if (sendbuf == MPI_IN_PLACE && c->rank != root)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is only allowed at the root");
    rc = ism_coll_ireduce(sendbuf, recvbuf, count, d, o, root, c,
                          &r);
    return started(fn, c, rc, r, request);
}

int ism_abi_isched_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                         MPI_Request *request)
{
    static const char fn[] = "MPI_Ibcast";
    ism_comm *c;
    ism_dt *d;
    ism_req *r = NULL;
    int rc = args(fn, comm, datatype, count, request, &c, &d);
    if (rc || (rc = root_ok(fn, c, root)))
        return rc;
    rc = ism_coll_ibcast(buffer, count, d, root, c, &r);
    return started(fn, c, rc, r, request);
}

int ism_abi_isched_barrier(MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ibarrier";
    ism_comm *c;
    ism_req *r = NULL;
    int rc = ism_abi_nbc_comm(fn, comm, request, &c);
    if (rc)
        return rc;
    if (c->is_inter)
        return ISM_ABI_NB_PASS;
    rc = ism_coll_ibarrier(c, &r);
    return started(fn, c, rc, r, request);
}

int ism_abi_isched_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    static const char fn[] = "MPI_Iallgather";
    ism_comm *c;
    ism_dt *d, *sd = NULL;
    ism_req *r = NULL;
    int rc = args(fn, comm, recvtype, recvcount, request, &c, &d);
    if (rc)
        return rc;
    if (sendbuf != MPI_IN_PLACE) {
        if (!(sd = ism_abi_dt(sendtype)))
            return ism_abi_error(c, MPI_ERR_TYPE, fn, "invalid send datatype");
        if ((size_t)sendcount * (size_t)sd->size != (size_t)recvcount * (size_t)d->size)
            return ism_abi_error(c, MPI_ERR_TRUNCATE, fn,
                                 "send and receive sizes differ (%d x %lld vs %d x %lld bytes)",
                                 sendcount, (long long)sd->size, recvcount, (long long)d->size);
    }
    rc = ism_coll_iallgather(sendbuf, sendcount, sd, recvbuf, recvcount, d,
                             c, &r);
    return started(fn, c, rc, r, request);
}

/* counts: one per rank (NULL: every rank's is count) */
static int iredscat(const char *fn, const void *sendbuf, void *recvbuf, const int *counts,
                    int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                    MPI_Request *request)
{
    ism_comm *c;
    ism_dt *d;
    ism_op *o;
    ism_req *r = NULL;
    int rc = red_args(fn, comm, datatype, counts ? 0 : count, op, request, &c, &d, &o);
    if (rc)
        return rc;
    if (counts) {
        for (int i = 0; i < c->size; i++)
            if (counts[i] < 0)
                return ism_abi_error(c, MPI_ERR_COUNT, fn,
                                     "receive count for rank %d is negative (%d)", i, counts[i]);
        rc = ism_coll_ireduce_scatter(sendbuf, recvbuf, counts,
                                      d, o, c, &r);
    } else {
        int *same = malloc(sizeof(int) * (size_t)c->size);
        if (!same)
            return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
        for (int i = 0; i < c->size; i++)
            same[i] = count;
        rc = ism_coll_ireduce_scatter(sendbuf, recvbuf, same, d,
                                      o, c, &r);
        free(same);
    }
    return started(fn, c, rc, r, request);
}

int ism_abi_isched_reduce_scatter(const void *sendbuf, void *recvbuf, const int *recvcounts,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request *request)
{
    if (!recvcounts) /* the coroutine's checks say so */
        return ISM_ABI_NB_PASS;
    return iredscat("MPI_Ireduce_scatter", sendbuf, recvbuf, recvcounts, 0, datatype, op, comm,
                    request);
}

int ism_abi_isched_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                        MPI_Request *request)
{
    return iredscat("MPI_Ireduce_scatter_block", sendbuf, recvbuf, NULL, recvcount, datatype, op,
                    comm, request);
}
