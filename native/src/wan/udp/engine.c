/* engine.c: what makes a reliable-UDP connection move: one progress step (receive what
 * arrived, run the timers, acknowledge, send what pacing and the windows allow), the
 * wait between steps, keepalive probes and dead-peer detection. Everything a blocking
 * call does is a loop over udp_wait(); an application's own event loop calls
 * ism_udp_progress() instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conn.h"

#define RX_ROUNDS 8 /* recvmmsg batches per step before letting the sender run */

void udp_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void udp_fail(ism_udp_conn *c, int code, const char *fmt, ...)
{
    if (c->err)
        return;
    c->err = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
}

void udp_dispatch(ism_udp_conn *c, uint8_t *p, size_t n, int64_t now)
{
    int type = ism_udpw_check(p, n, c->tok_rx, c->o.crc);
    if (type < 0 || udp_seal_open(&c->seal, p, &n) != 0) {
        c->st.pkts_bad++; /* a stranger, a corrupted, forged, replayed or stale packet */
        return;
    }
    udp_dispatch_open(c, type, p, n, now);
}

void udp_dispatch_open(ism_udp_conn *c, int type, uint8_t *p, size_t n, int64_t now)
{
    int rc;
    if (type == ISM_UDPW_DATA) {
        ism_udpw_data d;
        if ((rc = ism_udpw_decode_data(p, n, &d)) != 0)
            goto bad;
        c->last_recv_us = now;
        udp_on_data(c, &d, now);
    } else if (type == ISM_UDPW_ACK) {
        ism_udpw_ack a;
        if ((rc = ism_udpw_decode_ack(p, n, &a)) != 0)
            goto bad;
        c->last_recv_us = now;
        udp_on_ack(c, &a, now);
    } else {
        uint32_t reason;
        if ((rc = ism_udpw_decode_close(p, n, &reason)) != 0)
            goto bad;
        if (reason == ISM_UDPW_CLOSE_DONE && c->fin_queued) {
            /* it received our FIN, so everything before it: only its ACKs went missing */
            c->peer_done = 1;
            c->last_recv_us = now;
            return;
        }
        c->peer_closed = 1;
        udp_fail(c, ISM_UDP_ECLOSED, "peer %s aborted the connection (%s)", c->peer,
                 reason == ISM_UDPW_CLOSE_PROTOCOL ? "it saw a protocol violation"
                 : reason == ISM_UDPW_CLOSE_DONE  ? "it closed before we ended our stream"
                                                  : "closed");
    }
    return;
bad:
    /* Authenticated (token and CRC matched) yet malformed: the peer is broken. */
    c->st.pkts_bad++;
    udp_fail(c, ISM_UDP_ECLOSED, "peer %s sent a malformed packet: %s (protocol violation)",
             c->peer, ism_udpw_strerror(rc));
}

static int64_t keepalive_us(const ism_udp_conn *c)
{
    return (int64_t)c->o.keepalive_ms * 1000;
}

