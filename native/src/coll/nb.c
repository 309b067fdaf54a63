/* nb.c: nonblocking collectives in flight, as schedules (LibNBC's engine).
 *
 * A collective in flight is a list of phases (nb_start.c composes them: inside the site,
 * among the sites, inside the site again, as twolevel.c does for the blocking calls), each
 * a schedule of rounds, or one round of direct transfers between the program's blocks
 * (nb_move.c's exchanges). Its start builds every phase's schedule, posts the first round
 * and returns. Every progress round of isthmus (any MPI call that tests or waits, the
 * blocking collectives' waits included) advances every collective in flight: when all a
 * round posted has completed, the next round's local actions run and its messages are
 * posted; after the last phase the request completes. No stack of its own and no thread:
 * what a collective in flight costs is its struct, its schedules and its posts
 * (ism_coll_nb_stats), plus its temporaries.
 *
 * Several collectives on one communicator progress at the same time. Each takes the
 * communicator's next sequence number, which every member assigns alike since MPI makes
 * them start their collectives in one order, and its messages carry a tag of their own
 * (NB_TAG0 + seq mod NB_TAGS): peers at this site on the communicator's second vendor
 * communicator (vcoll), the others on its collective context. No message of one matches
 * a receive of another, nor one of the blocking collectives (core.h's TAG_* are below
 * NB_TAG0). Only point-to-point, but for one case: a vendor collective would have to be
 * started in the same order on every member, which phases that finish at different times
 * cannot promise; a collective whose first phase is a vendor collective (a communicator
 * within one site: nb_site.c) issues it in the MPI_I* call itself, in the program's order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nb.h"

#define MSG_MAX ((int64_t)1 << 30) /* longer messages travel in pieces, as in exec.c */

int ism_coll_nb_active;
static ism_coll_nb *head;
static int polling;
static void (*next_end)(void *); /* ism_coll_nb_next_ends */
static void *next_arg;
ism_coll_nb_stats ism_coll_nb_st;

static int overlaps(const void *a, int64_t la, const void *b, int64_t lb)
{
    const char *x = a, *y = b;
    return la > 0 && lb > 0 && x < y + lb && y < x + la;
}

/* The oldest collective still in flight on c, or NULL. */
static const ism_coll_nb *oldest_on(const ism_comm *c, uint32_t now)
{
    const ism_coll_nb *o = NULL;
    for (const ism_coll_nb *nb = head; nb; nb = nb->next)
        if (nb->c == c && (!o || now - nb->seq > now - o->seq))
            o = nb;
    return o;
}

ism_coll_nb *ism_coll_nb_new(ism_comm *c)
{
    ism_coll_comm *st = ism_coll_state(c);
    if (!st)
        return NULL;
    /* taken whatever happens next, so that every member numbers its collectives alike
     * even when a start fails on one member only */
    uint32_t seq = st->nb_seq++;
    const ism_coll_nb *old = oldest_on(c, seq);
    if (old && seq - old->seq >= NB_TAGS)
        return NULL; /* its tag would be taken twice: refused (MPI_ERR_NO_MEM) */
    ism_coll_nb *nb = calloc(1, sizeof *nb);
    if (!nb)
        return NULL;
    nb->c = c;
    nb->seq = seq;
    nb->tag = NB_TAG0 + (int)(seq % NB_TAGS);
    nb->rd = -1;
    return nb;
}

/* Takes a built schedule's arrays, cut to what they hold, and its slots: the builder's
 * struct (with its building state) is not kept for the collective's life. */
static void adopt(nb_phase *ph, ism_coll_sched *s)
{
    ism_coll_act *a = s->nact ? realloc(s->act, sizeof *a * (size_t)s->nact) : NULL;
    int *r = s->nround ? realloc(s->rend, sizeof *r * (size_t)s->nround) : NULL;
    ph->act = a ? a : s->act;
    ph->rend = r ? r : s->rend;
    ph->nact = s->nact;
    ph->nround = s->nround;
    ph->nslot = s->nslot;
    memcpy(ph->slen, s->slot, sizeof ph->slen);
    s->act = NULL;
    s->rend = NULL;
}

