/* twolevel.c: the collectives of the coll layer, composed in two levels.
 *
 * On a communicator within one site a collective is one phase over all its members.
 * Across sites it is a phase inside each site (the vendor's collective or one of our
 * schedules over the site's members), a phase among one member per site (the sites'
 * leaders, or the root at the root's site) over the WAN, and a phase inside each site
 * again: so the number of WAN messages depends on the sites, never on the ranks. Each
 * phase's algorithm is chosen by select.c.
 *
 * Data move as packed bytes from the caller's buffers (contiguous types: the buffers
 * themselves; others are packed once at the start and unpacked once at the end), so
 * every phase works on plain byte ranges whatever the datatype. Reductions combine in
 * member order; with a non-commutative op that is rank order only when each site's
 * members are consecutive ranks (site_runs), otherwise the core's gather-based path is
 * used (core/coll_reduce.c).
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define SMALL (64 << 10)

/* ---- one collective's context ---- */

typedef struct pk {
    ism_comm *c;
    ism_op *op;
    int commute;
    int64_t esize;
    ism_dt *vdt; /* the vendor can reduce the packed bytes as this type, or NULL */
    ism_coll_redop red;
} pk;

static void pk_init(pk *x, ism_comm *c, ism_dt *dt, ism_op *op)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->op = op;
    x->commute = !op || !op->user || op->commute;
    x->esize = dt->size;
    ism_coll_redop_init(&x->red, op, dt);
    x->vdt = op && !op->user ? x->red.basic : NULL;
}

/* The packed form of count elements of dt at buf: the buffer itself for a contiguous
 * type, else a new buffer (packed from buf when fill). *raw is what to free. */
static char *packed(ism_dt *dt, const void *buf, int64_t count, int fill, char **raw)
{
    *raw = NULL;
    if (dt->contig)
        return buf ? (char *)(uintptr_t)buf + dt->contig_off : NULL;
    int64_t n = count * dt->size;
    if (!(*raw = malloc((size_t)(n ? n : 1))))
        return NULL;
    if (fill && n)
        ism_dt_pack(dt, buf, (int)count, *raw);
    return *raw;
}

/* The caller's input and result as packed bytes for one collective call. */
typedef struct io {
    char *in, *out;     /* packed input and result */
    char *rin, *rout;   /* what packed() allocated, or NULL */
    ism_dt *odt;        /* the result's type and count, for unpacking at the end */
    void *rbuf;
    int64_t ocount;
} io;

static int io_open(io *b, ism_dt *idt, const void *ibuf, int64_t icount, ism_dt *odt, void *rbuf,
                   int64_t ocount)
{
    b->in = packed(idt, ibuf, icount, 1, &b->rin);
    b->out = rbuf ? packed(odt, rbuf, ocount, 0, &b->rout) : (b->rout = NULL);
    b->odt = odt;
    b->rbuf = rbuf;
    b->ocount = ocount;
    return (ibuf && !b->in) || (rbuf && !b->out) ? ISM_ERR_NO_MEM : 0;
}

/* Unpacks the result (when unpack and it was packed) and frees; returns rc. */
static int io_close(io *b, int rc, int unpack)
{
    if (!rc && unpack && b->rout && b->rbuf)
        ism_dt_unpack(b->odt, b->out, b->rbuf, (int)b->ocount);
    free(b->rin);
    free(b->rout);
    return rc;
}

/* ism_coll_alg_by_name for the defaults' names (string literals, so their addresses
 * identify them): looked up once, not by strcmp on every call */
