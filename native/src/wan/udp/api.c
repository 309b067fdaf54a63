/* api.c: the public calls of the reliable-UDP transport (udp.h): options, listener,
 * accept/connect, blocking and non-blocking send/recv, shutdown/close, stats, and the
 * allocation of a connection's memory (all of it, once, here).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/knobs.h"
#include "../aead.h"
#include "setup.h"
#include "sock.h"

struct ism_udp_listener {
    int fd;
    int port;
    ism_auth_key key;
    ism_auth_id self;
    ism_udp_opts o;
};


void ism_udp_opts_default(ism_udp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mtu = 1500;
    o->sndbuf = 32u << 20;
    o->rcvbuf = 32u << 20;
    o->cc = "bbr";
    o->crc = 1;
    o->ack_every = 16;
    o->ack_delay_us = 1000;
    o->dead_ms = 10000;
    o->keepalive_ms = 0; /* dead_ms / 4 */
    o->sock_buf = 8 << 20;
    /* on by default again: the fairness difference it was turned off for (78-84% against
     * 65% of a bottleneck shared with CUBIC) was connection setup, which waited 200 ms
     * unless a probe was due, and so started the UDP flow later than the TCP one */
    o->pmtud = 1;
    o->pmtu_raise_ms = 600000;
    o->suites = ISM_AUTH_SUITES_AEAD;
    o->purpose = "udp";
}

static int check_opts(const ism_udp_opts *o, char *err, size_t errlen)
{
    const char *bad = NULL;
    if (o->mtu < ISM_UDPW_MIN_DGRAM + 28 || o->mtu > ISM_UDPW_MAX_DGRAM + 28)
        bad = "mtu must be 604..9000";
    else if (o->sndbuf < 65536 || o->sndbuf >> 40 || o->rcvbuf < 65536 || o->rcvbuf >> 40)
        bad = "sndbuf and rcvbuf must be 64 KiB..1 TiB";
    else if (!ism_udp_cc_find(o->cc))
        bad = "cc must be bbr or reno";
    else if (o->start_rate && !ism_udp_cc_find(o->cc)->start_at)
        bad = "a start rate needs cc bbr (reno ramps up from its initial window)";
    else if (o->start_rate >> 40)
        bad = "start_rate must be below 1 TB/s";
    else if (o->crc != 0 && o->crc != 1)
        bad = "crc must be 0 or 1";
    else if (o->ack_every < 1 || o->ack_every > 1024 || o->ack_delay_us < 50 ||
             o->ack_delay_us > 1000000)
        bad = "ack_every must be 1..1024 and ack_delay_us 50..1000000";
    else if (o->dead_ms < 100 || o->keepalive_ms < 0 || o->sock_buf < 0)
        bad = "dead_ms must be >= 100, keepalive_ms and sock_buf >= 0";
    else if ((o->pmtud != 0 && o->pmtud != 1) || o->pmtu_raise_ms < 10 ||
             o->pmtu_raise_ms > 86400000)
        bad = "pmtud must be 0 or 1 and pmtu_raise_ms 10..86400000";
    if (bad)
        udp_errf(err, errlen, "reliable UDP options: %s", bad);
    return bad ? -1 : 0;
}

static ism_udp_opts effective(const ism_udp_opts *o);

int ism_udp_opts_check(const ism_udp_opts *o, char *err, size_t errlen)
{
    ism_udp_opts e = effective(o);
    return check_opts(&e, err, errlen);
}

static ism_udp_opts effective(const ism_udp_opts *o)
{
    ism_udp_opts e;
    if (o)
        e = *o;
    else
        ism_udp_opts_default(&e);
    if (e.keepalive_ms == 0)
        e.keepalive_ms = e.dead_ms / 4;
    if (e.pmtu_raise_ms == 0)
        e.pmtu_raise_ms = 600000;
    return e;
}

/* The transport's A/B switches (knobs.def: UDP_GSO, UDP_GRO, UDP_PLACE) are read here, by
 * every program that uses it (the gateway, isthmus-udpperf, isthmus-copy), so that an A/B
 * measurement needs no option of its own in each of them. */
