/* loop.c: the gateway's event loop: vendor MPI on one side, WAN links on the other.
 *
 * One thread. Each round it takes completed frames from the app ranks (a ring of
 * pre-posted vendor receives, consumed in posting order so per-sender order holds),
 * routes them to the link of the destination's gateway, completes deliveries to local
 * apps, and services the links' streams with ppoll(), through the transport's ops
 * (xport.h). With nothing to do it backs off from spinning to sleeping in ppoll for at
 * most ISTHMUS_GW_IDLE_US, or until the transport's next timer, so an idle gateway does
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

#include "../wan/sock.h"
#include "gateway.h"
#include "query.h"
#include "trace.h"

#define GW_SLOTS 16

static const char *sname(int s) { return gw.lay.site_names[s]; }

void gw_abort_job(int code, const char *reason)
{
    fprintf(stderr, "isthmus: site %s (gateway %d): %s; aborting the job\n", sname(gw.lay.site),
            gw.gwidx, reason);
    fflush(stderr);
    char text[600];
    snprintf(text, sizeof text, "site %s (gateway %d): %s", sname(gw.lay.site), gw.gwidx, reason);
    for (int i = 0; i < gw.nlinks; i++)
        if (gw.links[i].nstreams && gw.links[i].st[0].fd >= 0)
            gw_link_control(&gw.links[i], 0, ISM_F_ABORT, (uint64_t)(unsigned)code, 0, text);
    gw_flush_links(ism_now_ms() + 2000);
    gw_trace_stop();
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
    int app = h->dst - gw.lay.site_off[gw.lay.site];
    ism_vh req;
    if (gw.be->isend(b->data, (int)b->len, gw.be->dt[ISM_KIND_BYTE], gw.app_vrank[app], ISM_TAG_GW2APP,
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
        case ISM_F_ABORT: {
            char text[600];
            size_t n = h.len < sizeof text - 1 ? h.len : sizeof text - 1;
            memcpy(text, b->data + ISM_FRAME_HDR_SIZE, n);
            text[n] = 0;
            for (size_t i = 0; i < n; i++)
                if ((unsigned char)text[i] < 32)
                    text[i] = '?'; /* the text came off the network: print it defanged */
            fprintf(stderr, "isthmus: site %s (gateway %d): stopping because %s\n",
                    sname(gw.lay.site), gw.gwidx, text);
            fflush(stderr);
            gw_trace_stop();
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
    int lo = gw.lay.site_off[gw.lay.site], hi = gw.lay.site_off[gw.lay.site + 1];
    if (h.type == ISM_F_IO && h.dst == lo && gw.gwidx == 0 && h.src >= 0 &&
        h.src < gw.lay.site_off[gw.lay.nsites]) {
        gw_fileagent_frame(l, b, &h);
        return;
    }
    if (h.dst < lo || h.dst >= hi || ism_gw_of_local(h.dst - lo, gw.ngw_here) != gw.gwidx || h.src < 0 ||
        h.src >= gw.lay.site_off[gw.lay.nsites])
        gw_die(1, "site %s gateway %d sent a frame for rank %d from rank %d, which this gateway "
                  "does not serve (protocol error)",
               sname(l->site), l->gw, h.dst, h.src);
    if (h.type == ISM_F_EAGER || h.type == ISM_F_RTS)
        l->rx_msgs++;
    if (gw_tracing)
        gw_trace_app(l, &h, 1);
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
        } else if (h.type == ISM_F_QUERY || h.type == ISM_F_WATCH) {
            gw_query_frame(&h, app_vrank);
        } else if (h.type == ISM_F_ABORT) {
            char text[600];
            size_t n = h.len < sizeof text - 1 ? h.len : sizeof text - 1;
            memcpy(text, b->data + ISM_FRAME_HDR_SIZE, n);
            text[n] = 0;
            for (int i = 0; i < gw.nlinks; i++)
                if (gw.links[i].nstreams && gw.links[i].st[0].fd >= 0)
                    gw_link_control(&gw.links[i], 0, ISM_F_ABORT, h.a, 0, text);
            gw_flush_links(ism_now_ms() + 2000);
            ism_frame_hdr ack;
            ism_frame_init(&ack, ISM_F_ABORT_ACK);
            ack.dst = h.src;
            uint8_t abuf[ISM_FRAME_HDR_SIZE];
            ism_frame_encode(&ack, abuf);
            gw.be->send(abuf, ISM_FRAME_HDR_SIZE, gw.be->dt[ISM_KIND_BYTE], app_vrank, ISM_TAG_GW2APP,
                        gw.vgw);
            struct timespec ts = {0, 200 * 1000 * 1000};
            nanosleep(&ts, NULL);
            gw_trace_stop();
            gw.be->abort(gw.vworld, (int)h.a ? (int)h.a : 1);
            _exit(1);
        } else {
            gw_die(1, "unexpected %s frame from vendor rank %d", ism_frame_type_name(h.type),
                   app_vrank);
        }
        gw_buf_put(b);
        return;
    }
    if (h.dst >= gw.lay.site_off[gw.lay.nsites] || (h.dst >= gw.lay.site_off[gw.lay.site] &&
                                             h.dst < gw.lay.site_off[gw.lay.site + 1]))
        gw_die(1, "vendor rank %d sent a frame for rank %d, which is not at another site",
               app_vrank, h.dst);
    gw_link *l = gw_link_for(h.dst);
    if (gw_tracing)
        gw_trace_app(l, &h, 0);
    if (h.type == ISM_F_EAGER || h.type == ISM_F_RTS)
        l->tx_msgs++;
    else if (h.type == ISM_F_DATA && (h.flags & ISM_FRAME_FLAG_EARLY))
        l->tx_early += h.len;
    b->flow = gw.flow_first && (h.type == ISM_F_CTS || h.type == ISM_F_CREDIT);
    ism_frame_encode(&h, (uint8_t *)b->data);
    if (b->pooled == GW_POOL_TX && b->len <= GW_COPY_MAX && gw.copies < GW_COPIES) {
        gw_buf *c = gw_buf_small(b->len); /* the pool buffer goes back to take the next one */
        memcpy(c->data, b->data, b->len);
        c->flow = b->flow;
        c->pooled = GW_POOL_COPY;
        gw.copies++;
        gw_buf_put(b);
        b = c;
    }
    gw.held_bytes += b->len;
    if (gw.held_bytes > gw.peak_bytes)
        gw.peak_bytes = gw.held_bytes;
    gw_link_send(l, b);
    gw_link_pump(l);
}

