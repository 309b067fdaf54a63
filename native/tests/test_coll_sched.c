/* test_coll_sched.c: every collective schedule of native/src/coll run for all its members
 * in one process, without MPI: 1..12 members, several roots, radices, segment sizes and
 * sizes (0, 1, odd, larger than a segment), blocks of unequal and zero sizes, in place.
 *
 * The simulator executes each member's rounds as the executor does (local actions at
 * once, sends and receives posted, the round done when they have all matched, one FIFO
 * per ordered pair of members) and fails on a deadlock, a message whose sender and
 * receiver disagree on its size, a message left over, and any access within a round that
 * races with a send or receive the round posted earlier. The data are 2x2 matrices of
 * uint32 multiplied modulo 2^32, so a reduction that combines contributions out of
 * member order gives a wrong result; algorithms that need a commutative op get
 * element-wise addition. Results are compared with a reference computed directly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/coll/sched.h"
#include "check.h"

#define ES 16 /* one element: a 2x2 matrix of uint32 */
#define MAXP 12

static int commutative_op; /* 1: element-wise sum, 0: matrix product */

/* inout = in op inout, element by element */
static void op(const uint8_t *in, uint8_t *inout, int64_t len)
{
    for (int64_t e = 0; e < len; e += ES) {
        uint32_t a[4], b[4], c[4];
        memcpy(a, in + e, ES);
        memcpy(b, inout + e, ES);
        if (commutative_op) {
            for (int i = 0; i < 4; i++)
                c[i] = a[i] + b[i];
        } else {
            c[0] = a[0] * b[0] + a[1] * b[2];
            c[1] = a[0] * b[1] + a[1] * b[3];
            c[2] = a[2] * b[0] + a[3] * b[2];
            c[3] = a[2] * b[1] + a[3] * b[3];
        }
        memcpy(inout + e, c, ES);
    }
}

static void fill(uint8_t *p, int64_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < len; i += 4) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        uint32_t v = x % 7 + 1;
        memcpy(p + i, &v, 4);
    }
}

/* ---- the simulator ---- */

typedef struct {
    int from, to;
    int64_t len;
    uint8_t *src; /* sender's bytes, read when matched */
    uint8_t *dst;
    int matched_send, matched_recv;
} msg;

typedef struct {
    ism_coll_sched s;
    uint8_t *slot[ISM_SL_MAX];
    int round;       /* current round */
    int started;     /* its actions have run / been posted */
    int pending;     /* posts of this round not completed */
    int done;
} member;

static member m[MAXP];
static msg *q;
static int nq, capq;

static uint8_t *where(member *x, int slot, int64_t off) { return x->slot[slot] + off; }

static int overlap(int sa, int64_t oa, int64_t la, int sb, int64_t ob, int64_t lb)
{
    return sa == sb && la > 0 && lb > 0 && oa < ob + lb && ob < oa + la;
}

/* Checks the round's actions for races: after a post, nothing may touch a receive's
 * bytes, nor write a send's bytes, nor may two posts of a receive overlap. */
static int races(const ism_coll_sched *s, int lo, int hi, const char *what)
{
    int bad = 0;
    for (int i = lo; i < hi; i++) {
        const ism_coll_act *p = &s->act[i];
        if (p->kind != ISM_CA_SEND && p->kind != ISM_CA_RECV)
            continue;
        for (int j = i + 1; j < hi; j++) {
            const ism_coll_act *x = &s->act[j];
            int r;
            if (x->kind == ISM_CA_SEND || x->kind == ISM_CA_RECV)
                r = (p->kind == ISM_CA_RECV || x->kind == ISM_CA_RECV) &&
                    overlap(p->a, p->aoff, p->len, x->a, x->aoff, x->len);
            else if (p->kind == ISM_CA_RECV)
                r = overlap(p->a, p->aoff, p->len, x->a, x->aoff, x->len) ||
                    overlap(p->a, p->aoff, p->len, x->b, x->boff, x->len);
            else
                r = overlap(p->a, p->aoff, p->len, x->b, x->boff, x->len);
            if (r) {
                fprintf(stderr, "%s: member %d actions %d and %d race\n", what, s->me, i, j);
                bad = 1;
            }
        }
    }
    return bad;
}