static void phase_free(nb_phase *ph)
{
    free(ph->act);
    free(ph->rend);
    free(ph->xf);
    ph->act = NULL;
    ph->rend = NULL;
    ph->xf = NULL;
}

/* The next phase, empty but for its members, level, input, result and size; NULL when
 * the collective has NB_PHASES already. */
static nb_phase *phase_new(ism_coll_nb *nb, const ism_coll_view *v, int lvl, char *in, char *out,
                           int64_t bytes)
{
    if (nb->nph >= NB_PHASES)
        return NULL;
    nb_phase *ph = &nb->ph[nb->nph++];
    memset(ph, 0, sizeof *ph);
    ph->v = *v;
    ph->lvl = lvl;
    ph->in = in;
    ph->out = out;
    ph->bytes = bytes;
    return ph;
}

/* bytes: what the builder gets (a member's block where blk is NULL and the collective
 * has blocks); sel: the size select.c chooses by */
static int phase_add(ism_coll_nb *nb, int coll, int lvl, const ism_coll_view *v, int root,
                     int64_t bytes, const int64_t *blk, int64_t sel, int64_t esize, int commute,
                     char *in, char *out)
{
    nb_phase *ph = phase_new(nb, v, lvl, in, out, bytes);
    if (!ph)
        return ISM_ERR_INTERN;
    if (v->p < 2) /* nothing to exchange: the input is the result */
        return 0;
    ism_coll_choice ch = ism_coll_schedule_choice(nb->c, coll, lvl, v->p, sel, commute);
    ism_coll_args a;
    memset(&a, 0, sizeof a);
    a.p = v->p;
    a.me = v->me;
    a.root = root;
    a.esize = esize ? esize : 1;
    a.bytes = bytes;
    a.blk = blk; /* read while building only */
    a.radix = ch.radix;
    a.seg = ch.seg;
    a.commute = commute;
    a.exclusive = coll == ISM_COLL_EXSCAN;
    ism_coll_sched sc;
    ism_coll_sched_init(&sc, v->p, v->me);
    ph->built = 1;
    if (ism_coll_algs(coll)[ch.alg].build(&sc, &a) || sc.nomem) {
        ism_coll_sched_free(&sc);
        return ISM_ERR_NO_MEM;
    }
    ism_coll_count(coll, lvl, ch.alg);
    adopt(ph, &sc);
    if (!out || !sc.out_len)
        ph->out = NULL;
    ph->stage_in = in && ph->out && !sc.in_place_ok &&
                   overlaps(in, sc.slot[ISM_SL_IN], ph->out, sc.slot[ISM_SL_OUT]);
    return 0;
}

int ism_coll_nb_phase(ism_coll_nb *nb, int coll, int lvl, const ism_coll_view *v, int root,
                      int64_t bytes, int64_t esize, int commute, char *in, char *out)
{
    return phase_add(nb, coll, lvl, v, root, bytes, NULL, bytes, esize, commute, in, out);
}

int ism_coll_nb_phase_blocks(ism_coll_nb *nb, int coll, int lvl, const ism_coll_view *v,
                             int64_t block, const int64_t *blk, int64_t total, int64_t esize,
                             int commute, char *in, char *out)
{
    return phase_add(nb, coll, lvl, v, 0, block, blk, total, esize, commute, in, out);
}

/* A phase whose schedule the caller builds in *sc (then own_done). */
static nb_phase *own_begin(ism_coll_nb *nb, const ism_coll_view *v, int lvl, char *in, char *out,
                           int64_t bytes, ism_coll_sched *sc)
{
    nb_phase *ph = phase_new(nb, v, lvl, in, out, bytes);
    if (ph)
        ism_coll_sched_init(sc, v->p, v->me);
    return ph;
}

