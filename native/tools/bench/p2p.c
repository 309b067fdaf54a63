/*
 * p2p.c - point-to-point benchmarks: ping-pong latency, window bandwidth (one way and
 * both ways), message rate of many pairs, and latency by placement (distance between
 * ranks). The loops follow the OSU Micro-Benchmarks' definitions (osu_latency, osu_bw,
 * osu_bibw, osu_mbw_mr) so numbers are comparable; each repetition is one sample.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define TAG_DATA 11
#define TAG_ACK 12

typedef struct {
    int peer;       /* world rank paired with rank 0 (or with `me` for msgrate) */
    int active;     /* this rank takes part */
    int sender;     /* this rank starts/sends */
    long long size;
    int window;
    char *sbuf, *rbuf;
    MPI_Request *reqs;
    MPI_Status *stats;  /* real statuses, as OSU passes (and -Wall wants) */
} p2p_arg;

static void check_pair(ism_bench_ctx *c, int peer)
{
    if (c->nranks < 2)
        ism_bench_usage_error(c, "%s needs at least 2 ranks (got %d)", c->opt.benchmark, c->nranks);
    if (peer >= c->nranks)
        ism_bench_usage_error(c, "--peer %d: there are only %d ranks (0..%d)", peer, c->nranks,
                              c->nranks - 1);
}

static const long long *sizes_or(ism_bench_ctx *c, const long long *def, int ndef, int *n)
{
    if (c->opt.sizes_given) {
        *n = c->opt.nsizes;
        return c->opt.sizes;
    }
    *n = ndef;
    return def;
}

double ism_bench_pingpong_us(ism_bench_ctx *c, MPI_Comm comm, int peer, int initiator, int n,
                             void *sbuf, void *rbuf, long iters)
{
    double t0 = MPI_Wtime();
    if (initiator) {
        for (long i = 0; i < iters; i++) {
            MPI_Send(sbuf, n, MPI_CHAR, peer, TAG_DATA, comm);
            MPI_Recv(rbuf, n, MPI_CHAR, peer, TAG_DATA, comm, MPI_STATUS_IGNORE);
        }
    } else {
        for (long i = 0; i < iters; i++) {
            MPI_Recv(rbuf, n, MPI_CHAR, peer, TAG_DATA, comm, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, n, MPI_CHAR, peer, TAG_DATA, comm);
        }
    }
    (void)c;
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)iters);
}

/* One-way latency: elapsed / (2 iters), in microseconds, measured at rank 0. */
static double pingpong_sample(ism_bench_ctx *c, void *v, long iters)
{
    p2p_arg *a = v;
    if (!a->active)
        return 0.0;
    return ism_bench_pingpong_us(c, c->world, a->peer, a->sender, (int)a->size, a->sbuf, a->rbuf,
                                 iters);
}

/* Window of back-to-back sends, closed by a 4-byte ack (osu_bw): time at the sender. */
static double window_oneway(ism_bench_ctx *c, p2p_arg *a, long iters)
{
    int n = (int)a->size, ack = 0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (a->sender) {
            for (int w = 0; w < a->window; w++)
                MPI_Isend(a->sbuf, n, MPI_CHAR, a->peer, TAG_DATA, c->world, &a->reqs[w]);
            MPI_Waitall(a->window, a->reqs, a->stats);
            MPI_Recv(&ack, 1, MPI_INT, a->peer, TAG_ACK, c->world, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < a->window; w++)
                MPI_Irecv(a->rbuf, n, MPI_CHAR, a->peer, TAG_DATA, c->world, &a->reqs[w]);
            MPI_Waitall(a->window, a->reqs, a->stats);
            MPI_Send(&ack, 1, MPI_INT, a->peer, TAG_ACK, c->world);
        }
    }
    return MPI_Wtime() - t0;
}

static double bw_sample(ism_bench_ctx *c, void *v, long iters)
{
    p2p_arg *a = v;
    if (!a->active)
        return 0.0;
    double t = window_oneway(c, a, iters);
    return (double)a->size * a->window * (double)iters / t / 1e6;
}

/* Both sides post a window of receives and of sends, then wait (osu_bibw). */
static double bibw_sample(ism_bench_ctx *c, void *v, long iters)
{
    p2p_arg *a = v;
    int n = (int)a->size;
    if (!a->active)
        return 0.0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        for (int w = 0; w < a->window; w++)
            MPI_Irecv(a->rbuf, n, MPI_CHAR, a->peer, TAG_DATA, c->world, &a->reqs[w]);
        for (int w = 0; w < a->window; w++)
            MPI_Isend(a->sbuf, n, MPI_CHAR, a->peer, TAG_DATA, c->world, &a->reqs[a->window + w]);
        MPI_Waitall(2 * a->window, a->reqs, a->stats);
    }
    double t = MPI_Wtime() - t0;
    return 2.0 * (double)a->size * a->window * (double)iters / t / 1e6;
}

