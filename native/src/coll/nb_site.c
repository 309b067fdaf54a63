/* nb_site.c: the nonblocking collectives of a communicator within one site (a job of one
 * site, or a communicator whose members share a site) as collectives in flight (nb.c):
 * one vendor step, the vendor's own nonblocking collective issued in the call (nb.c's
 * ism_coll_nb_vendor), or one phase of our schedule where ISTHMUS_COLL_<X> chose one, and
 * for a reduction with a user op. (The blocking barrier and reductions default to ours
 * there, twolevel.c's vendor_default, because they wait in our loop; in flight both are
 * tested alike, and the vendor's measured as fast or faster.) No coroutine runs them, and
 * several on one communicator progress at once.
 *
 * ISM_COLL_PASS (the coroutine, core/nbc.c, as before) for what neither can take: a
 * reduction on a non-contiguous type or a user op where the vendor is chosen (the vendor
 * would call the op with its own type handle), a data mover where one of our schedules is
 * chosen, and a buffer the vendor cannot be given (MPI_BOTTOM with data as a reduction's
 * send buffer or a scatter's receive buffer: its NULL there means in place).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "nb.h"

/* What the vendor step reads until it completes (nb->ext). */
typedef struct site_call {
    ism_coll_site a;
    ism_vh comm;
    int *vec;      /* copies of the vectors: scnt, sdsp, rcnt, rdsp (n each) */
    ism_vh *types; /* alltoallw: the send types, then the receive types */
    void *hold;    /* the vendor's, freed when it has completed */
} site_call;

static void call_free(void *p)
{
    site_call *k = p;
    if (!k)
        return;
    free(k->vec);
    free(k->types);
    free(k->hold);
    free(k);
}

static const char nothing;

/* A buffer as the vendor takes it: in place is NULL (except for alltoallw), an empty
 * NULL an address nothing is read from; *bad where the vendor cannot be given it. */
static const void *vbuf(const void *b, int64_t bytes, int *bad)
{
    if (b == ISM_IN_PLACE)
        return NULL;
    if (!b && bytes > 0)
        *bad = 1;
    return b ? b : &nothing;
}

static ism_vh vh(const ism_dt *d) { return d ? d->v : ISM_DT_BYTE->v; }

static int vstart(void *p, ism_vh *q)
{
    site_call *k = p;
    const ism_coll_site *a = &k->a;
    ism_vh c = k->comm, op = a->op ? a->op->v : 0;
    int n = a->n, *v = k->vec;
    switch (a->coll) {
    case ISM_SITE_BARRIER:
        return ism.be->ibarrier(c, q);
    case ISM_SITE_BCAST:
        return ism.be->ibcast(a->r, a->rcount, vh(a->rdt), a->root, c, q);
    case ISM_SITE_REDUCE:
        return ism.be->ireduce(a->s, a->r, a->rcount, vh(a->rdt), op, a->root, c, q);
    case ISM_SITE_ALLREDUCE:
        return ism.be->iallreduce(a->s, a->r, a->rcount, vh(a->rdt), op, c, q);
    case ISM_SITE_SCAN:
        return ism.be->iscan(a->s, a->r, a->rcount, vh(a->rdt), op, c, q);
    case ISM_SITE_EXSCAN:
        return ism.be->iexscan(a->s, a->r, a->rcount, vh(a->rdt), op, c, q);
    case ISM_SITE_REDUCE_SCATTER:
        return ism.be->ireduce_scatter(a->s, a->r, v + 2 * n, vh(a->rdt), op, c, q);
    case ISM_SITE_ALLGATHER:
        return ism.be->iallgather(a->s, a->scount, vh(a->sdt), a->r, a->rcount, vh(a->rdt), c,
                                  q);
    case ISM_SITE_GATHERV:
        return ism.be->igatherv(a->s, a->scount, vh(a->sdt), a->r, v + 2 * n, v + 3 * n,
                                vh(a->rdt), a->root, c, q);
    case ISM_SITE_SCATTERV:
        return ism.be->iscatterv(a->s, v, v + n, vh(a->sdt), a->r, a->rcount, vh(a->rdt),
                                 a->root, c, q);
    case ISM_SITE_ALLGATHERV:
        return ism.be->iallgatherv(a->s, a->scount, vh(a->sdt), a->r, v + 2 * n, v + 3 * n,
                                   vh(a->rdt), c, q);
    case ISM_SITE_ALLTOALLW:
        return ism.be->ialltoallw(a->s, v, v + n, k->types, a->r, v + 2 * n, v + 3 * n,
                                  k->types + n, c, q, &k->hold);
    }
    return ISM_ERR_INTERN;
}

/* Copies an int64 vector that must fit int (0 where NULL); 0 when it does not fit. */
static int narrow(int *to, const int64_t *from, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t x = from ? from[i] : 0;
        if (x > INT_MAX || x < INT_MIN)
            return 0;
        to[i] = (int)x;
    }
    return 1;
}

