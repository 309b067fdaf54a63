/* exec.c: the executor. It runs one member's schedule on isthmus point-to-point (the
 * communicator's collective context, so no message of a collective ever matches a
 * program's receive) and applies reductions to packed bytes.
 *
 * A round's actions run in order: sends and receives are posted, reductions and copies
 * done at once; then the executor waits for everything the round posted, in isthmus's
 * progress loop, whose idle step yields to the program inside a nonblocking collective
 * (core/nbc.c). So one schedule serves the blocking, nonblocking and persistent forms,
 * and a rank waiting here keeps serving its gateway. Peers at this site are reached on
 * the communicator's second vendor communicator (vcoll, made by the caller), peers at
 * other sites through the gateways.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define MSG_MAX ((int64_t)1 << 30) /* longer sends and receives travel in pieces */

/* ---- reductions on packed bytes ---- */

ism_dt *ism_coll_basic_of(ism_dt *dt)
{
    if (dt->contig)
        return dt;
    const ism_tmap *m = ism_dt_map(dt);
    if (!m || m->nrun < 1)
        return NULL;
    int k = m->run[0].kind;
    for (int64_t i = 1; i < m->nrun; i++)
        if (m->run[i].kind != k)
            return NULL;
    const ism_kind *ki = ism_kind_info(k);
    if (!ki || !ki->size || k < 0 || k >= ISM_DT_COUNT || !ism.be->dt[k])
        return NULL;
    ism_dt *b = &ism_dt_table[k];
    return b->contig && b->size == ki->size ? b : NULL;
}

void ism_coll_redop_init(ism_coll_redop *r, ism_op *op, ism_dt *dt)
{
    memset(r, 0, sizeof *r);
    r->op = op;
    r->dt = dt;
    if (op)
        r->basic = op->user ? (dt->contig ? dt : NULL) : ism_coll_basic_of(dt);
}

void ism_coll_redop_free(ism_coll_redop *r)
{
    free(r->raw[0]);
    free(r->raw[1]);
    r->raw[0] = r->raw[1] = NULL;
    r->scrlen = 0;
}

int ism_coll_apply(ism_coll_redop *r, const void *in, void *inout, int64_t len)
{
    ism_dt *b = r->basic;
    if (b) {
        const char *i = in;
        char *io = inout;
        for (int64_t n = len / b->size; n > 0;) {
            int k = n > (1 << 28) ? 1 << 28 : (int)n;
            int rc = ism_op_apply(r->op, i - b->contig_off, io - b->contig_off, k, b);
            if (rc)
                return rc;
            i += (int64_t)k * b->size;
            io += (int64_t)k * b->size;
            n -= k;
        }
        return 0;
    }
    /* any other type: both operands into the type's own layout, the op, and back */
    int64_t n = len / r->dt->size;
    if (n > r->scrlen) {
        ism_coll_redop_free(r);
        for (int j = 0; j < 2; j++)
            if (!(r->raw[j] = ism_dt_elems(r->dt, (size_t)n, &r->scr[j]))) {
                ism_coll_redop_free(r);
                return ISM_ERR_NO_MEM;
            }
        r->scrlen = n;
    }
    ism_dt_unpack(r->dt, in, r->scr[0], (int)n);
    ism_dt_unpack(r->dt, inout, r->scr[1], (int)n);
    int rc = ism_op_apply(r->op, r->scr[0], r->scr[1], (int)n, r->dt);
    if (!rc)
        ism_dt_pack(r->dt, r->scr[1], (int)n, inout);
    return rc;
}

/* ---- posting and waiting ---- */

/* A round's posts: messages to peers at this site go through the site's shared-memory
 * channels when they fit a cell (shm.c), else straight to the vendor on vcoll (vendor
 * handles, no isthmus request); others are isthmus requests. */
