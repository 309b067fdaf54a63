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
#include "setup.h"
#include "udp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* An A/B switch of the transport set to 0 (ISTHMUS_UDP_GRO=0, ...): this run goes without it */
static int switched_off(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "0") == 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void opts_for(const scen *s, ism_udp_opts *o)
{
    ism_udp_opts_default(o);
    o->pmtud = 1; /* the scenarios also check random faults are never taken for a black hole */
    o->cc = s->cc;
    o->impair = s->no_shim ? NULL : &s->imp;
    o->sndbuf = o->rcvbuf = 4u << 20;
    o->dead_ms = 10000;
}

/* One receive in an event loop: post, poll until test says it is over; every fourth
 * post is cancelled after a few rounds instead (the bytes filled by then count). */
static ssize_t recv_posted(ism_udp_conn *c, uint8_t *buf, size_t n, unsigned k, int *cancelled)
{
    *cancelled = 0;
    int rc = ism_udp_recv_post(c, buf, n);
    if (rc)
        return rc;
    for (int round = 0;; round++) {
        if (k % 4 == 3 && round == 3) {
            *cancelled = 1;
            return ism_udp_recv_cancel(c);
        }
        ssize_t r = ism_udp_recv_test(c);
        if (r != ISM_UDP_EAGAIN) {
            if (r < 0)
                ism_udp_recv_cancel(c);
            return r;
        }
        struct pollfd p = {ism_udp_fd(c), ism_udp_events(c), 0};
        int64_t t = ism_udp_next_timer_us(c);
        poll(&p, 1, t > 20000000 ? 20000 : (int)((t + 999) / 1000));
        if (ism_udp_progress(c) != 0)
            continue; /* test reports it */
    }
}

static void *server_recv(void *arg)
{
    side *sd = arg;
    sd->c = ism_udp_accept(sd->l, 20000, sd->err, sizeof sd->err);
    if (!sd->c)
        return NULL;
    uint8_t *scratch = malloc(1 << 20);
    sd->bad_at = -1;
    for (unsigned k = 0;; k++) {
        /* Three ways to receive, in turn, into a buffer of exactly the size asked (so ASan
         * sees a write past it, or after it was freed): recv (at least one byte), with odd
         * sizes, so the ring's wrap-around and partial reads get exercised; recv_all; and
         * a posted receive in an event loop, sometimes cancelled. */
        size_t n = k % 3 == 0 ? 1000 + (size_t)(sd->got % 50000)
                              : 1 + (size_t)((sd->got * 2654435761u + k) % (1u << 20));
        uint8_t *buf = malloc(n);
        int cancelled = 0;
        ssize_t r = k % 3 == 0   ? ism_udp_recv(sd->c, buf, n, 20000)
                    : k % 3 == 1 ? ism_udp_recv_all(sd->c, buf, n, 20000)
                                 : recv_posted(sd->c, buf, n, k, &cancelled);
        if (r < 0) {
            snprintf(sd->err, sizeof sd->err, "recv: %s", ism_udp_error(sd->c));
            free(buf);
            break;
        }
        if (r == 0 && !cancelled) { /* the end (a cancel may find nothing yet) */
            sd->eof = 1;
            free(buf);
            break;
        }
        if (sd->bad_at < 0)
            sd->bad_at = up_check(buf, sd->got, (size_t)r, 7, scratch);
        sd->got += (uint64_t)r;
        free(buf);
    }
    ism_udp_get_stats(sd->c, &sd->st);
    sd->close_rc = ism_udp_close(sd->c, 20000);
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
        /* sealed (the default), a duplicated datagram is a replay: the window drops it
         * before the packet layer would have found it a duplicate */
        CHECK(st.impair_dup > 0 && srv.st.pkts_dup + srv.st.pkts_unauth > 0,
              "%s: %llu duplicated, %llu discarded, %llu replays refused", s->name,
              (unsigned long long)st.impair_dup, (unsigned long long)srv.st.pkts_dup,
              (unsigned long long)srv.st.pkts_unauth);
    if (s->want_bad)
        CHECK(st.impair_corrupted > 0 && srv.st.pkts_bad > 0, "%s: %llu corrupted, %llu dropped",
              s->name, (unsigned long long)st.impair_corrupted, (unsigned long long)srv.st.pkts_bad);
    if (s->want_reorder)
        CHECK(st.impair_reordered > 0, "%s: nothing reordered", s->name);
    /* every byte went to the application once: straight, or through the ring */
    const ism_udp_stats *rs = &srv.st;
    CHECK(rs->bytes_placed_direct - rs->bytes_placed_back + rs->bytes_via_ring == srv.got &&
              rs->bytes_placed_direct > 0,
          "%s: direct %llu - back %llu + via ring %llu for %llu bytes delivered", s->name,
          (unsigned long long)rs->bytes_placed_direct, (unsigned long long)rs->bytes_placed_back,
          (unsigned long long)rs->bytes_via_ring, (unsigned long long)srv.got);
    /* loss, reordering, duplication and corruption are not a smaller path MTU (the
     * heavy-loss case may raise a suspicion; its probe pairs then may, rarely, agree) */
    if (s->imp.loss < 0.1)
        CHECK(st.pmtu_black_holes == 0, "%s: %llu black holes on a path of constant MTU",
              s->name, (unsigned long long)st.pmtu_black_holes);
    /* GSO messages of a loopback sender arrive whole at a GRO receiver, cut apart there */
    if (s->no_shim && !switched_off("ISTHMUS_UDP_GRO") && !switched_off("ISTHMUS_UDP_GSO"))
        CHECK(srv.st.pkts_coalesced > srv.st.pkts_received / 4,
              "%s: %llu of %llu datagrams arrived coalesced (UDP GRO)", s->name,
              (unsigned long long)srv.st.pkts_coalesced, (unsigned long long)srv.st.pkts_received);
    printf("%-28s %6.1f MB in %5.2f s  sent %llu pkts, rtx %llu, rto %llu; dropped %llu, dup %llu, "
           "reordered %llu, corrupted %llu; receiver discarded %llu dup, %llu bad; placed "
           "%.0f%% direct, %.2f MB back\n",
           s->name, s->bytes / 1e6, dt, (unsigned long long)st.pkts_sent,
           (unsigned long long)st.pkts_retransmitted, (unsigned long long)st.rto_count,
           (unsigned long long)faults_out, (unsigned long long)st.impair_dup,
           (unsigned long long)st.impair_reordered, (unsigned long long)st.impair_corrupted,
           (unsigned long long)srv.st.pkts_dup, (unsigned long long)srv.st.pkts_bad,
           srv.got ? 100.0 * (double)rs->bytes_placed_direct / (double)srv.got : 0.0,
           rs->bytes_placed_back / 1e6);
}

