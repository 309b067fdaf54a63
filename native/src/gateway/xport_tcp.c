/* xport_tcp.c: the gateway's TCP transport (xport.h): each stream of a link is one
 * kernel TCP connection, authenticated with the job secret (wan/auth.h, from the event
 * loop: setup.c) right after connect()/accept(), and then carries the link's bytes in
 * AEAD records (wan/sstream.h) under the keys that handshake gave this connection, or,
 * when every site was told ISTHMUS_WAN_CRYPTO=none, as they are. The kernel does pacing, loss recovery and congestion control;
 * tune.c chooses the number of streams, the socket buffers and the congestion control,
 * and tcpinfo.c reads what the kernel measured for the --stats report. Nothing here has
 * a timer of its own: the socket tells the event loop everything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <stdlib.h>

#include "../wan/sock.h"
#include "../wan/sstream.h"
#include "gateway.h"
#include "tcpinfo.h"

/* A stream's counters over the connections that ended: the kernel's, and the records. */
typedef struct tcp_totals {
    gw_tcpinfo ti;
    uint64_t sealed, opened, rejected, rekeys, par_batches;
    int suite; /* of the latest connection: ISM_AEAD_* */
} tcp_totals;
_Static_assert(sizeof(tcp_totals) <= GW_XP_TOTALS, "TCP totals do not fit a stream");

static tcp_totals *totals(gw_stream *s) { return (tcp_totals *)(void *)s->totals; }

/* The connection's record layer, or NULL when it runs in the clear. */
static ism_sstream *sealed(const gw_stream *s) { return (ism_sstream *)s->conn; }

static int tcp_listener(int fd, char *err, size_t errlen)
{
    return gw_tune_socket(fd, 1, err, errlen); /* accepted sockets inherit the buffers */
}

static int tcp_authed(gw_stream *s, int tcp, int dialed, ism_auth_id peer,
                      const ism_aead_keys *keys, char *err, size_t errlen)
{
    /* a dialed socket got its buffers before connect() (prep); an accepted one inherits
     * the listener's, and its congestion control and pacing are set here */
    if (!dialed && gw_tune_socket(tcp, 0, err, errlen))
        gw_die(1, "a stream from site %u gateway %u: %s", peer.site, peer.gw, err);
    s->conn = NULL;
    if (keys->suite != ISM_AEAD_NONE) {
        ism_sstream *x = malloc(sizeof *x);
        if (!x || ism_sstream_init(x, keys, dialed) != 0 ||
            ism_sstream_use_pool(x, gw.sealers) != 0) {
            if (x && x->txb)
                ism_sstream_free(x);
            free(x);
            close(tcp);
            snprintf(err, errlen, "setting up %s for the stream failed (out of memory or OpenSSL)",
                     ism_aead_suite_name(keys->suite));
            return -1;
        }
        s->conn = x;
    }
    s->fd = tcp;
    return 0;
}

static void tcp_started(gw_stream *s)
{
    ism_sock_set_nonblock(s->fd, 1);
    ism_sock_set_nodelay(s->fd, 1);
}

/* iov[*i..n) advanced past k bytes. */
static void iov_advance(struct iovec *iov, int *i, int n, size_t k)
{
    while (*i < n && k >= iov[*i].iov_len) {
        k -= iov[*i].iov_len;
        (*i)++;
    }
    if (*i < n) {
        iov[*i].iov_base = (char *)iov[*i].iov_base + k;
        iov[*i].iov_len -= k;
    }
}

/* Sealed records first go to the socket; then what of iov fits is sealed behind them,
 * again and again while the socket takes it all (the record buffer holds two records: one
 * seal per call made a 1 MiB frame cost 32 turns of the event loop, and the loop's own
 * work per turn was a large part of the gateway's CPU per byte). The bytes taken count as
 * written, as the kernel's buffer would have them. */
static ssize_t tcp_writev(gw_stream *s, const struct iovec *iov, int n)
{
    ism_sstream *x = sealed(s);
    if (!x)
        return writev(s->fd, iov, n);
    struct iovec v[8];
    if (n > 8)
        n = 8; /* the caller writes the rest in a later call */
    memcpy(v, iov, sizeof *v * (size_t)n);
    int i = 0;
    size_t taken = 0;
    for (;;) {
        int f = ism_sstream_flush(x, s->fd);
        if (f < 0)
            return taken ? (ssize_t)taken : -1; /* the next call finds the error again */
        if (f > 0 || i == n)
            break;
        ssize_t k = ism_sstream_seal(x, v + i, n - i);
        if (k < 0) {
            errno = EIO;
            return -1;
        }
        if (k == 0)
            break;
        taken += (size_t)k;
        iov_advance(v, &i, n, (size_t)k);
    }
    if (taken == 0) {
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)taken;
}

static ssize_t tcp_read(gw_stream *s, void *buf, size_t n)
{
    ism_sstream *x = sealed(s);
    return x ? ism_sstream_read(x, s->fd, buf, n) : read(s->fd, buf, n);
}

static short tcp_events(const gw_stream *s, int want_read, int want_write)
{
    ism_sstream *x = sealed(s);
    want_write |= x && ism_sstream_pending(x) > 0;
    return (short)((want_read ? POLLIN : 0) | (want_write ? POLLOUT : 0));
}