typedef struct post_t {
    ism_req *r;         /* cross-site, or NULL */
    ism_vh v;           /* at this site: the vendor request */
    ism_shm_chan *ch;   /* at this site through shared memory: the channel, or NULL */
    char *buf;          /* the channel's message: its bytes, length and number */
    int64_t len;
    uint64_t seq;
    int64_t want;       /* bytes a receive must bring, -1 for a send */
    int done;
} post_t;

/* Most rounds post a few messages (a pair exchanges two, a k-nomial tree up to 2(k-1)):
 * those fit in the set's own storage, on the executor's stack, so a small collective
 * makes no allocation for its posts (three malloc/free pairs per call cost 5-8% of a
 * 2-rank 8-byte allreduce, perf). Larger rounds move to the heap. */
#define QLOCAL 8

typedef struct reqset {
    post_t *p;
    ism_vh *vh;         /* scratch for waitall */
    ism_vstatus *vst;
    int n, cap, remote, shm;
    ism_coll_shm *sm; /* the site's channels, or NULL */
    ism_vh vcomm;     /* the vendor communicator they sit beside (vcoll) */
    post_t lp[QLOCAL];
    ism_vh lvh[QLOCAL];
    ism_vstatus lvst[QLOCAL];
} reqset;

static void reqs_init(reqset *q)
{
    q->p = q->lp;
    q->vh = q->lvh;
    q->vst = q->lvst;
    q->n = q->remote = q->shm = 0;
    q->sm = NULL;
    q->vcomm = 0;
    q->cap = QLOCAL;
}

static void reqs_free(reqset *q)
{
    if (q->p != q->lp) {
        free(q->p);
        free(q->vh);
        free(q->vst);
    }
}

static int reqs_grow(reqset *q)
{
    if (q->n < q->cap)
        return 0;
    int cap = 2 * q->cap;
    post_t *np = malloc(sizeof *np * (size_t)cap);
    ism_vh *nv = malloc(sizeof *nv * (size_t)cap);
    ism_vstatus *ns = malloc(sizeof *ns * (size_t)cap);
    if (!np || !nv || !ns) {
        free(np);
        free(nv);
        free(ns);
        return ISM_ERR_NO_MEM;
    }
    memcpy(np, q->p, sizeof *np * (size_t)q->n); /* vh and vst are scratch */
    reqs_free(q);
    q->p = np;
    q->vh = nv;
    q->vst = ns;
    q->cap = cap;
    return 0;
}

static int post(ism_comm *c, int peer, char *buf, int64_t len, int is_send, reqset *q)
{
    int64_t o = 0;
    int l0 = c->l_of[peer];
    do {
        int l = (int)(len - o < MSG_MAX ? len - o : MSG_MAX), rc;
        if ((rc = reqs_grow(q)))
            return rc;
        post_t *x = &q->p[q->n];
        memset(x, 0, sizeof *x);
        x->want = is_send ? -1 : l;
        if (l0 >= 0 && q->sm && l <= ISM_SHM_CELL) {
            int me = q->sm->me;
            x->ch = ism_coll_shm_chan(q->sm, is_send ? me : l0, is_send ? l0 : me);
            x->buf = buf + o;
            x->len = l;
            x->seq = ism_coll_shm_seq(q->sm, l0, is_send);
            if (is_send && ism_shm_chan_send(x->ch, x->seq, x->buf, l) == 1) {
                x->done = 1; /* room in the ring: written already */
                ism_coll_temps.shm_msgs++;
            }
            q->shm++;
        } else if (l0 >= 0 && !c->vcoll) {
            rc = ISM_ERR_INTERN; /* run() makes vcoll before a schedule inside a site */
        } else if (l0 >= 0) {
            rc = is_send ? ism.be->isend(buf + o, l, ISM_DT_BYTE->v, l0, TAG_SCHED, c->vcoll,
                                         &x->v)
                         : ism.be->irecv(buf + o, l, ISM_DT_BYTE->v, l0, TAG_SCHED, c->vcoll,
                                         &x->v);
        } else {
            rc = is_send ? ism_isend(buf + o, l, ISM_DT_BYTE, peer, TAG_SCHED, c, c->ctx + 1,
                                     ISM_MODE_STD, &x->r)
                         : ism_irecv(buf + o, l, ISM_DT_BYTE, peer, TAG_SCHED, c, c->ctx + 1,
                                     &x->r);
            q->remote++;
        }
        if (rc)
            return rc;
        q->n++;
        o += l;
    } while (o < len);
    return 0;
}

