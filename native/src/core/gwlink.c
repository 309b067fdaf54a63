/* gwlink.c: the app rank's end of the channel to its site's gateway, and progress.
 *
 * Outgoing frames are copied into bounce buffers and handed to the vendor MPI as
 * non-blocking sends to the gateway rank; the number and bytes of such buffers in flight
 * are bounded, and a sender over the bound makes progress until it is back under it.
 * Incoming frames land in a ring of pre-posted vendor receives, consumed strictly in
 * posting order (contract/rxring.h, the gateway's ring too), so per-peer MPI ordering
 * survives. ism_progress() is the one function every waiting call turns.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "win.h"
#include "../coll/coll.h" /* collectives in flight advance with every progress round */

#define ISM_RX_SLOTS 16
#define ISM_OUT_MAX 256
#define ISM_OUT_BYTES_MAX (32u << 20)

static size_t rx_size(void) { return ISM_FRAME_HDR_SIZE + ism.chunk; }

int ism_gw_setup(void)
{
    ism.outcap = ISM_OUT_MAX;
    ism.outb = calloc((size_t)ism.outcap, sizeof *ism.outb);
    if (!ism.outb || ism_rxring_init(&ism.rx, ism.be, ism.vgw, ISM_TAG_GW2APP, ISM_RX_SLOTS))
        return ISM_ERR_NO_MEM;
    while (!ism_rxring_full(&ism.rx)) {
        void *buf = malloc(rx_size());
        if (!buf)
            return ISM_ERR_NO_MEM;
        int rc = ism_rxring_post(&ism.rx, buf, buf, rx_size());
        if (rc) {
            free(buf);
            return rc;
        }
    }
    return 0;
}

static int reap_outbound(void)
{
    int done = 0;
    if (ism.nout == 0)
        return 0;
    ism_vh reqs[ISM_OUT_MAX];
    int idx[ISM_OUT_MAX], n = 0;
    for (int i = 0; i < ism.nout; i++)
        reqs[i] = ism.outb[i].vreq;
    ism.be->testsome(ism.nout, reqs, &n, idx, NULL);
    if (n <= 0)
        return 0;
    for (int k = 0; k < n; k++) {
        ism_outb *o = &ism.outb[idx[k]];
        ism.out_bytes -= o->len;
        free(o->buf);
        o->buf = NULL;
        done++;
    }
    int j = 0;
    for (int i = 0; i < ism.nout; i++)
        if (ism.outb[i].buf)
            ism.outb[j++] = ism.outb[i];
    ism.nout = j;
    return done;
}

int ism_gw_room(size_t len)
{
    size_t n = ISM_FRAME_HDR_SIZE + len;
    return ism.nout < ism.outcap && (ism.out_bytes + n <= ISM_OUT_BYTES_MAX || ism.nout == 0);
}

int ism_gw_post_with(const ism_frame_hdr *h, size_t len, ism_gw_fill_fn fill, void *arg)
{
    unsigned spins = 0;
    size_t n = ISM_FRAME_HDR_SIZE + len;
    while (!ism_gw_room(len)) {
        if (!ism_progress())
            ism_idle(&spins);
    }
    char *buf = malloc(n);
    if (!buf)
        return ISM_ERR_NO_MEM;
    memcpy(buf, h, ISM_FRAME_HDR_SIZE);
    ((ism_frame_hdr *)buf)->len = (uint32_t)len;
    if (len)
        fill(buf + ISM_FRAME_HDR_SIZE, len, arg);
    ism_outb *o = &ism.outb[ism.nout];
    int rc = ism.be->isend(buf, (int)n, ism.be->dt[ISM_KIND_BYTE], ism.my_gw, ISM_TAG_APP2GW, ism.vgw,
                           &o->vreq);
    if (rc) {
        free(buf);
        return rc;
    }
    o->buf = buf;
    o->len = n;
    ism.nout++;
    ism.out_bytes += n;
    return 0;
}