/* Opened records wait in the record layer with no socket event to come. */
static int64_t tcp_timer_us(const gw_stream *s, int want_read, int want_write)
{
    (void)want_write;
    ism_sstream *x = sealed(s);
    return x && want_read && ism_sstream_readable(x) ? 0 : -1;
}

static int tcp_service(gw_stream *s, short revents)
{
    ism_sstream *x = sealed(s);
    int what = (revents & (POLLIN | POLLHUP | POLLERR) ? GW_XP_READ : 0) |
               (revents & POLLOUT ? GW_XP_WRITE : 0);
    if (x) {
        if (ism_sstream_readable(x))
            what |= GW_XP_READ;
        if ((revents & POLLOUT) && ism_sstream_flush(x, s->fd) < 0)
            what |= GW_XP_READ; /* the read finds the error and fails the stream */
    }
    return what;
}

static int tcp_unsent(const gw_stream *s)
{
    ism_sstream *x = sealed(s);
    return x && ism_sstream_pending(x) > 0; /* the kernel has the rest, also after close() */
}

/* At the job's end: the end mark after everything (the peer then knows the stream was
 * not cut), and all of it out. */
static int tcp_finish(gw_stream *s)
{
    ism_sstream *x = sealed(s);
    if (!x)
        return 1;
    if (!x->end_sent && ism_sstream_flush(x, s->fd) == 0)
        ism_sstream_seal_end(x);
    return x->end_sent && ism_sstream_flush(x, s->fd) != 1;
}

static void tcp_close(gw_stream *s)
{
    gw_tcpinfo t;
    tcp_totals *tt = totals(s);
    if (gw_tcpinfo_read(s->fd, &t) == 0)
        gw_tcpinfo_add(&tt->ti, &s->nclosed, &t);
    ism_sstream *x = sealed(s);
    tt->suite = x ? x->tx.suite : ISM_AEAD_NONE;
    if (x) {
        tt->sealed += x->sealed;
        tt->opened += x->opened;
        tt->rejected += x->rejected;
        tt->rekeys += ism_sstream_rekeys(x);
        tt->par_batches += x->par_batches;
        ism_sstream_free(x);
        free(x);
        s->conn = NULL;
    }
    close(s->fd);
    s->fd = -1;
}

static const char *tcp_error(const gw_stream *s, int e, char *buf, size_t n)
{
    (void)s;
    snprintf(buf, n, "%s",
             e == ECONNRESET ? "connection closed by the peer"
             : e == EBADMSG  ? "a record failed authentication (damaged or forged on the path; "
                               "dropped, the link resends)"
             : e == EPIPE    ? "the connection ended without its end mark (closed by the peer, "
                               "or cut on the path)"
                             : strerror(e));
    return buf;
}

static void tcp_report(const gw_stream *s, char *buf, size_t n)
{
    tcp_totals t;
    gw_tcpinfo live;
    int k = s->nclosed;
    memcpy(&t, s->totals, sizeof t);
    if (s->fd >= 0 && gw_tcpinfo_read(s->fd, &live) == 0)
        gw_tcpinfo_add(&t.ti, &k, &live);
    ism_sstream *x = sealed(s);
    if (s->fd >= 0)
        t.suite = x ? x->tx.suite : ISM_AEAD_NONE;
    if (s->fd >= 0 && x) {
        t.sealed += x->sealed;
        t.opened += x->opened;
        t.rejected += x->rejected;
        t.rekeys += ism_sstream_rekeys(x);
        t.par_batches += x->par_batches;
    }
    buf[0] = 0;
    if (k == 0)
        return;
    int w = snprintf(buf, n, "tcp ");
    if (w > 0 && (size_t)w < n)
        gw_tcpinfo_format(&t.ti, buf + w, n - (size_t)w);
    size_t used = strlen(buf);
    if (t.suite == ISM_AEAD_NONE)
        snprintf(buf + used, n - used, "; in the clear (crypto none)");
    else
        snprintf(buf + used, n - used,
                 "; %s: %llu records sealed, %llu opened, %llu rejected, %llu key updates, "
                 "%llu batches on %d crypto workers",
                 ism_aead_suite_name(t.suite), (unsigned long long)t.sealed,
                 (unsigned long long)t.opened, (unsigned long long)t.rejected,
                 (unsigned long long)t.rekeys, (unsigned long long)t.par_batches,
                 ism_sealpool_workers(gw.sealers));
}

const gw_xport gw_xport_tcp = {
    .name = "tcp",
    .max_streams = 16,
    .init = gw_tune_init,
    .listener = tcp_listener,
    .prep = gw_tune_socket_prep,
    .authed = tcp_authed,
    .started = tcp_started,
    .writev = tcp_writev,
    .read = tcp_read,
    .events = tcp_events,
    .timer_us = tcp_timer_us,
    .service = tcp_service,
    .unsent = tcp_unsent,
    .finish = tcp_finish,
    .close = tcp_close,
    .error = tcp_error,
    .describe = gw_tune_describe,
    .report = tcp_report,
};