static void post(int me, const ism_coll_act *x, int is_send)
{
    member *y = &m[me];
    /* pair with the oldest unmatched opposite post of this ordered pair */
    int from = is_send ? me : x->peer, to = is_send ? x->peer : me;
    for (int i = 0; i < nq; i++) {
        msg *g = &q[i];
        if (g->from != from || g->to != to)
            continue;
        if (is_send ? g->matched_send : g->matched_recv)
            continue;
        if (is_send) {
            g->matched_send = 1;
            g->src = where(y, x->a, x->aoff);
            if (g->len != x->len)
                g->len = -1;
        } else {
            g->matched_recv = 1;
            g->dst = where(y, x->a, x->aoff);
            if (g->len != x->len)
                g->len = -1;
        }
        return;
    }
    if (nq == capq) {
        capq = capq ? 2 * capq : 64;
        q = realloc(q, sizeof *q * (size_t)capq);
    }
    msg *g = &q[nq++];
    memset(g, 0, sizeof *g);
    g->from = from;
    g->to = to;
    g->len = x->len;
    if (is_send) {
        g->matched_send = 1;
        g->src = where(y, x->a, x->aoff);
    } else {
        g->matched_recv = 1;
        g->dst = where(y, x->a, x->aoff);
    }
}

static int start_round(int me, const char *what)
{
    member *y = &m[me];
    ism_coll_sched *s = &y->s;
    int lo = y->round ? s->rend[y->round - 1] : 0, hi = s->rend[y->round];
    int bad = races(s, lo, hi, what);
    y->pending = 0;
    for (int i = lo; i < hi; i++) {
        const ism_coll_act *x = &s->act[i];
        switch (x->kind) {
        case ISM_CA_SEND:
        case ISM_CA_RECV:
            post(me, x, x->kind == ISM_CA_SEND);
            y->pending++;
            break;
        case ISM_CA_RED:
            op(where(y, x->a, x->aoff), where(y, x->b, x->boff), x->len);
            break;
        case ISM_CA_COPY:
            memmove(where(y, x->b, x->boff), where(y, x->a, x->aoff), (size_t)x->len);
            break;
        }
    }
    y->started = 1;
    return bad;
}

/* Deliver every message whose both ends are posted; returns what moved. */
static int deliver(const char *what, int *bad)
{
    int moved = 0;
    for (int i = 0; i < nq;) {
        msg *g = &q[i];
        if (!(g->matched_send && g->matched_recv)) {
            i++;
            continue;
        }
        if (g->len < 0) {
            fprintf(stderr, "%s: members %d -> %d disagree on a message size\n", what, g->from,
                    g->to);
            *bad = 1;
        } else if (g->len) {
            memmove(g->dst, g->src, (size_t)g->len);
        }
        m[g->from].pending--;
        m[g->to].pending--;
        /* removed in place: each pair's posts stay in FIFO order */
        memmove(&q[i], &q[i + 1], sizeof *q * (size_t)(nq - i - 1));
        nq--;
        moved++;
    }
    return moved;
}

