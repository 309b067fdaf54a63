/* coll_inter.c (abi): argument checks of the rooted and all-to-all collectives on
 * intercommunicators, whose arguments mean different things than on intracommunicators:
 * a root passes MPI_ROOT, the rest of its group MPI_PROC_NULL, the other group the root's
 * rank there; vectors describe the remote group; MPI_IN_PLACE is not allowed. Counts and
 * displacements are read as ints or, for the large-count (_c) forms (wide), as MPI_Count
 * and MPI_Aint, and reach the core 64-bit: the exchanges are point-to-point.
 */
#include <stdlib.h>

#include "abi.h"
#include "../coll/coll.h"

/* element i of an int array, or of an MPI_Count / MPI_Aint one (same width here) */
static int64_t nth(const void *v, int wide, int i)
{
    return wide ? (int64_t)((const MPI_Count *)v)[i] : (int64_t)((const int *)v)[i];
}

static int check(const char *fn, ism_comm *c, int64_t count, MPI_Datatype h, ism_dt **d,
                 const char *what)
{
    *d = ism_abi_dt(h);
    if (!*d)
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "invalid or uncommitted %s datatype", what);
    if (count < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "%s count %lld is negative", what,
                             (long long)count);
    return MPI_SUCCESS;
}

/* The remote group's counts and displacements as 64-bit copies (*dout may be NULL: not
 * wanted), or an error. */
static int vec(const char *fn, ism_comm *c, const void *counts, const void *displs, int wide,
               int64_t **cout, int64_t **dout)
{
    *cout = NULL;
    if (dout)
        *dout = NULL;
    if (!counts || !displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "counts or displacements are NULL");
    int64_t *cv = malloc(sizeof(int64_t) * (size_t)(c->size + 1));
    int64_t *dv = dout ? malloc(sizeof(int64_t) * (size_t)(c->size + 1)) : NULL;
    if (!cv || (dout && !dv)) {
        free(cv);
        free(dv);
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int r = 0; r < c->size; r++) {
        cv[r] = nth(counts, wide, r);
        if (dv)
            dv[r] = nth(displs, wide, r);
        if (cv[r] < 0) {
            free(cv);
            free(dv);
            return ism_abi_error(c, MPI_ERR_COUNT, fn,
                                 "count for remote rank %d is negative", r);
        }
    }
    *cout = cv;
    if (dout)
        *dout = dv;
    return MPI_SUCCESS;
}

/* The checks of bcast, the reductions and reduce-scatter on an intercommunicator. */
int ism_abi_inter_args(const char *fn, ism_comm *c, MPI_Datatype dt, int64_t count, MPI_Op op,
                       int *root, const void *sendbuf, ism_dt **d, ism_op **o)
{
    if (!(*d = ism_abi_dt(dt)))
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "%s", ism_abi_dt_problem(dt));
    if (count < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "count %lld is negative", (long long)count);
    if (o && !(*o = ism_abi_op(op)))
        return ism_abi_error(c, MPI_ERR_OP, fn, "invalid op");
    if (root && *root != MPI_ROOT && *root != MPI_PROC_NULL &&
        (*root < 0 || *root >= c->size))
        return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the remote group (size %d)",
                             *root, c->size);
    if (root)
        *root = *root == MPI_ROOT ? ISM_ROOT : *root == MPI_PROC_NULL ? ISM_PROC_NULL : *root;
    if (sendbuf == MPI_IN_PLACE && (!root || *root >= 0))
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    return MPI_SUCCESS;
}

/* MPI_Gatherv (scatter = 0) and MPI_Scatterv (scatter = 1) on an intercommunicator:
 * one = the calling non-root's block, many = the root's vectors. */
