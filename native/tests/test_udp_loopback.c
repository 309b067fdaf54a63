/* test_udp_loopback.c: end-to-end tests of the reliable-UDP transport in one process,
 * over loopback, with deterministic faults injected by the transport's impairment shim
 * on both sides (data and ACKs): reordering, duplication, random and bursty loss, bit
 * corruption, and all of them at once, with both congestion controllers. Every byte is
 * checked against the sender's pattern, so a lost, duplicated, reordered or corrupted
 * byte reaching the application fails the test at its offset; each scenario also
 * checks that its fault really happened and was handled (retransmissions, duplicates
 * discarded, corrupted packets dropped).
 *
 * The clean run without the shim takes the production path, GSO out and (over loopback)
 * UDP GRO in, and checks that datagrams did arrive coalesced and were cut apart right.
 *
 * Also: the non-blocking API in an event loop moving data both ways at once; setup
 * with a wrong secret fails on both sides and says so; a silent peer is declared dead
 * after dead_ms with its address in the message, while an idle but live one is kept
 * alive by keepalive probes; an aborting peer is reported; and a
 * forged packet (wrong token) or a corrupted one is dropped without effect.
 *
 * Path MTU (pmtu.c), with the shim's size filter as the path (it drops datagrams above
 * max_dgram and says nothing, as the link emulator does): probing converges on the
 * largest size the path carries, and its lost probes neither cost a retransmission nor
 * touch the congestion window; the path MTU falling mid-transfer is found as a black
 * hole, and rising again is found by the raise timer, every byte checked; probing off
 * keeps the configured size.
 */
#include "conn.h"
#include "pattern.h"
#include "udp.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static ism_auth_key key, wrong_key;
static const ism_auth_id CLI = {0, 1}, SRV = {1, 1};

typedef struct scen {
    const char *name;
    ism_udp_impair imp;
    const char *cc;
    size_t bytes;
    /* expectations on the counters */
    int want_rtx, want_dup, want_bad, want_reorder;
    int no_shim; /* the production path: GSO runs out, and over loopback GRO coalesces them */
} scen;

typedef struct side {
    const scen *s;
    ism_udp_listener *l;
    ism_udp_conn *c;
    int64_t bad_at;
    uint64_t got;
    int eof, close_rc;
    ism_udp_stats st;
    char err[512];
} side;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void opts_for(const scen *s, ism_udp_opts *o)
{
    ism_udp_opts_default(o);
    o->cc = s->cc;
    o->impair = s->no_shim ? NULL : &s->imp;
    o->sndbuf = o->rcvbuf = 4u << 20;
    o->dead_ms = 10000;
}

static void *server_recv(void *arg)
{
    side *sd = arg;
    sd->c = ism_udp_accept(sd->l, 20000, sd->err, sizeof sd->err);
    if (!sd->c)
        return NULL;
    uint8_t *buf = malloc(1 << 16), *scratch = malloc(1 << 16);
    sd->bad_at = -1;
    for (;;) {
        /* odd read sizes: the receive ring's wrap-around and partial reads get exercised */
        ssize_t r = ism_udp_recv(sd->c, buf, 1000 + (size_t)(sd->got % 50000), 20000);
        if (r < 0) {
            snprintf(sd->err, sizeof sd->err, "recv: %s", ism_udp_error(sd->c));
            break;
        }
        if (r == 0) {
            sd->eof = 1;
            break;
        }
        if (sd->bad_at < 0)
            sd->bad_at = up_check(buf, sd->got, (size_t)r, 7, scratch);
        sd->got += (uint64_t)r;
    }
    ism_udp_get_stats(sd->c, &sd->st);
    sd->close_rc = ism_udp_close(sd->c, 20000);
    free(buf);
    free(scratch);
    return NULL;
}

