/* b_gather.c: allgather (ring, recursive doubling, Bruck, exchange), alltoall
 * (pairwise, Bruck) and barrier (dissemination, linear) schedules: the collectives that
 * only move data.
 *
 * Allgather blocks may differ in size (the sites' shares between leaders): IN is my
 * block, OUT all blocks in member order, and in place IN is my block inside OUT.
 */
#include <stdlib.h>

#include "sched.h"

static int64_t *ag_layout(ism_coll_sched *s, const ism_coll_args *a)
{
    int64_t *off = ism_coll_member_blocks(a);
    if (!off)
        return NULL;
    s->slot[ISM_SL_IN] = off[a->me + 1] - off[a->me];
    s->slot[ISM_SL_OUT] = off[a->p];
    s->out_len = off[a->p];
    return off;
}

int ism_coll_allgather_ring(ism_coll_sched *s, const ism_coll_args *a)
{
    int64_t *off = ag_layout(s, a);
    if (!off)
        return -1;
    ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, off[a->me], off[a->me + 1] - off[a->me]);
    ism_coll_ring_ag(s, a->p, a->me, ISM_SL_OUT, off);
    free(off);
    return ism_coll_sched_done(s);
}

/* Rotated: member me's temporary holds blocks me, me+1, .. in that order; at distance
 * 1, 2, 4, .. it sends what it has to me-d and gets as much from me+d. */
int ism_coll_allgather_bruck(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t *off = ag_layout(s, a);
    if (!off)
        return -1;
    int64_t tot = off[p];
    int t = ism_coll_tmp(s, tot);
    /* position i of t holds block (me + i) % p: offsets of the rotated order */
    int64_t head = off[p] - off[me]; /* blocks me .. p-1 */
    ism_coll_copy(s, ISM_SL_IN, 0, t, 0, off[me + 1] - off[me]);
    for (int have = 1; have < p; have *= 2) {
        int cnt = have < p - have ? have : p - have;
        int to = (me - have + p) % p, from = (me + have) % p;
        /* my positions [0, cnt) and the sender's, which land at [have, have + cnt) */
        int64_t slen = 0, rlen = 0, roff;
        for (int i = 0; i < cnt; i++) {
            int b = (me + i) % p, c = (me + have + i) % p;
            slen += off[b + 1] - off[b];
            rlen += off[c + 1] - off[c];
        }
        int first = (me + have) % p; /* block at position have */
        roff = first >= me ? off[first] - off[me] : head + off[first];
        ism_coll_send_nz(s, to, t, 0, slen);
        ism_coll_recv_nz(s, from, t, roff, rlen);
        ism_coll_round(s);
    }
    /* back to member order: blocks me..p-1 then 0..me-1 */
    ism_coll_copy(s, t, 0, ISM_SL_OUT, off[me], head);
    ism_coll_copy(s, t, head, ISM_SL_OUT, 0, off[me]);
    free(off);
    return ism_coll_sched_done(s);
}

/* Power of two: swap aligned groups of 1, 2, 4, .. members; otherwise Bruck's. */
int ism_coll_allgather_recursive_doubling(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    if (p & (p - 1))
        return ism_coll_allgather_bruck(s, a);
    int64_t *off = ag_layout(s, a);
    if (!off)
        return -1;
    ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, off[me], off[me + 1] - off[me]);
    for (int mask = 1; mask < p; mask <<= 1) {
        int d = me ^ mask, mg = me & ~(mask - 1), dg = d & ~(mask - 1);
        ism_coll_send_nz(s, d, ISM_SL_OUT, off[mg], off[mg + mask] - off[mg]);
        ism_coll_recv_nz(s, d, ISM_SL_OUT, off[dg], off[dg + mask] - off[dg]);
        ism_coll_round(s);
    }
    free(off);
    return ism_coll_sched_done(s);
}

