/* links.c: the connections behind the gateway's links to the gateways of other sites.
 *
 * Every gateway links to every gateway of every other site. A link is `nstreams`
 * streams of the job's transport (xport.h: TCP connections, or one reliable-UDP
 * connection); the gateway with the smaller (site, gateway) pair dials them, the other
 * accepts, so start-up ordering cannot deadlock (a site that may only dial out dials all
 * its links; paths.c). Each stream is authenticated (wan/auth)
 * before anything is read from it, then says which link, stream and attempt (epoch) it
 * belongs to in a HELLO. When a stream fails (closed, reset, silent for
 * ISTHMUS_LINK_DEAD_MS, or a CRC error) the whole link goes down: the dialing side dials
 * again until the link is back or ISTHMUS_LINK_OUTAGE seconds have passed, after which the
 * job aborts with a message naming the site. The session layer (session.c) then resumes
 * where the peer's RESUME says. Connections are set up by setup.c from the event loop,
 * without blocking it, so other links and the local ranks keep being served while a
 * peer is unreachable, slow, or a stranger with no secret holds a connection open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "../wan/sock.h"
#include "gateway.h"
#include "query.h"

#define GW_DIAL_RETRY_MS 500

static int *link_base; /* index of (site s, gateway 0) in gw.links */

static const char *sname(int s) { return gw.lay.site_names[s]; }


static gw_link *link_at(int s, int g) { return &gw.links[link_base[s] + g]; }

gw_link *gw_link_for(int dst_global)
{
    int s = 0;
    while (s + 1 < gw.lay.nsites && dst_global >= gw.lay.site_off[s + 1])
        s++;
    int local = dst_global - gw.lay.site_off[s];
    return link_at(s, ism_gw_of_local(local, gw.lay.site_gws[s]));
}

static void streams_alloc(gw_link *l, int n)
{
    free(l->st);
    l->nstreams = n;
    l->st = calloc((size_t)n, sizeof *l->st);
    if (!l->st)
        gw_die(1, "out of memory for %d streams", n);
    for (int i = 0; i < n; i++)
        l->st[i].fd = -1;
}

const gw_xport *gw_xport_find(const char *name)
{
    if (strcmp(name, gw_xport_tcp.name) == 0)
        return &gw_xport_tcp;
    if (strcmp(name, gw_xport_udp.name) == 0)
        return &gw_xport_udp;
    return NULL;
}

void gw_stream_close_fd(gw_stream *s)
{
    if (s->fd >= 0)
        gw.xp->close(s);
}

void gw_stream_close(gw_stream *s)
{
    gw_stream_close_fd(s);
    if (s->cur && s->cur->seq == 0)
        gw_buf_put(s->cur); /* numbered frames stay on the link's unacked list */
    s->cur = NULL;
    s->tx_off = 0;
    while (s->ctlq) {
        gw_buf *b = s->ctlq;
        s->ctlq = b->next;
        gw_buf_put(b);
    }
    s->ctlq_tail = NULL;
    if (s->rxbuf) {
        if (s->rxbuf->pooled)
            gw.held_bytes -= s->rxbuf->len;
        gw_buf_put(s->rxbuf);
    }
    s->rxbuf = NULL;
    s->rx_have = 0;
    s->rx_discard = 0;
}

static void close_streams(gw_link *l)
{
    for (int i = 0; i < l->nstreams; i++)
        gw_stream_close(&l->st[i]);
    l->nconnected = 0;
}

void gw_link_down(gw_link *l, const char *why)
{
    int was = l->state;
    if (l->dialing) { /* a stream of an attempt in progress failed: it starts over */
        gw_setup_cancel(l);
        l->dialing = 0;
    }
    close_streams(l);
    l->state = GW_LINK_DOWN;
    l->resume_recv = 0;
    gw_link_reset_tx(l);
    if (was == GW_LINK_DOWN)
        return; /* a half-built attempt failed; the outage clock keeps running */
    if (l->fin_sent && l->fin_recv && !l->sendq && !l->unacked) {
        l->closed = 1; /* both sides are done: the peer closing is the normal end */
        return;
    }
    gw_link_changed(l, why);
    int64_t now = ism_now_ms();
    l->down_since_ms = now;
    l->next_dial_ms = now;
    l->reconnects++;
    gw_log("link to site %s gateway %d lost (%s); %s for up to %lld s", sname(l->site), l->gw,
           why, l->connector ? "reconnecting" : "waiting for it to reconnect",
           (long long)gw.outage_ms / 1000);
}

