/* otf2_rma.c: a rank's one-sided calls as OTF2's RMA events, for isthmus-trace-otf2.
 *
 * Windows are unified as communicators are: the k-th window a rank created over a
 * (global) communicator is the same window on every member, as the tracer numbers them
 * in creation order (native/src/trace/wins.c). Each becomes an RmaWin definition over its
 * communicator, created and destroyed by RmaWinCreate/RmaWinDestroy.
 *
 * A put, get or atomic (accumulate, get_accumulate, fetch_and_op, compare_and_swap) is an
 * RmaPut, RmaGet or RmaAtomic at the end of its call, with a matching id; its completion
 * (RmaOpCompleteNonBlocking) is written where MPI completes it: MPI_Win_unlock or
 * MPI_Win_flush to its target, the _all forms, flush_local, a fence, MPI_Win_complete, or
 * the wait of an R form's request. MPI_Win_lock and MPI_Win_unlock are RmaAcquireLock and
 * RmaReleaseLock; a fence is an RmaCollectiveBegin/End. Targets, which the trace holds as
 * global ranks, are given as ranks in the window's communicator, as OTF2 asks.
 */
#include <stdio.h>
#include <string.h>

#include "otf2_rma.h"

static uint32_t *win_comm; /* global window -> its global communicator */
static uint32_t nwins;
static umap win_by_key;    /* (communicator << 32) | k -> global window */

static void oom(void)
{
    fprintf(stderr, "isthmus-trace-otf2: out of memory\n");
    exit(1);
}

static void ok(OTF2_ErrorCode rc)
{
    if (rc != OTF2_SUCCESS) {
        fprintf(stderr, "isthmus-trace-otf2: RMA event: %s\n", OTF2_Error_GetDescription(rc));
        exit(1);
    }
}

static uint32_t global_win(uint32_t gcomm, uint64_t k)
{
    uint64_t key = ((uint64_t)gcomm << 32) | k;
    uint64_t *v = umap_find(&win_by_key, key);
    if (v)
        return (uint32_t)*v;
    uint32_t *n = realloc(win_comm, sizeof *n * (nwins + 1));
    if (!n)
        oom();
    win_comm = n;
    win_comm[nwins] = gcomm;
    umap_put(&win_by_key, key, nwins);
    return nwins++;
}

/* The window of a local id, or UINT32_MAX for one never seen created. */
static uint32_t win_of(const tr_rma *s, uint32_t local)
{
    uint64_t *v = umap_find(&s->wins, local);
    return v ? (uint32_t)(*v - 1) : UINT32_MAX;
}

/* A global rank's rank in the window's communicator (OTF2_UNDEFINED_UINT32 if none). */
static uint32_t remote_of(const tr_job *j, uint32_t win, int32_t target)
{
    if (target < 0 || win >= nwins || win_comm[win] >= (uint32_t)j->ncomms)
        return OTF2_UNDEFINED_UINT32;
    const tr_comm *c = &j->comms[win_comm[win]];
    if (c->world)
        return (uint32_t)target;
    for (int i = 0; i < c->na; i++)
        if (c->m[i] == target)
            return (uint32_t)i;
    return OTF2_UNDEFINED_UINT32;
}

void tr_rma_win(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, const ism_tr_win *d, uint32_t gcomm)
{
    if (d->h.flags & ISM_TR_WIN_FREED) {
        uint32_t g = win_of(s, d->win);
        if (g != UINT32_MAX)
            ok(OTF2_EvtWriter_RmaWinDestroy(w, NULL, t, g));
        umap_del(&s->wins, d->win);
        return;
    }
    if (gcomm == UINT32_MAX)
        return;
    uint64_t *k = umap_find(&s->per_comm, gcomm);
    uint64_t n = k ? *k : 0;
    umap_put(&s->per_comm, gcomm, n + 1);
    uint32_t g = global_win(gcomm, n);
    umap_put(&s->wins, d->win, (uint64_t)g + 1);
    ok(OTF2_EvtWriter_RmaWinCreate(w, NULL, t, g));
}

void tr_rma_enter(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, const ism_tr_rma *d)
{
    if (d->op == ISM_TR_RMA_FENCE && win_of(s, d->win) != UINT32_MAX)
        ok(OTF2_EvtWriter_RmaCollectiveBegin(w, NULL, t));
}

/* Completes the open operations of win (to target, or to every target when it is -1). */
static void complete(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, uint32_t win, int32_t target)
{
    size_t k = 0;
    for (size_t i = 0; i < s->nopen; i++) {
        tr_rma_op *o = &s->open[i];
        if (o->win == win && (target < 0 || o->target == target))
            ok(OTF2_EvtWriter_RmaOpCompleteNonBlocking(w, NULL, t, win, o->id));
        else
            s->open[k++] = *o;
    }
    s->nopen = k;
}

