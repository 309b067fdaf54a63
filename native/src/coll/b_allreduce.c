/* b_allreduce.c: allreduce schedules: recursive doubling and Rabenseifner's (both with
 * MPICH's fold for a non-power-of-two group), the ring (reduce-scatter + allgather,
 * segmented; commutative only), k-nomial and linear (reduce + broadcast), and the
 * exchange (everyone sends to everyone: one step, the two-level default between sites).
 * Every member ends with the same bits: each piece is reduced once, or by the same
 * sequence of combinations everywhere.
 */
#include <stdlib.h>

#include "sched.h"

static void roles(ism_coll_sched *s, int64_t n)
{
    s->slot[ISM_SL_IN] = n;
    s->slot[ISM_SL_OUT] = n;
    s->out_len = n;
}

/* OUT starts as my vector; 1 when that is all there is to do (one member). */
static int start(ism_coll_sched *s, int p, int64_t n)
{
    roles(s, n);
    ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
    return p == 1;
}

/* A commutative op on a power-of-two group needs no copy: the first exchange sends IN
 * and receives into OUT, which then takes my vector (in op OUT); later ones receive into
 * a temporary and fold it into OUT. Both sides of a pair compute the same bits, since a
 * commutative op gives a op b and b op a alike. */
static int rd_commutative(ism_coll_sched *s, int p, int me, int64_t n)
{
    s->in_place_ok = 0; /* OUT receives while IN is still to be read */
    int alt = p > 2 ? ism_coll_tmp(s, n) : -1;
    for (int mask = 1; mask < p; mask <<= 1) {
        int d = me ^ mask;
        ism_coll_send(s, d, mask == 1 ? ISM_SL_IN : ISM_SL_OUT, 0, n);
        ism_coll_recv(s, d, mask == 1 ? ISM_SL_OUT : alt, 0, n);
        ism_coll_round(s);
        ism_coll_defer_red(s, mask == 1 ? ISM_SL_IN : alt, 0, ISM_SL_OUT, 0, n);
    }
    return ism_coll_sched_done(s);
}

int ism_coll_allreduce_recursive_doubling(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t n = a->bytes;
    roles(s, n);
    if (a->commute && p > 1 && !(p & (p - 1)))
        return rd_commutative(s, p, me, n);
    if (start(s, p, n))
        return ism_coll_sched_done(s);
    int pp = ism_coll_pow2_below(p), alt = ism_coll_tmp(s, n);
    int x = ism_coll_fold_in(s, p, me, ISM_SL_IN, ISM_SL_OUT, n);
    if (x >= 0) {
        int cur = ISM_SL_OUT;
        for (int mask = 1; mask < pp; mask <<= 1) {
            int d = ism_coll_real(p, x ^ mask), other = cur == ISM_SL_OUT ? alt : ISM_SL_OUT;
            ism_coll_send(s, d, cur, 0, n);
            ism_coll_recv(s, d, other, 0, n);
            ism_coll_round(s);
            if (x < (x ^ mask)) {
                ism_coll_defer_red(s, cur, 0, other, 0, n);
                cur = other;
            } else {
                ism_coll_defer_red(s, other, 0, cur, 0, n);
            }
        }
        if (cur != ISM_SL_OUT)
            ism_coll_defer_copy(s, cur, 0, ISM_SL_OUT, 0, n);
    }
    ism_coll_fold_out(s, p, me, ISM_SL_OUT, n);
    return ism_coll_sched_done(s);
}