static int by_name(int coll, const char *name)
{
    static struct {
        const char *name;
        int coll, alg;
    } memo[64];
    static int nmemo;
    int n = __atomic_load_n(&nmemo, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (__atomic_load_n(&memo[i].name, __ATOMIC_ACQUIRE) == name && memo[i].coll == coll)
            return memo[i].alg;
    int alg = ism_coll_alg_by_name(coll, name);
    if (n < 64 && __atomic_compare_exchange_n(&nmemo, &n, n + 1, 0, __ATOMIC_ACQ_REL,
                                              __ATOMIC_RELAXED)) {
        memo[n].coll = coll;
        memo[n].alg = alg;
        /* published last: until then the entry's name is NULL and matches nothing */
        __atomic_store_n(&memo[n].name, name, __ATOMIC_RELEASE);
    }
    return alg;
}

#define CHAIN_MIN ((int64_t)2 * ISM_SHM_CELL)
/* Sites up to which the leaders' barrier is the dissemination barrier by default: at 2
 * sites one round, both messages at once, where the core's gather and release takes two
 * one-way delays in turn (2 emulated sites, 10 ms: 14.0-15.0 ms against 20.5-24.0,
 * bench/notebook/collectives.md, issue 8 runs 2-4). From 3 sites it takes ceil(log2 S) rounds, no fewer
 * than the gather and release's 2 delays, with S messages a round instead of 2(S-1) in
 * all: the core's stays. */
#define BARRIER_DISS_MAX 2

static int algs_default(int coll, int lvl, int64_t bytes, int p)
{
    const char *name;
    if (lvl == ISM_LVL_WAN) {
        switch (coll) {
        case ISM_COLL_ALLREDUCE: case ISM_COLL_ALLGATHER: name = "exchange"; break;
        /* two sites: the dissemination barrier (BARRIER_DISS_MAX) */
        case ISM_COLL_BARRIER: name = p <= BARRIER_DISS_MAX ? "dissemination" : "linear"; break;
        case ISM_COLL_SCAN: case ISM_COLL_EXSCAN: name = "chain"; break;
        case ISM_COLL_REDUCE_SCATTER: name = "pairwise"; break;
        default: name = "linear";
        }
        return by_name(coll, name);
    }
    switch (coll) {
    case ISM_COLL_BARRIER: name = "dissemination"; break;
    case ISM_COLL_BCAST: name = bytes < SMALL || p < 3 ? "binomial" : "scatter_allgather"; break;
    /* Two members: Rabenseifner's halving moves the same bytes as the tree or the
     * exchange, in two rounds instead of one (measured 1.1-2.3x slower at 64 KiB-1 MiB,
     * bench/notebook/collectives.md, issue 8 "against the vendor") */
    case ISM_COLL_REDUCE:
        name = p == 2 ? (bytes >= CHAIN_MIN ? "chain" : "binomial")
                      : bytes < SMALL ? "binomial" : "rabenseifner";
        break;
    case ISM_COLL_ALLREDUCE:
        name = bytes < SMALL || p == 2 ? "recursive_doubling" : "rabenseifner";
        break;
    /* recursive halving first copies the whole vector into position order, which at
     * two members is the same order: pairwise's one exchange copies only my block */
    case ISM_COLL_REDUCE_SCATTER: name = p == 2 ? "pairwise" : "recursive_halving"; break;
    case ISM_COLL_ALLGATHER: name = bytes * p < SMALL ? "recursive_doubling" : "ring"; break;
    case ISM_COLL_ALLTOALL: name = "pairwise"; break;
    /* two members from 2 cells up: the pipelined chain (default_choice) */
    case ISM_COLL_SCAN:
    case ISM_COLL_EXSCAN: name = p == 2 && bytes >= CHAIN_MIN ? "chain" : "recursive_doubling"; break;
    default: name = "recursive_doubling";
    }
    return by_name(coll, name);
}

/* The default of a phase with its segment. Two members of a site with 16 KiB or more to
 * reduce or scan: a chain in segments of one shared-memory cell (8 KiB), so that the
 * root reduces segment k while segment k+1 crosses, and every segment takes the
 * channels (coll/shm.c). Measured at 2 ranks against the one-message tree: 0.5-0.7x the
 * vendor's time at 16 KiB-1 MiB under Open MPI, where the tree was 1.0-1.1x
 * (bench/notebook/collectives.md, issue 8, "shared-memory channels"). */
static ism_coll_choice default_choice(int coll, int lvl, int64_t bytes, int p)
{
    ism_coll_choice ch = {algs_default(coll, lvl, bytes, p), 0, 0};
    if (lvl == ISM_LVL_INTRA && p == 2 && bytes >= CHAIN_MIN &&
        (coll == ISM_COLL_REDUCE || coll == ISM_COLL_SCAN || coll == ISM_COLL_EXSCAN))
        ch.seg = ISM_SHM_CELL;
    return ch;
}

/* The vendor can do this phase on packed data: a reduction only with a predefined op
 * on bytes that are an array of one basic type (a user op is applied by isthmus, never
 * by the vendor, which would call it with a vendor datatype handle). */
static int vendor_can(const pk *x, int coll)
{
    switch (coll) {
    case ISM_COLL_REDUCE:
    case ISM_COLL_ALLREDUCE:
    case ISM_COLL_SCAN:
    case ISM_COLL_EXSCAN:
    case ISM_COLL_REDUCE_SCATTER:
        return x->vdt != NULL;
    default:
        return 1;
    }
}

/* Inside a site the vendor's collective is the default where it can run the phase,
 * except: (1) scan, exscan and reduce-scatter, whose vendor forms came later and are
 * used only when chosen; (2) barrier and the reductions on a communicator within one
 * site, where our schedules are the default. Why (2): isthmus must call the vendor's
 * nonblocking form and wait in its own loop (design.md, "Nonblocking collectives as
 * coroutines"), and at 2 ranks that measured 1.3-10x slower than our schedules, whose
 * point-to-point waits may block in the vendor when nothing else is pending, at every
 * size with MPICH and Open MPI alike (bench/notebook/collectives.md, issue 8 "against the vendor"). */
static int vendor_default(const pk *x, int coll)
{
    switch (coll) {
    case ISM_COLL_SCAN:
    case ISM_COLL_EXSCAN:
    case ISM_COLL_REDUCE_SCATTER:
        return 0;
    case ISM_COLL_BARRIER:
    case ISM_COLL_REDUCE:
    case ISM_COLL_ALLREDUCE:
        return !x->c->all_local && vendor_can(x, coll);
    default:
        return vendor_can(x, coll);
    }
}

/* The algorithm of a phase from what select.c chose, never DEFAULT: at intra level
 * the vendor where it is the default (vendor_default), else our default; at wan level
 * ours. */
static ism_coll_choice resolve(pk *x, int coll, int lvl, int p, int64_t bytes,
                               ism_coll_choice ch)
{
    if (ch.alg == ISM_ALG_PIPELINE) /* the caller takes it when it applies */
        ch.alg = ISM_ALG_DEFAULT;
    if (ch.alg == ISM_ALG_DEFAULT && lvl == ISM_LVL_INTRA && vendor_default(x, coll))
        ch.alg = ISM_ALG_VENDOR;
    if ((ch.alg == ISM_ALG_VENDOR && !vendor_can(x, coll)) || ch.alg == ISM_ALG_DEFAULT)
        ch = default_choice(coll, lvl, bytes, p);
    return ch;
}

ism_coll_choice ism_coll_schedule_choice(ism_comm *c, int coll, int lvl, int p, int64_t bytes,
                                         int commute)
{
    ism_coll_choice ch = ism_coll_select(c, coll, lvl, p, bytes, commute);
    if (ch.alg < 0)
        ch = default_choice(coll, lvl, bytes, p);
    return ch;
}

static ism_coll_choice choose(pk *x, int coll, int lvl, int p, int64_t bytes)
{
    return resolve(x, coll, lvl, p, bytes,
                   ism_coll_select(x->c, coll, lvl, p, bytes, x->commute));
}

static int is_default(ism_comm *c, int coll, int lvl, int p, int64_t bytes, int commute,
                      int vendor_too)
{
    int a = ism_coll_select(c, coll, lvl, p, bytes, commute).alg;
    return a == ISM_ALG_DEFAULT || (vendor_too && a == ISM_ALG_VENDOR);
}

/* Runs a schedule of ours for one phase. in/out: packed slots IN and OUT (out only
 * where this member gets a result). */
static int run(pk *x, int coll, int lvl, ism_coll_choice ch, const ism_coll_view *v, int root,
               const int64_t *blk, int64_t bytes, const void *in, void *out)
{
    ism_coll_key k;
    if (ch.alg < 0) /* the vendor where it cannot: ours */
        ch = default_choice(coll, lvl, bytes, v->p);
    memset(&k, 0, sizeof k);
    k.coll = (int8_t)coll;
    k.lvl = (int8_t)lvl;
    k.alg = (int8_t)ch.alg;
    k.radix = ch.radix;
    k.seg = ch.seg;
    k.p = v->p;
    k.me = v->me;
    k.root = root;
    k.bytes = bytes;
    k.esize = x->esize ? x->esize : 1;
    k.commute = (int8_t)x->commute;
    k.exclusive = coll == ISM_COLL_EXSCAN;
    const ism_coll_sched *s = ism_coll_cached(x->c, &k, blk);
    if (!s)
        return ISM_ERR_NO_MEM;
    int rc;
    if (lvl == ISM_LVL_INTRA && v->p > 1) { /* every member of the site is here */
        ism_coll_shm *sm;
        if ((rc = ism_comm_add_vcoll(x->c)) || (rc = ism_coll_shm_get(x->c, &sm)))
            return rc;
    }
    ism_coll_count(coll, lvl, ch.alg);
    return ism_coll_exec(s, v, x->c, in, s->out_len ? out : NULL, &x->red);
}

ism_coll_view ism_coll_intra_view(ism_comm *c)
{
    ism_coll_view v = {c->lsize, c->lrank, c->c_of_l};
    return v;
}

/* One member per site, in the order of the sites' leaders (rank order of the sites'
 * runs): the root at the root's site (root >= 0; *wroot gets its index), else the
 * leader, or with last the site's last member. m has room for ism.lay.nsites. */
ism_coll_view ism_coll_wan_view(ism_comm *c, int root, int last, int *m, int *wroot)
{
    int n = 0;
    for (int s = 0; s < ism.lay.nsites; s++)
        if (c->leaders[s] >= 0)
            m[n++] = c->leaders[s];
    for (int i = 1; i < n; i++) /* insertion sort by leader rank */
        for (int j = i; j > 0 && m[j - 1] > m[j]; j--) {
            int t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        int s = c->site_of[m[i]];
        if (root >= 0 && c->site_of[root] == s)
            m[i] = root;
        else if (last)
            for (int r = m[i]; r < c->size; r++)
                if (c->site_of[r] == s)
                    m[i] = r;
    }
    ism_coll_view v = {n, -1, m};
    for (int i = 0; i < n; i++) {
        if (m[i] == c->rank)
            v.me = i;
        if (wroot && m[i] == root)
            *wroot = i;
    }
    return v;
}

static int vwait(int rc, ism_vh *r)
{
    return ism_vwait(rc, r);
}

/* ---- phases ---- */

static int ph_barrier(pk *x, ism_coll_choice ch, const ism_coll_view *v, int lvl)
{
    if (ch.alg == ISM_ALG_VENDOR) {
        ism_vh r = 0;
        ism_coll_count(ISM_COLL_BARRIER, lvl, ISM_ALG_VENDOR);
        return vwait(ism.be->ibarrier(x->c->vcomm, &r), &r);
    }
    return run(x, ISM_COLL_BARRIER, lvl, ch, v, 0, NULL, 0, NULL, NULL);
}

/* buf: the root's data (IN) at the root, the result (OUT) elsewhere */
static int ph_bcast(pk *x, ism_coll_choice ch, const ism_coll_view *v, int lvl, int root,
                    int64_t bytes, void *buf)
{
    if (v->p < 2)
        return 0;
    if (ch.alg == ISM_ALG_VENDOR && bytes <= 0x7fffffff) {
        ism_vh r = 0;
        ism_coll_count(ISM_COLL_BCAST, lvl, ISM_ALG_VENDOR);
        return vwait(ism.be->ibcast(buf, (int)bytes, ISM_DT_BYTE->v, root, x->c->vcomm, &r), &r);
    }
    if (ch.alg == ISM_ALG_VENDOR)
        ch = default_choice(ISM_COLL_BCAST, lvl, bytes, v->p);
    return run(x, ISM_COLL_BCAST, lvl, ch, v, root, NULL, bytes,
               v->me == root ? buf : NULL, v->me == root ? NULL : buf);
}

/* in: my contribution; out: the result at the root (may be in itself) */
static int ph_reduce(pk *x, ism_coll_choice ch, const ism_coll_view *v, int lvl, int root,
                     int64_t bytes, const void *in, void *out)
{
    if (v->p < 2) {
        if (out && in != out)
            ism_coll_move(out, in, (size_t)bytes);
        return 0;
    }
    int64_t n = x->vdt ? bytes / x->vdt->size : 0;
    if (ch.alg == ISM_ALG_VENDOR && n <= 0x7fffffff) {
        ism_vh r = 0;
        int64_t o = x->vdt->contig_off;
        ism_coll_count(ISM_COLL_REDUCE, lvl, ISM_ALG_VENDOR);
        const void *sb = in == out ? NULL : (const char *)in - o;
        return vwait(ism.be->ireduce(sb, out ? (char *)out - o : NULL, (int)n, x->vdt->v,
                                     x->op->v, root, x->c->vcomm, &r), &r);
    }
    if (ch.alg == ISM_ALG_VENDOR)
        ch = default_choice(ISM_COLL_REDUCE, lvl, bytes, v->p);
    return run(x, ISM_COLL_REDUCE, lvl, ch, v, root, NULL, bytes, in, v->me == root ? out : NULL);
}

static int ph_allreduce(pk *x, ism_coll_choice ch, const ism_coll_view *v, int lvl,
                        int64_t bytes, const void *in, void *out)
{
    int64_t n = x->vdt ? bytes / x->vdt->size : 0;
    if (ch.alg == ISM_ALG_VENDOR && n <= 0x7fffffff) {
        ism_vh r = 0;
        int64_t o = x->vdt->contig_off;
        ism_coll_count(ISM_COLL_ALLREDUCE, lvl, ISM_ALG_VENDOR);
        const void *sb = in == out ? NULL : (const char *)in - o;
        return vwait(ism.be->iallreduce(sb, (char *)out - o, (int)n, x->vdt->v, x->op->v,
                                        x->c->vcomm, &r), &r);
    }
    if (ch.alg == ISM_ALG_VENDOR)
        ch = default_choice(ISM_COLL_ALLREDUCE, lvl, bytes, v->p);
    return run(x, ISM_COLL_ALLREDUCE, lvl, ch, v, 0, NULL, bytes, in, out);
}

/* in: my contribution; out: my prefix (may be in itself) */
static int ph_scan(pk *x, ism_coll_choice ch, const ism_coll_view *v, int lvl, int exclusive,
                   int64_t bytes, const void *in, void *out)
{
    int coll = exclusive ? ISM_COLL_EXSCAN : ISM_COLL_SCAN;
    int64_t n = x->vdt ? bytes / x->vdt->size : 0;
    if (ch.alg == ISM_ALG_VENDOR && x->vdt && n <= 0x7fffffff) {
        ism_vh r = 0;
        int64_t o = x->vdt->contig_off;
        ism_coll_count(coll, lvl, ISM_ALG_VENDOR);
        const void *sb = in == out ? NULL : (const char *)in - o;
        int rc = exclusive ? ism.be->iexscan(sb, (char *)out - o, (int)n, x->vdt->v, x->op->v,
                                             x->c->vcomm, &r)
                           : ism.be->iscan(sb, (char *)out - o, (int)n, x->vdt->v, x->op->v,
                                           x->c->vcomm, &r);
        return vwait(rc, &r);
    }
    return run(x, coll, lvl, ch, v, 0, NULL, bytes, in, out);
}

/* blk: every member's block in bytes; in: the whole vector; out: my block */
static int ph_redscat(pk *x, ism_coll_choice ch, const ism_coll_view *v, int lvl,
                      const int64_t *blk, const void *in, void *out)
{
    if (ch.alg == ISM_ALG_VENDOR && x->vdt) {
        int64_t es = x->vdt->size, o = x->vdt->contig_off, total = 0;
        int *cnt = malloc(sizeof(int) * (size_t)v->p), rc = 0;
        if (!cnt)
            return ISM_ERR_NO_MEM;
        for (int i = 0; i < v->p; i++) {
            total += blk[i] / es;
            cnt[i] = (int)(blk[i] / es);
        }
        if (total <= 0x7fffffff) {
            ism_vh r = 0;
            ism_coll_count(ISM_COLL_REDUCE_SCATTER, lvl, ISM_ALG_VENDOR);
            const void *sb = in == out ? NULL : (const char *)in - o;
            /* the counts stay alive until the vendor's request completes */
            rc = vwait(ism.be->ireduce_scatter(sb, (char *)out - o, cnt, x->vdt->v, x->op->v,
                                               x->c->vcomm, &r), &r);
            free(cnt);
            return rc;
        }
        free(cnt);
    }
    return run(x, ISM_COLL_REDUCE_SCATTER, lvl, ch, v, 0, blk, 0, in, out);
}

/* ---- barrier ---- */

int ism_coll_barrier(ism_comm *c)
{
    pk x;
    int lvl0 = ISM_LVL_INTRA;
    /* the core's barrier is the vendor's (inside a site) and the leaders' exchange */
    ism_coll_choice sel = ism_coll_select(c, ISM_COLL_BARRIER, lvl0, c->lsize, 0, 1);
    int a = sel.alg;
    if (c->all_local ? a == ISM_ALG_VENDOR
                     : (a == ISM_ALG_DEFAULT || a == ISM_ALG_VENDOR) &&
                           c->nleaders > BARRIER_DISS_MAX &&
                           is_default(c, ISM_COLL_BARRIER, ISM_LVL_WAN, c->nleaders, 0, 1, 0)) {
        ism_coll_count(ISM_COLL_BARRIER, lvl0, a);
        return ISM_COLL_PASS; /* the core's: the vendor's inside, gather and release */
    }
    pk_init(&x, c, ISM_DT_BYTE, NULL);
    ism_coll_view iv = ism_coll_intra_view(c);
    ism_coll_choice ci = resolve(&x, ISM_COLL_BARRIER, ISM_LVL_INTRA, c->lsize, 0, sel);
    if (c->all_local)
        return ph_barrier(&x, ci, &iv, ISM_LVL_INTRA);
    int *m = malloc(sizeof(int) * (size_t)ism.lay.nsites);
    if (!m)
        return ISM_ERR_NO_MEM;
    int rc = c->lsize > 1 ? ph_barrier(&x, ci, &iv, ISM_LVL_INTRA) : 0;
    ism_coll_view wv = ism_coll_wan_view(c, -1, 0, m, NULL);
    if (!rc && wv.me >= 0)
        rc = ph_barrier(&x, choose(&x, ISM_COLL_BARRIER, ISM_LVL_WAN, wv.p, 0), &wv,
                        ISM_LVL_WAN);
    if (!rc && c->lsize > 1)
        rc = ph_barrier(&x, ci, &iv, ISM_LVL_INTRA);
    free(m);
    return rc;
}

/* ---- bcast ---- */

int ism_coll_bcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c)
{
    int64_t bytes = (int64_t)count * dt->size;
    int lp = c->all_local ? c->size : c->lsize;
    if (is_default(c, ISM_COLL_BCAST, ISM_LVL_INTRA, lp, bytes, 1, 1) &&
        (c->all_local || is_default(c, ISM_COLL_BCAST, ISM_LVL_WAN, c->nleaders, bytes, 1, 0))) {
        /* the vendor's bcast, chosen or by default: counted as which it was */
        ism_coll_count(ISM_COLL_BCAST, ISM_LVL_INTRA,
                       ism_coll_select(c, ISM_COLL_BCAST, ISM_LVL_INTRA, lp, bytes, 1).alg);
        return ISM_COLL_PASS;
    }
    if (!bytes)
        return 0;
    pk x;
    pk_init(&x, c, dt, NULL);
    int me_root = c->rank == root;
    char *raw, *p = packed(dt, buf, count, me_root, &raw);
    if (!p)
        return ISM_ERR_NO_MEM;
    ism_coll_view iv = ism_coll_intra_view(c);
    int rc = 0, *m = NULL;
    if (!c->all_local) {
        if (!(m = malloc(sizeof(int) * (size_t)ism.lay.nsites))) {
            free(raw);
            return ISM_ERR_NO_MEM;
        }
        int wroot = 0;
        ism_coll_view wv = ism_coll_wan_view(c, root, 0, m, &wroot);
        if (wv.me >= 0)
            rc = ph_bcast(&x, choose(&x, ISM_COLL_BCAST, ISM_LVL_WAN, wv.p, bytes), &wv,
                          ISM_LVL_WAN, wroot, bytes, p);
    }
    int lroot = ism.lay.site == c->site_of[root] ? c->l_of[root] : 0;
    if (!rc)
        rc = ph_bcast(&x, choose(&x, ISM_COLL_BCAST, ISM_LVL_INTRA, c->lsize, bytes), &iv,
                      ISM_LVL_INTRA, lroot, bytes, p);
    if (!rc && raw && !me_root)
        ism_dt_unpack(dt, p, buf, count);
    free(raw);
    free(m);
    return rc;
}