void gw_link_started(gw_link *l)
{
    int64_t now = ism_now_ms();
    gw_path_up(l, now);
    for (int i = 0; i < l->nstreams; i++) {
        l->st[i].last_rx_ms = l->st[i].last_tx_ms = now;
        gw.xp->started(&l->st[i]);
    }
    l->state = GW_LINK_RESUMING;
    gw_link_changed(l, "connected");
    gw_link_control(l, 0, ISM_F_RESUME, l->rx_next, 0, NULL);
    if (!l->ever_up) {
        l->ever_up = 1;
        if (gw.stats) {
            char d[400];
            gw.xp->describe(l, d, sizeof d);
            fprintf(stderr, "isthmus stats: site %s gateway %d -> site %s gateway %d: link up: "
                            "%s\n",
                    sname(gw.lay.site), gw.gwidx, sname(l->site), l->gw, d);
        }
    } else {
        gw_log("link to site %s gateway %d restored after %.1f s (%d stream%s)", sname(l->site),
               l->gw, (double)(now - l->down_since_ms) / 1000.0, l->nstreams,
               l->nstreams == 1 ? "" : "s");
    }
}

/* Authentication failures in a row that end the job on a link that has never been up.
 * A wrong secret fails every time and is said after a second; one failure alone may be
 * bytes damaged on the way (a link that corrupts what its checksums do not catch). */
#define GW_AUTH_TRIES 3
#define GW_DIAL_BACKOFF_MIN_MS 20 /* a peer not listening yet is tried again soon */

gw_link *gw_link_of_peer(ism_auth_id peer)
{
    /* unsigned compares: a value from the wire never indexes anything before it is known
     * to be in range */
    if (peer.site >= (uint32_t)gw.lay.nsites || peer.site == (uint32_t)gw.lay.site ||
        peer.gw >= (uint32_t)gw.lay.site_gws[peer.site])
        return NULL;
    return link_at((int)peer.site, (int)peer.gw);
}

/* Start one attempt at (re)building a link we dial: each stream is set up by setup.c
 * from the event loop, and the link is up when the last one is (gw_link_dial_done). */
static void dial_start(gw_link *l, int64_t now)
{
    close_streams(l);
    l->epoch++;
    l->dialing = 1;
    struct sockaddr_in sa;
    char err[300];
    const char *host = gw_path_of(l)->host;
    int port = gw_path_of(l)->port + l->gw;
    if (ism_sock_resolve4(host, port, &sa, err, sizeof err) != 0) {
        char why[400];
        snprintf(why, sizeof why, "cannot connect to %s:%d: %s", host, port, err);
        gw_link_dial_failed(l, l->epoch, 0, why);
        return;
    }
    for (int i = 0; i < l->nstreams; i++)
        gw_setup_dial(l, i, &sa, now);
}

void gw_link_dial_done(gw_link *l, int idx, uint32_t epoch, gw_stream *st)
{
    if (epoch != l->epoch || !l->dialing || l->st[idx].fd >= 0) {
        gw.xp->close(st); /* from an attempt given up since */
        return;
    }
    l->st[idx].fd = st->fd;
    l->st[idx].conn = st->conn;
    if (++l->nconnected < l->nstreams)
        return;
    l->dialing = 0;
    l->auth_failures = 0;
    l->dial_backoff_ms = 0;
    l->dial_err[0] = 0;
    gw_link_started(l);
}

/* A failed authentication is retried like an unreachable peer: on a link that was up
 * before, the secret is known to be right, so until the outage limit (a corrupting or
 * tampering path must not end the job at once); on a new link GW_AUTH_TRIES times. */
