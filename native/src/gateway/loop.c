/* loop.c: the gateway's event loop: vendor MPI on one side, TCP links on the other.
 *
 * One thread. Each round it takes completed frames from the app ranks (a ring of
 * pre-posted vendor receives, consumed in posting order so per-sender order holds),
 * routes them to the link of the destination's gateway, completes deliveries to local
 * apps, and services the sockets with ppoll(). With nothing to do it backs off from
 * spinning to sleeping in ppoll for at most ISTHMUS_GW_IDLE_US, so an idle gateway does
 * not hold a core. It also runs heartbeats, dead-link detection, FIN and abort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/core.h"
#include "../wan/sock.h"
#include "gateway.h"

#define GW_SLOTS 16
#define GW_HEARTBEAT_MS 1000

static const char *sname(int s) { return gw.site_names[s]; }

void gw_abort_job(int code, const char *reason)
{
    fprintf(stderr, "isthmus: site %s (gateway %d): %s; aborting the job\n", sname(gw.site),
            gw.gwidx, reason);
    fflush(stderr);
    char text[600];
    snprintf(text, sizeof text, "site %s (gateway %d): %s", sname(gw.site), gw.gwidx, reason);
    for (int i = 0; i < gw.nlinks; i++)
        if (gw.links[i].fd >= 0 && gw.links[i].up)
            gw_link_control(&gw.links[i], ISM_F_ABORT, (uint64_t)(unsigned)code, text);
    gw_flush_links(ism_now_ms() + 2000);
    if (gw.be)
        gw.be->abort(gw.vworld, code ? code : 1);
    _exit(code ? code : 1);
}

static void pend_push(gw_buf *b, ism_vh req)
{
    if (gw.npend == gw.pendcap) {
        gw.pendcap = gw.pendcap ? gw.pendcap * 2 : 64;
        gw.pend = realloc(gw.pend, sizeof *gw.pend * (size_t)gw.pendcap);
        if (!gw.pend)
            gw_die(1, "out of memory tracking deliveries");
    }
    gw.pend[gw.npend].buf = b;
    gw.pend[gw.npend].vreq = req;
    gw.npend++;
}

void gw_deliver_local(gw_buf *b, const ism_frame_hdr *h)
{
    int app = h->dst - gw.site_off[gw.site];
    ism_vh req;
    if (gw.be->isend(b->data, (int)b->len, gw.be->dt[0x47], gw.app_vrank[app], ISM_TAG_GW2APP,
                     gw.vgw, &req))
        gw_die(1, "cannot deliver a frame to local rank %d (global %d)", app, h->dst);
    pend_push(b, req);
}

static int reap_deliveries(void)
{
    if (!gw.npend)
        return 0;
    ism_vh reqs[256];
    int idx[256], n = 0, done = 0;
    int m = gw.npend < 256 ? gw.npend : 256;
    for (int i = 0; i < m; i++)
        reqs[i] = gw.pend[i].vreq;
    gw.be->testsome(m, reqs, &n, idx, NULL);
    for (int k = 0; k < n; k++) {
        gw_pending *p = &gw.pend[idx[k]];
        if (p->buf->pooled)
            gw.held_bytes -= p->buf->len;
        gw_buf_put(p->buf);
        p->buf = NULL;
        done++;
    }
    if (done) {
        int j = 0;
        for (int i = 0; i < gw.npend; i++)
            if (gw.pend[i].buf)
                gw.pend[j++] = gw.pend[i];
        gw.npend = j;
    }
    return done;
}

void gw_route_from_link(gw_link *l, gw_buf *b)
{
    ism_frame_hdr h;
    ism_frame_decode((const uint8_t *)b->data, b->len, &h);
    if (h.dst < 0) {
        switch (h.type) {
        case ISM_F_FIN:
            l->fin_recv = 1;
            break;
        case ISM_F_HEARTBEAT:
            break;
        case ISM_F_ABORT: {
            char text[600];
            size_t n = h.len < sizeof text - 1 ? h.len : sizeof text - 1;
            memcpy(text, b->data + ISM_FRAME_HDR_SIZE, n);
            text[n] = 0;
            for (size_t i = 0; i < n; i++)
                if ((unsigned char)text[i] < 32)
                    text[i] = '?'; /* the text came off the network: print it defanged */
            fprintf(stderr, "isthmus: site %s (gateway %d): stopping because %s\n",
                    sname(gw.site), gw.gwidx, text);
            fflush(stderr);
            gw.be->abort(gw.vworld, (int)h.a ? (int)h.a : 1);
            _exit(1);
        }
        default:
            gw_die(1, "unexpected %s frame for the gateway from site %s gateway %d",
                   ism_frame_type_name(h.type), sname(l->site), l->gw);
        }
        gw_buf_put(b);
        return;
    }
    int lo = gw.site_off[gw.site], hi = gw.site_off[gw.site + 1];
    if (h.dst < lo || h.dst >= hi || (h.dst - lo) % gw.ngw_here != gw.gwidx || h.src < 0 ||
        h.src >= gw.site_off[gw.nsites])
        gw_die(1, "site %s gateway %d sent a frame for rank %d from rank %d, which this gateway "
                  "does not serve (protocol error)",
               sname(l->site), l->gw, h.dst, h.src);
    if (h.type == ISM_F_EAGER || h.type == ISM_F_RTS)
        l->rx_msgs++;
    gw_deliver_local(b, &h);
}

