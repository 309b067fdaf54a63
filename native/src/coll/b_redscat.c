/* b_redscat.c: reduce-scatter schedules over blocks of any sizes (MPI_Reduce_scatter's
 * counts): the ring (commutative only), recursive halving (Rabenseifner's first half,
 * with the fold for a non-power-of-two group) and pairwise exchange.
 *
 * IN is the whole vector, OUT my block; without a->blk every block is a->bytes. None of them works in place (the caller copies
 * the input first): my block's place in the caller's buffer is where block 0 starts.
 */
#include <stdlib.h>

#include "sched.h"

static int64_t *layout(ism_coll_sched *s, const ism_coll_args *a)
{
    int64_t *off = ism_coll_member_blocks(a);
    if (!off)
        return NULL;
    s->in_place_ok = 0;
    s->slot[ISM_SL_IN] = off[a->p];
    s->slot[ISM_SL_OUT] = off[a->me + 1] - off[a->me];
    s->out_len = s->slot[ISM_SL_OUT];
    return off;
}

int ism_coll_reduce_scatter_ring(ism_coll_sched *s, const ism_coll_args *a)
{
    int64_t *off = layout(s, a);
    if (!off)
        return -1;
    int v = ism_coll_tmp(s, off[a->p]);
    ism_coll_copy(s, ISM_SL_IN, 0, v, 0, off[a->p]);
    ism_coll_ring_rs(s, a->p, a->me, v, off, ism_coll_seg_elems(a));
    ism_coll_round(s);
    ism_coll_defer_copy(s, v, off[a->me], ISM_SL_OUT, 0, off[a->me + 1] - off[a->me]);
    free(off);
    return ism_coll_sched_done(s);
}

/* Step i sends block me+i to its owner and receives my block from me-i. Arrivals come
 * from me-1, me-2, .., 0 (each on the left of what I have), then from p-1 down to me+1,
 * which build a second partial from the right; the two meet at the end. */
int ism_coll_reduce_scatter_pairwise(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t *off = layout(s, a);
    if (!off)
        return -1;
    int64_t mine = off[me + 1] - off[me];
    if (a->commute && p > 1) {
        /* the order is free: the first arrival lands in OUT and my block joins it, the
         * others are folded into OUT as they come; no copy (at two members a 1 MiB
         * block was a copy in and three passes on the right partial) */
        int t[2] = {p > 2 ? ism_coll_tmp(s, mine) : 0, p > 3 ? ism_coll_tmp(s, mine) : 0};
        for (int i = 1; i < p; i++) {
            int to = (me + i) % p, from = (me - i + p) % p;
            ism_coll_send_nz(s, to, ISM_SL_IN, off[to], off[to + 1] - off[to]);
            ism_coll_recv_nz(s, from, i == 1 ? ISM_SL_OUT : t[i % 2], 0, mine);
            ism_coll_round(s);
            if (i == 1)
                ism_coll_defer_red(s, ISM_SL_IN, off[me], ISM_SL_OUT, 0, mine);
            else
                ism_coll_defer_red(s, t[i % 2], 0, ISM_SL_OUT, 0, mine);
        }
        ism_coll_flush(s);
        free(off);
        return ism_coll_sched_done(s);
    }
    ism_coll_copy(s, ISM_SL_IN, off[me], ISM_SL_OUT, 0, mine);
    int t[2] = {ism_coll_tmp(s, mine), ism_coll_tmp(s, mine)}, right = ism_coll_tmp(s, mine);
    int have_right = 0;
    for (int i = 1; i < p; i++) {
        int to = (me + i) % p, from = (me - i + p) % p;
        ism_coll_send_nz(s, to, ISM_SL_IN, off[to], off[to + 1] - off[to]);
        ism_coll_recv_nz(s, from, t[i % 2], 0, mine);
        ism_coll_round(s);
        if (from < me) {
            ism_coll_defer_red(s, t[i % 2], 0, ISM_SL_OUT, 0, mine);
        } else if (!have_right) {
            ism_coll_defer_copy(s, t[i % 2], 0, right, 0, mine);
            have_right = 1;
        } else {
            ism_coll_defer_red(s, t[i % 2], 0, right, 0, mine);
        }
    }
    ism_coll_flush(s);
    if (have_right) {
        ism_coll_red(s, ISM_SL_OUT, 0, right, 0, mine);
        ism_coll_copy(s, right, 0, ISM_SL_OUT, 0, mine);
    }
    free(off);
    return ism_coll_sched_done(s);
}

static int bitrev(int x, int bits)
{
    int y = 0;
    for (int i = 0; i < bits; i++) {
        y = (y << 1) | (x & 1);
        x >>= 1;
    }
    return y;
}

/* The vector is laid out by position (position i holds the blocks of new index
 * bitrev(i): its own member's, and its folded neighbour's before it), so every range of
 * positions is one range of bytes and new index x ends with position bitrev(x). */
int ism_coll_reduce_scatter_recursive_halving(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t *off = layout(s, a);
    if (!off)
        return -1;
    int64_t n = off[p], mine = off[me + 1] - off[me];
    if (p == 1) {
        ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
        free(off);
        return ism_coll_sched_done(s);
    }
    int pp = ism_coll_pow2_below(p), rem = p - pp, bits = 0;
    while ((1 << bits) < pp)
        bits++;
    int64_t *woff = malloc(sizeof *woff * (size_t)(pp + 1));
    if (!woff) {
        free(off);
        return -1;
    }
    woff[0] = 0;
    for (int i = 0; i < pp; i++) {
        int r = ism_coll_real(p, bitrev(i, bits));
        woff[i + 1] = woff[i] + off[r + 1] - (r < 2 * rem ? off[r - 1] : off[r]);
    }
    int w = ism_coll_tmp(s, n), alt = ism_coll_tmp(s, n), src = ISM_SL_IN;
    if (me < 2 * rem && me % 2) { /* the even neighbour's vector comes in on the left */
        int v = ism_coll_tmp(s, n);
        ism_coll_copy(s, ISM_SL_IN, 0, v, 0, n);
        src = v;
    }
    int x = ism_coll_fold_in(s, p, me, ISM_SL_IN, src, n);
    if (x >= 0) {
        ism_coll_flush(s);
        for (int i = 0; i < pp; i++) { /* into position order */
            int r = ism_coll_real(p, bitrev(i, bits)), first = r < 2 * rem ? r - 1 : r;
            ism_coll_copy(s, src, off[first], w, woff[i], off[r + 1] - off[first]);
        }
        ism_coll_step tr[32];
        int lo, hi, nt;
        int cur = ism_coll_rab_rs(s, pp, x, p, woff, w, alt, &lo, &hi, tr, &nt);
        ism_coll_flush(s);
        /* my position holds [neighbour's block,] my block */
        int64_t at = woff[lo];
        if (me < 2 * rem) {
            int64_t nb = off[me] - off[me - 1];
            ism_coll_send_nz(s, me - 1, cur, at, nb);
            at += nb;
        }
        ism_coll_copy(s, cur, at, ISM_SL_OUT, 0, mine);
        ism_coll_round(s);
    } else {
        ism_coll_recv_nz(s, me + 1, ISM_SL_OUT, 0, mine);
        ism_coll_round(s);
    }
    free(woff);
    free(off);
    return ism_coll_sched_done(s);
}
