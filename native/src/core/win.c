/* win.c: MPI windows across sites: creation, fence, locks, flush (see win.h).
 *
 * Every member holds the vendor windows (data and lock words) in MPI_Win_lock_all from
 * creation to free, so that one kind of vendor epoch serves every synchronisation the
 * program chooses, and the process applying a remote origin's accumulate can use the
 * vendor's own atomic accumulate on itself (atomic with the accumulates of this site's
 * origins). Fence: flush the vendor window, send a FENCE marker to every member at
 * another site (frames of one pair of ranks arrive in order, so a marker means that
 * sender's operations are applied), wait for one from each, then a site-local barrier.
 * One cross-site one-way exchange per fence. Frames carry their sender's count of
 * fences; a frame from an epoch this process has not reached waits in w->def_*.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "win.h"

static ism_win *wins;
static char why[512];
#define LOCK_EXCL ((int64_t)1 << 40)

const char *ism_win_why(void) { return why; }
void ism_win_why_reset(void) { why[0] = 0; }

int ism_rma_fail(int code, const char *fmt, ...)
{
    va_list ap; /* the ABI layer's message adds this rank's site and rank */
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return code;
}

int ism_win_any(void) { return wins != NULL; }

ism_win *ism_win_next(ism_win *w) { return w ? w->next : wins; }

ism_win *ism_win_by_ctx(uint32_t ctx)
{
    for (ism_win *w = wins; w; w = w->next)
        if (w->c->ctx == ctx)
            return w;
    return NULL;
}

static ism_vh vdt_int64(void) { return ism.be->dt[ISM_KIND_INT64]; }
static ism_vh vop(int abi) { return ism.be->op[abi - ISM_OP_BASE]; }
enum { OP_SUM = 0x21 };

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ism_rma_wait(ism_win *w, const uint64_t *count, uint64_t want, const char *what, int target)
{
    unsigned spins = 0;
    int64_t limit = (int64_t)(ism_core_knob(ISM_K_RMA_TIMEOUT, 300) * 1000.0);
    int64_t t0 = now_ms();
    for (;;) {
        if (count ? *count >= want : w->gets == 0)
            return 0;
        if (ism_progress()) {
            spins = 0;
            continue;
        }
        ism_idle(&spins);
        if ((spins & 1023) == 0 && now_ms() - t0 > limit) {
            if (target >= 0)
                return ism_rma_fail(ISM_ERR_OTHER,
                                    "%s waited %lld s for rank %d at site %s (ISTHMUS_RMA_TIMEOUT); "
                                    "is that rank still running and calling MPI?",
                                    what, (long long)(limit / 1000), target,
                                    ism_site_name(ism.site_of_g[w->c->g_of[target]]));
            return ism_rma_fail(ISM_ERR_OTHER,
                                "%s waited %lld s for ranks at other sites (ISTHMUS_RMA_TIMEOUT)",
                                what, (long long)(limit / 1000));
        }
    }
}

/* Where an MPI_Win_allocate window of this many bytes keeps its member's lock word: after
 * them, aligned to 8. */
static int64_t lock_word_at(int64_t size) { return (size + 7) & ~(int64_t)7; }

/* MPI_Win_allocate's memory in the vendor's shared memory: when every member at this site
 * is on this node as the vendor sees it (asked, never assumed: the answer is the same at
 * every member, so all take the same road), the vendor's MPI_Win_allocate_shared over them
 * allocates it and is the vendor window. The vendor's one-sided calls on it are then loads
 * and stores (Open MPI's osc/sm), where on memory isthmus allocated and handed to
 * MPI_Win_create, Open MPI 4.1's osc/rdma made each put a process_vm_writev system call.
 * Puts and gets there are isthmus's own memcpy (rma_direct.c), so MPICH, slower on its
 * shared windows than on MPI_Win_create's, takes the road too (its accumulates stay the
 * vendor's). Returns 0 with *base NULL when the road is not open (one member, several
 * nodes, ISTHMUS_RMA_SHM=0). */
