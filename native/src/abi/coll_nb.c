/* coll_nb.c (abi): the nonblocking and persistent collectives' entry points. Each MPI_I<x>
 * checks its communicator, copies its arguments and starts a coroutine (core/nbc.c) that
 * runs MPI_<x> itself, so the blocking and nonblocking forms share one algorithm and one
 * set of argument checks; an error found inside is returned by the MPI_Wait/MPI_Test that
 * completes the request. Each MPI_<x>_init builds the same argument block and hands it to
 * coll_persist.c, which starts the same body on every MPI_Start. Buffers and count,
 * displacement and type arrays must stay untouched until completion (for the persistent
 * forms: until the request is freed), as MPI requires. (Generated once from the list of
 * collectives; edit freely.)
 */
#include <string.h>

#include "abi.h"

/* MPI lets a program free a datatype while a nonblocking collective uses it ("pending
 * operations complete normally"): the coroutine holds a reference to each derived type it
 * was given (t1, t2; the w-forms' type arrays are not held) until it returns, and the
 * handle lookup accepts those freed types inside their own coroutine (ism_abi_nbc_kept).
 * A persistent collective's run names its template instead (owner), which holds all its
 * types, the w-forms' arrays included, until the request is freed (coll_persist.c). */
typedef struct {
    int (*body)(void *);
    ism_pcoll *owner;
    int n;
    ism_dt *kept[2];
    _Alignas(16) unsigned char args[192];
} kept_args;

static int run_kept(void *p)
{
    kept_args *k = p;
    int rc = k->body(k->args);
    for (int i = 0; i < k->n; i++)
        ism_dt_release(k->kept[i]);
    k->n = 0;
    if (k->owner) {
        ism_pcoll *o = k->owner;
        k->owner = NULL;
        ism_abi_pcoll_ended(o);
    }
    return rc;
}

int ism_abi_nbc_kept(const ism_dt *d)
{
    const kept_args *k = ism_nbc_cur_args();
    if (!k)
        return 0;
    for (int i = 0; i < k->n; i++)
        if (k->kept[i] == d)
            return 1;
    return k->owner && ism_abi_pcoll_holds(k->owner, d);
}

int ism_abi_nbc_run(ism_comm *c, int (*body)(void *), const void *args, size_t len, ism_dt *t1,
                    ism_dt *t2, ism_pcoll *owner, ism_req **out)
{
    kept_args k = {body, owner, 0, {NULL, NULL}, {0}};
    if (len > sizeof k.args)
        return MPI_ERR_INTERN;
    memcpy(k.args, args, len);
    ism_dt *ts[2] = {t1, t2};
    for (int i = 0; i < 2; i++) {
        ism_dt *d = ts[i];
        if (d && d->x && (k.n == 0 || k.kept[0] != d)) {
            ism_dt_retain(d);
            k.kept[k.n++] = d;
        }
    }
    int rc = ism_nbc_start(c, run_kept, &k, sizeof k, out);
    if (rc)
        for (int i = 0; i < k.n; i++)
            ism_dt_release(k.kept[i]);
    return rc;
}

int ism_abi_nbc_comm(const char *fn, MPI_Comm comm, MPI_Request *request, ism_comm **c)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (!request)
        return ism_abi_error(*c, MPI_ERR_REQUEST, fn, "the request argument is NULL");
    return MPI_SUCCESS;
}

int ism_abi_nbc_error(ism_comm *c, int rc, const char *fn)
{
    return ism_abi_error(c, rc, fn,
                         rc == MPI_ERR_NO_MEM ? "out of memory, or more than 4096 "
                                                "nonblocking collectives pending"
                                              : "could not start the collective");
}

