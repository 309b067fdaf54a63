/* b_bcast.c: broadcast schedules: k-nomial (binomial, linear) trees, the segmented
 * chain, and scatter + ring allgather (van de Geijn's, as in MPICH).
 *
 * The root's data is slot IN (the caller's buffer, read only); everyone else receives
 * into OUT, the caller's buffer there.
 */
#include <stdlib.h>

#include "sched.h"

static void roles(ism_coll_sched *s, const ism_coll_args *a)
{
    int root = s->me == a->root;
    s->slot[ISM_SL_IN] = root ? a->bytes : 0;
    s->slot[ISM_SL_OUT] = root ? 0 : a->bytes;
    s->out_off = 0;
    s->out_len = root ? 0 : a->bytes;
}

int ism_coll_bcast_knomial(ism_coll_sched *s, const ism_coll_args *a)
{
    roles(s, a);
    int k = a->radix >= 2 ? a->radix : ISM_COLL_DEFAULT_RADIX;
    ism_coll_kn_bcast(s, a->p, a->me, a->root, k, ISM_SL_IN, ISM_SL_OUT, a->bytes);
    return ism_coll_sched_done(s);
}

int ism_coll_bcast_binomial(ism_coll_sched *s, const ism_coll_args *a)
{
    roles(s, a);
    ism_coll_kn_bcast(s, a->p, a->me, a->root, 2, ISM_SL_IN, ISM_SL_OUT, a->bytes);
    return ism_coll_sched_done(s);
}

int ism_coll_bcast_linear(ism_coll_sched *s, const ism_coll_args *a)
{
    roles(s, a);
    ism_coll_kn_bcast(s, a->p, a->me, a->root, a->p > 2 ? a->p : 2, ISM_SL_IN, ISM_SL_OUT,
                      a->bytes);
    return ism_coll_sched_done(s);
}

/* Segments travel down the chain root, root+1, ...: round t receives segment t and
 * passes on segment t-1, so every link of the chain is busy at once. */
int ism_coll_bcast_chain(ism_coll_sched *s, const ism_coll_args *a)
{
    roles(s, a);
    int p = a->p, v = (a->me - a->root + p) % p;
    int next = (a->me + 1) % p, prev = (a->me - 1 + p) % p;
    int src = v ? ISM_SL_OUT : ISM_SL_IN;
    int64_t sb, n = ism_coll_nseg(a->bytes, a->seg, a->esize, &sb);
    if (p == 1 || !a->bytes)
        return ism_coll_sched_done(s);
    for (int64_t t = 0; t <= n; t++) {
        if (v && t < n) {
            int64_t o = t * sb;
            ism_coll_recv(s, prev, ISM_SL_OUT, o, a->bytes - o < sb ? a->bytes - o : sb);
        }
        int64_t ts = v ? t - 1 : t; /* the root has every segment from the start */
        if (v < p - 1 && ts >= 0 && ts < n) {
            int64_t o = ts * sb;
            ism_coll_send(s, next, src, o, a->bytes - o < sb ? a->bytes - o : sb);
        }
        ism_coll_round(s);
    }
    return ism_coll_sched_done(s);
}

/* Binomial scatter of p blocks (block v for the member v places after the root), then a
 * ring allgather of the blocks that leaves the root out: it has them all. */
int ism_coll_bcast_scatter_allgather(ism_coll_sched *s, const ism_coll_args *a)
{
    roles(s, a);
    int p = a->p, root = a->root, v = (a->me - root + p) % p;
    int src = v ? ISM_SL_OUT : ISM_SL_IN, kids[64 * 32];
    int64_t *off = ism_coll_blocks(p, NULL, a->bytes, a->esize);
    if (!off)
        return -1;
    if (v) {
        int sub = ism_coll_kn_subtree(v, p, 2);
        ism_coll_recv_nz(s, (ism_coll_kn_parent(v, 2) + root) % p, ISM_SL_OUT, off[v],
                         off[v + sub] - off[v]);
        ism_coll_round(s);
    }
    int n = ism_coll_kn_children(v, p, 2, kids);
    for (int i = n - 1; i >= 0; i--) {
        int c = kids[i], sub = ism_coll_kn_subtree(c, p, 2);
        ism_coll_send_nz(s, (c + root) % p, src, off[c], off[c + sub] - off[c]);
    }
    ism_coll_round(s);
    int next = (a->me + 1) % p, prev = (a->me - 1 + p) % p;
    for (int st = 0; st < p - 1; st++) {
        int sb = ((v - st) % p + p) % p, rb = ((v - st - 1) % p + p) % p;
        if (v)
            ism_coll_recv_nz(s, prev, ISM_SL_OUT, off[rb], off[rb + 1] - off[rb]);
        if (v != p - 1)
            ism_coll_send_nz(s, next, src, off[sb], off[sb + 1] - off[sb]);
        ism_coll_round(s);
    }
    free(off);
    return ism_coll_sched_done(s);
}