static void operation(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, uint32_t win, uint32_t remote,
                      const ism_tr_rma *d)
{
    uint64_t id = s->next_id++;
    switch (d->op) {
    case ISM_TR_RMA_PUT:
        ok(OTF2_EvtWriter_RmaPut(w, NULL, t, win, remote, d->out, id));
        break;
    case ISM_TR_RMA_GET:
        ok(OTF2_EvtWriter_RmaGet(w, NULL, t, win, remote, d->back, id));
        break;
    default:
        ok(OTF2_EvtWriter_RmaAtomic(w, NULL, t, win, remote,
                                    d->op == ISM_TR_RMA_ACC    ? OTF2_RMA_ATOMIC_TYPE_ACCUMULATE
                                    : d->op == ISM_TR_RMA_CAS  ? OTF2_RMA_ATOMIC_TYPE_COMPARE_AND_SWAP
                                    : d->op == ISM_TR_RMA_GACC ? OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ACCUMULATE
                                                               : OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ADD,
                                    d->out, d->back, id));
    }
    if (d->h.flags & ISM_TR_RMA_REQ) {
        umap_put(&s->reqs, d->req, ((uint64_t)win << 40) | id);
        return;
    }
    if (s->nopen == s->capopen) {
        s->capopen = s->capopen ? 2 * s->capopen : 64;
        tr_rma_op *n = realloc(s->open, sizeof *n * s->capopen);
        if (!n)
            oom();
        s->open = n;
    }
    s->open[s->nopen++] = (tr_rma_op){win, d->target, id};
}

void tr_rma_leave(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, const tr_job *j,
                  const ism_tr_rma *d)
{
    uint32_t win = win_of(s, d->win);
    if (win == UINT32_MAX)
        return;
    uint32_t remote = remote_of(j, win, d->target);
    if (d->op < ISM_TR_RMA_LOCK) {
        if (d->target >= 0 && remote != OTF2_UNDEFINED_UINT32)
            operation(s, w, t, win, remote, d);
        return;
    }
    switch (d->op) {
    case ISM_TR_RMA_LOCK:
        if (remote != OTF2_UNDEFINED_UINT32)
            ok(OTF2_EvtWriter_RmaAcquireLock(
                w, NULL, t, win, remote, 0,
                d->h.flags & ISM_TR_RMA_EXCL ? OTF2_LOCK_EXCLUSIVE : OTF2_LOCK_SHARED));
        break;
    case ISM_TR_RMA_UNLOCK:
        complete(s, w, t, win, d->target);
        if (remote != OTF2_UNDEFINED_UINT32)
            ok(OTF2_EvtWriter_RmaReleaseLock(w, NULL, t, win, remote, 0));
        break;
    case ISM_TR_RMA_FLUSH:
    case ISM_TR_RMA_FLUSH_LOCAL:
        complete(s, w, t, win, d->target);
        break;
    case ISM_TR_RMA_UNLOCK_ALL:
    case ISM_TR_RMA_FLUSH_ALL:
    case ISM_TR_RMA_FLUSH_LOCAL_ALL:
    case ISM_TR_RMA_COMPLETE:
        complete(s, w, t, win, -1);
        break;
    case ISM_TR_RMA_FENCE:
        complete(s, w, t, win, -1);
        ok(OTF2_EvtWriter_RmaCollectiveEnd(w, NULL, t, OTF2_COLLECTIVE_OP_BARRIER,
                                           OTF2_RMA_SYNC_LEVEL_PROCESS |
                                               OTF2_RMA_SYNC_LEVEL_MEMORY,
                                           win, OTF2_UNDEFINED_UINT32, 0, 0));
        break;
    default: /* lock_all, post, start, wait, test, sync: no operation completes */
        break;
    }
}

int tr_rma_done(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, uint64_t req)
{
    uint64_t *v = umap_find(&s->reqs, req);
    if (!v)
        return 0;
    ok(OTF2_EvtWriter_RmaOpCompleteNonBlocking(w, NULL, t, (uint32_t)(*v >> 40),
                                               *v & ((1ull << 40) - 1)));
    umap_del(&s->reqs, req);
    return 1;
}

void tr_rma_free(tr_rma *s)
{
    umap_free(&s->wins);
    umap_free(&s->per_comm);
    umap_free(&s->reqs);
    free(s->open);
    memset(s, 0, sizeof *s);
}

void tr_rma_defs(OTF2_GlobalDefWriter *g, uint32_t (*str_id)(const char *))
{
    char name[64];
    for (uint32_t i = 0; i < nwins; i++) {
        snprintf(name, sizeof name, "MPI window %u", i);
        uint32_t s = str_id(name);
        if (g)
            ok(OTF2_GlobalDefWriter_WriteRmaWin(g, i, s, win_comm[i],
                                                OTF2_RMA_WIN_FLAG_CREATE_DESTROY_EVENTS));
    }
}
