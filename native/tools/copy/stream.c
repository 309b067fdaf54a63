/* stream.c: isthmus-copy's authenticated byte stream over reliable UDP or TCP (stream.h). */
#define _GNU_SOURCE
#include "stream.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "sock.h"

/* Identities in the handshake: the two ends must differ (auth.h refuses an echo). */
static const ism_auth_id CLIENT_ID = {0, 2}, SERVER_ID = {1, 2};

typedef struct tcp_prep_arg {
    size_t window;
    const char *cc;
} tcp_prep_arg;

static int tcp_prep(int fd, void *arg)
{
    const tcp_prep_arg *a = arg;
    /* The preamble and the handshake's first message leave back to back: under Nagle's
     * algorithm the second would wait for the first one's ACK, a round trip. */
    ism_sock_set_nodelay(fd, 1);
    if (a->window) {
        int w = a->window > (1u << 30) ? 1 << 30 : (int)a->window;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &w, sizeof w);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &w, sizeof w);
    }
    if (a->cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, a->cc, (socklen_t)strlen(a->cc)) != 0)
        return -1;
    return 0;
}

/* The AEAD records of a TCP stream, when the handshake agreed on a cipher. */
static int seal_tcp(icp_stream *s, ism_aead_keys *keys, int client)
{
    int rc = 0;
    if (keys->suite != ISM_AEAD_NONE) {
        s->ss = malloc(sizeof *s->ss);
        if (!s->ss || ism_sstream_init(s->ss, keys, client) != 0) {
            free(s->ss);
            s->ss = NULL;
            snprintf(s->err, sizeof s->err, "%s: setting up %s failed (out of memory or "
                     "OpenSSL)", s->peer, ism_aead_suite_name(keys->suite));
            rc = -1;
        }
    }
    ism_aead_keys_wipe(keys);
    return rc;
}

int icp_stream_connect(icp_stream *s, const char *hostport, int udp, const ism_auth_key *key,
                       const ism_udp_opts *o, size_t window, const char *cc, int tmo_ms)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->tmo_ms = tmo_ms;
    snprintf(s->peer, sizeof s->peer, "%s", hostport);
    char host[256], err[512] = "";
    int port;
    if (ism_sock_parse_hostport(hostport, host, sizeof host, &port, err, sizeof err) != 0) {
        snprintf(s->err, sizeof s->err, "%s", err);
        return -1;
    }
    tcp_prep_arg pa = {udp ? 0 : window, udp ? NULL : cc};
    int fd = ism_sock_connect_prep(host, port, tmo_ms, tcp_prep, &pa, err, sizeof err);
    if (fd < 0) {
        if (!udp && cc && errno != ECONNREFUSED && errno != ETIMEDOUT)
            snprintf(s->err, sizeof s->err, "%s (is TCP congestion control '%s' available?)", err, cc);
        else
            snprintf(s->err, sizeof s->err, "%s", err);
        return -1;
    }
    uint8_t pre[ICP_PREAMBLE];
    icp_preamble_encode(pre, udp ? 'u' : 't');
    if (ism_sock_write_full(fd, pre, sizeof pre, ism_now_ms() + tmo_ms, NULL) != 0) {
        snprintf(s->err, sizeof s->err, "%s: sending the request: %s", hostport, strerror(errno));
        close(fd);
        return -1;
    }
    if (udp) {
        s->u = ism_udp_connect_fd(fd, key, CLIENT_ID, o, tmo_ms, NULL, err, sizeof err);
        close(fd);
        if (!s->u) {
            snprintf(s->err, sizeof s->err, "%s", err);
            return -1;
        }
        return 0;
    }
    ism_aead_keys keys;
    if (ism_auth_run(fd, 0, key, CLIENT_ID, o->suites, 0, "copy", NULL, &keys, tmo_ms, err,
                     sizeof err) != 0) {
        snprintf(s->err, sizeof s->err, "%s", err);
        close(fd);
        return -1;
    }
    s->fd = fd;
    return seal_tcp(s, &keys, 1);
}

/* The message for a connection that ran out of its pre-authentication time. */
static int preauth_late(icp_stream *s, int preauth_ms, int *auth_failed)
{
    *auth_failed = 1;
    snprintf(s->err, sizeof s->err, "%s: did not authenticate within %g s (the limit for a "
             "connection that has not proven the job secret)", s->peer, preauth_ms / 1000.0);
    return -1;
}

