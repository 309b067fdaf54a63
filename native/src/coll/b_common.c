/* b_common.c: schedule pieces several collective families share: k-nomial trees, the
 * non-power-of-two fold, and the ring reduce-scatter and allgather.
 *
 * Every piece combines contributions in member order (a partial always covers a run of
 * consecutive members, and a run is only combined with its neighbour on the correct
 * side), so the algorithms built from them are right for non-commutative ops, except
 * the ring reduce-scatter, whose blocks wrap around the ring (commutative ops only, as
 * in MPICH).
 */
#include "sched.h"

/* ---- k-nomial trees rooted at 0 ---- */

int ism_coll_kn_children(int v, int p, int k, int *out)
{
    int n = 0;
    for (long long step = 1; step < p; step *= k) {
        if (v % (step * k) != 0)
            break;
        for (int d = 1; d < k; d++) {
            long long c = v + d * step;
            if (c < p)
                out[n++] = (int)c;
        }
    }
    return n;
}

int ism_coll_kn_parent(int v, int k)
{
    long long step = 1;
    while (v % (step * k) == 0)
        step *= k;
    return (int)(v - (v / step % k) * step);
}

int ism_coll_kn_subtree(int v, int p, int k)
{
    if (v == 0)
        return p;
    long long step = 1;
    while (v % (step * k) == 0)
        step *= k;
    return (int)(step < p - v ? step : p - v);
}

/* Children of one level of the tree: the d*step ones for d = 1..k-1. */
static int level_children(int v, int p, int k, long long step, int *out)
{
    int n = 0;
    for (int d = 1; d < k; d++) {
        long long c = v + d * step;
        if (c < p)
            out[n++] = (int)c;
    }
    return n;
}

int ism_coll_kn_reduce(ism_coll_sched *s, int p, int me, int rot, int k, int first,
                       int64_t len)
{
    enum { BATCH = 4 }; /* subtrees received at once: bounds the temporaries */
    int v = (me - rot + p) % p;
    int bufs[BATCH + 2], nb = 1, acc = 0;
    int kids[64];
    bufs[0] = first;
    if (k > 64)
        k = 64; /* a wider tree than this is linear in effect */
    for (long long step = 1; step < p && v % (step * k) == 0; step *= k) {
        int m = level_children(v, p, k, step, kids);
        for (int j0 = 0; j0 < m; j0 += BATCH) {
            int mb = m - j0 < BATCH ? m - j0 : BATCH;
            /* receive into buffers other than the accumulator (never into IN) */
            int use[BATCH], u = 0;
            for (int i = 0; u < mb; i++) {
                if (i == nb)
                    bufs[nb++] = ism_coll_tmp(s, len);
                if (i != acc && bufs[i] != ISM_SL_IN)
                    use[u++] = i;
            }
            for (int j = 0; j < mb; j++)
                ism_coll_recv(s, (kids[j0 + j] + rot) % p, bufs[use[j]], 0, len);
            ism_coll_round(s);
            /* acc op T1 op T2 ...: each subtree lies to the right of what acc covers */
            for (int j = 0; j < mb; j++) {
                ism_coll_defer_red(s, bufs[acc], 0, bufs[use[j]], 0, len);
                acc = use[j];
            }
        }
    }
    if (v)
        ism_coll_send(s, (ism_coll_kn_parent(v, k) + rot) % p, bufs[acc], 0, len);
    return bufs[acc];
}

int ism_coll_kn_reduce_commutative(ism_coll_sched *s, int p, int me, int rot, int k, int final,
                                   int64_t len)
{
    int v = (me - rot + p) % p, kids[64 * 32], t[2], par = 0, acc = -1;
    if (k > 64)
        k = 64;
    int m = ism_coll_kn_children(v, p, k, kids);
    if (!m) {
        if (v)
            ism_coll_send(s, (ism_coll_kn_parent(v, k) + rot) % p, ISM_SL_IN, 0, len);
        return ISM_SL_IN;
    }
    acc = v ? ism_coll_tmp(s, len) : final;
    t[0] = m > 1 ? ism_coll_tmp(s, len) : -1;
    t[1] = m > 2 ? ism_coll_tmp(s, len) : -1;
    /* the first subtree straight into the accumulator, folded with my vector; each
     * later one into a temporary (two, alternating, so a reduction overlaps the next
     * receive) and folded in */
    for (int j = 0; j < m; j++) {
        int into = j ? t[par] : acc;
        ism_coll_recv(s, (kids[j] + rot) % p, into, 0, len);
        ism_coll_round(s);
        ism_coll_defer_red(s, j ? into : ISM_SL_IN, 0, acc, 0, len);
        if (j)
            par ^= 1;
    }
    if (v)
        ism_coll_send(s, (ism_coll_kn_parent(v, k) + rot) % p, acc, 0, len);
    return acc;
}

