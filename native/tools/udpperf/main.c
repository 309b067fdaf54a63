/* main.c: isthmus-udpperf: move N bytes (or S seconds of data) between two hosts over
 * the reliable-UDP transport, or over authenticated TCP for comparison, and verify
 * every byte at the receiver (pattern.h). Each side prints one JSON line with bytes,
 * time, goodput, the CPU time it used (getrusage) and the transport's counters. Drives
 * the transfer tests and bench/udp_transport.py.
 *
 *   isthmus-udpperf recv --listen HOST:PORT --job HEX --secret-file F [options]
 *   isthmus-udpperf send --connect HOST:PORT --job HEX --secret-file F
 *                        (--bytes N | --duration S) [options]
 * options: --transport udp|tcp, --cc NAME (udp: bbr, reno; tcp: the kernel's),
 *          --window BYTES (udp: send/receive buffers; tcp: SO_SNDBUF/SO_RCVBUF),
 *          --mtu N (udp: the ceiling of path-MTU discovery, or with --no-pmtud the
 *          packet size), --pmtud (udp: probe the path MTU, the default; kept for
 *          scripts), --no-pmtud (every full packet is --mtu), --pmtu-raise-ms N (udp: search upward again
 *          this long after a search ended), --no-crc, --omit S (receiver: goodput after
 *          the first S seconds),
 *          --impair loss=P,burst=P,dup=P,reorder=P,corrupt=P,seed=N (udp, our sends),
 *          --seed N (data pattern), --timeout S (setup and idle limit), --count N
 *          (recv: connections to serve, default 1), --no-verify, --trace (send: the
 *          controller's state on stderr every 0.1 s), --block BYTES (recv: bytes per
 *          receive call, default 1 MiB; over udp each call posts its buffer and waits
 *          for all of it, so payload is placed straight into it: ism_udp_recv_all).
 * Exit status: 0 success, 1 transfer failed or data mismatch (JSON says which), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "pattern.h"
#include "sock.h"
#include "aead.h"
#include "udp.h"

#define BLOCK (64u << 10)

typedef struct args {
    int send;
    char hostport[300];
    const char *job, *secret_file;
    int tcp;
    const char *cc;
    unsigned long long bytes;
    double duration, omit, timeout;
    size_t window;
    int mtu, crc, verify, count, trace, no_pmtud, pmtu_raise_ms;
    size_t block;
    uint64_t seed;
    ism_udp_impair impair;
    int impaired;
} args;

static void usage(void)
{
    fprintf(stderr,
            "usage: isthmus-udpperf recv --listen HOST:PORT --job HEX --secret-file FILE [opts]\n"
            "       isthmus-udpperf send --connect HOST:PORT --job HEX --secret-file FILE\n"
            "                            (--bytes N | --duration S) [opts]\n"
            "opts:  --transport udp|tcp --cc NAME --window BYTES --mtu N --pmtud|--no-pmtud --pmtu-raise-ms N\n"
            "       --no-crc --omit S\n"
            "       --impair loss=P,burst=P,dup=P,reorder=P,corrupt=P,seed=N --seed N\n"
            "       --timeout S --count N --no-verify --block BYTES\n");
    exit(2);
}

static void bad(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "isthmus-udpperf: %s %s: %s\n", opt, val, want);
    exit(2);
}

static unsigned long long bytes_arg(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || errno || *v == '-')
        bad(opt, v, "expected a number of bytes (suffixes k, m, g: powers of 1024)");
    int sh = 0;
    if (*end == 'k' || *end == 'K')
        sh = 10, end++;
    else if (*end == 'm' || *end == 'M')
        sh = 20, end++;
    else if (*end == 'g' || *end == 'G')
        sh = 30, end++;
    if (*end || (sh && x > (~0ull >> sh)))
        bad(opt, v, "expected a number of bytes (suffixes k, m, g: powers of 1024)");
    return x << sh;
}

static double num_arg(const char *opt, const char *v, double lo, double hi)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        bad(opt, v, "number out of range");
    return x;
}

static void impair_arg(args *a, const char *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            bad("--impair", v, "expected key=value pairs (loss, burst, dup, reorder, corrupt, seed)");
        *eq = 0;
        const char *k = tok, *x = eq + 1;
        if (strcmp(k, "seed") == 0)
            a->impair.seed = (uint64_t)num_arg("--impair seed", x, 0, 1e18);
        else {
            double p = num_arg("--impair", x, 0, 1);
            if (strcmp(k, "loss") == 0) a->impair.loss = p;
            else if (strcmp(k, "burst") == 0) a->impair.burst = p;
            else if (strcmp(k, "dup") == 0) a->impair.dup = p;
            else if (strcmp(k, "reorder") == 0) a->impair.reorder = p;
            else if (strcmp(k, "corrupt") == 0) a->impair.corrupt = p;
            else bad("--impair", k, "unknown key (loss, burst, dup, reorder, corrupt, seed)");
        }
    }
    a->impaired = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* ---- one transport, two implementations ---- */
