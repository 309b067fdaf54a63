/* server.c: `isthmus-linkprobe serve`: the far end of every measurement. One thread per
 * connection; nothing is read from a connection before it has passed the job-secret
 * handshake, and a HELLO that fails validation closes it. rtt connections echo; tput
 * connections are counted and answered with a REPORT. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe.h"
#include "sock.h"

typedef struct conn {
    int fd;
    const ism_auth_key *key;
    int data_only; /* accepted on a data port: only tput is allowed */
} conn;

static void *serve_one(void *arg);

/* At most this many connections at once (each has a thread until it ends or fails the
 * handshake's 10 s limit), so a flood of connections cannot exhaust the server. */
#define LP_MAX_CONNS 256
static _Atomic int nconns;
static void spawn(int fd, const ism_auth_key *key, int data_only);

/* A data port for one throughput test, with the window set before any handshake. */
static void setup(int fd, const lp_hello *h, const ism_auth_key *key)
{
    char err[512], host[64] = "0.0.0.0";
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    int lfd = ism_sock_listen(host, 0, LP_MAX_STREAMS, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "isthmus-linkprobe: %s\n", err);
        return;
    }
    if (h->window) {
        int w = (int)h->window;
        setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &w, sizeof w);
    }
    uint32_t port = (uint32_t)ism_sock_local_port(lfd);
    uint8_t pb[4] = {(uint8_t)port, (uint8_t)(port >> 8), 0, 0};
    if (ism_sock_write_full(fd, pb, sizeof pb, ism_now_ms() + 10000, NULL) == 0) {
        /* accept the test's streams until the control connection closes */
        struct pollfd p[2] = {{lfd, POLLIN, 0}, {fd, POLLIN, 0}};
        int accepted = 0;
        while (poll(p, 2, 600000) > 0) {
            if (p[1].revents)
                break; /* EOF (or anything) on the control connection: the test is over */
            if (p[0].revents & POLLIN) {
                int dfd = accept(lfd, NULL, NULL);
                if (dfd >= 0 && accepted++ < h->nstreams)
                    spawn(dfd, key, 1);
                else if (dfd >= 0)
                    close(dfd);
            }
        }
    }
    close(lfd);
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

static void *serve_one(void *arg)
{
    conn *c = arg;
    char err[512], peer[128];
    ism_sock_peer_name(c->fd, peer, sizeof peer);
    ism_auth_id self = {1, 0}, them;
    uint8_t buf[LP_HELLO_SIZE];
    lp_hello h;
    const char *why = NULL;
    if (ism_auth_server(c->fd, c->key, self, &them, 10000, err, sizeof err) != 0) {
        fprintf(stderr, "isthmus-linkprobe: refused %s: %s\n", peer, err);
    } else if (ism_sock_read_full(c->fd, buf, sizeof buf, ism_now_ms() + 10000, NULL) != 0) {
        fprintf(stderr, "isthmus-linkprobe: %s sent no hello\n", peer);
    } else if (lp_hello_decode(buf, sizeof buf, &h, &why) != 0) {
        fprintf(stderr, "isthmus-linkprobe: refused %s: %s\n", peer, why);
    } else if (c->data_only != (h.mode == LP_TPUT)) {
        fprintf(stderr, "isthmus-linkprobe: refused %s: %s\n", peer,
                c->data_only ? "only throughput streams go to a data port"
                             : "throughput streams go to the data port of a setup");
    } else if (h.mode == LP_SETUP) {
        setup(c->fd, &h, c->key);
    } else if (h.mode == LP_RTT) {
        ism_sock_set_nodelay(c->fd, 1);
        echo(c->fd, h.size);
    } else {
        sink(c->fd, &h);
    }
    close(c->fd);
    free(c);
    nconns--;
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
    printf("listening %d\n", ism_sock_local_port(lfd));
    fflush(stdout);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            fprintf(stderr, "isthmus-linkprobe: accept: %s\n", strerror(errno));
            return 1;
        }
        spawn(fd, key, 0);
    }
}

static void spawn(int fd, const ism_auth_key *key, int data_only)
{
    if (nconns >= LP_MAX_CONNS) {
        fprintf(stderr, "isthmus-linkprobe: %d connections open; refusing another\n", LP_MAX_CONNS);
        close(fd);
        return;
    }
    nconns++;
    conn *c = malloc(sizeof *c);
    pthread_t t;
    if (!c) {
        close(fd);
        nconns--;
        return;
    }
    c->fd = fd;
    c->key = key;
    c->data_only = data_only;
    if (pthread_create(&t, NULL, serve_one, c) != 0) {
        close(fd);
        free(c);
        nconns--;
        return;
    }
    pthread_detach(t);
}