static int service_apps(void)
{
    int work = 0;
    ism_rxring *r = &gw.from_apps;
    if (!r->slot && ism_rxring_init(r, gw.be, gw.vgw, ISM_TAG_APP2GW, GW_SLOTS))
        gw_die(1, "out of memory for the receives from the app ranks");
    while (!ism_rxring_full(r)) {
        gw_buf *b = gw_buf_get(GW_POOL_TX);
        if (!b)
            break;
        if (ism_rxring_post(r, b, b->data, gw.bufsize))
            gw_die(1, "cannot post a receive for the app ranks");
    }
    ism_vstatus st;
    gw_buf *b;
    while ((b = ism_rxring_take(r, &st))) {
        app_frame(b, st.bytes, st.source);
        work++;
    }
    return work + reap_deliveries();
}

static int finished(void)
{
    if (gw.apps_fin < gw.apps_mine)
        return 0;
    for (int i = 0; i < gw.nlinks; i++) {
        gw_link *l = &gw.links[i];
        if (!l->fin_sent) {
            gw_buf *b = gw_buf_small(ISM_FRAME_HDR_SIZE);
            ism_frame_hdr h;
            ism_frame_init(&h, ISM_F_FIN);
            h.src = h.dst = -1;
            ism_frame_encode(&h, (uint8_t *)b->data);
            gw_link_send(l, b);
            l->fin_sent = 1;
        }
    }
    /* done when every peer has said FIN, has acknowledged everything we sent (our FIN
     * included), and has been told that we have everything it sent */
    for (int i = 0; i < gw.nlinks; i++) {
        gw_link *l = &gw.links[i];
        if (l->closed)
            continue;
        if (!l->fin_recv || l->state != GW_LINK_UP || !gw_link_idle(l))
            return 0;
        if (l->ack_sent != l->rx_next) {
            gw_link_control(l, 0, ISM_F_ACK, 0, 0, NULL);
            return 0;
        }
    }
    return 1;
}