typedef struct xport {
    ism_udp_conn *u;
    int fd;
    char err[400];
} xport;

static ssize_t x_send(xport *x, const void *b, size_t n, int tmo)
{
    if (x->u) {
        ssize_t r = ism_udp_send(x->u, b, n, tmo);
        if (r < 0)
            snprintf(x->err, sizeof x->err, "%s", ism_udp_error(x->u));
        return r;
    }
    int rc = ism_sock_write_full(x->fd, b, n, ism_now_ms() + tmo, NULL);
    if (rc) {
        snprintf(x->err, sizeof x->err, "tcp send: %s", rc == ISM_SOCK_ETIMEDOUT ? "timed out" : strerror(errno));
        return -1;
    }
    return (ssize_t)n;
}

static ssize_t x_recv(xport *x, void *b, size_t n, int tmo)
{
    if (x->u) {
        ssize_t r = ism_udp_recv_all(x->u, b, n, tmo);
        if (r < 0)
            snprintf(x->err, sizeof x->err, "%s", r == ISM_UDP_ETIMEDOUT ? "receive timed out" : ism_udp_error(x->u));
        return r;
    }
    struct timeval tv = {tmo / 1000, (tmo % 1000) * 1000};
    setsockopt(x->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t r = recv(x->fd, b, n, 0);
    if (r < 0)
        snprintf(x->err, sizeof x->err, "tcp recv: %s", strerror(errno));
    return r;
}

static int x_close(xport *x, int tmo)
{
    if (x->u) {
        int rc = ism_udp_close(x->u, tmo);
        x->u = NULL;
        return rc;
    }
    shutdown(x->fd, SHUT_WR);
    char b[256];
    struct timeval tv = {tmo / 1000, (tmo % 1000) * 1000};
    setsockopt(x->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (recv(x->fd, b, sizeof b, 0) > 0)
        ;
    close(x->fd);
    return 0;
}

static void print_stats(const ism_udp_stats *s)
{
    printf(", \"udp\": {\"cc\": \"%s\", \"cc_state\": \"%s\", \"payload\": %u, \"pkts_sent\": %llu, "
           "\"pkts_retransmitted\": %llu, \"pkts_lost\": %llu, \"rto\": %llu, \"pkts_received\": %llu, "
           "\"pkts_dup\": %llu, \"pkts_reordered\": %llu, \"pkts_coalesced\": %llu, \"pkts_bad\": %llu, "
           "\"acks_sent\": %llu, \"acks_received\": %llu, "
           "\"srtt_us\": %lld, \"min_rtt_us\": %lld, \"impair_dropped\": %llu, \"impair_dup\": %llu, "
           "\"impair_reordered\": %llu, \"impair_corrupted\": %llu, \"impair_mtu_dropped\": %llu, "
           "\"plpmtu\": %u, \"pmtu_base\": %u, \"pmtu_ceiling\": %u, \"pmtu_probes_sent\": %llu, "
           "\"pmtu_probes_acked\": %llu, \"pmtu_probes_lost\": %llu, \"pmtu_black_holes\": %llu, "
           "\"pmtu_raised_us\": %lld, \"bytes_placed_direct\": %llu, \"bytes_via_ring\": %llu, "
           "\"bytes_placed_back\": %llu, \"pkts_unauth\": %llu, \"suite\": \"%s\", \"rekeys\": %llu}",
           s->cc, s->cc_state, s->payload, (unsigned long long)s->pkts_sent,
           (unsigned long long)s->pkts_retransmitted, (unsigned long long)s->pkts_lost,
           (unsigned long long)s->rto_count, (unsigned long long)s->pkts_received,
           (unsigned long long)s->pkts_dup, (unsigned long long)s->pkts_reordered,
           (unsigned long long)s->pkts_coalesced, (unsigned long long)s->pkts_bad,
           (unsigned long long)s->acks_sent, (unsigned long long)s->acks_received,
           (long long)s->srtt_us, (long long)s->min_rtt_us,
           (unsigned long long)s->impair_dropped, (unsigned long long)s->impair_dup,
           (unsigned long long)s->impair_reordered, (unsigned long long)s->impair_corrupted,
           (unsigned long long)s->impair_mtu_dropped, s->plpmtu, s->pmtu_base, s->pmtu_ceiling,
           (unsigned long long)s->pmtu_probes_sent, (unsigned long long)s->pmtu_probes_acked,
           (unsigned long long)s->pmtu_probes_lost, (unsigned long long)s->pmtu_black_holes,
           (long long)s->pmtu_raised_us, (unsigned long long)s->bytes_placed_direct,
           (unsigned long long)s->bytes_via_ring, (unsigned long long)s->bytes_placed_back,
           (unsigned long long)s->pkts_unauth, ism_aead_suite_name(s->suite),
           (unsigned long long)s->rekeys);
}

static int tcp_prep(int fd, void *arg)
{
    const args *a = arg;
    if (a->window) {
        int w = (int)a->window;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &w, sizeof w);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &w, sizeof w);
    }
    if (a->cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, a->cc, (socklen_t)strlen(a->cc)) != 0)
        return -1;
    return 0;
}