static void run_scenario(const scen *s)
{
    ism_udp_opts o;
    opts_for(s, &o);
    char err[512];
    side srv = {.s = s};
    srv.l = ism_udp_open("127.0.0.1:0", &key, SRV, &o, err, sizeof err);
    CHECK(srv.l != NULL, "%s: open: %s", s->name, err);
    if (!srv.l)
        return;
    char hp[64];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(srv.l));
    pthread_t th;
    pthread_create(&th, NULL, server_recv, &srv);
    double t0 = now_s();
    ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, &o, 20000, err, sizeof err);
    CHECK(c != NULL, "%s: connect: %s", s->name, err);
    ism_udp_stats st = {0};
    int close_rc = -1;
    if (c) {
        uint8_t *buf = malloc(1 << 16);
        uint64_t off = 0;
        while (off < s->bytes) {
            size_t n = 1 + (size_t)((off * 2654435761u) % (1 << 16)); /* ragged writes */
            if (n > s->bytes - off)
                n = (size_t)(s->bytes - off);
            up_fill(buf, off, n, 7);
            ssize_t w = ism_udp_send(c, buf, n, 20000);
            CHECK(w == (ssize_t)n, "%s: send at %llu: %zd (%s)", s->name, (unsigned long long)off,
                  w, ism_udp_error(c));
            if (w != (ssize_t)n)
                break;
            off += n;
        }
        free(buf);
        /* the peer sends nothing: its FIN must still arrive and end our stream */
        ism_udp_shutdown(c);
        uint8_t b1[16];
        ssize_t r = ism_udp_recv(c, b1, sizeof b1, 20000);
        CHECK(r == 0, "%s: client expected the peer's end of stream, got %zd (%s)", s->name, r,
              ism_udp_error(c));
        ism_udp_get_stats(c, &st);
        close_rc = ism_udp_close(c, 20000);
    }
    pthread_join(th, NULL);
    ism_udp_listener_close(srv.l);
    double dt = now_s() - t0;
    CHECK(srv.c != NULL, "%s: accept: %s", s->name, srv.err);
    CHECK(srv.err[0] == 0, "%s: server: %s", s->name, srv.err);
    CHECK(srv.got == s->bytes && srv.eof, "%s: received %llu of %zu bytes, eof %d", s->name,
          (unsigned long long)srv.got, s->bytes, srv.eof);
    CHECK(srv.bad_at < 0, "%s: data mismatch at byte %lld", s->name, (long long)srv.bad_at);
    CHECK(close_rc == 0 && srv.close_rc == 0, "%s: close %d / %d", s->name, close_rc, srv.close_rc);
    uint64_t faults_out = st.impair_dropped + srv.st.impair_dropped;
    if (s->want_rtx)
        CHECK(faults_out > 0 && st.pkts_retransmitted > 0, "%s: %llu dropped, %llu retransmitted",
              s->name, (unsigned long long)faults_out, (unsigned long long)st.pkts_retransmitted);
    if (s->want_dup)
        CHECK(st.impair_dup > 0 && srv.st.pkts_dup > 0, "%s: %llu duplicated, %llu discarded",
              s->name, (unsigned long long)st.impair_dup, (unsigned long long)srv.st.pkts_dup);
    if (s->want_bad)
        CHECK(st.impair_corrupted > 0 && srv.st.pkts_bad > 0, "%s: %llu corrupted, %llu dropped",
              s->name, (unsigned long long)st.impair_corrupted, (unsigned long long)srv.st.pkts_bad);
    if (s->want_reorder)
        CHECK(st.impair_reordered > 0, "%s: nothing reordered", s->name);
    /* loss, reordering, duplication and corruption are not a smaller path MTU (the
     * heavy-loss case may raise a suspicion; its probe pairs then may, rarely, agree) */
    if (s->imp.loss < 0.1)
        CHECK(st.pmtu_black_holes == 0, "%s: %llu black holes on a path of constant MTU",
              s->name, (unsigned long long)st.pmtu_black_holes);
    /* GSO messages of a loopback sender arrive whole at a GRO receiver, cut apart there */
    if (s->no_shim && !getenv("ISM_UDP_NO_GRO") && !getenv("ISM_UDP_NO_GSO"))
        CHECK(srv.st.pkts_coalesced > srv.st.pkts_received / 4,
              "%s: %llu of %llu datagrams arrived coalesced (UDP GRO)", s->name,
              (unsigned long long)srv.st.pkts_coalesced, (unsigned long long)srv.st.pkts_received);
    printf("%-28s %6.1f MB in %5.2f s  sent %llu pkts, rtx %llu, rto %llu; dropped %llu, dup %llu, "
           "reordered %llu, corrupted %llu; receiver discarded %llu dup, %llu bad\n",
           s->name, s->bytes / 1e6, dt, (unsigned long long)st.pkts_sent,
           (unsigned long long)st.pkts_retransmitted, (unsigned long long)st.rto_count,
           (unsigned long long)faults_out, (unsigned long long)st.impair_dup,
           (unsigned long long)st.impair_reordered, (unsigned long long)st.impair_corrupted,
           (unsigned long long)srv.st.pkts_dup, (unsigned long long)srv.st.pkts_bad);
}

