/*
 * coll.c - collective benchmarks: every MPI collective (blocking, or with --nonblocking
 * the MPI_I... form plus MPI_Wait) across sizes, and Alltoall on a fraction of the ranks
 * while the rest wait in a barrier (seed 004, chapter 7).
 *
 * Size is the bytes each rank contributes per peer block (MPI_CHAR), as in OSU; the
 * reductions use MPI_FLOAT with MPI_SUM, so their size is rounded down to whole floats
 * (at least one). A sample is the slowest rank's mean time per call (MPI_MAX over ranks).
 * Rooted collectives (bcast, reduce, gather(v), scatter(v)) let the root run ahead of the
 * data, and OSU-style per-rank averages then report less than the data needs to arrive
 * (FIELD-NOTES: a 1 MiB reduce "taking" 20 ms on a link that needs 84 ms). So each of
 * their iterations is closed by a barrier, and the record carries the time of a barrier
 * alone measured just before (closing_barrier_us) for whoever wants to subtract it.
 *
 * With --algs (under libisthmus) each point is measured once per named algorithm, each on
 * its own duplicate of MPI_COMM_WORLD carrying the hint isthmus_coll_<op> (or
 * isthmus_coll_wan_<op>), and the algorithms take turns repetition by repetition
 * (ism_bench_run_interleaved): a comparison of algorithms inside one launch, in the same
 * state of the machine. A hint the MPI library refuses or does not keep is an error.
 *
 * The neighborhood collectives (neighbor_allgather(v), neighbor_alltoall(v/w)) run on a
 * periodic 2-D Cartesian grid of all ranks (MPI_Dims_create, no reordering): every rank
 * exchanges a block with its 4 neighbours, the halo exchange of a stencil code. The record
 * names the grid (topology "cart 2x2 periodic").
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { C_BARRIER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV,
       C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV, C_ALLTOALLW, C_REDUCE_SCATTER,
       C_REDUCE_SCATTER_BLOCK, C_SCAN, C_EXSCAN, C_NB_ALLGATHER, C_NB_ALLGATHERV, C_NB_ALLTOALL,
       C_NB_ALLTOALLV, C_NB_ALLTOALLW, C_COUNT };

#define NB_DEGREE 4 /* neighbours on a 2-D periodic grid (counted twice where a dim is 1 or 2) */

static const struct {
    const char *name;
    int rooted, reduction, neighbor; /* rooted: every iteration closed by a barrier */
} COLL[C_COUNT] = {
    [C_BARRIER] = {"barrier", 0, 0},
    [C_BCAST] = {"bcast", 1, 0},
    [C_REDUCE] = {"reduce", 1, 1},
    [C_ALLREDUCE] = {"allreduce", 0, 1},
    [C_GATHER] = {"gather", 1, 0},
    [C_GATHERV] = {"gatherv", 1, 0},
    [C_SCATTER] = {"scatter", 1, 0},
    [C_SCATTERV] = {"scatterv", 1, 0},
    [C_ALLGATHER] = {"allgather", 0, 0},
    [C_ALLGATHERV] = {"allgatherv", 0, 0},
    [C_ALLTOALL] = {"alltoall", 0, 0},
    [C_ALLTOALLV] = {"alltoallv", 0, 0},
    [C_ALLTOALLW] = {"alltoallw", 0, 0},
    [C_REDUCE_SCATTER] = {"reduce_scatter", 0, 1},
    [C_REDUCE_SCATTER_BLOCK] = {"reduce_scatter_block", 0, 1},
    /* a prefix runs one way (rank r waits for r-1, not the reverse), so rank 0 could run
     * ahead as a root does: closed by a barrier like the rooted ones */
    [C_SCAN] = {"scan", 1, 1},
    [C_EXSCAN] = {"exscan", 1, 1},
    [C_NB_ALLGATHER] = {"neighbor_allgather", 0, 0, 1},
    [C_NB_ALLGATHERV] = {"neighbor_allgatherv", 0, 0, 1},
    [C_NB_ALLTOALL] = {"neighbor_alltoall", 0, 0, 1},
    [C_NB_ALLTOALLV] = {"neighbor_alltoallv", 0, 0, 1},
    [C_NB_ALLTOALLW] = {"neighbor_alltoallw", 0, 0, 1},
};

int ism_bench_coll_known(const char *name)
{
    for (int i = 0; i < C_COUNT; i++)
        if (!strcmp(COLL[i].name, name))
            return 1;
    return 0;
}