static int allocate_shared(ism_win *w, int64_t vsize, void **base)
{
    ism_comm *c = w->c;
    int n = 0;
    *base = NULL;
    if (c->lsize < 2 || !ism_core_knob(ISM_K_RMA_SHM, 1))
        return 0;
    int rc = ism.be->comm_node_size(c->vcomm, &n);
    if (rc || n != c->lsize)
        return rc;
    if (!(w->vpad = calloc((size_t)c->lsize, sizeof *w->vpad)))
        return ISM_ERR_NO_MEM;
    /* room to start the window 16-aligned, as malloc's memory was (Open MPI's osc/sm
     * starts each member's part 8 bytes past it, and -O2 code keeps long doubles with
     * aligned stores: rma_pairtype crashed); a whole number of 64 bytes, as MPICH 4.0.2's
     * MPI_Win_allocate on one node misplaced puts in windows whose size is not a multiple
     * of 16 (tests/mpi/README.md) */
    rc = ism.be->win_allocate_shared((vsize + 16 + 63) & ~(int64_t)63, c->vcomm, base, &w->vwin);
    /* every member's start, from its address here: a segment is mapped at page boundaries,
     * so an address's alignment is the same in every process */
    for (int l = 0; !rc && l < c->lsize; l++) {
        int64_t sz = 0;
        void *at = NULL;
        rc = ism.be->win_shared_query(w->vwin, l, &sz, &at);
        w->vpad[l] = (int64_t)(-(uintptr_t)at & 15);
    }
    if (!rc)
        rc = ism_rma_direct_open(w);
    if (rc) {
        if (w->vwin)
            ism.be->win_free(&w->vwin);
        free(w->vpad);
        w->vpad = NULL;
        *base = NULL;
        return rc;
    }
    *base = (char *)*base + w->vpad[c->lrank];
    memset(*base, 0, (size_t)vsize);
    w->shm = 1;
    ism.stat_rma_shm_wins++;
    return 0;
}

int ism_win_create(void *base, int64_t size, int disp_unit, ism_comm *comm, int flavor,
                   ism_win **out)
{
    *out = NULL;
    if (size < 0)
        return ism_rma_fail(ISM_ERR_SIZE, "window size %lld is negative", (long long)size);
    if (disp_unit <= 0)
        return ism_rma_fail(ISM_ERR_DISP, "displacement unit %d must be positive", disp_unit);
    ism_win *w = calloc(1, sizeof *w);
    if (!w)
        return ISM_ERR_NO_MEM;
    int rc = ism_comm_dup(comm, &w->c);
    if (rc) {
        free(w);
        return rc;
    }
    w->magic = ISM_WIN_MAGIC;
    w->size = size;
    w->disp_unit = disp_unit;
    w->flavor = flavor;
    w->errh = &ism_errh_fatal;
    /* MPI_Win_allocate's memory holds my lock word after the window's bytes, so the
     * vendor needs one window, not two: each costs MPICH a context id (2046 in all), and
     * with two per window beside the communicator's duplicate a program could hold only
     * 681 windows at a time (MPICH's window_allocation test makes 1000) */
    int64_t vsize = size;
    if (flavor == ISM_WIN_FLAVOR_ALLOCATE) {
        vsize = lock_word_at(size) + (int64_t)sizeof *w->lockword;
        rc = allocate_shared(w, vsize, &base);
        if (!rc && !base)
            base = w->owned = calloc(1, (size_t)vsize);
        if (rc || !base) {
            ism_comm_free(w->c);
            free(w);
            return ism_rma_fail(rc ? rc : ISM_ERR_NO_MEM, "cannot allocate a window of %lld bytes",
                                (long long)size);
        }
        w->lockword = (int64_t *)((char *)base + lock_word_at(size));
    }
    if (flavor != ISM_WIN_FLAVOR_SHARED)
        w->base = base;
    ism_comm *c = w->c;
    w->sizes = calloc((size_t)c->size, sizeof *w->sizes);
    w->units = calloc((size_t)c->size, sizeof *w->units);
    w->held = calloc((size_t)c->size, sizeof *w->held);
    if (!w->sizes || !w->units || !w->held)
        rc = ISM_ERR_NO_MEM;
    if (!rc && flavor == ISM_WIN_FLAVOR_ALLOCATE && c->lsize > 1) {
        /* mine now (a lock request may be served during the exchange below), the others'
         * from their sizes after it */
        if (!(w->lock_disps = calloc((size_t)c->lsize, sizeof *w->lock_disps)))
            rc = ISM_ERR_NO_MEM;
        else
            w->lock_disps[c->lrank] = ism_win_voff(w, c->lrank, lock_word_at(size));
    }
    if (!w->lockword && !(w->lockword = w->own_lockword = calloc(1, sizeof *w->lockword)))
        rc = ISM_ERR_NO_MEM;
    /* the vendor's windows over this site's members: collective over them only. Shared
     * memory is the vendor's (one node of one site only, as MPI allows). */
    if (!rc && flavor == ISM_WIN_FLAVOR_SHARED && !c->all_local)
        rc = ism_rma_fail(ISM_ERR_RMA_SHARED, "MPI_Win_allocate_shared over members at %d "
                                              "sites: memory is shared within one node only",
                          c->nleaders);
    else if (!rc && flavor == ISM_WIN_FLAVOR_SHARED) {
        rc = ism.be->win_allocate_shared(size, c->vcomm, &w->base, &w->vwin);
        if (!rc && ism_core_knob(ISM_K_RMA_SHM, 1))
            rc = ism_rma_direct_open(w);
    }
    else if (!rc && flavor == ISM_WIN_FLAVOR_DYNAMIC && c->lsize > 1)
        rc = ism.be->win_create_dynamic(c->vcomm, &w->vwin);
    else if (!rc && c->lsize > 1 && !w->shm)
        rc = ism.be->win_create(base, vsize, 1, c->vcomm, &w->vwin);
    if (!rc && c->lsize > 1 && flavor == ISM_WIN_FLAVOR_ALLOCATE)
        w->vlock = w->vwin;
    else if (!rc && c->lsize > 1)
        rc = ism.be->win_create(w->lockword, sizeof *w->lockword, 1, c->vcomm, &w->vlock);
    if (!rc && w->vwin)
        rc = ism.be->win_sync(ISM_VWIN_LOCK_ALL, 0, w->vwin);
    if (!rc && w->vlock && w->vlock != w->vwin)
        rc = ism.be->win_sync(ISM_VWIN_LOCK_ALL, 0, w->vlock);
    for (int r = 0; r < c->size; r++)
        w->nremote += c->l_of[r] < 0;
    if (!rc) {
        /* registered before the exchange: once any member has its result, every member
         * can take this window's frames */
        w->next = wins;
        wins = w;
        int64_t mine[2] = {size, disp_unit}, *all = malloc(sizeof mine * (size_t)c->size);
        rc = all ? ism_allgather(mine, all, 2 * (int)sizeof(int64_t), ISM_DT_BYTE, c)
                 : ISM_ERR_NO_MEM;
        for (int r = 0; !rc && r < c->size; r++) {
            w->sizes[r] = all[2 * r];
            w->units[r] = (int)all[2 * r + 1];
            if (w->lock_disps && c->l_of[r] >= 0)
                w->lock_disps[c->l_of[r]] = ism_win_voff(w, c->l_of[r], lock_word_at(w->sizes[r]));
        }
        free(all);
    }
    if (rc)
        return ism_rma_fail(rc, "cannot create a window over %d ranks (%d at this site)",
                            c->size, c->lsize);
    *out = w;
    return 0;
}

