/* sched.c: building schedules (the action list, rounds, slots) and the catalogue of
 * algorithms per collective. Builders only append; a builder that runs out of memory
 * marks the schedule unusable instead of checking every call.
 */
#include <stdlib.h>
#include <string.h>

#include "sched.h"

void ism_coll_sched_init(ism_coll_sched *s, int p, int me)
{
    memset(s, 0, sizeof *s);
    s->p = p;
    s->me = me;
    s->nslot = ISM_SL_TMP;
    s->in_place_ok = 1;
}

void ism_coll_sched_free(ism_coll_sched *s)
{
    free(s->act);
    free(s->rend);
    s->act = NULL;
    s->rend = NULL;
    s->nact = s->nround = s->capact = s->capround = 0;
}

int ism_coll_tmp(ism_coll_sched *s, int64_t len)
{
    if (s->nslot >= ISM_SL_MAX) {
        s->nomem = 1;
        return ISM_SL_TMP;
    }
    s->slot[s->nslot] = len;
    return s->nslot++;
}

/* Posts in the round now being built (from the end of the last closed round). */
static int open_posts(const ism_coll_sched *s)
{
    int n = 0;
    for (int i = s->nround ? s->rend[s->nround - 1] : 0; i < s->nact; i++)
        n += s->act[i].kind == ISM_CA_SEND || s->act[i].kind == ISM_CA_RECV;
    return n;
}

void ism_coll_round(ism_coll_sched *s)
{
    int start = s->nround ? s->rend[s->nround - 1] : 0;
    if (s->nact == start)
        return; /* an empty round is no round */
    int posts = open_posts(s);
    if (posts > s->maxpost)
        s->maxpost = posts;
    if (s->nround == s->capround) {
        int cap = s->capround ? 2 * s->capround : 16;
        int *r = realloc(s->rend, sizeof *r * (size_t)cap);
        if (!r) {
            s->nomem = 1;
            return;
        }
        s->rend = r;
        s->capround = cap;
    }
    s->rend[s->nround++] = s->nact;
}

static void add(ism_coll_sched *s, int kind, int a, int64_t aoff, int b, int64_t boff,
                int64_t len, int peer)
{
    if (s->npend && s->nact == (s->nround ? s->rend[s->nround - 1] : 0))
        ism_coll_flush(s); /* what the last round left for the start of this one */
    if (s->nact == s->capact) {
        int cap = s->capact ? 2 * s->capact : 32;
        ism_coll_act *n = realloc(s->act, sizeof *n * (size_t)cap);
        if (!n) {
            s->nomem = 1;
            return;
        }
        s->act = n;
        s->capact = cap;
    }
    ism_coll_act *x = &s->act[s->nact++];
    x->kind = (uint8_t)kind;
    x->a = (uint8_t)a;
    x->b = (uint8_t)b;
    x->aoff = aoff;
    x->boff = boff;
    x->len = len;
    x->peer = peer;
}

void ism_coll_send(ism_coll_sched *s, int peer, int slot, int64_t off, int64_t len)
{
    if (peer != s->me)
        add(s, ISM_CA_SEND, slot, off, 0, 0, len, peer);
}

void ism_coll_recv(ism_coll_sched *s, int peer, int slot, int64_t off, int64_t len)
{
    if (peer != s->me)
        add(s, ISM_CA_RECV, slot, off, 0, 0, len, peer);
}

void ism_coll_red(ism_coll_sched *s, int in, int64_t inoff, int inout, int64_t iooff,
                  int64_t len)
{
    if (len <= 0)
        return;
    if (len > s->maxred)
        s->maxred = len;
    add(s, ISM_CA_RED, in, inoff, inout, iooff, len, -1);
}

void ism_coll_copy(ism_coll_sched *s, int from, int64_t foff, int to, int64_t toff,
                   int64_t len)
{
    if (len <= 0 || (from == to && foff == toff))
        return;
    add(s, ISM_CA_COPY, from, foff, to, toff, len, -1);
}