int ism_coll_allreduce_rabenseifner(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t n = a->bytes;
    if (start(s, p, n))
        return ism_coll_sched_done(s);
    int pp = ism_coll_pow2_below(p), alt = ism_coll_tmp(s, n);
    int64_t *off = ism_coll_blocks(pp, NULL, n, a->esize);
    if (!off)
        return -1;
    int x = ism_coll_fold_in(s, p, me, ISM_SL_IN, ISM_SL_OUT, n);
    if (x >= 0) {
        ism_coll_step tr[32];
        int lo, hi, nt;
        int cur = ism_coll_rab_rs(s, pp, x, p, off, ISM_SL_OUT, alt, &lo, &hi, tr, &nt);
        if (cur != ISM_SL_OUT)
            ism_coll_defer_copy(s, cur, off[lo], ISM_SL_OUT, off[lo], off[hi] - off[lo]);
        for (int t = nt - 1; t >= 0; t--) { /* allgather: undo the halvings */
            int d = ism_coll_real(p, x ^ tr[t].mask);
            int olo = lo == tr[t].lo ? hi : tr[t].lo, ohi = lo == tr[t].lo ? tr[t].hi : lo;
            ism_coll_send_nz(s, d, ISM_SL_OUT, off[lo], off[hi] - off[lo]);
            ism_coll_recv_nz(s, d, ISM_SL_OUT, off[olo], off[ohi] - off[olo]);
            ism_coll_round(s);
            lo = tr[t].lo;
            hi = tr[t].hi;
        }
    }
    ism_coll_fold_out(s, p, me, ISM_SL_OUT, n);
    free(off);
    return ism_coll_sched_done(s);
}

int ism_coll_allreduce_ring(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t n = a->bytes;
    if (start(s, p, n))
        return ism_coll_sched_done(s);
    int64_t *off = ism_coll_blocks(p, NULL, n, a->esize);
    if (!off)
        return -1;
    ism_coll_ring_rs(s, p, me, ISM_SL_OUT, off, ism_coll_seg_elems(a));
    ism_coll_ring_ag(s, p, me, ISM_SL_OUT, off);
    free(off);
    return ism_coll_sched_done(s);
}

/* A k-nomial reduce to member 0 and a k-nomial broadcast back. */
static int reduce_bcast(ism_coll_sched *s, const ism_coll_args *a, int k)
{
    int p = a->p, me = a->me;
    int64_t n = a->bytes;
    roles(s, n);
    if (p == 1) {
        ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
        return ism_coll_sched_done(s);
    }
    int acc = ism_coll_kn_reduce(s, p, me, 0, k, ISM_SL_IN, n);
    ism_coll_round(s);
    if (me == 0)
        ism_coll_defer_copy(s, acc, 0, ISM_SL_OUT, 0, n);
    ism_coll_kn_bcast(s, p, me, 0, k, ISM_SL_OUT, ISM_SL_OUT, n);
    return ism_coll_sched_done(s);
}

int ism_coll_allreduce_knomial(ism_coll_sched *s, const ism_coll_args *a)
{
    return reduce_bcast(s, a, a->radix >= 2 ? a->radix : ISM_COLL_DEFAULT_RADIX);
}

int ism_coll_allreduce_linear(ism_coll_sched *s, const ism_coll_args *a)
{
    return reduce_bcast(s, a, a->p > 2 ? a->p : 2);
}

/* Everyone's vector to everyone in one step, folded in member order from the right:
 * x0 op (x1 op (... op x_{p-1})) on every member. */
int ism_coll_allreduce_exchange(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t n = a->bytes;
    roles(s, n);
    int all = ism_coll_tmp(s, n * p);
    ism_coll_copy(s, ISM_SL_IN, 0, all, n * me, n);
    for (int i = 1; i < p; i++)
        ism_coll_send(s, (me + i) % p, all, n * me, n);
    for (int i = 1; i < p; i++)
        ism_coll_recv(s, (me - i + p) % p, all, n * ((me - i + p) % p), n);
    ism_coll_round(s);
    ism_coll_copy(s, all, n * (p - 1), ISM_SL_OUT, 0, n);
    for (int i = p - 2; i >= 0; i--)
        ism_coll_red(s, all, n * i, ISM_SL_OUT, 0, n);
    return ism_coll_sched_done(s);
}
