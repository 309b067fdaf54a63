/* coll_nb_sched.c (abi): MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast, MPI_Ibarrier,
 * MPI_Iallgather(v), MPI_Iscan, MPI_Iexscan, MPI_Ireduce_scatter(_block), MPI_Igather(v),
 * MPI_Iscatter(v) and MPI_Ialltoall(v,w) as
 * collectives in flight (coll/nb.c), several of which progress together on one
 * communicator. Each checks its arguments as its blocking form does (an error is raised at
 * the call) and starts the collective; where that engine does not take it (coll.h says
 * where), it returns ISM_ABI_NB_PASS and the generated entry point (coll_nb_gen.c) starts
 * the coroutine that runs the blocking form instead. On an intercommunicator, the barrier,
 * the bcast, the two reductions and the data movers start in flight on its merged
 * communicator (coll/nb_inter.c, the data movers through coll_inter.c's checks).
 */
#include <limits.h>
#include <stdlib.h>

#include "abi.h"
#include "../coll/coll.h"

/* The communicator and the request; an intercommunicator is the coroutine's (its checks
 * and algorithm) where the caller has not taken it first. */
static int intra(const char *fn, MPI_Comm comm, MPI_Request *request, ism_comm **c)
{
    int rc = ism_abi_nbc_comm(fn, comm, request, c);
    return rc ? rc : (*c)->is_inter ? ISM_ABI_NB_PASS : 0;
}

