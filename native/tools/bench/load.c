/*
 * load.c - load on one rank's network interface (seed 004, section 4.3.1): rank 0 sends
 * to k partners at once (one2many) or k partners send to rank 0 at once (many2one).
 *
 * All timing is done by rank 0, so clocks and barrier exit skew (up to a one-way latency
 * between sites) never enter the result:
 *   one2many  rank 0 posts k sends of SIZE bytes; each partner, once it has its message,
 *             answers with an empty acknowledgement; the operation ends when rank 0 has
 *             all k acknowledgements.
 *   many2one  rank 0 sends an empty "go" to the k partners; each partner answers with
 *             SIZE bytes; the operation ends when rank 0 has all k messages.
 * So an operation is the time until the slowest partner is done, plus one empty message
 * the other way. The sample is the mean over the repetition's iterations, in us. The
 * record's remote_partners says how many partners are on another site than rank 0.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define TAG_LOAD 21
#define TAG_CTRL 22

typedef struct {
    int many_to_one;
    int k;
    int *partners;     /* world ranks of the k partners */
    int role;          /* 0 idle, 1 root, 2 partner */
    MPI_Comm comm;     /* rank 0 and the partners (MPI_COMM_NULL for idle ranks) */
    long long size;
    char *buf, *rbufs;
    MPI_Request *reqs;
    MPI_Status *stats;
} load_arg;

static double load_sample(ism_bench_ctx *c, void *v, long iters)
{
    load_arg *a = v;
    int n = (int)a->size, empty = 0;
    if (a->role == 0)
        return 0.0;
    MPI_Barrier(a->comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (a->role == 1) {
            for (int j = 0; j < a->k; j++) {
                if (a->many_to_one)
                    MPI_Irecv(a->rbufs + (size_t)j * (size_t)n, n, MPI_CHAR, a->partners[j], TAG_LOAD,
                              c->world, &a->reqs[j]);
                else
                    MPI_Irecv(&empty, 0, MPI_INT, a->partners[j], TAG_CTRL, c->world, &a->reqs[j]);
            }
            for (int j = 0; j < a->k; j++) {
                if (a->many_to_one)
                    MPI_Isend(&empty, 0, MPI_INT, a->partners[j], TAG_CTRL, c->world, &a->reqs[a->k + j]);
                else
                    MPI_Isend(a->buf, n, MPI_CHAR, a->partners[j], TAG_LOAD, c->world, &a->reqs[a->k + j]);
            }
            MPI_Waitall(2 * a->k, a->reqs, a->stats);
        } else if (a->many_to_one) {
            MPI_Recv(&empty, 0, MPI_INT, 0, TAG_CTRL, c->world, MPI_STATUS_IGNORE);
            MPI_Send(a->buf, n, MPI_CHAR, 0, TAG_LOAD, c->world);
        } else {
            MPI_Recv(a->buf, n, MPI_CHAR, 0, TAG_LOAD, c->world, MPI_STATUS_IGNORE);
            MPI_Send(&empty, 0, MPI_INT, 0, TAG_CTRL, c->world);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (double)iters;
}

static void load_benchmark(ism_bench_ctx *c, int many_to_one)
{
    static const long long def[] = {8, 1024, 65536};
    if (c->nranks < 2)
        ism_bench_usage_error(c, "%s needs at least 2 ranks (got %d)", c->opt.benchmark, c->nranks);
    int ks[ISM_BENCH_MAX_LIST], nk = 0;
    if (c->opt.npartners) {
        for (int i = 0; i < c->opt.npartners; i++) {
            if (c->opt.partners[i] > c->nranks - 1)
                ism_bench_usage_error(c, "--partners %d: only %d other ranks (give at most %d, or "
                                      "start more ranks)", c->opt.partners[i], c->nranks - 1,
                                      c->nranks - 1);
            ks[nk++] = c->opt.partners[i];
        }
    } else {
        for (int k = 1; k <= c->nranks - 1; k *= 2)
            ks[nk++] = k;
    }
    int nsizes = c->opt.sizes_given ? c->opt.nsizes : 3;
    const long long *sizes = c->opt.sizes_given ? c->opt.sizes : def;
    for (int s = 0; s < nsizes; s++) {
        for (int t = 0; t < nk; t++) {
            load_arg a;
            ism_bench_point p;
            memset(&a, 0, sizeof a);
            a.many_to_one = many_to_one;
            a.k = ks[t];
            a.size = sizes[s];
            a.partners = calloc((size_t)a.k, sizeof *a.partners);
            /* spread the partners evenly over ranks 1..n-1 (across sites too) */
            for (int j = 0; j < a.k; j++) {
                a.partners[j] = 1 + (int)((long long)j * (c->nranks - 1) / a.k);
                if (a.partners[j] == c->rank)
                    a.role = 2;
            }
            int remote = 0;
            for (int j = 0; j < a.k; j++)
                remote += strcmp(c->site[a.partners[j]], c->site[0]) != 0;
            if (c->rank == 0)
                a.role = 1;
            MPI_Comm_split(c->world, a.role ? 0 : MPI_UNDEFINED, c->rank, &a.comm);
            a.buf = ism_bench_alloc(c, (size_t)a.size);
            a.rbufs = ism_bench_alloc(c, c->rank == 0 ? (size_t)a.size * (size_t)a.k : 1);
            a.reqs = calloc(2 * (size_t)a.k, sizeof *a.reqs);
            a.stats = calloc(2 * (size_t)a.k, sizeof *a.stats);
            ism_bench_point_init(c, &p, "time", "us", a.size);
            ism_bench_param_int(&p, "partners", a.k);
            ism_bench_param_int(&p, "remote_partners", remote);
            MPI_Barrier(c->world);
            if (a.role)
                ism_bench_run_point(c, &p, a.comm, load_sample, &a);
            MPI_Barrier(c->world);
            if (a.comm != MPI_COMM_NULL)
                MPI_Comm_free(&a.comm);
            free(a.partners);
            free(a.buf);
            free(a.rbufs);
            free(a.reqs);
            free(a.stats);
        }
    }
}

void ism_bench_one2many(ism_bench_ctx *c)
{
    load_benchmark(c, 0);
}

void ism_bench_many2one(ism_bench_ctx *c)
{
    load_benchmark(c, 1);
}
