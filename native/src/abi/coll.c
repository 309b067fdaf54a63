/* coll.c (abi): collective entry points: argument checks, MPI_IN_PLACE, then the core's
 * two-level algorithms.
 */
#include "abi.h"

static int coll_args(const char *fn, MPI_Comm comm, MPI_Datatype dt, int count, ism_comm **c,
                     ism_dt **d)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    *d = ism_abi_dt(dt);
    if (!*d)
        return ism_abi_error(*c, MPI_ERR_TYPE, fn, "invalid or unsupported datatype");
    if (count < 0)
        return ism_abi_error(*c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    return 0;
}

static int root_arg(const char *fn, ism_comm *c, int root)
{
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
    int rc = ism_barrier(c);
    return rc ? ism_abi_error(c, rc, "MPI_Barrier", "barrier failed") : MPI_SUCCESS;
}
ISM_PMPI(Barrier)

int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    ism_comm *c;
    ism_dt *d;
    int rc = coll_args("MPI_Bcast", comm, datatype, count, &c, &d);
    if (rc || (rc = root_arg("MPI_Bcast", c, root)))
        return rc;
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
    if (sendbuf == MPI_IN_PLACE && c->rank != root)
        return ism_abi_error(c, MPI_ERR_BUFFER, "MPI_Reduce",
                             "MPI_IN_PLACE is only allowed at the root");
    rc = ism_reduce(sendbuf == MPI_IN_PLACE ? NULL : sendbuf, recvbuf, count, d, o, root, c);
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
    rc = ism_allreduce(sendbuf == MPI_IN_PLACE ? NULL : sendbuf, recvbuf, count, d, o, c);
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
    int rc = ism.be->reduce_local(inbuf, inoutbuf, count, d->v, o->v);
    return rc ? ism_abi_error(NULL, rc, "MPI_Reduce_local", "local reduction failed") : 0;
}
ISM_PMPI(Reduce_local)

int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
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
                                 "send and receive sizes differ (%d x %d vs %d x %d bytes)",
                                 sendcount, sd->size, recvcount, d->size);
    }
    rc = ism_allgather(sendbuf == MPI_IN_PLACE ? NULL : sendbuf, recvbuf, recvcount, d, c);
    return rc ? ism_abi_error(c, rc, "MPI_Allgather", "allgather failed") : 0;
}
ISM_PMPI(Allgather)