static int udp_switches(ism_udp_conn *c, const char *peer, char *err, size_t errlen)
{
    static const ism_knob_id ids[] = {ISM_K_UDP_GSO, ISM_K_UDP_GRO, ISM_K_UDP_PLACE};
    int *on[] = {&c->gso, &c->gro, &c->place};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        ism_knob_val v = {.num = 1};
        char why[200];
        if (ism_knob_env(ids[i], &v, why, sizeof why) < 0) {
            udp_errf(err, errlen, "reliable UDP to %s: %s", peer, why);
            return -1;
        }
        *on[i] = v.num != 0;
    }
    return 0;
}

ism_udp_conn *udp_conn_new(int fd, const ism_udp_opts *o, const uint8_t tok_tx[ISM_UDPW_TOKEN_LEN],
                           const uint8_t tok_rx[ISM_UDPW_TOKEN_LEN], uint64_t peer_rcvbuf,
                           const ism_aead_keys *keys, int client, const char *peer, char *err,
                           size_t errlen)
{
    ism_udp_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        udp_errf(err, errlen, "out of memory");
        return NULL;
    }
    c->fd = fd;
    c->o = *o;
    if (udp_switches(c, peer, err, errlen) != 0) {
        close(fd);
        free(c);
        return NULL;
    }
    if (udp_seal_init(&c->seal, keys, client) != 0) {
        udp_errf(err, errlen, "reliable UDP to %s: setting up %s failed (OpenSSL)", peer,
                 ism_aead_suite_name(keys->suite));
        close(fd);
        free(c);
        return NULL;
    }
    if (c->seal.on)
        c->o.crc = 0; /* the tag covers every byte */
    c->cc = ism_udp_cc_find(o->cc);
    memcpy(c->tok_tx, tok_tx, ISM_UDPW_TOKEN_LEN);
    memcpy(c->tok_rx, tok_rx, ISM_UDPW_TOKEN_LEN);
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->dgram = (uint32_t)o->mtu - 28;
    c->payload = c->dgram - ISM_UDPW_DATA_HDR - udp_seal_overhead(&c->seal);
    c->sbuf_size = o->sndbuf;
    c->rbuf_size = o->rcvbuf;
    c->sbuf = malloc(c->sbuf_size);
    c->rbuf = malloc(c->rbuf_size);
    c->pkts = calloc(UDP_PKT_RING, sizeof *c->pkts);
    c->chunks = calloc(UDP_CHUNK_RING, sizeof *c->chunks);
    c->rtx = calloc(UDP_CHUNK_RING, sizeof *c->rtx);
    c->ivals = calloc(UDP_IVAL_MAX, sizeof *c->ivals);
    c->rbits = calloc(UDP_RCV_BITS / 64, sizeof *c->rbits);
    if (!c->sbuf || !c->rbuf || !c->pkts || !c->chunks || !c->rtx || !c->ivals || !c->rbits ||
        udp_io_init(c) != 0) {
        udp_errf(err, errlen, "reliable UDP to %s: out of memory for %zu + %zu byte buffers", peer,
                 c->sbuf_size, c->rbuf_size);
        udp_conn_free(c);
        return NULL;
    }
    int64_t now = udp_now_us();
    c->peer_limit = peer_rcvbuf;
    c->last_recv_us = c->last_send_us = now;
    udp_pmtu_init(c, now);
    udp_send_init(c, now);
    udp_recv_init(c);
    return c;
}

void udp_conn_free(ism_udp_conn *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    udp_io_free(c);
    free(c->sbuf);
    free(c->rbuf);
    free(c->pkts);
    free(c->chunks);
    free(c->rtx);
    free(c->ivals);
    free(c->rbits);
    udp_seal_free(&c->seal);
    free(c);
}

ism_udp_listener *ism_udp_open(const char *hostport, const ism_auth_key *key, ism_auth_id self,
                               const ism_udp_opts *o, char *err, size_t errlen)
{
    ism_udp_opts e = effective(o);
    if (!key || !hostport) {
        udp_errf(err, errlen, "ism_udp_open: missing address or key");
        return NULL;
    }
    if (check_opts(&e, err, errlen) != 0)
        return NULL;
    char host[256], copy[300];
    int port;
    /* Port 0 (any free port) is fine for a listener; the parser is for peers' addresses. */
    snprintf(copy, sizeof copy, "%s", hostport);
    size_t len = strlen(copy);
    int any = len > 2 && strcmp(copy + len - 2, ":0") == 0;
    if (any)
        copy[len - 1] = '1';
    if (ism_sock_parse_hostport(copy, host, sizeof host, &port, err, errlen) != 0)
        return NULL;
    int fd = ism_sock_listen(host, any ? 0 : port, 16, err, errlen);
    if (fd < 0)
        return NULL;
    ism_udp_listener *l = calloc(1, sizeof *l);
    if (!l) {
        close(fd);
        udp_errf(err, errlen, "out of memory");
        return NULL;
    }
    l->fd = fd;
    l->port = ism_sock_local_port(fd);
    l->key = *key;
    l->self = self;
    l->o = e;
    return l;
}