static int finish(post_t *x, int rc, size_t bytes)
{
    x->done = 1;
    if (!rc && x->want >= 0 && (int64_t)bytes != x->want)
        rc = ISM_ERR_TRUNCATE; /* both ends build the same sizes: a broken schedule */
    return rc;
}

/* Every post of the round to completion (also after an error: their buffers are about
 * to be freed); the first error, or a receive that brought the wrong size. With only
 * site-local posts and nothing else that needs isthmus's progress (no cross-site work,
 * not inside a nonblocking collective), one blocking vendor waitall: the vendor's own
 * wait is the quickest there is. */
/* While only channel messages are pending the vendor's progress still has to turn now
 * and then (MPI's progress rule: a program's send to a peer at this site, waiting for a
 * rendezvous, completes while we wait here): an MPI_Iprobe every 16 idle steps. */
static void poke_vendor(ism_vh vcomm, unsigned spins)
{
    if ((spins & 15) != 15 || !vcomm)
        return;
    int flag = 0;
    ism_vstatus st;
    ism.be->iprobe(ISM_VSRC_ANY, ISM_VTAG_ANY, vcomm, &flag, &st);
}

static int wait_all(reqset *q)
{
    int rc = 0;
    if (!q->remote && !q->shm && !ism.remote_active && !ism_nbc_cur && !ism_nbc_pending()) {
        for (int i = 0; i < q->n; i++)
            q->vh[i] = q->p[i].v;
        int e = q->n ? ism.be->waitall(q->n, q->vh, q->vst) : 0;
        for (int i = 0; i < q->n; i++) {
            int e2 = finish(&q->p[i], q->vst[i].error, q->vst[i].bytes);
            rc = rc ? rc : e2;
        }
        q->n = q->remote = 0;
        return rc ? rc : e;
    }
    unsigned spins = 0;
    int left = 0, vendor = 0;
    for (int i = 0; i < q->n; i++) {
        left += !q->p[i].done; /* a channel send with room was done when posted */
        vendor += !q->p[i].ch && !q->p[i].r;
    }
    while (left) {
        int moved = 0;
        for (int i = 0; i < q->n; i++) {
            post_t *x = &q->p[i];
            if (x->done)
                continue;
            int flag = 0, e;
            if (x->ch) {
                int64_t got = 0;
                if (x->want < 0) {
                    if ((e = ism_shm_chan_send(x->ch, x->seq, x->buf, x->len)) == 0)
                        continue;
                    ism_coll_temps.shm_msgs++;
                    e = e == 1 ? 0 : ISM_ERR_INTERN;
                } else {
                    if (!ism_shm_chan_recv(x->ch, x->seq, x->buf, x->want, &got))
                        continue;
                    e = 0;
                }
                e = finish(x, e, (size_t)got);
            } else if (x->r) {
                ism_status st;
                memset(&st, 0, sizeof st);
                e = ism_req_test(x->r, &flag, &st);
                if (!flag && !(e && x->r->kind == ISM_RQ_VENDOR))
                    continue;
                e = finish(x, e, st.bytes);
                ism_req_free(x->r);
                x->r = NULL;
            } else {
                ism_vstatus st;
                e = ism.be->test(&x->v, &flag, &st);
                if (!flag && !e)
                    continue;
                e = finish(x, e ? e : st.error, st.bytes);
            }
            rc = rc ? rc : e;
            left--;
            moved = 1;
        }
        if (left && !ism_progress() && !moved) {
            ism_idle(&spins);
            if (!vendor && !q->remote)
                poke_vendor(q->vcomm, spins);
        }
    }
    q->n = q->remote = q->shm = 0;
    return rc;
}

