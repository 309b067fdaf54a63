/*
 * interference.c - a measured ping-pong between rank 0 and --peer while the other ranks
 * generate background traffic (seed 004, section 4.3.2): none, pairs streaming windows
 * in both directions (default pairing, or --bg-pairs), or a continuous MPI_Alltoall among
 * all other ranks. The background starts before the measured pair's warm-up and stops
 * (at the end of its current round) when rank 0 tells it to, after the point is done.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define TAG_STOP 31
#define TAG_BG 32

typedef struct {
    int peer, initiator;
    int size;
    char *sbuf, *rbuf;
} pair_arg;

static double pair_sample(ism_bench_ctx *c, void *v, long iters)
{
    pair_arg *a = v;
    return ism_bench_pingpong_us(c, c->world, a->peer, a->initiator, a->size, a->sbuf, a->rbuf,
                                 iters);
}

/* Background partner of `rank` in pairs mode, or -1 (idle). */
static int bg_partner(ism_bench_ctx *c, int rank)
{
    const ism_bench_opts *o = &c->opt;
    if (o->nbg_pairs) {
        for (int i = 0; i < o->nbg_pairs; i++) {
            if (o->bg_pairs[i][0] == rank)
                return o->bg_pairs[i][1];
            if (o->bg_pairs[i][1] == rank)
                return o->bg_pairs[i][0];
        }
        return -1;
    }
    int others[4096], n = 0, me = -1;
    for (int r = 0; r < c->nranks && n < 4096; r++) {
        if (r == 0 || r == o->peer)
            continue;
        if (r == rank)
            me = n;
        others[n++] = r;
    }
    int half = n / 2;
    if (me < 0 || me >= 2 * half)
        return -1;
    return me < half ? others[me + half] : others[me - half];
}

static void check(ism_bench_ctx *c)
{
    const ism_bench_opts *o = &c->opt;
    if (c->nranks < 2 || o->peer >= c->nranks)
        ism_bench_usage_error(c, "interference needs rank 0, --peer %d and background ranks; "
                              "got %d ranks", o->peer, c->nranks);
    if (o->background != BG_NONE && c->nranks < 4)
        ism_bench_usage_error(c, "interference with --background %s needs at least 4 ranks (2 measured, "
                              "2 background); got %d", o->background == BG_PAIRS ? "pairs" : "alltoall",
                              c->nranks);
    for (int i = 0; i < o->nbg_pairs; i++)
        for (int j = 0; j < 2; j++) {
            int r = o->bg_pairs[i][j];
            if (r >= c->nranks || r == 0 || r == o->peer)
                ism_bench_usage_error(c, "--bg-pairs: rank %d is %s", r,
                                      r >= c->nranks ? "beyond the last rank" : "in the measured pair");
        }
}

static void background(ism_bench_ctx *c, MPI_Comm bg, int partner, char *sbuf, char *rbuf)
{
    int window = c->opt.window, n = (int)c->opt.bg_size, stop = 0, any = 0, bgsize;
    MPI_Comm_size(bg, &bgsize);
    MPI_Request stopreq, *reqs = calloc(2 * (size_t)window, sizeof *reqs);
    MPI_Status *stats = calloc(2 * (size_t)window, sizeof *stats);
    MPI_Irecv(&stop, 1, MPI_INT, 0, TAG_STOP, c->world, &stopreq);
    while (!any) {
        if (c->opt.background == BG_ALLTOALL) {
            MPI_Alltoall(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, bg);
        } else if (partner >= 0) {
            for (int w = 0; w < window; w++)
                MPI_Irecv(rbuf, n, MPI_CHAR, partner, TAG_BG, c->world, &reqs[w]);
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, n, MPI_CHAR, partner, TAG_BG, c->world, &reqs[window + w]);
            MPI_Waitall(2 * window, reqs, stats);
        }
        int flag = 0;
        MPI_Test(&stopreq, &flag, MPI_STATUS_IGNORE);
        MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, bg);
    }
    /* a rank whose stop message has not arrived yet still receives it */
    MPI_Wait(&stopreq, MPI_STATUS_IGNORE);
    free(reqs);
    free(stats);
}

void ism_bench_interference(ism_bench_ctx *c)
{
    static const long long def[] = {8, 1024, 65536};
    check(c);
    const ism_bench_opts *o = &c->opt;
    int in_pair = c->rank == 0 || c->rank == o->peer;
    int partner = o->background == BG_PAIRS && !in_pair ? bg_partner(c, c->rank) : -1;
    int in_bg = !in_pair && (o->background == BG_ALLTOALL || partner >= 0);
    MPI_Comm pair, bg;
    MPI_Comm_split(c->world, in_pair ? 0 : MPI_UNDEFINED, c->rank, &pair);
    MPI_Comm_split(c->world, in_bg ? 1 : MPI_UNDEFINED, c->rank, &bg);
    /* rank 0 learns who is in the background, to tell them to stop */
    int *bg_flags = calloc((size_t)c->nranks, sizeof *bg_flags);
    MPI_Gather(&in_bg, 1, MPI_INT, bg_flags, 1, MPI_INT, 0, c->world);
    const char *bgname = o->background == BG_NONE ? "none" : o->background == BG_PAIRS ? "pairs" : "alltoall";

    int nsizes = o->sizes_given ? o->nsizes : 3;
    const long long *sizes = o->sizes_given ? o->sizes : def;
    size_t bgbytes = o->background == BG_ALLTOALL ? (size_t)o->bg_size * (size_t)c->nranks
                                                  : (size_t)o->bg_size;
    for (int s = 0; s < nsizes; s++) {
        ism_bench_point p;
        ism_bench_point_init(c, &p, "latency", "us", sizes[s]);
        ism_bench_param_int(&p, "peer", o->peer);
        ism_bench_param_str(&p, "background", bgname);
        ism_bench_param_int(&p, "bg_size", o->background == BG_NONE ? 0 : o->bg_size);
        MPI_Barrier(c->world);
        if (in_pair) {
            pair_arg a = {c->rank == 0 ? o->peer : 0, c->rank == 0, (int)sizes[s],
                          ism_bench_alloc(c, (size_t)sizes[s]), ism_bench_alloc(c, (size_t)sizes[s])};
            ism_bench_run_point(c, &p, pair, pair_sample, &a);
            free(a.sbuf);
            free(a.rbuf);
            if (c->rank == 0) {
                int one = 1;
                for (int r = 0; r < c->nranks; r++)
                    if (bg_flags[r])
                        MPI_Send(&one, 1, MPI_INT, r, TAG_STOP, c->world);
            }
        } else if (in_bg) {
            char *sbuf = ism_bench_alloc(c, bgbytes), *rbuf = ism_bench_alloc(c, bgbytes);
            background(c, bg, partner, sbuf, rbuf);
            free(sbuf);
            free(rbuf);
        }
        MPI_Barrier(c->world);
    }
    free(bg_flags);
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    if (bg != MPI_COMM_NULL)
        MPI_Comm_free(&bg);
}