int ism_udp_listener_port(const ism_udp_listener *l)
{
    return l->port;
}

int ism_udp_listener_fd(const ism_udp_listener *l)
{
    return l->fd;
}

void ism_udp_listener_close(ism_udp_listener *l)
{
    if (!l)
        return;
    close(l->fd);
    ism_auth_key_clear(&l->key);
    free(l);
}

ism_udp_conn *ism_udp_accept(ism_udp_listener *l, int timeout_ms, char *err, size_t errlen)
{
    if (timeout_ms <= 0) {
        udp_errf(err, errlen, "ism_udp_accept: timeout_ms must be > 0");
        return NULL;
    }
    struct pollfd pfd = {l->fd, POLLIN, 0};
    int r = poll(&pfd, 1, timeout_ms);
    if (r <= 0) {
        udp_errf(err, errlen, "no client connected to port %d within %d ms", l->port, timeout_ms);
        return NULL;
    }
    int tcp = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (tcp < 0) {
        udp_errf(err, errlen, "accept on port %d: %s", l->port, strerror(errno));
        return NULL;
    }
    ism_udp_conn *c = udp_setup_server(tcp, &l->key, l->self, &l->o, timeout_ms, NULL, err, errlen);
    close(tcp);
    return c;
}

/* Setup on a TCP connection the caller opened (client) or accepted (server). */
static ism_udp_conn *setup_fd(int client, int tcp, const ism_auth_key *key, ism_auth_id self,
                              const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                              size_t errlen)
{
    ism_udp_opts e = effective(o);
    if (auth_rc)
        *auth_rc = 0;
    if (!key || tcp < 0 || timeout_ms <= 0) {
        udp_errf(err, errlen, "ism_udp_%s_fd: missing socket or key, or timeout_ms <= 0",
                 client ? "connect" : "accept");
        return NULL;
    }
    if (check_opts(&e, err, errlen) != 0)
        return NULL;
    return client ? udp_setup_client(tcp, key, self, &e, timeout_ms, auth_rc, err, errlen)
                  : udp_setup_server(tcp, key, self, &e, timeout_ms, auth_rc, err, errlen);
}

ism_udp_conn *ism_udp_accept_fd(int tcp, const ism_auth_key *key, ism_auth_id self,
                                const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                                size_t errlen)
{
    return setup_fd(0, tcp, key, self, o, timeout_ms, auth_rc, err, errlen);
}

ism_udp_conn *ism_udp_connect_fd(int tcp, const ism_auth_key *key, ism_auth_id self,
                                 const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                                 size_t errlen)
{
    return setup_fd(1, tcp, key, self, o, timeout_ms, auth_rc, err, errlen);
}

ism_udp_conn *ism_udp_setup_authed(int client, int tcp, const ism_auth_key *key,
                                   ism_auth_id peer, const ism_aead_keys *keys,
                                   const ism_udp_opts *o, int timeout_ms, char *err,
                                   size_t errlen)
{
    ism_udp_opts e = effective(o);
    if (!key || tcp < 0 || timeout_ms <= 0) {
        udp_errf(err, errlen, "ism_udp_setup_authed: missing socket or key, or timeout_ms <= 0");
        return NULL;
    }
    if (check_opts(&e, err, errlen) != 0)
        return NULL;
    return client ? udp_setup_client_authed(tcp, key, peer, keys, &e, timeout_ms, err, errlen)
                  : udp_setup_server_authed(tcp, key, peer, keys, &e, timeout_ms, err, errlen);
}