/* A round of at most one send and one receive, both to peers at this site, when
 * nothing needs isthmus's progress (wait_all's rule for the vendor's own wait), runs
 * them as the vendor's blocking send, receive or sendrecv: one call where isend, irecv
 * and waitall are three, and two vendor requests fewer (an 8-byte exchange under Open
 * MPI alone: 0.30-0.41 us as a sendrecv, 0.36-0.59 us as isend/irecv/waitall). The
 * same messages in the same order, so the peer may run either form. The round's local
 * actions run first: none may touch what a post of its round reads or writes (the
 * schedule checker's race rule), so their order against the posts does not matter.
 * Returns 1 when the round qualifies, its send and receive (or NULL) in snd and rcv. */
static int direct_ok(const ism_coll_sched *s, int lo, int hi, const ism_coll_view *v,
                     ism_comm *c, const ism_coll_shm *sm, const ism_coll_act **snd,
                     const ism_coll_act **rcv)
{
    *snd = *rcv = NULL;
    if (!c->vcoll)
        return 0;
    for (int i = lo; i < hi; i++) {
        const ism_coll_act *x = &s->act[i];
        if (x->kind != ISM_CA_SEND && x->kind != ISM_CA_RECV)
            continue;
        if (x->len > MSG_MAX || c->l_of[v->members[x->peer]] < 0 ||
            (sm && x->len <= ISM_SHM_CELL)) /* that message goes through the channels */
            return 0;
        const ism_coll_act **slot = x->kind == ISM_CA_SEND ? snd : rcv;
        if (*slot)
            return 0;
        *slot = x;
    }
    return (*snd || *rcv) && !ism.remote_active && !ism_nbc_cur && !ism_nbc_pending();
}

static int direct_run(const ism_coll_act *snd, const ism_coll_act *rcv, char *const *slot,
                      const ism_coll_view *v, ism_comm *c)
{
    ism_vstatus st;
    st.bytes = 0;
    st.error = 0;
    char *sb = snd ? slot[snd->a] + snd->aoff : NULL, *rb = rcv ? slot[rcv->a] + rcv->aoff : NULL;
    int sl = snd ? (int)snd->len : 0, rl = rcv ? (int)rcv->len : 0, rc;
    int sp = snd ? c->l_of[v->members[snd->peer]] : 0;
    int rp = rcv ? c->l_of[v->members[rcv->peer]] : 0;
    ism_vh byte = ISM_DT_BYTE->v;
    if (snd && rcv)
        rc = ism.be->sendrecv(sb, sl, byte, sp, TAG_SCHED, rb, rl, byte, rp, TAG_SCHED, c->vcoll,
                              &st);
    else if (snd)
        rc = ism.be->send(sb, sl, byte, sp, TAG_SCHED, c->vcoll);
    else
        rc = ism.be->recv(rb, rl, byte, rp, TAG_SCHED, c->vcoll, &st);
    if (!rc && rcv && (int64_t)st.bytes != rcv->len)
        rc = ISM_ERR_TRUNCATE; /* both ends build the same sizes: a broken schedule */
    return rc;
}

/* A round whose every message goes through the site's channels, with room in each for
 * what the round sends (so no send waits): its actions in order, then a wait for its
 * receives, without the post list (a 2-rank 8-byte allreduce: about 200 instructions
 * fewer per call than posting and waiting through wait_all). Returns 0 when the round
 * does not qualify (nothing done yet), else 1 with its result in *rc. */
#define SHM_ROUND 8