/* ---- both directions at once through the non-blocking API ---- */
typedef struct nbside {
    ism_udp_listener *l;
    const char *hp;
    ism_udp_opts o;
    int is_server;
    uint64_t sent, got;
    int64_t bad_at;
    int ok;
    char err[512];
} nbside;

#define NB_BYTES (6u << 20)

static void *nb_run(void *arg)
{
    nbside *sd = arg;
    ism_udp_conn *c = sd->is_server ? ism_udp_accept(sd->l, 20000, sd->err, sizeof sd->err)
                                    : ism_udp_connect(sd->hp, &key, CLI, &sd->o, 20000, sd->err,
                                                      sizeof sd->err);
    if (!c)
        return NULL;
    uint64_t my_seed = sd->is_server ? 11 : 12, peer_seed = sd->is_server ? 12 : 11;
    uint8_t *out = malloc(1 << 15), *in = malloc(1 << 15), *scratch = malloc(1 << 15);
    sd->bad_at = -1;
    int eof = 0, shut = 0;
    double dl = now_s() + 60;
    while (!(eof && shut) && now_s() < dl) {
        if (sd->sent < NB_BYTES) {
            size_t n = NB_BYTES - sd->sent < (1 << 15) ? NB_BYTES - sd->sent : (1 << 15);
            up_fill(out, sd->sent, n, my_seed);
            ssize_t w = ism_udp_send_nb(c, out, n);
            if (w > 0)
                sd->sent += (uint64_t)w;
            else if (w != ISM_UDP_EAGAIN)
                break;
        } else if (!shut) {
            ism_udp_shutdown(c);
            shut = 1;
        }
        ssize_t r = ism_udp_recv_nb(c, in, 1 << 15);
        if (r > 0) {
            if (sd->bad_at < 0)
                sd->bad_at = up_check(in, sd->got, (size_t)r, peer_seed, scratch);
            sd->got += (uint64_t)r;
        } else if (r == 0) {
            eof = 1;
        } else if (r != ISM_UDP_EAGAIN) {
            break;
        }
        if (r == ISM_UDP_EAGAIN) {
            struct pollfd p = {ism_udp_fd(c), POLLIN, 0};
            int64_t t = ism_udp_next_timer_us(c);
            poll(&p, 1, t < 0 ? 100 : (int)(t / 1000));
            if (ism_udp_progress(c) != 0)
                break;
        }
    }
    sd->ok = eof && shut && sd->got == NB_BYTES && sd->sent == NB_BYTES;
    if (!sd->ok)
        snprintf(sd->err, sizeof sd->err, "sent %llu got %llu eof %d: %s",
                 (unsigned long long)sd->sent, (unsigned long long)sd->got, eof, ism_udp_error(c));
    if (ism_udp_close(c, 20000) != 0)
        sd->ok = 0;
    free(out);
    free(in);
    free(scratch);
    return NULL;
}

static void test_nonblocking_both_ways(void)
{
    static const ism_udp_impair imp = {.loss = 0.01, .reorder = 0.02, .dup = 0.01, .seed = 3};
    nbside s = {.is_server = 1}, c = {.is_server = 0};
    ism_udp_opts_default(&s.o);
    s.o.impair = &imp;
    s.o.sndbuf = s.o.rcvbuf = 1u << 20;
    c.o = s.o;
    char err[256], hp[64];
    s.l = ism_udp_open("127.0.0.1:0", &key, SRV, &s.o, err, sizeof err);
    CHECK(s.l, "open: %s", err);
    if (!s.l)
        return;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(s.l));
    c.hp = hp;
    pthread_t a, b;
    pthread_create(&a, NULL, nb_run, &s);
    pthread_create(&b, NULL, nb_run, &c);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ism_udp_listener_close(s.l);
    CHECK(s.ok && c.ok, "both ways: server %s / client %s", s.err, c.err);
    CHECK(s.bad_at < 0 && c.bad_at < 0, "both ways: mismatch at %lld / %lld", (long long)s.bad_at,
          (long long)c.bad_at);
    printf("%-28s %6.1f MB each way, verified\n", "non-blocking, both ways", NB_BYTES / 1e6);
}