void ism_coll_kn_bcast(ism_coll_sched *s, int p, int me, int root, int k, int rslot, int oslot,
                       int64_t len)
{
    int v = (me - root + p) % p, kids[64 * 32];
    if (k > 64)
        k = 64;
    if (v) {
        ism_coll_recv(s, (ism_coll_kn_parent(v, k) + root) % p, oslot, 0, len);
        ism_coll_round(s);
    }
    int n = ism_coll_kn_children(v, p, k, kids);
    for (int i = n - 1; i >= 0; i--) /* the biggest subtree first */
        ism_coll_send(s, (kids[i] + root) % p, v ? oslot : rslot, 0, len);
    ism_coll_round(s);
}

/* ---- the fold for a non-power-of-two group ---- */

int ism_coll_real(int p, int x)
{
    int rem = p - ism_coll_pow2_below(p);
    return x < rem ? 2 * x + 1 : x + rem;
}

int ism_coll_fold_in(ism_coll_sched *s, int p, int me, int from, int v, int64_t len)
{
    int rem = p - ism_coll_pow2_below(p);
    if (me >= 2 * rem)
        return me - rem;
    if (me % 2 == 0) {
        ism_coll_send(s, me + 1, from, 0, len);
        ism_coll_round(s);
        return -1;
    }
    int t = ism_coll_tmp(s, len);
    ism_coll_recv(s, me - 1, t, 0, len);
    ism_coll_round(s);
    ism_coll_defer_red(s, t, 0, v, 0, len); /* the even neighbour's vector on the left */
    return me / 2;
}

void ism_coll_fold_out(ism_coll_sched *s, int p, int me, int v, int64_t len)
{
    int rem = p - ism_coll_pow2_below(p);
    if (me >= 2 * rem)
        return;
    if (me % 2)
        ism_coll_send(s, me - 1, v, 0, len);
    else
        ism_coll_recv(s, me + 1, v, 0, len);
    ism_coll_round(s);
}

/* ---- rings ---- */

static int64_t nsegs(int64_t len, int64_t seg)
{
    return len ? (len + seg - 1) / seg : 0;
}

void ism_coll_ring_rs(ism_coll_sched *s, int p, int me, int v, const int64_t *off, int64_t seg)
{
    int next = (me + 1) % p, prev = (me - 1 + p) % p;
    int64_t maxb = 0;
    for (int b = 0; b < p; b++)
        if (off[b + 1] - off[b] > maxb)
            maxb = off[b + 1] - off[b];
    if (seg <= 0 || seg > maxb)
        seg = maxb;
    if (!maxb || p == 1)
        return;
    int t[2];
    t[0] = ism_coll_tmp(s, seg);
    t[1] = ism_coll_tmp(s, seg);
    int par = 0;
    for (int st = 0; st < p - 1; st++) {
        int sb = ((me - st - 1) % p + p) % p, rb = ((me - st - 2) % p + p) % p;
        int64_t ns = nsegs(off[sb + 1] - off[sb], seg), nr = nsegs(off[rb + 1] - off[rb], seg);
        int64_t n = ns > nr ? ns : nr;
        for (int64_t j = 0; j < n; j++) {
            if (j < nr) {
                int64_t o = off[rb] + j * seg, l = off[rb + 1] - o < seg ? off[rb + 1] - o : seg;
                ism_coll_recv(s, prev, t[par], 0, l);
            }
            if (j < ns) {
                int64_t o = off[sb] + j * seg, l = off[sb + 1] - o < seg ? off[sb + 1] - o : seg;
                ism_coll_send(s, next, v, o, l);
            }
            ism_coll_round(s);
            if (j < nr) {
                int64_t o = off[rb] + j * seg, l = off[rb + 1] - o < seg ? off[rb + 1] - o : seg;
                /* what came round is the earlier members' part: on the left */
                ism_coll_defer_red(s, t[par], 0, v, o, l);
                par ^= 1;
            }
        }
    }
}

void ism_coll_ring_ag(ism_coll_sched *s, int p, int me, int v, const int64_t *off)
{
    int next = (me + 1) % p, prev = (me - 1 + p) % p;
    for (int st = 0; st < p - 1; st++) {
        int sb = ((me - st) % p + p) % p, rb = ((me - st - 1) % p + p) % p;
        ism_coll_recv_nz(s, prev, v, off[rb], off[rb + 1] - off[rb]);
        ism_coll_send_nz(s, next, v, off[sb], off[sb + 1] - off[sb]);
        ism_coll_round(s);
    }
}