const char *ism_bench_coll_list(void)
{
    return "barrier,bcast,reduce,allreduce,gather,gatherv,scatter,scatterv,allgather,allgatherv,"
           "alltoall,alltoallv,alltoallw,reduce_scatter,reduce_scatter_block,scan,exscan,"
           "neighbor_allgather,neighbor_allgatherv,neighbor_alltoall,neighbor_alltoallv,"
           "neighbor_alltoallw";
}

typedef struct {
    int op, nb, count, n;
    MPI_Comm comm;
    int own_comm; /* comm is the Cartesian grid made for a neighborhood collective */
    int dims[2];
    MPI_Datatype type;
    char *sbuf, *rbuf;
    int *counts, *displs, *bdispls;
    MPI_Aint *adispls; /* byte displacements, as MPI_Neighbor_alltoallw takes them */
    MPI_Datatype *types;
} coll_arg;

/* One call of the collective (blocking, or nonblocking + wait). */
static void call(coll_arg *a)
{
    MPI_Request r = MPI_REQUEST_NULL, *rq = a->nb ? &r : NULL;
    void *s = a->sbuf, *d = a->rbuf;
    int k = a->count;
    MPI_Datatype t = a->type;
    MPI_Comm cm = a->comm;
#define GO(blocking, nonblocking) (rq ? (void)(nonblocking) : (void)(blocking))
    switch (a->op) {
    case C_BARRIER: GO(MPI_Barrier(cm), MPI_Ibarrier(cm, rq)); break;
    case C_BCAST: GO(MPI_Bcast(s, k, t, 0, cm), MPI_Ibcast(s, k, t, 0, cm, rq)); break;
    case C_REDUCE:
        GO(MPI_Reduce(s, d, k, t, MPI_SUM, 0, cm), MPI_Ireduce(s, d, k, t, MPI_SUM, 0, cm, rq));
        break;
    case C_ALLREDUCE:
        GO(MPI_Allreduce(s, d, k, t, MPI_SUM, cm), MPI_Iallreduce(s, d, k, t, MPI_SUM, cm, rq));
        break;
    case C_GATHER: GO(MPI_Gather(s, k, t, d, k, t, 0, cm), MPI_Igather(s, k, t, d, k, t, 0, cm, rq)); break;
    case C_GATHERV:
        GO(MPI_Gatherv(s, k, t, d, a->counts, a->displs, t, 0, cm),
           MPI_Igatherv(s, k, t, d, a->counts, a->displs, t, 0, cm, rq));
        break;
    case C_SCATTER: GO(MPI_Scatter(s, k, t, d, k, t, 0, cm), MPI_Iscatter(s, k, t, d, k, t, 0, cm, rq)); break;
    case C_SCATTERV:
        GO(MPI_Scatterv(s, a->counts, a->displs, t, d, k, t, 0, cm),
           MPI_Iscatterv(s, a->counts, a->displs, t, d, k, t, 0, cm, rq));
        break;
    case C_ALLGATHER: GO(MPI_Allgather(s, k, t, d, k, t, cm), MPI_Iallgather(s, k, t, d, k, t, cm, rq)); break;
    case C_ALLGATHERV:
        GO(MPI_Allgatherv(s, k, t, d, a->counts, a->displs, t, cm),
           MPI_Iallgatherv(s, k, t, d, a->counts, a->displs, t, cm, rq));
        break;
    case C_ALLTOALL: GO(MPI_Alltoall(s, k, t, d, k, t, cm), MPI_Ialltoall(s, k, t, d, k, t, cm, rq)); break;
    case C_ALLTOALLV:
        GO(MPI_Alltoallv(s, a->counts, a->displs, t, d, a->counts, a->displs, t, cm),
           MPI_Ialltoallv(s, a->counts, a->displs, t, d, a->counts, a->displs, t, cm, rq));
        break;
    case C_ALLTOALLW:
        GO(MPI_Alltoallw(s, a->counts, a->bdispls, a->types, d, a->counts, a->bdispls, a->types, cm),
           MPI_Ialltoallw(s, a->counts, a->bdispls, a->types, d, a->counts, a->bdispls, a->types, cm, rq));
        break;
    case C_REDUCE_SCATTER:
        GO(MPI_Reduce_scatter(s, d, a->counts, t, MPI_SUM, cm),
           MPI_Ireduce_scatter(s, d, a->counts, t, MPI_SUM, cm, rq));
        break;
    case C_REDUCE_SCATTER_BLOCK:
        GO(MPI_Reduce_scatter_block(s, d, k, t, MPI_SUM, cm),
           MPI_Ireduce_scatter_block(s, d, k, t, MPI_SUM, cm, rq));
        break;
    case C_SCAN: GO(MPI_Scan(s, d, k, t, MPI_SUM, cm), MPI_Iscan(s, d, k, t, MPI_SUM, cm, rq)); break;
    case C_EXSCAN: GO(MPI_Exscan(s, d, k, t, MPI_SUM, cm), MPI_Iexscan(s, d, k, t, MPI_SUM, cm, rq)); break;
    case C_NB_ALLGATHER:
        GO(MPI_Neighbor_allgather(s, k, t, d, k, t, cm),
           MPI_Ineighbor_allgather(s, k, t, d, k, t, cm, rq));
        break;
    case C_NB_ALLGATHERV:
        GO(MPI_Neighbor_allgatherv(s, k, t, d, a->counts, a->displs, t, cm),
           MPI_Ineighbor_allgatherv(s, k, t, d, a->counts, a->displs, t, cm, rq));
        break;
    case C_NB_ALLTOALL:
        GO(MPI_Neighbor_alltoall(s, k, t, d, k, t, cm), MPI_Ineighbor_alltoall(s, k, t, d, k, t, cm, rq));
        break;
    case C_NB_ALLTOALLV:
        GO(MPI_Neighbor_alltoallv(s, a->counts, a->displs, t, d, a->counts, a->displs, t, cm),
           MPI_Ineighbor_alltoallv(s, a->counts, a->displs, t, d, a->counts, a->displs, t, cm, rq));
        break;
    case C_NB_ALLTOALLW:
        GO(MPI_Neighbor_alltoallw(s, a->counts, a->adispls, a->types, d, a->counts, a->adispls, a->types, cm),
           MPI_Ineighbor_alltoallw(s, a->counts, a->adispls, a->types, d, a->counts, a->adispls, a->types, cm, rq));
        break;
    }
#undef GO
    if (rq)
        MPI_Wait(rq, MPI_STATUS_IGNORE);
}