/* ---- reduce ---- */

int ism_coll_reduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                    ism_comm *c)
{
    int64_t bytes = (int64_t)count * dt->size;
    int commute = !op->user || op->commute;
    int lp = c->all_local ? c->size : c->lsize;
    /* the core's reduce: the vendor's inside a site, the leaders send to the root */
    ism_coll_choice sel = ism_coll_select(c, ISM_COLL_REDUCE, ISM_LVL_INTRA, lp, bytes, commute);
    int a = sel.alg;
    if (!op->user &&
        (c->all_local ? a == ISM_ALG_VENDOR
                      : (a == ISM_ALG_DEFAULT || a == ISM_ALG_VENDOR) &&
                            is_default(c, ISM_COLL_REDUCE, ISM_LVL_WAN, c->nleaders, bytes, 1, 0))) {
        ism_coll_count(ISM_COLL_REDUCE, ISM_LVL_INTRA, a);
        return ISM_COLL_PASS;
    }
    if (!commute && !c->all_local && !c->site_runs)
        return ISM_COLL_PASS; /* rank order is not site order: gather at the root */
    if (!bytes)
        return 0;
    pk x;
    pk_init(&x, c, dt, op);
    int me_root = c->rank == root;
    char *tmp = NULL;
    io b;
    int rc = io_open(&b, dt, sbuf ? sbuf : rbuf, count, dt, me_root ? rbuf : NULL, count);
    char *in = b.in, *out = me_root ? b.out : NULL;
    int lroot = ism.lay.site == c->site_of[root] ? c->l_of[root] : 0;
    int rep = c->lrank == lroot && !c->all_local; /* this site's member in the wan phase */
    if (rep && !me_root && !(tmp = malloc((size_t)bytes)))
        rc = ISM_ERR_NO_MEM;
    ism_coll_view iv = ism_coll_intra_view(c);
    if (!rc)
        rc = ph_reduce(&x, resolve(&x, ISM_COLL_REDUCE, ISM_LVL_INTRA, lp, bytes, sel), &iv,
                       ISM_LVL_INTRA, lroot, bytes, in, me_root ? out : tmp);
    if (!rc && rep) {
        int *m = malloc(sizeof(int) * (size_t)ism.lay.nsites);
        if (!m) {
            rc = ISM_ERR_NO_MEM;
        } else {
            int wroot = 0;
            ism_coll_view wv = ism_coll_wan_view(c, root, 0, m, &wroot);
            void *part = me_root ? out : tmp;
            rc = ph_reduce(&x, choose(&x, ISM_COLL_REDUCE, ISM_LVL_WAN, wv.p, bytes), &wv,
                           ISM_LVL_WAN, wroot, bytes, part, me_root ? out : NULL);
            free(m);
        }
    }
    free(tmp);
    ism_coll_redop_free(&x.red);
    return io_close(&b, rc, me_root);
}