/* ---- failures ---- */
typedef struct fside {
    ism_udp_listener *l;
    int mode; /* 0: accept only; 1: accept then fall silent; 2: accept then abort */
    char err[512];
} fside;

static void *f_server(void *arg)
{
    fside *f = arg;
    ism_udp_conn *c = ism_udp_accept(f->l, 10000, f->err, sizeof f->err);
    if (!c)
        return NULL;
    if (f->mode == 1)
        usleep(2500 * 1000); /* alive but silent: never processes a packet */
    if (f->mode == 2)
        usleep(200 * 1000);
    ism_udp_abort(c);
    return NULL;
}

static void test_failures(void)
{
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 20;
    o.dead_ms = 1000;
    char err[512], hp[64];
    for (int mode = 0; mode < 3; mode++) {
        fside f = {.mode = mode};
        f.l = ism_udp_open("127.0.0.1:0", &key, SRV, &o, err, sizeof err);
        CHECK(f.l, "open: %s", err);
        if (!f.l)
            return;
        snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(f.l));
        pthread_t th;
        pthread_create(&th, NULL, f_server, &f);
        if (mode == 0) {
            ism_udp_conn *c = ism_udp_connect(hp, &wrong_key, CLI, &o, 5000, err, sizeof err);
            CHECK(c == NULL && strstr(err, "wrong job secret"), "wrong secret: client says '%s'", err);
            pthread_join(th, NULL);
            CHECK(strstr(f.err, "wrong job secret") && strstr(f.err, "127.0.0.1"),
                  "wrong secret: server says '%s'", f.err);
            printf("%-28s client: %s\n", "wrong secret refused", err);
        } else {
            ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, &o, 5000, err, sizeof err);
            CHECK(c != NULL, "connect: %s", err);
            if (c) {
                double t0 = now_s();
                static uint8_t junk[1 << 16];
                ssize_t w = ism_udp_send(c, junk, sizeof junk, 10000);
                uint8_t b[16];
                ssize_t r = w < 0 ? w : ism_udp_recv(c, b, sizeof b, 10000);
                double dt = now_s() - t0;
                if (mode == 1) {
                    CHECK(r == ISM_UDP_EDEAD && strstr(ism_udp_error(c), "127.0.0.1:") &&
                              strstr(ism_udp_error(c), "site 1, gateway 1"),
                          "silent peer: %zd '%s'", r, ism_udp_error(c));
                    CHECK(dt >= 0.9 && dt < 3.0, "dead after %.2f s (dead_ms 1000)", dt);
                    printf("%-28s after %.2f s: %s\n", "silent peer declared dead", dt,
                           ism_udp_error(c));
                } else {
                    CHECK(r == ISM_UDP_ECLOSED && strstr(ism_udp_error(c), "aborted"),
                          "aborting peer: %zd '%s'", r, ism_udp_error(c));
                    printf("%-28s %s\n", "peer abort reported", ism_udp_error(c));
                }
                ism_udp_abort(c);
            }
            pthread_join(th, NULL);
        }
        ism_udp_listener_close(f.l);
    }
}

static void *accept_and_hold(void *arg)
{
    fside *f = arg;
    ism_udp_conn *c = ism_udp_accept(f->l, 10000, f->err, sizeof f->err);
    uint8_t b[64];
    if (c) {
        while (ism_udp_recv(c, b, sizeof b, 10000) > 0)
            ;
        ism_udp_close(c, 5000);
    }
    return NULL;
}

/* Both ends idle (but waiting in recv) for 2.5 x dead_ms: keepalive probes must keep the
 * connection alive, and data must still flow afterwards. */
