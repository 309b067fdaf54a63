/* links.c: the gateway's TCP links to the gateways of other sites.
 *
 * Every gateway links to every gateway of every other site; the one with the smaller
 * (site, gateway) pair connects, the other accepts, so start-up ordering cannot
 * deadlock. Each link is authenticated (wan/auth) before any frame is read from it, and
 * the listening socket stays open so that a later intruder is authenticated, refused and
 * logged without disturbing the job. Frames are written from a queue with partial-write
 * bookkeeping and read header-first into pool buffers, validated before use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../wan/sock.h"
#include "gateway.h"

static int *link_base; /* index of (site s, gateway 0) in gw.links */

static int before(int s1, int g1, int s2, int g2) { return s1 < s2 || (s1 == s2 && g1 < g2); }

static gw_link *link_at(int s, int g) { return &gw.links[link_base[s] + g]; }

gw_link *gw_link_for(int dst_global)
{
    int s = 0;
    while (s + 1 < gw.nsites && dst_global >= gw.site_off[s + 1])
        s++;
    int local = dst_global - gw.site_off[s];
    return link_at(s, local % gw.site_gws[s]);
}

static void link_ready(gw_link *l, int fd)
{
    ism_sock_set_nonblock(fd, 1);
    ism_sock_set_nodelay(fd, 1);
    l->fd = fd;
    l->up = 1;
    l->last_rx_ms = l->last_tx_ms = ism_now_ms();
}

/* Authenticate one incoming connection; returns the link it belongs to, or NULL. */
static gw_link *accept_one(int64_t deadline)
{
    char err[512], peer[128];
    int fd = accept(gw.listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    ism_sock_peer_name(fd, peer, sizeof peer);
    int64_t left = deadline - ism_now_ms();
    ism_auth_id self = {(uint32_t)gw.site, (uint32_t)gw.gwidx}, them;
    int rc = ism_auth_server(fd, &gw.key, self, &them, (int)(left < 2000 ? 2000 : left > 10000 ? 10000 : left),
                             err, sizeof err);
    if (rc) {
        gw_log("refused connection from %s: %s", peer, err);
        close(fd);
        return NULL;
    }
    if ((int)them.site >= gw.nsites || (int)them.site == gw.site ||
        (int)them.gw >= gw.site_gws[them.site] ||
        !before((int)them.site, (int)them.gw, gw.site, gw.gwidx) ||
        link_at((int)them.site, (int)them.gw)->up) {
        gw_log("refused connection from %s: it authenticated as site %u gateway %u, which is "
               "not expected to connect here (duplicate or unknown peer)",
               peer, them.site, them.gw);
        close(fd);
        return NULL;
    }
    gw_link *l = link_at((int)them.site, (int)them.gw);
    link_ready(l, fd);
    return l;
}

void gw_links_connect(void)
{
    char err[512];
    gw.listen_fd = -1;
    link_base = calloc((size_t)gw.nsites, sizeof(int));
    for (int s = 0; s < gw.nsites; s++) {
        link_base[s] = gw.nlinks;
        if (s != gw.site)
            gw.nlinks += gw.site_gws[s];
        else
            link_base[s] = -1000000;
    }
    gw.links = calloc((size_t)gw.nlinks + 1, sizeof(gw_link));
    for (int s = 0; s < gw.nsites; s++)
        for (int g = 0; s != gw.site && g < gw.site_gws[s]; g++) {
            gw_link *l = link_at(s, g);
            l->fd = -1;
            l->site = s;
            l->gw = g;
        }
    if (gw.nsites < 2)
        return;
    const char *bind_host = getenv("ISTHMUS_GATEWAY_BIND");
    gw.listen_fd = ism_sock_listen(bind_host && *bind_host ? bind_host : gw.site_hosts[gw.site],
                                   gw.site_ports[gw.site] + gw.gwidx, 64, err, sizeof err);
    if (gw.listen_fd < 0)
        gw_die(2, "%s", err);
    int64_t deadline = ism_now_ms() + gw.connect_timeout_ms;
    ism_auth_id self = {(uint32_t)gw.site, (uint32_t)gw.gwidx};
    for (int i = 0; i < gw.nlinks; i++) {
        gw_link *l = &gw.links[i];
        if (!before(gw.site, gw.gwidx, l->site, l->gw))
            continue;
        int64_t left = deadline - ism_now_ms();
        int fd = ism_sock_connect(gw.site_hosts[l->site], gw.site_ports[l->site] + l->gw,
                                  (int)(left > 0 ? left : 1), err, sizeof err);
        if (fd < 0)
            gw_die(1, "cannot reach site %s gateway %d at %s:%d within %lld s: %s",
                   gw.site_names[l->site], l->gw, gw.site_hosts[l->site],
                   gw.site_ports[l->site] + l->gw, (long long)gw.connect_timeout_ms / 1000, err);
        ism_auth_id them;
        left = deadline - ism_now_ms();
        int rc = ism_auth_client(fd, &gw.key, self, &them, (int)(left > 1000 ? left : 1000), err,
                                 sizeof err);
        if (rc || (int)them.site != l->site || (int)them.gw != l->gw)
            gw_die(1, "authentication with site %s gateway %d failed: %s",
                   gw.site_names[l->site], l->gw,
                   rc ? err : "the peer answered with another identity");
        link_ready(l, fd);
    }
    for (;;) {
        int missing = 0;
        for (int i = 0; i < gw.nlinks; i++)
            missing += !gw.links[i].up;
        if (!missing)
            break;
        int64_t left = deadline - ism_now_ms();
        if (left <= 0) {
            char who[512] = "";
            for (int i = 0; i < gw.nlinks; i++)
                if (!gw.links[i].up) {
                    size_t u = strlen(who);
                    snprintf(who + u, sizeof who - u, "%ssite %s gateway %d", u ? ", " : "",
                             gw.site_names[gw.links[i].site], gw.links[i].gw);
                }
            gw_die(1, "no connection from %s within %lld s (is that site running, with the "
                      "same job secret?)",
                   who, (long long)gw.connect_timeout_ms / 1000);
        }
        struct pollfd p = {gw.listen_fd, POLLIN, 0};
        if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) > 0)
            accept_one(deadline);
    }
    ism_sock_set_nonblock(gw.listen_fd, 1);
}