int icp_stream_accept(icp_stream *s, int tcp, const ism_auth_key *key, const ism_udp_opts *o,
                      size_t window, int tmo_ms, int preauth_ms, int *auth_failed)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->tmo_ms = tmo_ms;
    *auth_failed = 0;
    ism_sock_peer_name(tcp, s->peer, sizeof s->peer);
    ism_sock_set_nodelay(tcp, 1); /* the handshake's replies must not wait for ACKs */
    int64_t deadline = ism_now_ms() + preauth_ms;
    uint8_t pre[ICP_PREAMBLE];
    const char *why = NULL;
    int rc = ism_sock_read_full(tcp, pre, sizeof pre, deadline, NULL);
    if (rc == ISM_SOCK_ETIMEDOUT)
        return preauth_late(s, preauth_ms, auth_failed);
    int transport = rc == 0 ? icp_preamble_decode(pre, &why) : -1;
    if (transport < 0) {
        snprintf(s->err, sizeof s->err, "%s: %s", s->peer,
                 rc != 0 ? "closed the connection before its request" : why);
        return -1;
    }
    int64_t left = deadline - ism_now_ms();
    int left_ms = left < 1 ? 1 : (int)left;
    char err[512] = "";
    int arc = 0;
    if (transport == 'u') {
        s->u = ism_udp_accept_fd(tcp, key, SERVER_ID, o, left_ms, &arc, err, sizeof err);
        *auth_failed = arc != 0;
    } else {
        tcp_prep_arg pa = {window, NULL};
        tcp_prep(tcp, &pa);
        ism_aead_keys keys;
        arc = ism_auth_run(tcp, 1, key, SERVER_ID, o->suites, 0, "copy", NULL, &keys, left_ms, err,
                           sizeof err);
        *auth_failed = arc != 0;
        if (arc == 0) {
            s->fd = tcp;
            if (seal_tcp(s, &keys, 0) != 0)
                return -1;
        }
    }
    if (arc == ISM_AUTH_ETIMEDOUT)
        return preauth_late(s, preauth_ms, auth_failed);
    if (arc != 0 || (transport == 'u' && !s->u)) {
        snprintf(s->err, sizeof s->err, "%s", err);
        return -1;
    }
    return 0;
}

/* One wait of the idle limit for the socket: 0 ready, or ISM_SOCK_ETIMEDOUT. */
static int idle_wait(icp_stream *s, short ev)
{
    struct pollfd p = {s->fd, ev, 0};
    int r;
    do
        r = poll(&p, 1, s->tmo_ms);
    while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : r == 0 ? ISM_SOCK_ETIMEDOUT : ISM_SOCK_EIO;
}

/* As ism_sock_write_full through the records: bytes sealed in *k; fails only when nothing
 * moved for the idle limit. */
static int sealed_write(icp_stream *s, const uint8_t *p, size_t n, size_t *k)
{
    *k = 0;
    while (*k < n) {
        struct iovec v = {(void *)(p + *k), n - *k};
        ssize_t t = ism_sstream_seal(s->ss, &v, 1);
        if (t < 0)
            return ISM_SOCK_EIO;
        *k += (size_t)t;
        int f = ism_sstream_flush(s->ss, s->fd);
        if (f < 0)
            return errno == EPIPE || errno == ECONNRESET ? ISM_SOCK_ECLOSED : ISM_SOCK_EIO;
        if (f == 1 || t == 0) {
            int w = idle_wait(s, POLLOUT);
            if (w)
                return w;
        }
    }
    return 0;
}