static int own_done(nb_phase *ph, ism_coll_sched *sc)
{
    ph->built = 1;
    if (ism_coll_sched_done(sc)) {
        ism_coll_sched_free(sc);
        return ISM_ERR_NO_MEM;
    }
    adopt(ph, sc);
    return 0;
}

int ism_coll_nb_local(ism_coll_nb *nb, int kind, char *from, char *to, int64_t len)
{
    ism_coll_view one = {1, 0, NULL};
    ism_coll_sched sc;
    nb_phase *ph = own_begin(nb, &one, -1, from, to, len, &sc); /* no peers */
    if (!ph)
        return ISM_ERR_INTERN;
    sc.slot[ISM_SL_IN] = sc.slot[ISM_SL_OUT] = sc.out_len = len;
    if (kind == ISM_CA_RED)
        ism_coll_red(&sc, ISM_SL_IN, 0, ISM_SL_OUT, 0, len);
    else
        ism_coll_copy(&sc, ISM_SL_IN, 0, ISM_SL_OUT, 0, len);
    return own_done(ph, &sc);
}

int ism_coll_nb_scatter(ism_coll_nb *nb, const ism_coll_view *v, int root, const int64_t *cnt,
                        char *in, char *out)
{
    ism_coll_sched sc;
    nb_phase *ph = own_begin(nb, v, ISM_LVL_INTRA, v->me == root ? in : NULL,
                             cnt[v->me] ? out : NULL, cnt[v->me], &sc);
    if (!ph)
        return ISM_ERR_INTERN;
    if (v->p < 2) { /* passes in on to out */
        ism_coll_sched_free(&sc);
        return 0;
    }
    sc.slot[ISM_SL_OUT] = sc.out_len = cnt[v->me];
    if (v->me == root) {
        int64_t at = 0;
        for (int l = 0; l < v->p; l++) {
            if (l == root)
                ism_coll_copy(&sc, ISM_SL_IN, at, ISM_SL_OUT, 0, cnt[l]);
            else
                ism_coll_send_nz(&sc, l, ISM_SL_IN, at, cnt[l]);
            at += cnt[l];
        }
        sc.slot[ISM_SL_IN] = at;
    } else {
        ism_coll_recv_nz(&sc, root, ISM_SL_OUT, 0, cnt[v->me]);
    }
    return own_done(ph, &sc);
}

int ism_coll_nb_set_direct(nb_phase *ph, const nb_xfer *x, int n)
{
    free(ph->xf);
    ph->xf = NULL;
    ph->nxf = 0;
    if (n && !(ph->xf = malloc(sizeof *x * (size_t)n)))
        return ISM_ERR_NO_MEM;
    /* receives first, then sends, then copies: the order posted */
    static const int order[] = {ISM_CA_RECV, ISM_CA_SEND, ISM_CA_COPY};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++)
            if (x[i].kind == order[k] && x[i].len > 0)
                ph->xf[ph->nxf++] = x[i];
    return 0;
}

static nb_phase *direct_new(ism_coll_nb *nb)
{
    ism_coll_view all = {nb->c->size, nb->c->rank, NULL}; /* peers are named by rank */
    nb_phase *ph = phase_new(nb, &all, ISM_LVL_WAN, NULL, NULL, 0);
    if (ph)
        ph->built = ph->direct = ph->nround = 1;
    return ph;
}

int ism_coll_nb_direct(ism_coll_nb *nb, const nb_xfer *x, int n)
{
    nb_phase *ph = direct_new(nb);
    return ph ? ism_coll_nb_set_direct(ph, x, n) : ISM_ERR_INTERN;
}

int ism_coll_nb_direct_later(ism_coll_nb *nb, int (*prep)(ism_coll_nb *, nb_phase *))
{
    nb_phase *ph = direct_new(nb);
    if (!ph)
        return ISM_ERR_INTERN;
    ph->prep = prep;
    return 0;
}