void gw_accept_intruder(void)
{
    /* Every expected peer is connected: anything new is authenticated and refused. */
    gw_link *l = accept_one(ism_now_ms() + 2000);
    if (l)
        gw_die(1, "site %s gateway %d connected twice", gw.site_names[l->site], l->gw);
}

void gw_link_send(gw_link *l, gw_buf *b)
{
    b->next = NULL;
    if (l->txq_tail)
        l->txq_tail->next = b;
    else
        l->txq = b;
    l->txq_tail = b;
}

void gw_link_control(gw_link *l, int type, uint64_t a, const char *text)
{
    size_t tl = text ? strlen(text) : 0;
    gw_buf *b = gw_buf_small(ISM_FRAME_HDR_SIZE + tl);
    ism_frame_hdr h;
    ism_frame_init(&h, type);
    h.src = -1;
    h.dst = -1;
    h.a = a;
    h.len = (uint32_t)tl;
    ism_frame_encode(&h, (uint8_t *)b->data);
    if (tl)
        memcpy(b->data + ISM_FRAME_HDR_SIZE, text, tl);
    gw_link_send(l, b);
}

/* Write as much of the queue as the socket takes. Returns bytes written or -1. */
int gw_link_write(gw_link *l)
{
    int wrote = 0;
    while (l->txq) {
        struct iovec iov[16];
        int n = 0;
        size_t off = l->tx_off;
        for (gw_buf *b = l->txq; b && n < 16; b = b->next, off = 0) {
            iov[n].iov_base = b->data + off;
            iov[n].iov_len = b->len - off;
            n++;
        }
        ssize_t k = writev(l->fd, iov, n);
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return wrote;
            return -1;
        }
        wrote += (int)k;
        l->tx_bytes += (uint64_t)k;
        l->last_tx_ms = ism_now_ms();
        size_t left = (size_t)k;
        while (left && l->txq) {
            gw_buf *b = l->txq;
            size_t rem = b->len - l->tx_off;
            if (left < rem) {
                l->tx_off += left;
                left = 0;
                break;
            }
            left -= rem;
            l->tx_off = 0;
            l->txq = b->next;
            if (!l->txq)
                l->txq_tail = NULL;
            l->tx_frames++;
            if (b->pooled)
                gw.held_bytes -= b->len;
            gw_buf_put(b);
        }
    }
    return wrote;
}