/* The checks every one of them makes: communicator, request, type and count. */
static int args(const char *fn, MPI_Comm comm, MPI_Datatype dt, int count, MPI_Request *request,
                ism_comm **c, ism_dt **d)
{
    int rc = intra(fn, comm, request, c);
    if (rc)
        return rc;
    if (!(*d = ism_abi_dt(dt)))
        return ism_abi_error(*c, MPI_ERR_TYPE, fn, "invalid or unsupported datatype");
    if (count < 0)
        return ism_abi_error(*c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    return 0;
}

static int started(const char *fn, ism_comm *c, int rc, ism_req *r, MPI_Request *request);

/* ---- on an intercommunicator: in flight on its merged communicator (coll/nb_inter.c) ---- */

/* The intercommunicator named, or NULL (an intracommunicator, or an error in *rc). */
static ism_comm *inter(const char *fn, MPI_Comm comm, MPI_Request *request, int *rc)
{
    ism_comm *c = NULL;
    *rc = ism_abi_nbc_comm(fn, comm, request, &c);
    return !*rc && c->is_inter ? c : NULL;
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
    int rc;
    if ((c = inter(fn, comm, request, &rc))) {
        if ((rc = ism_abi_inter_args(fn, c, datatype, count, op, NULL, sendbuf, &d, &o)))
            return rc;
        rc = ism_coll_inter_iallreduce(sendbuf, recvbuf, count, d, o, c, &r);
        return started(fn, c, rc, r, request);
    }
    if (rc)
        return rc;
    rc = red_args(fn, comm, datatype, count, op, request, &c, &d, &o);
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
    int rc;
    if ((c = inter(fn, comm, request, &rc))) {
        if ((rc = ism_abi_inter_args(fn, c, datatype, count, op, &root, sendbuf, &d, &o)))
            return rc;
        rc = ism_coll_inter_ireduce(sendbuf, recvbuf, count, d, o, root, c, &r);
        return started(fn, c, rc, r, request);
    }
    if (rc)
        return rc;
    rc = red_args(fn, comm, datatype, count, op, request, &c, &d, &o);
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
    int rc;
    if ((c = inter(fn, comm, request, &rc))) {
        if ((rc = ism_abi_inter_args(fn, c, datatype, count, MPI_OP_NULL, &root, NULL, &d,
                                     NULL)))
            return rc;
        rc = ism_coll_inter_ibcast(buffer, count, d, root, c, &r);
        return started(fn, c, rc, r, request);
    }
    if (rc)
        return rc;
    rc = args(fn, comm, datatype, count, request, &c, &d);
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
    rc = c->is_inter ? ism_coll_inter_ibarrier(c, &r) : ism_coll_ibarrier(c, &r);
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
    int rc;
    if ((c = inter(fn, comm, request, &rc))) { /* my block to every remote rank */
        int n = c->size, *cd = malloc(sizeof(int) * 2 * (size_t)n + 1);
        if (!cd)
            return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
        for (int j = 0; j < n; j++) {
            cd[j] = recvcount;
            cd[n + j] = j * recvcount;
        }
        rc = ism_abi_inter_allgather(fn, c, sendbuf, sendcount, sendtype, recvbuf, cd, cd + n,
                                     recvtype, request);
        free(cd);
        return rc;
    }
    if (rc)
        return rc;
    rc = args(fn, comm, recvtype, recvcount, request, &c, &d);
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
    int rc;
    if ((c = inter(fn, comm, request, &rc))) { /* the local group's counts */
        if ((rc = ism_abi_inter_args(fn, c, datatype, counts ? 0 : count, op, NULL, sendbuf,
                                     &d, &o)))
            return rc;
        int n = c->local_size;
        int64_t *v = malloc(sizeof *v * (size_t)(n + 1));
        if (!v)
            return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
        for (int i = 0; i < n; i++)
            if ((v[i] = counts ? counts[i] : count) < 0) {
                free(v);
                return ism_abi_error(c, MPI_ERR_COUNT, fn,
                                     "receive count for rank %d is negative (%d)", i, counts[i]);
            }
        rc = ism_coll_inter_ireduce_scatter(sendbuf, recvbuf, v, d, o, c, &r);
        free(v);
        return started(fn, c, rc, r, request);
    }
    if (rc || (rc = red_args(fn, comm, datatype, counts ? 0 : count, op, request, &c, &d, &o)))
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

/* ---- the data-movement collectives (coll/nb_move.c) ---- */

/* The vectors of an alltoallw in 64 bits: counts, byte displacements and types for each
 * side, all zero (and no type) where nothing moves. */
typedef struct {
    int64_t *scnt, *sdsp, *rcnt, *rdsp;
    ism_dt **st, **rt;
} wvec;

static int wvec_make(wvec *w, int n)
{
    int64_t *v = calloc(4 * (size_t)n + 1, sizeof *v);
    ism_dt **t = calloc(2 * (size_t)n + 1, sizeof *t);
    if (!v || !t) {
        free(v);
        free(t);
        return ISM_ERR_NO_MEM;
    }
    *w = (wvec){v, v + n, v + 2 * (size_t)n, v + 3 * (size_t)n, t, t + n};
    return 0;
}

static void wvec_free(wvec *w)
{
    free(w->scnt);
    free(w->st);
}

/* The alltoallw's start, with the vectors freed. */
static int wstart(const char *fn, ism_comm *c, const void *sbuf, void *rbuf, wvec *w, int root,
                  MPI_Request *request)
{
    ism_req *r = NULL;
    int rc = ism_coll_ialltoallw64(sbuf, w->scnt, w->sdsp, w->st, rbuf, w->rcnt, w->rdsp, w->rt,
                                   c, root, &r);
    wvec_free(w);
    return started(fn, c, rc, r, request);
}

/* A gatherv or scatterv on a communicator within one site: the vendor's (coll/nb_site.c),
 * from an int form only (every rank's vectors fit int, so every rank takes this road: a
 * _c form's may not, and runs the blocking one's road, coll_large.c). ISM_ABI_NB_PASS
 * where nb_site.c does not take it. */
static int rooted_site(const char *fn, int scatter, const void *one_buf, int one_n, ism_dt *one,
                       const void *many_buf, const int64_t *counts, const int64_t *displs,
                       ism_dt *many, int root, ism_comm *c, MPI_Request *request)
{
    ism_coll_site a;
    if (scatter)
        a = (ism_coll_site){.coll = ISM_SITE_SCATTERV, .n = c->size, .s = many_buf,
                            .r = (void *)(uintptr_t)one_buf, .rcount = one_n, .root = root,
                            .sdt = many, .rdt = one, .scnt = counts, .sdsp = displs};
    else
        a = (ism_coll_site){.coll = ISM_SITE_GATHERV, .n = c->size, .s = one_buf,
                            .r = (void *)(uintptr_t)many_buf, .scount = one_n, .root = root,
                            .sdt = one, .rdt = many, .rcnt = counts, .rdsp = displs};
    ism_req *r = NULL;
    int rc = ism_coll_isite(&a, c, &r); /* before started() reads r */
    return started(fn, c, rc, r, request);
}

/* Gatherv (scatter 0) or scatterv (1): one: the single buffer of every rank (send for
 * gather, receive for scatter); many: the root's vector side, with its counts and
 * displacements in elements. */
static int irooted(const char *fn, int scatter, const void *one_buf, int one_n,
                   MPI_Datatype one_t, const void *many_buf, const int *counts, const int *displs,
                   MPI_Datatype many_t, int root, ism_comm *c, MPI_Request *request)
{
    ism_dt *one, *many;
    int in_place = one_buf == MPI_IN_PLACE, n = c->size;
    int rc = ism_abi_rooted_checks(fn, c, root, in_place, one_t, one_n,
                                   scatter ? "receive" : "send", counts, displs, many_t,
                                   scatter ? "send" : "receive", &one, &many);
    if (rc)
        return rc;
    int64_t *v = c->rank == root ? malloc(sizeof *v * 2 * (size_t)n + 1) : NULL;
    if (c->rank == root && !v)
        return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
    for (int j = 0; v && j < n; j++) {
        v[j] = counts[j];
        v[n + j] = displs[j];
    }
    rc = c->all_local ? rooted_site(fn, scatter, one_buf, one_n, one, many_buf, v,
                                    v ? v + n : NULL, many, root, c, request)
                      : ISM_ABI_NB_PASS;
    if (rc == ISM_ABI_NB_PASS)
        rc = ism_abi_isched_rooted64(fn, scatter, one_buf, one_n, one, many_buf, v,
                                     v ? v + n : NULL, many, root, c, request);
    free(v);
    return rc;
}

int ism_abi_isched_rooted64(const char *fn, int scatter, const void *one_buf, int64_t one_n,
                            ism_dt *one, const void *many_buf, const int64_t *counts,
                            const int64_t *displs, ism_dt *many, int root, ism_comm *c,
                            MPI_Request *request)
{
    int in_place = one_buf == MPI_IN_PLACE, me_root = c->rank == root, n = c->size;
    wvec w;
    if (wvec_make(&w, n))
        return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
    /* the root's own block stays in place, or moves by a local copy */
    int64_t *mc = scatter ? w.scnt : w.rcnt, *md = scatter ? w.sdsp : w.rdsp;
    int64_t *oc = scatter ? w.rcnt : w.scnt;
    ism_dt **mt = scatter ? w.st : w.rt, **ot = scatter ? w.rt : w.st;
    for (int j = 0; me_root && j < n; j++)
        if (j != root || !in_place) {
            mc[j] = counts[j];
            md[j] = displs[j] * many->extent;
            mt[j] = many;
        }
    if (!in_place) {
        oc[root] = one_n;
        ot[root] = one;
    }
    /* (a root gathering in place sends nothing: not an alltoallw in place) */
    return scatter ? wstart(fn, c, many_buf, (void *)(uintptr_t)one_buf, &w, root, request)
                   : wstart(fn, c, in_place ? NULL : one_buf, (void *)(uintptr_t)many_buf, &w,
                            root, request);
}

/* The non-v forms: count elements for each rank, one block after the other (significant
 * at the root only). */
static int irooted_uniform(const char *fn, int scatter, const void *one_buf, int one_n,
                           MPI_Datatype one_t, const void *many_buf, int count,
                           MPI_Datatype many_t, int root, MPI_Comm comm, MPI_Request *request)
{
    ism_comm *c;
    int rc = ism_abi_nbc_comm(fn, comm, request, &c);
    if (rc)
        return rc;
    int n = c->size, *cd = malloc(sizeof(int) * 2 * (size_t)n + 1);
    if (!cd)
        return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
    for (int r = 0; r < n; r++) {
        cd[r] = count;
        cd[n + r] = r * count;
    }
    if (c->is_inter) /* in flight (coll/nb_inter.c) */
        rc = ism_abi_inter_rooted(fn, c, one_buf, one_n, one_t, (void *)(uintptr_t)many_buf, cd,
                                  cd + n, many_t, root, scatter, 0, request);
    else
        rc = irooted(fn, scatter, one_buf, one_n, one_t, many_buf, cd, cd + n, many_t, root, c,
                     request);
    free(cd);
    return rc;
}

static int irooted_v(const char *fn, int scatter, const void *one_buf, int one_n,
                     MPI_Datatype one_t, const void *many_buf, const int *counts,
                     const int *displs, MPI_Datatype many_t, int root, MPI_Comm comm,
                     MPI_Request *request)
{
    ism_comm *c;
    int rc = ism_abi_nbc_comm(fn, comm, request, &c);
    if (rc)
        return rc;
    if (c->is_inter) /* in flight (coll/nb_inter.c) */
        return ism_abi_inter_rooted(fn, c, one_buf, one_n, one_t, (void *)(uintptr_t)many_buf,
                                    counts, displs, many_t, root, scatter, 0, request);
    return irooted(fn, scatter, one_buf, one_n, one_t, many_buf, counts, displs, many_t, root, c,
                   request);
}

int ism_abi_isched_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                          MPI_Comm comm, MPI_Request *request)
{
    return irooted_uniform("MPI_Igather", 0, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                           recvtype, root, comm, request);
}

int ism_abi_isched_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const int *recvcounts, const int *displs,
                           MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return irooted_v("MPI_Igatherv", 0, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                     displs, recvtype, root, comm, request);
}