static void udp_opts(const args *a, ism_udp_opts *o)
{
    ism_udp_opts_default(o);
    if (a->cc)
        o->cc = a->cc;
    if (a->window)
        o->sndbuf = o->rcvbuf = a->window;
    if (a->mtu)
        o->mtu = a->mtu;
    o->pmtud = !a->no_pmtud;
    if (a->pmtu_raise_ms)
        o->pmtu_raise_ms = a->pmtu_raise_ms;
    o->crc = a->crc;
    if (a->impaired)
        o->impair = &a->impair;
    if (a->timeout > 0)
        o->dead_ms = (int)(a->timeout * 1000);
}

static int run_send(const args *a, const ism_auth_key *key)
{
    char err[512] = "";
    xport x = {0};
    int tmo = (int)(a->timeout * 1000);
    double t0 = now_s(), c0 = cpu_s();
    ism_auth_id self = {0, 1};
    if (a->tcp) {
        char host[256];
        int port;
        if (ism_sock_parse_hostport(a->hostport, host, sizeof host, &port, err, sizeof err) != 0)
            goto fail;
        x.fd = ism_sock_connect_prep(host, port, tmo, tcp_prep, (void *)a, err, sizeof err);
        if (x.fd < 0)
            goto fail;
        if (ism_auth_client(x.fd, key, self, NULL, tmo, err, sizeof err) != 0) {
            close(x.fd);
            goto fail;
        }
    } else {
        ism_udp_opts o;
        udp_opts(a, &o);
        x.u = ism_udp_connect(a->hostport, key, self, &o, tmo, err, sizeof err);
        if (!x.u)
            goto fail;
    }
    uint8_t *buf = malloc(BLOCK);
    if (!buf) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    double t1 = now_s();
    uint64_t off = 0;
    double t_trace = 0;
    ism_udp_stats st = {0};
    for (;;) {
        size_t n = BLOCK;
        if (a->duration > 0) {
            if (now_s() - t1 >= a->duration)
                break;
        } else {
            if (off >= a->bytes)
                break;
            if (a->bytes - off < n)
                n = (size_t)(a->bytes - off);
        }
        if (a->verify)
            up_fill(buf, off, n, a->seed);
        else
            memset(buf, 0, n);
        if (x_send(&x, buf, n, tmo) != (ssize_t)n) {
            snprintf(err, sizeof err, "%s", x.err);
            if (x.u)
                ism_udp_abort(x.u);
            else
                close(x.fd);
            free(buf);
            goto fail;
        }
        off += n;
        if (a->trace && x.u && now_s() - t_trace >= 0.1) {
            t_trace = now_s();
            ism_udp_get_stats(x.u, &st);
            fprintf(stderr, "trace %.2f s: %s cwnd %llu pacing %.1f Mbit/s inflight %llu srtt %lld us "
                    "sent %llu rtx %llu lost %llu rto %llu acked %llu plpmtu %u black_holes %llu\n",
                    t_trace - t1, st.cc_state,
                    (unsigned long long)st.cwnd, st.pacing_rate * 8 / 1e6,
                    (unsigned long long)st.inflight, (long long)st.srtt_us,
                    (unsigned long long)st.pkts_sent, (unsigned long long)st.pkts_retransmitted,
                    (unsigned long long)st.pkts_lost, (unsigned long long)st.rto_count,
                    (unsigned long long)st.bytes_acked, st.plpmtu,
                    (unsigned long long)st.pmtu_black_holes);
        }
    }
    free(buf);
    int rc = 0;
    double t2 = 0;
    if (x.u) {
        /* End our stream and wait for the receiver's end: by then it has every byte, so
         * the time and the counters cover the whole transfer. */
        uint8_t tail[64];
        ssize_t r = ism_udp_shutdown(x.u);
        while (r == 0 && (r = ism_udp_recv(x.u, tail, sizeof tail, tmo)) > 0)
            ;
        if (r < 0) {
            /* a timed-out wait leaves the connection healthy, with no message of its own */
            snprintf(err, sizeof err, "waiting for the receiver to end its stream: %s",
                     r == ISM_UDP_ETIMEDOUT ? ism_udp_strerror((int)r) : ism_udp_error(x.u));
            rc = (int)r;
        }
        ism_udp_get_stats(x.u, &st);
        t2 = now_s();
    }
    if (x.u) {
        int crc = ism_udp_close(x.u, tmo);
        if (crc && !rc) {
            rc = crc;
            snprintf(err, sizeof err, "close: %s", ism_udp_strerror(rc));
        }
    } else {
        x_close(&x, tmo);
    }
    if (t2 == 0)
        t2 = now_s(); /* TCP: after the receiver closed, so it had every byte */
    printf("{\"role\": \"send\", \"transport\": \"%s\", \"ok\": %s, \"bytes\": %llu, "
           "\"seconds\": %.6f, \"setup_s\": %.6f, \"mbit_s\": %.3f, \"cpu_s\": %.6f",
           a->tcp ? "tcp" : "udp", rc ? "false" : "true", (unsigned long long)off, t2 - t1,
           t1 - t0, off * 8 / (t2 - t1) / 1e6, cpu_s() - c0);
    if (!a->tcp)
        print_stats(&st);
    if (rc)
        printf(", \"error\": \"%s\"", err);
    printf("}\n");
    fflush(stdout);
    return rc ? 1 : 0;
fail:
    printf("{\"role\": \"send\", \"transport\": \"%s\", \"ok\": false, \"error\": \"%s\"}\n",
           a->tcp ? "tcp" : "udp", err);
    fprintf(stderr, "isthmus-udpperf: %s\n", err);
    return 1;
}