int ism_abi_inter_rooted(const char *fn, ism_comm *c, const void *one_buf, int64_t one_count,
                         MPI_Datatype one_type, void *many_buf, const void *counts,
                         const void *displs, MPI_Datatype many_type, int root, int scatter,
                         int wide, MPI_Request *request)
{
    ism_dt *od = NULL, *md = NULL;
    int64_t *cv = NULL, *dv = NULL;
    int rc;
    if (one_buf == MPI_IN_PLACE || many_buf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    if (root == MPI_ROOT) {
        if ((rc = vec(fn, c, counts, displs, wide, &cv, &dv)))
            return rc;
        if ((rc = check(fn, c, 0, many_type, &md, "root"))) {
            free(cv);
            free(dv);
            return rc;
        }
    } else if (root != MPI_PROC_NULL) {
        if (root < 0 || root >= c->size)
            return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the remote group "
                                 "(size %d)", root, c->size);
        if ((rc = check(fn, c, one_count, one_type, &od, scatter ? "receive" : "send")))
            return rc;
    }
    int cr = root == MPI_ROOT ? ISM_ROOT : root == MPI_PROC_NULL ? ISM_PROC_NULL : root;
    if (request) { /* in flight (coll/nb_inter.c) */
        ism_req *q = NULL;
        rc = ism_coll_inter_igatherv(one_buf, one_count, od, many_buf, cv, dv, md, cr, scatter, c,
                                     &q);
        free(cv);
        free(dv);
        if (rc)
            return ism_abi_nbc_error(c, rc, fn);
        *request = (MPI_Request)q;
        return MPI_SUCCESS;
    }
    ism_req *q = NULL; /* blocking: started in flight and waited for */
    rc = ism_coll_inter_igatherv(one_buf, one_count, od, many_buf, cv, dv, md, cr, scatter, c,
                                 &q);
    free(cv);
    free(dv);
    rc = rc ? rc : ism_coll_nb_wait(q);
    return rc ? ism_abi_error(c, rc, fn, "the collective failed") : MPI_SUCCESS;
}

/* Every process sends to and receives from every remote process: element counts and
 * displacements (sdispls NULL: the same send block for everyone, as in allgather), or
 * byte displacements (bytes). */
int ism_abi_inter_exchange(const char *fn, ism_comm *c, const void *sbuf, const void *scounts,
                           const void *sdispls, MPI_Datatype stype, const MPI_Datatype *stypes,
                           void *rbuf, const void *rcounts, const void *rdispls,
                           MPI_Datatype rtype, const MPI_Datatype *rtypes, int bytes, int wide,
                           MPI_Request *request)
{
    int n = c->size, rc = MPI_SUCCESS;
    int64_t *sc = NULL, *sdv = NULL, *rcv = NULL, *rdv = NULL;
    if (sbuf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    /* displacements: ints in the int forms (Alltoallw's bytes too), MPI_Aint in the _c ones */
    int dwide = wide;
    if ((rc = vec(fn, c, scounts, sdispls ? sdispls : scounts, wide, &sc, NULL)))
        return rc;
    if ((rc = vec(fn, c, rcounts, rdispls, wide, &rcv, NULL))) {
        free(sc);
        return rc;
    }
    ism_dt **st = malloc(sizeof *st * (size_t)(n + 1)), **rt = malloc(sizeof *rt * (size_t)(n + 1));
    ptrdiff_t *sd = malloc(sizeof *sd * (size_t)(n + 1)), *rd = malloc(sizeof *rd * (size_t)(n + 1));
    if (!st || !rt || !sd || !rd)
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; !rc && r < n; r++) {
        if ((rc = check(fn, c, 0, stypes ? stypes[r] : stype, &st[r], "send")) ||
            (rc = check(fn, c, 0, rtypes ? rtypes[r] : rtype, &rt[r], "receive")))
            break;
        sd[r] = sdispls ? (ptrdiff_t)(nth(sdispls, dwide, r) * (bytes ? 1 : st[r]->extent)) : 0;
        rd[r] = (ptrdiff_t)(nth(rdispls, dwide, r) * (bytes ? 1 : rt[r]->extent));
    }
    ism_req *q = NULL; /* in flight (coll/nb_inter.c); blocking: waited for */
    if (!rc && (rc = ism_coll_inter_ialltoallw(sbuf, sc, sd, st, rbuf, rcv, rd, rt, c, &q)))
        rc = request ? ism_abi_nbc_error(c, rc, fn)
                     : ism_abi_error(c, rc, fn, "the collective failed");
    else if (!rc && request)
        *request = (MPI_Request)q;
    else if (!rc && (rc = ism_coll_nb_wait(q)))
        rc = ism_abi_error(c, rc, fn, "the collective failed");
    free(st);
    free(rt);
    free(sd);
    free(rd);
    free(sc);
    free(sdv);
    free(rcv);
    free(rdv);
    return rc;
}