static void fill_copy(void *dst, size_t len, void *arg) { memcpy(dst, arg, len); }

int ism_gw_post(const ism_frame_hdr *h, const void *payload, size_t len)
{
    return ism_gw_post_with(h, len, fill_copy, (void *)(uintptr_t)payload);
}

static int drain_rx(void)
{
    int handled = 0;
    ism_vstatus vst;
    void *buf;
    while ((buf = ism_rxring_take(&ism.rx, &vst))) {
        ism_frame_hdr h;
        int rc = ism_frame_decode(buf, vst.bytes, &h);
        if (rc || ISM_FRAME_HDR_SIZE + (size_t)h.len != vst.bytes)
            ism_die("site %s rank %d: malformed frame from the gateway (%s, %zu bytes)",
                    ism_site_name(ism.lay.site), ism.grank, ism_frame_strerror(rc), vst.bytes);
        ism_handle_frame(&h, (char *)buf + ISM_FRAME_HDR_SIZE);
        rc = ism_rxring_post(&ism.rx, buf, buf, rx_size());
        if (rc)
            ism_die("site %s rank %d: cannot post a receive from the gateway (error %d)",
                    ism_site_name(ism.lay.site), ism.grank, rc);
        handled++;
    }
    return handled;
}

/* Data of rendezvous sends, as far as the receivers' credits allow. */
static int push_rsends(void)
{
    int moved = 0;
    for (ism_req *r = ism.rsends.head, *next; r; r = next) {
        next = r->next;
        /* r->off < r->early: ism_isend is still posting the early data */
        while (r->cts && r->off < r->total && r->off >= r->early && r->credits > 0) {
            size_t n = r->total - r->off;
            if (n > ism.chunk)
                n = ism.chunk;
            ism_frame_hdr h;
            ism_frame_init(&h, ISM_F_DATA);
            h.ctx = r->ctx;
            h.src = ism.grank;
            h.dst = r->dst_g;
            h.a = r->peer_id;
            h.b = r->off;
            int rc = r->pdt ? ism_gw_post_with(&h, n, ism_fill_packed, r)
                            : ism_gw_post(&h, (const char *)r->sbuf + r->off, n);
            if (rc)
                ism_die("site %s rank %d: out of memory sending to rank %d",
                        ism_site_name(ism.lay.site), ism.grank, r->dst_g);
            r->off += n;
            r->credits--;
            moved++;
        }
        if (r->cts && r->off >= r->total) {
            ism_list_remove(&ism.rsends, r);
            ism_req_complete(r, 0);
            moved++;
        }
    }
    return moved;
}

/* ANY_SOURCE receives also wait at the vendor for a local match. */
static int check_shadows(void)
{
    int n = 0;
    for (ism_req *r = ism.posted.head, *next; r; r = next) {
        next = r->next;
        if (!r->has_shadow)
            continue;
        int flag = 0;
        ism_vstatus vst;
        ism.be->test(&r->vreq, &flag, &vst);
        if (flag) {
            r->has_shadow = 0;
            ism_list_remove(&ism.posted, r);
            ism_status_from_vendor(r->comm, &vst, &r->st);
            ism_req_complete(r, vst.error);
            n++;
        }
    }
    return n;
}

static int depth;

int ism_progress_depth(void)
{
    return depth;
}

