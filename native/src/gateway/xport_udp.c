/* xport_udp.c: the gateway's reliable-UDP transport (xport.h): a link is one connection
 * of wan/udp (ism_udp_*), which paces, acknowledges with SACK/NACK ranges, retransmits
 * and runs its own congestion control (bbr or reno) in user space, so a lossy long link
 * does not depend on the kernel's TCP congestion control or on root.
 *
 * Set-up runs over a TCP connection to the peer gateway's usual listener: the same
 * authenticated handshake as the TCP transport (wan/auth.h, run by the event loop:
 * setup.c), then the UDP parameters and per-direction packet tokens (wan/udp/setup.c,
 * udp_authed below). A peer without the job secret is refused before any UDP socket
 * exists for it.
 *
 * The connection has timers of its own (pacing, ACK delay, retransmission, keepalive,
 * dead peer), which become the event loop's ppoll timeout, and a receive buffer that a
 * progress step may fill without the socket ever becoming readable again: timer_us()
 * therefore reports 0 when bytes wait to be read or there is room for bytes waiting to
 * be written, and service() runs the protocol when its socket or a timer says so.
 *
 * Receiving: a frame's payload (any read of UDP_POST_MIN bytes or more) is posted to the
 * connection (ism_udp_recv_post) on the first read of it, and stays posted while the
 * loop sleeps and services the stream, so payload goes from the packet straight into
 * the frame's buffer; read() reports the contiguous part as it grows. The gateway reads
 * a frame to its end in that same buffer, so a post ends full; the stream's close ends
 * one that is still running.
 *
 * Windows: 2 x the bandwidth-delay product of the described link (ISTHMUS_WAN_RATE,
 * ISTHMUS_WAN_RTT_MS), at least 4 MiB, at most 1 GiB; 16 MiB when the link is unknown.
 * The connection's own dead-peer timeout is ISTHMUS_LINK_DEAD_MS, like a TCP stream's
 * silence; after it the link goes down and the session layer reconnects and resends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/knobs.h"
#include "../wan/aead.h"
#include "../wan/sock.h"
#include "../wan/udp/udp.h"
#include "gateway.h"

#define UDP_WIN_MIN (4ull << 20)
#define UDP_WIN_MAX (1ull << 30)
#define UDP_WIN_UNKNOWN (16ull << 20)
#define UDP_POST_MIN 4096 /* smaller reads (frame headers) copy out of the receive ring */

/* Counters of a stream's connections that ended; the last one's state for the report. */
typedef struct udp_totals {
    uint64_t bytes_sent, bytes_received, pkts_sent, pkts_retransmitted, pkts_lost;
    uint64_t rto_count, pkts_dup, pkts_bad;
    uint64_t pkts_unauth, rekeys; /* of pkts_bad: failed authentication; key updates */
    uint64_t seal_batches;        /* on the crypto workers */
    uint64_t unauth_reported;     /* pkts_unauth when the log last said so, and when */
    int64_t unauth_report_ms;
    int suite;                    /* the latest connection's */
    uint64_t bytes_direct; /* placed straight into frame buffers (net of any put back) */
    int64_t srtt_us, min_rtt_us;
    uint64_t cwnd, pacing_rate;
    char cc[8], state[16];
    uint64_t pmtu_black_holes;
    uint32_t plpmtu; /* the latest connection's */
} udp_totals;
_Static_assert(sizeof(udp_totals) <= GW_XP_TOTALS, "UDP totals do not fit a stream");

static ism_udp_opts opts;

static ism_udp_conn *conn(const gw_stream *s) { return (ism_udp_conn *)s->conn; }