int ism_abi_isched_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                           MPI_Comm comm, MPI_Request *request)
{
    return irooted_uniform("MPI_Iscatter", 1, recvbuf, recvcount, recvtype, sendbuf, sendcount,
                           sendtype, root, comm, request);
}

int ism_abi_isched_scatterv(const void *sendbuf, const int *sendcounts, const int *displs,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return irooted_v("MPI_Iscatterv", 1, recvbuf, recvcount, recvtype, sendbuf, sendcounts,
                     displs, sendtype, root, comm, request);
}

/* Alltoall(v,w): counts per rank (uniform: NULL, each count), displacements in elements
 * (w: in bytes, types per rank). */
static int ialltoall(const char *fn, const void *sendbuf, const int *scounts, int scount,
                     const int *sdispls, const MPI_Datatype *stypes, MPI_Datatype stype,
                     void *recvbuf, const int *rcounts, int rcount, const int *rdispls,
                     const MPI_Datatype *rtypes, MPI_Datatype rtype, int uniform, MPI_Comm comm,
                     MPI_Request *request)
{
    ism_comm *c;
    int rc;
    if ((c = inter(fn, comm, request, &rc))) { /* in flight (coll/nb_inter.c) */
        if (!uniform)
            return ism_abi_inter_exchange(fn, c, sendbuf, scounts, sdispls, stype, stypes,
                                          recvbuf, rcounts, rdispls, rtype, rtypes,
                                          rtypes != NULL, 0, request);
        int n = c->size, *v = malloc(sizeof(int) * 4 * (size_t)n + 1);
        if (!v)
            return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
        for (int j = 0; j < n; j++) {
            v[j] = scount;
            v[n + j] = j * scount;
            v[2 * n + j] = rcount;
            v[3 * n + j] = j * rcount;
        }
        rc = ism_abi_inter_exchange(fn, c, sendbuf, v, v + n, stype, NULL, recvbuf, v + 2 * n,
                                    v + 3 * n, rtype, NULL, 0, 0, request);
        free(v);
        return rc;
    }
    if (rc || (rc = intra(fn, comm, request, &c)))
        return rc;
    int n = c->size, ip = sendbuf == MPI_IN_PLACE, w_form = rtypes != NULL;
    if (!uniform && ((rc = ism_abi_counts_arg(fn, c, rcounts, "receive")) ||
                     (!ip && (rc = ism_abi_counts_arg(fn, c, scounts, "send")))))
        return rc;
    if (!uniform && (!rdispls || (!ip && !sdispls) || (w_form && (!rtypes || (!ip && !stypes)))))
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements or types are NULL");
    ism_dt *sd = NULL, *rd = NULL;
    if (!w_form && ((rc = ism_abi_buf_type(fn, c, rtype, uniform ? rcount : 0, "receive", &rd)) ||
                    (!ip && (rc = ism_abi_buf_type(fn, c, stype, uniform ? scount : 0, "send",
                                                   &sd)))))
        return rc;
    wvec w;
    if ((rc = wvec_make(&w, n)))
        return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
    for (int j = 0; j < n && !rc; j++) {
        w.rt[j] = w_form ? ism_abi_dt(rtypes[j]) : rd;
        w.rcnt[j] = uniform ? rcount : rcounts[j];
        w.rdsp[j] = uniform ? (int64_t)j * rcount * rd->extent
                            : w_form ? rdispls[j] : (int64_t)rdispls[j] * rd->extent;
        if (!w.rt[j])
            rc = ism_abi_error(c, MPI_ERR_TYPE, fn, "receive type for rank %d is invalid", j);
        if (ip || rc)
            continue;
        w.st[j] = w_form ? ism_abi_dt(stypes[j]) : sd;
        w.scnt[j] = uniform ? scount : scounts[j];
        w.sdsp[j] = uniform ? (int64_t)j * scount * sd->extent
                            : w_form ? sdispls[j] : (int64_t)sdispls[j] * sd->extent;
        if (!w.st[j])
            rc = ism_abi_error(c, MPI_ERR_TYPE, fn, "send type for rank %d is invalid", j);
    }
    if (rc) {
        wvec_free(&w);
        return rc;
    }
    if (c->all_local) { /* the vendor's alltoallw (coll/nb_site.c) */
        ism_coll_site a = {.coll = ISM_SITE_ALLTOALLW, .n = n, .s = ip ? ISM_IN_PLACE : sendbuf,
                           .r = recvbuf, .rcount = uniform ? rcount : 0, .root = -1,
                           .rdt = uniform ? rd : NULL, .scnt = w.scnt, .sdsp = w.sdsp,
                           .rcnt = w.rcnt, .rdsp = w.rdsp, .st = w.st, .rt = w.rt};
        ism_req *r = NULL;
        rc = ism_coll_isite(&a, c, &r);
        if (rc != ISM_COLL_PASS) {
            wvec_free(&w);
            return started(fn, c, rc, r, request);
        }
    }
    return wstart(fn, c, ip ? ISM_IN_PLACE : sendbuf, recvbuf, &w, -1, request);
}