int ism_win_free(ism_win *w)
{
    /* every member has finished its epochs: after the barrier no frame for w is on its way
     * (puts still gathered are an epoch left open, but they are sent all the same) */
    int rc = ism_rma_batch_flush_win(w);
    if (!rc)
        rc = ism_barrier(w->c);
    if (rc)
        return rc;
    /* after the barrier no frame for w is coming: the helper may stop (the last window) */
    ism_rma_progress_leave(w);
    if (w->def_head || w->lq_head)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_free with an epoch still open "
                                              "(operations or lock requests pending)");
    int rc2 = 0;
    if (w->vlock == w->vwin) /* MPI_Win_allocate's: one window for both */
        w->vlock = 0;
    if (w->vwin) {
        ism.be->win_sync(ISM_VWIN_UNLOCK_ALL, 0, w->vwin);
        rc = ism.be->win_free(&w->vwin);
    }
    if (w->vlock) { /* none for one member (a shared window has a vwin all the same) */
        ism.be->win_sync(ISM_VWIN_UNLOCK_ALL, 0, w->vlock);
        rc2 = ism.be->win_free(&w->vlock);
    }
    for (ism_win **p = &wins; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    ism_rma_batch_free(w);
    ism_rma_direct_close(w);
    ism_comm_free(w->c);
    free(w->own_lockword);
    free(w->lock_disps);
    free(w->vpad);
    free(w->sizes);
    free(w->units);
    free(w->held);
    free(w->post_to);
    free(w->start_to);
    free(w->owned);
    free(w->regions);
    w->magic = 0;
    free(w);
    return rc ? rc : rc2;
}

/* Frames of an epoch this process has not reached yet wait here (win.h). */
struct ism_rma_def {
    ism_frame_hdr h;
    struct ism_rma_def *next;
    char payload[];
};

void ism_rma_frame(const ism_frame_hdr *h, const void *payload)
{
    ism_win *w = ism_win_by_ctx(h->ctx);
    if (!w)
        ism_die("site %s rank %d: one-sided operation from rank %d for a window this rank does "
                "not have (context %u; freed already?)",
                ism_site_name(ism.lay.site), ism.grank, h->src, h->ctx);
    if (ISM_RMA_B_EPOCH(h->b) > w->fences) {
        ism_rma_def *d = malloc(sizeof *d + h->len);
        if (!d)
            ism_die("site %s rank %d: out of memory holding an early one-sided operation",
                    ism_site_name(ism.lay.site), ism.grank);
        d->h = *h;
        d->next = NULL;
        memcpy(d->payload, payload, h->len);
        if (w->def_tail)
            w->def_tail->next = d;
        else
            w->def_head = d;
        w->def_tail = d;
        return;
    }
    ism_rma_apply(w, h, payload);
}