static void udp_init(void)
{
    if (gw.streams > 1)
        gw_die(2, "ISTHMUS_WAN_STREAMS=%d: the udp transport carries each link in one flow "
                  "(one stream); leave it unset, or use the tcp transport for several streams",
               gw.streams);
    gw.streams = 1;
    ism_udp_opts_default(&opts);
    opts.cc = gw.cc[0] ? gw.cc : "bbr";
    opts.rekey_log2 = gw.rekey_log2;
    opts.dead_ms = (int)gw.dead_ms;
    opts.mtu = gw.mtu;
    opts.pmtud = ism_knob_or_exit(ISM_K_WAN_PMTUD, 1, 2) != 0;
    if (gw.sockbuf > 0)
        opts.sock_buf = gw.sockbuf;
    double bdp = gw.hint_rate_bps / 8.0 * gw.hint_rtt_ms / 1000.0;
    uint64_t win = UDP_WIN_UNKNOWN;
    if (bdp > 0) {
        win = (uint64_t)(2.0 * bdp);
        win = win < UDP_WIN_MIN ? UDP_WIN_MIN : win > UDP_WIN_MAX ? UDP_WIN_MAX : win;
    }
    opts.sndbuf = opts.rcvbuf = (size_t)win;
    char err[256];
    if (ism_udp_opts_check(&opts, err, sizeof err))
        gw_die(2, "the udp transport cannot run with these settings: %s (congestion control "
                  "'%s' from ISTHMUS_WAN_CC, ISTHMUS_WAN_MTU=%d, ISTHMUS_LINK_DEAD_MS=%lld)",
               err, opts.cc, opts.mtu, (long long)gw.dead_ms);
}

static int udp_listener(int fd, char *err, size_t errlen)
{
    (void)fd, (void)err, (void)errlen;
    return 0; /* the listener only carries set-up */
}

static void attach(gw_stream *s, ism_udp_conn *c)
{
    s->conn = c;
    s->fd = ism_udp_fd(c);
    s->rx_post = NULL;
}

static int udp_authed(gw_stream *s, int tcp, int dialed, ism_auth_id peer,
                      const ism_aead_keys *keys, char *err, size_t errlen)
{
    ism_sock_set_nonblock(tcp, 0);
    ism_udp_conn *c = ism_udp_setup_authed(dialed, tcp, &gw.key, peer, keys, &opts,
                                           GW_SETUP_TIMEOUT_MS, err, errlen);
    close(tcp);
    if (!c)
        return -1;
    if (ism_udp_use_pool(c, gw.sealers) != 0) {
        snprintf(err, errlen, "setting up %d crypto workers for the link failed (out of memory "
                 "or OpenSSL)", ism_sealpool_workers(gw.sealers));
        ism_udp_abort(c);
        return -1;
    }
    attach(s, c);
    return 0;
}

static void udp_started(gw_stream *s)
{
    (void)s; /* the connection never blocks outside the calls that say so */
}

/* An ism_udp result as read()/writev() would give it. */
static ssize_t as_syscall(ssize_t r)
{
    if (r >= 0)
        return r;
    errno = r == ISM_UDP_EAGAIN ? EAGAIN : EPROTO;
    return -1;
}

static ssize_t udp_writev(gw_stream *s, const struct iovec *iov, int n)
{
    return as_syscall(ism_udp_sendv_nb(conn(s), iov, n));
}

static ssize_t udp_read(gw_stream *s, void *buf, size_t n)
{
    ism_udp_conn *c = conn(s);
    unsigned char *p = buf;
    if (s->rx_post &&
        (p != s->rx_post + s->rx_post_seen || n != s->rx_post_len - s->rx_post_seen)) {
        /* The caller moved to another buffer before this one was full (it never does: it
         * reads each frame to its end). Bytes placed but not reported would be lost, so
         * the stream fails instead and the session layer resends after reconnecting. */
        ssize_t k = ism_udp_recv_cancel(c);
        int lost = k != (ssize_t)s->rx_post_seen;
        s->rx_post = NULL;
        if (lost) {
            errno = EPROTO;
            return -1;
        }
    }
    if (!s->rx_post) {
        if (n < UDP_POST_MIN)
            return as_syscall(ism_udp_recv_nb(c, buf, n));
        int rc = ism_udp_recv_post(c, buf, n);
        if (rc)
            return as_syscall(rc);
        s->rx_post = p;
        s->rx_post_len = n;
        s->rx_post_seen = 0;
    }
    ssize_t r = ism_udp_recv_test(c);
    if (r < 0 && r != ISM_UDP_EAGAIN)
        return as_syscall(r); /* the stream is closed, and the post with it */
    size_t filled = r >= 0 ? (size_t)r : ism_udp_recv_filled(c);
    size_t k = filled - s->rx_post_seen;
    s->rx_post_seen = filled;
    if (r >= 0)
        s->rx_post = NULL; /* over: full, or the peer's stream ended inside it */
    if (k)
        return (ssize_t)k;
    return as_syscall(r >= 0 ? 0 : ISM_UDP_EAGAIN);
}