/* Runs every member's schedule; skip: a member that never starts (-1: none). */
static int simulate(int p, const char *what, int skip)
{
    int bad = 0;
    nq = 0;
    for (int r = 0; r < p; r++) {
        m[r].round = 0;
        m[r].started = 0;
        m[r].done = m[r].s.nround == 0;
    }
    for (;;) {
        int progress = 0;
        for (int r = 0; r < p; r++) {
            member *y = &m[r];
            if (r == skip || y->done)
                continue;
            if (!y->started) {
                bad |= start_round(r, what);
                progress = 1;
            }
        }
        progress += deliver(what, &bad);
        for (int r = 0; r < p; r++) {
            member *y = &m[r];
            if (r == skip || y->done || !y->started || y->pending)
                continue;
            y->round++;
            y->started = 0;
            if (y->round == y->s.nround)
                y->done = 1;
            progress = 1;
        }
        int all = 1;
        for (int r = 0; r < p; r++)
            all &= r == skip || m[r].done;
        if (all)
            break;
        if (!progress) {
            if (skip < 0) {
                fprintf(stderr, "%s: deadlock:", what);
                for (int r = 0; r < p; r++)
                    if (!m[r].done)
                        fprintf(stderr, " member %d in round %d/%d;", r, m[r].round,
                                m[r].s.nround);
                fputc('\n', stderr);
            }
            return skip < 0 ? 1 : 2;
        }
    }
    if (nq && skip < 0) {
        fprintf(stderr, "%s: %d messages left over\n", what, nq);
        bad = 1;
    }
    return bad;
}

/* ---- the collectives' references ---- */

typedef struct {
    int coll, alg, p, root, radix, exclusive, in_place, commute;
    int64_t count, seg;
    int64_t blk[MAXP]; /* bytes per member (reduce_scatter, allgather), or blk[0] < 0 */
} tcase;

static uint8_t *input[MAXP];

static void reduce_range(int lo, int hi, int64_t off, int64_t len, uint8_t *out)
{
    /* x_lo op x_lo+1 op ... op x_hi-1: fold from the right */
    memcpy(out, input[hi - 1] + off, (size_t)len);
    for (int r = hi - 2; r >= lo; r--)
        op(input[r] + off, out, len);
}

