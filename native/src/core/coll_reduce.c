/* coll_reduce.c: reductions isthmus computes itself: user-defined ops, reduce-scatter,
 * and inclusive/exclusive prefix reductions (scan, exscan).
 *
 * A user op is applied by isthmus, never by the vendor (the vendor would call it with a
 * vendor datatype handle the program has never seen). Contributions are gathered to the
 * root with the two-level gather (one WAN message per site) and folded there in rank
 * order, r0 op (r1 op (... op rn-1)), so non-commutative ops give the result MPI
 * defines whatever the placement of ranks on sites. Reductions with predefined ops keep
 * the vendor's local reduction plus a fold of per-site partials (coll.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

void ism_op_release(ism_op *op)
{
    if (op && op->user)
        op->holds--; /* a freed one goes at the next sweep (abi/op.c) */
}

static void *dt_handle(ism_dt *dt)
{
    return dt->abi ? (void *)(uintptr_t)dt->abi : (void *)dt;
}

int ism_op_apply(ism_op *op, const void *in, void *inout, int count, ism_dt *dt)
{
    if (!op->user)
        return ism_op_local(op->abi, dt->abi, in, inout, count)
                   ? 0
                   : ism.be->reduce_local(in, inout, count, dt->v, op->v);
    void *h = dt_handle(dt);
    if (op->call) {
        op->call(op->user, (void *)in, inout, &count, h);
    } else if (op->large) {
        int64_t n = count;
        ((ism_user_fn_c *)(void (*)(void))op->user)((void *)in, inout, &n, &h);
    } else {
        op->user((void *)in, inout, &count, &h);
    }
    return 0;
}

/* Room for n elements of dt laid out as an array (stride extent), wherever the type's
 * data lies relative to its start; *base is where element 0 begins. */
char *ism_dt_elems(ism_dt *dt, size_t n, char **base)
{
    const ism_tmap *m = ism_dt_map(dt);
    int64_t lo = m ? m->true_lb : 0, hi = m ? m->true_ub : dt->true_extent;
    int64_t span = n ? (int64_t)(n - 1) * dt->extent + (hi - lo) : 0;
    if (dt->extent < 0)
        lo += (int64_t)(n ? n - 1 : 0) * dt->extent;
    char *raw = malloc((size_t)(span > 0 ? span : 1));
    *base = raw ? raw - lo : NULL;
    return raw;
}

static int copy_elems(const void *src, void *dst, int count, ism_dt *dt)
{
    if (!count || src == dst)
        return 0;
    size_t n = (size_t)count * (size_t)dt->size;
    if (ism_dt_is_contig(dt)) {
        memcpy((char *)dst + dt->contig_off, (const char *)src + dt->contig_off, n);
        return 0;
    }
    char *p = malloc(n + 1);
    if (!p)
        return ISM_ERR_NO_MEM;
    ism_dt_pack(dt, src, count, p);
    ism_dt_unpack(dt, p, dst, count);
    free(p);
    return 0;
}

/* Every rank's count elements gathered at root, in rank order (NULL elsewhere). */
static int gather_all(const void *sbuf, int count, ism_dt *dt, int root, ism_comm *c,
                      char **out, char **raw)
{
    int n = c->size, rc;
    int *cd = NULL;
    char *all = NULL, *base = NULL;
    *out = NULL;
    *raw = NULL;
    if (c->rank == root) {
        cd = malloc(sizeof(int) * 2 * (size_t)n);
        all = ism_dt_elems(dt, (size_t)n * (size_t)count, &base);
        if (!cd || !all) {
            free(cd);
            free(all);
            return ISM_ERR_NO_MEM;
        }
        for (int r = 0; r < n; r++) {
            cd[r] = count;
            cd[n + r] = r * count;
        }
    }
    rc = ism_gatherv(sbuf, count, dt, base, cd, cd ? cd + n : NULL, dt, root, c);
    free(cd);
    if (rc) {
        free(all);
    } else {
        *out = base;
        *raw = all;
    }
    return rc;
}