static void app_frame(gw_buf *b, size_t bytes, int app_vrank)
{
    ism_frame_hdr h;
    int rc = ism_frame_decode((const uint8_t *)b->data, bytes, &h);
    if (rc || ISM_FRAME_HDR_SIZE + (size_t)h.len != bytes)
        gw_die(1, "malformed frame from vendor rank %d (%s)", app_vrank, ism_frame_strerror(rc));
    b->len = bytes;
    if (h.dst < 0) {
        if (h.type == ISM_F_FIN) {
            gw.apps_fin++;
        } else if (h.type == ISM_F_ABORT) {
            char text[600];
            size_t n = h.len < sizeof text - 1 ? h.len : sizeof text - 1;
            memcpy(text, b->data + ISM_FRAME_HDR_SIZE, n);
            text[n] = 0;
            for (int i = 0; i < gw.nlinks; i++)
                if (gw.links[i].up && gw.links[i].fd >= 0)
                    gw_link_control(&gw.links[i], ISM_F_ABORT, h.a, text);
            gw_flush_links(ism_now_ms() + 2000);
            ism_frame_hdr ack;
            ism_frame_init(&ack, ISM_F_ABORT_ACK);
            ack.dst = h.src;
            uint8_t abuf[ISM_FRAME_HDR_SIZE];
            ism_frame_encode(&ack, abuf);
            gw.be->send(abuf, ISM_FRAME_HDR_SIZE, gw.be->dt[0x47], app_vrank, ISM_TAG_GW2APP,
                        gw.vgw);
            struct timespec ts = {0, 200 * 1000 * 1000};
            nanosleep(&ts, NULL);
            gw.be->abort(gw.vworld, (int)h.a ? (int)h.a : 1);
            _exit(1);
        } else {
            gw_die(1, "unexpected %s frame from vendor rank %d", ism_frame_type_name(h.type),
                   app_vrank);
        }
        gw_buf_put(b);
        return;
    }
    if (h.dst >= gw.site_off[gw.nsites] || (h.dst >= gw.site_off[gw.site] &&
                                             h.dst < gw.site_off[gw.site + 1]))
        gw_die(1, "vendor rank %d sent a frame for rank %d, which is not at another site",
               app_vrank, h.dst);
    gw_link *l = gw_link_for(h.dst);
    if (h.type == ISM_F_EAGER || h.type == ISM_F_RTS)
        l->tx_msgs++;
    ism_frame_encode(&h, (uint8_t *)b->data);
    gw.held_bytes += b->len;
    if (gw.held_bytes > gw.peak_bytes)
        gw.peak_bytes = gw.held_bytes;
    gw_link_send(l, b);
    gw_link_write(l);
}

static int service_apps(void)
{
    int work = 0;
    if (!gw.slots)
        gw.slots = calloc(GW_SLOTS, sizeof *gw.slots);
    while (gw.slot_count < GW_SLOTS) {
        gw_buf *b = gw_buf_get();
        if (!b)
            break;
        gw_slot *s = &gw.slots[(gw.slot_head + gw.slot_count) % GW_SLOTS];
        s->buf = b;
        if (gw.be->irecv(b->data, (int)gw.bufsize, gw.be->dt[0x47], ISM_VSRC_ANY, ISM_TAG_APP2GW,
                         gw.vgw, &s->vreq))
            gw_die(1, "cannot post a receive for the app ranks");
        gw.slot_count++;
    }
    while (gw.slot_count > 0) {
        gw_slot *s = &gw.slots[gw.slot_head];
        int flag = 0;
        ism_vstatus st;
        gw.be->test(&s->vreq, &flag, &st);
        if (!flag)
            break;
        gw_buf *b = s->buf;
        s->buf = NULL;
        gw.slot_head = (gw.slot_head + 1) % GW_SLOTS;
        gw.slot_count--;
        app_frame(b, st.bytes, st.source);
        work++;
    }
    return work + reap_deliveries();
}

