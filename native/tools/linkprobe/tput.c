/* tput.c: `isthmus-linkprobe tput`: N parallel TCP streams send for a fixed time; the
 * server measures what arrived (receiver goodput, optionally leaving out the first
 * seconds of slow start) and each stream's TCP_INFO gives retransmissions and RTT. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe.h"
#include "sock.h"

typedef struct stream {
    const lp_opts *o;
    int idx, fd;
    pthread_barrier_t *go;
    int64_t end_ns;
    lp_report rep;
    unsigned retrans, rtt_us;
    char err[512];
    int ok;
} stream;

static void *run(void *arg)
{
    stream *s = arg;
    static __thread char buf[256 << 10];
    memset(buf, 0x5a, sizeof buf);
    pthread_barrier_wait(s->go);
    if (s->fd < 0)
        return NULL;
    int64_t end = lp_now_ns() + (int64_t)(s->o->duration * 1e9);
    while (lp_now_ns() < end) {
        ssize_t k = write(s->fd, buf, sizeof buf);
        if (k < 0 && errno != EINTR) {
            snprintf(s->err, sizeof s->err, "stream %d: %s", s->idx, strerror(errno));
            return NULL;
        }
    }
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0) {
        s->retrans = ti.tcpi_total_retrans;
        s->rtt_us = ti.tcpi_rtt;
    }
    shutdown(s->fd, SHUT_WR);
    uint8_t r[LP_REPORT_SIZE];
    if (ism_sock_read_full(s->fd, r, sizeof r, ism_now_ms() + 60000, NULL) ||
        lp_report_decode(r, sizeof r, &s->rep)) {
        snprintf(s->err, sizeof s->err, "stream %d: no valid report from the server", s->idx);
        return NULL;
    }
    s->ok = 1;
    return NULL;
}

int lp_tput(const lp_opts *o)
{
    stream *st = calloc((size_t)o->streams, sizeof *st);
    pthread_t *th = calloc((size_t)o->streams, sizeof *th);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)o->streams);
    uint64_t session = (uint64_t)lp_now_ns() ^ (uint64_t)getpid() << 32;
    int bad = 0;
    /* the control connection: the server opens a data port with our window */
    char err[512];
    lp_hello sh = {.mode = LP_SETUP, .stream = 0, .nstreams = (uint8_t)o->streams,
                   .window = o->window, .session = session};
    int cfd = lp_connect(o, &sh, err, sizeof err);
    uint8_t pb[LP_PORT_SIZE];
    int port = -1;
    if (cfd < 0 || ism_sock_read_full(cfd, pb, sizeof pb, ism_now_ms() + 10000, NULL) ||
        (port = lp_port_decode(pb, sizeof pb)) < 0) {
        fprintf(stderr, "isthmus-linkprobe: %s\n", cfd < 0 ? err : "the server opened no data port");
        if (cfd >= 0)
            close(cfd);
        pthread_barrier_destroy(&go);
        free(st);
        free(th);
        return 1;
    }
    lp_opts data = *o;
    data.port = port;
    o = &data;
    for (int i = 0; i < o->streams; i++) {
        lp_hello h = {.mode = LP_TPUT, .stream = (uint8_t)i, .nstreams = (uint8_t)o->streams,
                      .window = o->window, .omit_ms = (uint32_t)(o->omit * 1000),
                      .session = session};
        st[i].o = o;
        st[i].idx = i;
        st[i].go = &go;
        st[i].fd = lp_connect(o, &h, st[i].err, sizeof st[i].err);
        if (st[i].fd < 0)
            bad = 1;
    }
    for (int i = 0; i < o->streams; i++)
        pthread_create(&th[i], NULL, run, &st[i]);
    for (int i = 0; i < o->streams; i++)
        pthread_join(th[i], NULL);
    uint64_t bytes = 0, counted = 0, ns = 0;
    unsigned retrans = 0;
    double rtt = 0;
    for (int i = 0; i < o->streams; i++) {
        if (!st[i].ok) {
            fprintf(stderr, "isthmus-linkprobe: %s\n", st[i].err);
            bad = 1;
            continue;
        }
        bytes += st[i].rep.bytes;
        counted += st[i].rep.bytes_after_omit;
        if (st[i].rep.ns_after_omit > ns)
            ns = st[i].rep.ns_after_omit;
        retrans += st[i].retrans;
        rtt += st[i].rtt_us;
        close(st[i].fd);
    }
    close(cfd);
    if (bad)
        return 1;
    if (!ns || !counted) {
        fprintf(stderr, "isthmus-linkprobe: nothing arrived after the first %.1f s; make "
                        "--duration longer than --omit\n", o->omit);
        return 1;
    }
    printf("{\"mode\": \"tput\", \"streams\": %d, \"window\": %u, \"cc\": \"%s\", "
           "\"duration_s\": %.3f, \"omit_s\": %.3f, \"bytes\": %llu, \"mbit_s\": %.3f, "
           "\"retrans\": %u, \"rtt_us\": %.0f, \"per_stream_mbit_s\": [",
           o->streams, o->window, o->cc[0] ? o->cc : "default", o->duration, o->omit,
           (unsigned long long)bytes, (double)counted * 8 / ((double)ns / 1e9) / 1e6, retrans,
           rtt / o->streams);
    for (int i = 0; i < o->streams; i++)
        printf("%s%.3f", i ? ", " : "",
               st[i].rep.ns_after_omit ? (double)st[i].rep.bytes_after_omit * 8 /
                                             ((double)st[i].rep.ns_after_omit / 1e9) / 1e6
                                       : 0.0);
    printf("]}\n");
    pthread_barrier_destroy(&go);
    free(st);
    free(th);
    return 0;
}