/* ---- allreduce ---- */

int ism_coll_allreduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                       ism_comm *c)
{
    int64_t bytes = (int64_t)count * dt->size;
    int commute = !op->user || op->commute;
    ism_coll_choice sel = {ISM_ALG_DEFAULT, 0, 0}; /* on one site: chosen once per call */
    if (c->all_local) {
        sel = ism_coll_select(c, ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, c->size, bytes, commute);
        /* the core's: one vendor allreduce */
        if (!op->user && sel.alg == ISM_ALG_VENDOR) {
            ism_coll_count(ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, ISM_ALG_VENDOR);
            return ISM_COLL_PASS;
        }
    } else {
        if (!commute && !c->site_runs)
            return ISM_COLL_PASS;
        if (!op->user &&
            is_default(c, ISM_COLL_ALLREDUCE, ISM_LVL_WAN, c->nleaders, bytes, 1, 0) &&
            is_default(c, ISM_COLL_REDUCE, ISM_LVL_INTRA, c->lsize, bytes, 1, 1) &&
            is_default(c, ISM_COLL_BCAST, ISM_LVL_INTRA, c->lsize, bytes, 1, 1)) {
            ism_coll_count(ISM_COLL_ALLREDUCE, ISM_LVL_WAN, ISM_ALG_DEFAULT);
            return ISM_COLL_PASS;
        }
    }
    if (!bytes)
        return 0;
    pk x;
    pk_init(&x, c, dt, op);
    io b;
    int rc = io_open(&b, dt, sbuf ? sbuf : rbuf, count, dt, rbuf, count);
    char *in = b.in, *out = b.out;
    ism_coll_view iv = ism_coll_intra_view(c);
    if (!rc && c->all_local) {
        rc = ph_allreduce(&x, resolve(&x, ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, c->size, bytes, sel),
                          &iv, ISM_LVL_INTRA, bytes, in, out);
    } else if (!rc) {
        int *m = malloc(sizeof(int) * (size_t)ism.lay.nsites);
        ism_coll_view wv = m ? ism_coll_wan_view(c, -1, 0, m, NULL) : iv;
        ism_coll_choice cw = choose(&x, ISM_COLL_ALLREDUCE, ISM_LVL_WAN, c->nleaders, bytes);
        ism_coll_choice cr = choose(&x, ISM_COLL_REDUCE, ISM_LVL_INTRA, c->lsize, bytes);
        ism_coll_choice cb = choose(&x, ISM_COLL_BCAST, ISM_LVL_INTRA, c->lsize, bytes);
        int pipe = ism_coll_select(c, ISM_COLL_ALLREDUCE, ISM_LVL_WAN, c->nleaders, bytes,
                                   commute).alg == ISM_ALG_PIPELINE;
        if (!m) {
            rc = ISM_ERR_NO_MEM;
        } else if (pipe && x.vdt && cr.alg == ISM_ALG_VENDOR && cb.alg == ISM_ALG_VENDOR) {
            ism_coll_choice cp = ism_coll_select(c, ISM_COLL_ALLREDUCE, ISM_LVL_WAN,
                                                 c->nleaders, bytes, commute);
            ism_coll_count(ISM_COLL_ALLREDUCE, ISM_LVL_WAN, ISM_ALG_PIPELINE);
            rc = ism_coll_pipe_allreduce(in, out, bytes, x.vdt, bytes / x.vdt->size, op, &x.red,
                                         cp.seg, &wv, c);
        } else {
            rc = ph_reduce(&x, cr, &iv, ISM_LVL_INTRA, 0, bytes, in, c->lrank == 0 ? out : NULL);
            if (!rc && wv.me >= 0)
                rc = run(&x, ISM_COLL_ALLREDUCE, ISM_LVL_WAN, cw, &wv, 0, NULL, bytes, out, out);
            if (!rc)
                rc = ph_bcast(&x, cb, &iv, ISM_LVL_INTRA, 0, bytes, out);
        }
        free(m);
    }
    ism_coll_redop_free(&x.red);
    return io_close(&b, rc, 1);
}

