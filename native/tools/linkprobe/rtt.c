/* rtt.c: `isthmus-linkprobe rtt`: TCP ping-pong with one message in flight (TCP_NODELAY),
 * the way an MPI ping-pong sees the link; prints min, median, p99, max and mean in us. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "sock.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int lp_rtt(const lp_opts *o)
{
    char err[512];
    lp_hello h = {.mode = LP_RTT, .stream = 0, .nstreams = 1, .size = o->size};
    int fd = lp_connect(o, &h, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "isthmus-linkprobe: %s\n", err);
        return 1;
    }
    char *buf = calloc(1, o->size);
    int64_t *t = calloc((size_t)o->count, sizeof *t);
    if (!buf || !t) {
        fprintf(stderr, "isthmus-linkprobe: out of memory\n");
        return 1;
    }
    for (int i = -o->warmup; i < o->count; i++) {
        int64_t t0 = lp_now_ns();
        if (ism_sock_write_full(fd, buf, o->size, ism_now_ms() + 30000, NULL) ||
            ism_sock_read_full(fd, buf, o->size, ism_now_ms() + 30000, NULL)) {
            fprintf(stderr, "isthmus-linkprobe: the server at %s:%d stopped answering after %d "
                            "round trips (30 s time-out)\n",
                    o->host, o->port, i + o->warmup);
            return 1;
        }
        if (i >= 0)
            t[i] = lp_now_ns() - t0;
        if (o->interval_us > 0) {
            struct timespec ts = {o->interval_us / 1000000, (o->interval_us % 1000000) * 1000L};
            nanosleep(&ts, NULL);
        }
    }
    close(fd);
    double sum = 0;
    for (int i = 0; i < o->count; i++)
        sum += (double)t[i];
    qsort(t, (size_t)o->count, sizeof *t, cmp_i64);
    int p99 = (int)((o->count - 1) * 0.99 + 0.5);
    printf("{\"mode\": \"rtt\", \"size\": %u, \"count\": %d, \"min_us\": %.3f, \"median_us\": "
           "%.3f, \"p99_us\": %.3f, \"max_us\": %.3f, \"mean_us\": %.3f}\n",
           o->size, o->count, t[0] / 1e3, t[o->count / 2] / 1e3, t[p99] / 1e3,
           t[o->count - 1] / 1e3, sum / o->count / 1e3);
    free(buf);
    free(t);
    return 0;
}