/* ---- a short outage: nothing passes either way for 1.5 s, mid-transfer ---- */
typedef struct outage {
    ism_udp_impair *imp;
    double seconds;
} outage;

static void *outage_run(void *arg)
{
    outage *u = arg;
    __atomic_store_n(&u->imp->max_dgram, 1, __ATOMIC_RELAXED); /* every datagram dropped */
    struct timespec ts = {(time_t)u->seconds, (long)((u->seconds - (time_t)u->seconds) * 1e9)};
    nanosleep(&ts, NULL);
    __atomic_store_n(&u->imp->max_dgram, 0, __ATOMIC_RELAXED);
    return NULL;
}

/* A connection rides out an outage shorter than its dead-peer timeout, as a TCP
 * connection does one shorter than its retry limit: data in flight is lost both ways,
 * keepalives go unanswered, and once the path is back the retransmission timer (its
 * backoff capped at 4x) resumes the transfer; every byte arrives once, in order. With
 * probing on, the silence is not taken for a smaller path MTU. */
static void test_short_outage(int pmtud)
{
    scen s = {pmtud ? "outage 1.5 s, probing on" : "outage 1.5 s", {.seed = 11}, "bbr",
              8u << 20, 0, 0, 0, 0, 0};
    ism_udp_opts o;
    opts_for(&s, &o);
    o.dead_ms = 5000;
    o.pmtud = pmtud;
    char err[512], hp[64];
    side srv = {.s = &s};
    srv.l = ism_udp_open("127.0.0.1:0", &key, SRV, &o, err, sizeof err);
    CHECK(srv.l != NULL, "%s: open: %s", s.name, err);
    if (!srv.l)
        return;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(srv.l));
    pthread_t th, ou;
    pthread_create(&th, NULL, server_recv, &srv);
    double t0 = now_s();
    ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, &o, 20000, err, sizeof err);
    CHECK(c != NULL, "%s: connect: %s", s.name, err);
    ism_udp_stats st = {0};
    int close_rc = -1, started = 0;
    outage u = {&s.imp, 1.5};
    if (c) {
        uint8_t *buf = malloc(1 << 16);
        for (uint64_t off = 0; off < s.bytes; off += 1 << 16) {
            if (off == s.bytes / 2) {
                pthread_create(&ou, NULL, outage_run, &u);
                started = 1;
            }
            up_fill(buf, off, 1 << 16, 7);
            ssize_t w = ism_udp_send(c, buf, 1 << 16, 20000);
            CHECK(w == 1 << 16, "%s: send at %llu: %zd (%s)", s.name, (unsigned long long)off, w,
                  ism_udp_error(c));
            if (w != 1 << 16)
                break;
        }
        free(buf);
        ism_udp_shutdown(c);
        uint8_t b1[16];
        ssize_t r = ism_udp_recv(c, b1, sizeof b1, 20000);
        CHECK(r == 0, "%s: expected the peer's end of stream, got %zd (%s)", s.name, r,
              ism_udp_error(c));
        ism_udp_get_stats(c, &st);
        close_rc = ism_udp_close(c, 20000);
    }
    if (started)
        pthread_join(ou, NULL);
    pthread_join(th, NULL);
    ism_udp_listener_close(srv.l);
    double dt = now_s() - t0;
    CHECK(srv.got == s.bytes && srv.eof && srv.bad_at < 0 && srv.err[0] == 0,
          "%s: received %llu of %zu bytes, eof %d, mismatch at %lld: %s", s.name,
          (unsigned long long)srv.got, s.bytes, srv.eof, (long long)srv.bad_at, srv.err);
    CHECK(close_rc == 0 && srv.close_rc == 0, "%s: close %d / %d", s.name, close_rc, srv.close_rc);
    CHECK(st.impair_mtu_dropped > 0 && st.pkts_retransmitted > 0 && dt >= u.seconds,
          "%s: %llu datagrams dropped by the outage, %llu retransmitted, %.2f s", s.name,
          (unsigned long long)st.impair_mtu_dropped, (unsigned long long)st.pkts_retransmitted, dt);
    CHECK(st.pmtu_black_holes == 0, "%s: an outage taken for a black hole", s.name);
    printf("%-28s %.1f MB in %.2f s through it: %llu dropped, %llu retransmitted, rto %llu\n",
           s.name, s.bytes / 1e6, dt, (unsigned long long)st.impair_mtu_dropped,
           (unsigned long long)st.pkts_retransmitted, (unsigned long long)st.rto_count);
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
    atomic_int client_done; /* the client has seen what it waits for (mode 1) */
    char err[512];
} fside;

static void *f_server(void *arg)
{
    fside *f = arg;
    ism_udp_conn *c = ism_udp_accept(f->l, 10000, f->err, sizeof f->err);
    if (!c)
        return NULL;
    /* alive but silent (never processes a packet) until the client has declared it
     * dead: a silence of a fixed 2.5 s raced the client's 1 s detector on a loaded host,
     * and the abort below, had it come first, would have been reported instead. The
     * 60 s cap only ends the test if the client never gets there. */
    for (int i = 0; f->mode == 1 && !atomic_load(&f->client_done) && i < 6000; i++)
        usleep(10 * 1000);
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
    char err[512], hp[64];
    for (int mode = 0; mode < 3; mode++) {
        fside f = {.mode = mode};
        /* the aborting peer (mode 2) must be heard before anyone could be declared dead:
         * its abort comes 200 ms after setup, a loaded host may delay it by more than 1 s */
        o.dead_ms = mode == 2 ? 10000 : 1000;
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
                    /* at once after dead_ms; the ceiling only has to tell "after dead_ms"
                     * from a detector that waits for something else (the 10 s timeouts) */
                    CHECK(dt >= 0.9 && dt < 5.0, "dead after %.2f s (dead_ms 1000)", dt);
                    printf("%-28s after %.2f s: %s\n", "silent peer declared dead", dt,
                           ism_udp_error(c));
                } else {
                    CHECK(r == ISM_UDP_ECLOSED && strstr(ism_udp_error(c), "aborted"),
                          "aborting peer: %zd '%s'", r, ism_udp_error(c));
                    printf("%-28s %s\n", "peer abort reported", ism_udp_error(c));
                }
                ism_udp_abort(c);
            }
            atomic_store(&f.client_done, 1);
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

