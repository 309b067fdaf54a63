/*
 * loggp.c - the measurements `isthmus model calibrate` fits LogGP parameters to (seed 001
 * §1.4.6; python/isthmus/model/loggp.py), between rank 0 and --peer, per message size:
 *
 *   one_way        half a ping-pong round trip                    L + o_s + o_r + (m-1)G
 *   send_overhead  time inside one MPI_Send whose receive is posted          o_s
 *   recv_overhead  time inside one MPI_Recv of a message that has arrived   o_r
 *   train          a train of `iters` back-to-back sends until the receiver's
 *                  acknowledgement                   (n-1) gap(m) + one_way(m) + one_way(0)
 *   exchange       one MPI_Sendrecv of m bytes each way between the two ranks at once,
 *                  back to back: the two-way step of pairwise, recursive-doubling, Bruck
 *                  and ring schedules, whose cost one-way measurements do not show (both
 *                  ranks copy at the same time, each with the other's data in flight)
 *   reduce_local   one MPI_Reduce_local of m bytes, per op and type (rank 0)  gamma0 + m gamma
 *   copy_local     one memcpy of m bytes between two buffers (rank 0): the staging copies
 *                  libisthmus's collective schedules make               copy0 + m copy
 *
 * With --via coll a message is a broadcast on a communicator of the two ranks (rooted at
 * the sender; under libisthmus forced to the binomial tree, one message of a schedule, and
 * the exchange an allgather by recursive doubling, one step): what libisthmus's
 * collectives pay per message inside a site, where their short messages take its shared-
 * memory channels instead of the vendor's point-to-point. Each such time includes one
 * collective call's software (calibrate subtracts it, measured alone). No probe sees a
 * collective's message, so the receive overhead is timed once twice the one-way time
 * has passed since the sender started.
 *
 * Overheads are timed one message at a time, each followed by an acknowledgement, so no
 * message waits for the gap of the one before. All values are microseconds per call
 * (train: per train), one repetition per sample, as every isthmus-bench point.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_LOG 21
#define TAG_ACK 22

enum { Q_ONE_WAY, Q_SEND, Q_RECV, Q_TRAIN, Q_EXCHANGE, Q_N };
static const char *const QNAME[Q_N] = {"one_way", "send_overhead", "recv_overhead", "train",
                                      "exchange"};

typedef struct {
    int q, peer, me0, active;
    int n;
    char *sbuf, *rbuf;
    MPI_Request *reqs;
    MPI_Status *stats; /* real statuses: MPICH's MPI_STATUSES_IGNORE upsets -Wall */
    MPI_Datatype dt;
    MPI_Op op;
    int via;       /* --via coll */
    MPI_Comm pair; /* with via: rank 0 and the peer, as 0 and 1 */
    int pme;       /* my rank in pair */
} lg_arg;

/* One message to or from the other rank: point-to-point, or (via) a broadcast */
static void msg_send(lg_arg *a, MPI_Comm w, int other)
{
    if (a->via)
        MPI_Bcast(a->sbuf, a->n, MPI_CHAR, a->pme, a->pair);
    else
        MPI_Send(a->sbuf, a->n, MPI_CHAR, other, TAG_LOG, w);
}

static void msg_recv(lg_arg *a, MPI_Comm w, int other)
{
    if (a->via)
        MPI_Bcast(a->rbuf, a->n, MPI_CHAR, 1 - a->pme, a->pair);
    else
        MPI_Recv(a->rbuf, a->n, MPI_CHAR, other, TAG_LOG, w, MPI_STATUS_IGNORE);
}

/* One round trip started by rank 0; its time in seconds */
static double round_trip(lg_arg *a, MPI_Comm w, int other)
{
    double t0 = MPI_Wtime();
    if (a->me0) {
        msg_send(a, w, other);
        msg_recv(a, w, other);
    } else {
        msg_recv(a, w, other);
        msg_send(a, w, other);
    }
    return MPI_Wtime() - t0;
}