ism_udp_conn *ism_udp_connect(const char *hostport, const ism_auth_key *key, ism_auth_id self,
                              const ism_udp_opts *o, int timeout_ms, char *err, size_t errlen)
{
    ism_udp_opts e = effective(o);
    if (!key || !hostport || timeout_ms <= 0) {
        udp_errf(err, errlen, "ism_udp_connect: missing address or key, or timeout_ms <= 0");
        return NULL;
    }
    if (check_opts(&e, err, errlen) != 0)
        return NULL;
    char host[256];
    int port;
    if (ism_sock_parse_hostport(hostport, host, sizeof host, &port, err, errlen) != 0)
        return NULL;
    int tcp = ism_sock_connect(host, port, timeout_ms, err, errlen);
    if (tcp < 0)
        return NULL;
    ism_udp_conn *c = udp_setup_client(tcp, key, self, &e, timeout_ms, NULL, err, errlen);
    close(tcp);
    return c;
}

/* Room for new bytes: the send buffer must keep everything unacknowledged, and of it at
 * most two congestion windows (or UDP_NOTSENT_MIN) not yet sent, as TCP_NOTSENT_LOWAT
 * does for TCP: a writer that could fill the whole buffer would queue a message behind
 * buffer / rate seconds of older data (16 MiB at 1 Gbit/s: 134 ms); kept in the
 * caller's hands instead, control messages and acknowledgements can still go ahead. */
static size_t send_space(const ism_udp_conn *c)
{
    size_t space = c->sbuf_size - (size_t)(c->snd_end - c->snd_una);
    uint64_t cap = 2 * c->cc->cwnd(c->cc_state), unsent = c->snd_end - c->snd_nxt;
    if (cap < UDP_NOTSENT_MIN)
        cap = UDP_NOTSENT_MIN;
    uint64_t room = unsent >= cap ? 0 : cap - unsent;
    return room < space ? (size_t)room : space;
}

static size_t push(ism_udp_conn *c, const uint8_t *p, size_t n)
{
    size_t space = send_space(c);
    if (n > space)
        n = space;
    size_t at = c->snd_end % c->sbuf_size;
    size_t first = n < c->sbuf_size - at ? n : c->sbuf_size - at;
    memcpy(c->sbuf + at, p, first);
    memcpy(c->sbuf, p + first, n - first);
    c->snd_end += n;
    return n;
}

static int64_t deadline_us(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : udp_now_us() + (int64_t)timeout_ms * 1000;
}

ssize_t ism_udp_send_nb(ism_udp_conn *c, const void *buf, size_t n)
{
    if (c->err)
        return c->err;
    if (c->fin_wanted)
        return ISM_UDP_ESHUT;
    size_t k = push(c, buf, n);
    int rc = udp_progress_tx(c, udp_now_us());
    if (rc)
        return rc;
    return k ? (ssize_t)k : (n ? ISM_UDP_EAGAIN : 0);
}

ssize_t ism_udp_sendv_nb(ism_udp_conn *c, const struct iovec *iov, int iovcnt)
{
    if (c->err)
        return c->err;
    if (c->fin_wanted)
        return ISM_UDP_ESHUT;
    size_t k = 0, want = 0;
    for (int i = 0; i < iovcnt; i++) {
        want += iov[i].iov_len;
        size_t m = push(c, iov[i].iov_base, iov[i].iov_len);
        k += m;
        if (m < iov[i].iov_len)
            break; /* the buffer is full: later parts must not overtake this one */
    }
    int rc = udp_progress_tx(c, udp_now_us());
    if (rc)
        return rc;
    return k ? (ssize_t)k : (want ? ISM_UDP_EAGAIN : 0);
}

ssize_t ism_udp_send(ism_udp_conn *c, const void *buf, size_t n, int timeout_ms)
{
    if (c->err)
        return c->err;
    if (c->fin_wanted)
        return ISM_UDP_ESHUT;
    int64_t dl = deadline_us(timeout_ms);
    const uint8_t *p = buf;
    size_t done = 0;
    for (;;) {
        done += push(c, p + done, n - done);
        int rc = udp_progress_tx(c, udp_now_us());
        if (rc)
            return rc;
        if (done == n)
            return (ssize_t)n;
        if (dl >= 0 && udp_now_us() >= dl)
            return done ? (ssize_t)done : ISM_UDP_ETIMEDOUT;
        if ((rc = udp_wait(c, dl)) != 0)
            return rc;
    }
}