/* Orderly close through heavy loss, many times over: the side that receives the other's
 * whole stream and FIN leaves after a linger, and the ACKs of the other side's last bytes
 * may all be lost. Its CLOSE DONE must then end the other side's close at once: without
 * it that side resent into a closed socket until its dead-peer timeout (close -13 after
 * 10 s, seen about once in 8 runs of the heavy-loss scenario on a loaded machine). */
typedef struct {
    ism_udp_listener *l;
    int close_rc;
    double close_s;
    uint64_t got;
    char err[256];
} cside;

static void *close_server(void *arg)
{
    cside *f = arg;
    ism_udp_conn *c = ism_udp_accept(f->l, 10000, f->err, sizeof f->err);
    if (!c)
        return NULL;
    uint8_t b[4096];
    ssize_t r;
    while ((r = ism_udp_recv(c, b, sizeof b, 10000)) > 0)
        f->got += (uint64_t)r;
    double t = now_s();
    f->close_rc = ism_udp_close(c, 15000);
    f->close_s = now_s() - t;
    return NULL;
}

/* Options for a test connection (1 MiB buffers, impairments imp or none), and a listener
 * on loopback whose thread (close_server) receives one stream and closes; hp gets its
 * address. */
static int start_close_server(cside *f, ism_udp_opts *o, ism_udp_impair *imp, char hp[64],
                              pthread_t *th)
{
    char err[512];
    ism_udp_opts_default(o);
    o->sndbuf = o->rcvbuf = 1 << 20;
    o->impair = imp;
    f->l = ism_udp_open("127.0.0.1:0", &key, SRV, o, err, sizeof err);
    CHECK(f->l, "open: %s", err);
    if (!f->l)
        return -1;
    snprintf(hp, 64, "127.0.0.1:%d", ism_udp_listener_port(f->l));
    pthread_create(th, NULL, close_server, f);
    return 0;
}

static void test_close_under_loss(void)
{
    int slow = 0, failed = 0;
    double worst = 0;
    for (int i = 0; i < 24; i++) {
        ism_udp_impair imp = {.loss = 0.3, .seed = 100 + (uint64_t)i};
        ism_udp_opts o;
        char err[512], hp[64];
        cside f = {0};
        pthread_t th;
        if (start_close_server(&f, &o, &imp, hp, &th) != 0)
            return;
        ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, &o, 10000, err, sizeof err);
        int rc = -1;
        double dt = 0;
        if (c) {
            uint8_t buf[20000];
            memset(buf, i, sizeof buf);
            ism_udp_send(c, buf, sizeof buf, 10000);
            ism_udp_shutdown(c);
            uint8_t b1[16];
            ssize_t r = ism_udp_recv(c, b1, sizeof b1, 10000);
            CHECK(r == 0, "close %d: expected the peer's end of stream, got %zd", i, r);
            double t = now_s();
            rc = ism_udp_close(c, 15000);
            dt = now_s() - t;
        }
        pthread_join(th, NULL);
        ism_udp_listener_close(f.l);
        CHECK(c && f.got == 20000, "close %d: connect %s, server got %llu of 20000: %s", i,
              c ? "ok" : err, (unsigned long long)f.got, f.err);
        failed += rc != 0 || f.close_rc != 0;
        slow += dt > 1.0 || f.close_s > 1.0;
        worst = dt > worst ? dt : worst;
        worst = f.close_s > worst ? f.close_s : worst;
    }
    /* dead_ms is 10 s: a close that waits for it (or half of it) is the bug; so is one
     * that resends a lost FIN after an RTO seeded from a lost setup probe (0.7 s, when the
     * RTO's seed was the time to the client's first UDP packet that arrived) */
    CHECK(failed == 0 && slow == 0, "24 closes at 30%% loss: %d failed, %d took over 1 s "
          "(slowest %.2f s)", failed, slow, worst);
    printf("%-28s 24 orderly closes at 30%% loss each way: slowest %.2f s\n", "close under loss",
           worst);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Connection setup costs round trips, not timers: the client's first UDP probe goes out
 * at once. It used to wait one probe interval (200 ms) first unless path-MTU probing
 * happened to want to send; on loopback a setup then took 205 ms instead of 7. */

/* confirm_later: connect returns once the first probe has gone; bytes written at once
 * follow it and all arrive. With every datagram of the client lost (UDP blocked; the TCP
 * set-up works) the connection fails after dead_ms and says so, as setup's own wait did. */
static void *late_accept(void *arg)
{
    fside *f = arg;
    ism_udp_conn *c = ism_udp_accept(f->l, 4000, f->err, sizeof f->err);
    if (c)
        ism_udp_abort(c);
    return NULL;
}

/* A close_server on loopback and a client connected to it (NULL: the message is in err);
 * *dt the seconds connect took. */
static ism_udp_conn *connect_close_server(cside *f, ism_udp_opts *o, pthread_t *th,
                                          int confirm_later, double *dt, char err[512])
{
    char hp[64];
    *f = (cside){0};
    if (start_close_server(f, o, NULL, hp, th) != 0)
        return NULL;
    o->confirm_later = confirm_later;
    double t0 = now_s();
    ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, o, 10000, err, 512);
    *dt = now_s() - t0;
    return c;
}