/* Bytes a read() would return now (or an end or error it would report). */
static int rx_ready(const gw_stream *s)
{
    const ism_udp_conn *c = conn(s);
    return ism_udp_readable(c) || (s->rx_post && ism_udp_recv_filled(c) > s->rx_post_seen);
}

static short udp_events(const gw_stream *s, int want_read, int want_write)
{
    (void)want_read, (void)want_write; /* ACKs and keepalives are read regardless */
    return ism_udp_events(conn(s));
}

static int64_t udp_timer_us(const gw_stream *s, int want_read, int want_write)
{
    const ism_udp_conn *c = conn(s);
    if ((want_read && rx_ready(s)) || (want_write && ism_udp_writable(c) > 0))
        return 0;
    return ism_udp_next_timer_us(c);
}

/* Datagrams that fail authentication are dropped one by one and cost the link nothing
 * but their bandwidth; many of them are someone on the path, said at most every 10 s. */
#define UDP_UNAUTH_REPORT 16

static void report_forgeries(gw_stream *s, ism_udp_conn *c)
{
    udp_totals *t = (udp_totals *)(void *)s->totals;
    ism_udp_stats st;
    ism_udp_get_stats(c, &st);
    uint64_t seen = t->pkts_unauth + st.pkts_unauth;
    int64_t now = ism_now_ms();
    if (seen >= t->unauth_reported + UDP_UNAUTH_REPORT && now - t->unauth_report_ms >= 10000) {
        gw_log("%llu datagrams from %s failed authentication or were replays (damaged, forged "
               "or repeated on the path; each was dropped, never used)",
               (unsigned long long)(seen - t->unauth_reported), ism_udp_peer_name(c));
        t->unauth_reported = seen;
        t->unauth_report_ms = now;
    }
}

static int udp_service(gw_stream *s, short revents)
{
    ism_udp_conn *c = conn(s);
    if (revents || ism_udp_next_timer_us(c) == 0)
        ism_udp_progress(c);
    report_forgeries(s, c);
    return (rx_ready(s) ? GW_XP_READ : 0) | (ism_udp_writable(c) > 0 ? GW_XP_WRITE : 0);
}

static int udp_unsent(const gw_stream *s)
{
    const ism_udp_conn *c = conn(s);
    return c && !ism_udp_status(c) && !ism_udp_settled(c);
}

static int udp_finish(gw_stream *s)
{
    ism_udp_conn *c = conn(s);
    if (ism_udp_status(c))
        return 1;
    ism_udp_shutdown(c); /* our end of stream goes out reliably, like TCP's FIN */
    return ism_udp_settled(c) || ism_udp_status(c) != 0;
}

static void add_stats(udp_totals *t, const ism_udp_stats *st)
{
    t->bytes_sent += st->bytes_sent;
    t->bytes_received += st->bytes_received;
    t->pkts_sent += st->pkts_sent;
    t->pkts_retransmitted += st->pkts_retransmitted;
    t->pkts_lost += st->pkts_lost;
    t->rto_count += st->rto_count;
    t->pkts_dup += st->pkts_dup;
    t->pkts_bad += st->pkts_bad;
    t->pkts_unauth += st->pkts_unauth;
    t->rekeys += st->rekeys;
    t->seal_batches += st->seal_batches;
    t->suite = st->suite;
    t->bytes_direct += st->bytes_placed_direct - st->bytes_placed_back;
    t->pmtu_black_holes += st->pmtu_black_holes;
    t->plpmtu = st->plpmtu;
    if (st->min_rtt_us > 0 && (t->min_rtt_us <= 0 || st->min_rtt_us < t->min_rtt_us))
        t->min_rtt_us = st->min_rtt_us;
    t->srtt_us = st->srtt_us;
    t->cwnd = st->cwnd;
    t->pacing_rate = st->pacing_rate;
    snprintf(t->cc, sizeof t->cc, "%s", st->cc);
    snprintf(t->state, sizeof t->state, "%s", st->cc_state);
}

