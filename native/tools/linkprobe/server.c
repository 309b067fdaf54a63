/* server.c: `isthmus-linkprobe serve`: the far end of every measurement. One thread per
 * connection; nothing is read from a connection but the handshake before it has proven
 * the job secret, and a HELLO that fails validation closes it. rtt connections echo;
 * setup connections open a data port for a throughput test, whose tput connections are
 * counted and answered with a REPORT.
 *
 * Strangers are kept apart from the measurements: a connection that has not
 * authenticated and sent its HELLO yet counts in a budget of its own (admit.h: a new
 * connection always gets in, displacing the oldest pending one of the address that
 * holds the most), and has ISM_ADMIT_PREAUTH_MS from accept for its handshake and
 * HELLO. Only connections past their HELLO count against LP_MAX_CONNS. A data port
 * takes connections only from the address of the setup that opened it, with a budget
 * of the test's stream count. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admit.h"
#include "probe.h"
#include "sock.h"

/* Authenticated connections at once (each has a thread until it ends). */
#define LP_MAX_CONNS 256
/* Connections on the main port still authenticating at once. */
#define LP_MAX_PENDING 8

typedef struct conn {
    int fd;
    const ism_auth_key *key;
    int data_only;      /* accepted on a data port: only tput is allowed */
    ism_admit *pending; /* the budget it counts in until its HELLO is in */
    ism_admit_entry adm;
} conn;

static atomic_int nconns;
static ism_admit main_pending;

static void *serve_one(void *arg);

/* A thread for the connection fd accepted from sa, counted in pending until its HELLO
 * is in. */
static void spawn(int fd, const struct sockaddr *sa, socklen_t sl, const ism_auth_key *key,
                  int data_only, ism_admit *pending)
{
    conn *c = malloc(sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->key = key;
    c->data_only = data_only;
    c->pending = pending;
    ism_admit_enter(pending, &c->adm, fd, sa, sl);
    pthread_t t;
    if (pthread_create(&t, NULL, serve_one, c) != 0) {
        ism_admit_leave(pending, &c->adm);
        close(fd);
        free(c);
        return;
    }
    pthread_detach(t);
}

static int same_host(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_family == AF_INET && b->sin_family == AF_INET &&
           a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* A data port for one throughput test, with the window set before any handshake. */
static void setup(int fd, const lp_hello *h, const ism_auth_key *key)
{
    char err[512], host[64] = "0.0.0.0";
    struct sockaddr_in sa, client;
    socklen_t sl = sizeof sa, cl = sizeof client;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    if (getpeername(fd, (struct sockaddr *)&client, &cl) != 0)
        return;
    int lfd = ism_sock_listen(host, 0, LP_MAX_STREAMS, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "isthmus-linkprobe: %s\n", err);
        return;
    }
    if (h->window) {
        int w = (int)h->window;
        setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &w, sizeof w);
    }
    ism_admit pending;
    ism_admit_init(&pending, h->nstreams);
    uint8_t pb[LP_PORT_SIZE];
    lp_port_encode(ism_sock_local_port(lfd), pb);
    if (ism_sock_write_full(fd, pb, sizeof pb, ism_now_ms() + 10000, NULL) == 0) {
        /* accept the test's streams until the control connection closes */
        struct pollfd p[2] = {{lfd, POLLIN, 0}, {fd, POLLIN, 0}};
        while (poll(p, 2, 600000) > 0) {
            if (p[1].revents)
                break; /* EOF (or anything) on the control connection: the test is over */
            if (!(p[0].revents & POLLIN))
                continue;
            ism_admit_wait_room(&pending);
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            int dfd = accept4(lfd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
            if (dfd >= 0 && same_host(&from, &client))
                spawn(dfd, (struct sockaddr *)&from, fl, key, 1, &pending);
            else if (dfd >= 0)
                close(dfd); /* not from the client that asked for this port */
        }
    }
    close(lfd);
    ism_admit_drain(&pending); /* no stream thread refers to it after this */
    ism_admit_destroy(&pending);
}

static void echo(int fd, uint32_t size)
{
    char *buf = malloc(size);
    if (!buf)
        return;
    for (;;) {
        if (ism_sock_read_full(fd, buf, size, -1, NULL) != 0)
            break;
        if (ism_sock_write_full(fd, buf, size, -1, NULL) != 0)
            break;
    }
    free(buf);
}

static void sink(int fd, const lp_hello *h)
{
    if (h->window) {
        int w = (int)h->window;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &w, sizeof w);
    }
    static __thread char buf[256 << 10];
    lp_report r = {0, 0, 0};
    /* the rate counts bytes that arrive after the first read past the omitted start,
     * over the time from that read to the last one */
    int64_t first = 0, start = 0, last = 0, omit = (int64_t)h->omit_ms * 1000000;
    for (;;) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        int64_t now = lp_now_ns();
        if (!first)
            first = now;
        r.bytes += (uint64_t)k;
        if (now - first >= omit) {
            if (!start)
                start = now;
            else
                r.bytes_after_omit += (uint64_t)k;
            last = now;
        }
    }
    r.ns_after_omit = start ? (uint64_t)(last - start) : 0;
    uint8_t out[LP_REPORT_SIZE];
    lp_report_encode(&r, out);
    ism_sock_write_full(fd, out, sizeof out, ism_now_ms() + 10000, NULL);
}