static int at_eof(const ism_udp_conn *c)
{
    return c->fin_off != UINT64_MAX && c->rcv_read == c->fin_off;
}

ssize_t ism_udp_recv_nb(ism_udp_conn *c, void *buf, size_t n)
{
    if (c->post_buf)
        return ISM_UDP_EINVAL; /* the posted receive owns the next bytes */
    if (c->rcv_nxt == c->rcv_read && !at_eof(c)) {
        int rc = udp_progress(c, udp_now_us());
        if (rc)
            return rc;
    }
    size_t k = udp_recv_copy(c, buf, n);
    if (k)
        return (ssize_t)k;
    if (at_eof(c) || n == 0)
        return 0;
    return c->err ? c->err : ISM_UDP_EAGAIN;
}

/* The posted receive is over: all of it filled, or the stream ended inside it. */
static int post_ended(const ism_udp_conn *c)
{
    return udp_recv_filled(c) == c->post_len || at_eof(c);
}

/* Stream offsets stay below 2^62 (wire.c), so a post's end cannot wrap. */
#define POST_MAX ((size_t)1 << 40)

int ism_udp_recv_post(ism_udp_conn *c, void *buf, size_t n)
{
    if (!buf || n == 0 || n > POST_MAX || c->post_buf)
        return ISM_UDP_EINVAL;
    udp_recv_post(c, buf, n);
    return 0;
}

size_t ism_udp_recv_filled(const ism_udp_conn *c)
{
    return udp_recv_filled(c);
}

ssize_t ism_udp_recv_test(ism_udp_conn *c)
{
    if (!c->post_buf)
        return ISM_UDP_EINVAL;
    if (!post_ended(c))
        udp_progress(c, udp_now_us()); /* its error, if any, is c->err below */
    if (post_ended(c))
        return (ssize_t)udp_recv_unpost(c);
    return c->err ? c->err : ISM_UDP_EAGAIN;
}

ssize_t ism_udp_recv_cancel(ism_udp_conn *c)
{
    if (!c->post_buf)
        return ISM_UDP_EINVAL;
    return (ssize_t)udp_recv_unpost(c);
}

/* The blocking receives without a posted buffer (ISTHMUS_UDP_PLACE=0, for measuring what
 * placement saves): copy out of the ring until at least one byte, or all n, arrived. */
static ssize_t recv_via_ring(ism_udp_conn *c, uint8_t *buf, size_t n, int64_t dl, int all)
{
    size_t done = 0;
    for (;;) {
        done += udp_recv_copy(c, buf + done, n - done);
        if (done == n || (done && !all) || at_eof(c))
            break;
        if (c->err || (dl >= 0 && udp_now_us() >= dl))
            break;
        udp_wait(c, dl); /* an error is c->err, reported once the ring is empty */
    }
    if (done && c->ack_now && !c->err)
        udp_progress(c, udp_now_us()); /* open the window promptly */
    if (done || at_eof(c) || n == 0)
        return (ssize_t)done;
    return c->err ? c->err : ISM_UDP_ETIMEDOUT;
}

/* The blocking receives: post the caller's buffer (what the ring holds moves into it at
 * once), let the waits place arriving payload straight into it, and end the post when at
 * least one byte (all n with `all`) is there, the stream ended, the connection failed or
 * the caller's time is up. Bytes placed beyond a hole when it ends go back to the ring. */
static ssize_t recv_blocking(ism_udp_conn *c, void *buf, size_t n, int timeout_ms, int all)
{
    if (c->post_buf)
        return ISM_UDP_EINVAL;
    int64_t dl = deadline_us(timeout_ms);
    if (n == 0)
        return 0;
    if (n > POST_MAX)
        n = POST_MAX; /* returns fewer bytes, as a stream read may */
    if (!c->place)
        return recv_via_ring(c, buf, n, dl, all);
    udp_recv_post(c, buf, n);
    for (;;) {
        size_t k = udp_recv_filled(c);
        if (k == n || (k && !all) || at_eof(c) || c->err)
            break;
        if (dl >= 0 && udp_now_us() >= dl)
            break;
        udp_wait(c, dl);
    }
    /* A window update is due: send it while the buffer is still posted, so what the
     * same step reads lands in place too. */
    if (udp_recv_filled(c) < n && c->ack_now && !c->err)
        udp_progress(c, udp_now_us());
    size_t k = udp_recv_unpost(c);
    if (c->ack_now && !c->err)
        udp_progress(c, udp_now_us());
    if (k || at_eof(c))
        return (ssize_t)k;
    return c->err ? c->err : ISM_UDP_ETIMEDOUT;
}