int ism_coll_nb_vendor(ism_coll_nb *nb, int (*vstart)(void *ext, ism_vh *req))
{
    if (nb->nph) /* see nb.h: begun in the call, or the vendor's order is lost */
        return ISM_ERR_INTERN;
    ism_coll_view one = {1, 0, NULL};
    nb_phase *ph = phase_new(nb, &one, -1, NULL, NULL, 0); /* no vcoll: the vendor's own */
    ph->built = ph->nround = 1;
    ph->vstart = vstart;
    return 0;
}

static int grow(void **arr, int *cap, int n, size_t each)
{
    if (n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 4;
    void *p = realloc(*arr, each * (size_t)c);
    if (!p)
        return ISM_ERR_NO_MEM;
    *arr = p;
    *cap = c;
    return 0;
}

int ism_coll_nb_unpack_later(ism_coll_nb *nb, ism_dt *dt, void *buf, int64_t count, char *bytes)
{
    if (grow((void **)&nb->unp, &nb->capunp, nb->nunp, sizeof *nb->unp))
        return ISM_ERR_NO_MEM;
    nb->unp[nb->nunp++] = (nb_unpack){dt, buf, count, bytes};
    return 0;
}

char *ism_coll_nb_packed(ism_coll_nb *nb, ism_dt *dt, void *buf, int64_t count, int fill,
                         int unpack, char *own)
{
    if (dt->contig)
        return (char *)((uintptr_t)buf + (uintptr_t)dt->contig_off);
    if (fill)
        ism_dt_pack(dt, buf, count, own);
    if (unpack && ism_coll_nb_unpack_later(nb, dt, buf, count, own))
        return NULL;
    return own;
}

int ism_coll_nb_hold(ism_coll_nb *nb, ism_dt *dt)
{
    if (!dt || !dt->x)
        return 0; /* a predefined type */
    for (int i = 0; i < nb->nheld; i++)
        if (nb->held[i] == dt)
            return 0;
    if (grow((void **)&nb->held, &nb->capheld, nb->nheld, sizeof *nb->held))
        return ISM_ERR_NO_MEM;
    ism_dt_retain(dt);
    nb->held[nb->nheld++] = dt;
    return 0;
}

/* The temporaries of every phase in one block, each slot 64-byte aligned. */
static int temps(ism_coll_nb *nb)
{
    int64_t need = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nb->nph; i++) {
            nb_phase *ph = &nb->ph[i];
            if (!ph->built)
                continue;
            for (int k = 0; k < ph->nslot; k++) {
                int mine = k >= ISM_SL_TMP || (k == ISM_SL_IN && (ph->stage_in || !ph->in)) ||
                           (k == ISM_SL_OUT && !ph->out);
                if (!mine || ph->slen[k] <= 0) {
                    if (pass)
                        ph->slot[k] = k == ISM_SL_IN ? ph->in : k == ISM_SL_OUT ? ph->out : NULL;
                    continue;
                }
                if (pass)
                    ph->slot[k] = nb->tmp + need;
                need += (ph->slen[k] + 63) & ~(int64_t)63;
            }
        }
        if (!pass && need && !(nb->tmp = ism_coll_page_alloc(need)))
            return ISM_ERR_NO_MEM;
        if (!pass)
            nb->tmplen = need;
        need = 0;
    }
    return 0;
}

static int post(ism_coll_nb *nb, int peer, char *buf, int64_t len, int is_send)
{
    ism_comm *c = nb->c;
    int64_t o = 0;
    int l0 = c->l_of[peer];
    do {
        int l = (int)(len - o < MSG_MAX ? len - o : MSG_MAX), rc;
        if ((rc = grow((void **)&nb->post, &nb->cappost, nb->npost, sizeof *nb->post)))
            return rc;
        nb_post *x = &nb->post[nb->npost];
        memset(x, 0, sizeof *x);
        x->want = is_send ? -1 : l;
        if (l0 >= 0)
            rc = is_send ? ism.be->isend(buf + o, l, ISM_DT_BYTE->v, l0, nb->tag, c->vcoll, &x->v)
                         : ism.be->irecv(buf + o, l, ISM_DT_BYTE->v, l0, nb->tag, c->vcoll,
                                         &x->v);
        else
            rc = is_send ? ism_isend(buf + o, l, ISM_DT_BYTE, peer, nb->tag, c, c->ctx + 1,
                                     ISM_MODE_STD, &x->r)
                         : ism_irecv(buf + o, l, ISM_DT_BYTE, peer, nb->tag, c, c->ctx + 1,
                                     &x->r);
        if (rc)
            return rc;
        nb->npost++;
        nb->left++;
        o += l;
    } while (o < len);
    return 0;
}

