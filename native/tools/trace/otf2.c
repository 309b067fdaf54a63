/* otf2.c: isthmus-trace-otf2, a trace folder (isthmus run --trace DIR) as an OTF2
 * archive, written with the OTF2 library itself, for otf2-print, Vampir, Score-P's tools.
 *
 *   isthmus-trace-otf2 [--no-gateways] DIR [OUT]   (OUT: DIR/otf2 by default)
 *
 * App ranks are locations (one per thread) of processes grouped by site and host; their
 * MPI calls are regions with the MPI events inside (messages, requests, collectives).
 * Gateways are locations of their own under their site; each numbered frame on a WAN
 * link is a message between the two gateways (tag: the frame's link sequence number), a
 * frame lost to a reconnection and sent again or a duplicate that was dropped is a region,
 * a link's outage is a region, and the periodic samples of each link (queues, window,
 * bytes) are metrics. Every time is mapped onto rank 0's clock with DIR/clocks.json, and
 * each location carries the error bound of that mapping as a property. `isthmus trace
 * export` runs this program; `isthmus trace export --no-gateways` hides the gateways.
 */
#include <errno.h>
#include <otf2/otf2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "job.h"
#include "otf2_rma.h"

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "isthmus-trace-otf2: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    exit(1);
}

static void check(OTF2_ErrorCode rc, const char *what)
{
    if (rc != OTF2_SUCCESS)
        fprintf(stderr, "isthmus-trace-otf2: %s: %s\n", what, OTF2_Error_GetDescription(rc)),
            exit(1);
}

/* ---- strings and regions, defined at the end with the global definitions ---- */

static char **strs;
static uint32_t nstrs, capstrs;
static umap str_by_hash; /* hash -> string id + 1 (collisions: a linear probe below) */

static uint32_t str_id(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = s; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (uint64_t k = h;; k++) {
        uint64_t *v = umap_find(&str_by_hash, k);
        if (!v)
            break;
        if (!strcmp(strs[*v - 1], s))
            return (uint32_t)(*v - 1);
    }
    uint64_t k = h;
    while (umap_find(&str_by_hash, k))
        k++;
    if (nstrs == capstrs) {
        capstrs = capstrs ? capstrs * 2 : 256;
        strs = realloc(strs, sizeof *strs * capstrs);
        if (!strs)
            die("%s", "out of memory");
    }
    strs[nstrs] = strdup(s);
    umap_put(&str_by_hash, k, nstrs + 1);
    return nstrs++;
}

typedef struct {
    uint32_t name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} region;

static region *regions;
static uint32_t nregions;
static umap region_by_str; /* string id -> region id */

static uint32_t region_id(const char *name, OTF2_RegionRole role, OTF2_Paradigm par)
{
    uint32_t s = str_id(name);
    uint64_t *v = umap_find(&region_by_str, s);
    if (v)
        return (uint32_t)*v;
    regions = realloc(regions, sizeof *regions * (nregions + 1));
    if (!regions)
        die("%s", "out of memory");
    regions[nregions] = (region){s, role, par};
    umap_put(&region_by_str, s, nregions);
    return nregions++;
}

/* ---- MPI: functions, collectives ---- */