/* What the vendor step keeps, or NULL with *rc set (ISM_COLL_PASS: a vector beyond int). */
static site_call *vendor_call(const ism_coll_site *a, ism_comm *c, int *rc)
{
    int n = a->n;
    site_call *k = calloc(1, sizeof *k);
    *rc = ISM_ERR_NO_MEM;
    if (!k)
        return NULL;
    k->a = *a;
    k->a.root = a->root >= 0 ? c->l_of[a->root] : a->root;
    k->comm = c->vcomm;
    if (a->coll >= ISM_SITE_REDUCE_SCATTER && a->coll != ISM_SITE_ALLGATHER) { /* vectors */
        if (!(k->vec = calloc(4 * (size_t)n + 1, sizeof *k->vec))) {
            call_free(k);
            return NULL;
        }
        if (!narrow(k->vec, a->scnt, n) || !narrow(k->vec + n, a->sdsp, n) ||
            !narrow(k->vec + 2 * n, a->rcnt, n) || !narrow(k->vec + 3 * n, a->rdsp, n)) {
            call_free(k);
            *rc = ISM_COLL_PASS;
            return NULL;
        }
    }
    if (a->coll == ISM_SITE_ALLTOALLW) {
        if (!(k->types = calloc(2 * (size_t)n + 1, sizeof *k->types))) {
            call_free(k);
            return NULL;
        }
        for (int j = 0; j < n; j++) {
            k->types[j] = vh(a->st[j]);
            k->types[n + j] = vh(a->rt[j]);
        }
    }
    *rc = 0;
    return k;
}

/* The vendor step as nb's only phase, its types held. */
static int vendor_step(ism_coll_nb *nb, site_call *k)
{
    const ism_coll_site *a = &k->a;
    nb->ext = k;
    nb->ext_free = call_free;
    int rc = ism_coll_nb_hold(nb, a->sdt);
    for (int j = 0; a->coll == ISM_SITE_ALLTOALLW && j < a->n && !rc; j++) {
        rc = ism_coll_nb_hold(nb, a->st[j]);
        rc = rc ? rc : ism_coll_nb_hold(nb, a->rt[j]);
    }
    return rc ? rc : ism_coll_nb_vendor(nb, vstart);
}

/* Our schedule for a reduction or the barrier: one phase over the members, on the
 * caller's buffers (a contiguous type). */
static int our_phase(ism_coll_nb *nb, const ism_coll_site *a, int coll)
{
    ism_comm *c = nb->c;
    ism_dt *dt = a->rdt;
    ism_coll_view iv = ism_coll_intra_view(c);
    if (coll == ISM_COLL_BARRIER)
        return ism_coll_nb_phase(nb, coll, ISM_LVL_INTRA, &iv, 0, 0, 1, 1, NULL, NULL);
    int commute = !a->op->user || a->op->commute;
    char *o = a->r ? (char *)a->r + dt->contig_off : NULL;
    char *in = a->s == ISM_IN_PLACE ? o : (char *)(uintptr_t)a->s + dt->contig_off;
    if (coll == ISM_COLL_REDUCE_SCATTER) {
        int64_t *blk = malloc(sizeof *blk * (size_t)a->n + 1), total = 0;
        if (!blk)
            return ISM_ERR_NO_MEM;
        for (int l = 0; l < a->n; l++) /* in the members' order */
            total += blk[l] = a->rcnt[c->c_of_l[l]] * dt->size;
        if (!total) {
            free(blk);
            return 0;
        }
        int rc = ism_coll_nb_phase_blocks(nb, coll, ISM_LVL_INTRA, &iv, 0, blk, total, dt->size,
                                          commute, in, o);
        free(blk);
        return rc;
    }
    int64_t bytes = (int64_t)a->rcount * dt->size;
    int me_root = coll != ISM_COLL_REDUCE || c->rank == a->root;
    if (coll == ISM_COLL_EXSCAN && a->n == 1)
        o = NULL; /* rank 0's result is undefined: left untouched, as MPICH does */
    return ism_coll_nb_phase(nb, coll, ISM_LVL_INTRA, &iv, a->root >= 0 ? c->l_of[a->root] : 0,
                             bytes, dt->size, commute, in, me_root ? o : NULL);
}

/* The schedule coll of ours that a reduction or the barrier runs here, or -1: the
 * vendor's (twolevel.c's choice on one site). */