int ism_win_fence(ism_win *w, int assert_)
{
    (void)assert_; /* the asserts only allow less work; the full fence is always right */
    ism_comm *c = w->c;
    int rc = ism_win_vflush(w, -1);
    for (int r = 0; !rc && r < c->size; r++)
        if (c->l_of[r] < 0)
            rc = ism_rma_send(w, r, ISM_RMA_FENCE, 0, ISM_RMA_B(0, 0, w->fences), NULL, 0);
    if (!rc)
        rc = ism_rma_wait(w, &w->marks, (uint64_t)w->nremote, "MPI_Win_fence", -1);
    if (!rc)
        rc = ism_rma_wait(w, NULL, 0, "MPI_Win_fence (replies to gets)", -1);
    if (!rc && c->lsize > 1) {
        ism_vh req = 0;
        rc = ism_vwait(ism.be->ibarrier(c->vcomm, &req), &req);
    }
    if (!rc && w->vwin)
        rc = ism.be->win_sync(ISM_VWIN_SYNC, 0, w->vwin);
    w->fences++;
    w->marks = 0;
    /* the frames that waited for this epoch, in arrival order */
    ism_rma_def *d = w->def_head, *keep = NULL, *tail = NULL;
    w->def_head = w->def_tail = NULL;
    while (d) {
        ism_rma_def *next = d->next;
        if (ISM_RMA_B_EPOCH(d->h.b) <= w->fences) {
            ism_rma_apply(w, &d->h, d->payload);
            free(d);
        } else {
            d->next = NULL;
            if (tail)
                tail->next = d;
            else
                keep = d;
            tail = d;
        }
        d = next;
    }
    if (keep) {
        tail->next = w->def_head;
        w->def_head = keep;
        if (!w->def_tail)
            w->def_tail = tail;
    }
    return rc;
}

/* Where vendor rank l's lock word is in vlock. */
static int64_t lock_disp(const ism_win *w, int l) { return w->lock_disps ? w->lock_disps[l] : 0; }

/* One attempt at a member's lock word through the vendor's fetch-and-add: shared adds one
 * reader, exclusive adds the writer bit, and either takes its addition back if the word
 * shows a conflicting holder. (No compare-and-swap: Open MPI 4.1's on one's own window
 * crashes, backend_vendor.c.) */
static int lock_attempt(ism_win *w, int l, int type, int *taken)
{
    int64_t old = 0, add = type == ISM_LOCK_SHARED ? 1 : LOCK_EXCL, back = -add;
    int rc;
    *taken = 0;
    if (!w->vlock) { /* my own word, which only this process touches */
        int64_t *word = w->lockword;
        *taken = type == ISM_LOCK_SHARED ? *word < LOCK_EXCL : *word == 0;
        if (*taken)
            *word += add;
        return 0;
    }
    rc = ism.be->get_accumulate(&add, 1, vdt_int64(), &old, 1, vdt_int64(), l, lock_disp(w, l), 1,
                                vdt_int64(), vop(OP_SUM), w->vlock);
    if (!rc)
        rc = ism.be->win_sync(ISM_VWIN_FLUSH, l, w->vlock);
    if (rc)
        return rc;
    if (type == ISM_LOCK_SHARED ? old < LOCK_EXCL : old == 0) {
        *taken = 1;
        return 0;
    }
    rc = ism.be->accumulate(&back, 1, vdt_int64(), l, lock_disp(w, l), 1, vdt_int64(),
                            vop(OP_SUM), w->vlock);
    return rc ? rc : ism.be->win_sync(ISM_VWIN_FLUSH, l, w->vlock);
}

static int lock_try(ism_win *w, int type)
{
    int taken = 0;
    if (lock_attempt(w, w->c->lrank, type, &taken))
        ism_die("site %s rank %d: the vendor failed an atomic on its own lock word",
                ism_site_name(ism.lay.site), ism.grank);
    return taken;
}

/* Remote lock requests, granted in arrival order: a later one never passes a waiting one. */
struct ism_rma_lockq {
    int src_g, type;
    struct ism_rma_lockq *next;
};

void ism_rma_lock_request(ism_win *w, const ism_frame_hdr *h)
{
    int type = (int)h->a;
    if (type != ISM_LOCK_SHARED && type != ISM_LOCK_EXCLUSIVE)
        ism_die("site %s rank %d: lock request of unknown type %d from rank %d",
                ism_site_name(ism.lay.site), ism.grank, type, h->src);
    if (!w->lq_head && lock_try(w, type)) {
        ism_rma_grant(w, h->src);
        return;
    }
    ism_rma_lockq *q = malloc(sizeof *q);
    if (!q)
        ism_die("site %s rank %d: out of memory queueing a lock request",
                ism_site_name(ism.lay.site), ism.grank);
    *q = (ism_rma_lockq){h->src, type, NULL};
    if (w->lq_tail)
        w->lq_tail->next = q;
    else
        w->lq_head = q;
    w->lq_tail = q;
    ism_rma_waiting++;
}