static void *idle_server(void *arg)
{
    fside *f = arg;
    ism_udp_conn *c = ism_udp_accept(f->l, 10000, f->err, sizeof f->err);
    if (!c)
        return NULL;
    uint8_t b[64];
    /* the client idles 2.5 s before it sends: this wait spans the idle time */
    ssize_t r = ism_udp_recv(c, b, sizeof b, 10000);
    if (r != 5 || memcmp(b, "hello", 5) != 0)
        snprintf(f->err, sizeof f->err, "after idling got %zd: %s", r, ism_udp_error(c));
    ism_udp_close(c, 5000);
    return NULL;
}

static void test_keepalive(void)
{
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 20;
    o.dead_ms = 1000;
    char err[512], hp[64];
    fside f = {0};
    f.l = ism_udp_open("127.0.0.1:0", &key, SRV, &o, err, sizeof err);
    if (!f.l)
        return;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(f.l));
    pthread_t th;
    pthread_create(&th, NULL, idle_server, &f);
    ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, &o, 5000, err, sizeof err);
    CHECK(c, "connect: %s", err);
    if (c) {
        uint8_t b[8];
        ssize_t r = ism_udp_recv(c, b, sizeof b, 2500);
        CHECK(r == ISM_UDP_ETIMEDOUT, "idle client recv: %zd (%s)", r, ism_udp_error(c));
        ism_udp_stats st;
        ism_udp_get_stats(c, &st);
        CHECK(st.pkts_sent >= 3, "only %llu keepalive probes in 2.5 s", (unsigned long long)st.pkts_sent);
        CHECK(ism_udp_send(c, "hello", 5, 5000) == 5, "send after idling: %s", ism_udp_error(c));
        ism_udp_close(c, 5000);
    }
    pthread_join(th, NULL);
    CHECK(f.err[0] == 0, "server: %s", f.err);
    ism_udp_listener_close(f.l);
    printf("%-28s idle 2.5 s with dead_ms 1000: alive, data flows after\n", "keepalive");
}

/* ---- path-MTU discovery ---- */

/* Send bytes [*off, *off + n) of pattern 7 in ragged writes; 0 or -1 (reported). */
static int send_pattern(ism_udp_conn *c, uint64_t *off, uint64_t n, const char *what)
{
    static uint8_t buf[1 << 16];
    uint64_t end = *off + n;
    while (*off < end) {
        size_t k = 1 + (size_t)((*off * 2654435761u) % sizeof buf);
        if (k > end - *off)
            k = (size_t)(end - *off);
        up_fill(buf, *off, k, 7);
        ssize_t w = ism_udp_send(c, buf, k, 20000);
        CHECK(w == (ssize_t)k, "%s: send at %llu: %zd (%s)", what, (unsigned long long)*off, w,
              ism_udp_error(c));
        if (w != (ssize_t)k)
            return -1;
        *off += k;
    }
    return 0;
}

typedef struct pmtu_run {
    ism_udp_listener *l;
    pthread_t th;
    side srv;
    scen sc;
    ism_udp_conn *c;
} pmtu_run;

static int pmtu_start(pmtu_run *r, const char *name, const ism_udp_opts *cli)
{
    ism_udp_opts so;
    ism_udp_opts_default(&so);
    so.mtu = 9000;
    so.sndbuf = so.rcvbuf = 4u << 20;
    char err[512], hp[64];
    memset(r, 0, sizeof *r);
    r->sc.name = name;
    r->srv.s = &r->sc;
    r->srv.l = ism_udp_open("127.0.0.1:0", &key, SRV, &so, err, sizeof err);
    CHECK(r->srv.l, "%s: open: %s", name, err);
    if (!r->srv.l)
        return -1;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(r->srv.l));
    pthread_create(&r->th, NULL, server_recv, &r->srv);
    r->c = ism_udp_connect(hp, &key, CLI, cli, 20000, err, sizeof err);
    CHECK(r->c, "%s: connect: %s", name, err);
    return r->c ? 0 : -1;
}