static int sealed_read(icp_stream *s, uint8_t *p, size_t n, size_t *k)
{
    *k = 0;
    while (*k < n) {
        ssize_t r = ism_sstream_read(s->ss, s->fd, p + *k, n - *k);
        if (r > 0) {
            *k += (size_t)r;
            continue;
        }
        if (r == 0)
            return ISM_SOCK_ECLOSED;
        if (errno == EBADMSG) {
            errno = EBADMSG; /* a record that failed authentication: the copy fails */
            return ISM_SOCK_EIO;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == ECONNRESET ? ISM_SOCK_ECLOSED : ISM_SOCK_EIO;
        int w = idle_wait(s, POLLIN);
        if (w)
            return w;
    }
    return 0;
}

static void fail_udp(icp_stream *s, ssize_t r, const char *what)
{
    if (r == ISM_UDP_ETIMEDOUT)
        snprintf(s->err, sizeof s->err, "%s %s: nothing moved for %.1f s (timeout)", what,
                 s->peer, s->tmo_ms / 1000.0);
    else
        snprintf(s->err, sizeof s->err, "%s %s: %s", what, s->peer, ism_udp_error(s->u));
}

int icp_send(icp_stream *s, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    size_t done = 0;
    while (done < n) {
        if (s->u) {
            ssize_t r = ism_udp_send(s->u, p + done, n - done, s->tmo_ms);
            if (r <= 0) {
                fail_udp(s, r, "sending to");
                return -1;
            }
            done += (size_t)r;
            s->sent += (uint64_t)r;
            continue;
        }
        size_t k = 0;
        int rc = s->ss ? sealed_write(s, p + done, n - done, &k)
                       : ism_sock_write_full(s->fd, p + done, n - done, ism_now_ms() + s->tmo_ms, &k);
        done += k;
        s->sent += k;
        if (rc == 0 || (rc == ISM_SOCK_ETIMEDOUT && k > 0))
            continue;
        snprintf(s->err, sizeof s->err, "sending to %s: %s", s->peer,
                 rc == ISM_SOCK_ETIMEDOUT ? "nothing moved within the timeout"
                 : rc == ISM_SOCK_ECLOSED ? "the peer closed the connection"
                                          : strerror(errno));
        return -1;
    }
    return 0;
}

int icp_recv(icp_stream *s, void *buf, size_t n)
{
    uint8_t *p = buf;
    size_t done = 0;
    s->eof = 0;
    while (done < n) {
        if (s->u) {
            /* all of it: the buffer stays posted until full, so payload lands in it
             * straight from the packets (none of it through the receive ring) */
            ssize_t r = ism_udp_recv_all(s->u, p + done, n - done, s->tmo_ms);
            if (r == 0) {
                s->eof = done == 0;
                snprintf(s->err, sizeof s->err, "%s ended the connection in the middle of a message",
                         s->peer);
                return -1;
            }
            if (r < 0) {
                fail_udp(s, r, "receiving from");
                return -1;
            }
            done += (size_t)r;
            continue;
        }
        size_t k = 0;
        int rc = s->ss ? sealed_read(s, p + done, n - done, &k)
                       : ism_sock_read_full(s->fd, p + done, n - done, ism_now_ms() + s->tmo_ms, &k);
        done += k;
        if (rc == 0 || (rc == ISM_SOCK_ETIMEDOUT && k > 0))
            continue;
        s->eof = rc == ISM_SOCK_ECLOSED && done == 0;
        snprintf(s->err, sizeof s->err, "receiving from %s: %s", s->peer,
                 rc == ISM_SOCK_ETIMEDOUT ? "nothing arrived within the timeout"
                 : rc == ISM_SOCK_ECLOSED ? "the peer closed the connection"
                 : errno == EBADMSG       ? "a record failed authentication (damaged or forged "
                                            "on the path; nothing of it was used)"
                                          : strerror(errno));
        return -1;
    }
    return 0;
}

static void free_seal(icp_stream *s)
{
    if (s->ss) {
        ism_sstream_free(s->ss);
        free(s->ss);
        s->ss = NULL;
    }
}

int icp_close(icp_stream *s)
{
    int rc = 0;
    if (s->u) {
        int r = ism_udp_close(s->u, s->tmo_ms);
        if (r != 0) {
            snprintf(s->err, sizeof s->err, "closing the connection to %s: %s", s->peer,
                     ism_udp_strerror(r));
            rc = -1;
        }
        s->u = NULL;
    }
    if (s->fd >= 0) {
        /* our sealed records first, then our end, then the peer's: its close tells us it
         * read everything; a peer that keeps sending instead is cut off at the idle limit */
        if (s->ss && (ism_sstream_seal_end(s->ss) != 0 ||
                      ism_sstream_write_full(s->ss, s->fd, NULL, 0, ism_now_ms() + s->tmo_ms))) {
            snprintf(s->err, sizeof s->err, "closing the connection to %s: the last bytes did "
                     "not go out", s->peer);
            rc = -1;
        }
        shutdown(s->fd, SHUT_WR);
        char b[256];
        int64_t deadline = ism_now_ms() + s->tmo_ms;
        struct timeval tv = {s->tmo_ms / 1000, (s->tmo_ms % 1000) * 1000};
        setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        while (recv(s->fd, b, sizeof b, 0) > 0 && ism_now_ms() < deadline)
            ;
        close(s->fd);
        s->fd = -1;
    }
    free_seal(s);
    return rc;
}

void icp_abort(icp_stream *s)
{
    if (s->u)
        ism_udp_abort(s->u);
    s->u = NULL;
    if (s->fd >= 0) {
        struct linger lg = {1, 0}; /* reset: the peer learns at once */
        setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(s->fd);
    }
    s->fd = -1;
    free_seal(s);
}

const char *icp_transport(const icp_stream *s)
{
    return s->u ? "udp" : "tcp";
}

uint64_t icp_unacked(const icp_stream *s)
{
    if (s->u) {
        ism_udp_stats st;
        ism_udp_get_stats(s->u, &st);
        return st.bytes_acked < s->sent ? s->sent - st.bytes_acked : 0;
    }
    int q = 0;
    uint64_t mine = s->ss ? ism_sstream_pending(s->ss) : 0;
    if (s->fd < 0 || ioctl(s->fd, SIOCOUTQ, &q) != 0 || q < 0)
        return mine;
    return (uint64_t)q + mine;
}

int icp_wait_readable(icp_stream *s, int ms)
{
    if (!s->u) {
        if (s->ss && ism_sstream_readable(s->ss))
            return 1;
        struct pollfd p = {s->fd, POLLIN, 0};
        return poll(&p, 1, ms) > 0 ? 1 : 0;
    }
    int64_t deadline = ism_now_ms() + ms;
    for (;;) {
        if (ism_udp_readable(s->u))
            return 1;
        int64_t left = deadline - ism_now_ms(), timer = ism_udp_next_timer_us(s->u) / 1000 + 1;
        if (left <= 0)
            return 0;
        struct pollfd p = {ism_udp_fd(s->u), ism_udp_events(s->u), 0};
        poll(&p, 1, (int)(timer < left ? timer : left));
        int rc = ism_udp_progress(s->u);
        if (rc != 0) {
            fail_udp(s, rc, "waiting for");
            return -1;
        }
    }
}