ssize_t ism_udp_recv(ism_udp_conn *c, void *buf, size_t n, int timeout_ms)
{
    return recv_blocking(c, buf, n, timeout_ms, 0);
}

ssize_t ism_udp_recv_all(ism_udp_conn *c, void *buf, size_t n, int timeout_ms)
{
    return recv_blocking(c, buf, n, timeout_ms, 1);
}

int ism_udp_fd(const ism_udp_conn *c)
{
    return c->fd;
}

short ism_udp_events(const ism_udp_conn *c)
{
    return udp_events(c, udp_now_us());
}

int ism_udp_readable(const ism_udp_conn *c)
{
    if (c->post_buf)
        return post_ended(c) || c->err != 0;
    return c->rcv_nxt > c->rcv_read || at_eof(c) || c->err != 0;
}

size_t ism_udp_writable(const ism_udp_conn *c)
{
    if (c->err || c->fin_wanted)
        return 0;
    return send_space(c);
}

int ism_udp_status(const ism_udp_conn *c)
{
    return c->err;
}

int ism_udp_settled(const ism_udp_conn *c)
{
    return udp_send_idle(c);
}

ism_auth_id ism_udp_peer_id(const ism_udp_conn *c)
{
    return c->peer_id;
}

int64_t ism_udp_next_timer_us(const ism_udp_conn *c)
{
    int64_t now = udp_now_us();
    int64_t t = udp_next_timer_abs(c, now);
    return t <= now ? 0 : t - now;
}

int ism_udp_progress(ism_udp_conn *c)
{
    return udp_progress(c, udp_now_us());
}

int ism_udp_shutdown(ism_udp_conn *c)
{
    if (c->err)
        return c->err;
    c->fin_wanted = 1;
    return udp_progress(c, udp_now_us());
}

/* The last message a side sends before its socket closes goes out this many times: no
 * answer can ask for it again, and a peer that misses it waits out a linger (10 RTOs) or
 * half its dead-peer timeout. */
#define LEAVE_COPIES 3

static void send_close(ism_udp_conn *c, uint32_t reason)
{
    uint8_t p[ISM_UDPW_CLOSE_LEN + UDP_SEAL_OVERHEAD];
    size_t n = ism_udpw_encode_close(p, c->tok_tx, reason);
    n = udp_seal_buf(c, p, n);
    if (n)
        send(c->fd, p, n, MSG_DONTWAIT);
}