static void defer(ism_coll_sched *s, int kind, int a, int64_t aoff, int b, int64_t boff,
                  int64_t len)
{
    if (len <= 0 || (kind == ISM_CA_COPY && a == b && aoff == boff))
        return;
    if (s->npend == (int)(sizeof s->pend / sizeof *s->pend)) {
        s->nomem = 1;
        return;
    }
    ism_coll_act *x = &s->pend[s->npend++];
    x->kind = (uint8_t)kind;
    x->a = (uint8_t)a;
    x->b = (uint8_t)b;
    x->aoff = aoff;
    x->boff = boff;
    x->len = len;
    x->peer = -1;
}

void ism_coll_defer_red(ism_coll_sched *s, int in, int64_t inoff, int inout, int64_t iooff,
                        int64_t len)
{
    defer(s, ISM_CA_RED, in, inoff, inout, iooff, len);
}

void ism_coll_defer_copy(ism_coll_sched *s, int from, int64_t foff, int to, int64_t toff,
                         int64_t len)
{
    defer(s, ISM_CA_COPY, from, foff, to, toff, len);
}

void ism_coll_flush(ism_coll_sched *s)
{
    ism_coll_act pend[sizeof s->pend / sizeof *s->pend];
    int n = s->npend;
    memcpy(pend, s->pend, sizeof *pend * (size_t)n);
    s->npend = 0;
    for (int i = 0; i < n; i++) {
        if (pend[i].kind == ISM_CA_RED)
            ism_coll_red(s, pend[i].a, pend[i].aoff, pend[i].b, pend[i].boff, pend[i].len);
        else
            ism_coll_copy(s, pend[i].a, pend[i].aoff, pend[i].b, pend[i].boff, pend[i].len);
    }
}

int ism_coll_sched_done(ism_coll_sched *s)
{
    ism_coll_round(s);
    if (s->npend) {
        ism_coll_flush(s);
        ism_coll_round(s);
    }
    return s->nomem ? -1 : 0;
}

/* Piece i of total bytes cut into parts pieces of whole units, the first ones one unit
 * larger (as schedule.py's split); *off is where it starts. */
int64_t ism_coll_split(int64_t total, int parts, int i, int64_t unit, int64_t *off)
{
    int64_t n = total / unit, q = n / parts, r = n % parts;
    int64_t before = (int64_t)i * q + (i < r ? i : r);
    if (off)
        *off = before * unit;
    return (q + (i < r ? 1 : 0)) * unit;
}

int ism_coll_pow2_below(int p)
{
    int q = 1;
    while (q <= p / 2)
        q *= 2;
    return q;
}

/* Segments of a pipeline: each seg bytes (rounded down to elements, at least one), the
 * last one what remains. */
int64_t ism_coll_nseg(int64_t bytes, int64_t seg, int64_t esize, int64_t *segbytes)
{
    if (seg <= 0)
        seg = ISM_COLL_DEFAULT_SEG;
    seg -= seg % esize;
    if (seg < esize)
        seg = esize;
    *segbytes = seg;
    return bytes ? (bytes + seg - 1) / seg : 1;
}

int64_t ism_coll_seg_elems(const ism_coll_args *a)
{
    if (a->seg <= 0)
        return 0;
    int64_t s = a->seg - a->seg % a->esize;
    return s < a->esize ? a->esize : s;
}

int64_t *ism_coll_member_blocks(const ism_coll_args *a)
{
    int64_t *off = ism_coll_blocks(a->p, a->blk, 0, a->esize);
    for (int i = 0; off && !a->blk && i <= a->p; i++)
        off[i] = a->bytes * i;
    return off;
}

int64_t *ism_coll_blocks(int n, const int64_t *blk, int64_t total, int64_t esize)
{
    int64_t *off = malloc(sizeof *off * (size_t)(n + 1));
    if (!off)
        return NULL;
    off[0] = 0;
    for (int i = 0; i < n; i++)
        off[i + 1] = off[i] + (blk ? blk[i] : ism_coll_split(total, n, i, esize, NULL));
    return off;
}

/* ---- the catalogue ---- */