static const struct {
    const char *name;
    OTF2_CollectiveOp op;
} colls[] = {
    {"Barrier", OTF2_COLLECTIVE_OP_BARRIER}, {"Bcast", OTF2_COLLECTIVE_OP_BCAST},
    {"Gather", OTF2_COLLECTIVE_OP_GATHER}, {"Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
    {"Scatter", OTF2_COLLECTIVE_OP_SCATTER}, {"Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
    {"Allgather", OTF2_COLLECTIVE_OP_ALLGATHER}, {"Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
    {"Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL}, {"Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
    {"Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW}, {"Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
    {"Reduce", OTF2_COLLECTIVE_OP_REDUCE}, {"Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
    {"Scan", OTF2_COLLECTIVE_OP_SCAN}, {"Exscan", OTF2_COLLECTIVE_OP_EXSCAN},
    {"Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
};

/* The collective operation of an MPI function name (blocking, I-, _init, _c forms);
 * -1 for anything else, including the neighborhood collectives OTF2 has no name for. */
static int coll_op(const char *fn)
{
    char base[64];
    if (strncmp(fn, "MPI_", 4))
        return -1;
    snprintf(base, sizeof base, "%s", fn + 4);
    size_t n = strlen(base);
    if (n > 2 && !strcmp(base + n - 2, "_c"))
        base[n -= 2] = 0;
    if (n > 5 && !strcmp(base + n - 5, "_init"))
        base[n -= 5] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *b = pass ? base + 1 : base;
        if (pass && base[0] != 'I')
            break;
        for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
            if (!strcmp(b, colls[i].name))
                return (int)colls[i].op;
    }
    return -1;
}

static OTF2_RegionRole mpi_role(const char *fn)
{
    int op = coll_op(fn);
    if (op == OTF2_COLLECTIVE_OP_BARRIER)
        return OTF2_REGION_ROLE_BARRIER;
    switch (op) {
    case OTF2_COLLECTIVE_OP_BCAST:
    case OTF2_COLLECTIVE_OP_SCATTER:
    case OTF2_COLLECTIVE_OP_SCATTERV:
        return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case OTF2_COLLECTIVE_OP_GATHER:
    case OTF2_COLLECTIVE_OP_GATHERV:
    case OTF2_COLLECTIVE_OP_REDUCE:
        return OTF2_REGION_ROLE_COLL_ALL2ONE;
    case -1:
        break;
    default:
        return OTF2_REGION_ROLE_COLL_ALL2ALL;
    }
    if (strstr(fn, "send") || strstr(fn, "recv") || strstr(fn, "Send") || strstr(fn, "Recv") ||
        strstr(fn, "Wait") || strstr(fn, "Test") || strstr(fn, "probe") || strstr(fn, "Probe"))
        return OTF2_REGION_ROLE_POINT2POINT;
    return OTF2_REGION_ROLE_FUNCTION;
}

/* ---- locations ---- */

static uint64_t rank_location(int rank, int thread)
{
    return thread ? ((uint64_t)thread << 32) | (uint64_t)rank : (uint64_t)rank;
}

static uint64_t gw_location(int k)
{
    return (1ull << 40) + (uint64_t)k;
}

/* ---- writing one rank ---- */

typedef struct {
    uint64_t t0, t1, prev_t;
    uint32_t seq;
    uint16_t depth, thread;
    uint8_t kind;
    const ism_tr_hdr *h, *dend;
} item;

static int cmp_item(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* a request in flight (or a persistent one) */
typedef struct {
    uint8_t used, persistent, active, has_send, has_recv, coll;
    uint32_t comm;
    int32_t speer, stag, rpeer, rtag;
    uint64_t sbytes, rbytes;
    int op;
    uint32_t root;
    uint64_t sent, recvd;
} reqent;

typedef struct {
    const tr_job *j;
    const tr_proc *p;
    OTF2_EvtWriter **w;
    uint64_t *last;
    const char **names;
    int nnames;
    umap reqs;       /* request -> index in rs */
    reqent *rs;
    size_t nrs, caprs;
    uint64_t stats_msgs, stats_colls;
    tr_rma rma;      /* windows and one-sided operations (otf2_rma.c) */
} rankw;

static uint64_t ts(rankw *r, int th, uint64_t raw)
{
    uint64_t g = tr_time(r->j, r->p, raw);
    if (g < r->last[th])
        g = r->last[th];
    r->last[th] = g;
    return g;
}

static reqent *req_get(rankw *r, uint64_t req, int create)
{
    uint64_t *v = umap_find(&r->reqs, req);
    if (v)
        return &r->rs[*v];
    if (!create)
        return NULL;
    if (r->nrs == r->caprs) {
        r->caprs = r->caprs ? r->caprs * 2 : 64;
        r->rs = realloc(r->rs, sizeof *r->rs * r->caprs);
        if (!r->rs)
            die("%s", "out of memory");
    }
    size_t i = r->nrs++;
    memset(&r->rs[i], 0, sizeof r->rs[i]);
    r->rs[i].used = 1;
    umap_put(&r->reqs, req, i);
    return &r->rs[i];
}

static int gcomm(const rankw *r, uint32_t local, uint32_t *out)
{
    if (local >= r->p->ncomm || r->p->comm_g[local] == UINT32_MAX)
        return 0;
    *out = r->p->comm_g[local];
    return 1;
}

static const char *fn_name(const rankw *r, uint16_t fn)
{
    return fn < r->nnames ? r->names[fn] : "MPI_(unknown)";
}

#define RECV_PART (1ull << 63)

static void start_request(rankw *r, OTF2_EvtWriter *w, uint64_t t, uint64_t req, reqent *e)
{
    if (e->coll) {
        check(OTF2_EvtWriter_NonBlockingCollectiveRequest(w, NULL, t, req), "event");
    } else {
        if (e->has_send && e->speer >= 0) {
            check(OTF2_EvtWriter_MpiIsend(w, NULL, t, (uint32_t)e->speer, e->comm,
                                          (uint32_t)e->stag, e->sbytes, req),
                  "event");
            r->stats_msgs++;
        }
        if (e->has_recv && e->rpeer != -3)
            check(OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t, req | RECV_PART), "event");
    }
    e->active = 1;
}

static void enter_details(rankw *r, const item *it)
{
    OTF2_EvtWriter *w = r->w[it->thread];
    const ism_tr_call *c = (const void *)it->h;
    uint64_t t = ts(r, it->thread, c->t0);
    const char *fn = fn_name(r, c->h.fn);
    check(OTF2_EvtWriter_Enter(w, NULL, t, region_id(fn, mpi_role(fn), OTF2_PARADIGM_MPI)),
          "enter");
    for (const char *q = (const char *)it->h + it->h->len; q < (const char *)it->dend;) {
        const ism_tr_hdr *d = (const void *)q;
        q += d->len;
        uint32_t comm;
        if (d->kind == ISM_TR_SEND || d->kind == ISM_TR_RECV) {
            const ism_tr_p2p *m = (const void *)d;
            int send = d->kind == ISM_TR_SEND;
            if (!gcomm(r, m->comm, &comm))
                continue;
            if (d->flags & (ISM_TR_P2P_NB | ISM_TR_P2P_INIT)) {
                reqent *e = req_get(r, m->req, 1);
                if (send) {
                    e->has_send = 1;
                    e->speer = m->peer;
                    e->stag = m->tag;
                    e->sbytes = m->bytes;
                } else {
                    e->has_recv = 1;
                    e->rpeer = m->peer;
                    e->rtag = m->tag;
                    e->rbytes = m->bytes;
                }
                e->comm = comm;
                e->persistent = (d->flags & ISM_TR_P2P_INIT) != 0;
                if (!e->persistent) {
                    if (send && m->peer >= 0) {
                        check(OTF2_EvtWriter_MpiIsend(w, NULL, t, (uint32_t)m->peer, comm,
                                                      (uint32_t)m->tag, m->bytes, m->req),
                              "event");
                        r->stats_msgs++;
                    } else if (!send && m->peer != -3) {
                        check(OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t, m->req | RECV_PART),
                              "event");
                    }
                    e->active = 1;
                }
            } else if (send && m->peer >= 0) {
                check(OTF2_EvtWriter_MpiSend(w, NULL, t, (uint32_t)m->peer, comm,
                                             (uint32_t)m->tag, m->bytes),
                      "event");
                r->stats_msgs++;
            }
        } else if (d->kind == ISM_TR_COLL) {
            const ism_tr_coll *m = (const void *)d;
            int op = coll_op(fn);
            if (op < 0 || !gcomm(r, m->comm, &comm))
                continue;
            if (d->flags & (ISM_TR_COLL_NB | ISM_TR_COLL_INIT)) {
                reqent *e = req_get(r, m->req, 1);
                e->coll = 1;
                e->comm = comm;
                e->op = op;
                e->root = m->root >= 0 ? (uint32_t)m->root : OTF2_UNDEFINED_UINT32;
                e->sent = m->sent;
                e->recvd = m->recvd;
                e->persistent = (d->flags & ISM_TR_COLL_INIT) != 0;
                if (!e->persistent)
                    start_request(r, w, t, m->req, e);
            } else {
                check(OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t), "event");
            }
        } else if (d->kind == ISM_TR_RMA) {
            tr_rma_enter(&r->rma, w, t, (const void *)d);
        } else if (d->kind == ISM_TR_START) {
            const ism_tr_req *m = (const void *)d;
            reqent *e = req_get(r, m->req, 0);
            if (e && e->persistent)
                start_request(r, w, t, m->req, e);
        }
    }
}

static void leave_details(rankw *r, const item *it)
{
    OTF2_EvtWriter *w = r->w[it->thread];
    const ism_tr_call *c = (const void *)it->h;
    uint64_t t = ts(r, it->thread, c->t1);
    const char *fn = fn_name(r, c->h.fn);
    for (const char *q = (const char *)it->h + it->h->len; q < (const char *)it->dend;) {
        const ism_tr_hdr *d = (const void *)q;
        q += d->len;
        uint32_t comm;
        if (d->kind == ISM_TR_RECV && (d->flags & ISM_TR_P2P_STATUS) &&
            !(d->flags & ISM_TR_P2P_NB)) {
            const ism_tr_p2p *m = (const void *)d;
            if (m->peer >= 0 && gcomm(r, m->comm, &comm))
                check(OTF2_EvtWriter_MpiRecv(w, NULL, t, (uint32_t)m->peer, comm,
                                             (uint32_t)m->tag, m->bytes),
                      "event");
        } else if (d->kind == ISM_TR_COLL && !(d->flags & (ISM_TR_COLL_NB | ISM_TR_COLL_INIT))) {
            const ism_tr_coll *m = (const void *)d;
            int op = coll_op(fn);
            if (op >= 0 && gcomm(r, m->comm, &comm)) {
                check(OTF2_EvtWriter_MpiCollectiveEnd(
                          w, NULL, t, (OTF2_CollectiveOp)op, comm,
                          m->root >= 0 ? (uint32_t)m->root : OTF2_UNDEFINED_UINT32, m->sent,
                          m->recvd),
                      "event");
                r->stats_colls++;
            }
        } else if (d->kind == ISM_TR_RMA) {
            tr_rma_leave(&r->rma, w, t, r->j, (const void *)d);
        } else if (d->kind == ISM_TR_WIN) {
            const ism_tr_win *m = (const void *)d;
            uint32_t gc = UINT32_MAX;
            if (!(d->flags & ISM_TR_WIN_FREED) && !gcomm(r, m->comm, &gc))
                gc = UINT32_MAX;
            tr_rma_win(&r->rma, w, t, m, gc);
        } else if (d->kind == ISM_TR_DONE) {
            const ism_tr_done *m = (const void *)d;
            if (tr_rma_done(&r->rma, w, t, m->req))
                continue;
            reqent *e = req_get(r, m->req, 0);
            if (!e || !e->active)
                continue; /* an inactive persistent request, or one we never saw start */
            if (e->coll) {
                check(OTF2_EvtWriter_NonBlockingCollectiveComplete(
                          w, NULL, t, (OTF2_CollectiveOp)e->op, e->comm, e->root, e->sent,
                          e->recvd, m->req),
                      "event");
                r->stats_colls++;
            }
            if (e->has_send && e->speer >= 0)
                check(OTF2_EvtWriter_MpiIsendComplete(w, NULL, t, m->req), "event");
            if (e->has_recv && e->rpeer != -3) {
                if (d->flags & ISM_TR_DONE_CANCELLED)
                    check(OTF2_EvtWriter_MpiRequestCancelled(w, NULL, t, m->req | RECV_PART),
                          "event");
                else if (m->source >= 0)
                    check(OTF2_EvtWriter_MpiIrecv(w, NULL, t, (uint32_t)m->source, e->comm,
                                                  (uint32_t)m->tag, m->bytes, m->req | RECV_PART),
                          "event");
            }
            e->active = 0;
            if (!e->persistent)
                umap_del(&r->reqs, m->req);
        } else if (d->kind == ISM_TR_FREE && !(d->flags & 1)) {
            umap_del(&r->reqs, ((const ism_tr_req *)(const void *)d)->req);
        }
    }
    check(OTF2_EvtWriter_Leave(w, NULL, t, region_id(fn, mpi_role(fn), OTF2_PARADIGM_MPI)),
          "leave");
}

static int is_detail(int kind)
{
    return kind == ISM_TR_SEND || kind == ISM_TR_RECV || kind == ISM_TR_COLL ||
           kind == ISM_TR_DONE || kind == ISM_TR_START || kind == ISM_TR_FREE ||
           kind == ISM_TR_RMA || kind == ISM_TR_WIN;
}

static void write_rank(OTF2_Archive *ar, const tr_job *j, tr_proc *p, uint32_t pcontrol)
{
    ism_tf f;
    char err[512];
    if (ism_tf_open(&f, p->path, err, sizeof err))
        die("%s", err);
    item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t prev_t = 0;
    size_t off = ism_tf_first();
    const ism_tr_hdr *h;
    while ((h = ism_tf_next(&f, &off))) {
        if (is_detail(h->kind)) {
            if (n && items[n - 1].kind == ISM_TR_CALL)
                items[n - 1].dend = (const void *)((const char *)h + h->len);
            continue;
        }
        if (h->kind != ISM_TR_CALL && h->kind != ISM_TR_MARK && h->kind != ISM_TR_LOSS)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            items = realloc(items, sizeof *items * cap);
            if (!items)
                die("%s", "out of memory");
        }
        item *it = &items[n];
        memset(it, 0, sizeof *it);
        it->kind = h->kind;
        it->h = h;
        it->dend = (const void *)((const char *)h + h->len);
        it->seq = (uint32_t)n;
        if (h->kind == ISM_TR_CALL) {
            const ism_tr_call *c = (const void *)h;
            it->t0 = c->t0;
            it->t1 = c->t1;
            it->depth = c->depth;
            it->thread = c->thread < p->nthreads ? c->thread : 0;
            prev_t = c->t1;
        } else {
            it->t0 = it->t1 = ((const uint64_t *)(const void *)(h + 1))[0];
            it->prev_t = prev_t;
            it->depth = UINT16_MAX; /* after calls that start at the same time */
        }
        n++;
    }
    qsort(items, n, sizeof *items, cmp_item);
    rankw r = {.j = j, .p = p, .names = f.names, .nnames = f.nnames};
    r.w = calloc((size_t)p->nthreads, sizeof *r.w);
    r.last = calloc((size_t)p->nthreads, sizeof *r.last);
    const item ***stack = calloc((size_t)p->nthreads, sizeof *stack);
    int *sp = calloc((size_t)p->nthreads, sizeof *sp);
    p->nevents = calloc((size_t)p->nthreads, sizeof *p->nevents);
    if (!r.w || !r.last || !stack || !sp || !p->nevents)
        die("%s", "out of memory");
    for (int th = 0; th < p->nthreads; th++) {
        r.w[th] = OTF2_Archive_GetEvtWriter(ar, rank_location(p->id, th));
        stack[th] = malloc(sizeof **stack * 64);
        if (!r.w[th] || !stack[th])
            die("%s", "cannot open an OTF2 event writer");
    }
    for (size_t i = 0; i < n; i++) {
        const item *it = &items[i];
        int th = it->thread;
        while (sp[th] > 0 && (stack[th][sp[th] - 1]->depth >= it->depth ||
                              stack[th][sp[th] - 1]->t1 < it->t0))
            leave_details(&r, stack[th][--sp[th]]);
        if (it->kind == ISM_TR_CALL) {
            if (sp[th] % 64 == 0 && sp[th]) {
                stack[th] = realloc(stack[th], sizeof **stack * (size_t)(sp[th] + 64));
                if (!stack[th])
                    die("%s", "out of memory");
            }
            enter_details(&r, it);
            stack[th][sp[th]++] = it;
        } else if (it->kind == ISM_TR_MARK) {
            const ism_tr_mark *m = (const void *)it->h;
            check(OTF2_EvtWriter_ParameterInt(r.w[th], NULL, ts(&r, th, m->t), pcontrol,
                                              m->level),
                  "event");
        } else { /* LOSS: nothing was recorded from the previous record to this one */
            check(OTF2_EvtWriter_MeasurementOnOff(r.w[th], NULL, ts(&r, th, it->prev_t),
                                                  OTF2_MEASUREMENT_OFF),
                  "event");
            check(OTF2_EvtWriter_MeasurementOnOff(r.w[th], NULL, ts(&r, th, it->t0),
                                                  OTF2_MEASUREMENT_ON),
                  "event");
        }
    }
    for (int th = 0; th < p->nthreads; th++) {
        while (sp[th] > 0)
            leave_details(&r, stack[th][--sp[th]]);
        check(OTF2_EvtWriter_GetNumberOfEvents(r.w[th], &p->nevents[th]), "counting events");
        check(OTF2_Archive_CloseEvtWriter(ar, r.w[th]), "closing an event writer");
        free(stack[th]);
    }
    free(stack);
    free(sp);
    free(r.w);
    free(r.last);
    free(r.rs);
    umap_free(&r.reqs);
    tr_rma_free(&r.rma);
    free(items);
    ism_tf_close(&f);
}

/* ---- writing one gateway ---- */

#define NMETRICS 11
static const struct {
    const char *name, *unit;
} metric_names[NMETRICS] = {
    {"frames queued", "frames"}, {"frames unacknowledged", "frames"},
    {"frames out of order", "frames"}, {"bytes sent", "bytes"}, {"bytes received", "bytes"},
    {"gateway bytes buffered", "bytes"}, {"early bytes outstanding", "bytes"},
    {"smoothed rtt", "us"}, {"congestion window", "bytes"}, {"pacing rate", "bytes/s"},
    {"credits granted", "chunks"},
};

typedef struct {
    uint32_t label;  /* string id of "to B.0" */
    uint32_t first_member;
} metric_class;

static metric_class *mclasses;
static uint32_t nmclasses;
static umap mclass_by_label;

static uint32_t metric_class_of(const char *label)
{
    uint32_t s = str_id(label);
    uint64_t *v = umap_find(&mclass_by_label, s);
    if (v)
        return (uint32_t)*v;
    mclasses = realloc(mclasses, sizeof *mclasses * (nmclasses + 1));
    if (!mclasses)
        die("%s", "out of memory");
    mclasses[nmclasses] = (metric_class){s, nmclasses * NMETRICS};
    umap_put(&mclass_by_label, s, nmclasses);
    return nmclasses++;
}

static int gw_index(const tr_job *j, int site, int gw)
{
    int k = 0;
    for (int i = 0; i < j->nprocs; i++) {
        if (j->procs[i].kind != ISM_TR_PROC_GATEWAY)
            continue;
        if (j->procs[i].id == site * 65536 + gw)
            return k;
        k++;
    }
    return -1;
}

static const char *site_name(const tr_job *j, int s)
{
    return s >= 0 && s < j->nsites ? j->site_names[s] : "?";
}

static void write_gateway(OTF2_Archive *ar, const tr_job *j, tr_proc *p, int k, uint32_t wan)
{
    ism_tf f;
    char err[512], label[96];
    if (ism_tf_open(&f, p->path, err, sizeof err))
        die("%s", err);
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(ar, gw_location(k));
    if (!w)
        die("%s", "cannot open an OTF2 event writer");
    p->nevents = calloc(1, sizeof *p->nevents);
    /* frames written more than once: only the last attempt is the message */
    umap attempts = {0};
    size_t off = ism_tf_first();
    const ism_tr_hdr *h;
    while ((h = ism_tf_next(&f, &off)))
        if (h->kind == ISM_TR_GW_FRAME && h->flags == ISM_TR_GW_RESENT) {
            const ism_tr_gw_frame *fr = (const void *)h;
            uint64_t key = ((uint64_t)fr->link << 48) | (fr->seq & 0xffffffffffffull);
            umap_put(&attempts, key, 0);
        }
    off = ism_tf_first();
    while ((h = ism_tf_next(&f, &off)))
        if (h->kind == ISM_TR_GW_FRAME &&
            (h->flags == ISM_TR_GW_SENT || h->flags == ISM_TR_GW_RESENT)) {
            const ism_tr_gw_frame *fr = (const void *)h;
            uint64_t key = ((uint64_t)fr->link << 48) | (fr->seq & 0xffffffffffffull);
            uint64_t *v = umap_find(&attempts, key);
            if (v)
                (*v)++;
        }
    uint32_t r_send = region_id("WAN frame sent", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_USER);
    uint32_t r_recv = region_id("WAN frame received", OTF2_REGION_ROLE_POINT2POINT,
                                OTF2_PARADIGM_USER);
    uint32_t r_lost = region_id("WAN frame lost to a reconnection (sent again)",
                                OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_USER);
    uint32_t r_dup = region_id("WAN duplicate frame dropped", OTF2_REGION_ROLE_ARTIFICIAL,
                               OTF2_PARADIGM_USER);
    int *down_open = calloc((size_t)(p->nlinks > 0 ? p->nlinks : 1), sizeof *down_open);
    uint32_t *down_region = calloc((size_t)(p->nlinks > 0 ? p->nlinks : 1), sizeof *down_region);
    uint32_t *mclass = calloc((size_t)(p->nlinks > 0 ? p->nlinks : 1), sizeof *mclass);
    for (int l = 0; l < p->nlinks; l++) {
        char name[128];
        snprintf(name, sizeof name, "WAN link to site %s gateway %d down",
                 site_name(j, p->links[l].peer_site), p->links[l].peer_gw);
        down_region[l] = region_id(name, OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_USER);
        snprintf(label, sizeof label, "%s.%d to %s.%d", site_name(j, p->site), p->id % 65536,
                 site_name(j, p->links[l].peer_site), p->links[l].peer_gw);
        mclass[l] = metric_class_of(label);
    }
    uint64_t last = 0;
#define TS(raw) (last = tr_time(j, p, (raw)) > last ? tr_time(j, p, (raw)) : last)
    off = ism_tf_first();
    while ((h = ism_tf_next(&f, &off))) {
        if (h->kind == ISM_TR_GW_FRAME) {
            const ism_tr_gw_frame *fr = (const void *)h;
            if (!fr->seq || fr->link >= p->nlinks)
                continue; /* control frames are not messages */
            int peer = gw_index(j, p->links[fr->link].peer_site, p->links[fr->link].peer_gw);
            uint64_t t = TS(fr->t);
            uint32_t tag = (uint32_t)(fr->seq & 0x7fffffff);
            uint64_t bytes = (uint64_t)fr->len + 48;
            if (h->flags == ISM_TR_GW_SENT || h->flags == ISM_TR_GW_RESENT) {
                uint64_t key = ((uint64_t)fr->link << 48) | (fr->seq & 0xffffffffffffull);
                uint64_t *v = umap_find(&attempts, key);
                int last_attempt = !v || *v <= 1;
                if (v)
                    (*v)--;
                check(OTF2_EvtWriter_Enter(w, NULL, t, last_attempt ? r_send : r_lost), "enter");
                if (last_attempt && peer >= 0)
                    check(OTF2_EvtWriter_MpiSend(w, NULL, t, (uint32_t)peer, wan, tag, bytes),
                          "event");
                check(OTF2_EvtWriter_Leave(w, NULL, t, last_attempt ? r_send : r_lost), "leave");
            } else if (h->flags == ISM_TR_GW_RECEIVED) {
                check(OTF2_EvtWriter_Enter(w, NULL, t, r_recv), "enter");
                if (peer >= 0)
                    check(OTF2_EvtWriter_MpiRecv(w, NULL, t, (uint32_t)peer, wan, tag, bytes),
                          "event");
                check(OTF2_EvtWriter_Leave(w, NULL, t, r_recv), "leave");
            } else if (h->flags == ISM_TR_GW_DUPLICATE) {
                check(OTF2_EvtWriter_Enter(w, NULL, t, r_dup), "enter");
                check(OTF2_EvtWriter_Leave(w, NULL, t, r_dup), "leave");
            }
        } else if (h->kind == ISM_TR_GW_SAMPLE) {
            const ism_tr_gw_sample *s = (const void *)h;
            if (s->link >= p->nlinks)
                continue;
            OTF2_Type types[NMETRICS];
            OTF2_MetricValue v[NMETRICS];
            uint64_t u[NMETRICS] = {s->sendq, s->unacked, s->ooo, s->tx_bytes, s->rx_bytes,
                                    s->held_bytes, s->early_out > 0 ? (uint64_t)s->early_out : 0,
                                    s->srtt_us, s->cwnd, s->pacing_Bps, s->credits_granted};
            for (int m = 0; m < NMETRICS; m++) {
                types[m] = OTF2_TYPE_UINT64;
                v[m].unsigned_int = u[m];
            }
            check(OTF2_EvtWriter_Metric(w, NULL, TS(s->t), mclass[s->link], NMETRICS, types, v),
                  "metric");
        } else if (h->kind == ISM_TR_LOSS) {
            /* nothing was recorded from the previous record to this one */
            check(OTF2_EvtWriter_MeasurementOnOff(w, NULL, last, OTF2_MEASUREMENT_OFF), "event");
            check(OTF2_EvtWriter_MeasurementOnOff(w, NULL, TS(((const ism_tr_loss *)(const void *)h)->t),
                                                  OTF2_MEASUREMENT_ON),
                  "event");
        } else if (h->kind == ISM_TR_GW_LINK) {
            const ism_tr_gw_link *lk = (const void *)h;
            if (lk->link >= p->nlinks)
                continue;
            uint64_t t = TS(lk->t);
            if (h->flags == 0 && !down_open[lk->link]) {
                check(OTF2_EvtWriter_Enter(w, NULL, t, down_region[lk->link]), "enter");
                down_open[lk->link] = 1;
            } else if (h->flags == 2 && down_open[lk->link]) {
                check(OTF2_EvtWriter_Leave(w, NULL, t, down_region[lk->link]), "leave");
                down_open[lk->link] = 0;
            }
        }
    }
    for (int l = 0; l < p->nlinks; l++)
        if (down_open[l])
            check(OTF2_EvtWriter_Leave(w, NULL, last, down_region[l]), "leave");
#undef TS
    check(OTF2_EvtWriter_GetNumberOfEvents(w, &p->nevents[0]), "counting events");
    check(OTF2_Archive_CloseEvtWriter(ar, w), "closing an event writer");
    free(down_open);
    free(down_region);
    free(mclass);
    umap_free(&attempts);
    ism_tf_close(&f);
}

/* ---- definitions ---- */

static OTF2_FlushType pre_flush(void *u, OTF2_FileType ft, OTF2_LocationRef l, void *c, bool f)
{
    (void)u, (void)ft, (void)l, (void)c, (void)f;
    return OTF2_FLUSH;
}

static OTF2_FlushCallbacks flush_cb = {.otf2_pre_flush = pre_flush, .otf2_post_flush = NULL};

/* The global definitions. Called twice: with g NULL only to make every string exist
 * (readers want strings defined before anything that names them), then to write. */
#define W(call, what)                                                                              \
    do {                                                                                           \
        if (g)                                                                                     \
            check((call), what);                                                                   \
    } while (0)

static void defs(OTF2_GlobalDefWriter *g, const tr_job *j, uint32_t pcontrol)
{
    W(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000ull, 0,
                                                    j->t_max > j->t_min ? j->t_max - j->t_min : 0,
                                                    OTF2_UNDEFINED_TIMESTAMP),
          "clock properties");
    /* the system tree: the job, its sites, their hosts */
    char name[256];
    uint32_t s_job = str_id("isthmus job"), s_site = str_id("site"), s_host = str_id("host");
    uint32_t nodes = 1 + (uint32_t)j->nsites;
    uint32_t *node_of = calloc((size_t)j->nprocs, sizeof *node_of);
    char **hosts = calloc((size_t)j->nprocs, sizeof *hosts);
    int *host_site = calloc((size_t)j->nprocs, sizeof *host_site);
    int nhosts = 0;
    for (int i = 0; i < j->nprocs; i++) {
        const tr_proc *p = &j->procs[i];
        int h = -1;
        for (int k = 0; k < nhosts; k++)
            if (host_site[k] == p->site && !strcmp(hosts[k], p->host))
                h = k;
        if (h < 0) {
            h = nhosts++;
            hosts[h] = strdup(p->host);
            host_site[h] = p->site;
        }
        node_of[i] = nodes + (uint32_t)h;
    }
    /* the strings the tree needs, then all strings */
    uint32_t *site_str = calloc((size_t)j->nsites + 1, sizeof *site_str);
    for (int s = 0; s < j->nsites; s++) {
        snprintf(name, sizeof name, "site %s", j->site_names[s]);
        site_str[s] = str_id(name);
    }
    uint32_t *host_str = calloc((size_t)nhosts + 1, sizeof *host_str);
    for (int h = 0; h < nhosts; h++)
        host_str[h] = str_id(hosts[h]);
    uint32_t *proc_str = calloc((size_t)j->nprocs, sizeof *proc_str);
    for (int i = 0; i < j->nprocs; i++) {
        const tr_proc *p = &j->procs[i];
        if (p->kind == ISM_TR_PROC_RANK)
            snprintf(name, sizeof name, "rank %d", p->id);
        else
            snprintf(name, sizeof name, "gateway %s.%d", site_name(j, p->site), p->id % 65536);
        proc_str[i] = str_id(name);
    }
    uint32_t s_world = str_id("MPI_COMM_WORLD"), s_self = str_id("MPI_COMM_SELF");
    /* hidden gateways leave no trace of themselves, not even a name */
    uint32_t s_wan = j->ngw ? str_id("WAN links (gateways)") : 0, s_locs = str_id("");
    uint32_t s_err = str_id("isthmus::clock_error_ns"), s_pc = str_id("MPI_Pcontrol level");
    uint32_t *comm_str = calloc((size_t)j->ncomms, sizeof *comm_str);
    for (int c = 2; c < j->ncomms; c++) {
        if (j->comms[c].inter)
            snprintf(name, sizeof name, "intercomm %d (%d and %d ranks)", c, j->comms[c].na,
                     j->comms[c].nb);
        else
            snprintf(name, sizeof name, "comm %d (%d ranks)", c, j->comms[c].na);
        comm_str[c] = str_id(name);
    }
    for (uint32_t m = 0; m < nmclasses; m++)
        for (int k = 0; k < NMETRICS; k++) {
            snprintf(name, sizeof name, "%s %s", strs[mclasses[m].label], metric_names[k].name);
            str_id(name);
            str_id(metric_names[k].unit);
        }
    uint32_t s_thread = str_id("thread"), s_mpi = str_id("MPI");
    W(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, s_mpi,
                                             OTF2_PARADIGM_CLASS_PROCESS),
          "paradigm");
    W(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_job, s_job, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          "system tree");
    for (int s = 0; s < j->nsites; s++)
        W(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1 + (uint32_t)s, site_str[s], s_site, 0),
              "system tree");
    for (int h = 0; h < nhosts; h++)
        W(OTF2_GlobalDefWriter_WriteSystemTreeNode(
                  g, nodes + (uint32_t)h, host_str[h], s_host,
                  host_site[h] >= 0 && host_site[h] < j->nsites ? 1 + (uint32_t)host_site[h] : 0),
              "system tree");
    /* location groups and locations: ranks first (group id = rank), then gateways */
    int k = 0;
    uint64_t *gw_locs = calloc((size_t)j->ngw + 1, sizeof *gw_locs);
    for (int i = 0; i < j->nprocs; i++) {
        const tr_proc *p = &j->procs[i];
        uint32_t grp = p->kind == ISM_TR_PROC_RANK ? (uint32_t)p->id : (uint32_t)(j->size + k);
        W(OTF2_GlobalDefWriter_WriteLocationGroup(g, grp, proc_str[i],
                                                      OTF2_LOCATION_GROUP_TYPE_PROCESS, node_of[i],
                                                      OTF2_UNDEFINED_LOCATION_GROUP),
              "location group");
        if (p->kind == ISM_TR_PROC_RANK) {
            for (int th = 0; th < p->nthreads; th++) {
                uint64_t loc = rank_location(p->id, th);
                W(OTF2_GlobalDefWriter_WriteLocation(g, loc, th ? s_thread : proc_str[i],
                                                         OTF2_LOCATION_TYPE_CPU_THREAD,
                                                         p->nevents ? p->nevents[th] : 0, grp),
                      "location");
                OTF2_AttributeValue v = {.float64 = p->clk.err};
                W(OTF2_GlobalDefWriter_WriteLocationProperty(g, loc, s_err, OTF2_TYPE_DOUBLE, v),
                      "location property");
            }
        } else {
            uint64_t loc = gw_location(k);
            gw_locs[k] = loc;
            W(OTF2_GlobalDefWriter_WriteLocation(g, loc, proc_str[i],
                                                     OTF2_LOCATION_TYPE_CPU_THREAD,
                                                     p->nevents ? p->nevents[0] : 0, grp),
                  "location");
            OTF2_AttributeValue v = {.float64 = p->clk.aligned ? p->clk.err : -1};
            W(OTF2_GlobalDefWriter_WriteLocationProperty(g, loc, s_err, OTF2_TYPE_DOUBLE, v),
                  "location property");
            k++;
        }
    }
    for (uint32_t r = 0; r < nregions; r++)
        W(OTF2_GlobalDefWriter_WriteRegion(g, r, regions[r].name, regions[r].name, s_locs,
                                               regions[r].role, regions[r].paradigm,
                                               OTF2_REGION_FLAG_NONE, s_locs, 0, 0),
              "region");
    /* communicators: MPI_COMM_WORLD's locations, each communicator's group */
    uint64_t *members = malloc(sizeof *members * (size_t)(j->size + 1));
    for (int r = 0; r < j->size; r++)
        members[r] = rank_location(r, 0);
    uint32_t grp = 0;
    W(OTF2_GlobalDefWriter_WriteGroup(g, grp++, s_locs, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                          (uint32_t)j->size, members),
          "group");
    uint32_t self_grp = grp++;
    W(OTF2_GlobalDefWriter_WriteGroup(g, self_grp, s_locs, OTF2_GROUP_TYPE_COMM_SELF,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 0, NULL),
          "group");
    for (int c = 0; c < j->ncomms; c++) {
        const tr_comm *cm = &j->comms[c];
        if (cm->self) {
            W(OTF2_GlobalDefWriter_WriteComm(g, (uint32_t)c, s_self, self_grp,
                                                 OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
                  "comm");
            continue;
        }
        uint32_t ga = grp++;
        uint64_t *mm = malloc(sizeof *mm * (size_t)(cm->na + cm->nb + 1));
        for (int i = 0; i < cm->na + cm->nb; i++)
            mm[i] = (uint64_t)cm->m[i];
        W(OTF2_GlobalDefWriter_WriteGroup(g, ga, s_locs, OTF2_GROUP_TYPE_COMM_GROUP,
                                              OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                              (uint32_t)cm->na, mm),
              "group");
        if (cm->inter) {
            uint32_t gb = grp++;
            W(OTF2_GlobalDefWriter_WriteGroup(g, gb, s_locs, OTF2_GROUP_TYPE_COMM_GROUP,
                                                  OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                                  (uint32_t)cm->nb, mm + cm->na),
                  "group");
            W(OTF2_GlobalDefWriter_WriteInterComm(g, (uint32_t)c, comm_str[c], ga, gb,
                                                      OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
                  "intercomm");
        } else {
            W(OTF2_GlobalDefWriter_WriteComm(g, (uint32_t)c, cm->world ? s_world : comm_str[c],
                                                 ga, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
                  "comm");
        }
        free(mm);
    }
    tr_rma_defs(g, str_id);
    if (j->ngw) { /* the WAN: gateways talk among themselves, outside MPI's ranks */
        uint32_t gl = grp++, gc = grp++;
        W(OTF2_GlobalDefWriter_WriteGroup(g, gl, s_locs, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                              OTF2_PARADIGM_USER, OTF2_GROUP_FLAG_NONE,
                                              (uint32_t)j->ngw, gw_locs),
              "group");
        uint64_t *idx = malloc(sizeof *idx * (size_t)j->ngw);
        for (int i = 0; i < j->ngw; i++)
            idx[i] = (uint64_t)i;
        W(OTF2_GlobalDefWriter_WriteGroup(g, gc, s_locs, OTF2_GROUP_TYPE_COMM_GROUP,
                                              OTF2_PARADIGM_USER, OTF2_GROUP_FLAG_NONE,
                                              (uint32_t)j->ngw, idx),
              "group");
        W(OTF2_GlobalDefWriter_WriteComm(g, (uint32_t)j->ncomms, s_wan, gc,
                                             OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
              "comm");
        free(idx);
    }
    /* gateway metrics: one class per link direction */
    for (uint32_t m = 0; m < nmclasses; m++) {
        OTF2_MetricMemberRef mem[NMETRICS];
        for (int q = 0; q < NMETRICS; q++) {
            snprintf(name, sizeof name, "%s %s", strs[mclasses[m].label], metric_names[q].name);
            mem[q] = mclasses[m].first_member + (uint32_t)q;
            int acc = q == 3 || q == 4;
            W(OTF2_GlobalDefWriter_WriteMetricMember(
                      g, mem[q], str_id(name), str_id(name), OTF2_METRIC_TYPE_OTHER,
                      acc ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT,
                      OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0, str_id(metric_names[q].unit)),
                  "metric member");
        }
        W(OTF2_GlobalDefWriter_WriteMetricClass(g, m, NMETRICS, mem,
                                                    OTF2_METRIC_SYNCHRONOUS_STRICT,
                                                    OTF2_RECORDER_KIND_ABSTRACT),
              "metric class");
    }
    W(OTF2_GlobalDefWriter_WriteParameter(g, pcontrol, s_pc, OTF2_PARAMETER_TYPE_INT64),
          "parameter");
    for (int h = 0; h < nhosts; h++)
        free(hosts[h]);
    free(hosts);
    free(host_site);
    free(node_of);
    free(site_str);
    free(host_str);
    free(proc_str);
    free(comm_str);
    free(members);
    free(gw_locs);
}
#undef W

static void write_defs(OTF2_Archive *ar, const tr_job *j, uint32_t pcontrol)
{
    defs(NULL, j, pcontrol);
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
    if (!g)
        die("%s", "cannot open the global definitions");
    for (uint32_t s = 0; s < nstrs; s++)
        check(OTF2_GlobalDefWriter_WriteString(g, s, strs[s]), "string");
    defs(g, j, pcontrol);
}

/* --layout: each record kind and its size, for the Python reader's test */
static int print_layout(void)
{
    static const struct {
        int kind;
        size_t size;
    } k[] = {
        {ISM_TR_CALL, sizeof(ism_tr_call)}, {ISM_TR_SEND, sizeof(ism_tr_p2p)},
        {ISM_TR_RECV, sizeof(ism_tr_p2p)}, {ISM_TR_COLL, sizeof(ism_tr_coll)},
        {ISM_TR_DONE, sizeof(ism_tr_done)}, {ISM_TR_START, sizeof(ism_tr_req)},
        {ISM_TR_FREE, sizeof(ism_tr_req)}, {ISM_TR_COMM, sizeof(ism_tr_comm)},
        {ISM_TR_COMMFREE, sizeof(ism_tr_commfree)}, {ISM_TR_MARK, sizeof(ism_tr_mark)},
        {ISM_TR_SYNC, sizeof(ism_tr_sync)}, {ISM_TR_LOSS, sizeof(ism_tr_loss)},
        {ISM_TR_END, sizeof(ism_tr_end)}, {ISM_TR_EVENT, sizeof(ism_tr_event)},
        {ISM_TR_RMA, sizeof(ism_tr_rma)}, {ISM_TR_WIN, sizeof(ism_tr_win)},
        {ISM_TR_GW_FRAME, sizeof(ism_tr_gw_frame)}, {ISM_TR_GW_ACK, sizeof(ism_tr_gw_ack)},
        {ISM_TR_GW_SAMPLE, sizeof(ism_tr_gw_sample)}, {ISM_TR_GW_LINK, sizeof(ism_tr_gw_link)},
        {ISM_TR_GW_APP, sizeof(ism_tr_gw_app)},
    };
    printf("header %zu file %zu\n", sizeof(ism_tr_hdr), sizeof(ism_tr_file_hdr));
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        printf("%d %zu\n", k[i].kind, k[i].size);
    return 0;
}

/* Every process that dropped records or did not close its file, on stderr: the archive
 * shows the gaps (MEASUREMENT_OFF), this says they exist. */
static void warn_losses(const tr_job *j)
{
    for (int i = 0; i < j->nprocs; i++) {
        const tr_proc *p = &j->procs[i];
        char who[96];
        if (p->kind == ISM_TR_PROC_RANK)
            snprintf(who, sizeof who, "rank %d", p->id);
        else
            snprintf(who, sizeof who, "gateway %s.%d", site_name(j, p->site), p->id % 65536);
        if (p->lost_records)
            fprintf(stderr, "isthmus-trace-otf2: warning: %s: %llu records were dropped (its trace "
                            "buffer was full); the archive marks each gap as measurement off\n",
                    who, (unsigned long long)p->lost_records);
        if (!p->ended)
            fprintf(stderr, "isthmus-trace-otf2: warning: %s: its file has no END record (the "
                            "process ended without closing its trace): what it still held in "
                            "memory is missing\n", who);
    }
}

int main(int argc, char **argv)
{
    int skip_gw = 0, a = 1;
    if (argc == 2 && !strcmp(argv[1], "--layout"))
        return print_layout();
    if (a < argc && !strcmp(argv[a], "--no-gateways")) {
        skip_gw = 1;
        a++;
    }
    if (argc - a < 1 || argc - a > 2 || argv[a][0] == '-') {
        fprintf(stderr, "usage: isthmus-trace-otf2 [--no-gateways] DIR [OUT]\n"
                        "  writes the trace in DIR (isthmus run --trace DIR) as the OTF2 "
                        "archive OUT/traces.otf2 (OUT: DIR/otf2)\n");
        return 2;
    }
    const char *dir = argv[a];
    char out[4200];
    snprintf(out, sizeof out, "%s", a + 1 < argc ? argv[a + 1] : "");
    if (!out[0])
        snprintf(out, sizeof out, "%s/otf2", dir);
    tr_job j;
    char err[1024];
    if (tr_job_load(&j, dir, skip_gw, err, sizeof err))
        die("%s", err);
    struct stat st;
    if (!stat(out, &st)) {
        char anchor[4300];
        snprintf(anchor, sizeof anchor, "%s/traces.otf2", out);
        if (stat(anchor, &st))
            die("%s exists and is not an OTF2 archive this tool wrote; choose another OUT", out);
        /* replace an earlier export: OTF2 will not write into an existing archive */
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", out);
        if (strchr(out, '\'') || system(cmd))
            die("cannot remove the earlier export %s", out);
    }
    OTF2_Archive *ar = OTF2_Archive_Open(out, "traces", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                         OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!ar)
        die("cannot create the OTF2 archive %s", out);
    check(OTF2_Archive_SetFlushCallbacks(ar, &flush_cb, NULL), "flush callbacks");
    check(OTF2_Archive_SetSerialCollectiveCallbacks(ar), "collective callbacks");
    check(OTF2_Archive_SetCreator(ar, "isthmus-trace-otf2"), "creator");
    check(OTF2_Archive_SetDescription(ar, "a cross-site MPI job run by isthmus"), "description");
    check(OTF2_Archive_OpenEvtFiles(ar), "opening event files");
    uint32_t pcontrol = 0;
    int k = 0;
    for (int i = 0; i < j.nprocs; i++) {
        if (j.procs[i].kind == ISM_TR_PROC_RANK)
            write_rank(ar, &j, &j.procs[i], pcontrol);
        else
            write_gateway(ar, &j, &j.procs[i], k++, (uint32_t)j.ncomms);
    }
    check(OTF2_Archive_CloseEvtFiles(ar), "closing event files");
    check(OTF2_Archive_OpenDefFiles(ar), "opening definition files");
    for (int i = 0, g = 0; i < j.nprocs; i++) {
        const tr_proc *p = &j.procs[i];
        int nth = p->kind == ISM_TR_PROC_RANK ? p->nthreads : 1;
        for (int th = 0; th < nth; th++) {
            uint64_t loc = p->kind == ISM_TR_PROC_RANK ? rank_location(p->id, th) : gw_location(g);
            OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, loc);
            if (dw)
                OTF2_Archive_CloseDefWriter(ar, dw);
        }
        if (p->kind != ISM_TR_PROC_RANK)
            g++;
    }
    check(OTF2_Archive_CloseDefFiles(ar), "closing definition files");
    write_defs(ar, &j, pcontrol);
    check(OTF2_Archive_Close(ar), "closing the archive");
    if (!j.clocks_found)
        fprintf(stderr, "isthmus-trace-otf2: warning: %s/clocks.json is missing (the job did not "
                        "reach MPI_Finalize): the sites' clocks are not aligned\n", dir);
    if (j.truncated)
        fprintf(stderr, "isthmus-trace-otf2: warning: %d trace file%s end%s in a cut-off "
                        "record (a process died while writing); the records before it are "
                        "exported\n", j.truncated, j.truncated > 1 ? "s" : "",
                j.truncated > 1 ? "" : "s");
    warn_losses(&j);
    printf("%s/traces.otf2: %d ranks, %d gateways, %d communicators, %.6f s\n", out,
           j.nranks_files, j.ngw, j.ncomms, (double)(j.t_max - j.t_min) / 1e9);
    tr_job_free(&j);
    for (uint32_t s = 0; s < nstrs; s++)
        free(strs[s]);
    free(strs);
    free(regions);
    free(mclasses);
    umap_free(&str_by_hash);
    umap_free(&region_by_str);
    umap_free(&mclass_by_label);
    return 0;
}