void gw_link_dial_failed(gw_link *l, uint32_t epoch, int auth, const char *why)
{
    if (epoch != l->epoch || !l->dialing)
        return;
    gw_setup_cancel(l); /* the attempt's other streams */
    close_streams(l);
    l->dialing = 0;
    if (auth) {
        if (!l->ever_up && ++l->auth_failures >= GW_AUTH_TRIES)
            gw_die(1, "authentication with site %s gateway %d failed %d times in a row: %s",
                   sname(l->site), l->gw, l->auth_failures, why);
        if (l->ever_up)
            gw_log("authentication with site %s gateway %d failed (%s); the link was up "
                   "before, so this is damage or tampering on the path: trying again",
                   sname(l->site), l->gw, why);
    }
    snprintf(l->dial_err, sizeof l->dial_err, "%s%s", why, auth ? " (authentication)" : "");
    int64_t now = ism_now_ms();
    gw_path_failed(l, now);
    l->dial_backoff_ms = l->dial_backoff_ms ? 2 * l->dial_backoff_ms : GW_DIAL_BACKOFF_MIN_MS;
    if (l->dial_backoff_ms > GW_DIAL_RETRY_MS)
        l->dial_backoff_ms = GW_DIAL_RETRY_MS;
    l->next_dial_ms = now + l->dial_backoff_ms;
    if (l->ever_up && now - l->last_dial_log_ms >= 10000) {
        gw_log("still cannot reach site %s gateway %d: %s", sname(l->site), l->gw, l->dial_err);
        l->last_dial_log_ms = now;
    }
}

void gw_links_redial(int64_t now)
{
    for (int i = 0; i < gw.nlinks; i++) {
        gw_link *l = &gw.links[i];
        if (l->state != GW_LINK_DOWN || l->closed)
            continue;
        int64_t limit = l->ever_up ? gw.outage_ms : gw.connect_timeout_ms;
        if (now - l->down_since_ms > limit) {
            char msg[1024];
            if (l->ever_up)
                snprintf(msg, sizeof msg,
                         "the link to site %s gateway %d has been down for %lld s "
                         "(ISTHMUS_LINK_OUTAGE=%lld): giving up",
                         sname(l->site), l->gw, (long long)(now - l->down_since_ms) / 1000,
                         (long long)gw.outage_ms / 1000);
            else
                snprintf(msg, sizeof msg,
                         "no connection with site %s gateway %d within %lld s (is that site "
                         "running, with the same job secret?)",
                         sname(l->site), l->gw, (long long)gw.connect_timeout_ms / 1000);
            if (l->dial_err[0]) {
                size_t k = strlen(msg);
                snprintf(msg + k, sizeof msg - k, "; the last attempt: %s", l->dial_err);
            }
            gw_abort_job(1, msg);
        }
        if (l->connector && !l->dialing && now >= l->next_dial_ms)
            dial_start(l, now);
    }
}

/* A peer that dialed us authenticated and sent its HELLO: attach the connection to its
 * link as the stream the HELLO names. Anything unexpected is refused and logged, never
 * fatal. */
int gw_link_accepted(ism_auth_id them, const ism_frame_hdr *h, gw_stream *in, const char *peer)
{
    gw_link *l = gw_link_of_peer(them);
    if (!l)
        return -1; /* setup.c checked this before the transport's set-up */
    int n = (int)(h->b & 0xffff), idx = (int)h->a;
    uint32_t epoch = (uint32_t)(h->b >> 16);
    if (n < 1 || n > gw.xp->max_streams || h->a >= (uint64_t)n || l->closed) {
        gw_log("refused connection from site %s gateway %d: stream %llu of %d%s", sname(l->site),
               l->gw, (unsigned long long)h->a, n,
               l->closed ? " after the link was closed"
               : n > gw.xp->max_streams ? " (more than this transport carries)"
                                        : "");
        return -1;
    }
    if (epoch < l->epoch) { /* from an attempt the peer has given up */
        gw_log("refused connection from site %s gateway %d (%s): stream %llu of attempt %u, "
               "which attempt %u replaced",
               sname(l->site), l->gw, peer, (unsigned long long)h->a, epoch, l->epoch);
        return -1;
    }
    if (n != l->nstreams) {
        if (l->ever_up)
            gw_die(1, "site %s gateway %d reconnected with %d streams instead of %d",
                   sname(l->site), l->gw, n, l->nstreams);
        streams_alloc(l, n); /* the dialing side chooses the number of streams */
    }
    if (epoch > l->epoch) {
        if (l->state != GW_LINK_DOWN)
            gw_link_down(l, "the peer reconnected");
        else
            close_streams(l);
        l->epoch = epoch;
    }
    if (l->st[idx].fd >= 0) {
        gw_log("refused connection from site %s gateway %d (%s): stream %d is already connected",
               sname(l->site), l->gw, peer, idx);
        return -1;
    }
    l->st[idx].fd = in->fd;
    l->st[idx].conn = in->conn;
    if (++l->nconnected == l->nstreams)
        gw_link_started(l);
    return 0;
}