int ism_reduce_any(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                   ism_comm *c)
{
    if (!op->user)
        return ism_reduce(sbuf, rbuf, count, dt, op, root, c);
    char *all, *raw;
    int rc = gather_all(sbuf ? sbuf : rbuf, count, dt, root, c, &all, &raw);
    if (rc || c->rank != root)
        return rc;
    size_t blk = (size_t)count * (size_t)dt->extent;
    /* fold right to left into the last slot: acc = r op acc for r = n-2 .. 0 */
    char *acc = all + blk * (size_t)(c->size - 1);
    for (int r = c->size - 2; r >= 0 && !rc; r--)
        rc = ism_op_apply(op, all + blk * (size_t)r, acc, count, dt);
    if (!rc)
        rc = copy_elems(acc, rbuf, count, dt);
    free(raw);
    return rc;
}

int ism_allreduce_any(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                      ism_comm *c)
{
    if (!op->user)
        return ism_allreduce(sbuf, rbuf, count, dt, op, c);
    int rc = ism_reduce_any(sbuf ? sbuf : rbuf, rbuf, count, dt, op, 0, c);
    return rc ? rc : ism_bcast(rbuf, count, dt, 0, c);
}

/* Reduce everything to rank 0, then scatter each rank its block. */
int ism_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt, ism_op *op,
                       ism_comm *c)
{
    int n = c->size, total = 0, rc = 0;
    int *displs = malloc(sizeof(int) * (size_t)n);
    if (!displs)
        return ISM_ERR_NO_MEM;
    for (int r = 0; r < n; r++) {
        displs[r] = total;
        total += rcounts[r];
    }
    char *full = NULL, *raw = c->rank == 0 ? ism_dt_elems(dt, (size_t)total, &full) : NULL;
    if (c->rank == 0 && !raw) {
        free(displs);
        return ISM_ERR_NO_MEM;
    }
    /* in place: the input is the whole of rbuf */
    rc = ism_reduce_any(sbuf ? sbuf : rbuf, full, total, dt, op, 0, c);
    if (!rc)
        rc = ism_scatterv(full, rcounts, displs, dt, rbuf, rcounts[c->rank], dt, 0, c);
    free(raw);
    free(displs);
    return rc;
}

/* Gather at rank 0, compute every prefix there in rank order, scatter the prefixes. */
int ism_scan(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int exclusive,
             ism_comm *c)
{
    int n = c->size, rc;
    size_t blk = (size_t)count * (size_t)dt->extent;
    char *all, *raw;
    rc = gather_all(sbuf ? sbuf : rbuf, count, dt, 0, c, &all, &raw);
    if (rc)
        return rc;
    int *cd = NULL;
    if (c->rank == 0) {
        /* slot r becomes r0 op ... op rr: prefix(r) = prefix(r-1) op r_r */
        for (int r = 1; r < n && !rc; r++)
            rc = ism_op_apply(op, all + blk * (size_t)(r - 1), all + blk * (size_t)r, count, dt);
        cd = malloc(sizeof(int) * 2 * (size_t)n);
        if (!cd)
            rc = rc ? rc : ISM_ERR_NO_MEM;
        for (int r = 0; cd && r < n; r++) {
            /* exscan: rank r gets prefix(r-1); rank 0's result is undefined (left as is) */
            cd[r] = exclusive && r == 0 ? 0 : count;
            cd[n + r] = exclusive ? (r ? (r - 1) * count : 0) : r * count;
        }
    }
    /* a failure at rank 0 must not leave the others waiting in the scatter */
    int bad = rc != 0, any = 0;
    int rc2 = ism_bcast(&bad, 1, ISM_DT_INT, 0, c);
    any = bad;
    if (!rc && !rc2 && !any)
        rc = ism_scatterv(all, cd, cd ? cd + n : NULL, dt, rbuf,
                          exclusive && c->rank == 0 ? 0 : count, dt, 0, c);
    free(raw);
    free(cd);
    return rc ? rc : rc2 ? rc2 : any ? ISM_ERR_INTERN : 0;
}