/* A stream that stopped for want of a receive buffer: only its header is read. */
static int waiting_for_buffer(const gw_stream *s)
{
    return s->rx_have >= ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE && !s->rxbuf && !s->rx_discard;
}

#define GW_AUTH_FAILS_REPORT 3

static void stream_failed(gw_link *l, gw_stream *s, int e)
{
    if (l->fin_sent && l->fin_recv) {
        /* at the end the peer closes its streams once it has everything; its last
         * acknowledgement may still wait, unread, on another stream */
        for (int j = 0; j < l->nstreams; j++)
            if (l->st[j].fd >= 0 && &l->st[j] != s)
                gw_stream_read(l, &l->st[j]);
    }
    char why[400], text[300];
    snprintf(why, sizeof why, "stream %d: %s", (int)(s - l->st),
             gw.xp->error(s, e, text, sizeof text));
    if (e == EBADMSG) {
        /* a record that failed authentication: one may be damage; a run of them with
         * nothing good in between is someone on the path, said with its address */
        if (l->rx_frames == l->auth_fail_rx)
            l->auth_fails_in_row++;
        else
            l->auth_fails_in_row = 1;
        l->auth_fail_rx = l->rx_frames;
        if (l->auth_fails_in_row == GW_AUTH_FAILS_REPORT) {
            char peer[80];
            ism_sock_peer_name(s->fd, peer, sizeof peer);
            gw_log("link to site %s gateway %d: %d connections in a row failed on records "
                   "that did not authenticate, from %s: the path damages or forges what it "
                   "carries (every one was dropped, never used; the data is sent again)",
                   gw.lay.site_names[l->site], l->gw, l->auth_fails_in_row, peer);
        }
    }
    gw_link_down(l, why);
}

/* testing aid: ISTHMUS_GW_FAULT_AFTER=N breaks every link once, after N frames went out */
static void maybe_inject_fault(void)
{
    static int done;
    if (!gw.fault_after || done)
        return;
    uint64_t sent = 0;
    int in_flight = 0;
    for (int i = 0; i < gw.nlinks; i++) {
        sent += gw.links[i].tx_frames;
        in_flight |= gw.links[i].unacked != NULL;
    }
    if (sent < (uint64_t)gw.fault_after || !in_flight)
        return; /* break while frames are unacknowledged, so the resume has work to do */
    done = 1;
    for (int i = 0; i < gw.nlinks; i++)
        if (gw.links[i].state != GW_LINK_DOWN)
            gw_link_down(&gw.links[i], "fault injected by ISTHMUS_GW_FAULT_AFTER");
}