static int serve_one(const args *a, const ism_auth_key *key, ism_udp_listener *l, int lfd)
{
    char err[512] = "";
    xport x = {0};
    int tmo = (int)(a->timeout * 1000);
    ism_auth_id self = {1, 1};
    double c0 = cpu_s();
    if (a->tcp) {
        x.fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (x.fd < 0 || tcp_prep(x.fd, (void *)a) != 0 ||
            ism_auth_server(x.fd, key, self, NULL, tmo, err, sizeof err) != 0) {
            if (!err[0])
                snprintf(err, sizeof err, "accept: %s", strerror(errno));
            goto fail;
        }
    } else {
        x.u = ism_udp_accept(l, tmo, err, sizeof err);
        if (!x.u)
            goto fail;
    }
    uint8_t *buf = malloc(a->block), *scratch = malloc(a->block);
    double t_first = 0, t_omit = 0, t_last = 0;
    uint64_t off = 0, off_omit = 0;
    int64_t bad_at = -1;
    ism_udp_stats st = {0};
    for (;;) {
        ssize_t r = x_recv(&x, buf, a->block, tmo);
        if (r < 0) {
            snprintf(err, sizeof err, "%s after %llu bytes", x.err, (unsigned long long)off);
            break;
        }
        double t = now_s();
        if (r == 0)
            break;
        if (off == 0)
            t_first = t;
        if (a->verify && bad_at < 0)
            bad_at = up_check(buf, off, (size_t)r, a->seed, scratch);
        off += (uint64_t)r;
        t_last = t;
        if (t_omit == 0 && t - t_first >= a->omit) {
            t_omit = t;
            off_omit = off;
        }
    }
    free(buf);
    free(scratch);
    if (x.u)
        ism_udp_get_stats(x.u, &st);
    int ok = err[0] == 0 && bad_at < 0;
    if (x.u) {
        int rc = ism_udp_close(x.u, tmo);
        if (rc && ok) {
            snprintf(err, sizeof err, "close: %s", ism_udp_strerror(rc));
            ok = 0;
        }
    } else {
        x_close(&x, tmo);
    }
    if (bad_at >= 0)
        snprintf(err, sizeof err, "data mismatch at byte %lld", (long long)bad_at);
    double span = t_last - t_first, span_omit = t_last - t_omit;
    printf("{\"role\": \"recv\", \"transport\": \"%s\", \"ok\": %s, \"bytes\": %llu, "
           "\"verified\": %s, \"seconds\": %.6f, \"mbit_s\": %.3f, \"omit_s\": %.3f, "
           "\"mbit_s_after_omit\": %.3f, \"cpu_s\": %.6f",
           a->tcp ? "tcp" : "udp", ok ? "true" : "false", (unsigned long long)off,
           a->verify && bad_at < 0 ? "true" : "false", span,
           span > 0 ? off * 8 / span / 1e6 : 0.0, a->omit,
           span_omit > 0 ? (off - off_omit) * 8 / span_omit / 1e6 : 0.0, cpu_s() - c0);
    if (!a->tcp)
        print_stats(&st);
    if (!ok)
        printf(", \"error\": \"%s\"", err);
    printf("}\n");
    fflush(stdout);
    return ok ? 0 : 1;
fail:
    printf("{\"role\": \"recv\", \"transport\": \"%s\", \"ok\": false, \"error\": \"%s\"}\n",
           a->tcp ? "tcp" : "udp", err);
    fflush(stdout);
    fprintf(stderr, "isthmus-udpperf: %s\n", err);
    return 1;
}