/* The handshake and the HELLO, within the pre-authentication time: the HELLO's mode,
 * or -1 (logged). */
static int admit_hello(conn *c, const char *peer, lp_hello *h)
{
    char err[512];
    int64_t deadline = ism_now_ms() + ISM_ADMIT_PREAUTH_MS;
    ism_auth_id self = {1, 0}, them;
    uint8_t buf[LP_HELLO_SIZE];
    const char *why = NULL;
    int rc = ism_auth_server(c->fd, c->key, self, &them, ISM_ADMIT_PREAUTH_MS, err, sizeof err);
    int mode = -1;
    if (rc == ISM_AUTH_ETIMEDOUT)
        snprintf(err, sizeof err, "did not authenticate within %d s (the limit for a connection "
                 "that has not proven the job secret)", ISM_ADMIT_PREAUTH_MS / 1000);
    else if (rc == 0 && ism_sock_read_full(c->fd, buf, sizeof buf, deadline, NULL) != 0)
        snprintf(err, sizeof err, "sent no hello within %d s of connecting", ISM_ADMIT_PREAUTH_MS / 1000);
    else if (rc == 0 && (mode = lp_hello_route(buf, sizeof buf, c->data_only, h, &why)) < 0)
        snprintf(err, sizeof err, "%s", why);
    int dropped = ism_admit_leave(c->pending, &c->adm) != 0;
    if (dropped)
        fprintf(stderr, "isthmus-linkprobe: %s: dropped before authenticating: %d connections were "
                "authenticating, and this was the oldest of the address with the most\n",
                peer, c->pending->budget);
    else if (mode < 0)
        fprintf(stderr, "isthmus-linkprobe: refused %s: %s\n", peer, err);
    return dropped ? -1 : mode;
}

static void *serve_one(void *arg)
{
    conn *c = arg;
    char peer[128];
    ism_sock_peer_name(c->fd, peer, sizeof peer);
    lp_hello h;
    int mode = admit_hello(c, peer, &h);
    if (mode >= 0 && atomic_fetch_add(&nconns, 1) >= LP_MAX_CONNS) {
        fprintf(stderr, "isthmus-linkprobe: refused %s: %d measurements running already\n", peer,
                LP_MAX_CONNS);
    } else if (mode == LP_SETUP) {
        setup(c->fd, &h, c->key);
    } else if (mode == LP_RTT) {
        ism_sock_set_nodelay(c->fd, 1);
        echo(c->fd, h.size);
    } else if (mode == LP_TPUT) {
        sink(c->fd, &h);
    }
    if (mode >= 0)
        atomic_fetch_sub(&nconns, 1);
    close(c->fd);
    free(c);
    return NULL;
}

int lp_serve(const char *host, int port, const ism_auth_key *key)
{
    char err[512];
    int lfd = ism_sock_listen(host, port, 128, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "isthmus-linkprobe: %s\n", err);
        return 2;
    }
    ism_admit_init(&main_pending, LP_MAX_PENDING);
    printf("listening %d\n", ism_sock_local_port(lfd));
    fflush(stdout);
    for (;;) {
        ism_admit_wait_room(&main_pending);
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
                if (errno == EMFILE || errno == ENFILE)
                    usleep(100000);
                continue;
            }
            fprintf(stderr, "isthmus-linkprobe: accept: %s\n", strerror(errno));
            return 1;
        }
        spawn(fd, (struct sockaddr *)&sa, sl, key, 0, &main_pending);
    }
}