int ism_rma_poll(void)
{
    int n = 0;
    for (ism_win *w = wins; w; w = w->next)
        while (w->lq_head && lock_try(w, w->lq_head->type)) {
            ism_rma_lockq *q = w->lq_head;
            w->lq_head = q->next;
            if (!w->lq_head)
                w->lq_tail = NULL;
            ism_rma_grant(w, q->src_g);
            free(q);
            ism_rma_waiting--;
            n++;
        }
    return n;
}

int ism_rma_lock_release(ism_win *w, int l, int type)
{
    int64_t d = type == ISM_LOCK_SHARED ? -1 : -LOCK_EXCL;
    if (!w->vlock) {
        *w->lockword += d;
        return 0;
    }
    int rc = ism.be->accumulate(&d, 1, vdt_int64(), l, lock_disp(w, l), 1, vdt_int64(),
                                vop(OP_SUM), w->vlock);
    return rc ? rc : ism.be->win_sync(ISM_VWIN_FLUSH, l, w->vlock);
}

/* Take a local member's lock, serving my own frames while it is busy. */
static int lock_local(ism_win *w, int target, int type)
{
    unsigned spins = 0;
    for (;;) {
        int taken = 0, rc = lock_attempt(w, w->c->l_of[target], type, &taken);
        if (taken) /* the direct road's loads come after the lock (rma_direct.c) */
            atomic_thread_fence(memory_order_seq_cst);
        if (rc || taken)
            return rc;
        if (!ism_progress())
            ism_idle(&spins);
    }
}

static int lock_remote_send(ism_win *w, int target, int type)
{
    return ism_rma_send(w, target, ISM_RMA_LOCK, (uint64_t)type, ISM_RMA_B(0, 0, w->fences),
                        NULL, 0);
}

int ism_win_lock(ism_win *w, int type, int target, int assert_)
{
    if (type != ISM_LOCK_SHARED && type != ISM_LOCK_EXCLUSIVE)
        return ism_rma_fail(ISM_ERR_LOCKTYPE, "lock type %d is neither MPI_LOCK_SHARED (302) "
                                              "nor MPI_LOCK_EXCLUSIVE (301)", type);
    if (w->held[target] || w->lock_all)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "rank %d of the window is already locked by "
                                              "this rank", target);
    int rc = 0;
    if (assert_ & ISM_MODE_NOCHECK) {
        w->held[target] = -1;
        return 0;
    }
    if (w->c->l_of[target] >= 0) {
        rc = lock_local(w, target, type);
    } else {
        uint64_t want = w->grants + 1;
        rc = lock_remote_send(w, target, type);
        if (!rc)
            rc = ism_rma_wait(w, &w->grants, want, "MPI_Win_lock", target);
    }
    if (!rc)
        w->held[target] = type;
    return rc;
}

/* Everything from here to target is applied there: the vendor's flush, or a FLUSH
 * frame answered by an ACK (one round trip; the frames of a pair arrive in order). */
static int flush_one(ism_win *w, int target)
{
    /* a program that spins on a local target (a compare-and-swap loop) must still serve
     * the other sites' operations on its own window, or their holder never gets on */
    ism_progress();
    if (w->c->l_of[target] >= 0)
        return ism_win_vflush(w, w->c->l_of[target]);
    uint64_t want = w->acks + 1;
    int rc = ism_rma_send(w, target, ISM_RMA_FLUSH, 0, ISM_RMA_B(0, 0, w->fences), NULL, 0);
    return rc ? rc : ism_rma_wait(w, &w->acks, want, "MPI_Win_flush", target);
}

static int unlock_one(ism_win *w, int target, int type)
{
    int l = w->c->l_of[target];
    if (l >= 0) {
        int rc = ism_win_vflush(w, l);
        return rc || type < 0 ? rc : ism_rma_lock_release(w, l, type);
    }
    if (type < 0)
        return flush_one(w, target);
    uint64_t want = w->acks + 1;
    int rc = ism_rma_send(w, target, ISM_RMA_UNLOCK, (uint64_t)type, ISM_RMA_B(0, 0, w->fences),
                          NULL, 0);
    return rc ? rc : ism_rma_wait(w, &w->acks, want, "MPI_Win_unlock", target);
}

int ism_win_unlock(ism_win *w, int target)
{
    if (!w->held[target])
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_unlock of rank %d, which this rank has "
                                              "not locked", target);
    int rc = unlock_one(w, target, w->held[target]);
    w->held[target] = 0;
    return rc;
}

int ism_win_lock_all(ism_win *w, int assert_)
{
    if (w->lock_all)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_lock_all while this rank holds it");
    for (int t = 0; t < w->c->size; t++)
        if (w->held[t])
            return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_lock_all while this rank holds a "
                                                  "lock on rank %d", t);
    if (assert_ & ISM_MODE_NOCHECK) {
        w->lock_all = -1;
        return 0;
    }
    /* the remote requests first, so their round trip overlaps the local ones */
    uint64_t want = w->grants + (uint64_t)w->nremote;
    int rc = 0;
    for (int t = 0; !rc && t < w->c->size; t++)
        if (w->c->l_of[t] < 0)
            rc = lock_remote_send(w, t, ISM_LOCK_SHARED);
    for (int t = 0; !rc && t < w->c->size; t++)
        if (w->c->l_of[t] >= 0)
            rc = lock_local(w, t, ISM_LOCK_SHARED);
    if (!rc)
        rc = ism_rma_wait(w, &w->grants, want, "MPI_Win_lock_all", -1);
    if (!rc)
        w->lock_all = 1;
    return rc;
}