/* End the stream, join the server, check every byte arrived intact. */
static void pmtu_finish(pmtu_run *r, uint64_t sent, ism_udp_stats *st)
{
    const char *name = r->sc.name;
    int rc = -1;
    if (r->c) {
        ism_udp_shutdown(r->c);
        uint8_t b[16];
        ssize_t k = ism_udp_recv(r->c, b, sizeof b, 20000);
        CHECK(k == 0, "%s: expected the peer's end, got %zd (%s)", name, k, ism_udp_error(r->c));
        ism_udp_get_stats(r->c, st);
        rc = ism_udp_close(r->c, 20000);
    }
    if (r->srv.l) {
        pthread_join(r->th, NULL);
        ism_udp_listener_close(r->srv.l);
    }
    CHECK(r->srv.err[0] == 0, "%s: server: %s", name, r->srv.err);
    CHECK(r->srv.got == sent && r->srv.eof && r->srv.bad_at < 0,
          "%s: received %llu of %llu bytes (eof %d), first bad byte %lld", name,
          (unsigned long long)r->srv.got, (unsigned long long)sent, r->srv.eof,
          (long long)r->srv.bad_at);
    CHECK(rc == 0 && r->srv.close_rc == 0, "%s: close %d / %d", name, rc, r->srv.close_rc);
}

static void test_pmtu_converges(void)
{
    /* A path of IP MTU 4000 under a ceiling of 9000; reno, whose window shrinks on any
     * loss it is told of: after the search it must still be in slow start. */
    static ism_udp_impair imp = {.max_dgram = 4000 - 28, .seed = 1};
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.mtu = 9000;
    o.cc = "reno";
    o.sndbuf = o.rcvbuf = 4u << 20;
    o.impair = &imp;
    pmtu_run r;
    uint64_t off = 0;
    ism_udp_stats st = {0};
    if (pmtu_start(&r, "pmtu converges", &o) == 0) {
        /* data flows until the search ends (lost probes are then found by gaps) */
        double t0 = now_s();
        int ok = send_pattern(r.c, &off, 16u << 20, r.sc.name) == 0;
        while (ok && r.c->pm.searching && now_s() - t0 < 20)
            ok = send_pattern(r.c, &off, 1u << 20, r.sc.name) == 0;
        CHECK(!r.c->pm.searching, "pmtu converges: still searching after %.1f s", now_s() - t0);
    }
    pmtu_finish(&r, off, &st);
    CHECK(st.plpmtu <= 4000 && st.plpmtu >= 4000 - 16 && st.payload == st.plpmtu - 28 - 36,
          "pmtu converges: plpmtu %u (payload %u), want 3984..4000", st.plpmtu, st.payload);
    CHECK(st.pmtu_base == 1280 && st.pmtu_ceiling == 9000, "pmtu converges: base %u ceiling %u",
          st.pmtu_base, st.pmtu_ceiling);
    CHECK(st.pmtu_probes_lost >= 3 && st.impair_mtu_dropped >= 3 && st.pmtu_probes_acked >= 1 &&
              st.pmtu_probes_sent <= 30,
          "pmtu converges: probes sent %llu acked %llu lost %llu, %llu dropped by the path",
          (unsigned long long)st.pmtu_probes_sent, (unsigned long long)st.pmtu_probes_acked,
          (unsigned long long)st.pmtu_probes_lost, (unsigned long long)st.impair_mtu_dropped);
    /* lost probes are not data: nothing retransmitted, no loss told to the controller */
    CHECK(st.pkts_retransmitted == 0 && st.pkts_lost == 0 && st.rto_count == 0 &&
              strcmp(st.cc_state, "slow-start") == 0 && st.pmtu_black_holes == 0,
          "pmtu converges: rtx %llu lost %llu rto %llu, reno %s, black holes %llu",
          (unsigned long long)st.pkts_retransmitted, (unsigned long long)st.pkts_lost,
          (unsigned long long)st.rto_count, st.cc_state, (unsigned long long)st.pmtu_black_holes);
    printf("%-28s path 4000, ceiling 9000: plpmtu %u after %llu probes (%llu lost), no rtx\n",
           "pmtu converges", st.plpmtu, (unsigned long long)st.pmtu_probes_sent,
           (unsigned long long)st.pmtu_probes_lost);
}

