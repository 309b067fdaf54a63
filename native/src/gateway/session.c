/* session.c: the reliable, ordered frame stream a gateway link offers on top of its
 * streams (TCP connections, or one reliable-UDP connection: xport.h).
 *
 * Frames bound for a peer gateway are numbered (seq 1, 2, ...) and queued on the link.
 * Each stream of the link writes one frame at a time, taking the next one when it has
 * finished the last, so frames spread over the streams in proportion to what each
 * stream's socket takes (no stream waits for a slow one to take its share). A written
 * frame stays in the link's `unacked` list, in its pool buffer, until the peer's
 * cumulative acknowledgement covers it; every link header carries the sender's
 * acknowledgement, and an explicit ACK goes out when no frame has carried it for a
 * few milliseconds. The receiver delivers frames in sequence order, parks frames that
 * overtook a slower stream, and drops duplicates. After a reconnect each side sends
 * RESUME with the next frame it expects, and the other side sends again exactly the
 * frames from there: nothing is lost or delivered twice.
 *
 * Unnumbered control frames (seq 0: ping/pong heartbeats, ACK, RESUME) go on one stream
 * ahead of its next data frame and are handled as soon as they are read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../common/le.h"
#include "../wan/sock.h"
#include "gateway.h"
#include "query.h"
#include "trace.h"

#define GW_HEARTBEAT_MS 500   /* an idle stream sends a PING this often */
#define GW_ACK_EVERY 8        /* acknowledge at once after this many frames */
#define GW_ACK_DELAY_MS 2     /* otherwise within this time */
#define GW_MAX_AHEAD (1u << 22) /* a frame this far ahead of the next expected is a bug */
#define GW_CONTROL_MAX 4096   /* largest unnumbered control frame */

static const char *sname(int s) { return gw.lay.site_names[s]; }

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void buf_free(gw_buf *b)
{
    if (b->pooled)
        gw.held_bytes -= b->len;
    gw_buf_put(b);
}

/* ---- sending ---- */

static void drop_acked(gw_link *l);

/* Frames queued (again) that the peer already has, below `next`, go back to the pool. */
static void drop_queued_below(gw_link *l, uint64_t next)
{
    while (l->sendq && l->sendq->seq < next) {
        gw_buf *b = l->sendq;
        l->sendq = b->next;
        if (!l->sendq)
            l->sendq_tail = NULL;
        buf_free(b);
    }
}

/* Queue a numbered frame. A flow-control frame (b->flow: a receiver's CTS or CREDIT, which
 * lets a sender at the peer's site go on) goes ahead of the data frames still queued,
 * behind only the frames written before a reconnect (their numbers are the peer's already)
 * and other flow-control frames, and takes the number of the first frame it passes, which
 * move up by one: numbers stay in queue order, and none was on the wire. Why: when both
 * sites stream at once, a credit queued behind this side's data waited for all of it to
 * cross the link, so the other side's sender ran out of window (docs/design.md, "The
 * gateway"). Passing data never breaks MPI's order: CTS and CREDIT only address a pending
 * send by its request id, and message frames (EAGER, RTS) never pass each other. */
void gw_link_send(gw_link *l, gw_buf *b)
{
    b->next = NULL;
    gw_buf **at = &l->sendq;
    if (b->flow)
        while (*at && ((*at)->seq <= l->resend_upto || (*at)->flow))
            at = &(*at)->next;
    if (!b->flow || !*at) {
        b->seq = l->tx_next++;
        if (l->sendq_tail)
            l->sendq_tail->next = b;
        else
            l->sendq = b;
        l->sendq_tail = b;
        return;
    }
    b->seq = (*at)->seq;
    for (gw_buf *q = *at; q; q = q->next)
        q->seq++;
    l->tx_next++;
    l->flow_passed++;
    b->next = *at;
    *at = b;
}