int ism_win_unlock_all(ism_win *w)
{
    if (!w->lock_all)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all");
    int type = w->lock_all < 0 ? -1 : ISM_LOCK_SHARED;
    uint64_t want = w->acks + (uint64_t)w->nremote;
    int rc = ism_win_vflush(w, -1);
    for (int t = 0; !rc && t < w->c->size; t++) {
        if (w->c->l_of[t] >= 0) {
            if (type > 0)
                rc = ism_rma_lock_release(w, w->c->l_of[t], type);
        } else {
            rc = ism_rma_send(w, t, type > 0 ? ISM_RMA_UNLOCK : ISM_RMA_FLUSH, (uint64_t)type,
                              ISM_RMA_B(0, 0, w->fences), NULL, 0);
        }
    }
    if (!rc)
        rc = ism_rma_wait(w, &w->acks, want, "MPI_Win_unlock_all", -1);
    w->lock_all = 0;
    return rc;
}

/* MPI_Win_flush_local(_all): local completion. An operation to another site is complete
 * at its origin once its data is copied out (a frame in the gateway's ring, or a batch of
 * small puts), which happens before the call that started it returns; what remains are
 * the replies of gets and of the accumulates that fetch. So no FLUSH frame and no round
 * trip: only the replies already on their way are waited for (those of every target of
 * the window: a conservative wait that costs no extra trip). */
int ism_win_flush_local(ism_win *w, int target)
{
    ism_progress();
    int rc = 0;
    if (target < 0)
        rc = ism_win_vflush_local(w, -1);
    else if (w->c->l_of[target] >= 0)
        return ism_win_vflush_local(w, w->c->l_of[target]);
    return rc ? rc : ism_rma_wait(w, NULL, 0, "MPI_Win_flush_local (replies to gets)", target);
}

int ism_win_flush(ism_win *w, int target)
{
    if (target >= 0)
        return flush_one(w, target);
    uint64_t want = w->acks + (uint64_t)w->nremote;
    ism_progress();
    int rc = ism_win_vflush(w, -1);
    for (int t = 0; !rc && t < w->c->size; t++)
        if (w->c->l_of[t] < 0)
            rc = ism_rma_send(w, t, ISM_RMA_FLUSH, 0, ISM_RMA_B(0, 0, w->fences), NULL, 0);
    return rc ? rc : ism_rma_wait(w, &w->acks, want, "MPI_Win_flush_all", -1);
}

/* A window of another flavor (MPI 4.1 12.2.3): only memory this process can load and store
 * directly is returned, which is its own (the vendor's window is not shared memory, and a
 * rank at another site never is); any other rank gets size 0 and NULL, as Open MPI and
 * MPICH >= 4.2 do. MPI_PROC_NULL names the lowest rank with memory. */
static void own_memory_query(ism_win *w, int rank, int64_t *size, int *disp_unit, void **base)
{
    if (rank == ISM_PROC_NULL) {
        rank = 0;
        while (rank < w->c->size - 1 && w->sizes[rank] == 0)
            rank++;
    }
    int mine = rank == w->c->rank;
    *size = mine ? w->size : 0;
    *base = mine ? w->base : NULL;
    *disp_unit = w->units[rank];
}

/* Dynamic windows. Attaching is local: no other process learns of it until the program
 * tells it an address (MPI_Get_address, then any communication), so origins cannot check
 * a remote target's range; the target checks every frame against its regions (rma.c
 * bounds) and a local target's vendor checks its own. */