/* ---- reduce-scatter ---- */

/* Across sites whose members are consecutive ranks: the whole vector reduced to each
 * site's leader, a reduce-scatter among the leaders with each site's share as its block
 * (pairwise by default: one message per ordered pair of sites, and only the other site's
 * share crosses each way, what must), and each site's share scattered inside the site. */
static int rs_sites(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt, ism_op *op,
                    ism_comm *c, int64_t total)
{
    pk x;
    pk_init(&x, c, dt, op);
    int64_t es = dt->size, bytes = total * es;
    int lead = c->rank == c->my_leader, first = c->my_leader;
    io b;
    int rc = io_open(&b, dt, sbuf ? sbuf : rbuf, total, dt, rbuf, rcounts[c->rank]);
    int *m = malloc(sizeof(int) * (size_t)ism.lay.nsites);
    int64_t *blk = malloc(sizeof(int64_t) * (size_t)ism.lay.nsites);
    int *cnt = malloc(sizeof(int) * 2 * (size_t)c->lsize);
    char *full = lead ? malloc((size_t)bytes + 1) : NULL;
    char *share = NULL;
    if (!m || !blk || !cnt || (lead && !full))
        rc = rc ? rc : ISM_ERR_NO_MEM;
    ism_coll_view iv = ism_coll_intra_view(c), wv = m ? ism_coll_wan_view(c, -1, 0, m, NULL) : iv;
    int64_t mine = 0; /* this site's share in bytes */
    for (int i = 0; m && blk && i < wv.p; i++) {
        int s = c->site_of[m[i]];
        blk[i] = 0;
        for (int r = 0; r < c->size; r++)
            if (c->site_of[r] == s)
                blk[i] += (int64_t)rcounts[r] * es;
        if (s == ism.lay.site)
            mine = blk[i];
    }
    if (!rc && lead && !(share = malloc((size_t)mine + 1)))
        rc = ISM_ERR_NO_MEM;
    if (!rc)
        rc = ph_reduce(&x, choose(&x, ISM_COLL_REDUCE, ISM_LVL_INTRA, c->lsize, bytes), &iv,
                       ISM_LVL_INTRA, 0, bytes, b.in, full);
    if (!rc && lead)
        rc = run(&x, ISM_COLL_REDUCE_SCATTER, ISM_LVL_WAN,
                 choose(&x, ISM_COLL_REDUCE_SCATTER, ISM_LVL_WAN, wv.p, bytes), &wv, 0, blk, 0,
                 full, share);
    if (!rc) { /* the site's share to its members, as packed bytes */
        for (int l = 0, at = 0; l < c->lsize; l++) {
            cnt[l] = (int)(rcounts[c->c_of_l[l]] * es);
            cnt[c->lsize + l] = at;
            at += cnt[l];
        }
        ism_vh r = 0;
        ism_coll_count(ISM_COLL_REDUCE_SCATTER, ISM_LVL_INTRA, ISM_ALG_VENDOR);
        rc = vwait(ism.be->iscatterv(share, cnt, cnt + c->lsize, ISM_DT_BYTE->v, b.out,
                                     cnt[c->lrank], ISM_DT_BYTE->v, 0, c->vcomm, &r), &r);
    }
    (void)first;
    free(m);
    free(blk);
    free(cnt);
    free(full);
    free(share);
    ism_coll_redop_free(&x.red);
    return io_close(&b, rc, 1);
}