static double sample(ism_bench_ctx *c, void *v, long iters)
{
    lg_arg *a = v;
    MPI_Comm w = c->world;
    if (!a->active)
        return 0.0;
    int other = a->me0 ? a->peer : 0, ack = 0;
    double t = 0.0, t0;
    switch (a->q) {
    case Q_ONE_WAY:
        if (!a->via)
            return ism_bench_pingpong_us(c, w, other, a->me0, a->n, a->sbuf, a->rbuf, iters);
        t0 = MPI_Wtime(); /* one clock around the loop, as the point-to-point form */
        for (long i = 0; i < iters; i++)
            round_trip(a, w, other);
        return (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)iters);
    case Q_SEND:
        for (long i = 0; i < iters; i++) {
            if (a->me0) {
                MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE); /* posted */
                t0 = MPI_Wtime();
                msg_send(a, w, other);
                t += MPI_Wtime() - t0;
                MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE); /* quiet */
            } else if (a->via) {
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
                msg_recv(a, w, other);
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
            } else {
                MPI_Request r;
                MPI_Irecv(a->rbuf, a->n, MPI_CHAR, other, TAG_LOG, w, &r);
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
            }
        }
        return t * 1e6 / (double)iters;
    case Q_RECV: {
        /* via: no probe sees a collective's message, and a broadcast above the channels'
           cell returns only once received; so the sender says when it starts, and the
           receiver lets twice the one-way time (measured here) pass before its call */
        double settle = 0.0;
        if (a->via) {
            for (int k = 0; k < 3; k++) {
                double rt = round_trip(a, w, other);
                settle = k == 0 || rt < settle ? rt : settle;
            }
            settle += 2e-6;
        }
        for (long i = 0; i < iters && a->via; i++) {
            if (a->me0) {
                MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE);
                for (t0 = MPI_Wtime(); MPI_Wtime() - t0 < settle;)
                    ;
                t0 = MPI_Wtime();
                msg_recv(a, w, other);
                t += MPI_Wtime() - t0;
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
            } else {
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
                msg_send(a, w, other);
                MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE);
            }
        }
        for (long i = 0; i < iters && !a->via; i++) {
            if (a->me0) {
                MPI_Status st;
                MPI_Probe(other, TAG_LOG, w, &st); /* the message is here */
                t0 = MPI_Wtime();
                MPI_Recv(a->rbuf, a->n, MPI_CHAR, other, TAG_LOG, w, MPI_STATUS_IGNORE);
                t += MPI_Wtime() - t0;
                MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
            } else {
                MPI_Send(a->sbuf, a->n, MPI_CHAR, other, TAG_LOG, w);
                MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE);
            }
        }
        return t * 1e6 / (double)iters;
    }
    case Q_TRAIN:
        /* the receiver has everything posted before the first send leaves */
        if (a->me0) {
            MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE);
            t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++)
                msg_send(a, w, other);
            MPI_Recv(&ack, 0, MPI_INT, other, TAG_ACK, w, MPI_STATUS_IGNORE);
            return (MPI_Wtime() - t0) * 1e6;
        }
        if (a->via) { /* nothing to pre-post: the channel holds what arrives */
            MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
            for (long i = 0; i < iters; i++)
                msg_recv(a, w, other);
            MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
            return 0.0;
        }
        for (long i = 0; i < iters; i++)
            MPI_Irecv(a->rbuf, a->n, MPI_CHAR, other, TAG_LOG, w, &a->reqs[i]);
        MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
        MPI_Waitall((int)iters, a->reqs, a->stats);
        MPI_Send(&ack, 0, MPI_INT, other, TAG_ACK, w);
        return 0.0;
    case Q_EXCHANGE:
        /* back to back, as a schedule's rounds follow each other: each call ends when
           both directions are through, so the ranks stay in step */
        t0 = MPI_Wtime();
        for (long i = 0; i < iters && a->via; i++) /* one step: my block out, the other's in */
            MPI_Allgather(a->sbuf, a->n, MPI_CHAR, a->rbuf, a->n, MPI_CHAR, a->pair);
        for (long i = 0; i < iters && !a->via; i++)
            MPI_Sendrecv(a->sbuf, a->n, MPI_CHAR, other, TAG_LOG, a->rbuf, a->n, MPI_CHAR, other,
                         TAG_LOG, w, MPI_STATUS_IGNORE);
        return (MPI_Wtime() - t0) * 1e6 / (double)iters;
    }
    return 0.0;
}