void gw_link_control(gw_link *l, int si, int type, uint64_t a, uint64_t b, const char *text)
{
    gw_stream *s = &l->st[si];
    if (s->fd < 0)
        return;
    size_t tl = text ? strlen(text) : 0;
    if (tl > GW_CONTROL_MAX - ISM_FRAME_HDR_SIZE)
        tl = GW_CONTROL_MAX - ISM_FRAME_HDR_SIZE;
    gw_buf *f = gw_buf_small(ISM_FRAME_HDR_SIZE + tl);
    ism_frame_hdr h;
    ism_frame_init(&h, type);
    h.src = -1;
    h.dst = -1;
    h.a = a;
    h.b = b;
    h.len = (uint32_t)tl;
    ism_frame_encode(&h, (uint8_t *)f->data);
    if (tl)
        memcpy(f->data + ISM_FRAME_HDR_SIZE, text, tl);
    f->seq = 0;
    f->next = NULL;
    if (s->ctlq_tail)
        s->ctlq_tail->next = f;
    else
        s->ctlq = f;
    s->ctlq_tail = f;
}

/* Whether a control frame waits, not yet started, at the head of one of the link's
 * streams. It will carry the acknowledgement when it starts (start_frame), so an ACK frame
 * queued now would say nothing more: the receive path used to queue one for every frame
 * read past GW_ACK_EVERY in one batch, 18-41 ACK frames at once, each taking bytes and a
 * segment of a connection whose window is small (bench/notebook/whatif.md, run 7). */
static int control_waiting(const gw_link *l)
{
    for (int i = 0; i < l->nstreams; i++)
        if (l->st[i].ctlq != NULL && l->st[i].ctlq->seq == 0)
            return 1;
    return 0;
}

static void start_frame(gw_link *l, gw_stream *s, gw_buf *b)
{
    ism_link_hdr h = {.flags = gw.crc ? ISM_LINK_FLAG_CRC : 0, .crc = 0, .hcrc = 0,
                      .seq = b->seq, .ack = l->rx_next};
    ism_link_hdr_encode(&h, s->lhdr);
    if (gw.crc) { /* the headers' own CRC first: the whole frame's covers it */
        h.hcrc = ism_link_hdr_crc(s->lhdr, b->data, ISM_FRAME_HDR_SIZE);
        ism_link_hdr_encode(&h, s->lhdr);
        h.crc = ism_link_crc(s->lhdr, b->data, b->len);
        ism_link_hdr_encode(&h, s->lhdr);
    }
    s->cur = b;
    s->tx_off = 0;
    l->ack_sent = l->rx_next;
    l->last_ack_ms = ism_now_ms();
}

/* Give the stream its next frame: control first, then the next numbered frame (only once
 * the link is up: before the peer's RESUME we do not know where to start). */
static int take_frame(gw_link *l, gw_stream *s)
{
    if (s->ctlq) {
        gw_buf *b = s->ctlq;
        s->ctlq = b->next;
        if (!s->ctlq)
            s->ctlq_tail = NULL;
        b->next = NULL;
        start_frame(l, s, b);
        return 1;
    }
    if (l->state != GW_LINK_UP)
        return 0;
    drop_queued_below(l, l->peer_ack); /* acknowledged after we queued them again (drop_acked) */
    if (!l->sendq)
        return 0;
    gw_buf *b = l->sendq;
    l->sendq = b->next;
    if (!l->sendq)
        l->sendq_tail = NULL;
    b->next = NULL;
    if (l->unacked_tail)
        l->unacked_tail->next = b;
    else
        l->unacked = b;
    l->unacked_tail = b;
    if (b->seq < l->peer_ack)
        gw_die(1, "internal error: frame %llu to site %s was acknowledged before it was sent",
               (unsigned long long)b->seq, sname(l->site));
    start_frame(l, s, b);
    return 1;
}

/* One step of one stream: 1 = a frame went out completely (call again), 0 = the socket
 * is full or there is nothing to send, -1 = the stream failed. */