static void setup_pair(ism_bench_ctx *c, p2p_arg *a, long long size, int window)
{
    memset(a, 0, sizeof *a);
    a->size = size;
    a->window = window;
    a->active = c->rank == 0 || c->rank == c->opt.peer;
    a->sender = c->rank == 0;
    a->peer = c->rank == 0 ? c->opt.peer : 0;
    a->sbuf = ism_bench_alloc(c, (size_t)size);
    a->rbuf = ism_bench_alloc(c, (size_t)size);
    a->reqs = calloc(2 * (size_t)window, sizeof *a->reqs);
    a->stats = calloc(2 * (size_t)window, sizeof *a->stats);
}

static void free_pair(p2p_arg *a)
{
    free(a->sbuf);
    free(a->rbuf);
    free(a->reqs);
    free(a->stats);
}

static void pair_benchmark(ism_bench_ctx *c, const char *metric, const char *unit,
                           const long long *def, int ndef, ism_bench_sample_fn fn, int windowed)
{
    int n;
    check_pair(c, c->opt.peer);
    const long long *sizes = sizes_or(c, def, ndef, &n);
    for (int k = 0; k < n; k++) {
        p2p_arg a;
        ism_bench_point p;
        setup_pair(c, &a, sizes[k], windowed ? c->opt.window : 1);
        ism_bench_point_init(c, &p, metric, unit, sizes[k]);
        ism_bench_param_int(&p, "peer", c->opt.peer);
        if (windowed)
            ism_bench_param_int(&p, "window", c->opt.window);
        MPI_Barrier(c->world);
        ism_bench_run_point(c, &p, c->world, fn, &a);
        free_pair(&a);
    }
}

static const long long LAT_SIZES[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                      8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576};
static const long long BW_SIZES[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576,
                                     4194304};
#define COUNT(x) ((int)(sizeof(x) / sizeof((x)[0])))

void ism_bench_latency(ism_bench_ctx *c)
{
    pair_benchmark(c, "latency", "us", LAT_SIZES, COUNT(LAT_SIZES), pingpong_sample, 0);
}

void ism_bench_bw(ism_bench_ctx *c)
{
    pair_benchmark(c, "bandwidth", "MB/s", BW_SIZES, COUNT(BW_SIZES), bw_sample, 1);
}

void ism_bench_bibw(ism_bench_ctx *c)
{
    pair_benchmark(c, "bandwidth", "MB/s", BW_SIZES, COUNT(BW_SIZES), bibw_sample, 1);
}

/* Message rate: pairs (i, i + n/2) stream windows at once (osu_mbw_mr); the rate is
 * all messages over the slowest sender's time. */
static double msgrate_sample(ism_bench_ctx *c, void *v, long iters)
{
    p2p_arg *a = v;
    double mine = 0.0, slowest = 0.0;
    MPI_Barrier(c->world);
    mine = window_oneway(c, a, iters);
    if (!a->sender)
        mine = 0.0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, c->world);
    double msgs = (double)(c->nranks / 2) * a->window * (double)iters;
    return c->rank == 0 ? msgs / slowest : 0.0;
}

void ism_bench_msgrate(ism_bench_ctx *c)
{
    static const long long def[] = {1, 8, 64, 512, 4096};
    int n;
    if (c->nranks < 2 || c->nranks % 2 != 0)
        ism_bench_usage_error(c, "msgrate needs an even number of ranks >= 2 (got %d)", c->nranks);
    const long long *sizes = sizes_or(c, def, COUNT(def), &n);
    int half = c->nranks / 2;
    for (int k = 0; k < n; k++) {
        p2p_arg a;
        ism_bench_point p;
        setup_pair(c, &a, sizes[k], c->opt.window);
        a.active = 1;
        a.sender = c->rank < half;
        a.peer = a.sender ? c->rank + half : c->rank - half;
        ism_bench_point_init(c, &p, "rate", "msg/s", sizes[k]);
        ism_bench_param_int(&p, "pairs", half);
        ism_bench_param_int(&p, "window", c->opt.window);
        ism_bench_run_point(c, &p, c->world, msgrate_sample, &a);
        free_pair(&a);
    }
}

static const char *distance(ism_bench_ctx *c, int a, int b)
{
    if (strcmp(c->site[a], c->site[b]) != 0)
        return "other-site";
    if (strcmp(c->host[a], c->host[b]) != 0)
        return "same-site";
    return "same-node";
}

/* Latency from rank 0 to each other rank in turn, with the distance class of the pair. */
void ism_bench_placement(ism_bench_ctx *c)
{
    static const long long def[] = {8};
    int n;
    check_pair(c, 1);
    const long long *sizes = sizes_or(c, def, COUNT(def), &n);
    for (int k = 0; k < n; k++) {
        for (int peer = 1; peer < c->nranks; peer++) {
            p2p_arg a;
            ism_bench_point p;
            c->opt.peer = peer;
            setup_pair(c, &a, sizes[k], 1);
            ism_bench_point_init(c, &p, "latency", "us", sizes[k]);
            ism_bench_param_int(&p, "peer", peer);
            ism_bench_param_str(&p, "distance", distance(c, 0, peer));
            ism_bench_param_str(&p, "peer_site", c->site[peer]);
            MPI_Barrier(c->world);
            ism_bench_run_point(c, &p, c->world, pingpong_sample, &a);
            free_pair(&a);
        }
    }
}