static int run_case(const tcase *t)
{
    const ism_coll_alg *algs = ism_coll_algs(t->coll);
    const ism_coll_alg *al = &algs[t->alg];
    char what[256];
    snprintf(what, sizeof what, "%s/%s p=%d root=%d count=%lld radix=%d seg=%lld%s%s%s",
             ism_coll_name(t->coll), al->name, t->p, t->root, (long long)t->count, t->radix,
             (long long)t->seg, t->exclusive ? " exclusive" : "",
             t->in_place ? " in-place" : "", t->commute ? " commutative" : "");
    int p = t->p, bad = 0;
    commutative_op = al->commute_only || t->commute;
    int64_t blk[MAXP], vec = t->count * ES, inlen[MAXP];
    int var = t->blk[0] >= 0;
    for (int r = 0; r < p; r++)
        blk[r] = var ? t->blk[r] : vec;
    ism_coll_args a = {0};
    a.p = p;
    a.root = t->root;
    a.esize = ES;
    a.bytes = vec;
    a.blk = var ? blk : NULL;
    a.radix = t->radix;
    a.seg = t->seg;
    a.commute = commutative_op;
    a.exclusive = t->exclusive;
    int64_t total = 0;
    for (int r = 0; r < p; r++)
        total += blk[r];
    for (int r = 0; r < p; r++) {
        a.me = r;
        ism_coll_sched_init(&m[r].s, p, r);
        if (al->build(&m[r].s, &a)) {
            fprintf(stderr, "%s: member %d: the builder failed\n", what, r);
            return 1;
        }
    }
    /* inputs */
    for (int r = 0; r < p; r++) {
        switch (t->coll) {
        case ISM_COLL_REDUCE_SCATTER: inlen[r] = total; break;
        case ISM_COLL_ALLGATHER: inlen[r] = blk[r]; break;
        case ISM_COLL_ALLTOALL: inlen[r] = vec * p; break;
        default: inlen[r] = vec;
        }
        input[r] = malloc((size_t)inlen[r] + 1);
        fill(input[r], inlen[r], (uint32_t)(r * 7919 + t->count * 31 + 1));
    }
    int64_t *aoff = ism_coll_blocks(p, blk, 0, ES); /* allgather/reduce_scatter offsets */
    for (int r = 0; r < p; r++) {
        member *y = &m[r];
        ism_coll_sched *s = &y->s;
        CHECK(s->slot[ISM_SL_IN] == 0 || s->slot[ISM_SL_IN] == inlen[r] ||
                  t->coll == ISM_COLL_BCAST,
              "%s: member %d: IN is %lld bytes, the input %lld", what, r,
              (long long)s->slot[ISM_SL_IN], (long long)inlen[r]);
        for (int k = 0; k < s->nslot; k++) {
            y->slot[k] = malloc((size_t)s->slot[k] + 1);
            memset(y->slot[k], 0xcd, (size_t)s->slot[k] + 1);
        }
        if (t->coll == ISM_COLL_BCAST) {
            if (r == t->root)
                memcpy(y->slot[ISM_SL_IN], input[r], (size_t)vec);
        } else if (s->slot[ISM_SL_IN]) {
            memcpy(y->slot[ISM_SL_IN], input[r], (size_t)inlen[r]);
        }
        /* in place: IN is the caller's data inside OUT */
        int ip = t->in_place && s->in_place_ok &&
                 (t->coll != ISM_COLL_REDUCE || r == t->root);
        if (ip) {
            int64_t at = t->coll == ISM_COLL_ALLGATHER ? aoff[r] : 0;
            memcpy(y->slot[ISM_SL_OUT] + at, input[r], (size_t)inlen[r]);
            free(y->slot[ISM_SL_IN]);
            y->slot[ISM_SL_IN] = NULL;
            y->slot[ISM_SL_IN] = y->slot[ISM_SL_OUT] + at;
            y->s.slot[ISM_SL_IN] = -1; /* marks the alias for freeing */
        }
    }
    bad |= simulate(p, what, -1);
    /* results */
    uint8_t *ref = malloc((size_t)(vec * p + total + 16));
    for (int r = 0; r < p && !bad; r++) {
        member *y = &m[r];
        ism_coll_sched *s = &y->s;
        uint8_t *got = y->slot[ISM_SL_OUT] + s->out_off;
        int64_t want = 0;
        switch (t->coll) {
        case ISM_COLL_BCAST:
            want = r == t->root ? 0 : vec;
            memcpy(ref, input[t->root], (size_t)vec);
            break;
        case ISM_COLL_REDUCE:
            want = r == t->root ? vec : 0;
            if (want)
                reduce_range(0, p, 0, vec, ref);
            break;
        case ISM_COLL_ALLREDUCE:
            want = vec;
            reduce_range(0, p, 0, vec, ref);
            break;
        case ISM_COLL_REDUCE_SCATTER:
            want = blk[r];
            if (want)
                reduce_range(0, p, aoff[r], blk[r], ref);
            break;
        case ISM_COLL_SCAN:
        case ISM_COLL_EXSCAN:
            want = t->exclusive && r == 0 ? 0 : vec;
            if (want)
                reduce_range(0, t->exclusive ? r : r + 1, 0, vec, ref);
            break;
        case ISM_COLL_ALLGATHER:
            want = total;
            for (int i = 0; i < p; i++)
                memcpy(ref + aoff[i], input[i], (size_t)blk[i]);
            break;
        case ISM_COLL_ALLTOALL:
            want = vec * p;
            for (int i = 0; i < p; i++)
                memcpy(ref + vec * i, input[i] + vec * r, (size_t)vec);
            break;
        default:
            want = 0;
        }
        if (s->out_len != want) {
            CHECK(0, "%s: member %d: result is %lld bytes, expected %lld", what, r,
                  (long long)s->out_len, (long long)want);
            bad = 1;
        } else if (want && memcmp(got, ref, (size_t)want)) {
            int64_t e = 0;
            while (e < want && got[e] == ref[e])
                e++;
            CHECK(0, "%s: member %d: wrong result from byte %lld", what, r, (long long)e);
            bad = 1;
        }
    }
    if (bad)
        failures++;
    free(ref);
    free(aoff);
    for (int r = 0; r < p; r++) {
        member *y = &m[r];
        for (int k = 0; k < y->s.nslot; k++)
            if (!(k == ISM_SL_IN && y->s.slot[ISM_SL_IN] < 0))
                free(y->slot[k]);
        ism_coll_sched_free(&y->s);
        free(input[r]);
    }
    return bad;
}

