/* setup.c: connections on their way to becoming a stream of a link.
 *
 * Both directions run here, from the event loop, and never block it: a stream we dial
 * (a non-blocking connect, the client side of the handshake, our HELLO) and a
 * connection someone made to our listener (the server side of the handshake, then the
 * peer's HELLO naming the link, stream and attempt it belongs to). Every step moves what
 * the socket has and returns, so a peer that is silent, slow or hostile delays nobody
 * but itself; authenticated links are serviced as if it were not there.
 *
 * Until a connection to our listener has authenticated, it is a stranger, and what
 * strangers may hold is bounded: each gets GW_PREAUTH_MS (well below the time after
 * which a silent stream counts as dead) to prove it holds the job secret; one address
 * holds at most as many as a legitimate peer opens at once (all its gateways dialing
 * all their streams: 16 with one gateway and the most streams, at least 4), strangers
 * together at most twice that (at least 32). A stranger past either cap evicts the
 * oldest one of its own address, or else the oldest of all: a gateway of the job
 * authenticates within about a round trip, so the old ones are the ones stalling. What strangers cause is logged at
 * most GW_STRANGER_LOGS lines per 10 s, so they cannot flood the job's output either.
 *
 * After the handshake the transport finishes its set-up (xport.h authed(): for UDP a
 * blocking exchange of parameters, bounded by GW_SETUP_TIMEOUT_MS, which only a holder
 * of the job secret can cause). Results go to links.c once a round has been serviced
 * (sweep()), so a link that cancels its other attempts never pulls a set-up out from
 * under the loop.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../wan/aead.h"
#include "../wan/sock.h"
#include "gateway.h"

#define GW_PREAUTH_MS 2000        /* a stranger's time to authenticate (plus 2 RTTs) */
#define GW_STRANGERS_MIN 32       /* unauthenticated connections held at once, at least */
#define GW_STRANGERS_PER_ADDR_MIN 4 /* ... from one address, at least */
#define GW_ACCEPTS_PER_ROUND 64   /* connections taken from the backlog per loop round */
#define GW_STRANGER_LOGS 5        /* lines about strangers per 10 s */

enum { SU_CONNECT, SU_AUTH, SU_HELLO_OUT, SU_HELLO_IN };
enum { SU_RUNNING = 0, SU_DONE = 1, SU_FAILED = 2 };

typedef struct gw_setup {
    int phase, status;
    int auth_failed;        /* failed: the peer did not authenticate (not a network error) */
    int fd;                 /* the TCP connection until the transport takes it over */
    gw_stream st;           /* after authed(): the transport's stream */
    ism_auth_id peer;       /* who authenticated */
    gw_link *link;          /* dialed: the link, stream index and attempt */
    int probe;              /* dialed only to see that a path answers (paths.c) */
    size_t got;             /* bytes received during the handshake */
    int idx;
    uint32_t epoch;
    uint32_t addr;          /* accepted: the peer's IPv4 address (network order) */
    int64_t born_ms, deadline_ms;
    char name[64];          /* host:port of the other end, for messages */
    char err[400];
    ism_auth_hs hs;
    uint8_t hello[ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE];
    size_t hello_off;
} gw_setup;

static gw_setup **su;
static int nsu, capsu;
static gw_setup **polled; /* which set-up each poll slot of the last gw_setup_poll() is */
static int cappolled;
static uint64_t strangers_refused, strangers_evicted;

static int dialed(const gw_setup *s) { return s->link != NULL; }

/* What one address may hold: what a peer site's gateways open at once when all of them
 * dial us (they may share a host), so that a legitimate burst never evicts itself. */
static int per_addr_cap(void)
{
    int g = 1;
    for (int i = 0; i < gw.lay.nsites; i++)
        if (i != gw.lay.site && gw.lay.site_gws[i] > g)
            g = gw.lay.site_gws[i];
    int per = g * (gw.streams > 0 ? gw.streams : gw.xp->max_streams);
    return per < GW_STRANGERS_PER_ADDR_MIN ? GW_STRANGERS_PER_ADDR_MIN : per;
}

static int total_cap(void)
{
    int all = 2 * per_addr_cap();
    return all < GW_STRANGERS_MIN ? GW_STRANGERS_MIN : all;
}

static int stranger(const gw_setup *s)
{
    return !dialed(s) && s->phase == SU_AUTH && s->status == SU_RUNNING;
}