void gw_loop(void)
{
    struct pollfd *pf = NULL;
    gw_stream **who = NULL;
    gw_link **whol = NULL;
    int cap = 0;
    unsigned idle = 0;
    int64_t idle_since = ism_now_ms();
    for (;;) {
        int work = service_apps();
        if (finished())
            break;
        int64_t now = ism_now_ms();
        gw_links_redial(now);
        maybe_inject_fault();
        int n = 0, need = 1 + gw_setup_count(), backlog = 0;
        int64_t xp_us = -1; /* the soonest any stream's transport needs service */
        for (int i = 0; i < gw.nlinks; i++)
            need += gw.links[i].nstreams;
        if (need > cap) {
            cap = need;
            pf = realloc(pf, sizeof *pf * (size_t)cap);
            who = realloc(who, sizeof *who * (size_t)cap);
            whol = realloc(whol, sizeof *whol * (size_t)cap);
            if (!pf || !who || !whol)
                gw_die(1, "out of memory for the poll set");
        }
        for (int i = 0; i < gw.nlinks; i++) {
            gw_link *l = &gw.links[i];
            work |= gw_link_pump(l);
            gw_link_tick(l, now);
            gw_paths_tick(l, now);
            for (int j = 0; j < l->nstreams; j++) {
                gw_stream *s = &l->st[j];
                if (s->fd < 0)
                    continue;
                if (waiting_for_buffer(s) && gw.free_rx > 0 && l->state != GW_LINK_DOWN) {
                    int rc = gw_stream_read(l, s);
                    if (rc < 0) {
                        if (s->fd >= 0)
                            stream_failed(l, s, errno);
                        break;
                    }
                    work |= rc;
                }
                if (s->fd < 0)
                    continue;
                /* a link still being (re)built reads nothing: its peer may already
                 * speak on a stream (RESUME) while our other streams are still being
                 * set up, and those bytes wait in the socket until the link is started */
                int want_read = !waiting_for_buffer(s) && l->state != GW_LINK_DOWN;
                int want_write =
                    s->cur || s->ctlq || (l->state == GW_LINK_UP && l->sendq);
                pf[n].fd = s->fd;
                pf[n].events = gw.xp->events(s, want_read, want_write);
                pf[n].revents = 0;
                int64_t t = gw.xp->timer_us(s, want_read, want_write);
                if (t >= 0 && (xp_us < 0 || t < xp_us))
                    xp_us = t;
                backlog |= want_write;
                who[n] = s;
                whol[n] = l;
                n++;
            }
        }
        if (gw_tracing)
            gw_trace_tick(now);
        int nlinkfd = n;
        if (gw.listen_fd >= 0) {
            pf[n].fd = gw.listen_fd;
            pf[n].events = POLLIN;
            pf[n].revents = 0;
            who[n] = NULL;
            n++;
        }
        int setup_at = n;
        n += gw_setup_poll(pf + n, now, &xp_us);
        struct timespec ts = {0, 0};
        if (work) {
            idle = 0;
            idle_since = now;
        } else if (backlog || ++idle > 64) {
            /* naps grow to ISTHMUS_GW_IDLE_US; after 50 ms without work, to the deeper
             * ISTHMUS_GW_IDLE_DEEP_US (sockets still wake us at once; only frames from
             * local apps wait for the nap to end), and never past a transport's timer */
            long us = backlog ? gw.idle_max_us : (long)(idle - 64) * 10;
            long cap = now - idle_since > 50 ? gw.idle_deep_us : gw.idle_max_us;
            if (us > cap)
                us = cap;
            if (xp_us >= 0 && xp_us < us)
                us = (long)xp_us;
            ts.tv_sec = us / 1000000;
            ts.tv_nsec = (us % 1000000) * 1000;
        } else {
            sched_yield();
        }
        int r = ppoll(pf, (nfds_t)n, &ts, NULL);
        if (r < 0 && errno != EINTR)
            gw_die(1, "ppoll failed: %s", strerror(errno));
        for (int k = 0; k < nlinkfd; k++) {
            short ev = r > 0 ? pf[k].revents : 0;
            gw_stream *s = who[k];
            gw_link *l = whol[k];
            if (s->fd != pf[k].fd)
                continue; /* closed by an earlier event of this round */
            int what = gw.xp->service(s, ev);
            if (l->state == GW_LINK_DOWN) {
                /* not started: read nothing yet, but a stream that broke meanwhile (it
                 * would wake ppoll at once, again and again) ends the attempt */
                if (ev & (POLLHUP | POLLERR))
                    stream_failed(l, s, ECONNRESET);
                what &= ~GW_XP_READ;
            }
            if (what & GW_XP_READ) {
                int rc = gw_stream_read(l, s);
                if (rc < 0) {
                    if (s->fd >= 0)
                        stream_failed(l, s, errno);
                    continue;
                }
                if (rc > 1)
                    idle = 0;
            }
            if (s->fd >= 0 && (what & GW_XP_WRITE))
                gw_link_pump(l);
        }
        /* connections being set up, then new ones: neither ever blocks this loop */
        if (r <= 0)
            for (int k = setup_at; k < n; k++)
                pf[k].revents = 0;
        gw_setup_service(pf + setup_at, n - setup_at, ism_now_ms());
        if (setup_at > nlinkfd && r > 0 && pf[nlinkfd].revents)
            gw_setup_accept(gw.listen_fd, ism_now_ms());
    }
    free(pf);
    free(who);
    free(whol);
}

static void put_buf(void *b) { gw_buf_put(b); }

/* Withdraw the receives still posted for the app ranks, so the vendor finalizes clean. */
void gw_cancel_receives(void)
{
    ism_rxring_cancel_all(&gw.from_apps, put_buf);
    /* a delivery to an app that finalized without receiving it never completes */
    int64_t until = ism_now_ms() + 2000;
    while (gw.npend > 0 && ism_now_ms() < until)
        if (!reap_deliveries())
            sched_yield();
}