/* A barrier must not let anyone out while someone has not entered. */
static void barrier_holds(int alg, int p)
{
    const ism_coll_alg *al = &ism_coll_algs(ISM_COLL_BARRIER)[alg];
    for (int skip = 0; skip < p && p > 1; skip++) {
        ism_coll_args a = {0};
        a.p = p;
        a.esize = 1;
        for (int r = 0; r < p; r++) {
            a.me = r;
            ism_coll_sched_init(&m[r].s, p, r);
            al->build(&m[r].s, &a);
            for (int k = 0; k < m[r].s.nslot; k++)
                m[r].slot[k] = malloc(1);
        }
        char what[128];
        snprintf(what, sizeof what, "barrier/%s p=%d without member %d", al->name, p, skip);
        int rc = simulate(p, what, skip);
        int out = 0;
        for (int r = 0; r < p; r++)
            out += r != skip && m[r].done;
        CHECK(rc == 2 && out == 0, "%s: %d members got out", what, out);
        CHECK(simulate(p, what, -1) == 0, "%s: the full barrier does not complete", what);
        for (int r = 0; r < p; r++) {
            for (int k = 0; k < m[r].s.nslot; k++)
                free(m[r].slot[k]);
            ism_coll_sched_free(&m[r].s);
        }
    }
}

int main(void)
{
    static const int64_t counts[] = {0, 1, 2, 3, 5, 8, 13, 64};
    static const int radices[] = {2, 3, 4};
    static const int64_t segs[] = {0, ES + 5, 3 * ES};
    int cases = 0;
    for (int coll = 0; coll < ISM_COLL_N; coll++) {
        const ism_coll_alg *algs = ism_coll_algs(coll);
        for (int alg = 0; algs[alg].name; alg++) {
            const ism_coll_alg *al = &algs[alg];
            if (coll == ISM_COLL_BARRIER) {
                for (int p = 1; p <= MAXP; p++) {
                    barrier_holds(alg, p);
                    cases++;
                }
                continue;
            }
            int nr = al->radix ? 3 : 1, ns = al->seg ? 3 : 1;
            for (int p = 1; p <= MAXP; p++)
                for (unsigned ci = 0; ci < sizeof counts / sizeof *counts; ci++)
                    for (int ri = 0; ri < nr; ri++)
                        for (int si = 0; si < ns; si++) {
                            int roots[4] = {0, p - 1, p / 2, 1 % p}, nroot = 1;
                            if (coll == ISM_COLL_BCAST || coll == ISM_COLL_REDUCE)
                                nroot = 4;
                            for (int ro = 0; ro < nroot; ro++)
                                for (int ip = 0; ip < 4; ip++) {
                                    /* ip & 1: in place; ip & 2: a commutative op (the
                                     * builders take other paths for one) */
                                    tcase t = {coll, alg, p, roots[ro], radices[ri],
                                               coll == ISM_COLL_EXSCAN, ip & 1, ip >> 1,
                                               counts[ci], segs[si], {-1}};
                                    if ((ip & 1) && (coll == ISM_COLL_BCAST ||
                                                     coll == ISM_COLL_ALLTOALL ||
                                                     coll == ISM_COLL_REDUCE_SCATTER))
                                        continue;
                                    run_case(&t);
                                    cases++;
                                    /* unequal blocks, zeros among them */
                                    if (!(ip & 1) && ri == 0 && (coll == ISM_COLL_REDUCE_SCATTER ||
                                                           coll == ISM_COLL_ALLGATHER)) {
                                        for (int r = 0; r < p; r++)
                                            t.blk[r] = ES * ((r * 5 + counts[ci]) % 4);
                                        run_case(&t);
                                        cases++;
                                    }
                                }
                        }
        }
    }
    printf("test_coll_sched: %d cases, %d failures\n", cases, failures);
    return failures ? 1 : 0;
}