/* Tests what the round posted; the first error is kept. */
static int test_posts(ism_coll_nb *nb)
{
    int moved = 0;
    for (int i = 0; i < nb->npost; i++) {
        nb_post *x = &nb->post[i];
        if (x->done)
            continue;
        int flag = 0, e;
        size_t bytes = 0;
        if (x->r) {
            ism_status st;
            memset(&st, 0, sizeof st);
            e = ism_req_test(x->r, &flag, &st);
            if (!flag && !(e && x->r->kind == ISM_RQ_VENDOR))
                continue;
            bytes = st.bytes;
            ism_req_free(x->r);
            x->r = NULL;
        } else {
            ism_vstatus st;
            memset(&st, 0, sizeof st);
            e = ism.be->test(&x->v, &flag, &st);
            if (!flag && !e)
                continue;
            e = e ? e : st.error;
            bytes = st.bytes;
        }
        if (!e && x->want >= 0 && (int64_t)bytes != x->want)
            e = ISM_ERR_TRUNCATE; /* both ends build the same sizes: a broken schedule */
        x->done = 1;
        nb->left--;
        moved++;
        if (e && !nb->rc)
            nb->rc = e;
    }
    if (!nb->left)
        nb->npost = 0;
    return moved;
}

/* Runs round rd of phase ph: local actions at once, messages posted. */
static int run_round(ism_coll_nb *nb, nb_phase *ph, int rd)
{
    int rc = 0;
    if (ph->vstart) { /* one vendor collective (ism_coll_nb_vendor) */
        if ((rc = grow((void **)&nb->post, &nb->cappost, nb->npost, sizeof *nb->post)))
            return rc;
        nb_post *x = &nb->post[nb->npost];
        memset(x, 0, sizeof *x);
        x->want = -1;
        if ((rc = ph->vstart(nb->ext, &x->v)))
            return rc;
        nb->npost++;
        nb->left++;
        return 0;
    }
    if (ph->direct) { /* direct transfers (ism_coll_nb_direct) */
        for (int i = 0; i < ph->nxf && !rc; i++) {
            const nb_xfer *x = &ph->xf[i];
            if (x->kind == ISM_CA_COPY)
                ism_coll_move(x->b, x->a, (size_t)x->len);
            else
                rc = post(nb, x->peer, x->a, x->len, x->kind == ISM_CA_SEND);
        }
        return rc;
    }
    int lo = rd ? ph->rend[rd - 1] : 0, hi = ph->rend[rd];
    for (int i = lo; i < hi && !rc; i++) {
        const ism_coll_act *x = &ph->act[i];
        switch (x->kind) {
        case ISM_CA_SEND:
        case ISM_CA_RECV:
            rc = post(nb, ph->v.members[x->peer], ph->slot[x->a] + x->aoff, x->len,
                      x->kind == ISM_CA_SEND);
            break;
        case ISM_CA_RED:
            rc = ism_coll_apply(&nb->red, ph->slot[x->a] + x->aoff, ph->slot[x->b] + x->boff,
                                x->len);
            break;
        case ISM_CA_COPY:
            ism_coll_move(ph->slot[x->b] + x->boff, ph->slot[x->a] + x->aoff, (size_t)x->len);
            break;
        }
    }
    return rc;
}