/* Read what the socket has. Returns >0 progress, 0 nothing, -1 closed or failed. A frame
 * whose header fails validation ends the job: the peer is authenticated, so garbage means
 * a bug or corruption, and guessing would lose or corrupt messages. */
int gw_link_read(gw_link *l)
{
    int progress = 0;
    for (;;) {
        if (l->rx_have < ISM_FRAME_HDR_SIZE) {
            ssize_t k = read(l->fd, l->rxhdr + l->rx_have, ISM_FRAME_HDR_SIZE - l->rx_have);
            if (k == 0)
                return -1;
            if (k < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? progress : -1;
            l->rx_have += (size_t)k;
            l->rx_bytes += (uint64_t)k;
            l->last_rx_ms = ism_now_ms();
            progress = 1;
            if (l->rx_have < ISM_FRAME_HDR_SIZE)
                continue;
            int rc = ism_frame_decode(l->rxhdr, ISM_FRAME_HDR_SIZE, &l->rxh);
            if (rc || ISM_FRAME_HDR_SIZE + (size_t)l->rxh.len > gw.bufsize)
                gw_die(1, "protocol error on the link from site %s gateway %d: %s",
                       gw.site_names[l->site], l->gw,
                       rc ? ism_frame_strerror(rc) : "frame larger than the chunk size");
        }
        if (!l->rxbuf) {
            if (l->rxh.dst < 0) { /* control frames for the gateway itself are small */
                l->rxbuf = gw_buf_small(ISM_FRAME_HDR_SIZE + l->rxh.len);
            } else {
                l->rxbuf = gw_buf_get();
                if (!l->rxbuf)
                    return progress; /* pool empty: resume when buffers return */
                gw.held_bytes += ISM_FRAME_HDR_SIZE + l->rxh.len;
                if (gw.held_bytes > gw.peak_bytes)
                    gw.peak_bytes = gw.held_bytes;
            }
            memcpy(l->rxbuf->data, l->rxhdr, ISM_FRAME_HDR_SIZE);
            l->rxbuf->len = ISM_FRAME_HDR_SIZE + l->rxh.len;
        }
        size_t want = l->rxbuf->len;
        while (l->rx_have < want) {
            ssize_t k = read(l->fd, l->rxbuf->data + l->rx_have, want - l->rx_have);
            if (k == 0)
                return -1;
            if (k < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? progress : -1;
            l->rx_have += (size_t)k;
            l->rx_bytes += (uint64_t)k;
            l->last_rx_ms = ism_now_ms();
            progress = 1;
        }
        gw_buf *b = l->rxbuf;
        l->rxbuf = NULL;
        l->rx_have = 0;
        l->rx_frames++;
        gw_route_from_link(l, b);
        if (!l->up)
            return -1;
    }
}

/* Push out every queued frame, up to a deadline (used when aborting). */
int gw_flush_links(int64_t deadline_ms)
{
    for (;;) {
        int pending = 0;
        for (int i = 0; i < gw.nlinks; i++) {
            gw_link *l = &gw.links[i];
            if (l->fd < 0 || !l->txq)
                continue;
            if (gw_link_write(l) < 0) {
                close(l->fd);
                l->fd = -1;
                continue;
            }
            pending += l->txq != NULL;
        }
        if (!pending || ism_now_ms() >= deadline_ms)
            return pending;
        poll(NULL, 0, 1);
    }
}
