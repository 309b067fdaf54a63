/* coll_inter.c (abi): argument checks of the rooted and all-to-all collectives on
 * intercommunicators, whose arguments mean different things than on intracommunicators:
 * a root passes MPI_ROOT, the rest of its group MPI_PROC_NULL, the other group the root's
 * rank there; vectors describe the remote group; MPI_IN_PLACE is not allowed.
 */
#include <stdlib.h>

#include "abi.h"

static int check(const char *fn, ism_comm *c, int count, MPI_Datatype h, ism_dt **d,
                 const char *what)
{
    *d = ism_abi_dt(h);
    if (!*d)
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "invalid or uncommitted %s datatype", what);
    if (count < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "%s count %d is negative", what, count);
    return MPI_SUCCESS;
}

static int vec(const char *fn, ism_comm *c, const int *counts, const int *displs)
{
    if (!counts || !displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "counts or displacements are NULL");
    for (int r = 0; r < c->size; r++)
        if (counts[r] < 0)
            return ism_abi_error(c, MPI_ERR_COUNT, fn, "count for remote rank %d is negative", r);
    return MPI_SUCCESS;
}

/* MPI_Gatherv (scatter = 0) and MPI_Scatterv (scatter = 1) on an intercommunicator:
 * one = the calling non-root's block, many = the root's vectors. */
int ism_abi_inter_rooted(const char *fn, ism_comm *c, const void *one_buf, int one_count,
                         MPI_Datatype one_type, void *many_buf, const int *counts,
                         const int *displs, MPI_Datatype many_type, int root, int scatter)
{
    ism_dt *od = NULL, *md = NULL;
    int rc;
    if (one_buf == MPI_IN_PLACE || many_buf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    if (root == MPI_ROOT) {
        if ((rc = vec(fn, c, counts, displs)) || (rc = check(fn, c, 0, many_type, &md, "root")))
            return rc;
    } else if (root != MPI_PROC_NULL) {
        if (root < 0 || root >= c->size)
            return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the remote group "
                                 "(size %d)", root, c->size);
        if ((rc = check(fn, c, one_count, one_type, &od, scatter ? "receive" : "send")))
            return rc;
    }
    rc = ism_inter_gatherv(one_buf, one_count, od, many_buf, counts, displs, md,
                           root == MPI_ROOT ? ISM_ROOT : root == MPI_PROC_NULL ? ISM_PROC_NULL
                                                                                : root,
                           c, scatter);
    return rc ? ism_abi_error(c, rc, fn, "the collective failed") : MPI_SUCCESS;
}

/* Every process sends to and receives from every remote process: element counts and
 * displacements (sdispls NULL: the same send block for everyone, as in allgather). */
int ism_abi_inter_exchange(const char *fn, ism_comm *c, const void *sbuf, const int *scounts,
                           const int *sdispls, MPI_Datatype stype, const MPI_Datatype *stypes,
                           void *rbuf, const int *rcounts, const int *rdispls,
                           MPI_Datatype rtype, const MPI_Datatype *rtypes, int bytes)
{
    int n = c->size, rc = MPI_SUCCESS;
    if (sbuf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    if ((rc = vec(fn, c, scounts, sdispls ? sdispls : rcounts)) ||
        (rc = vec(fn, c, rcounts, rdispls)))
        return rc;
    ism_dt **st = malloc(sizeof *st * (size_t)(n + 1)), **rt = malloc(sizeof *rt * (size_t)(n + 1));
    ptrdiff_t *sd = malloc(sizeof *sd * (size_t)(n + 1)), *rd = malloc(sizeof *rd * (size_t)(n + 1));
    if (!st || !rt || !sd || !rd)
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; !rc && r < n; r++) {
        if ((rc = check(fn, c, 0, stypes ? stypes[r] : stype, &st[r], "send")) ||
            (rc = check(fn, c, 0, rtypes ? rtypes[r] : rtype, &rt[r], "receive")))
            break;
        sd[r] = sdispls ? (ptrdiff_t)sdispls[r] * (bytes ? 1 : st[r]->extent) : 0;
        rd[r] = (ptrdiff_t)rdispls[r] * (bytes ? 1 : rt[r]->extent);
    }
    if (!rc && (rc = ism_inter_alltoallw(sbuf, scounts, sd, st, rbuf, rcounts, rd, rt, c)))
        rc = ism_abi_error(c, rc, fn, "the collective failed");
    free(st);
    free(rt);
    free(sd);
    free(rd);
    return rc;
}