/* Wait (at most max_us) for any connected stream to need service, and service it: how
 * flushing at an abort and finishing at the end make progress without the event loop.
 * Streams with frames queued ask to be written. */
void gw_streams_wait(int64_t max_us)
{
    static struct pollfd *pf;
    static gw_stream **who;
    static int cap;
    int need = 0;
    for (int i = 0; i < gw.nlinks; i++)
        need += gw.links[i].nstreams;
    if (need > cap) {
        struct pollfd *p2 = realloc(pf, sizeof *pf * (size_t)need);
        if (p2)
            pf = p2;
        gw_stream **w2 = realloc(who, sizeof *who * (size_t)need);
        if (w2)
            who = w2;
        if (!p2 || !w2) {
            /* no memory (this also runs while aborting): nap; the caller's deadline ends it */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            return;
        }
        cap = need;
    }
    int n = 0;
    int64_t us = max_us;
    for (int i = 0; i < gw.nlinks; i++)
        for (int j = 0; j < gw.links[i].nstreams; j++) {
            gw_stream *s = &gw.links[i].st[j];
            if (s->fd < 0)
                continue;
            int w = s->cur != NULL || s->ctlq != NULL;
            pf[n] = (struct pollfd){s->fd, gw.xp->events(s, 0, w), 0};
            int64_t t = gw.xp->timer_us(s, 0, w);
            if (t >= 0 && t < us)
                us = t;
            who[n++] = s;
        }
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    int r = ppoll(pf, (nfds_t)n, &ts, NULL);
    for (int k = 0; k < n; k++)
        gw.xp->service(who[k], r > 0 ? pf[k].revents : 0);
}

void gw_links_finish(int64_t deadline_ms)
{
    for (;;) {
        int busy = 0;
        for (int i = 0; i < gw.nlinks; i++)
            for (int j = 0; j < gw.links[i].nstreams; j++)
                if (gw.links[i].st[j].fd >= 0 && !gw.xp->finish(&gw.links[i].st[j]))
                    busy = 1;
        if (!busy || ism_now_ms() >= deadline_ms)
            return;
        gw_streams_wait(10000);
    }
}

void gw_links_connect(void)
{
    char err[512];
    gw.listen_fd = -1;
    link_base = calloc((size_t)gw.lay.nsites, sizeof(int));
    for (int s = 0; s < gw.lay.nsites; s++) {
        link_base[s] = gw.nlinks;
        if (s != gw.lay.site)
            gw.nlinks += gw.lay.site_gws[s];
        else
            link_base[s] = -1000000;
    }
    gw.links = calloc((size_t)gw.nlinks + 1, sizeof(gw_link));
    int64_t now = ism_now_ms();
    for (int s = 0; s < gw.lay.nsites; s++)
        for (int g = 0; s != gw.lay.site && g < gw.lay.site_gws[s]; g++) {
            gw_link *l = link_at(s, g);
            l->site = s;
            l->gw = g;
            l->connector = gw_paths_dials(gw.lay.site, gw.gwidx, s, g);
            l->state = GW_LINK_DOWN;
            l->down_since_ms = now;
            l->next_dial_ms = now;
            l->tx_next = l->rx_next = l->ack_sent = l->peer_ack = 1;
            streams_alloc(l, gw.streams);
        }
    if (gw.lay.nsites < 2 || gw.site_dialout[gw.lay.site])
        return; /* a site that only dials out listens for nothing */
    const char *bind_host = getenv("ISTHMUS_GATEWAY_BIND");
    /* with several paths to this site, every one of its addresses must answer */
    const char *host = bind_host && *bind_host          ? bind_host
                       : gw.site_npaths[gw.lay.site] > 1 ? "0.0.0.0"
                                                        : gw.site_paths[gw.lay.site][0].host;
    gw.listen_fd = ism_sock_listen(host, gw.site_paths[gw.lay.site][0].port + gw.gwidx, 128, err,
                                   sizeof err);
    if (gw.listen_fd < 0)
        gw_die(2, "%s", err);
    if (gw.xp->listener(gw.listen_fd, err, sizeof err))
        gw_die(2, "%s", err);
    ism_sock_set_nonblock(gw.listen_fd, 1);
}