static int stream_step(gw_link *l, gw_stream *s)
{
    if (!s->cur && !take_frame(l, s))
        return 0;
    const size_t hl = ISM_LINK_HDR_SIZE;
    size_t total = hl + s->cur->len;
    struct iovec iov[2];
    int n = 0;
    if (s->tx_off < hl) {
        iov[n].iov_base = s->lhdr + s->tx_off;
        iov[n++].iov_len = hl - s->tx_off;
        iov[n].iov_base = s->cur->data;
        iov[n++].iov_len = s->cur->len;
    } else {
        iov[n].iov_base = s->cur->data + (s->tx_off - hl);
        iov[n++].iov_len = total - s->tx_off;
    }
    ssize_t k = gw.xp->writev(s, iov, n);
    if (k < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    s->tx_off += (size_t)k;
    l->tx_bytes += (uint64_t)k;
    s->last_tx_ms = ism_now_ms();
    if (s->tx_off < total)
        return 0;
    gw_buf *b = s->cur;
    s->cur = NULL;
    s->tx_off = 0;
    l->tx_frames++;
    if (gw_tracing)
        gw_trace_sent(l, s, b);
    if (b->seq == 0)
        gw_buf_put(b); /* control frames are not kept */
    else if (b->seq < l->peer_ack)
        drop_acked(l); /* acknowledged while we wrote it */
    return 1;
}

int gw_link_pump(gw_link *l)
{
    if (l->state == GW_LINK_DOWN || !l->nstreams)
        return 0;
    int progress = 0;
    for (;;) {
        int moved = 0;
        for (int i = 0; i < l->nstreams; i++) {
            gw_stream *s = &l->st[(l->rr + i) % l->nstreams];
            if (s->fd < 0)
                continue;
            int rc = stream_step(l, s);
            if (rc < 0) {
                char why[160];
                snprintf(why, sizeof why, "stream %d: %s", (int)(s - l->st), strerror(errno));
                gw_link_down(l, why);
                return 1;
            }
            moved |= rc;
        }
        l->rr = (l->rr + 1) % l->nstreams;
        if (!moved)
            break;
        progress = 1;
    }
    return progress;
}

/* Frames below the peer's acknowledgement go back to the pool, from the oldest, up to one
 * that a stream is still writing: its bytes are partly in the TCP stream, so it must be
 * finished (the peer drops it as a duplicate), and stream_step frees it then. After a
 * reconnection this is normal: the peer resumes at its next expected frame but still
 * holds frames that overtook it before the break, so once the resent gap arrives its
 * cumulative acknowledgement jumps past frames we are sending again. */
static void drop_acked(gw_link *l)
{
    while (l->unacked && l->unacked->seq < l->peer_ack) {
        gw_buf *b = l->unacked;
        for (int i = 0; i < l->nstreams; i++)
            if (l->st[i].cur == b)
                return;
        l->unacked = b->next;
        if (!l->unacked)
            l->unacked_tail = NULL;
        buf_free(b);
    }
}

static void link_acked(gw_link *l, uint64_t ack)
{
    if (ack > l->tx_next)
        gw_die(1, "protocol error on the link from site %s gateway %d: it acknowledges frame "
                  "%llu, but only %llu were sent",
               sname(l->site), l->gw, (unsigned long long)ack - 1,
               (unsigned long long)l->tx_next - 1);
    if (ack <= l->peer_ack)
        return;
    l->peer_ack = ack;
    if (gw_tracing)
        gw_trace_acked(l, ack);
    drop_acked(l);
}

void gw_link_reset_tx(gw_link *l)
{
    /* every frame not acknowledged goes again, in order, ahead of the ones never sent.
     * resend_upto only grows: after a second break, frames resent after the first that
     * no stream had taken again yet are still in the send queue ahead of these, and they
     * too were on the wire (a flow frame that passed them would renumber frames the peer
     * may hold: one lost, another delivered twice) */
    if (l->unacked) {
        if (l->unacked_tail->seq > l->resend_upto)
            l->resend_upto = l->unacked_tail->seq;
        l->unacked_tail->next = l->sendq;
        if (!l->sendq)
            l->sendq_tail = l->unacked_tail;
        l->sendq = l->unacked;
        l->unacked = l->unacked_tail = NULL;
    }
}

int gw_link_idle(const gw_link *l)
{
    if (l->sendq || l->unacked)
        return 0;
    for (int i = 0; i < l->nstreams; i++)
        if (l->st[i].cur || l->st[i].ctlq)
            return 0;
    return 1;
}

/* ---- receiving ---- */

static int in_ooo(const gw_link *l, uint64_t seq)
{
    for (const gw_buf *b = l->ooo; b && b->seq <= seq; b = b->next)
        if (b->seq == seq)
            return 1;
    return 0;
}

static void deliver_in_order(gw_link *l, gw_buf *b)
{
    l->rx_next++;
    gw_route_from_link(l, b);
    while (l->ooo && l->ooo->seq == l->rx_next) {
        gw_buf *n = l->ooo;
        l->ooo = n->next;
        l->nooo--;
        l->rx_next++;
        gw_route_from_link(l, n);
    }
}

static void park(gw_link *l, gw_buf *b)
{
    gw_buf **p = &l->ooo;
    while (*p && (*p)->seq < b->seq)
        p = &(*p)->next;
    b->next = *p;
    *p = b;
    l->nooo++;
}

static void on_resume(gw_link *l, uint64_t next)
{
    uint64_t first = l->sendq ? l->sendq->seq : l->tx_next;
    /* the peer has every frame below `next`; frames we still hold below it were received
     * before the old streams broke, their acknowledgement lost with them */
    drop_queued_below(l, next);
    if (next > l->tx_next || (next < first && next < l->peer_ack))
        gw_die(1, "protocol error on the link from site %s gateway %d: it resumes at frame "
                  "%llu, but frames %llu..%llu are the ones not acknowledged",
               sname(l->site), l->gw, (unsigned long long)next, (unsigned long long)first,
               (unsigned long long)l->tx_next - 1);
    if (next > l->peer_ack)
        l->peer_ack = next;
    for (gw_buf *b = l->sendq; b && b->seq <= l->resend_upto; b = b->next)
        l->resent_frames++;
    l->state = GW_LINK_UP;
    l->resume_recv = 1;
    gw_link_changed(l, "resumed");
}

static void on_control(gw_link *l, gw_stream *s, gw_buf *b)
{
    ism_frame_hdr h;
    ism_frame_decode((const uint8_t *)b->data, b->len, &h);
    switch (h.type) {
    case ISM_F_PING:
        gw_link_control(l, (int)(s - l->st), ISM_F_PONG, h.a, 0, NULL);
        break;
    case ISM_F_PONG: {
        /* h.a is our PING's time echoed, but it comes off the wire: unsigned arithmetic,
         * so a forged value cannot overflow (the fuzzer sent INT64_MIN) */
        uint64_t now = (uint64_t)now_us();
        int64_t t = h.a <= now ? (int64_t)(now - h.a) : -1;
        if (t >= 0 && t < 3600LL * 1000000) {
            double ms = (double)t / 1000.0;
            if (l->srtt_ms == 0) {
                l->srtt_ms = ms;
                l->rttvar_ms = ms / 2;
                l->min_rtt_ms = ms;
            } else {
                double d = ms > l->srtt_ms ? ms - l->srtt_ms : l->srtt_ms - ms;
                l->rttvar_ms = 0.75 * l->rttvar_ms + 0.25 * d;
                l->srtt_ms = 0.875 * l->srtt_ms + 0.125 * ms;
                if (ms < l->min_rtt_ms)
                    l->min_rtt_ms = ms;
            }
        }
        break;
    }
    case ISM_F_ACK:
    case ISM_F_HEARTBEAT:
        break;
    case ISM_F_RESUME:
        if (l->state != GW_LINK_RESUMING)
            gw_die(1, "protocol error: RESUME from site %s gateway %d on a link that is not "
                      "being resumed",
                   sname(l->site), l->gw);
        on_resume(l, h.a);
        break;
    case ISM_F_ABORT:
        gw_route_from_link(l, b); /* does not return */
        return;
    default:
        gw_die(1, "unexpected %s frame from site %s gateway %d", ism_frame_type_name(h.type),
               sname(l->site), l->gw);
    }
    gw_buf_put(b);
}

static void rx_reset(gw_stream *s)
{
    s->rx_have = 0;
    s->rxbuf = NULL;
    s->rx_discard = 0;
}

/* One read into the current frame: 1 = bytes arrived, 0 = none for now, -1 = closed or
 * failed (errno says which; ECONNRESET for an orderly close). */
static int stream_recv(gw_link *l, gw_stream *s, void *dst, size_t n)
{
    ssize_t k = gw.xp->read(s, dst, n);
    if (k == 0) {
        errno = ECONNRESET;
        return -1;
    }
    if (k < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    s->rx_have += (size_t)k;
    l->rx_bytes += (uint64_t)k;
    s->last_rx_ms = ism_now_ms();
    return 1;
}

/* Corrupted in transit: drop the stream; the reconnect sends the frame again. */
static int crc_mismatch(gw_link *l, gw_stream *s, const char *what)
{
    l->crc_errors++;
    gw_log("CRC32C mismatch on %s from site %s gateway %d (stream %d); reconnecting to have "
           "it sent again",
           what, sname(l->site), l->gw, (int)(s - l->st));
    rx_reset(s);
    errno = EBADMSG;
    return -1;
}

int gw_stream_read(gw_link *l, gw_stream *s)
{
    static char scratch[64 << 10]; /* payload of duplicates is read here and dropped */
    const size_t H = ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE;
    int progress = 0;
    for (;;) {
        if (s->rx_have < H) {
            int k = stream_recv(l, s, s->rxhdr + s->rx_have, H - s->rx_have);
            if (k <= 0)
                return k < 0 ? -1 : progress;
            progress = 1;
            if (s->rx_have < H)
                continue;
            /* With CRCs, the headers are checked before any of their fields is believed;
             * a mismatch is damage on the way, like a payload CRC mismatch (below). */
            if (gw.crc && ism_link_hdr_crc(s->rxhdr, s->rxhdr + ISM_LINK_HDR_SIZE,
                                           ISM_FRAME_HDR_SIZE) != ism_get_le32(s->rxhdr + 12))
                return crc_mismatch(l, s, "the headers of a frame");
            int rc = ism_link_hdr_decode(s->rxhdr, ISM_LINK_HDR_SIZE, &s->rxl);
            int rf = rc ? 0 : ism_frame_decode(s->rxhdr + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE,
                                               &s->rxh);
            if (rc || rf || ISM_FRAME_HDR_SIZE + (size_t)s->rxh.len > gw.bufsize)
                gw_die(1, "protocol error on the link from site %s gateway %d (stream %d): %s",
                       sname(l->site), l->gw, (int)(s - l->st),
                       rc   ? ism_link_strerror(rc)
                       : rf ? ism_frame_strerror(rf)
                            : "frame larger than the chunk size");
            link_acked(l, s->rxl.ack);
            uint64_t seq = s->rxl.seq;
            if (seq == 0) {
                if (s->rxh.dst >= 0 || ISM_FRAME_HDR_SIZE + s->rxh.len > GW_CONTROL_MAX)
                    gw_die(1, "protocol error on the link from site %s gateway %d: an "
                              "unnumbered %s frame",
                           sname(l->site), l->gw, ism_frame_type_name(s->rxh.type));
            } else if (seq < l->rx_next || in_ooo(l, seq)) {
                s->rx_discard = 1;
                l->dup_frames++;
                if (gw_tracing)
                    gw_trace_duplicate(l, s, seq, &s->rxh);
            } else if (seq - l->rx_next > GW_MAX_AHEAD) {
                gw_die(1, "protocol error on the link from site %s gateway %d: frame %llu "
                          "arrived while %llu is the next expected",
                       sname(l->site), l->gw, (unsigned long long)seq,
                       (unsigned long long)l->rx_next);
            }
        }
        if (!s->rxbuf && !s->rx_discard) {
            uint64_t seq = s->rxl.seq;
            if (seq == 0 || s->rxh.dst < 0) {
                s->rxbuf = gw_buf_small(ISM_FRAME_HDR_SIZE + s->rxh.len);
            } else {
                /* the last receive buffer is kept for the frame due next, so frames that
                 * overtook it can never take every buffer and stall the link */
                if (seq != l->rx_next && gw.free_rx < 2)
                    return progress;
                s->rxbuf = gw_buf_get(GW_POOL_RX);
                if (!s->rxbuf)
                    return progress; /* resume when buffers return */
                gw.held_bytes += ISM_FRAME_HDR_SIZE + s->rxh.len;
                if (gw.held_bytes > gw.peak_bytes)
                    gw.peak_bytes = gw.held_bytes;
            }
            memcpy(s->rxbuf->data, s->rxhdr + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE);
            s->rxbuf->len = ISM_FRAME_HDR_SIZE + s->rxh.len;
        }
        size_t want = H + s->rxh.len;
        while (s->rx_have < want) {
            char *dst = s->rx_discard ? scratch
                                      : s->rxbuf->data + (s->rx_have - ISM_LINK_HDR_SIZE);
            size_t n = want - s->rx_have;
            if (s->rx_discard && n > sizeof scratch)
                n = sizeof scratch;
            int k = stream_recv(l, s, dst, n);
            if (k <= 0)
                return k < 0 ? -1 : progress;
            progress = 1;
        }
        if (s->rx_discard) {
            rx_reset(s);
            continue;
        }
        gw_buf *b = s->rxbuf;
        if ((s->rxl.flags & ISM_LINK_FLAG_CRC) &&
            ism_link_crc(s->rxhdr, b->data, b->len) != s->rxl.crc) {
            char what[64];
            snprintf(what, sizeof what, "frame %llu", (unsigned long long)s->rxl.seq);
            buf_free(b);
            return crc_mismatch(l, s, what);
        }
        uint64_t seq = s->rxl.seq;
        rx_reset(s);
        b->seq = seq;
        b->next = NULL;
        l->rx_frames++;
        if (gw_tracing)
            gw_trace_received(l, s, b, seq);
        progress = 2;
        if (seq == 0)
            on_control(l, s, b);
        else if (seq == l->rx_next)
            deliver_in_order(l, b);
        else
            park(l, b);
        if (l->state == GW_LINK_DOWN || s->fd < 0)
            return -1;
        if (l->rx_next - l->ack_sent >= GW_ACK_EVERY && !control_waiting(l))
            gw_link_control(l, (int)(s - l->st), ISM_F_ACK, 0, 0, NULL);
    }
}

/* ---- timers ---- */

void gw_link_tick(gw_link *l, int64_t now)
{
    if (l->state == GW_LINK_DOWN)
        return;
    if (l->rx_next > l->ack_sent && now - l->last_ack_ms >= GW_ACK_DELAY_MS) {
        if (!control_waiting(l))
            gw_link_control(l, 0, ISM_F_ACK, 0, 0, NULL);
        l->last_ack_ms = now;
    }
    for (int i = 0; i < l->nstreams; i++) {
        gw_stream *s = &l->st[i];
        if (s->fd < 0)
            continue;
        if (!s->cur && !s->ctlq && now - s->last_tx_ms >= GW_HEARTBEAT_MS) {
            gw_link_control(l, i, ISM_F_PING, (uint64_t)now_us(), 0, NULL);
            s->last_tx_ms = now;
        }
        /* a stream waiting for a receive buffer is not silent: we are not reading it */
        if (s->rx_have >= ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE && !s->rxbuf && !s->rx_discard)
            s->last_rx_ms = now;
        if (now - s->last_rx_ms > gw.dead_ms) {
            char why[160];
            snprintf(why, sizeof why, "stream %d silent for %.1f s", i,
                     (double)(now - s->last_rx_ms) / 1000.0);
            gw_link_down(l, why);
            return;
        }
    }
}

/* Push out every queued frame, up to a deadline (used when aborting), until the peer's
 * transport has it: a user-space transport must still be running for that. */
int gw_flush_links(int64_t deadline_ms)
{
    for (;;) {
        int pending = 0;
        for (int i = 0; i < gw.nlinks; i++) {
            gw_link *l = &gw.links[i];
            for (int j = 0; j < l->nstreams; j++) {
                gw_stream *s = &l->st[j];
                if (s->fd < 0 || (!s->cur && !s->ctlq))
                    continue;
                int rc = 0;
                while ((s->cur || s->ctlq) && (rc = stream_step(l, s)) > 0)
                    ;
                if (rc < 0) {
                    gw_stream_close_fd(s);
                    continue;
                }
                pending += s->cur != NULL || s->ctlq != NULL;
            }
            for (int j = 0; j < l->nstreams; j++)
                pending += l->st[j].fd >= 0 && gw.xp->unsent(&l->st[j]);
        }
        if (!pending || ism_now_ms() >= deadline_ms)
            return pending;
        gw_streams_wait(1000);
    }
}