static int progress(ism_udp_conn *c, int64_t now, int rx)
{
    if (c->err)
        return c->err;
    int got = 0;
    if (rx)
        c->last_rx_try_us = now;
    for (int r = 0; rx && r < RX_ROUNDS; r++) {
        int k = udp_rx_batch(c, now);
        got += k > 0 ? k : 0;
        /* acknowledge as we go: a long backlog must not turn into one late ACK */
        udp_maybe_ack(c, now);
        if (k < UDP_BATCH)
            break;
        now = udp_now_us();
    }
    if (got > 0) {
        /* Receive coalescing, as a NIC moderates interrupts: when datagrams come as a
         * stream (this read and the previous one, less than UDP_RX_HOLD_US before, each
         * found several, but not a backlog) stop polling for input for that long. At
         * 1 Gbit/s a wake-up per 3 packets (measured) cost more than the packets; held,
         * one read takes ~17. A message after a quiet spell is never held (the previous
         * read was long ago), nor a ping-pong (one datagram per read): on loopback a
         * hold on every read doubled an allreduce's latency. */
        if (got >= 2 && c->rx_last_got >= 2 && got < UDP_BATCH / 2 &&
            now - c->last_rx_read_us < UDP_RX_HOLD_US)
            c->rx_hold_until = now + UDP_RX_HOLD_US;
        c->last_rx_read_us = now;
        c->rx_last_got = got;
    }
    if (c->err)
        return c->err;
    udp_send_timers(c, now);
    if (c->next_probe_us && c->st.acks_received)
        c->next_probe_us = 0; /* the server answered: the path is proven */
    if (c->next_probe_us && now - c->last_recv_us > (int64_t)c->o.dead_ms * 1000) {
        udp_fail(c, ISM_UDP_EDEAD,
                 "no UDP answer from %s within %d ms of the set-up (TCP worked for it; is UDP "
                 "blocked by a firewall?)",
                 c->peer, c->o.dead_ms);
        return c->err;
    }
    if (c->next_probe_us && now >= c->next_probe_us) {
        c->ping_due = 1;
        c->next_probe_us = now + UDP_PROBE_INTERVAL_US;
    }
    if (now - c->last_recv_us > (int64_t)c->o.dead_ms * 1000) {
        udp_fail(c, ISM_UDP_EDEAD,
                 "no packet from peer %s for %.1f s (dead-peer timeout %d ms): the peer "
                 "process or the path is gone",
                 c->peer, (double)(now - c->last_recv_us) / 1e6, c->o.dead_ms);
        return c->err;
    }
    if (now - c->last_send_us >= keepalive_us(c))
        c->ping_due = 1;
    udp_maybe_ack(c, now);
    udp_send_data(c, now);
    udp_tx_flush(c);
    return c->err;
}

int udp_progress(ism_udp_conn *c, int64_t now)
{
    return progress(c, now, 1);
}

/* After the application wrote: send what is due, but read the socket only if nobody has
 * for UDP_RX_HOLD_US. A writer calls this for every chunk it writes, and an empty
 * recvmmsg per chunk was half of a sender's system calls; a wait (or the caller's own
 * poll) reads whatever arrived meanwhile. */
int udp_progress_tx(ism_udp_conn *c, int64_t now)
{
    return progress(c, now, now - c->last_rx_try_us >= UDP_RX_HOLD_US);
}

int64_t udp_next_timer_abs(const ism_udp_conn *c, int64_t now)
{
    /* A ping asked for outside progress (the client's setup probe) goes now: waiting
     * first held every connection's setup for one probe interval (200 ms, measured). */
    if (c->ping_due && c->ntx < UDP_TX_SLOTS && c->next_pn - c->lua < UDP_PKT_RING)
        return now; /* (with no room it waits like any other packet) */
    int64_t t = udp_send_timer_us(c, now);
    int64_t a = udp_ack_timer_us(c);
    if (a < t)
        t = a;
    int64_t k = c->last_send_us + keepalive_us(c);
    if (k < t)
        t = k;
    if (c->next_probe_us && c->next_probe_us < t)
        t = c->next_probe_us;
    int64_t d = c->last_recv_us + (int64_t)c->o.dead_ms * 1000 + 1;
    if (d < t)
        t = d;
    if (c->rx_hold_until > now && c->rx_hold_until < t)
        t = c->rx_hold_until;
    return t;
}

short udp_events(const ism_udp_conn *c, int64_t now)
{
    return (short)((c->rx_hold_until > now ? 0 : POLLIN) | (c->ntx > c->tx_sent ? POLLOUT : 0));
}

int udp_wait(ism_udp_conn *c, int64_t deadline_us)
{
    int64_t now = udp_now_us();
    int64_t t = udp_next_timer_abs(c, now);
    if (deadline_us >= 0 && deadline_us < t)
        t = deadline_us;
    if (t > now) {
        struct pollfd pfd = {c->fd, udp_events(c, now), 0};
        int64_t d = t - now;
        struct timespec ts = {(time_t)(d / 1000000), (long)(d % 1000000) * 1000};
        if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR) {
            udp_fail(c, ISM_UDP_EIO, "waiting for %s: %s", c->peer, strerror(errno));
            return c->err;
        }
        now = udp_now_us();
    }
    return udp_progress(c, now);
}