static void test_pmtu_changes(void)
{
    /* 9000 -> 1500 mid-stream (a black hole) -> 9000 again (the raise timer). */
    static ism_udp_impair imp = {.seed = 1};
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.mtu = 9000;
    o.sndbuf = o.rcvbuf = 4u << 20;
    o.pmtu_raise_ms = 200;
    o.impair = &imp;
    pmtu_run r;
    uint64_t off = 0;
    ism_udp_stats st = {0}, mid = {0}, hole = {0};
    const char *name = "pmtu changes mid-stream";
    if (pmtu_start(&r, name, &o) == 0 && send_pattern(r.c, &off, 8u << 20, name) == 0) {
        ism_udp_get_stats(r.c, &mid);
        __atomic_store_n(&imp.max_dgram, 1500 - 28, __ATOMIC_RELAXED);
        double t0 = now_s();
        int ok = 0;
        do
            ok = send_pattern(r.c, &off, 1u << 20, name) == 0;
        while (ok && (ism_udp_get_stats(r.c, &hole), hole.pmtu_black_holes == 0 ||
                      hole.plpmtu < 1500 - 16) && now_s() - t0 < 15);
        __atomic_store_n(&imp.max_dgram, 0, __ATOMIC_RELAXED);
        t0 = now_s();
        while (ok && (ism_udp_get_stats(r.c, &st), st.plpmtu != 9000) && now_s() - t0 < 15)
            ok = send_pattern(r.c, &off, 1u << 20, name) == 0;
        if (ok)
            send_pattern(r.c, &off, 4u << 20, name);
    }
    pmtu_finish(&r, off, &st);
    CHECK(mid.plpmtu == 9000, "%s: before the change plpmtu %u, want 9000", name, mid.plpmtu);
    CHECK(hole.pmtu_black_holes >= 1 && hole.plpmtu <= 1500 && hole.plpmtu >= 1500 - 16,
          "%s: at 1500: %llu black holes, plpmtu %u", name,
          (unsigned long long)hole.pmtu_black_holes, hole.plpmtu);
    CHECK(st.plpmtu == 9000, "%s: after the path grew again plpmtu %u, want 9000", name, st.plpmtu);
    printf("%-28s 9000 -> 1500: %llu black hole(s), plpmtu %u; -> 9000: plpmtu %u; "
           "%.1f MB intact, %llu rtx\n", name, (unsigned long long)hole.pmtu_black_holes,
           hole.plpmtu, st.plpmtu, (double)off / 1e6, (unsigned long long)st.pkts_retransmitted);
}

static void test_pmtu_off(void)
{
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.mtu = 9000;
    o.pmtud = 0;
    o.sndbuf = o.rcvbuf = 4u << 20;
    pmtu_run r;
    uint64_t off = 0;
    ism_udp_stats st = {0};
    if (pmtu_start(&r, "pmtu off", &o) == 0) {
        ism_udp_get_stats(r.c, &st);
        CHECK(st.plpmtu == 9000 && st.payload == 9000 - 28 - 36, "pmtu off: starts at %u", st.plpmtu);
        send_pattern(r.c, &off, 2u << 20, r.sc.name);
    }
    pmtu_finish(&r, off, &st);
    CHECK(st.plpmtu == 9000 && st.pmtu_probes_sent == 0, "pmtu off: plpmtu %u, %llu probes",
          st.plpmtu, (unsigned long long)st.pmtu_probes_sent);
    printf("%-28s fixed 9000, no probes\n", "pmtu off");
}