int ism_win_attach(ism_win *w, void *base, int64_t size)
{
    if (w->flavor != ISM_WIN_FLAVOR_DYNAMIC)
        return ism_rma_fail(ISM_ERR_RMA_FLAVOR, "memory can be attached only to a window made "
                                                "by MPI_Win_create_dynamic");
    if (size < 0)
        return ism_rma_fail(ISM_ERR_SIZE, "attached size %lld is negative", (long long)size);
    if (size > 0 && !base)
        return ism_rma_fail(ISM_ERR_RMA_ATTACH, "cannot attach %lld bytes at address 0",
                            (long long)size);
    uintptr_t b = (uintptr_t)base;
    if (size > 0 && (uint64_t)size > UINTPTR_MAX - b)
        return ism_rma_fail(ISM_ERR_RMA_ATTACH, "%lld bytes at %p run past the end of memory",
                            (long long)size, base);
    for (int i = 0; i < w->nregions; i++) {
        const ism_win_region *r = &w->regions[i];
        if (r->base == b || (size > 0 && r->size > 0 && b < r->base + (uint64_t)r->size &&
                             r->base < b + (uint64_t)size))
            return ism_rma_fail(ISM_ERR_RMA_ATTACH, "%lld bytes at %p overlap the %lld bytes "
                                "at %p already attached to this window",
                                (long long)size, base, (long long)r->size, (void *)r->base);
    }
    if (w->nregions == w->cap_regions) {
        int cap = w->cap_regions ? 2 * w->cap_regions : 8;
        ism_win_region *n = realloc(w->regions, (size_t)cap * sizeof *n);
        if (!n)
            return ISM_ERR_NO_MEM;
        w->regions = n;
        w->cap_regions = cap;
    }
    int rc = w->vwin ? ism.be->win_attach(w->vwin, base, size) : 0;
    if (rc) /* Open MPI 4.1's osc/rdma takes 64 regions (its osc_rdma_max_attach) */
        return ism_rma_fail(rc, "the site's MPI refused to attach %lld bytes at %p (regions "
                                "attached already: %d; a vendor limit?)",
                            (long long)size, base, w->nregions);
    w->regions[w->nregions++] = (ism_win_region){b, size};
    return 0;
}

int ism_win_detach(ism_win *w, const void *base)
{
    if (w->flavor != ISM_WIN_FLAVOR_DYNAMIC)
        return ism_rma_fail(ISM_ERR_RMA_FLAVOR, "memory can be detached only from a window "
                                                "made by MPI_Win_create_dynamic");
    for (int i = 0; i < w->nregions; i++)
        if (w->regions[i].base == (uintptr_t)base) {
            /* frames from other sites are applied by this process's own progress, so none
             * is halfway through the region now */
            int rc = w->vwin ? ism.be->win_detach(w->vwin, base) : 0;
            if (rc)
                return ism_rma_fail(rc, "the site's MPI refused to detach the memory at %p",
                                    base);
            w->regions[i] = w->regions[--w->nregions];
            return 0;
        }
    return ism_rma_fail(ISM_ERR_RMA_ATTACH, "no memory attached to this window starts at %p "
                                            "(MPI_Win_detach takes the base given to "
                                            "MPI_Win_attach)", base);
}

char *ism_win_mem(ism_win *w, uint64_t off, uint64_t n)
{
    if (w->flavor != ISM_WIN_FLAVOR_DYNAMIC) {
        if (off > (uint64_t)w->size || n > (uint64_t)w->size - off)
            return NULL;
        return (char *)w->base + off;
    }
    /* the bytes may run on from one region into the next when they were attached back to
     * back (MPI does not forbid it; MPICH's win_dynamic_rma_flush_get does it) */
    if (n == 0) {
        for (int i = 0; i < w->nregions; i++)
            if (off >= w->regions[i].base && off - w->regions[i].base <= (uint64_t)w->regions[i].size)
                return (char *)(uintptr_t)off;
        return NULL;
    }
    uint64_t at = off, left = n;
    for (int hops = 0; hops < w->nregions; hops++) {
        const ism_win_region *r = NULL;
        for (int i = 0; i < w->nregions && !r; i++)
            if (at >= w->regions[i].base && at - w->regions[i].base < (uint64_t)w->regions[i].size)
                r = &w->regions[i];
        if (!r)
            return NULL;
        uint64_t room = (uint64_t)r->size - (at - r->base);
        if (left <= room)
            return (char *)(uintptr_t)off;
        at += room;
        left -= room;
    }
    return NULL;
}

int ism_win_shared_query(ism_win *w, int rank, int64_t *size, int *disp_unit, void **base)
{
    if (w->flavor != ISM_WIN_FLAVOR_SHARED) {
        own_memory_query(w, rank, size, disp_unit, base);
        return 0;
    }
    int l = rank == ISM_PROC_NULL ? ISM_VSRC_PROC_NULL : w->c->l_of[rank];
    int rc = ism.be->win_shared_query(w->vwin, l, size, base);
    if (!rc && rank == ISM_PROC_NULL) { /* the vendor's choice: the first with memory */
        *disp_unit = 0;
        for (int r = 0; r < w->c->size; r++)
            if (w->sizes[r] > 0) {
                *disp_unit = w->units[r];
                break;
            }
    } else if (!rc) {
        *disp_unit = w->units[rank];
        if (*size == 0) /* no memory, no address: MPICH's answer (Open MPI gives the address
                         * where a contiguous segment would start; MPICH's
                         * win_shared_noncontig_put asserts NULL) */
            *base = NULL;
    }
    return rc;
}

int ism_win_sync(ism_win *w)
{
    int rc = ism_rma_batch_flush_win(w);
    ism_progress(); /* MPI_Win_sync polled in a loop, as flush_one */
    return rc ? rc : w->vwin ? ism.be->win_sync(ISM_VWIN_SYNC, 0, w->vwin) : 0;
}