static double coll_sample(ism_bench_ctx *c, void *v, long iters)
{
    coll_arg *a = v;
    double mine, slowest = 0.0;
    int closed = COLL[a->op].rooted;
    MPI_Barrier(a->comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        call(a);
        if (closed)
            MPI_Barrier(a->comm);
    }
    mine = (MPI_Wtime() - t0) * 1e6 / (double)iters;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, a->comm);
    (void)c;
    return slowest;
}

static double barrier_us(MPI_Comm comm, long iters)
{
    double mine, slowest = 0.0;
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        MPI_Barrier(comm);
    mine = (MPI_Wtime() - t0) * 1e6 / (double)iters;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
}

/* Buffers and vectors for `op` with `bytes` per block on comm. */
static void coll_setup(ism_bench_ctx *c, coll_arg *a, int op, long long bytes, MPI_Comm comm)
{
    memset(a, 0, sizeof *a);
    a->op = op;
    a->nb = c->opt.nonblocking;
    a->comm = comm;
    if (COLL[op].neighbor) {
        int n, periods[2] = {1, 1};
        MPI_Comm_size(comm, &n);
        a->dims[0] = a->dims[1] = 0;
        MPI_Dims_create(n, 2, a->dims);
        MPI_Cart_create(comm, 2, a->dims, periods, 0, &a->comm);
        a->own_comm = 1;
    }
    MPI_Comm_size(a->comm, &a->n);
    if (COLL[op].reduction) {
        a->type = MPI_FLOAT;
        a->count = bytes / 4 > 0 ? (int)(bytes / 4) : 1;
    } else {
        a->type = MPI_CHAR;
        a->count = (int)bytes;
    }
    int esize = COLL[op].reduction ? 4 : 1;
    int blocks = a->n > NB_DEGREE ? a->n : NB_DEGREE;
    size_t total = (size_t)a->count * (size_t)esize * (size_t)blocks;
    a->sbuf = ism_bench_alloc(c, total);
    a->rbuf = ism_bench_alloc(c, total);
    a->counts = ism_bench_alloc(c, (size_t)blocks * sizeof *a->counts);
    a->displs = ism_bench_alloc(c, (size_t)blocks * sizeof *a->displs);
    a->bdispls = ism_bench_alloc(c, (size_t)blocks * sizeof *a->bdispls);
    a->adispls = ism_bench_alloc(c, (size_t)blocks * sizeof *a->adispls);
    a->types = ism_bench_alloc(c, (size_t)blocks * sizeof *a->types);
    for (int i = 0; i < blocks; i++) {
        a->counts[i] = a->count;
        a->displs[i] = i * a->count;
        a->bdispls[i] = i * a->count * esize;
        a->adispls[i] = (MPI_Aint)i * a->count * esize;
        a->types[i] = a->type;
    }
}