static double reduce_sample(ism_bench_ctx *c, void *v, long iters)
{
    lg_arg *a = v;
    (void)c;
    if (!a->me0)
        return 0.0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (a->op != MPI_OP_NULL) {
            MPI_Reduce_local(a->sbuf, a->rbuf, a->n, a->dt, a->op);
        } else { /* copy_local: the memmove a schedule makes into or out of its
                    temporaries (coll/exec.c), between buffers as warm as the operands */
            memmove(a->rbuf, a->sbuf, (size_t)a->n);
            a->sbuf[i % (a->n > 0 ? a->n : 1)] ^= 1; /* not a loop to drop */
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (double)iters;
}

static const struct {
    const char *name;
    MPI_Op op;
    MPI_Datatype dt;
    int size;
} RED[] = {{"sum/double", MPI_SUM, MPI_DOUBLE, 8},
           {"sum/float", MPI_SUM, MPI_FLOAT, 4},
           {"sum/int", MPI_SUM, MPI_INT, 4},
           {"max/double", MPI_MAX, MPI_DOUBLE, 8},
           {"prod/double", MPI_PROD, MPI_DOUBLE, 8}};

void ism_bench_loggp(ism_bench_ctx *c)
{
    static const long long def[] = {1,     8,      64,     512,     1024,   4096,
                                    16384, 65536, 262144, 1048576};
    int peer = c->opt.peer, n;
    if (c->nranks < 2)
        ism_bench_usage_error(c, "loggp needs at least 2 ranks (got %d)", c->nranks);
    if (peer < 1 || peer >= c->nranks)
        ism_bench_usage_error(c, "--peer %d: there are only %d ranks (1..%d)", peer, c->nranks,
                              c->nranks - 1);
    const long long *sizes = c->opt.sizes_given ? c->opt.sizes : def;
    n = c->opt.sizes_given ? c->opt.nsizes : (int)(sizeof def / sizeof *def);
    long long maxs = 0;
    for (int i = 0; i < n; i++)
        maxs = sizes[i] > maxs ? sizes[i] : maxs;
    lg_arg a;
    memset(&a, 0, sizeof a);
    a.peer = peer;
    a.me0 = c->rank == 0;
    a.active = c->rank == 0 || c->rank == peer;
    a.sbuf = ism_bench_alloc(c, (size_t)maxs + 8);
    a.rbuf = ism_bench_alloc(c, 2 * (size_t)maxs + 8); /* via: the allgather's two blocks */
    a.via = c->opt.via_coll;
    a.pair = MPI_COMM_NULL;
    if (a.via) {
        MPI_Comm_split(c->world, a.active ? 0 : MPI_UNDEFINED, a.me0 ? 0 : 1, &a.pair);
        a.pme = a.me0 ? 0 : 1;
        if (a.active) { /* libisthmus's hints; a vendor MPI ignores them */
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "isthmus_coll_bcast", "binomial");
            MPI_Info_set(info, "isthmus_coll_allgather", "recursive_doubling");
            MPI_Comm_set_info(a.pair, info);
            MPI_Info_free(&info);
        }
    }
    long maxiters = 0;
    for (int i = 0; i < n; i++) {
        long it = ism_bench_iters(c, sizes[i]), wu = ism_bench_warmup(c, it);
        maxiters = it > maxiters ? it : maxiters;
        maxiters = wu > maxiters ? wu : maxiters;
    }
    a.reqs = malloc(sizeof *a.reqs * (size_t)(maxiters > 0 ? maxiters : 1));
    a.stats = malloc(sizeof *a.stats * (size_t)(maxiters > 0 ? maxiters : 1));
    if (!a.reqs || !a.stats)
        MPI_Abort(c->world, 3);
    for (int q = 0; q < Q_N; q++) {
        for (int i = 0; i < n; i++) {
            ism_bench_point p;
            ism_bench_point_init(c, &p, "time", "us", sizes[i]);
            ism_bench_param_str(&p, "quantity", QNAME[q]);
            ism_bench_param_int(&p, "peer", peer);
            if (a.via)
                ism_bench_param_str(&p, "via", "coll");
            snprintf(p.params_text, sizeof p.params_text, "%-15s", QNAME[q]);
            snprintf(p.header_text, sizeof p.header_text, "%-15s", "quantity");
            p.timed_per_call = q == Q_SEND || q == Q_RECV;
            a.q = q;
            a.n = (int)sizes[i];
            ism_bench_run_point(c, &p, c->world, sample, &a);
        }
    }
    /* reduction cost per op and type, rank 0 alone */
    for (unsigned k = 0; k < sizeof RED / sizeof *RED; k++) {
        for (int i = 0; i < n; i++) {
            if (sizes[i] < RED[k].size)
                continue;
            ism_bench_point p;
            ism_bench_point_init(c, &p, "time", "us", sizes[i]);
            ism_bench_param_str(&p, "quantity", "reduce_local");
            ism_bench_param_str(&p, "op", RED[k].name);
            snprintf(p.params_text, sizeof p.params_text, "%-15s", RED[k].name);
            snprintf(p.header_text, sizeof p.header_text, "%-15s", "reduce_local");
            a.n = (int)(sizes[i] / RED[k].size);
            a.dt = RED[k].dt;
            a.op = RED[k].op;
            memset(a.sbuf, 0, (size_t)sizes[i]);
            memset(a.rbuf, 0, (size_t)sizes[i]);
            ism_bench_run_point(c, &p, c->world, reduce_sample, &a);
        }
    }
    /* local copy cost, rank 0 alone */
    for (int i = 0; i < n; i++) {
        ism_bench_point p;
        ism_bench_point_init(c, &p, "time", "us", sizes[i]);
        ism_bench_param_str(&p, "quantity", "copy_local");
        snprintf(p.params_text, sizeof p.params_text, "%-15s", "memcpy");
        snprintf(p.header_text, sizeof p.header_text, "%-15s", "copy_local");
        a.n = (int)sizes[i];
        a.op = MPI_OP_NULL;
        ism_bench_run_point(c, &p, c->world, reduce_sample, &a);
    }
    if (a.pair != MPI_COMM_NULL)
        MPI_Comm_free(&a.pair);
    free(a.reqs);
    free(a.stats);
    free(a.sbuf);
    free(a.rbuf);
}