static int ours(ism_comm *c, const ism_coll_site *a, int *coll)
{
    static const int of[] = {
        [ISM_SITE_BARRIER] = ISM_COLL_BARRIER,     [ISM_SITE_REDUCE] = ISM_COLL_REDUCE,
        [ISM_SITE_ALLREDUCE] = ISM_COLL_ALLREDUCE, [ISM_SITE_SCAN] = ISM_COLL_SCAN,
        [ISM_SITE_EXSCAN] = ISM_COLL_EXSCAN,       [ISM_SITE_REDUCE_SCATTER] = ISM_COLL_REDUCE_SCATTER,
        [ISM_SITE_BCAST] = ISM_COLL_BCAST,         [ISM_SITE_ALLGATHER] = ISM_COLL_ALLGATHER,
        [ISM_SITE_ALLTOALLW] = ISM_COLL_ALLTOALL,  [ISM_SITE_GATHERV] = -1,
        [ISM_SITE_SCATTERV] = -1,                  [ISM_SITE_ALLGATHERV] = -1,
    };
    *coll = of[a->coll];
    if (*coll < 0)
        return 0;
    int64_t bytes = (int64_t)a->rcount * (a->rdt ? a->rdt->size : 0);
    if (*coll == ISM_COLL_ALLTOALL) { /* the uniform form only: v and w are the vendor's */
        if (!a->rdt)
            return 0;
        bytes *= a->n;
    }
    int commute = !a->op || !a->op->user || a->op->commute;
    int alg = ism_coll_select(c, *coll, ISM_LVL_INTRA, c->size, bytes, commute).alg;
    ism_coll_count(*coll, ISM_LVL_INTRA, alg);
    /* ours where chosen, and for a user op (the vendor would call it with its own type
     * handle); else the vendor's, which measured as fast or faster in flight (bench/
     * nbc_overlap.py --sites 1: Open MPI's Iallreduce of 8 x 128 KiB 1.41 ms against ours
     * 2.16; MPICH's 2.75 against 2.24, both far below the coroutines' 5.86) */
    return alg >= 0 || (alg == ISM_ALG_DEFAULT && a->op && a->op->user);
}

int ism_coll_isite(const ism_coll_site *a, ism_comm *c, ism_req **out)
{
    /* The coroutines pending on c first: their vendor calls come before ours, and one of
     * them may be making c's vcoll, which exists when its idup completes, at another time
     * on each member; once they have completed, whether it exists is the same on all. */
    ism_nbc_drain(c);
    int bad = 0, coll, sched = ours(c, a, &coll), rc = 0;
    int64_t rb = a->rdt ? (int64_t)a->rcount * a->rdt->size : 0;
    for (int r = 0; a->coll == ISM_SITE_REDUCE_SCATTER && r < a->n; r++)
        rb += a->rcnt[r] * a->rdt->size; /* the send buffer's */
    ism_coll_site v = *a;
    site_call *k = NULL;
    /* ours needs the communicator's second vendor communicator; made here it would be a
     * blocking vendor call in a nonblocking start (a peer may not reach it before it waits
     * for us): until a blocking collective has made it, the vendor's, where it can */
    if (sched && !c->vcoll && c->size > 1)
        sched = coll == ISM_COLL_BARRIER || (a->op && !a->op->user) ? 0 : -1;
    if (sched < 0 || (a->op && (!a->rdt->contig || (!sched && a->op->user))))
        return ISM_COLL_PASS; /* the blocking form's choices */
    if (sched && !a->op && coll != ISM_COLL_BARRIER)
        return ISM_COLL_PASS; /* a data mover where ours is chosen: the blocking form's */
    if (!sched) { /* the buffers as the vendor takes them */
        if (a->op)
            v.s = vbuf(a->s, rb, &bad);
        else if (a->coll == ISM_SITE_SCATTERV)
            v.r = (void *)(uintptr_t)vbuf(a->r, rb, &bad);
        else if (a->coll == ISM_SITE_ALLGATHER || a->coll == ISM_SITE_GATHERV ||
                 a->coll == ISM_SITE_ALLGATHERV)
            v.s = vbuf(a->s, a->sdt ? (int64_t)a->scount * a->sdt->size : 0, &bad);
        if (a->op && !a->r)
            v.r = (void *)&nothing;
        if (bad || !(k = vendor_call(&v, c, &rc)))
            return bad ? ISM_COLL_PASS : rc;
    }
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb) {
        call_free(k);
        return ISM_ERR_NO_MEM;
    }
    if (a->op) {
        ism_coll_redop_init(&nb->red, a->op, a->rdt);
        ism_op_hold(a->op); /* released with the collective, as nb_start.c's */
    }
    /* a reduction of nothing ends at once, with no phase (every member has the same count) */
    if (sched && (!a->op || rb > 0 || coll == ISM_COLL_REDUCE_SCATTER))
        rc = our_phase(nb, &v, coll);
    else if (!sched)
        rc = vendor_step(nb, k);
    if (rc) {
        ism_coll_nb_discard(nb);
        return rc;
    }
    return ism_coll_nb_launch(nb, a->rdt, out);
}