static int run_recv(const args *a, const ism_auth_key *key)
{
    char err[512];
    ism_udp_listener *l = NULL;
    int lfd = -1;
    if (a->tcp) {
        char host[256];
        int port;
        if (ism_sock_parse_hostport(a->hostport, host, sizeof host, &port, err, sizeof err) != 0 ||
            (lfd = ism_sock_listen(host, port, 16, err, sizeof err)) < 0) {
            fprintf(stderr, "isthmus-udpperf: %s\n", err);
            return 1;
        }
        /* Options on the listener are inherited, so the window covers the handshake. */
        tcp_prep(lfd, (void *)a);
    } else {
        ism_udp_opts o;
        udp_opts(a, &o);
        l = ism_udp_open(a->hostport, key, (ism_auth_id){1, 1}, &o, err, sizeof err);
        if (!l) {
            fprintf(stderr, "isthmus-udpperf: %s\n", err);
            return 1;
        }
    }
    fprintf(stderr, "listening on port %d\n", a->tcp ? ism_sock_local_port(lfd) : ism_udp_listener_port(l));
    int rc = 0;
    for (int i = 0; i < a->count; i++)
        rc |= serve_one(a, key, l, lfd);
    if (l)
        ism_udp_listener_close(l);
    if (lfd >= 0)
        close(lfd);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv")))
        usage();
    args a = {0};
    a.send = strcmp(argv[1], "send") == 0;
    a.crc = 1;
    a.verify = 1;
    a.count = 1;
    a.timeout = 30;
    a.seed = 1;
    a.block = 1u << 20;
    enum { O_LISTEN = 1, O_CONNECT, O_JOB, O_SECRET, O_TRANSPORT, O_CC, O_BYTES, O_DURATION,
           O_WINDOW, O_MTU, O_NOCRC, O_OMIT, O_IMPAIR, O_SEED, O_TIMEOUT, O_COUNT, O_NOVERIFY, O_TRACE,
           O_BLOCK, O_PMTUD, O_NOPMTUD, O_PMTURAISE };
    static const struct option lo[] = {
        {"listen", 1, 0, O_LISTEN}, {"connect", 1, 0, O_CONNECT}, {"job", 1, 0, O_JOB},
        {"secret-file", 1, 0, O_SECRET}, {"transport", 1, 0, O_TRANSPORT}, {"cc", 1, 0, O_CC},
        {"bytes", 1, 0, O_BYTES}, {"duration", 1, 0, O_DURATION}, {"window", 1, 0, O_WINDOW},
        {"mtu", 1, 0, O_MTU}, {"no-crc", 0, 0, O_NOCRC}, {"omit", 1, 0, O_OMIT},
        {"impair", 1, 0, O_IMPAIR}, {"seed", 1, 0, O_SEED}, {"timeout", 1, 0, O_TIMEOUT},
        {"count", 1, 0, O_COUNT}, {"no-verify", 0, 0, O_NOVERIFY}, {"trace", 0, 0, O_TRACE},
        {"block", 1, 0, O_BLOCK}, {"pmtud", 0, 0, O_PMTUD}, {"no-pmtud", 0, 0, O_NOPMTUD},
        {"pmtu-raise-ms", 1, 0, O_PMTURAISE}, {0, 0, 0, 0}};
    int ch;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case O_LISTEN:
        case O_CONNECT:
            if ((ch == O_LISTEN) == a.send)
                bad(ch == O_LISTEN ? "--listen" : "--connect", optarg,
                    a.send ? "send takes --connect" : "recv takes --listen");
            snprintf(a.hostport, sizeof a.hostport, "%s", optarg);
            break;
        case O_JOB: a.job = optarg; break;
        case O_SECRET: a.secret_file = optarg; break;
        case O_TRANSPORT:
            if (strcmp(optarg, "udp") && strcmp(optarg, "tcp"))
                bad("--transport", optarg, "expected udp or tcp");
            a.tcp = strcmp(optarg, "tcp") == 0;
            break;
        case O_CC: a.cc = optarg; break;
        case O_BYTES: a.bytes = bytes_arg("--bytes", optarg); break;
        case O_DURATION: a.duration = num_arg("--duration", optarg, 0.001, 86400); break;
        case O_WINDOW: a.window = bytes_arg("--window", optarg); break;
        case O_MTU: a.mtu = (int)num_arg("--mtu", optarg, 604, 9000); break;
        case O_NOCRC: a.crc = 0; break;
        case O_OMIT: a.omit = num_arg("--omit", optarg, 0, 86400); break;
        case O_IMPAIR: impair_arg(&a, optarg); break;
        case O_SEED: a.seed = (uint64_t)num_arg("--seed", optarg, 0, 1e18); break;
        case O_TIMEOUT: a.timeout = num_arg("--timeout", optarg, 0.1, 86400); break;
        case O_COUNT: a.count = (int)num_arg("--count", optarg, 1, 1000000); break;
        case O_NOVERIFY: a.verify = 0; break;
        case O_TRACE: a.trace = 1; break;
        case O_BLOCK:
            a.block = bytes_arg("--block", optarg);
            if (a.block < 1 || a.block > (1u << 30))
                bad("--block", optarg, "expected 1 byte .. 1 GiB");
            break;
        case O_PMTUD: a.no_pmtud = 0; break;
        case O_NOPMTUD: a.no_pmtud = 1; break;
        case O_PMTURAISE: a.pmtu_raise_ms = (int)num_arg("--pmtu-raise-ms", optarg, 10, 86400000); break;
        default: usage();
        }
    }
    if (optind != argc || !a.hostport[0] || !a.job || !a.secret_file)
        usage();
    if (a.send && !a.bytes == !(a.duration > 0))
        bad("--bytes/--duration", "", "send needs exactly one of them");
    if (!a.tcp && a.cc && strcmp(a.cc, "bbr") && strcmp(a.cc, "reno"))
        bad("--cc", a.cc, "the UDP transport has bbr and reno");
    ism_auth_key key;
    char err[512];
    if (ism_auth_key_load_file(&key, a.job, a.secret_file, err, sizeof err) != 0) {
        fprintf(stderr, "isthmus-udpperf: %s\n", err);
        return 2;
    }
    int rc = a.send ? run_send(&a, &key) : run_recv(&a, &key);
    ism_auth_key_clear(&key);
    return rc;
}