static void coll_free(coll_arg *a)
{
    free(a->sbuf);
    free(a->rbuf);
    free(a->counts);
    free(a->displs);
    free(a->bdispls);
    free(a->adispls);
    free(a->types);
    if (a->own_comm)
        MPI_Comm_free(&a->comm);
}

static int op_index(const char *name)
{
    for (int i = 0; i < C_COUNT; i++)
        if (!strcmp(COLL[i].name, name))
            return i;
    return -1;
}

/* A duplicate of comm on which libisthmus runs `alg` for `op`, or MPI_COMM_NULL (rank 0
 * says why) if the library refuses the hint or does not keep it (a vendor MPI ignores
 * such keys). */
static MPI_Comm hinted_dup(ism_bench_ctx *c, const char *op, const char *alg)
{
    MPI_Comm d;
    MPI_Info info;
    char key[64], got[64] = "";
    int flag = 0;
    snprintf(key, sizeof key, "isthmus_coll_%s%s", c->opt.algs_wan ? "wan_" : "", op);
    MPI_Comm_dup(c->world, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    MPI_Info_create(&info);
    MPI_Info_set(info, key, alg);
    int rc = MPI_Comm_set_info(d, info);
    MPI_Info_free(&info);
    if (rc == MPI_SUCCESS && MPI_Comm_get_info(d, &info) == MPI_SUCCESS) {
        MPI_Info_get(info, key, (int)sizeof got - 1, got, &flag);
        MPI_Info_free(&info);
    }
    if (rc != MPI_SUCCESS || !flag || strcmp(got, alg)) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int n = 0;
        if (rc != MPI_SUCCESS)
            MPI_Error_string(rc, msg, &n);
        if (c->rank == 0)
            fprintf(stderr, "isthmus-bench: --algs: hint %s=%s %s%s\n", key, alg,
                    rc != MPI_SUCCESS ? "refused: " : "not kept by this MPI library (the "
                    "algorithms are libisthmus's: run isthmus-bench, not a vendor's build)", msg);
        MPI_Comm_free(&d);
        return MPI_COMM_NULL;
    }
    MPI_Comm_set_errhandler(d, MPI_ERRORS_ARE_FATAL);
    return d;
}

/* One point per --algs entry, measured in turns. */
static void coll_point_algs(ism_bench_ctx *c, int op, long long bytes)
{
    const ism_bench_opts *o = &c->opt;
    int n = o->nalgs;
    coll_arg a[ISM_BENCH_MAX_LIST];
    void *args[ISM_BENCH_MAX_LIST];
    ism_bench_point p[ISM_BENCH_MAX_LIST];
    MPI_Comm comms[ISM_BENCH_MAX_LIST];
    char name[32];
    snprintf(name, sizeof name, "%s%s", o->nonblocking ? "i" : "", COLL[op].name);
    double closing = COLL[op].rooted ? barrier_us(c->world, ism_bench_iters(c, bytes)) : 0.0;
    int bad = 0, any_bad = 0;
    for (int i = 0; i < n; i++)
        bad |= (comms[i] = hinted_dup(c, COLL[op].name, o->algs[i])) == MPI_COMM_NULL;
    /* every rank makes the same choices; all stop together, with the message out (an
     * MPI_Abort could kill rank 0 before its launcher forwarded the message) */
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, c->world);
    if (any_bad) {
        for (int i = 0; i < n; i++)
            if (comms[i] != MPI_COMM_NULL)
                MPI_Comm_free(&comms[i]);
        MPI_Finalize();
        exit(2);
    }
    for (int i = 0; i < n; i++) {
        coll_setup(c, &a[i], op, bytes, comms[i]);
        args[i] = &a[i];
        ism_bench_point_init(c, &p[i], "time", "us", bytes);
        ism_bench_param_str(&p[i], "op", name);
        ism_bench_param_str(&p[i], "alg", o->algs[i]);
        if (COLL[op].rooted)
            ism_bench_param_num(&p[i], "closing_barrier_us", closing, 0);
    }
    ism_bench_run_interleaved(c, p, n, c->world, coll_sample, args);
    for (int i = 0; i < n; i++) {
        coll_free(&a[i]);
        MPI_Comm_free(&comms[i]);
    }
}