int ism_udp_close(ism_udp_conn *c, int timeout_ms)
{
    if (!c)
        return 0;
    /* nothing is written into a posted buffer once close is called */
    c->post_buf = NULL;
    int64_t dl = deadline_us(timeout_ms < 0 ? 30000 : timeout_ms);
    int rc = c->err;
    if (!rc) {
        c->fin_wanted = 1;
        int64_t settled = -1; /* when all data was acknowledged and the peer's FIN was in */
        for (;;) {
            int64_t now = udp_now_us();
            if ((udp_send_idle(c) || c->peer_done) && c->fin_off != UINT64_MAX)
                break;
            if (c->snd_una == c->snd_end && c->fin_off != UINT64_MAX) {
                /* Only our FIN's ACK is missing: either the FIN or its ACK was lost. Keep
                 * sending the FIN (the peer may be waiting for it) for half the dead-peer
                 * timeout; after that the peer, which has ended its own stream, most
                 * likely got it and left before our copy of its ACK arrived. */
                if (settled < 0)
                    settled = now;
                else if (now - settled > (int64_t)c->o.dead_ms * 500)
                    break;
            }
            if (now >= dl) {
                rc = ISM_UDP_ETIMEDOUT;
                snprintf(c->errmsg, sizeof c->errmsg,
                         "closing the connection to %s: %s within %d ms", c->peer,
                         c->snd_una == c->snd_end ? "the peer did not end its stream"
                                                  : "not all data was acknowledged",
                         timeout_ms);
                break;
            }
            if ((rc = udp_wait(c, dl)) != 0)
                break;
        }
    }
    if (rc == 0 && !c->peer_done) {
        /* Linger while the peer may still need an answer (its FIN's ACK, or the ACK of
         * its last data, may have been lost), at most 10 RTOs: nothing we hold is needed
         * any more, only our answers are. With the peer's whole stream in, say DONE now,
         * again whenever the peer still sends (it has not heard us), and when leaving:
         * the peer then knows its stream arrived even if every ACK it waits for is lost,
         * instead of resending into a closed socket until its dead-peer timeout. Such a
         * linger lasts until the peer is known to have finished: its DONE (it lingers
         * too) or its closing message (it left on ours). Leaving after 3 RTOs of silence
         * instead left before the peer's next FIN when our DONE was lost, since the
         * peer's timer had backed off beyond that, and the peer then waited half its
         * dead-peer timeout (closes of 2.5-4.4 s at 30% loss, about one in 12). */
        int whole = c->rcv_nxt == c->fin_off;
        if (whole)
            send_close(c, ISM_UDPW_CLOSE_DONE);
        int64_t cap = udp_now_us() + 10 * udp_rto_us(c);
        if (cap > dl)
            cap = dl;
        for (;;) {
            int64_t heard = c->last_recv_us;
            int64_t until = whole ? cap : heard + 3 * udp_rto_us(c);
            if (until > cap)
                until = cap;
            if (c->peer_done || udp_now_us() >= until || udp_wait(c, until) != 0)
                break;
            if (whole && c->last_recv_us != heard)
                send_close(c, ISM_UDPW_CLOSE_DONE);
        }
        if (whole)
            for (int i = 0; i < LEAVE_COPIES; i++)
                send_close(c, ISM_UDPW_CLOSE_DONE);
    } else if (c->err != ISM_UDP_ECLOSED && c->err != ISM_UDP_EDEAD) {
        /* after the peer's DONE this ends its linger; otherwise it tells it we left */
        for (int i = 0; i < LEAVE_COPIES; i++)
            send_close(c, ISM_UDPW_CLOSE_ABORT);
    }
    udp_conn_free(c);
    return rc;
}

void ism_udp_abort(ism_udp_conn *c)
{
    if (!c)
        return;
    if (!c->peer_closed)
        send_close(c, ISM_UDPW_CLOSE_ABORT);
    udp_conn_free(c);
}

const char *ism_udp_error(const ism_udp_conn *c)
{
    return c->err || c->errmsg[0] ? c->errmsg : "no error";
}

const char *ism_udp_peer_name(const ism_udp_conn *c) { return c->peer; }

void ism_udp_get_stats(const ism_udp_conn *c, ism_udp_stats *s)
{
    *s = c->st;
    s->srtt_us = c->srtt_us;
    s->min_rtt_us = c->min_rtt_us;
    s->rttvar_us = c->rttvar_us;
    s->cwnd = c->cc->cwnd(c->cc_state);
    s->pacing_rate = c->cc->pacing_rate(c->cc_state);
    s->inflight = c->inflight;
    s->cc = c->cc->name;
    s->cc_state = c->cc->state(c->cc_state);
    s->payload = c->payload;
    s->plpmtu = c->dgram + 28;
    s->pkts_unauth = c->seal.rejected;
    s->rekeys = udp_seal_rekeys(&c->seal);
    s->seal_batches = c->seal.par_batches;
    s->suite = c->seal.on ? c->seal.suite : ISM_AEAD_NONE;
    s->pmtu_base = c->pm.base + 28;
    s->pmtu_ceiling = c->pm.ceil + 28;
}

int ism_udp_use_pool(ism_udp_conn *c, struct ism_sealpool *pool)
{
    return udp_seal_use_pool(&c->seal, pool);
}

const char *ism_udp_strerror(int code)
{
    switch (code) {
    case 0: return "success";
    case ISM_UDP_EAGAIN: return "would block";
    case ISM_UDP_ETIMEDOUT: return "timed out";
    case ISM_UDP_EDEAD: return "peer silent past the dead-peer timeout";
    case ISM_UDP_ECLOSED: return "connection aborted";
    case ISM_UDP_ESETUP: return "connection setup failed";
    case ISM_UDP_EIO: return "socket error";
    case ISM_UDP_EINVAL: return "invalid argument";
    case ISM_UDP_ESHUT: return "stream already shut down";
    default: return "unknown error";
    }
}