int ism_coll_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt,
                            ism_op *op, ism_comm *c)
{
    int commute = !op->user || op->commute, n = c->size;
    int64_t total = 0;
    for (int r = 0; r < n; r++)
        total += rcounts[r];
    int64_t bytes = total * dt->size;
    if (!c->all_local) {
        if (c->site_runs && total <= 0x7fffffff)
            return rs_sites(sbuf, rbuf, rcounts, dt, op, c, total);
        /* otherwise a reduce to rank 0 (two-level, ours when chosen) and the two-level
         * scatter */
        if (!op->user && is_default(c, ISM_COLL_REDUCE, ISM_LVL_INTRA, c->lsize, bytes, 1, 1) &&
            is_default(c, ISM_COLL_REDUCE, ISM_LVL_WAN, c->nleaders, bytes, 1, 0))
            return ISM_COLL_PASS;
        if (!commute)
            return ISM_COLL_PASS;
        char *full = NULL, *raw = c->rank == 0 ? ism_dt_elems(dt, (size_t)total, &full) : NULL;
        if (c->rank == 0 && !raw)
            return ISM_ERR_NO_MEM;
        int *displs = malloc(sizeof(int) * (size_t)n);
        int rc = displs ? 0 : ISM_ERR_NO_MEM;
        for (int r = 0, at = 0; displs && r < n; r++) {
            displs[r] = at;
            at += rcounts[r];
        }
        if (!rc)
            rc = ism_coll_reduce(sbuf ? sbuf : rbuf, full, (int)total, dt, op, 0, c);
        if (rc == ISM_COLL_PASS)
            rc = ism_reduce_any(sbuf ? sbuf : rbuf, full, (int)total, dt, op, 0, c);
        if (!rc)
            rc = ism_scatterv(full, rcounts, displs, dt, rbuf, rcounts[c->rank], dt, 0, c);
        free(raw);
        free(displs);
        return rc;
    }
    if (!bytes)
        return 0;
    pk x;
    pk_init(&x, c, dt, op);
    int64_t *blk = malloc(sizeof *blk * (size_t)n);
    io b;
    int rc = io_open(&b, dt, sbuf ? sbuf : rbuf, total, dt, rbuf, rcounts[c->rank]);
    if (!blk)
        rc = ISM_ERR_NO_MEM;
    for (int r = 0; blk && r < n; r++)
        blk[r] = (int64_t)rcounts[r] * dt->size;
    ism_coll_view iv = ism_coll_intra_view(c);
    ism_coll_choice ch = choose(&x, ISM_COLL_REDUCE_SCATTER, ISM_LVL_INTRA, n, bytes);
    if (!rc)
        rc = ph_redscat(&x, ch, &iv, ISM_LVL_INTRA, blk, b.in, b.out);
    free(blk);
    ism_coll_redop_free(&x.red);
    return io_close(&b, rc, 1);
}

