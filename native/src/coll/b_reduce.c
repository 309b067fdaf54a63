/* b_reduce.c: reduce schedules: k-nomial trees (binomial, linear), the pipelined chain
 * (seed 001 §2.2.4) and Rabenseifner's (reduce-scatter by recursive halving, then a
 * binomial gather), all combining in member order.
 *
 * For a non-commutative op the tree and the chain are rooted at member 0, which
 * forwards the result to the root (one extra message, as MPICH does); for a
 * commutative op they are rotated to end at the root.
 */
#include <stdlib.h>

#include "sched.h"

static int tree(ism_coll_sched *s, const ism_coll_args *a, int k)
{
    int p = a->p, me = a->me, root = a->root, rot = a->commute ? root : 0;
    int64_t n = a->bytes;
    s->slot[ISM_SL_IN] = n;
    s->slot[ISM_SL_OUT] = me == root ? n : 0;
    s->out_len = me == root ? n : 0;
    if (p == 1) {
        ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
        return ism_coll_sched_done(s);
    }
    int v = (me - rot + p) % p;
    if (a->commute) { /* rooted at the root, no copy */
        s->in_place_ok = 0; /* the root receives into OUT before it reads IN */
        ism_coll_kn_reduce_commutative(s, p, me, rot, k, ISM_SL_OUT, n);
        return ism_coll_sched_done(s);
    }
    int acc = ism_coll_kn_reduce(s, p, me, rot, k, ISM_SL_IN, n);
    ism_coll_round(s);
    if (v == 0) {
        if (me == root)
            ism_coll_copy(s, acc, 0, ISM_SL_OUT, 0, n);
        else
            ism_coll_send(s, root, acc, 0, n);
        ism_coll_round(s);
    } else if (me == root) {
        ism_coll_recv(s, rot, ISM_SL_OUT, 0, n); /* from the tree's top, member 0 */
        ism_coll_round(s);
    }
    return ism_coll_sched_done(s);
}

int ism_coll_reduce_binomial(ism_coll_sched *s, const ism_coll_args *a)
{
    return tree(s, a, 2);
}

int ism_coll_reduce_knomial(ism_coll_sched *s, const ism_coll_args *a)
{
    return tree(s, a, a->radix >= 2 ? a->radix : ISM_COLL_DEFAULT_RADIX);
}

int ism_coll_reduce_linear(ism_coll_sched *s, const ism_coll_args *a)
{
    return tree(s, a, a->p > 2 ? a->p : 2);
}

/* Segments flow from the chain's far end down to its head (member 0, or the root when
 * the op commutes); each member puts its own contribution on the left of what arrives.
 * Round t receives segment t while segment t-1 is reduced and passed on. */
int ism_coll_reduce_chain(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me, root = a->root, rot = a->commute ? root : 0;
    int v = (me - rot + p) % p, up = (me + 1) % p, down = (me - 1 + p) % p;
    int64_t n = a->bytes, sb, ns = ism_coll_nseg(n, a->seg, a->esize, &sb);
    s->in_place_ok = 0; /* the head receives into OUT while it still reads IN */
    s->slot[ISM_SL_IN] = n;
    s->slot[ISM_SL_OUT] = me == root || v == 0 ? n : 0;
    s->out_len = me == root ? n : 0;
    if (p == 1) {
        ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
        return ism_coll_sched_done(s);
    }
    if (v == p - 1) {
        for (int64_t t = 0; t < ns; t++) {
            ism_coll_send_nz(s, down, ISM_SL_IN, t * sb, n - t * sb < sb ? n - t * sb : sb);
            ism_coll_round(s);
        }
    } else {
        int r = v == 0 ? ISM_SL_OUT : ism_coll_tmp(s, 2 * sb);
        for (int64_t t = 0; t <= ns; t++) {
            if (t < ns) {
                int64_t l = n - t * sb < sb ? n - t * sb : sb;
                ism_coll_recv_nz(s, up, r, v ? (t % 2) * sb : t * sb, l);
            }
            if (t >= 1) {
                int64_t o = (t - 1) * sb, l = n - o < sb ? n - o : sb;
                int64_t ro = v ? ((t - 1) % 2) * sb : o;
                ism_coll_red(s, ISM_SL_IN, o, r, ro, l); /* mine op what came */
                if (v)
                    ism_coll_send_nz(s, down, r, ro, l);
            }
            ism_coll_round(s);
        }
    }
    if (v == 0 && me != root) {
        for (int64_t t = 0; t < ns; t++)
            ism_coll_send_nz(s, root, ISM_SL_OUT, t * sb, n - t * sb < sb ? n - t * sb : sb);
        ism_coll_round(s);
    } else if (me == root && v != 0) {
        for (int64_t t = 0; t < ns; t++)
            ism_coll_recv_nz(s, rot, ISM_SL_OUT, t * sb, n - t * sb < sb ? n - t * sb : sb);
        ism_coll_round(s);
    }
    return ism_coll_sched_done(s);
}

