/* xport_tcp.c: the gateway's TCP transport (xport.h): each stream of a link is one
 * kernel TCP connection, authenticated with the job secret (wan/auth.h, from the event
 * loop: setup.c) right after connect()/accept(), and then used as it is. The kernel does pacing, loss recovery and congestion control;
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

#include "../wan/sock.h"
#include "gateway.h"
#include "tcpinfo.h"

_Static_assert(sizeof(gw_tcpinfo) <= GW_XP_TOTALS, "TCP totals do not fit a stream");

static gw_tcpinfo *totals(gw_stream *s) { return (gw_tcpinfo *)(void *)s->totals; }

static int tcp_listener(int fd, char *err, size_t errlen)
{
    return gw_tune_socket(fd, 1, err, errlen); /* accepted sockets inherit the buffers */
}

static int tcp_authed(gw_stream *s, int tcp, int dialed, ism_auth_id peer, char *err,
                      size_t errlen)
{
    /* a dialed socket got its buffers before connect() (prep); an accepted one inherits
     * the listener's, and its congestion control and pacing are set here */
    if (!dialed && gw_tune_socket(tcp, 0, err, errlen))
        gw_die(1, "a stream from site %u gateway %u: %s", peer.site, peer.gw, err);
    s->fd = tcp;
    return 0;
}

static void tcp_started(gw_stream *s)
{
    ism_sock_set_nonblock(s->fd, 1);
    ism_sock_set_nodelay(s->fd, 1);
}

static ssize_t tcp_writev(gw_stream *s, const struct iovec *iov, int n)
{
    return writev(s->fd, iov, n);
}

static ssize_t tcp_read(gw_stream *s, void *buf, size_t n)
{
    return read(s->fd, buf, n);
}

static short tcp_events(const gw_stream *s, int want_read, int want_write)
{
    (void)s;
    return (short)((want_read ? POLLIN : 0) | (want_write ? POLLOUT : 0));
}

static int64_t tcp_timer_us(const gw_stream *s, int want_read, int want_write)
{
    (void)s, (void)want_read, (void)want_write;
    return -1;
}

static int tcp_service(gw_stream *s, short revents)
{
    (void)s;
    return (revents & (POLLIN | POLLHUP | POLLERR) ? GW_XP_READ : 0) |
           (revents & POLLOUT ? GW_XP_WRITE : 0);
}

static int tcp_unsent(const gw_stream *s)
{
    (void)s;
    return 0; /* the kernel delivers what was written, also after close() */
}

static int tcp_finish(gw_stream *s)
{
    (void)s;
    return 1;
}

static void tcp_close(gw_stream *s)
{
    gw_tcpinfo t;
    if (gw_tcpinfo_read(s->fd, &t) == 0)
        gw_tcpinfo_add(totals(s), &s->nclosed, &t);
    close(s->fd);
    s->fd = -1;
}

static const char *tcp_error(const gw_stream *s, int e, char *buf, size_t n)
{
    (void)s;
    snprintf(buf, n, "%s", e == ECONNRESET ? "connection closed by the peer" : strerror(e));
    return buf;
}

static void tcp_report(const gw_stream *s, char *buf, size_t n)
{
    gw_tcpinfo t, live;
    int k = s->nclosed;
    memcpy(&t, s->totals, sizeof t);
    if (s->fd >= 0 && gw_tcpinfo_read(s->fd, &live) == 0)
        gw_tcpinfo_add(&t, &k, &live);
    buf[0] = 0;
    if (k == 0)
        return;
    int w = snprintf(buf, n, "tcp ");
    if (w > 0 && (size_t)w < n)
        gw_tcpinfo_format(&t, buf + w, n - (size_t)w);
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