/* ---- scan, exscan ---- */

/* Across sites whose members are consecutive ranks: a scan inside each site, an
 * exclusive scan of the site totals among the sites' last members (S-1 WAN messages
 * with the default chain), the site's prefix broadcast inside the site and put on the
 * left of each member's local result. */
static int scan_sites(pk *x, int exclusive, int64_t bytes, const char *in, char *out)
{
    ism_comm *c = x->c;
    int coll = exclusive ? ISM_COLL_EXSCAN : ISM_COLL_SCAN;
    int *m = malloc(sizeof(int) * (size_t)ism.lay.nsites);
    char *pre = malloc((size_t)bytes), *tot = malloc((size_t)bytes);
    int rc = !m || !pre || !tot ? ISM_ERR_NO_MEM : 0;
    ism_coll_view iv = ism_coll_intra_view(c);
    int last = c->lrank == c->lsize - 1;
    if (!rc && last && exclusive)
        ism_coll_move(tot, in, (size_t)bytes); /* my input, before an in-place scan replaces it */
    if (!rc)
        rc = ph_scan(x, choose(x, coll, ISM_LVL_INTRA, c->lsize, bytes), &iv, ISM_LVL_INTRA,
                     exclusive, bytes, in, out);
    ism_coll_view wv = m ? ism_coll_wan_view(c, -1, 1, m, NULL) : iv;
    int first_site = 0; /* this site's run comes first: no prefix from other sites */
    for (int i = 0; m && i < wv.p; i++)
        if (c->site_of[m[i]] == ism.lay.site)
            first_site = i == 0;
    if (!rc && last) {
        /* the site's total: the inclusive result, or the exclusive one op my input */
        if (!exclusive)
            ism_coll_move(tot, out, (size_t)bytes);
        else if (c->lsize > 1)
            rc = ism_coll_apply(&x->red, out, tot, bytes);
        if (!rc)
            rc = run(x, ISM_COLL_EXSCAN, ISM_LVL_WAN,
                     choose(x, ISM_COLL_EXSCAN, ISM_LVL_WAN, wv.p, bytes), &wv, 0, NULL, bytes,
                     tot, pre);
    }
    if (!rc && !first_site) {
        ism_coll_choice cb = choose(x, ISM_COLL_BCAST, ISM_LVL_INTRA, c->lsize, bytes);
        rc = ph_bcast(x, cb, &iv, ISM_LVL_INTRA, c->lsize - 1, bytes, pre);
        if (!rc) {
            if (exclusive && c->lrank == 0)
                ism_coll_move(out, pre, (size_t)bytes);
            else
                rc = ism_coll_apply(&x->red, pre, out, bytes);
        }
    }
    free(m);
    free(pre);
    free(tot);
    return rc;
}

int ism_coll_scan(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                  int exclusive, ism_comm *c)
{
    int64_t bytes = (int64_t)count * dt->size;
    if (!c->all_local && !c->site_runs)
        return ISM_COLL_PASS;
    if (!bytes)
        return 0;
    pk x;
    pk_init(&x, c, dt, op);
    io b;
    int rc = io_open(&b, dt, sbuf ? sbuf : rbuf, count, dt, rbuf, count);
    char *in = b.in, *out = b.out;
    int coll = exclusive ? ISM_COLL_EXSCAN : ISM_COLL_SCAN;
    /* exscan leaves rank 0's buffer alone: its packed copy holds nothing to unpack */
    int first = c->rank == 0;
    if (!rc && c->all_local) {
        ism_coll_view iv = ism_coll_intra_view(c);
        rc = ph_scan(&x, choose(&x, coll, ISM_LVL_INTRA, c->size, bytes), &iv, ISM_LVL_INTRA,
                     exclusive, bytes, in, out);
    } else if (!rc) {
        rc = scan_sites(&x, exclusive, bytes, in, out);
    }
    ism_coll_redop_free(&x.red);
    return io_close(&b, rc, !(exclusive && first));
}