static void test_confirm_later(void)
{
    ism_udp_opts o;
    char err[512], hp[64];
    cside f;
    pthread_t th;
    double dt;
    ism_udp_conn *c = connect_close_server(&f, &o, &th, 1, &dt, err);
    if (!f.l)
        return;
    CHECK(c, "confirm_later connect: %s", err);
    static uint8_t data[300000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    if (c) {
        ssize_t w = ism_udp_send(c, data, sizeof data, 10000);
        CHECK(w == (ssize_t)sizeof data, "confirm_later send: %zd %s", w, ism_udp_error(c));
        ism_udp_shutdown(c);
        uint8_t b1[16];
        CHECK(ism_udp_recv(c, b1, sizeof b1, 10000) == 0, "confirm_later: no end of stream");
        CHECK(ism_udp_close(c, 15000) == 0, "confirm_later: close failed");
    }
    pthread_join(th, NULL);
    ism_udp_listener_close(f.l);
    CHECK(f.got == sizeof data, "confirm_later: the server got %llu of %zu bytes",
          (unsigned long long)f.got, sizeof data);

    /* UDP blocked: every datagram of the client dropped */
    ism_udp_impair drop = {.loss = 1.0, .burst = 1.0, .seed = 5}; /* every one, bursts too */
    fside g = {0};
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 20;
    g.l = ism_udp_open("127.0.0.1:0", &key, SRV, &o, err, sizeof err);
    CHECK(g.l, "open: %s", err);
    if (!g.l)
        return;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(g.l));
    pthread_create(&th, NULL, late_accept, &g);
    o.confirm_later = 1;
    o.dead_ms = 1000;
    o.impair = &drop;
    double t0 = now_s();
    c = ism_udp_connect(hp, &key, CLI, &o, 10000, err, sizeof err);
    CHECK(c, "confirm_later connect with UDP blocked: %s", err);
    if (c) {
        uint8_t b[16];
        ssize_t r = ism_udp_send(c, data, 1000, 10000);
        if (r >= 0)
            r = ism_udp_recv(c, b, sizeof b, 10000);
        double dt = now_s() - t0;
        CHECK(r == ISM_UDP_EDEAD && strstr(ism_udp_error(c), "firewall") &&
                  strstr(ism_udp_error(c), "127.0.0.1:"),
              "UDP blocked: %zd '%s'", r, ism_udp_error(c));
        CHECK(dt >= 0.9 && dt < 5.0, "UDP blocked: failed after %.2f s (dead_ms 1000)", dt);
        printf("%-28s after %.2f s: %s\n", "blocked UDP reported", dt, ism_udp_error(c));
        ism_udp_abort(c);
    }
    pthread_join(th, NULL);
    ism_udp_listener_close(g.l);
}

static void test_setup_time(void)
{
    double t[8];
    int n = 0;
    for (int i = 0; i < 8; i++) {
        ism_udp_opts o;
        char err[512];
        cside f;
        pthread_t th;
        double dt;
        ism_udp_conn *c = connect_close_server(&f, &o, &th, 0, &dt, err);
        if (!f.l)
            return;
        CHECK(c, "connect %d: %s", i, err);
        if (c) {
            t[n++] = dt;
            ism_udp_shutdown(c);
            uint8_t b1[16];
            CHECK(ism_udp_recv(c, b1, sizeof b1, 10000) == 0, "setup %d: no end of stream", i);
            CHECK(ism_udp_close(c, 15000) == 0, "setup %d: close failed", i);
        }
        pthread_join(th, NULL);
        ism_udp_listener_close(f.l);
    }
    if (n == 0)
        return;
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    /* The fastest of the 8, not the median: a timer in the setup delays every one of them
     * by 200 ms, while a loaded host (the median reached 0.238 s beside a build) delays
     * some; and 0.15 s, still below the 0.2 s such a timer adds to the fastest. */
    CHECK(t[0] < 0.15, "fastest connection setup on loopback %.3f s of %d (a timer, not round "
          "trips)", t[0], n);
    printf("%-28s median %.1f ms of %d on loopback (max %.1f ms)\n", "connection setup",
           t[n / 2] * 1e3, n, t[n - 1] * 1e3);
}

/* Both ends idle (but waiting in recv) for 2.5 x dead_ms: keepalive probes must keep the
 * connection alive, and data must still flow afterwards. Which end probes is a race: an
 * end's probe timer counts from the last packet it sent, acknowledgements of the other
 * end's probes included (of the client's 10-12 packets while idle, 3 to 8 were probes in 6
 * runs here; in one run of three before, it sent none and the old count of its packets,
 * at least 3, failed). */
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
    unsigned long long probes = 0, acks = 0;
    if (c) {
        uint8_t b[8];
        ism_udp_stats st0, st;
        ism_udp_get_stats(c, &st0);
        ssize_t r = ism_udp_recv(c, b, sizeof b, 2500);
        CHECK(r == ISM_UDP_ETIMEDOUT, "idle client recv: %zd (%s)", r, ism_udp_error(c));
        ism_udp_get_stats(c, &st);
        /* the server, whose dead_ms is 1 s, heard from the client within every second of
         * the 2.5 s and then got "hello": two packets at least, probes or acknowledgements
         * of its own probes, whichever end's timer won */
        probes = st.pkts_sent - st0.pkts_sent;
        acks = st.acks_sent - st0.acks_sent;
        CHECK(probes + acks >= 2, "idle 2.5 s with dead_ms 1000: the client sent %llu probes and %llu "
              "acknowledgements (2 or more keep the server from timing it out)", probes, acks);
        CHECK(ism_udp_send(c, "hello", 5, 5000) == 5, "send after idling: %s", ism_udp_error(c));
        ism_udp_close(c, 5000);
    }
    pthread_join(th, NULL);
    CHECK(f.err[0] == 0, "server: %s", f.err);
    ism_udp_listener_close(f.l);
    printf("%-28s idle 2.5 s with dead_ms 1000: alive, data flows after (the client sent %llu probes, "
           "%llu acknowledgements)\n", "keepalive", probes, acks);
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