int ism_abi_isched_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    return ialltoall("MPI_Ialltoall", sendbuf, NULL, sendcount, NULL, NULL, sendtype, recvbuf,
                     NULL, recvcount, NULL, NULL, recvtype, 1, comm, request);
}

int ism_abi_isched_alltoallv(const void *sendbuf, const int *sendcounts, const int *sdispls,
                             MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                             const int *rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    return ialltoall("MPI_Ialltoallv", sendbuf, sendcounts, 0, sdispls, NULL, sendtype, recvbuf,
                     recvcounts, 0, rdispls, NULL, recvtype, 0, comm, request);
}

int ism_abi_isched_alltoallw(const void *sendbuf, const int *sendcounts, const int *sdispls,
                             const MPI_Datatype *sendtypes, void *recvbuf, const int *recvcounts,
                             const int *rdispls, const MPI_Datatype *recvtypes, MPI_Comm comm,
                             MPI_Request *request)
{
    return ialltoall("MPI_Ialltoallw", sendbuf, sendcounts, 0, sdispls, sendtypes,
                     MPI_DATATYPE_NULL, recvbuf, recvcounts, 0, rdispls, recvtypes,
                     MPI_DATATYPE_NULL, 0, comm, request);
}

int ism_abi_isched_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int *recvcounts, const int *displs,
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Iallgatherv";
    ism_comm *c;
    ism_dt *sd = NULL, *rd = NULL;
    int rc;
    if ((c = inter(fn, comm, request, &rc)))
        return ism_abi_inter_allgather(fn, c, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                       displs, recvtype, request);
    if (rc || (rc = intra(fn, comm, request, &c)))
        return rc;
    int n = c->size, ip = sendbuf == MPI_IN_PLACE;
    if ((rc = ism_abi_counts_arg(fn, c, recvcounts, "receive")))
        return rc;
    if (!displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements are NULL");
    if ((!ip && (rc = ism_abi_buf_type(fn, c, sendtype, sendcount, "send", &sd))) ||
        (rc = ism_abi_buf_type(fn, c, recvtype, 0, "receive", &rd)))
        return rc;
    int64_t *v = malloc(sizeof *v * 2 * (size_t)n + 1);
    if (!v)
        return ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
    for (int j = 0; j < n; j++) {
        v[j] = recvcounts[j];
        v[n + j] = (int64_t)displs[j] * rd->extent;
    }
    ism_req *r = NULL;
    if (c->all_local) { /* the vendor's allgatherv (coll/nb_site.c): displacements in elements */
        for (int j = 0; j < n; j++)
            v[n + j] = displs[j];
        ism_coll_site a = {.coll = ISM_SITE_ALLGATHERV, .n = n, .s = ip ? ISM_IN_PLACE : sendbuf,
                           .r = recvbuf, .scount = sendcount, .root = -1, .sdt = sd, .rdt = rd,
                           .rcnt = v, .rdsp = v + n};
        rc = ism_coll_isite(&a, c, &r);
        free(v);
        return started(fn, c, rc, r, request);
    }
    rc = ism_coll_iallgatherv64(ip ? ISM_IN_PLACE : sendbuf, sendcount, sd, recvbuf, v, v + n, rd,
                                c, &r);
    free(v);
    return started(fn, c, rc, r, request);
}