static int shm_round(const ism_coll_sched *s, int lo, int hi, const ism_coll_view *v,
                     ism_comm *c, ism_coll_shm *sm, char *const *slot, ism_coll_redop *r,
                     int *rc)
{
    int nr = 0, ns = 0, me = sm->me;
    struct {
        ism_shm_chan *ch;
        uint64_t seq;
        char *buf;
        int64_t len;
    } rv[SHM_ROUND];
    int sent_to[SHM_ROUND];
    for (int i = lo; i < hi; i++) {
        const ism_coll_act *x = &s->act[i];
        if (x->kind != ISM_CA_SEND && x->kind != ISM_CA_RECV)
            continue;
        int l0 = c->l_of[v->members[x->peer]];
        if (l0 < 0 || x->len > ISM_SHM_CELL)
            return 0;
        if (x->kind == ISM_CA_RECV) {
            if (++nr > SHM_ROUND)
                return 0;
            continue;
        }
        ism_shm_chan *ch = ism_coll_shm_chan(sm, me, l0);
        for (int k = 0; k < ns; k++)
            if (sent_to[k] == l0)
                return 0; /* two sends to one peer: room is checked for one */
        if (ns == SHM_ROUND || !ism_shm_chan_room(ch))
            return 0;
        sent_to[ns++] = l0;
    }
    nr = 0;
    int e = 0;
    for (int i = lo; i < hi && !e; i++) {
        const ism_coll_act *x = &s->act[i];
        char *buf = slot[x->a] + x->aoff;
        switch (x->kind) {
        case ISM_CA_SEND: {
            int l0 = c->l_of[v->members[x->peer]];
            /* room was checked above, and only we fill this channel */
            ism_shm_chan_send(ism_coll_shm_chan(sm, me, l0), ism_coll_shm_seq(sm, l0, 1), buf,
                              x->len);
            ism_coll_temps.shm_msgs++;
            break;
        }
        case ISM_CA_RECV: {
            int l0 = c->l_of[v->members[x->peer]];
            rv[nr].ch = ism_coll_shm_chan(sm, l0, me);
            rv[nr].seq = ism_coll_shm_seq(sm, l0, 0);
            rv[nr].buf = buf;
            rv[nr].len = x->len;
            nr++;
            break;
        }
        case ISM_CA_RED:
            e = ism_coll_apply(r, buf, slot[x->b] + x->boff, x->len);
            break;
        case ISM_CA_COPY:
            ism_coll_move(slot[x->b] + x->boff, buf, (size_t)x->len);
            break;
        }
    }
    unsigned spins = 0;
    for (int k = 0; k < nr;) { /* in order: the channels deliver in order anyway */
        int64_t got = 0;
        if (ism_shm_chan_recv(rv[k].ch, rv[k].seq, rv[k].buf, rv[k].len, &got)) {
            if (got != rv[k].len && !e)
                e = ISM_ERR_TRUNCATE; /* both ends build the same sizes: a broken schedule */
            k++;
            continue;
        }
        if (ism_progress())
            continue;
        ism_idle(&spins);
        poke_vendor(c->vcoll, spins);
    }
    *rc = e;
    return 1;
}

/* The temporaries of a schedule: kept per communicator between calls (collectives on
 * one communicator run one at a time), so a repeated large collective does not fault its
 * buffers in every time; given back above ARENA_KEEP. Page-aligned with a page to spare,
 * so that the temporaries can start at the page offset of the caller's buffers
 * (ism_coll_place): malloc's own large blocks start 16 bytes into a page, which made
 * every copy from a page-aligned buffer into them, and the vendor's copies between them
 * and such buffers, crawl (move.c). */
#define ARENA_KEEP ((int64_t)64 << 20)
#define PAGE ((int64_t)4096)

static char *arena_get(ism_comm *c, int64_t need, int *mine)
{
    ism_coll_comm *st = ism_coll_state(c);
    *mine = 0;
    need += PAGE;
    if (st && !st->arena_busy && need <= ARENA_KEEP) {
        if (st->arena_len < need) {
            free(st->arena);
            st->arena = ism_coll_page_alloc(need);
            st->arena_len = st->arena ? need : 0;
        }
        if (st->arena) {
            st->arena_busy = 1;
            return st->arena;
        }
    }
    *mine = 1;
    return ism_coll_page_alloc(need);
}