/* One run of the convergence case: the search, the data intact, the probe counters. */
static void pmtu_converges_once(ism_udp_stats *st)
{
    /* A path of IP MTU 4000 under a ceiling of 9000; reno, whose window shrinks on any
     * loss it is told of: after the search it must still be in slow start. */
    static ism_udp_impair imp;
    imp = (ism_udp_impair){.max_dgram = 4000 - 28, .seed = 1};
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.pmtud = 1;
    o.mtu = 9000;
    o.cc = "reno";
    o.sndbuf = o.rcvbuf = 4u << 20;
    o.impair = &imp;
    pmtu_run r;
    uint64_t off = 0;
    memset(st, 0, sizeof *st);
    if (pmtu_start(&r, "pmtu converges", &o) == 0) {
        /* data flows until the search ends (lost probes are then found by gaps) */
        double t0 = now_s();
        int ok = send_pattern(r.c, &off, 16u << 20, r.sc.name) == 0;
        while (ok && r.c->pm.searching && now_s() - t0 < 20)
            ok = send_pattern(r.c, &off, 1u << 20, r.sc.name) == 0;
        CHECK(!r.c->pm.searching, "pmtu converges: still searching after %.1f s", now_s() - t0);
    }
    pmtu_finish(&r, off, st);
    CHECK(st->plpmtu <= 4000 && st->plpmtu >= 4000 - 16 &&
              st->payload == st->plpmtu - 28 - 36 - (st->suite ? UDP_SEAL_OVERHEAD : 0),
          "pmtu converges: plpmtu %u (payload %u), want 3984..4000", st->plpmtu, st->payload);
    CHECK(st->pmtu_base == 1280 && st->pmtu_ceiling == 9000, "pmtu converges: base %u ceiling %u",
          st->pmtu_base, st->pmtu_ceiling);
    CHECK(st->pmtu_probes_lost >= 3 && st->impair_mtu_dropped >= 3 && st->pmtu_probes_acked >= 1 &&
              st->pmtu_probes_sent <= 30,
          "pmtu converges: probes sent %llu acked %llu lost %llu, %llu dropped by the path",
          (unsigned long long)st->pmtu_probes_sent, (unsigned long long)st->pmtu_probes_acked,
          (unsigned long long)st->pmtu_probes_lost, (unsigned long long)st->impair_mtu_dropped);
}

static void test_pmtu_converges(void)
{
    /* Lost probes are not data: nothing retransmitted, no loss told to the controller. A
     * retransmission timeout says the host stalled one side for longer than the timeout (the
     * clean-clone suite saw rtx 2, lost 2, rto 2 under ASan on 2 loaded vCPUs), and such a
     * run tells nothing of probes against data: it is run again, up to 3 times in all, and
     * one run must be clean. A product that took probes for data fails every run. */
    ism_udp_stats st;
    for (int attempt = 1; attempt <= 3; attempt++) {
        pmtu_converges_once(&st);
        if (st.rto_count == 0)
            break;
        printf("%-28s run %d: %llu retransmission timeouts (the host stalled a side)%s\n",
               "pmtu converges", attempt, (unsigned long long)st.rto_count,
               attempt < 3 ? ", again" : "");
    }
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
    o.pmtud = 1;
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
        CHECK(st.plpmtu == 9000 && st.payload == 9000 - 28 - 36 - (st.suite ? UDP_SEAL_OVERHEAD : 0),
              "pmtu off: starts at %u", st.plpmtu);
        send_pattern(r.c, &off, 2u << 20, r.sc.name);
    }
    pmtu_finish(&r, off, &st);
    CHECK(st.plpmtu == 9000 && st.pmtu_probes_sent == 0, "pmtu off: plpmtu %u, %llu probes",
          st.plpmtu, (unsigned long long)st.pmtu_probes_sent);
    printf("%-28s fixed 9000, no probes\n", "pmtu off");
}

/* A connection to a server thread that accepts and holds its end (f: its state). */
static ism_udp_conn *held_pair(fside *f, const ism_udp_opts *o, pthread_t *th)
{
    char err[512], hp[64];
    f->l = ism_udp_open("127.0.0.1:0", &key, SRV, o, err, sizeof err);
    CHECK(f->l, "open: %s", err);
    if (!f->l)
        return NULL;
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ism_udp_listener_port(f->l));
    pthread_create(th, NULL, accept_and_hold, f);
    ism_udp_conn *c = ism_udp_connect(hp, &key, CLI, o, 5000, err, sizeof err);
    CHECK(c, "connect: %s", err);
    return c;
}

/* In the clear (crypto none): a wrong token or a bad CRC is dropped. Sealed: see
 * test_forged_sealed_packets. */
