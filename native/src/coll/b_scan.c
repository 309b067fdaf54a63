/* b_scan.c: inclusive and exclusive prefix reductions: recursive doubling (MPICH's scan:
 * a prefix and a partial over a window ending at me, exchanged at distance 1, 2, 4, ..)
 * and the segmented chain (member i waits for i-1's prefix of each segment).
 * Exscan leaves member 0's buffer untouched, its result being undefined.
 */
#include "sched.h"

/* Does member me exchange with a partner at a distance above mask? */
static int later(int p, int me, int mask)
{
    for (int m = mask << 1; m < p; m <<= 1)
        if ((me ^ m) < p)
            return 1;
    return 0;
}

/* Member me needs the partial of d = me ^ mask: for its prefix (d below it), or for its
 * own partial when it still has exchanges to make. Both ends know, so a message nobody
 * needs is not sent (on two members: one message). */
static int needs(int p, int me, int mask)
{
    return (me ^ mask) < me || later(p, me, mask);
}

int ism_coll_scan_recursive_doubling(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me, ex = a->exclusive;
    int64_t n = a->bytes;
    s->slot[ISM_SL_IN] = n;
    s->slot[ISM_SL_OUT] = n;
    s->out_len = ex && me == 0 ? 0 : n;
    if (!ex)
        ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
    if (p == 1)
        return ism_coll_sched_done(s);
    /* the partial stays IN until it first changes (IN is the program's: read only), so
     * IN must not be OUT: in place, the executor copies it first */
    s->in_place_ok = 0;
    int w = ISM_SL_IN, t = ism_coll_tmp(s, n), spare = -1, have = !ex;
    for (int mask = 1; mask < p; mask <<= 1) {
        int d = me ^ mask;
        if (d >= p)
            continue;
        int give = needs(p, d, mask), take = needs(p, me, mask), more = later(p, me, mask);
        if (give)
            ism_coll_send(s, d, w, 0, n);
        if (take)
            ism_coll_recv(s, d, t, 0, n);
        ism_coll_round(s);
        if (!take)
            continue;
        if (d < me) { /* the window below joins prefix and partial on the left */
            if (have)
                ism_coll_defer_red(s, t, 0, ISM_SL_OUT, 0, n);
            else
                ism_coll_defer_copy(s, t, 0, ISM_SL_OUT, 0, n);
            have = 1;
            if (!more)
                continue;
            if (w == ISM_SL_IN) { /* the partial becomes writable: T op IN */
                if (spare < 0)
                    spare = ism_coll_tmp(s, n);
                ism_coll_defer_copy(s, ISM_SL_IN, 0, spare, 0, n);
                w = spare;
            }
            ism_coll_defer_red(s, t, 0, w, 0, n);
        } else if (more) { /* the window above: partial op it, which lands in t */
            ism_coll_defer_red(s, w, 0, t, 0, n);
            int x = w;
            w = t;
            t = x == ISM_SL_IN ? (spare >= 0 ? spare : (spare = ism_coll_tmp(s, n))) : x;
        }
    }
    return ism_coll_sched_done(s);
}

int ism_coll_scan_chain(ism_coll_sched *s, const ism_coll_args *a)
{
    int p = a->p, me = a->me, ex = a->exclusive;
    int64_t n = a->bytes, sb, ns = ism_coll_nseg(n, a->seg, a->esize, &sb);
    s->slot[ISM_SL_IN] = n;
    s->slot[ISM_SL_OUT] = n;
    s->out_len = ex && me == 0 ? 0 : n;
    if (!ex)
        ism_coll_copy(s, ISM_SL_IN, 0, ISM_SL_OUT, 0, n);
    if (me == 0) {
        for (int64_t t = 0; t < ns && p > 1; t++) {
            ism_coll_send_nz(s, 1, ex ? ISM_SL_IN : ISM_SL_OUT, t * sb,
                             n - t * sb < sb ? n - t * sb : sb);
            ism_coll_round(s);
        }
        return ism_coll_sched_done(s);
    }
    int last = me == p - 1;
    /* inclusive: what arrives goes to a temporary and onto the left of OUT, which is
     * passed on; exclusive: it is OUT itself, and it op my input is passed on */
    int tr = ex ? ISM_SL_OUT : ism_coll_tmp(s, 2 * sb);
    int fw = ex ? (last ? -1 : ism_coll_tmp(s, n)) : ISM_SL_OUT;
    if (ex && !last)
        ism_coll_copy(s, ISM_SL_IN, 0, fw, 0, n);
    for (int64_t t = 0; t <= ns; t++) {
        if (t < ns) {
            int64_t l = n - t * sb < sb ? n - t * sb : sb;
            ism_coll_recv_nz(s, me - 1, tr, ex ? t * sb : (t % 2) * sb, l);
        }
        if (t >= 1) {
            int64_t o = (t - 1) * sb, l = n - o < sb ? n - o : sb;
            int64_t ro = ex ? o : ((t - 1) % 2) * sb;
            if (fw >= 0)
                ism_coll_red(s, tr, ro, fw, o, l);
            if (!last)
                ism_coll_send_nz(s, me + 1, fw, o, l);
        }
        ism_coll_round(s);
    }
    return ism_coll_sched_done(s);
}