/* Begins a phase: one without a schedule passes its input on as its result. */
static void phase_begin(nb_phase *ph)
{
    if (!ph->built) {
        if (ph->in && ph->out && ph->in != ph->out && ph->bytes > 0)
            ism_coll_move(ph->out, ph->in, (size_t)ph->bytes);
        return;
    }
    if (ph->stage_in)
        ism_coll_move(ph->slot[ISM_SL_IN], ph->in, (size_t)ph->slen[ISM_SL_IN]);
}

/* Advances nb as far as it goes now; 1 when it has finished. *moved counts what
 * happened (posts completed, rounds begun): the progress engine's measure of progress. */
static int advance(ism_coll_nb *nb, int *moved)
{
    if (nb->left) {
        int k = test_posts(nb);
        *moved += k;
        if (!k)
            return 0;
    }
    while (!nb->left) {
        if (nb->rc || nb->cur >= nb->nph)
            return 1;
        nb_phase *ph = &nb->ph[nb->cur];
        if (nb->rd < 0) {
            int rc = ph->prep ? ph->prep(nb, ph) : 0;
            if (rc) {
                nb->rc = rc;
                continue;
            }
            phase_begin(ph);
        }
        if (!ph->built || ++nb->rd >= ph->nround) {
            nb->cur++;
            nb->rd = -1;
            continue;
        }
        int rc = run_round(nb, ph, nb->rd);
        (*moved)++;
        if (rc && !nb->rc)
            nb->rc = rc;
        if (nb->left)
            *moved += test_posts(nb); /* whatever is there already */
    }
    return 0;
}

static void nb_free(ism_coll_nb *nb)
{
    for (int i = 0; i < nb->nph; i++)
        phase_free(&nb->ph[i]);
    ism_coll_redop_free(&nb->red);
    ism_op_release(nb->red.op);
    for (int i = 0; i < nb->nheld; i++)
        ism_dt_release(nb->held[i]);
    free(nb->held);
    free(nb->unp);
    free(nb->post);
    free(nb->tmp);
    free(nb->own);
    free(nb->wan);
    if (nb->ext_free)
        nb->ext_free(nb->ext);
    free(nb);
}

void ism_coll_nb_discard(ism_coll_nb *nb) { nb_free(nb); }

static void unlink_nb(ism_coll_nb *nb)
{
    for (ism_coll_nb **p = &head; *p; p = &(*p)->next)
        if (*p == nb) {
            *p = nb->next;
            break;
        }
}

/* The bytes a collective in flight holds besides its temporaries and own buffers. */
static int64_t footprint(const ism_coll_nb *nb)
{
    int64_t b = (int64_t)sizeof *nb + (int64_t)sizeof(nb_post) * nb->cappost;
    for (int i = 0; i < nb->nph; i++)
        if (nb->ph[i].built)
            b += (int64_t)sizeof(ism_coll_act) * nb->ph[i].nact +
                 (int64_t)sizeof(int) * nb->ph[i].nround +
                 (int64_t)sizeof(nb_xfer) * nb->ph[i].nxf;
    b += (int64_t)sizeof(nb_unpack) * nb->capunp + (int64_t)sizeof(ism_dt *) * nb->capheld;
    if (nb->wan)
        b += (int64_t)sizeof(int) * ism.lay.nsites;
    return b;
}

static void finish(ism_coll_nb *nb)
{
    int64_t fp = footprint(nb);
    if (fp > ism_coll_nb_st.max_bytes)
        ism_coll_nb_st.max_bytes = fp;
    if (nb->tmplen > ism_coll_nb_st.max_temps)
        ism_coll_nb_st.max_temps = nb->tmplen;
    ism_coll_nb_st.done++;
    unlink_nb(nb);
    ism_coll_nb_active--;
    ism_remote_add(-1);
    ism_req *r = nb->req;
    int rc = nb->rc;
    for (int i = 0; !rc && i < nb->nunp; i++) /* non-contiguous results (types held) */
        ism_dt_unpack(nb->unp[i].dt, nb->unp[i].bytes, nb->unp[i].buf, nb->unp[i].count);
    void (*ended)(void *) = nb->ended, *arg = nb->ended_arg;
    nb_free(nb);
    r->st.error = rc;
    ism_req_complete(r, rc);
    if (ended)
        ended(arg);
}