static void udp_close(gw_stream *s)
{
    ism_udp_stats st;
    ism_udp_get_stats(conn(s), &st);
    add_stats((udp_totals *)(void *)s->totals, &st);
    s->nclosed++;
    ism_udp_abort(conn(s)); /* tells the peer at once, as closing a TCP socket does */
    s->conn = NULL;
    s->rx_post = NULL; /* ended with the connection: nothing more is written into it */
    s->fd = -1;
}

static const char *udp_error(const gw_stream *s, int e, char *buf, size_t n)
{
    if (e == ECONNRESET)
        snprintf(buf, n, "connection closed by the peer");
    else if (s->conn && ism_udp_status(conn(s)))
        snprintf(buf, n, "%s", ism_udp_error(conn(s)));
    else
        snprintf(buf, n, "%s", strerror(e));
    return buf;
}

static void udp_describe(const gw_link *l, char *buf, size_t n)
{
    ism_udp_stats st;
    ism_udp_get_stats(conn(&l->st[0]), &st);
    snprintf(buf, n,
             "1 stream (reliable UDP), congestion control %s, windows %zu bytes, %u payload "
             "bytes per packet (path MTU %s, now %u of at most %u), crc %s",
             st.cc, opts.sndbuf, st.payload, opts.pmtud ? "probed" : "fixed", st.plpmtu,
             st.pmtu_ceiling, gw.crc ? "on" : "off");
}

static void udp_report(const gw_stream *s, char *buf, size_t n)
{
    udp_totals t;
    memcpy(&t, s->totals, sizeof t);
    int k = s->nclosed;
    if (s->conn) {
        ism_udp_stats st;
        ism_udp_get_stats(conn(s), &st);
        add_stats(&t, &st);
        k++;
    }
    buf[0] = 0;
    if (k == 0)
        return;
    snprintf(buf, n,
             "udp sent %.1f MB in %llu packets, retransmitted %llu packets (%.2f %%; %llu "
             "declared lost, %llu timeouts), received %.1f MB (%llu duplicate packets), "
             "srtt %.3f ms, min rtt %.3f ms, cwnd %llu bytes, pacing rate %.1f Mbit/s, %s %s; "
             "path MTU %u (%llu black holes); %llu packets rejected (bad CRC, stale or "
             "foreign), %llu of them failing authentication; %s, %llu key updates, %llu batches "
             "on %d crypto workers; %.1f %% of "
             "the bytes received placed straight into frame buffers",
             (double)t.bytes_sent / 1e6, (unsigned long long)t.pkts_sent,
             (unsigned long long)t.pkts_retransmitted,
             t.pkts_sent ? 100.0 * (double)t.pkts_retransmitted / (double)t.pkts_sent : 0.0,
             (unsigned long long)t.pkts_lost, (unsigned long long)t.rto_count,
             (double)t.bytes_received / 1e6, (unsigned long long)t.pkts_dup,
             (double)t.srtt_us / 1000.0, t.min_rtt_us > 0 ? (double)t.min_rtt_us / 1000.0 : 0.0,
             (unsigned long long)t.cwnd, (double)t.pacing_rate * 8 / 1e6, t.cc, t.state,
             t.plpmtu, (unsigned long long)t.pmtu_black_holes, (unsigned long long)t.pkts_bad,
             (unsigned long long)t.pkts_unauth,
             t.suite == ISM_AEAD_NONE ? "in the clear (crypto none)" : ism_aead_suite_name(t.suite),
             (unsigned long long)t.rekeys, (unsigned long long)t.seal_batches,
             ism_sealpool_workers(gw.sealers), t.bytes_received ? 100.0 * (double)t.bytes_direct / (double)t.bytes_received : 0.0);
}

const gw_xport gw_xport_udp = {
    .name = "udp",
    .max_streams = 1,
    .init = udp_init,
    .listener = udp_listener,
    .prep = NULL,
    .authed = udp_authed,
    .started = udp_started,
    .writev = udp_writev,
    .read = udp_read,
    .events = udp_events,
    .timer_us = udp_timer_us,
    .service = udp_service,
    .unsent = udp_unsent,
    .finish = udp_finish,
    .close = udp_close,
    .error = udp_error,
    .describe = udp_describe,
    .report = udp_report,
};