/* Recursive halving with the distance doubling (1, 2, 4, ..), so the two halves that
 * meet always hold adjacent runs of members, then the pieces gathered at new index 0
 * by undoing the halvings. Memory blocks are the positions themselves: who ends with
 * which piece does not matter for a reduce. */
int ism_coll_rab_rs(ism_coll_sched *s, int pp, int x, int p, const int64_t *off, int start, int alt,
                    int *lo, int *hi, ism_coll_step *trace, int *ntrace)
{
    int cur = start;
    *lo = 0;
    *hi = pp;
    *ntrace = 0;
    for (int mask = 1; mask < pp; mask <<= 1) {
        int d = x ^ mask, mid = (*lo + *hi) / 2;
        int klo = x < d ? *lo : mid, khi = x < d ? mid : *hi;
        int glo = x < d ? mid : *lo, ghi = x < d ? *hi : mid;
        int other = cur == start ? alt : start;
        ism_coll_send_nz(s, ism_coll_real(p, d), cur, off[glo], off[ghi] - off[glo]);
        ism_coll_recv_nz(s, ism_coll_real(p, d), other, off[klo], off[khi] - off[klo]);
        ism_coll_round(s);
        if (x < d) { /* my half of the members is the left one */
            ism_coll_defer_red(s, cur, off[klo], other, off[klo], off[khi] - off[klo]);
            cur = other;
        } else {
            ism_coll_defer_red(s, other, off[klo], cur, off[klo], off[khi] - off[klo]);
        }
        trace[*ntrace].mask = mask;
        trace[*ntrace].lo = *lo;
        trace[*ntrace].hi = *hi;
        (*ntrace)++;
        *lo = klo;
        *hi = khi;
    }
    return cur;
}

int ism_coll_reduce_rabenseifner(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me, root = a->root;
    int64_t n = a->bytes;
    s->slot[ISM_SL_IN] = n;
    s->slot[ISM_SL_OUT] = n;
    s->out_len = me == root ? n : 0;
    ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
    if (p == 1)
        return ism_coll_sched_done(s);
    int pp = ism_coll_pow2_below(p), head = ism_coll_real(p, 0);
    int64_t *off = ism_coll_blocks(pp, NULL, n, a->esize);
    if (!off)
        return -1;
    int alt = ism_coll_tmp(s, n);
    int x = ism_coll_fold_in(s, p, me, ISM_SL_IN, ISM_SL_OUT, n);
    if (x >= 0) {
        ism_coll_step tr[32];
        int lo, hi, nt;
        int cur = ism_coll_rab_rs(s, pp, x, p, off, ISM_SL_OUT, alt, &lo, &hi, tr, &nt);
        for (int t = nt - 1; t >= 0; t--) {
            int mask = tr[t].mask;
            if (x >= 2 * mask)
                continue;
            int d = x ^ mask;
            if (x < mask) { /* the other half of the range before this step */
                int olo = lo == tr[t].lo ? hi : tr[t].lo, ohi = lo == tr[t].lo ? tr[t].hi : lo;
                ism_coll_recv_nz(s, ism_coll_real(p, d), cur, off[olo], off[ohi] - off[olo]);
            } else {
                ism_coll_send_nz(s, ism_coll_real(p, d), cur, off[lo], off[hi] - off[lo]);
            }
            ism_coll_round(s);
            lo = tr[t].lo;
            hi = tr[t].hi;
        }
        if (x == 0) {
            if (head == root)
                ism_coll_copy(s, cur, 0, ISM_SL_OUT, 0, n);
            else
                ism_coll_send(s, root, cur, 0, n);
            ism_coll_round(s);
        }
    }
    if (me == root && head != root) {
        ism_coll_recv(s, head, ISM_SL_OUT, 0, n);
        ism_coll_round(s);
    }
    free(off);
    return ism_coll_sched_done(s);
}