static void test_forged_packets(void)
{
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 20;
    o.suites = ISM_AUTH_SUITES_NONE;
    fside f = {0};
    pthread_t th;
    ism_udp_conn *c = held_pair(&f, &o, &th);
    if (!f.l)
        return;
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

/* Sealed (the default): a datagram with the right token is still dropped unless it opens
 * under the peer's key, with its number not seen before: a forged tag, a packet sealed
 * under another connection's key and a replay of a genuine one have no effect; the
 * genuine one, sealed as the peer would, is taken. */
static void test_forged_sealed_packets(void)
{
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 20;
    fside f = {0};
    pthread_t th;
    ism_udp_conn *c = held_pair(&f, &o, &th);
    if (!f.l)
        return;
    if (c) {
        CHECK(c->seal.on, "the connection is not sealed by default");
        /* the peer's sealing side, from the key this side opens with */
        ism_aead_dir_keys peer_tx;
        memcpy(peer_tx.secret, c->seal.rx.secret, sizeof peer_tx.secret);
        memcpy(peer_tx.iv, c->seal.rx.iv, sizeof peer_tx.iv);
        int r2 = c->seal.rx.rekey_log2;
        udp_seal as_peer = {.on = 1, .suite = c->seal.suite, .next = 5000};
        CHECK(ism_aead_init(&as_peer.tx, c->seal.suite, &peer_tx, 1, r2) == 0, "init");
        ism_aead_dir_keys other = peer_tx;
        other.secret[0] ^= 1;
        udp_seal stranger = {.on = 1, .suite = c->seal.suite, .next = 5000};
        CHECK(ism_aead_init(&stranger.tx, c->seal.suite, &other, 1, r2) == 0, "init");
        ism_udp_conn fake = *c; /* only its seal and options are used to seal */
        uint8_t p[ISM_UDPW_DATA_HDR + 100 + UDP_SEAL_OVERHEAD], genuine[sizeof p];
        memset(p + ISM_UDPW_DATA_HDR, 'X', 100);
        uint64_t bad0 = c->st.pkts_bad;
        /* under another key */
        fake.seal = stranger;
        ism_udpw_encode_data(p, 0, c->tok_rx, 1000, 0, 0);
        size_t n = udp_seal_buf(&fake, p, ISM_UDPW_DATA_HDR + 100);
        udp_dispatch(c, p, n, udp_now_us());
        /* the peer's key, a flipped bit */
        fake.seal = as_peer;
        memset(p + ISM_UDPW_DATA_HDR, 'X', 100);
        ism_udpw_encode_data(p, 0, c->tok_rx, 1000, 0, 0);
        n = udp_seal_buf(&fake, p, ISM_UDPW_DATA_HDR + 100);
        as_peer.next = fake.seal.next;
        memcpy(genuine, p, n);
        p[40] ^= 4;
        udp_dispatch(c, p, n, udp_now_us());
        CHECK(c->st.pkts_bad == bad0 + 2 && c->rcv_nxt == 0 && c->nivals == 0 && c->err == 0 &&
                  c->seal.rejected == 2,
              "forged sealed packets had an effect: bad %llu rcv_nxt %llu",
              (unsigned long long)c->st.pkts_bad, (unsigned long long)c->rcv_nxt);
        memcpy(p, genuine, n);
        udp_dispatch(c, p, n, udp_now_us());
        CHECK(c->rcv_nxt == 100, "genuine sealed packet not taken: rcv_nxt %llu",
              (unsigned long long)c->rcv_nxt);
        memcpy(p, genuine, n);
        udp_dispatch(c, p, n, udp_now_us());
        CHECK(c->seal.rejected == 3, "a replayed sealed packet was not refused");
        ism_aead_free(&as_peer.tx);
        ism_aead_free(&stranger.tx);
        ism_udp_abort(c);
        printf("%-28s another key, a flipped bit and a replay dropped\n", "forged sealed packets");
    }
    pthread_join(th, NULL);
    ism_udp_listener_close(f.l);
}

/* ---- placement into posted buffers, driven packet by packet ----
 *
 * A connection whose "peer" is a UDP socket nobody reads (our ACKs go there and are
 * lost), fed DATA packets through udp_dispatch: every arrival order, overlap and cancel
 * is chosen by the test, so the counters of where each byte went can be checked
 * exactly, and ASan sees every write into a posted buffer (each post gets a buffer of
 * exactly its size, freed as soon as the post ended). */
#define PL_SEED 21

static ism_udp_conn *fake_conn_or_err(size_t rcvbuf, char *err, size_t errlen)
{
    int sink = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (sink < 0 || fd < 0 || bind(sink, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(sink, (struct sockaddr *)&a, &al) != 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        CHECK(0, "fake connection: sockets");
        return NULL;
    }
    close(sink); /* our ACKs are refused or lost: both are fine for a receiver */
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.rcvbuf = rcvbuf;
    o.sndbuf = 1 << 16;
    o.dead_ms = 600000;
    o.keepalive_ms = 150000;
    const uint8_t tx[ISM_UDPW_TOKEN_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
    const uint8_t rx[ISM_UDPW_TOKEN_LEN] = {9, 10, 11, 12, 13, 14, 15, 16};
    return udp_conn_new(fd, &o, tx, rx, 1 << 16, NULL, 0, "fake peer", err, errlen);
}

static ism_udp_conn *fake_conn(size_t rcvbuf)
{
    char err[256];
    ism_udp_conn *c = fake_conn_or_err(rcvbuf, err, sizeof err);
    CHECK(c != NULL, "fake connection: %s", err);
    return c;
}

/* The transport's A/B switches are ISTHMUS_UDP_* settings (knobs.def): 0 turns one off,
 * unset leaves it on, and a bad value is refused in one line naming the variable, the
 * value, what is allowed and the peer. */
static void test_switches(void)
{
    static const char *const names[] = {"ISTHMUS_UDP_PLACE", "ISTHMUS_UDP_GRO", "ISTHMUS_UDP_GSO"};
    char *given[3]; /* the caller's own settings, put back at the end */
    for (int i = 0; i < 3; i++)
        given[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
    setenv("ISTHMUS_UDP_PLACE", "0", 1);
    setenv("ISTHMUS_UDP_GRO", "0", 1);
    setenv("ISTHMUS_UDP_GSO", "0", 1);
    ism_udp_conn *c = fake_conn(1 << 16);
    if (c) {
        CHECK(!c->place && !c->gro && !c->gso, "switched off: place %d, gro %d, gso %d", c->place,
              c->gro, c->gso);
        ism_udp_abort(c);
    }
    unsetenv("ISTHMUS_UDP_PLACE");
    unsetenv("ISTHMUS_UDP_GRO");
    unsetenv("ISTHMUS_UDP_GSO");
    c = fake_conn(1 << 16);
    if (c) {
        CHECK(c->place && c->gso, "unset: place %d, gso %d", c->place, c->gso);
        ism_udp_abort(c);
    }
    setenv("ISTHMUS_UDP_GRO", "on", 1);
    char err[256] = "";
    c = fake_conn_or_err(1 << 16, err, sizeof err);
    CHECK(c == NULL && strstr(err, "ISTHMUS_UDP_GRO=on: expected 0 or 1") && strstr(err, "fake peer"),
          "a bad switch: %s", c ? "accepted" : err);
    if (c)
        ism_udp_abort(c);
    for (int i = 0; i < 3; i++) {
        if (given[i])
            setenv(names[i], given[i], 1);
        else
            unsetenv(names[i]);
        free(given[i]);
    }
    printf("%-28s %s\n", "switches read", err);
}

/* A DATA packet carrying stream bytes [off, off + len) under packet number pn. */
static void inject(ism_udp_conn *c, uint64_t pn, uint64_t off, uint32_t len, int fin)
{
    uint8_t p[ISM_UDPW_MAX_DGRAM];
    ism_udpw_encode_data(p, fin ? ISM_UDPW_F_FIN : 0, c->tok_rx, pn, off, (uint32_t)pn);
    up_fill(p + ISM_UDPW_DATA_HDR, off, len, PL_SEED);
    ism_udpw_seal(p, ISM_UDPW_DATA_HDR + len);
    udp_dispatch(c, p, ISM_UDPW_DATA_HDR + len, udp_now_us());
}

static int verified(const uint8_t *b, uint64_t off, size_t n)
{
    uint8_t *scratch = malloc(n ? n : 1);
    int64_t bad = up_check(b, off, n, PL_SEED, scratch);
    free(scratch);
    return bad < 0;
}

#define PL_COUNTS(c, d, v, b)                                                                  \
    CHECK((c)->st.bytes_placed_direct == (d) && (c)->st.bytes_via_ring == (v) &&              \
              (c)->st.bytes_placed_back == (b),                                                \
          "line %d: direct %llu via ring %llu back %llu, expected %d %d %d", __LINE__,        \
          (unsigned long long)(c)->st.bytes_placed_direct,                                     \
          (unsigned long long)(c)->st.bytes_via_ring,                                          \
          (unsigned long long)(c)->st.bytes_placed_back, (d), (v), (b))

static void test_place_exact(void)
{
    ism_udp_conn *c = fake_conn(1 << 16);
    if (!c)
        return;
    uint8_t *b = malloc(5000);
    inject(c, 0, 0, 1000, 0);    /* in order, nothing posted: the ring */
    inject(c, 1, 3000, 1000, 0); /* beyond a hole: the ring */
    CHECK(ism_udp_recv_post(c, b, 5000) == 0, "post");
    PL_COUNTS(c, 0, 2000, 0);    /* both move into the buffer at once */
    CHECK(ism_udp_recv_filled(c) == 1000, "filled %zu after the post", ism_udp_recv_filled(c));
    CHECK(ism_udp_recv_post(c, b, 10) == ISM_UDP_EINVAL && ism_udp_recv_nb(c, b, 10) ==
              ISM_UDP_EINVAL && ism_udp_recv(c, b, 10, 10) == ISM_UDP_EINVAL,
          "a second post or a plain recv while posted must be refused");
    inject(c, 2, 1000, 1000, 0); /* in order: straight into the buffer */
    inject(c, 3, 1500, 1100, 0); /* resent at other boundaries: only [2000, 2600) is new */
    PL_COUNTS(c, 1600, 2000, 0);
    inject(c, 4, 2500, 1100, 0); /* overlaps the delivered and the held: [2600, 3000) new */
    PL_COUNTS(c, 2000, 2000, 0);
    CHECK(ism_udp_recv_filled(c) == 4000, "filled %zu, expected 4000", ism_udp_recv_filled(c));
    inject(c, 5, 4500, 1500, 0); /* across the end of the post: 500 placed, 1000 to the ring */
    inject(c, 4, 2500, 1100, 0); /* a duplicate packet number: dropped unread */
    PL_COUNTS(c, 2500, 2000, 0);
    CHECK(c->st.bytes_received == 5500 && c->st.pkts_dup == 1, "received %llu, dup %llu",
          (unsigned long long)c->st.bytes_received, (unsigned long long)c->st.pkts_dup);
    CHECK(!ism_udp_readable(c) && ism_udp_recv_test(c) == ISM_UDP_EAGAIN, "post not over yet");
    ssize_t k = ism_udp_recv_cancel(c);
    CHECK(k == 4000 && verified(b, 0, 4000), "cancel returned %zd", k);
    PL_COUNTS(c, 2500, 2000, 500); /* [4500, 5000) went back to the ring */
    memset(b, 0xee, 5000); /* the buffer is the caller's again: nothing may land in it now */
    inject(c, 6, 4000, 500, 0);
    uint8_t *b2 = malloc(10000);
    k = ism_udp_recv_nb(c, b2, 10000);
    CHECK(k == 2000 && verified(b2, 4000, 2000), "recv_nb after the cancel: %zd", k);
    PL_COUNTS(c, 2500, 4000, 500);
    CHECK(ism_udp_recv_cancel(c) == ISM_UDP_EINVAL && ism_udp_recv_test(c) == ISM_UDP_EINVAL,
          "cancel/test without a post");
    CHECK(b[4600] == 0xee, "a cancelled post's buffer was written to");
    free(b);

    /* A blocking recv that times out puts back what it held beyond the hole. */
    inject(c, 7, 7000, 1000, 0);
    k = ism_udp_recv(c, b2, 3000, 30);
    CHECK(k == ISM_UDP_ETIMEDOUT, "recv with a hole: %zd", k);
    PL_COUNTS(c, 2500, 5000, 1500);
    inject(c, 8, 6000, 1000, 0);
    uint8_t *b3 = malloc(4000);
    CHECK(ism_udp_recv_post(c, b3, 4000) == 0, "post");
    PL_COUNTS(c, 2500, 7000, 1500);
    inject(c, 9, 8000, 500, 1); /* the end of the stream, inside the post */
    k = ism_udp_recv_test(c);
    CHECK(k == 2500 && verified(b3, 6000, 2500), "test at the end of the stream: %zd", k);
    PL_COUNTS(c, 3000, 7000, 1500);
    CHECK(c->st.bytes_received == 8500, "received %llu", (unsigned long long)c->st.bytes_received);
    CHECK(ism_udp_recv_nb(c, b2, 10) == 0 && ism_udp_recv(c, b2, 10, 10) == 0 &&
              ism_udp_recv_all(c, b2, 10, 10) == 0,
          "end of stream after the post");
    CHECK(ism_udp_recv_post(c, b3, 10) == 0 && ism_udp_recv_test(c) == 0, "post at the end");
    /* close ends a post: the buffer may go right after */
    CHECK(ism_udp_recv_post(c, b3, 10) == 0, "post before close");
    ism_udp_close(c, 50);
    free(b3);
    free(b2);
    printf("%-28s placement, overlaps, cancel, timeout, end of stream: exact counts\n",
           "posted receives (exact)");
}

typedef struct pl_pkt {
    uint64_t pn, off;
    uint32_t len;
} pl_pkt;

static uint64_t pl_rng;
static uint64_t pl_rand(uint64_t n)
{
    pl_rng ^= pl_rng << 13;
    pl_rng ^= pl_rng >> 7;
    pl_rng ^= pl_rng << 17;
    return pl_rng % n;
}

/* A random sender (variable packet sizes, reordering, duplicates, losses resent at new
 * boundaries, spurious retransmissions of delivered or held bytes) against a random
 * receiver (posts of 1 byte to 4 windows, cancels, recv_nb, test). Every byte delivered
 * is checked at its offset, and the counters must add up. */
static void test_place_random(uint64_t seed)
{
    const uint64_t TOTAL = 3u << 20, WIN = 1 << 16;
    ism_udp_conn *c = fake_conn(WIN);
    if (!c)
        return;
    pl_rng = seed;
    enum { POOL = 256, LOST = 4096 };
    pl_pkt pool[POOL];
    uint64_t lost[LOST][2];
    int npool = 0, nlost = 0;
    uint64_t pn = 0, sent_hi = 0, got = 0, steps = 0, cancels = 0, posts = 0;
    uint8_t *post = NULL, *rd = malloc(WIN);
    size_t post_n = 0;
    int eof = 0, bad = 0;
    while (!eof && !bad && steps++ < 10000000) {
        uint64_t r = pl_rand(100);
        uint64_t edge = c->rcv_read + WIN < TOTAL ? c->rcv_read + WIN : TOTAL;
        if (r < 30 && sent_hi < edge && npool < POOL) { /* new data, up to the window */
            uint32_t len = 1 + (uint32_t)pl_rand(1436);
            if (len > edge - sent_hi)
                len = (uint32_t)(edge - sent_hi);
            pool[npool++] = (pl_pkt){pn++, sent_hi, len};
            sent_hi += len;
        } else if (r < 70 && npool > 0) { /* one arrives, any of those on the way */
            int i = (int)pl_rand((uint64_t)npool);
            pl_pkt p = pool[i];
            uint64_t fate = pl_rand(100);
            if (fate < 8 && nlost < LOST) { /* lost: resent later, cut differently */
                lost[nlost][0] = p.off;
                lost[nlost++][1] = p.off + p.len;
            } else {
                inject(c, p.pn, p.off, p.len, p.off + p.len == TOTAL);
            }
            if (fate >= 95)
                continue; /* duplicated: it stays on the way and arrives again */
            pool[i] = pool[--npool];
        } else if (r < 78 && nlost > 0 && npool < POOL) { /* a retransmission */
            uint64_t *l = lost[pl_rand((uint64_t)nlost)];
            uint32_t len = 1 + (uint32_t)pl_rand(1436);
            if (len > l[1] - l[0])
                len = (uint32_t)(l[1] - l[0]);
            pool[npool++] = (pl_pkt){pn++, l[0], len};
            l[0] += len;
            if (l[0] == l[1])
                memcpy(l, lost[--nlost], sizeof lost[0]);
        } else if (r < 80 && sent_hi > c->rcv_read && npool < POOL) {
            /* spurious: bytes we may hold already, under new boundaries */
            uint64_t lo = c->rcv_read - pl_rand(c->rcv_read < 3000 ? c->rcv_read + 1 : 3000);
            uint64_t off = lo + pl_rand(sent_hi - lo);
            uint32_t len = 1 + (uint32_t)pl_rand(1436);
            if (len > sent_hi - off)
                len = (uint32_t)(sent_hi - off);
            pool[npool++] = (pl_pkt){pn++, off, len};
        } else if (!post) { /* the application */
            if (pl_rand(4)) {
                post_n = 1 + (size_t)pl_rand(pl_rand(3) ? 3000 : 4 * WIN);
                post = malloc(post_n);
                CHECK(ism_udp_recv_post(c, post, post_n) == 0, "post");
                posts++;
            } else {
                size_t n = 1 + (size_t)pl_rand(WIN);
                ssize_t k = ism_udp_recv_nb(c, rd, n);
                if (k > 0) {
                    bad = !verified(rd, got, (size_t)k);
                    got += (uint64_t)k;
                } else if (k == 0) {
                    eof = 1;
                } else if (k != ISM_UDP_EAGAIN) {
                    CHECK(0, "recv_nb: %zd %s", k, ism_udp_error(c));
                    bad = 1;
                }
            }
        } else {
            int cancel = pl_rand(40) == 0;
            ssize_t k = cancel ? ism_udp_recv_cancel(c) : ism_udp_recv_test(c);
            cancels += (uint64_t)cancel;
            if (k >= 0) {
                bad = !verified(post, got, (size_t)k);
                got += (uint64_t)k;
                eof = !cancel && k < (ssize_t)post_n; /* a test ends short only there */
                free(post);
                post = NULL;
            } else if (k != ISM_UDP_EAGAIN) {
                CHECK(0, "recv_test: %zd %s", k, ism_udp_error(c));
                bad = 1;
            }
        }
    }
    if (post) {
        ism_udp_recv_cancel(c);
        free(post);
    }
    const ism_udp_stats *st = &c->st;
    CHECK(!bad && eof && got == TOTAL, "seed %llu: delivered %llu of %llu bytes (mismatch %d, "
          "end %d) in %llu steps", (unsigned long long)seed, (unsigned long long)got,
          (unsigned long long)TOTAL, bad, eof, (unsigned long long)steps);
    CHECK(st->bytes_received == TOTAL, "bytes_received %llu (new bytes counted once)",
          (unsigned long long)st->bytes_received);
    CHECK(st->bytes_placed_direct - st->bytes_placed_back + st->bytes_via_ring == got,
          "direct %llu - back %llu + via ring %llu != delivered %llu",
          (unsigned long long)st->bytes_placed_direct, (unsigned long long)st->bytes_placed_back,
          (unsigned long long)st->bytes_via_ring, (unsigned long long)got);
    CHECK(st->bytes_placed_direct > TOTAL / 4 && st->bytes_placed_back > 0 && cancels > 0 &&
              st->pkts_dup > 0,
          "paths not taken: direct %llu, back %llu, cancels %llu, dup %llu",
          (unsigned long long)st->bytes_placed_direct, (unsigned long long)st->bytes_placed_back,
          (unsigned long long)cancels, (unsigned long long)st->pkts_dup);
    printf("%-28s seed %llu: %.1f MB in %llu packets, %llu posts (%llu cancelled): direct %.2f MB, "
           "via ring %.2f MB, back %.2f MB\n",
           "posted receives (random)", (unsigned long long)seed, TOTAL / 1e6,
           (unsigned long long)pn, (unsigned long long)posts, (unsigned long long)cancels,
           st->bytes_placed_direct / 1e6, st->bytes_via_ring / 1e6, st->bytes_placed_back / 1e6);
    ism_udp_abort(c);
    free(rd);
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
    test_close_under_loss();
    test_setup_time();
    test_confirm_later();
    test_short_outage(0);
    test_short_outage(1);
    test_forged_packets();
    test_forged_sealed_packets();
    test_switches();
    test_place_exact();
    for (uint64_t seed = 1; seed <= 3; seed++)
        test_place_random(seed * 0x9E3779B97F4A7C15ull);
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