static const ism_coll_alg barrier_algs[] = {
    {"dissemination", ism_coll_barrier_dissemination, 0, 0, 0},
    {"linear", ism_coll_barrier_linear, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg bcast_algs[] = {
    {"binomial", ism_coll_bcast_binomial, 0, 0, 0},
    {"knomial", ism_coll_bcast_knomial, 0, 1, 0},
    {"scatter_allgather", ism_coll_bcast_scatter_allgather, 0, 0, 0},
    {"chain", ism_coll_bcast_chain, 0, 0, 1},
    {"linear", ism_coll_bcast_linear, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg reduce_algs[] = {
    {"binomial", ism_coll_reduce_binomial, 0, 0, 0},
    {"knomial", ism_coll_reduce_knomial, 0, 1, 0},
    {"rabenseifner", ism_coll_reduce_rabenseifner, 0, 0, 0},
    {"chain", ism_coll_reduce_chain, 0, 0, 1},
    {"linear", ism_coll_reduce_linear, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg allreduce_algs[] = {
    {"recursive_doubling", ism_coll_allreduce_recursive_doubling, 0, 0, 0},
    {"rabenseifner", ism_coll_allreduce_rabenseifner, 0, 0, 0},
    {"ring", ism_coll_allreduce_ring, 1, 0, 1},
    {"knomial", ism_coll_allreduce_knomial, 0, 1, 0},
    {"linear", ism_coll_allreduce_linear, 0, 0, 0},
    {"exchange", ism_coll_allreduce_exchange, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg reduce_scatter_algs[] = {
    {"ring", ism_coll_reduce_scatter_ring, 1, 0, 1},
    {"recursive_halving", ism_coll_reduce_scatter_recursive_halving, 0, 0, 0},
    {"pairwise", ism_coll_reduce_scatter_pairwise, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg scan_algs[] = {
    {"recursive_doubling", ism_coll_scan_recursive_doubling, 0, 0, 0},
    {"chain", ism_coll_scan_chain, 0, 0, 1},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg allgather_algs[] = {
    {"ring", ism_coll_allgather_ring, 0, 0, 0},
    {"recursive_doubling", ism_coll_allgather_recursive_doubling, 0, 0, 0},
    {"bruck", ism_coll_allgather_bruck, 0, 0, 0},
    {"exchange", ism_coll_allgather_exchange, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const ism_coll_alg alltoall_algs[] = {
    {"pairwise", ism_coll_alltoall_pairwise, 0, 0, 0},
    {"bruck", ism_coll_alltoall_bruck, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};

static const char *const coll_names[ISM_COLL_N] = {
    "barrier", "bcast", "reduce", "allreduce", "reduce_scatter",
    "scan", "exscan", "allgather", "alltoall"};

const ism_coll_alg *ism_coll_algs(int coll)
{
    switch (coll) {
    case ISM_COLL_BARRIER: return barrier_algs;
    case ISM_COLL_BCAST: return bcast_algs;
    case ISM_COLL_REDUCE: return reduce_algs;
    case ISM_COLL_ALLREDUCE: return allreduce_algs;
    case ISM_COLL_REDUCE_SCATTER: return reduce_scatter_algs;
    case ISM_COLL_SCAN:
    case ISM_COLL_EXSCAN: return scan_algs;
    case ISM_COLL_ALLGATHER: return allgather_algs;
    case ISM_COLL_ALLTOALL: return alltoall_algs;
    default: return NULL;
    }
}

const char *ism_coll_name(int coll)
{
    return coll >= 0 && coll < ISM_COLL_N ? coll_names[coll] : "?";
}

int ism_coll_by_name(const char *name)
{
    for (int c = 0; c < ISM_COLL_N; c++)
        if (!strcmp(name, coll_names[c]))
            return c;
    return -1;
}

int ism_coll_alg_by_name(int coll, const char *name)
{
    const ism_coll_alg *a = ism_coll_algs(coll);
    for (int i = 0; a && a[i].name; i++)
        if (!strcmp(a[i].name, name))
            return i;
    return -1;
}