static void test_forged_packets(void)
{
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 20;
    char err[512], hp[64];
    fside f = {0};
    f.l = ism_udp_open("127.0.0.1:0", &key, SRV, &o, err, sizeof err);
    if (!f.l)
        return;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(f.l));
    pthread_t th;
    pthread_create(&th, NULL, accept_and_hold, &f);
    ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, &o, 5000, err, sizeof err);
    CHECK(c, "connect: %s", err);
    if (c) {
        uint8_t p[ISM_UDPW_DATA_HDR + 100];
        memset(p + ISM_UDPW_DATA_HDR, 'X', 100);
        uint8_t tok[ISM_UDPW_TOKEN_LEN];
        memcpy(tok, c->tok_rx, sizeof tok);
        tok[3] ^= 1;
        /* packet number 1000: the peer's own first packets (its path-MTU probes, sent
         * from the start) hold the low numbers, and a number seen is a duplicate */
        ism_udpw_encode_data(p, 0, tok, 1000, 0, 0);
        ism_udpw_seal(p, sizeof p);
        uint64_t bad0 = c->st.pkts_bad;
        udp_dispatch(c, p, sizeof p, udp_now_us());
        ism_udpw_encode_data(p, 0, c->tok_rx, 1000, 0, 0);
        ism_udpw_seal(p, sizeof p);
        p[50] ^= 4; /* right token, corrupted payload */
        udp_dispatch(c, p, sizeof p, udp_now_us());
        CHECK(c->st.pkts_bad == bad0 + 2 && c->rcv_nxt == 0 && c->nivals == 0 && c->err == 0,
              "forged/corrupted packets had an effect: bad %llu rcv_nxt %llu",
              (unsigned long long)c->st.pkts_bad, (unsigned long long)c->rcv_nxt);
        p[50] ^= 4; /* the genuine packet is taken (control: the test can tell) */
        udp_dispatch(c, p, sizeof p, udp_now_us());
        CHECK(c->rcv_nxt == 100, "genuine packet not taken: rcv_nxt %llu",
              (unsigned long long)c->rcv_nxt);
        ism_udp_abort(c);
        printf("%-28s forged token and corrupted payload dropped\n", "forged packets");
    }
    pthread_join(th, NULL);
    ism_udp_listener_close(f.l);
}

int main(void)
{
    char err[256];
    const char *job = "00112233445566778899aabbccddeeff";
    if (ism_auth_key_from_hex(&key, job, "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978", err,
                              sizeof err) != 0 ||
        ism_auth_key_from_hex(&wrong_key, job, "ffeeddccbbaa99887766554433221100ffeeddccbbaa9988",
                              err, sizeof err) != 0) {
        fprintf(stderr, "key: %s\n", err);
        return 1;
    }
    const size_t MB = 1u << 20;
    const scen scens[] = {
        {"clean, bbr", {.seed = 1}, "bbr", 24 * MB, 0, 0, 0, 0, 0},
        {"clean, GSO and GRO", {.seed = 1}, "bbr", 64 * MB, 0, 0, 0, 0, 1},
        {"reorder 5%", {.reorder = 0.05, .seed = 2}, "bbr", 8 * MB, 0, 0, 0, 1, 0},
        {"duplicate 1%", {.dup = 0.01, .seed = 3}, "bbr", 8 * MB, 0, 1, 0, 0, 0},
        {"random loss 2%", {.loss = 0.02, .seed = 4}, "bbr", 8 * MB, 1, 0, 0, 0, 0},
        {"bursty loss 2% (burst 50%)", {.loss = 0.01, .burst = 0.5, .seed = 5}, "bbr", 8 * MB, 1, 0, 0, 0, 0},
        {"bit corruption 1%", {.corrupt = 0.01, .seed = 6}, "bbr", 8 * MB, 0, 0, 1, 0, 0},
        {"all at once, bbr", {.loss = 0.02, .burst = 0.3, .dup = 0.01, .reorder = 0.05, .corrupt = 0.01, .seed = 7}, "bbr", 8 * MB, 1, 1, 1, 1, 0},
        {"all at once, reno", {.loss = 0.02, .burst = 0.3, .dup = 0.01, .reorder = 0.05, .corrupt = 0.01, .seed = 8}, "reno", 4 * MB, 1, 1, 1, 1, 0},
        {"loss 20% (heavy)", {.loss = 0.2, .seed = 9}, "bbr", 1 * MB, 1, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof scens / sizeof scens[0]; i++)
        run_scenario(&scens[i]);
    test_nonblocking_both_ways();
    test_failures();
    test_keepalive();
    test_forged_packets();
    test_pmtu_converges();
    test_pmtu_changes();
    test_pmtu_off();
    if (failures) {
        fprintf(stderr, "test_udp_loopback: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_udp_loopback: all checks passed\n");
    return 0;
}