static int start(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                 size_t len, MPI_Request *request, MPI_Datatype t1, MPI_Datatype t2)
{
    ism_comm *c;
    ism_req *r;
    int rc = ism_abi_nbc_comm(fn, comm, request, &c);
    if (rc)
        return rc;
    rc = ism_abi_nbc_run(c, body, args, len, ism_abi_dt_any(t1), ism_abi_dt_any(t2), NULL, &r);
    if (rc)
        return ism_abi_nbc_error(c, rc, fn);
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

int ism_abi_nbc_start_types(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                            size_t len, MPI_Request *request, MPI_Datatype t1, MPI_Datatype t2)
{
    return start(fn, comm, body, args, len, request, t1, t2);
}

/* For other nonblocking operations built the same way (MPI_Comm_idup). */
int ism_abi_nbc_start(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                      size_t len, MPI_Request *request)
{
    return start(fn, comm, body, args, len, request, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL);
}

typedef struct {
    MPI_Comm comm;
} a_ibarrier;

static int run_ibarrier(void *p)
{
    a_ibarrier *a = p;
    return PMPI_Barrier(a->comm);
}

int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    a_ibarrier a = {comm};
    return start("MPI_Ibarrier", comm, run_ibarrier, &a, sizeof a, request,
                 MPI_DATATYPE_NULL, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ibarrier)

int PMPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ibarrier a = {comm};
    return ism_abi_pcoll_init("MPI_Barrier_init", comm, &a.comm, run_ibarrier, &a, sizeof a, info, request,
                              MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Barrier_init)

typedef struct {
    void *buffer;
    int count;
    MPI_Datatype datatype;
    int root;
    MPI_Comm comm;
} a_ibcast;

static int run_ibcast(void *p)
{
    a_ibcast *a = p;
    return PMPI_Bcast(a->buffer, a->count, a->datatype, a->root, a->comm);
}

int PMPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
    a_ibcast a = {buffer, count, datatype, root, comm};
    return start("MPI_Ibcast", comm, run_ibcast, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ibcast)

int PMPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ibcast a = {buffer, count, datatype, root, comm};
    return ism_abi_pcoll_init("MPI_Bcast_init", comm, &a.comm, run_ibcast, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Bcast_init)

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} a_ireduce;

static int run_ireduce(void *p)
{
    a_ireduce *a = p;
    return PMPI_Reduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->root, a->comm);
}

int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    a_ireduce a = {sendbuf, recvbuf, count, datatype, op, root, comm};
    return start("MPI_Ireduce", comm, run_ireduce, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ireduce)

int PMPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ireduce a = {sendbuf, recvbuf, count, datatype, op, root, comm};
    return ism_abi_pcoll_init("MPI_Reduce_init", comm, &a.comm, run_ireduce, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Reduce_init)

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
} a_iallreduce;

static int run_iallreduce(void *p)
{
    a_iallreduce *a = p;
    return PMPI_Allreduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->comm);
}

int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    a_iallreduce a = {sendbuf, recvbuf, count, datatype, op, comm};
    return start("MPI_Iallreduce", comm, run_iallreduce, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Iallreduce)

int PMPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iallreduce a = {sendbuf, recvbuf, count, datatype, op, comm};
    return ism_abi_pcoll_init("MPI_Allreduce_init", comm, &a.comm, run_iallreduce, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Allreduce_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    int root;
    MPI_Comm comm;
} a_igather;

static int run_igather(void *p)
{
    a_igather *a = p;
    return PMPI_Gather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->root, a->comm);
}

int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    a_igather a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm};
    return start("MPI_Igather", comm, run_igather, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Igather)

int PMPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_igather a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm};
    return ism_abi_pcoll_init("MPI_Gather_init", comm, &a.comm, run_igather, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Gather_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *displs;
    MPI_Datatype recvtype;
    int root;
    MPI_Comm comm;
} a_igatherv;

static int run_igatherv(void *p)
{
    a_igatherv *a = p;
    return PMPI_Gatherv(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcounts, a->displs, a->recvtype, a->root, a->comm);
}

int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *displs, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    a_igatherv a = {sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm};
    return start("MPI_Igatherv", comm, run_igatherv, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Igatherv)

int PMPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *displs, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_igatherv a = {sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm};
    return ism_abi_pcoll_init("MPI_Gatherv_init", comm, &a.comm, run_igatherv, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Gatherv_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    int root;
    MPI_Comm comm;
} a_iscatter;

static int run_iscatter(void *p)
{
    a_iscatter *a = p;
    return PMPI_Scatter(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->root, a->comm);
}

int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    a_iscatter a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm};
    return start("MPI_Iscatter", comm, run_iscatter, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Iscatter)

int PMPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iscatter a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm};
    return ism_abi_pcoll_init("MPI_Scatter_init", comm, &a.comm, run_iscatter, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Scatter_init)

typedef struct {
    const void *sendbuf;
    const int *sendcounts;
    const int *displs;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    int root;
    MPI_Comm comm;
} a_iscatterv;

static int run_iscatterv(void *p)
{
    a_iscatterv *a = p;
    return PMPI_Scatterv(a->sendbuf, a->sendcounts, a->displs, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->root, a->comm);
}

int PMPI_Iscatterv(const void *sendbuf, const int *sendcounts, const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    a_iscatterv a = {sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm};
    return start("MPI_Iscatterv", comm, run_iscatterv, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Iscatterv)

int PMPI_Scatterv_init(const void *sendbuf, const int *sendcounts, const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iscatterv a = {sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm};
    return ism_abi_pcoll_init("MPI_Scatterv_init", comm, &a.comm, run_iscatterv, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Scatterv_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_iallgather;

static int run_iallgather(void *p)
{
    a_iallgather *a = p;
    return PMPI_Allgather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->comm);
}

int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_iallgather a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return start("MPI_Iallgather", comm, run_iallgather, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Iallgather)

int PMPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iallgather a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Allgather_init", comm, &a.comm, run_iallgather, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Allgather_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *displs;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_iallgatherv;

static int run_iallgatherv(void *p)
{
    a_iallgatherv *a = p;
    return PMPI_Allgatherv(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcounts, a->displs, a->recvtype, a->comm);
}

int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *displs, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_iallgatherv a = {sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm};
    return start("MPI_Iallgatherv", comm, run_iallgatherv, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Iallgatherv)

int PMPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *displs, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iallgatherv a = {sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Allgatherv_init", comm, &a.comm, run_iallgatherv, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Allgatherv_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_ialltoall;

static int run_ialltoall(void *p)
{
    a_ialltoall *a = p;
    return PMPI_Alltoall(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->comm);
}

int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_ialltoall a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return start("MPI_Ialltoall", comm, run_ialltoall, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Ialltoall)

int PMPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ialltoall a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Alltoall_init", comm, &a.comm, run_ialltoall, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Alltoall_init)

typedef struct {
    const void *sendbuf;
    const int *sendcounts;
    const int *sdispls;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *rdispls;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_ialltoallv;

static int run_ialltoallv(void *p)
{
    a_ialltoallv *a = p;
    return PMPI_Alltoallv(a->sendbuf, a->sendcounts, a->sdispls, a->sendtype, a->recvbuf, a->recvcounts, a->rdispls, a->recvtype, a->comm);
}

int PMPI_Ialltoallv(const void *sendbuf, const int *sendcounts, const int *sdispls, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_ialltoallv a = {sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm};
    return start("MPI_Ialltoallv", comm, run_ialltoallv, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Ialltoallv)

int PMPI_Alltoallv_init(const void *sendbuf, const int *sendcounts, const int *sdispls, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ialltoallv a = {sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Alltoallv_init", comm, &a.comm, run_ialltoallv, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Alltoallv_init)

typedef struct {
    const void *sendbuf;
    const int *sendcounts;
    const int *sdispls;
    const MPI_Datatype *sendtypes;
    void *recvbuf;
    const int *recvcounts;
    const int *rdispls;
    const MPI_Datatype *recvtypes;
    MPI_Comm comm;
} a_ialltoallw;

static int run_ialltoallw(void *p)
{
    a_ialltoallw *a = p;
    return PMPI_Alltoallw(a->sendbuf, a->sendcounts, a->sdispls, a->sendtypes, a->recvbuf, a->recvcounts, a->rdispls, a->recvtypes, a->comm);
}

int PMPI_Ialltoallw(const void *sendbuf, const int *sendcounts, const int *sdispls, const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts, const int *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm, MPI_Request *request)
{
    a_ialltoallw a = {sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm};
    return start("MPI_Ialltoallw", comm, run_ialltoallw, &a, sizeof a, request,
                 MPI_DATATYPE_NULL, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ialltoallw)

int PMPI_Alltoallw_init(const void *sendbuf, const int *sendcounts, const int *sdispls, const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts, const int *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ialltoallw a = {sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm};
    return ism_abi_pcoll_init("MPI_Alltoallw_init", comm, &a.comm, run_ialltoallw, &a, sizeof a, info, request,
                              MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, a.sendbuf == MPI_IN_PLACE ? NULL : sendtypes, recvtypes, 0);
}
ISM_PMPI(Alltoallw_init)

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    const int *recvcounts;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
} a_ireduce_scatter;

static int run_ireduce_scatter(void *p)
{
    a_ireduce_scatter *a = p;
    return PMPI_Reduce_scatter(a->sendbuf, a->recvbuf, a->recvcounts, a->datatype, a->op, a->comm);
}

int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    a_ireduce_scatter a = {sendbuf, recvbuf, recvcounts, datatype, op, comm};
    return start("MPI_Ireduce_scatter", comm, run_ireduce_scatter, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ireduce_scatter)

int PMPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ireduce_scatter a = {sendbuf, recvbuf, recvcounts, datatype, op, comm};
    return ism_abi_pcoll_init("MPI_Reduce_scatter_init", comm, &a.comm, run_ireduce_scatter, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Reduce_scatter_init)

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    int recvcount;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
} a_ireduce_scatter_block;

static int run_ireduce_scatter_block(void *p)
{
    a_ireduce_scatter_block *a = p;
    return PMPI_Reduce_scatter_block(a->sendbuf, a->recvbuf, a->recvcount, a->datatype, a->op, a->comm);
}

int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    a_ireduce_scatter_block a = {sendbuf, recvbuf, recvcount, datatype, op, comm};
    return start("MPI_Ireduce_scatter_block", comm, run_ireduce_scatter_block, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ireduce_scatter_block)

int PMPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ireduce_scatter_block a = {sendbuf, recvbuf, recvcount, datatype, op, comm};
    return ism_abi_pcoll_init("MPI_Reduce_scatter_block_init", comm, &a.comm, run_ireduce_scatter_block, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Reduce_scatter_block_init)

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
} a_iscan;

static int run_iscan(void *p)
{
    a_iscan *a = p;
    return PMPI_Scan(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->comm);
}

int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    a_iscan a = {sendbuf, recvbuf, count, datatype, op, comm};
    return start("MPI_Iscan", comm, run_iscan, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Iscan)

int PMPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iscan a = {sendbuf, recvbuf, count, datatype, op, comm};
    return ism_abi_pcoll_init("MPI_Scan_init", comm, &a.comm, run_iscan, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Scan_init)

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
} a_iexscan;

static int run_iexscan(void *p)
{
    a_iexscan *a = p;
    return PMPI_Exscan(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->comm);
}

int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    a_iexscan a = {sendbuf, recvbuf, count, datatype, op, comm};
    return start("MPI_Iexscan", comm, run_iexscan, &a, sizeof a, request,
                 a.datatype, MPI_DATATYPE_NULL);
}
ISM_PMPI(Iexscan)

int PMPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_iexscan a = {sendbuf, recvbuf, count, datatype, op, comm};
    return ism_abi_pcoll_init("MPI_Exscan_init", comm, &a.comm, run_iexscan, &a, sizeof a, info, request,
                              a.datatype, MPI_DATATYPE_NULL, NULL, NULL, 0);
}
ISM_PMPI(Exscan_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_ineighbor_allgather;

static int run_ineighbor_allgather(void *p)
{
    a_ineighbor_allgather *a = p;
    return PMPI_Neighbor_allgather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->comm);
}

int PMPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_ineighbor_allgather a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return start("MPI_Ineighbor_allgather", comm, run_ineighbor_allgather, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Ineighbor_allgather)

int PMPI_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ineighbor_allgather a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Neighbor_allgather_init", comm, &a.comm, run_ineighbor_allgather, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Neighbor_allgather_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *displs;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_ineighbor_allgatherv;

static int run_ineighbor_allgatherv(void *p)
{
    a_ineighbor_allgatherv *a = p;
    return PMPI_Neighbor_allgatherv(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcounts, a->displs, a->recvtype, a->comm);
}

int PMPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *displs, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_ineighbor_allgatherv a = {sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm};
    return start("MPI_Ineighbor_allgatherv", comm, run_ineighbor_allgatherv, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Ineighbor_allgatherv)

int PMPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *displs, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ineighbor_allgatherv a = {sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Neighbor_allgatherv_init", comm, &a.comm, run_ineighbor_allgatherv, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Neighbor_allgatherv_init)

typedef struct {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_ineighbor_alltoall;

static int run_ineighbor_alltoall(void *p)
{
    a_ineighbor_alltoall *a = p;
    return PMPI_Neighbor_alltoall(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype, a->comm);
}

int PMPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_ineighbor_alltoall a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return start("MPI_Ineighbor_alltoall", comm, run_ineighbor_alltoall, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Ineighbor_alltoall)

int PMPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ineighbor_alltoall a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Neighbor_alltoall_init", comm, &a.comm, run_ineighbor_alltoall, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Neighbor_alltoall_init)

typedef struct {
    const void *sendbuf;
    const int *sendcounts;
    const int *sdispls;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *rdispls;
    MPI_Datatype recvtype;
    MPI_Comm comm;
} a_ineighbor_alltoallv;

static int run_ineighbor_alltoallv(void *p)
{
    a_ineighbor_alltoallv *a = p;
    return PMPI_Neighbor_alltoallv(a->sendbuf, a->sendcounts, a->sdispls, a->sendtype, a->recvbuf, a->recvcounts, a->rdispls, a->recvtype, a->comm);
}

int PMPI_Ineighbor_alltoallv(const void *sendbuf, const int *sendcounts, const int *sdispls, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    a_ineighbor_alltoallv a = {sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm};
    return start("MPI_Ineighbor_alltoallv", comm, run_ineighbor_alltoallv, &a, sizeof a, request,
                 a.sendtype, a.recvtype);
}
ISM_PMPI(Ineighbor_alltoallv)

int PMPI_Neighbor_alltoallv_init(const void *sendbuf, const int *sendcounts, const int *sdispls, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ineighbor_alltoallv a = {sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm};
    return ism_abi_pcoll_init("MPI_Neighbor_alltoallv_init", comm, &a.comm, run_ineighbor_alltoallv, &a, sizeof a, info, request,
                              a.sendtype, a.recvtype, NULL, NULL, 0);
}
ISM_PMPI(Neighbor_alltoallv_init)

typedef struct {
    const void *sendbuf;
    const int *sendcounts;
    const MPI_Aint *sdispls;
    const MPI_Datatype *sendtypes;
    void *recvbuf;
    const int *recvcounts;
    const MPI_Aint *rdispls;
    const MPI_Datatype *recvtypes;
    MPI_Comm comm;
} a_ineighbor_alltoallw;

static int run_ineighbor_alltoallw(void *p)
{
    a_ineighbor_alltoallw *a = p;
    return PMPI_Neighbor_alltoallw(a->sendbuf, a->sendcounts, a->sdispls, a->sendtypes, a->recvbuf, a->recvcounts, a->rdispls, a->recvtypes, a->comm);
}

int PMPI_Ineighbor_alltoallw(const void *sendbuf, const int *sendcounts, const MPI_Aint *sdispls, const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts, const MPI_Aint *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm, MPI_Request *request)
{
    a_ineighbor_alltoallw a = {sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm};
    return start("MPI_Ineighbor_alltoallw", comm, run_ineighbor_alltoallw, &a, sizeof a, request,
                 MPI_DATATYPE_NULL, MPI_DATATYPE_NULL);
}
ISM_PMPI(Ineighbor_alltoallw)

int PMPI_Neighbor_alltoallw_init(const void *sendbuf, const int *sendcounts, const MPI_Aint *sdispls, const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts, const MPI_Aint *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    a_ineighbor_alltoallw a = {sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm};
    return ism_abi_pcoll_init("MPI_Neighbor_alltoallw_init", comm, &a.comm, run_ineighbor_alltoallw, &a, sizeof a, info, request,
                              MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, sendtypes, recvtypes, 1);
}
ISM_PMPI(Neighbor_alltoallw_init)