/* Post/start/complete/wait (generalized active target). POST and COMPLETE are empty
 * messages on the window's private communicator, so they reach a rank at this site or
 * another alike. A COMPLETE follows the origin's operations: a local target's are
 * flushed first, a remote target's frames arrive before it (one path per pair, in order,
 * and a frame is applied when it arrives), and the origin's gets have their replies.
 * A rank in its own group sends itself nothing: its POST and COMPLETE are recorded in the
 * window. A standard-mode send to oneself may block until the receive is posted (MPICH
 * 4.0's did, in MPI_Win_post, on a site of one rank: every other rank then waited in
 * MPI_Win_start for ever), and the receive would only come from this rank's own next
 * call. */
enum { TAG_POST = 1, TAG_COMPLETE = 2 };

static int *copy_ranks(const int *ranks, int n)
{
    int *p = malloc(sizeof *p * (size_t)(n ? n : 1));
    if (p)
        memcpy(p, ranks, sizeof *p * (size_t)n);
    return p;
}

int ism_win_post(ism_win *w, const int *ranks, int n)
{
    if (w->post_to)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_post while an exposure epoch is open");
    if (!(w->post_to = copy_ranks(ranks, n)))
        return ISM_ERR_NO_MEM;
    w->npost = n;
    if (w->vwin) /* the program's stores before the post are what the origins see */
        ism.be->win_sync(ISM_VWIN_SYNC, 0, w->vwin);
    int rc = 0;
    for (int i = 0; !rc && i < n; i++)
        if (ranks[i] == w->c->rank)
            w->self_posted = 1;
        else
            rc = ism_send(NULL, 0, ISM_DT_BYTE, ranks[i], TAG_POST, w->c, ISM_MODE_STD);
    return rc;
}

int ism_win_start(ism_win *w, const int *ranks, int n)
{
    if (w->start_to)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_start while an access epoch is open");
    if (!(w->start_to = copy_ranks(ranks, n)))
        return ISM_ERR_NO_MEM;
    w->nstart = n;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++)
        if (ranks[i] == w->c->rank)
            w->self_posted = 0; /* its own exposure: MPI_Win_start need not wait for it */
        else
            rc = ism_recv(NULL, 0, ISM_DT_BYTE, ranks[i], TAG_POST, w->c, NULL);
    return rc;
}

int ism_win_complete(ism_win *w)
{
    if (!w->start_to)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start");
    /* the puts gathered for the targets go before the COMPLETE messages, which take the
     * point-to-point path (the same path to the gateway, in order) */
    int rc = ism_rma_batch_flush_win(w);
    if (!rc)
        rc = ism_rma_wait(w, NULL, 0, "MPI_Win_complete (replies to gets)", -1);
    for (int i = 0; !rc && i < w->nstart; i++) {
        int t = w->start_to[i], l = w->c->l_of[t];
        if (l >= 0)
            rc = ism_win_vflush(w, l);
        if (!rc && t == w->c->rank)
            w->self_completed = 1;
        else if (!rc)
            rc = ism_send(NULL, 0, ISM_DT_BYTE, t, TAG_COMPLETE, w->c, ISM_MODE_STD);
    }
    free(w->start_to);
    w->start_to = NULL;
    w->nstart = 0;
    return rc;
}

int ism_win_wait(ism_win *w, int *flag)
{
    if (!w->post_to)
        return ism_rma_fail(ISM_ERR_RMA_SYNC, "%s without MPI_Win_post",
                            flag ? "MPI_Win_test" : "MPI_Win_wait");
    int rc = 0;
    /* the COMPLETEs still due are the last npost entries; each is taken once */
    while (!rc && w->npost > 0) {
        int src = w->post_to[w->npost - 1];
        if (src == w->c->rank) {
            if (!w->self_completed && flag) {
                *flag = 0;
                return 0;
            }
            if (!w->self_completed) /* nobody else could complete it: do not wait for ever */
                return ism_rma_fail(ISM_ERR_RMA_SYNC, "MPI_Win_wait: rank %d is in its own "
                                    "MPI_Win_post group and has not called MPI_Win_start and "
                                    "MPI_Win_complete for itself", w->c->rank);
            w->self_completed = 0;
            w->npost--;
            continue;
        }
        if (flag) {
            int here = 0;
            ism_status st;
            rc = ism_iprobe(src, TAG_COMPLETE, w->c, &here, &st);
            if (rc || !here) {
                *flag = 0;
                return rc;
            }
        }
        rc = ism_recv(NULL, 0, ISM_DT_BYTE, src, TAG_COMPLETE, w->c, NULL);
        if (!rc)
            w->npost--;
    }
    if (rc)
        return rc;
    if (w->vwin)
        rc = ism.be->win_sync(ISM_VWIN_SYNC, 0, w->vwin);
    free(w->post_to);
    w->post_to = NULL;
    if (flag)
        *flag = 1;
    return rc;
}