static void arena_put(ism_comm *c, char *a, int mine)
{
    if (mine)
        free(a);
    else if (c->coll)
        c->coll->arena_busy = 0;
}

/* ---- the executor ---- */

static int overlaps(const void *a, int64_t la, const void *b, int64_t lb)
{
    const char *x = a, *y = b;
    return la > 0 && lb > 0 && x < y + lb && y < x + la;
}

int ism_coll_exec(const ism_coll_sched *s, const ism_coll_view *v, ism_comm *c, const void *in,
                  void *out, ism_coll_redop *r)
{
    char *slot[ISM_SL_MAX];
    int64_t at[ISM_SL_MAX], need = 0;
    int stage_in = in && out && !s->in_place_ok &&
                   overlaps(in, s->slot[ISM_SL_IN], out, s->slot[ISM_SL_OUT]);
    int temp_out = !out && s->slot[ISM_SL_OUT] > 0;
    /* one allocation for the temporaries, each 64 bytes after the last from a base at
     * the page offset of the caller's buffer (ism_coll_place) */
    for (int k = 0; k < s->nslot; k++) {
        int mine = k >= ISM_SL_TMP || (k == ISM_SL_IN && stage_in) ||
                   (k == ISM_SL_OUT && temp_out);
        at[k] = 0;
        if (!mine)
            continue;
        at[k] = need;
        need += (s->slot[k] + 63) & ~(int64_t)63;
    }
    int own = 0;
    char *arena = need ? arena_get(c, need, &own) : NULL;
    if (need && !arena)
        return ISM_ERR_NO_MEM;
    if (need > 0)
        __atomic_fetch_add(&ism_coll_temps.runs, 1, __ATOMIC_RELAXED);
    char *base = arena ? arena + ism_coll_place(out ? out : in) : NULL;
    for (int k = ISM_SL_TMP; k < s->nslot; k++)
        slot[k] = base + at[k];
    slot[ISM_SL_IN] = stage_in ? base + at[ISM_SL_IN] : (char *)(uintptr_t)in;
    slot[ISM_SL_OUT] = temp_out ? base + at[ISM_SL_OUT] : out;
    if (stage_in)
        ism_coll_move(slot[ISM_SL_IN], in, (size_t)s->slot[ISM_SL_IN]);

    reqset q;
    reqs_init(&q);
    q.sm = c->coll ? c->coll->shm : NULL; /* mapped by run() when inside a site */
    q.vcomm = c->vcoll;
    int rc = 0;
    for (int rd = 0; rd < s->nround && !rc; rd++) {
        int lo = rd ? s->rend[rd - 1] : 0, hi = s->rend[rd];
        const ism_coll_act *snd, *rcv;
        if (q.sm && shm_round(s, lo, hi, v, c, q.sm, slot, r, &rc))
            continue;
        int direct = direct_ok(s, lo, hi, v, c, q.sm, &snd, &rcv);
        for (int i = lo; i < hi && !rc; i++) {
            const ism_coll_act *x = &s->act[i];
            switch (x->kind) {
            case ISM_CA_SEND:
            case ISM_CA_RECV:
                if (!direct)
                    rc = post(c, v->members[x->peer], slot[x->a] + x->aoff, x->len,
                              x->kind == ISM_CA_SEND, &q);
                break;
            case ISM_CA_RED:
                rc = ism_coll_apply(r, slot[x->a] + x->aoff, slot[x->b] + x->boff, x->len);
                break;
            case ISM_CA_COPY:
                ism_coll_move(slot[x->b] + x->boff, slot[x->a] + x->aoff, (size_t)x->len);
                break;
            }
        }
        int rc2 = direct ? (rc ? 0 : direct_run(snd, rcv, slot, v, c)) : wait_all(&q);
        rc = rc ? rc : rc2;
    }
    reqs_free(&q);
    if (arena)
        arena_put(c, arena, own);
    return rc;
}