void ism_bench_coll(ism_bench_ctx *c)
{
    static const long long def[] = {4, 64, 1024, 16384, 262144};
    const ism_bench_opts *o = &c->opt;
    int nops = o->nops ? o->nops : C_COUNT;
    int nsizes = o->sizes_given ? o->nsizes : 5;
    const long long *sizes = o->sizes_given ? o->sizes : def;
    for (int k = 0; k < nops; k++) {
        int op = o->nops ? op_index(o->ops[k]) : k;
        for (int s = 0; s < (op == C_BARRIER ? 1 : nsizes); s++) {
            long long bytes = op == C_BARRIER ? 0 : sizes[s];
            if (COLL[op].reduction)
                bytes = bytes / 4 > 0 ? bytes / 4 * 4 : 4;
            if (o->nalgs) {
                coll_point_algs(c, op, bytes);
                continue;
            }
            coll_arg a;
            ism_bench_point p;
            char name[32];
            snprintf(name, sizeof name, "%s%s", o->nonblocking ? "i" : "", COLL[op].name);
            coll_setup(c, &a, op, bytes, c->world);
            ism_bench_point_init(c, &p, "time", "us", bytes);
            ism_bench_param_str(&p, "op", name);
            if (COLL[op].neighbor) {
                char topo[48];
                snprintf(topo, sizeof topo, "cart %dx%d periodic", a.dims[0], a.dims[1]);
                ism_bench_param_str(&p, "topology", topo);
            }
            if (COLL[op].rooted)
                ism_bench_param_num(&p, "closing_barrier_us", barrier_us(c->world, p.iters), 0);
            ism_bench_run_point(c, &p, c->world, coll_sample, &a);
            coll_free(&a);
        }
    }
}

/* Alltoall among k = floor(n * f / 100) ranks spread evenly over the job (so every site
 * takes part), while the others wait in MPI_Barrier on MPI_COMM_WORLD. */
typedef struct {
    coll_arg a;
    int active;
} frac_arg;

static double frac_sample(ism_bench_ctx *c, void *v, long iters)
{
    frac_arg *f = v;
    double mine = 0.0, slowest = 0.0;
    if (f->active) {
        MPI_Barrier(f->a.comm);
        double t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++)
            call(&f->a);
        mine = (MPI_Wtime() - t0) * 1e6 / (double)iters;
    }
    MPI_Barrier(c->world);
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, c->world);
    return slowest;
}

void ism_bench_a2a_fraction(ism_bench_ctx *c)
{
    static const long long def[] = {1024, 65536};
    const ism_bench_opts *o = &c->opt;
    if (c->nranks < 2)
        ism_bench_usage_error(c, "a2a-fraction needs at least 2 ranks (got %d)", c->nranks);
    int nsizes = o->sizes_given ? o->nsizes : 2;
    const long long *sizes = o->sizes_given ? o->sizes : def;
    for (int s = 0; s < nsizes; s++) {
        for (int fi = 0; fi < o->nfractions; fi++) {
            double pct = o->fractions[fi];
            int k = (int)floor((double)c->nranks * pct / 100.0 + 1e-9);
            ism_bench_point p;
            ism_bench_point_init(c, &p, "time", "us", sizes[s]);
            ism_bench_param_num(&p, "fraction", pct, 1);
            ism_bench_param_int(&p, "active", k);
            if (k < 2) {
                char why[160];
                snprintf(why, sizeof why, "%g%% of %d ranks is %d rank(s); an alltoall needs 2 "
                         "(start at least %d ranks)", pct, c->nranks, k,
                         (int)ceil(200.0 / pct - 1e-9));
                ism_bench_report_skipped(c, &p, why);
                continue;
            }
            int active = 0;
            for (int j = 0; j < k; j++)
                active |= (int)((long long)j * c->nranks / k) == c->rank;
            MPI_Comm sub;
            MPI_Comm_split(c->world, active ? 0 : MPI_UNDEFINED, c->rank, &sub);
            frac_arg f;
            memset(&f, 0, sizeof f);
            f.active = active;
            if (active)
                coll_setup(c, &f.a, C_ALLTOALL, sizes[s], sub);
            ism_bench_run_point(c, &p, c->world, frac_sample, &f);
            if (active) {
                coll_free(&f.a);
                MPI_Comm_free(&sub);
            }
        }
    }
}