/* ---- allgather ---- */

int ism_coll_allgather(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, int rcount,
                       ism_dt *rdt, ism_comm *c)
{
    int n = c->size;
    int64_t b = (int64_t)rcount * rdt->size, total = b * n;
    int lp = c->all_local ? n : c->lsize;
    if (is_default(c, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, lp, total, 1, 1) &&
        (c->all_local || is_default(c, ISM_COLL_ALLGATHER, ISM_LVL_WAN, c->nleaders, total, 1, 0))) {
        ism_coll_count(ISM_COLL_ALLGATHER, ISM_LVL_INTRA, ISM_ALG_DEFAULT);
        return ISM_COLL_PASS;
    }
    if (!c->all_local && !c->site_runs)
        return ISM_COLL_PASS;
    if (!b)
        return 0;
    pk x;
    pk_init(&x, c, rdt, NULL);
    io bf;
    /* in place: my block is in rbuf, in the receive type */
    int rc = sbuf ? io_open(&bf, sdt, sbuf, scount, rdt, rbuf, (int64_t)rcount * n)
                  : io_open(&bf, rdt, (char *)rbuf + (int64_t)c->rank * rcount * rdt->extent,
                            rcount, rdt, rbuf, (int64_t)rcount * n);
    char *in = bf.in, *out = bf.out;
    if (!sbuf && !bf.rin)
        in = out + c->rank * b; /* contiguous in place: the block is already there */
    ism_coll_view iv = ism_coll_intra_view(c);
    if (!rc && c->all_local) {
        ism_coll_choice ch = choose(&x, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, n, total);
        if (ch.alg == ISM_ALG_VENDOR) {
            ism_vh r = 0;
            ism_coll_count(ISM_COLL_ALLGATHER, ISM_LVL_INTRA, ISM_ALG_VENDOR);
            rc = vwait(ism.be->iallgather(in == out + c->rank * b ? NULL : in, (int)b,
                                          ISM_DT_BYTE->v, out, (int)b, ISM_DT_BYTE->v, c->vcomm,
                                          &r), &r);
        } else {
            rc = run(&x, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, ch, &iv, 0, NULL, b, in, out);
        }
    } else if (!rc) {
        /* my site's members are the consecutive ranks from my leader's */
        char *site = out + (int64_t)c->my_leader * b;
        ism_coll_choice ch = choose(&x, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, c->lsize, b * c->lsize);
        if (ch.alg == ISM_ALG_VENDOR) {
            ism_vh r = 0;
            ism_coll_count(ISM_COLL_ALLGATHER, ISM_LVL_INTRA, ISM_ALG_VENDOR);
            rc = vwait(ism.be->iallgather(in == out + c->rank * b ? NULL : in, (int)b,
                                          ISM_DT_BYTE->v, site, (int)b, ISM_DT_BYTE->v, c->vcomm,
                                          &r), &r);
        } else {
            rc = run(&x, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, ch, &iv, 0, NULL, b, in, site);
        }
        int *m = malloc(sizeof(int) * (size_t)ism.lay.nsites);
        int64_t *blk = malloc(sizeof(int64_t) * (size_t)ism.lay.nsites);
        if (!m || !blk)
            rc = rc ? rc : ISM_ERR_NO_MEM;
        ism_coll_view wv = m ? ism_coll_wan_view(c, -1, 0, m, NULL) : iv;
        for (int i = 0; !rc && i < wv.p; i++) {
            int s = c->site_of[m[i]], k = 0;
            for (int r = 0; r < n; r++)
                k += c->site_of[r] == s;
            blk[i] = b * k;
        }
        if (!rc && wv.me >= 0)
            rc = run(&x, ISM_COLL_ALLGATHER, ISM_LVL_WAN,
                     choose(&x, ISM_COLL_ALLGATHER, ISM_LVL_WAN, wv.p, total), &wv, 0, blk, 0,
                     site, out);
        if (!rc)
            rc = ph_bcast(&x, choose(&x, ISM_COLL_BCAST, ISM_LVL_INTRA, c->lsize, total), &iv,
                          ISM_LVL_INTRA, 0, total, out);
        free(m);
        free(blk);
    }
    return io_close(&bf, rc, 1);
}

/* ---- alltoall (inside one site; across sites the core's exchange per site pair) ---- */

int ism_coll_alltoall(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, int rcount,
                      ism_dt *rdt, ism_comm *c)
{
    int n = c->size;
    int64_t b = (int64_t)rcount * rdt->size;
    if (!c->all_local || is_default(c, ISM_COLL_ALLTOALL, ISM_LVL_INTRA, n, b * n, 1, 1)) {
        ism_coll_count(ISM_COLL_ALLTOALL, ISM_LVL_INTRA, ISM_ALG_DEFAULT);
        return ISM_COLL_PASS;
    }
    if (!b)
        return 0;
    pk x;
    pk_init(&x, c, rdt, NULL);
    io bf;
    int rc = sbuf ? io_open(&bf, sdt, sbuf, (int64_t)scount * n, rdt, rbuf, (int64_t)rcount * n)
                  : io_open(&bf, rdt, rbuf, (int64_t)rcount * n, rdt, rbuf, (int64_t)rcount * n);
    ism_coll_view iv = ism_coll_intra_view(c);
    if (!rc)
        rc = run(&x, ISM_COLL_ALLTOALL, ISM_LVL_INTRA,
                 choose(&x, ISM_COLL_ALLTOALL, ISM_LVL_INTRA, n, b * n), &iv, 0, NULL, b, bf.in,
                 bf.out);
    return io_close(&bf, rc, 1);
}