static int64_t preauth_ms(void)
{
    int64_t ms = GW_PREAUTH_MS + (int64_t)(2.0 * gw.hint_rtt_ms);
    if (ms > gw.dead_ms / 2)
        ms = gw.dead_ms / 2; /* a stranger must never last as long as a silent link may */
    return ms < 100 ? 100 : ms;
}

/* At most GW_STRANGER_LOGS lines per 10 s; the rest are counted in the next line. */
static void stranger_log(int64_t now, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void stranger_log(int64_t now, const char *fmt, ...)
{
    static int64_t window;
    static int lines, held;
    if (now - window >= 10000) {
        window = now;
        lines = 0;
    }
    if (lines >= GW_STRANGER_LOGS) {
        held++;
        return;
    }
    lines++;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (held)
        gw_log("%s (and %d more such lines held back)", msg, held);
    else
        gw_log("%s", msg);
    held = 0;
}

static gw_setup *setup_new(int64_t now)
{
    if (nsu == capsu) {
        int cap = capsu ? 2 * capsu : 16;
        gw_setup **p = realloc(su, sizeof *su * (size_t)cap);
        if (!p)
            return NULL;
        su = p;
        capsu = cap;
    }
    gw_setup *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = -1;
    s->st.fd = -1;
    s->born_ms = now;
    su[nsu++] = s;
    return s;
}

static void setup_fail(gw_setup *s, int auth, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void setup_fail(gw_setup *s, int auth, const char *fmt, ...)
{
    if (s->status != SU_RUNNING)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    s->status = SU_FAILED;
    s->auth_failed = auth;
}

static void setup_free(gw_setup *s)
{
    if (s->fd >= 0)
        close(s->fd);
    if (s->st.fd >= 0)
        gw.xp->close(&s->st);
    ism_auth_hs_wipe(&s->hs);
    free(s);
}

/* ---- the handshake over a non-blocking socket ---- */

static int auth_fatal(int rc)
{
    return rc == ISM_AUTH_EAUTH || rc == ISM_AUTH_EJOB || rc == ISM_AUTH_EIDENT ||
           rc == ISM_AUTH_EPROTO || rc == ISM_AUTH_ESUITE;
}

/* Moves what the socket takes and has; the handshake ends or the socket would block. */
static void auth_pump(gw_setup *s)
{
    ism_auth_hs *h = &s->hs;
    while (h->state == ISM_AUTH_HS_RUN) {
        const uint8_t *out;
        size_t n = ism_auth_hs_pending(h, &out);
        if (n > 0) {
            ssize_t w = send(s->fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                return;
            if (w < 0) {
                ism_auth_hs_io_failed(h, ISM_SOCK_EIO, 0);
                break;
            }
            ism_auth_hs_sent(h, (size_t)w);
            continue;
        }
        uint8_t *in;
        n = ism_auth_hs_wanted(h, &in);
        ssize_t r = recv(s->fd, in, n, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (r <= 0) {
            ism_auth_hs_io_failed(h, r == 0 || errno == ECONNRESET ? ISM_SOCK_ECLOSED
                                                                    : ISM_SOCK_EIO, 0);
            break;
        }
        s->got += (size_t)r;
        ism_auth_hs_received(h, (size_t)r);
    }
    if (h->state == ISM_AUTH_HS_FAILED) {
        const uint8_t *out;
        size_t n = ism_auth_hs_pending(h, &out);
        if (n > 0) /* a refusal, so the peer can say why: once, never waited for */
            (void)!send(s->fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        setup_fail(s, auth_fatal(h->rc), "%s", h->err);
    }
}

/* The HELLO a dialed stream starts with: which stream of which attempt it is. It always
 * carries the headers' CRC, whether or not the link's frames do (--wan-crc): with
 * --wan-crypto none nothing else protects it, and a bit flipped on the way in the attempt
 * number once made the acceptor take a far-future attempt as current and refuse every
 * later one until the outage limit ended the job. */
static void hello_build(gw_setup *s)
{
    gw_link *l = s->link;
    ism_link_hdr lh = {.flags = ISM_LINK_FLAG_CRC, .crc = 0, .hcrc = 0, .seq = 0,
                       .ack = l->rx_next};
    ism_frame_hdr h;
    ism_frame_init(&h, ISM_F_HELLO);
    h.src = h.dst = -1;
    h.a = (uint64_t)s->idx;
    h.b = (uint64_t)l->nstreams | (uint64_t)s->epoch << 16;
    ism_frame_encode(&h, s->hello + ISM_LINK_HDR_SIZE);
    ism_link_hdr_encode(&lh, s->hello);
    lh.hcrc = ism_link_hdr_crc(s->hello, s->hello + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE);
    ism_link_hdr_encode(&lh, s->hello);
    lh.crc = ism_link_crc(s->hello, s->hello + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE);
    ism_link_hdr_encode(&lh, s->hello);
    s->hello_off = 0;
}

/* The HELLO read by hello_read() is whole, undamaged, and a HELLO. */
static int hello_valid(const gw_setup *s, ism_frame_hdr *h)
{
    ism_link_hdr lh;
    if (ism_link_hdr_decode(s->hello, ISM_LINK_HDR_SIZE, &lh) ||
        !(lh.flags & ISM_LINK_FLAG_CRC) ||
        ism_link_hdr_crc(s->hello, s->hello + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE) != lh.hcrc ||
        ism_link_crc(s->hello, s->hello + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE) != lh.crc)
        return 0;
    return ism_frame_decode(s->hello + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE, h) == 0 &&
           h->type == ISM_F_HELLO && lh.seq == 0 && h->len == 0;
}

/* The handshake passed: check who it is, let the transport finish, go on to the HELLO. */
static void authenticated(gw_setup *s, int64_t now)
{
    ism_auth_id them = s->hs.peer;
    s->peer = them;
    char label[16];
    snprintf(label, sizeof label, "gw-%s", gw.xp->name);
    ism_aead_keys keys;
    int krc = ism_aead_derive(&s->hs, label, &keys);
    ism_auth_hs_wipe(&s->hs);
    if (krc != 0)
        return setup_fail(s, 0, "deriving the traffic keys failed (OpenSSL)");
    if (dialed(s)) {
        if (them.site != (uint32_t)s->link->site || them.gw != (uint32_t)s->link->gw) {
            ism_aead_keys_wipe(&keys);
            return setup_fail(s, 1, "the peer answered as site %u gateway %u", them.site,
                              them.gw);
        }
    } else if (!gw_link_of_peer(them) || gw_link_of_peer(them)->connector) {
        ism_aead_keys_wipe(&keys);
        return setup_fail(s, 1,
                          "it authenticated as site %u gateway %u, which is not expected to "
                          "connect here",
                          them.site, them.gw);
    }
    char err[400];
    int fd = s->fd;
    s->fd = -1; /* the transport's now, also on failure */
    int arc = gw.xp->authed(&s->st, fd, dialed(s), them, &keys, err, sizeof err);
    ism_aead_keys_wipe(&keys);
    if (arc != 0)
        return setup_fail(s, 0, "%s", err);
    gw.xp->started(&s->st);
    s->deadline_ms = now + GW_SETUP_TIMEOUT_MS;
    if (dialed(s)) {
        s->phase = SU_HELLO_OUT;
        hello_build(s);
    } else {
        s->phase = SU_HELLO_IN;
        s->hello_off = 0;
    }
}

static void hello_write(gw_setup *s)
{
    while (s->hello_off < sizeof s->hello) {
        struct iovec v = {s->hello + s->hello_off, sizeof s->hello - s->hello_off};
        ssize_t w = gw.xp->writev(&s->st, &v, 1);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (w <= 0) {
            char e[256];
            return setup_fail(s, 0, "sending HELLO: %s", gw.xp->error(&s->st, errno, e, sizeof e));
        }
        s->hello_off += (size_t)w;
    }
    s->status = SU_DONE;
}

static void hello_read(gw_setup *s)
{
    while (s->hello_off < sizeof s->hello) {
        ssize_t r = gw.xp->read(&s->st, s->hello + s->hello_off, sizeof s->hello - s->hello_off);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (r <= 0) {
            char e[256];
            return setup_fail(s, 0, "no valid HELLO: %s",
                              r == 0 ? "the peer closed the connection"
                                     : gw.xp->error(&s->st, errno, e, sizeof e));
        }
        s->hello_off += (size_t)r;
    }
    s->status = SU_DONE;
}

static void step(gw_setup *s, short rev, int64_t now)
{
    if (s->phase == SU_CONNECT) {
        if (!(rev & (POLLOUT | POLLERR | POLLHUP)))
            return;
        int e = ism_sock_connect_result(s->fd);
        if (e == EINPROGRESS)
            return;
        if (e)
            return setup_fail(s, 0, "cannot connect to %s: %s", s->name, strerror(e));
        if (s->probe) {
            s->status = SU_DONE; /* it answers: that is all a probe asks */
            return;
        }
        s->phase = SU_AUTH;
        s->deadline_ms = now + GW_SETUP_TIMEOUT_MS;
        ism_auth_id self = {(uint32_t)gw.lay.site, (uint32_t)gw.gwidx};
        ism_auth_hs_start(&s->hs, 0, &gw.key, self, gw.suites, gw.rekey_log2, s->name);
    }
    if (s->phase == SU_AUTH) {
        auth_pump(s);
        if (s->status == SU_RUNNING && s->hs.state == ISM_AUTH_HS_DONE)
            authenticated(s, now);
        if (s->status != SU_RUNNING || s->phase == SU_AUTH)
            return;
        rev = 0; /* the transport's stream is polled from the next round */
    }
    int what = gw.xp->service(&s->st, rev);
    if (s->phase == SU_HELLO_OUT)
        hello_write(s);
    else if (what & GW_XP_READ || s->phase == SU_HELLO_IN)
        hello_read(s);
}

/* ---- results, handed to links.c after a round ---- */

static void deliver(gw_setup *s)
{
    if (s->probe) {
        gw_path_probed(s->link, s->status == SU_DONE);
        return;
    }
    if (dialed(s)) {
        if (s->status == SU_DONE) {
            gw_link_dial_done(s->link, s->idx, s->epoch, &s->st);
            s->st.fd = -1;
            s->st.conn = NULL;
        } else {
            gw_link_dial_failed(s->link, s->epoch, s->auth_failed, s->err);
        }
        return;
    }
    if (s->status == SU_FAILED) {
        if (s->auth_failed || s->phase == SU_AUTH)
            strangers_refused++;
        /* a connection closed before it said anything (a port scan, a peer checking that
         * this path answers: paths.c) is counted, not logged */
        if (!(s->phase == SU_AUTH && s->got == 0 && s->hs.rc == ISM_AUTH_ECLOSED))
            stranger_log(ism_now_ms(), "refused connection from %s: %s", s->name, s->err);
        return;
    }
    ism_frame_hdr h;
    if (!hello_valid(s, &h)) {
        gw_log("refused connection from site %u gateway %u (%s): no valid HELLO (damaged on "
               "the way, or not one)",
               s->peer.site, s->peer.gw, s->name);
        return;
    }
    if (gw_link_accepted(s->peer, &h, &s->st, s->name) == 0) {
        s->st.fd = -1;
        s->st.conn = NULL;
    }
}

static void sweep(void)
{
    for (int i = 0; i < nsu;) {
        gw_setup *s = su[i];
        if (s->status == SU_RUNNING) {
            i++;
            continue;
        }
        su[i] = su[--nsu]; /* order does not matter; restart from i */
        deliver(s);        /* may cancel or start set-ups: the array changes under us */
        setup_free(s);
        i = 0;
    }
}

/* ---- the interface ---- */

void gw_setup_dial(gw_link *l, int idx, const struct sockaddr_in *sa, int64_t now)
{
    gw_setup *s = setup_new(now);
    if (!s)
        gw_die(1, "out of memory for a connection set-up");
    s->link = l;
    s->idx = idx;
    s->epoch = l->epoch;
    s->phase = SU_CONNECT;
    s->deadline_ms = now + GW_CONNECT_TIMEOUT_MS;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip);
    snprintf(s->name, sizeof s->name, "%s:%u", ip, (unsigned)ntohs(sa->sin_port));
    s->fd = ism_sock_connect_start(sa, gw.xp->prep, NULL);
    if (s->fd < 0)
        setup_fail(s, 0, "cannot connect to %s: %s", s->name, strerror(errno));
}

void gw_setup_probe(gw_link *l, const struct sockaddr_in *sa, int64_t now)
{
    gw_setup_dial(l, 0, sa, now);
    su[nsu - 1]->probe = 1;
    su[nsu - 1]->epoch = 0;
}

void gw_setup_cancel(const gw_link *l)
{
    for (int i = 0; i < nsu;) {
        if (su[i]->link == l && !su[i]->probe) {
            gw_setup *s = su[i];
            su[i] = su[--nsu];
            setup_free(s);
        } else {
            i++;
        }
    }
}

/* Make room for one more stranger from addr: evict the oldest of that address when it
 * holds its share, or else the oldest of all when strangers hold theirs. */
static void make_room(uint32_t addr)
{
    int mine = 0, all = 0;
    gw_setup *oldest_mine = NULL, *oldest = NULL;
    for (int i = 0; i < nsu; i++) {
        gw_setup *s = su[i];
        if (!stranger(s))
            continue;
        all++;
        if (!oldest || s->born_ms < oldest->born_ms)
            oldest = s;
        if (s->addr == addr) {
            mine++;
            if (!oldest_mine || s->born_ms < oldest_mine->born_ms)
                oldest_mine = s;
        }
    }
    int per = per_addr_cap(), most = total_cap();
    gw_setup *victim = mine >= per ? oldest_mine : all >= most ? oldest : NULL;
    if (victim) {
        strangers_evicted++;
        setup_fail(victim, 1, "unauthenticated after %lld ms, dropped for a newer connection "
                              "(at most %d such connections, %d per address)",
                   (long long)(ism_now_ms() - victim->born_ms), most, per);
    }
}

void gw_setup_accept(int listen_fd, int64_t now)
{
    for (int k = 0; k < GW_ACCEPTS_PER_ROUND; k++) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        int fd = accept4(listen_fd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN: the backlog is empty; anything else: try next round */
        uint32_t addr = from.sin_family == AF_INET ? from.sin_addr.s_addr : 0;
        make_room(addr);
        gw_setup *s = setup_new(now);
        if (!s) {
            close(fd);
            return;
        }
        s->fd = fd;
        s->addr = addr;
        s->phase = SU_AUTH;
        s->deadline_ms = now + preauth_ms();
        ism_sock_peer_name(fd, s->name, sizeof s->name);
        ism_auth_id self = {(uint32_t)gw.lay.site, (uint32_t)gw.gwidx};
        ism_auth_hs_start(&s->hs, 1, &gw.key, self, gw.suites, gw.rekey_log2, s->name);
    }
}

int gw_setup_count(void) { return nsu; }

int gw_setup_poll(struct pollfd *pf, int64_t now, int64_t *timer_us)
{
    if (nsu > cappolled) {
        gw_setup **p = realloc(polled, sizeof *p * (size_t)nsu);
        if (!p)
            gw_die(1, "out of memory for the poll set");
        polled = p;
        cappolled = nsu;
    }
    int n = 0;
    for (int i = 0; i < nsu; i++) {
        gw_setup *s = su[i];
        if (s->status != SU_RUNNING)
            continue;
        int64_t t = s->deadline_ms > now ? (s->deadline_ms - now) * 1000 : 0;
        short ev;
        int fd;
        if (s->phase == SU_CONNECT || s->phase == SU_AUTH) {
            const uint8_t *out;
            fd = s->fd;
            ev = s->phase == SU_CONNECT || ism_auth_hs_pending(&s->hs, &out) ? POLLOUT : POLLIN;
        } else {
            int w = s->phase == SU_HELLO_OUT;
            fd = s->st.fd;
            ev = gw.xp->events(&s->st, !w, w);
            int64_t x = gw.xp->timer_us(&s->st, !w, w);
            if (x >= 0 && x < t)
                t = x;
        }
        if (*timer_us < 0 || t < *timer_us)
            *timer_us = t;
        pf[n] = (struct pollfd){fd, ev, 0};
        polled[n++] = s;
    }
    return n;
}

void gw_setup_service(const struct pollfd *pf, int n, int64_t now)
{
    for (int k = 0; k < n; k++) {
        gw_setup *s = polled[k];
        int fd = s->phase <= SU_AUTH ? s->fd : s->st.fd;
        if (s->status == SU_RUNNING && fd == pf[k].fd)
            step(s, pf[k].revents, now);
    }
    for (int i = 0; i < nsu; i++) {
        gw_setup *s = su[i];
        if (s->status != SU_RUNNING || now < s->deadline_ms)
            continue;
        if (s->phase == SU_CONNECT)
            setup_fail(s, 0, "cannot connect to %s: no answer within %d ms (host down, or a "
                             "firewall dropping the packets?)", s->name, GW_CONNECT_TIMEOUT_MS);
        else if (stranger(s))
            setup_fail(s, 0, "did not authenticate within %lld ms", (long long)preauth_ms());
        else
            setup_fail(s, 0, "set-up did not finish within %d ms (%s)", GW_SETUP_TIMEOUT_MS,
                       s->phase == SU_AUTH ? "authenticating" : "waiting for HELLO");
    }
    sweep();
}

void gw_setup_report(char *buf, size_t n)
{
    snprintf(buf, n, "%llu unauthenticated connection%s refused, %llu dropped for newer ones",
             (unsigned long long)strangers_refused, strangers_refused == 1 ? "" : "s",
             (unsigned long long)strangers_evicted);
}