int ism_coll_allgather_exchange(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t *off = ag_layout(s, a);
    if (!off)
        return -1;
    ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, off[me], off[me + 1] - off[me]);
    for (int i = 1; i < p; i++) {
        int to = (me + i) % p, from = (me - i + p) % p;
        ism_coll_send_nz(s, to, ISM_SL_OUT, off[me], off[me + 1] - off[me]);
        ism_coll_recv_nz(s, from, ISM_SL_OUT, off[from], off[from + 1] - off[from]);
    }
    ism_coll_round(s);
    free(off);
    return ism_coll_sched_done(s);
}

/* ---- alltoall: IN and OUT hold p blocks of a->bytes, block j for / from member j ---- */

int ism_coll_alltoall_pairwise(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t b = a->bytes;
    s->in_place_ok = 0;
    s->slot[ISM_SL_IN] = s->slot[ISM_SL_OUT] = s->out_len = b * p;
    ism_coll_copy(s, ISM_SL_IN, b * me, ISM_SL_OUT, b * me, b);
    for (int i = 1; i < p; i++) {
        int to = (me + i) % p, from = (me - i + p) % p;
        ism_coll_send_nz(s, to, ISM_SL_IN, b * to, b);
        ism_coll_recv_nz(s, from, ISM_SL_OUT, b * from, b);
        ism_coll_round(s);
    }
    return ism_coll_sched_done(s);
}

/* Bruck: position i of a rotated copy holds the block for member me+i; at distance k
 * the blocks whose position has bit k go to me+k, packed, and the ones from me-k take
 * their places. At the end position i holds member me-i's block for me. */
int ism_coll_alltoall_bruck(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    int64_t b = a->bytes;
    s->in_place_ok = 0;
    s->slot[ISM_SL_IN] = s->slot[ISM_SL_OUT] = s->out_len = b * p;
    int t = ism_coll_tmp(s, b * p), sp = ism_coll_tmp(s, b * ((p + 1) / 2)),
        rp = ism_coll_tmp(s, b * ((p + 1) / 2));
    ism_coll_copy(s, ISM_SL_IN, b * me, t, 0, b * (p - me));
    ism_coll_copy(s, ISM_SL_IN, 0, t, b * (p - me), b * me);
    for (int k = 1; k < p; k <<= 1) {
        int j = 0;
        for (int i = 0; i < p; i++)
            if (i & k)
                ism_coll_copy(s, t, b * i, sp, b * j++, b);
        ism_coll_send_nz(s, (me + k) % p, sp, 0, b * j);
        ism_coll_recv_nz(s, (me - k + p) % p, rp, 0, b * j);
        ism_coll_round(s);
        j = 0; /* the new round starts by unpacking what came */
        for (int i = 0; i < p; i++)
            if (i & k)
                ism_coll_copy(s, rp, b * j++, t, b * i, b);
    }
    for (int i = 0; i < p; i++)
        ism_coll_copy(s, t, b * i, ISM_SL_OUT, b * ((me - i + p) % p), b);
    return ism_coll_sched_done(s);
}

/* ---- barrier ---- */

int ism_coll_barrier_dissemination(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    for (int k = 1; k < p; k <<= 1) {
        ism_coll_send(s, (me + k) % p, ISM_SL_IN, 0, 0);
        ism_coll_recv(s, (me - k + p) % p, ISM_SL_IN, 0, 0);
        ism_coll_round(s);
    }
    return ism_coll_sched_done(s);
}

/* Everyone tells member 0, which then releases everyone: 2(p-1) messages. */
int ism_coll_barrier_linear(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me;
    if (me == 0) {
        for (int i = 1; i < p; i++)
            ism_coll_recv(s, i, ISM_SL_IN, 0, 0);
        ism_coll_round(s);
        for (int i = 1; i < p; i++)
            ism_coll_send(s, i, ISM_SL_IN, 0, 0);
    } else {
        ism_coll_send(s, 0, ISM_SL_IN, 0, 0);
        ism_coll_round(s);
        ism_coll_recv(s, 0, ISM_SL_IN, 0, 0);
    }
    ism_coll_round(s);
    return ism_coll_sched_done(s);
}