int ism_progress(void)
{
    if (!ism.multisite) /* no gateway: only the collectives in flight (coll/nb_site.c) */
        return ism_coll_nb_active ? ism_coll_nb_poll() : 0;
    int n = reap_outbound();
    /* Frame handlers may send, and a sender over the bound calls back in here: the
     * nested call only reaps finished sends, so no list is walked twice at once. */
    if (depth)
        return n;
    depth++;
    n += drain_rx();
    if (ism.posted.head)
        n += check_shadows();
    if (ism.rsends.head)
        n += push_rsends();
    if (ism_rma_waiting)
        n += ism_rma_poll();
    if (ism_coll_nb_active)
        n += ism_coll_nb_poll();
    depth--;
    return n;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Called after a progress round that found nothing: inside a nonblocking collective,
 * yield to the program; otherwise advance pending nonblocking collectives, then spin
 * for 64 rounds, yield the core for ism.idle_yield_ns (ISTHMUS_IDLE_YIELD_US; several
 * sites share two cores in tests), and sleep in 50 us naps. The yielding is bounded in
 * time, not in calls: on a busy core one sched_yield can last a whole time slice of
 * another process, and 20000 of them (the bound until issue 8's stop 22; 17 ms on a free
 * core) kept eight waiting ranks on two cores from ever letting the gateways and the link
 * emulator run on time. *spins counts the caller's idle rounds (0 after any progress). */
void ism_idle(unsigned *spins)
{
    static _Thread_local int64_t yield_until;
    if (ism_nbc_cur) {
        ism_nbc_yield(); /* a nonblocking collective waits by giving the program back */
        return;
    }
    if (ism_nbc_poll()) {
        *spins = 0;
        return;
    }
    /* nothing else to do: send the puts gathered so far (rma_batch.c) */
    if (ism_rma_batched && ism_rma_batch_idle()) {
        *spins = 0;
        return;
    }
    /* One site without a gateway: no receive ring is tested here, so while isthmus waits
     * in its own code (its shared-memory collectives, a lock spin) nothing enters the
     * vendor, whose passive-target RMA may need this process as a target to progress
     * (Open MPI osc/rdma's emulated atomics over vader, MPICH's active messages): an
     * origin's MPI_Win_unlock then waits for ever on a target in MPI_Barrier. Poke it,
     * and keep yielding instead of napping, as the vendor's own waits would: a target
     * napping 50 us at a time made each put + flush under MPICH take 100 us instead of 1.
     * (With gateways the naps stay: spinning ranks starve the gateways of a shared core.) */
    int poke = !ism.multisite && ism_win_any();
    if (poke) {
        int flag = 0;
        ism_vstatus vst;
        ism.be->iprobe(ISM_VSRC_ANY, ISM_VTAG_ANY, ism_comm_world.vcomm, &flag, &vst);
    }
    /* under MPI_THREAD_MULTIPLE the core lock is given up for the rest of the round */
    unsigned held = ism_mt_release();
    unsigned s = ++*spins;
    if (s < 64) {
    } else if (s == 64 || (s < (1u << 30) && (poke || mono_ns() < yield_until))) {
        if (s == 64)
            yield_until = mono_ns() + ism.idle_yield_ns;
        sched_yield();
    } else {
        *spins = 1u << 30; /* napping from now on, without reading the clock */
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    ism_mt_reacquire(held);
}

void ism_gw_teardown(void)
{
    /* Cancel the ring: by now nothing more comes from the gateway for this rank */
    ism_rxring_cancel_all(&ism.rx, free);
    ism_frame_hdr h;
    ism_frame_init(&h, ISM_F_FIN);
    h.src = ism.grank;
    h.dst = -1;
    char *buf = malloc(ISM_FRAME_HDR_SIZE);
    memcpy(buf, &h, ISM_FRAME_HDR_SIZE);
    ism.be->send(buf, ISM_FRAME_HDR_SIZE, ism.be->dt[ISM_KIND_BYTE], ism.my_gw, ISM_TAG_APP2GW, ism.vgw);
    free(buf);
    while (ism.nout > 0) {
        ism_vh reqs[ISM_OUT_MAX];
        for (int i = 0; i < ism.nout; i++)
            reqs[i] = ism.outb[i].vreq;
        ism.be->waitall(ism.nout, reqs, NULL);
        for (int i = 0; i < ism.nout; i++)
            free(ism.outb[i].buf);
        ism.nout = 0;
    }
    free(ism.outb);
    free(ism.gwq_answer);
    ism.outb = NULL;
    ism.gwq_answer = NULL;
}