int ism_coll_nb_wait(ism_req *r)
{
    ism_req_wait(r, NULL);
    int rc = r->error ? r->error : r->st.error;
    ism_req_free(r);
    return rc;
}

void ism_coll_nb_next_ends(void (*fn)(void *), void *arg)
{
    next_end = fn;
    next_arg = arg;
}

int ism_coll_nb_launch(ism_coll_nb *nb, ism_dt *hold, ism_req **out)
{
    ism_comm *c = nb->c;
    int rc = 0;
    /* A phase inside the site needs the communicator's second vendor communicator. Making
     * it is a vendor collective over the site, and such calls must be made in one order
     * on every member: a coroutine's collectives pending on c (which make their vendor
     * calls whenever they are resumed, MPI_Comm_idup's included) are completed first, as
     * a blocking collective does. Only the first collective in flight on c that finds no
     * vcoll does this (and the blocking collectives' site schedules make it too). */
    int inside = 0;
    for (int i = 0; i < nb->nph; i++)
        inside |= nb->ph[i].built && (nb->ph[i].lvl == ISM_LVL_INTRA ||
                                      (nb->ph[i].direct && c->lsize > 1));
    if (inside && !c->vcoll) {
        ism_nbc_drain(c);
        rc = ism_comm_add_vcoll(c);
    }
    ism_req *r = rc ? NULL : ism_req_alloc(ISM_RQ_NBC);
    if (!rc && (!r || (rc = temps(nb)))) {
        rc = rc ? rc : ISM_ERR_NO_MEM;
        ism_req_free(r);
    }
    if (rc) {
        nb_free(nb);
        return rc;
    }
    r->comm = c;
    r->st.source = ISM_ANY_SOURCE;
    r->st.tag = ISM_ANY_TAG;
    nb->req = r;
    if (ism_coll_nb_hold(nb, hold)) { /* MPI lets the program free it while we use it */
        ism_req_free(r);
        nb_free(nb);
        return ISM_ERR_NO_MEM;
    }
    nb->ended = next_end;
    nb->ended_arg = next_arg;
    next_end = NULL;
    nb->next = head;
    head = nb;
    ism_coll_nb_active++;
    ism_coll_nb_st.started++;
    /* the program's blocking calls must keep serving us: the fast paths that block in
     * the vendor are taken only when no cross-site work is pending */
    ism_remote_add(1);
    *out = r;
    polling++;
    int moved = 0;
    if (advance(nb, &moved))
        finish(nb);
    polling--;
    return 0;
}

int ism_coll_nb_poll(void)
{
    if (polling || !head)
        return 0;
    polling++;
    int n = 0;
    for (ism_coll_nb *nb = head, *next; nb; nb = next) {
        next = nb->next;
        if (advance(nb, &n)) {
            finish(nb);
            n++;
        }
    }
    polling--;
    return n;
}

static int inflight_on(const ism_comm *c)
{
    for (ism_coll_nb *nb = head; nb; nb = nb->next)
        if (nb->c == c)
            return 1;
    return 0;
}

void ism_coll_nb_drain(ism_comm *c)
{
    unsigned spins = 0;
    while (inflight_on(c))
        if (!ism_coll_nb_poll() && !ism_progress())
            ism_idle(&spins);
}

void ism_coll_nb_report(void)
{
    if (ism_core_knob(ISM_K_COLL_STATS, 0) == 0 || !ism_coll_nb_st.started)
        return;
    fprintf(stderr,
            "isthmus coll: site %s rank %d: in flight: %llu nonblocking collectives, each held "
            "at most %lld bytes besides at most %lld bytes of temporaries\n",
            ism_site_name(ism.lay.site), ism.grank, (unsigned long long)ism_coll_nb_st.started,
            (long long)ism_coll_nb_st.max_bytes, (long long)ism_coll_nb_st.max_temps);
}