static void link_lost(gw_link *l, const char *why)
{
    if (l->fin_recv && l->fin_sent) {
        close(l->fd);
        l->fd = -1;
        return;
    }
    l->up = 0;
    close(l->fd);
    l->fd = -1;
    char msg[300];
    snprintf(msg, sizeof msg, "link to site %s gateway %d lost (%s)", sname(l->site), l->gw, why);
    gw_abort_job(1, msg);
}

static int finished(void)
{
    if (gw.apps_fin < gw.apps_mine)
        return 0;
    for (int i = 0; i < gw.nlinks; i++) {
        gw_link *l = &gw.links[i];
        if (!l->fin_sent) {
            gw_link_control(l, ISM_F_FIN, 0, NULL);
            l->fin_sent = 1;
        }
    }
    for (int i = 0; i < gw.nlinks; i++)
        if (!gw.links[i].fin_recv || gw.links[i].txq)
            return 0;
    return 1;
}

void gw_loop(void)
{
    struct pollfd *pf = calloc((size_t)gw.nlinks + 1, sizeof *pf);
    unsigned idle = 0;
    int64_t idle_since = ism_now_ms();
    for (;;) {
        int work = service_apps();
        if (finished())
            break;
        int64_t now = ism_now_ms();
        int n = 0;
        for (int i = 0; i < gw.nlinks; i++) {
            gw_link *l = &gw.links[i];
            if (l->fd < 0)
                continue;
            if (l->txq && gw_link_write(l) < 0)
                link_lost(l, strerror(errno));
            if (now - l->last_tx_ms > GW_HEARTBEAT_MS && !l->txq)
                gw_link_control(l, ISM_F_HEARTBEAT, 0, NULL);
            if (now - l->last_rx_ms > gw.link_timeout_ms && !l->fin_recv) {
                char why[128];
                snprintf(why, sizeof why, "nothing received for %lld s",
                         (long long)(now - l->last_rx_ms) / 1000);
                link_lost(l, why);
            }
            pf[n].fd = l->fd;
            pf[n].events = (short)((gw.pool_free > 0 || l->rxbuf || l->rx_have < ISM_FRAME_HDR_SIZE
                                        ? POLLIN
                                        : 0) |
                                   (l->txq ? POLLOUT : 0));
            pf[n].revents = 0;
            n++;
        }
        if (gw.listen_fd >= 0) {
            pf[n].fd = gw.listen_fd;
            pf[n].events = POLLIN;
            pf[n].revents = 0;
            n++;
        }
        struct timespec ts = {0, 0};
        if (work) {
            idle = 0;
            idle_since = now;
        } else if (++idle > 64) {
            /* naps grow to ISTHMUS_GW_IDLE_US; after 50 ms without work, to the deeper
             * ISTHMUS_GW_IDLE_DEEP_US (sockets still wake us at once; only frames from
             * local apps wait for the nap to end) */
            long us = (long)(idle - 64) * 10;
            long cap = now - idle_since > 50 ? gw.idle_deep_us : gw.idle_max_us;
            if (us > cap)
                us = cap;
            ts.tv_sec = us / 1000000;
            ts.tv_nsec = (us % 1000000) * 1000;
        } else {
            sched_yield();
        }
        int r = ppoll(pf, (nfds_t)n, &ts, NULL);
        if (r < 0 && errno != EINTR)
            gw_die(1, "ppoll failed: %s", strerror(errno));
        if (r <= 0)
            continue;
        int k = 0;
        for (int i = 0; i < gw.nlinks; i++) {
            gw_link *l = &gw.links[i];
            if (l->fd < 0)
                continue;
            short ev = pf[k++].revents;
            if (ev & (POLLIN | POLLHUP | POLLERR)) {
                int rc = gw_link_read(l);
                if (rc < 0 && l->fd >= 0)
                    link_lost(l, "connection closed by the peer");
                else if (rc > 0)
                    idle = 0;
            }
            if (l->fd >= 0 && (ev & POLLOUT) && gw_link_write(l) < 0)
                link_lost(l, strerror(errno));
        }
        if (gw.listen_fd >= 0 && (pf[k].revents & POLLIN))
            gw_accept_intruder();
    }
    free(pf);
}

/* Withdraw the receives still posted for the app ranks, so the vendor finalizes clean. */
void gw_cancel_receives(void)
{
    while (gw.slot_count > 0) {
        gw_slot *s = &gw.slots[gw.slot_head];
        ism_vstatus st;
        gw.be->cancel(&s->vreq);
        gw.be->wait(&s->vreq, &st);
        gw_buf_put(s->buf);
        gw.slot_head = (gw.slot_head + 1) % GW_SLOTS;
        gw.slot_count--;
    }
    /* a delivery to an app that finalized without receiving it never completes */
    int64_t until = ism_now_ms() + 2000;
    while (gw.npend > 0 && ism_now_ms() < until)
        if (!reap_deliveries())
            sched_yield();
}
