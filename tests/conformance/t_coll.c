/*
 * t_coll.c - collective tests of the conformance suite, blocking and
 * nonblocking (each I-form is started and completed with MPI_Wait).
 *
 * Data movement collectives check whole receive buffers (data, holes,
 * slack, and the gaps between the blocks of the v/w forms, which must stay
 * untouched).  Reductions run on predefined types only (SUM/MAX on integer
 * and floating types, MINLOC/MAXLOC on pair types) with small values, so the
 * expected result is exact whatever the order of combination.  Roots vary
 * with the count.  Barrier, bcast, allreduce, allgather and alltoall also
 * run on intercommunicators (data comes from the remote group).
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* run the blocking call, or the nonblocking one and wait */
#define NB(cx, nb, bcall, icall)                                              \
    do {                                                                      \
        if (nb) {                                                             \
            MPI_Request rq_ = MPI_REQUEST_NULL;                               \
            CX_RC(cx, icall, #icall);                                         \
            CX_RC(cx, MPI_Wait(&rq_, MPI_STATUS_IGNORE), "MPI_Wait");         \
        } else {                                                              \
            CX_RC(cx, bcall, #bcall);                                         \
        }                                                                     \
    } while (0)

static int nsrc(const struct ctx *cx) { return cx->inter ? cx->rsize : cx->size; }
static int sside(const struct ctx *cx) { return cx->inter ? 1 - cx->side : 0; }
static int root_of(const struct ctx *cx) { return (cx->count + cx->tid) % cx->size; }
/* block sizes of the v-forms: odd ranks use half the count */
static int vcnt(const struct ctx *cx, int i) { return i % 2 ? cx->count / 2 : cx->count; }
/* block i starts at element i*(count+1): one untouched element between blocks */
static int vdsp(const struct ctx *cx, int i) { return i * (cx->count + 1); }

/* ---- barrier --------------------------------------------------------------
 * Each rank starts a synchronous send before the barrier; its receiver posts
 * the receive only after leaving the barrier.  So the send cannot complete
 * before its sender entered the barrier: rank 0 polls for a while first.  */
static void barrier_(struct ctx *cx, int nb)
{
    int on = cx->inter ? cx->rank < cx->rsize : 1;
    int dest = cx->inter ? cx->rank : (cx->rank + 1) % cx->size;
    int src = cx->inter ? cx->rank : (cx->rank - 1 + cx->size) % cx->size;
    int tag = 2000 + cx->tid;
    struct buf sb, rb, eb;
    buf_init(cx, &sb, cx->count, SENT_SEND);
    buf_init(cx, &rb, cx->count, SENT_RECV);
    buf_init(cx, &eb, cx->count, SENT_RECV);
    buf_fill(cx, &sb, 0, cx->count, seed_of(cx, 0, cx->side, cx->rank, dest));
    buf_fill(cx, &eb, 0, cx->count, seed_of(cx, 0, sside(cx), src, cx->rank));
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    if (on) {
        MPI_Issend(sb.ptr, cx->count, cx->ty->dt, dest, tag, cx->comm, &r[0]);
        int flag = 0;
        double t0 = MPI_Wtime();
        do {
            MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
        } while (!flag && cx->rank == 0 && MPI_Wtime() - t0 < 0.002);
        if (flag)
            cx_fail(cx, "synchronous send completed before its sender entered the barrier");
    }
    NB(cx, nb, MPI_Barrier(cx->comm), MPI_Ibarrier(cx->comm, &rq_));
    if (on) {
        MPI_Irecv(rb.ptr, cx->count, cx->ty->dt, src, tag, cx->comm, &r[1]);
        MPI_Waitall(2, r, st);
        buf_same(cx, &rb, &eb, "message sent across the barrier");
    }
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&eb);
}

/* ---- bcast ---------------------------------------------------------------- */
static void bcast_(struct ctx *cx, int nb)
{
    struct buf b, e;
    buf_init(cx, &b, cx->count, SENT_RECV);
    buf_init(cx, &e, cx->count, SENT_RECV);
    int root;
    if (cx->inter) {
        /* rank 0 of group 0 is the root */
        if (cx->side == 0)
            root = cx->rank == 0 ? MPI_ROOT : MPI_PROC_NULL;
        else
            root = 0;
        if (cx->side == 0 && cx->rank == 0)
            buf_fill(cx, &b, 0, cx->count, seed_of(cx, 0, 0, 0, -1));
        if (!(cx->side == 0 && cx->rank != 0))
            buf_fill(cx, &e, 0, cx->count, seed_of(cx, 0, 0, 0, -1));
    } else {
        root = root_of(cx);
        if (cx->rank == root)
            buf_fill(cx, &b, 0, cx->count, seed_of(cx, 0, 0, root, -1));
        buf_fill(cx, &e, 0, cx->count, seed_of(cx, 0, 0, root, -1));
    }
    NB(cx, nb, MPI_Bcast(b.ptr, cx->count, cx->ty->dt, root, cx->comm),
       MPI_Ibcast(b.ptr, cx->count, cx->ty->dt, root, cx->comm, &rq_));
    buf_same(cx, &b, &e, "bcast buffer");
    buf_free(&b);
    buf_free(&e);
}

/* ---- reductions ----------------------------------------------------------- */
struct acc {
    long double *v;
    long *i;
};

static void acc_init(struct acc *a, int n)
{
    a->v = calloc((size_t)n + 1, sizeof *a->v);
    a->i = calloc((size_t)n + 1, sizeof *a->i);
}

static void acc_free(struct acc *a)
{
    free(a->v);
    free(a->i);
}

/* expected reduction over ranks [lo, hi) of side s, value indices vbase.. */
static void acc_ranks(struct ctx *cx, struct acc *a, int n, MPI_Aint vbase, int s, int lo,
                      int hi, MPI_Op op)
{
    for (int r = lo; r < hi; r++)
        red_acc(cx, a->v, a->i, n, vbase, r == lo, s, r, 0, op);
}

enum { R_REDUCE, R_REDUCE_INPLACE, R_ALLREDUCE, R_ALLREDUCE_INPLACE, R_SCAN, R_EXSCAN,
       R_RSB, R_RS };

static void reduce_(struct ctx *cx, int kind, int nb)
{
    int n = cx->count, size = cx->size, rank = cx->rank;
    MPI_Op op = red_op(cx, 0);
    MPI_Datatype dt = cx->ty->dt;
    struct buf sb, rb;
    struct acc a;
    int total = n, *rcounts = NULL, myoff = 0;
    if (kind == R_RS || kind == R_RSB) {
        rcounts = malloc(sizeof(int) * (size_t)size);
        total = 0;
        for (int i = 0; i < size; i++) {
            rcounts[i] = kind == R_RSB ? n : vcnt(cx, i);
            if (i < rank)
                myoff += rcounts[i];
            total += rcounts[i];
        }
    }
    buf_init(cx, &sb, total, SENT_SEND);
    red_set(cx, &sb, 0, total, 0, cx->side, rank, 0);
    int rn = (kind == R_RS || kind == R_RSB) ? rcounts[rank] : n;
    buf_init(cx, &rb, rn, SENT_RECV);
    acc_init(&a, total);
    int root = root_of(cx);
    const char *what = "";
    switch (kind) {
    case R_REDUCE:
        what = "reduce result at the root";
        NB(cx, nb, MPI_Reduce(sb.ptr, rb.ptr, n, dt, op, root, cx->comm),
           MPI_Ireduce(sb.ptr, rb.ptr, n, dt, op, root, cx->comm, &rq_));
        acc_ranks(cx, &a, n, 0, 0, 0, size, op);
        break;
    case R_REDUCE_INPLACE:
        what = "in-place reduce result at the root";
        if (rank == root) {
            red_set(cx, &rb, 0, n, 0, cx->side, rank, 0);
            CX_RC(cx, MPI_Reduce(MPI_IN_PLACE, rb.ptr, n, dt, op, root, cx->comm), "MPI_Reduce");
        } else {
            CX_RC(cx, MPI_Reduce(sb.ptr, NULL, n, dt, op, root, cx->comm), "MPI_Reduce");
        }
        acc_ranks(cx, &a, n, 0, 0, 0, size, op);
        break;
    case R_ALLREDUCE:
        what = "allreduce result";
        NB(cx, nb, MPI_Allreduce(sb.ptr, rb.ptr, n, dt, op, cx->comm),
           MPI_Iallreduce(sb.ptr, rb.ptr, n, dt, op, cx->comm, &rq_));
        /* on an intercommunicator: the reduction of the remote group */
        acc_ranks(cx, &a, n, 0, sside(cx), 0, nsrc(cx), op);
        break;
    case R_ALLREDUCE_INPLACE:
        what = "in-place allreduce result";
        red_set(cx, &rb, 0, n, 0, cx->side, rank, 0);
        CX_RC(cx, MPI_Allreduce(MPI_IN_PLACE, rb.ptr, n, dt, op, cx->comm), "MPI_Allreduce");
        acc_ranks(cx, &a, n, 0, 0, 0, size, op);
        break;
    case R_SCAN:
        what = "scan result";
        NB(cx, nb, MPI_Scan(sb.ptr, rb.ptr, n, dt, op, cx->comm),
           MPI_Iscan(sb.ptr, rb.ptr, n, dt, op, cx->comm, &rq_));
        acc_ranks(cx, &a, n, 0, 0, 0, rank + 1, op);
        break;
    case R_EXSCAN:
        what = "exscan result";
        NB(cx, nb, MPI_Exscan(sb.ptr, rb.ptr, n, dt, op, cx->comm),
           MPI_Iexscan(sb.ptr, rb.ptr, n, dt, op, cx->comm, &rq_));
        acc_ranks(cx, &a, n, 0, 0, 0, rank, op);
        break;
    case R_RSB:
        what = "reduce_scatter_block result";
        NB(cx, nb, MPI_Reduce_scatter_block(sb.ptr, rb.ptr, n, dt, op, cx->comm),
           MPI_Ireduce_scatter_block(sb.ptr, rb.ptr, n, dt, op, cx->comm, &rq_));
        acc_ranks(cx, &a, rn, myoff, 0, 0, size, op);
        break;
    case R_RS:
        what = "reduce_scatter result";
        NB(cx, nb, MPI_Reduce_scatter(sb.ptr, rb.ptr, rcounts, dt, op, cx->comm),
           MPI_Ireduce_scatter(sb.ptr, rb.ptr, rcounts, dt, op, cx->comm, &rq_));
        acc_ranks(cx, &a, rn, myoff, 0, 0, size, op);
        break;
    }
    int check = 1;
    if ((kind == R_REDUCE || kind == R_REDUCE_INPLACE) && rank != root)
        check = 0;
    if (kind == R_EXSCAN && rank == 0)
        check = 0; /* undefined at rank 0 */
    if (check) {
        char w[96];
        snprintf(w, sizeof w, "%s (%s)", what, op_name(op));
        red_check(cx, &rb, 0, rn, a.v, a.i, w);
    }
    acc_free(&a);
    free(rcounts);
    buf_free(&sb);
    buf_free(&rb);
}

/* ---- gather / scatter ------------------------------------------------------ */
static void gather_(struct ctx *cx, int v, int nb)
{
    int n = cx->count, size = cx->size, rank = cx->rank, root = root_of(cx);
    MPI_Datatype dt = cx->ty->dt;
    int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        rc[i] = v ? vcnt(cx, i) : n;
        rd[i] = v ? vdsp(cx, i) : i * n;
    }
    int sn = rc[rank];
    MPI_Aint rtot = v ? (MPI_Aint)size * (n + 1) : (MPI_Aint)size * n;
    struct buf sb, rb, eb;
    buf_init(cx, &sb, sn, SENT_SEND);
    buf_fill(cx, &sb, 0, sn, seed_of(cx, 0, 0, rank, root));
    buf_init(cx, &rb, rank == root ? rtot : 0, SENT_RECV);
    buf_init(cx, &eb, rank == root ? rtot : 0, SENT_RECV);
    if (rank == root)
        for (int i = 0; i < size; i++)
            buf_fill(cx, &eb, rd[i], rc[i], seed_of(cx, 0, 0, i, root));
    if (v)
        NB(cx, nb, MPI_Gatherv(sb.ptr, sn, dt, rb.ptr, rc, rd, dt, root, cx->comm),
           MPI_Igatherv(sb.ptr, sn, dt, rb.ptr, rc, rd, dt, root, cx->comm, &rq_));
    else
        NB(cx, nb, MPI_Gather(sb.ptr, n, dt, rb.ptr, n, dt, root, cx->comm),
           MPI_Igather(sb.ptr, n, dt, rb.ptr, n, dt, root, cx->comm, &rq_));
    if (rank == root)
        buf_same(cx, &rb, &eb, v ? "gatherv result at the root" : "gather result at the root");
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&eb);
    free(rc);
    free(rd);
}

static void scatter_(struct ctx *cx, int v, int nb)
{
    int n = cx->count, size = cx->size, rank = cx->rank, root = root_of(cx);
    MPI_Datatype dt = cx->ty->dt;
    int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        sc[i] = v ? vcnt(cx, i) : n;
        sd[i] = v ? vdsp(cx, i) : i * n;
    }
    MPI_Aint stot = v ? (MPI_Aint)size * (n + 1) : (MPI_Aint)size * n;
    int rn = sc[rank];
    struct buf sb, rb, eb;
    buf_init(cx, &sb, rank == root ? stot : 0, SENT_SEND);
    if (rank == root)
        for (int i = 0; i < size; i++)
            buf_fill(cx, &sb, sd[i], sc[i], seed_of(cx, 0, 0, root, i));
    buf_init(cx, &rb, rn, SENT_RECV);
    buf_init(cx, &eb, rn, SENT_RECV);
    buf_fill(cx, &eb, 0, rn, seed_of(cx, 0, 0, root, rank));
    if (v)
        NB(cx, nb, MPI_Scatterv(sb.ptr, sc, sd, dt, rb.ptr, rn, dt, root, cx->comm),
           MPI_Iscatterv(sb.ptr, sc, sd, dt, rb.ptr, rn, dt, root, cx->comm, &rq_));
    else
        NB(cx, nb, MPI_Scatter(sb.ptr, n, dt, rb.ptr, n, dt, root, cx->comm),
           MPI_Iscatter(sb.ptr, n, dt, rb.ptr, n, dt, root, cx->comm, &rq_));
    buf_same(cx, &rb, &eb, v ? "scatterv block" : "scatter block");
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&eb);
    free(sc);
    free(sd);
}

/* ---- allgather ------------------------------------------------------------ */
enum { AG_PLAIN, AG_INPLACE, AG_V };

static void allgather_(struct ctx *cx, int kind, int nb)
{
    int n = cx->count, rank = cx->rank, ns = nsrc(cx);
    MPI_Datatype dt = cx->ty->dt;
    int *rc = malloc(sizeof(int) * (size_t)ns), *rd = malloc(sizeof(int) * (size_t)ns);
    for (int i = 0; i < ns; i++) {
        rc[i] = kind == AG_V ? vcnt(cx, i) : n;
        rd[i] = kind == AG_V ? vdsp(cx, i) : i * n;
    }
    int sn = kind == AG_V ? vcnt(cx, rank) : n;
    MPI_Aint rtot = kind == AG_V ? (MPI_Aint)ns * (n + 1) : (MPI_Aint)ns * n;
    struct buf sb, rb, eb;
    buf_init(cx, &sb, sn, SENT_SEND);
    buf_fill(cx, &sb, 0, sn, seed_of(cx, 0, cx->side, rank, -1));
    buf_init(cx, &rb, rtot, SENT_RECV);
    buf_init(cx, &eb, rtot, SENT_RECV);
    for (int i = 0; i < ns; i++)
        buf_fill(cx, &eb, rd[i], rc[i], seed_of(cx, 0, sside(cx), i, -1));
    switch (kind) {
    case AG_PLAIN:
        NB(cx, nb, MPI_Allgather(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm),
           MPI_Iallgather(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm, &rq_));
        break;
    case AG_INPLACE:
        buf_fill(cx, &rb, rd[rank], n, seed_of(cx, 0, 0, rank, -1));
        NB(cx, nb, MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb.ptr, n, dt, cx->comm),
           MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb.ptr, n, dt, cx->comm, &rq_));
        break;
    case AG_V:
        NB(cx, nb, MPI_Allgatherv(sb.ptr, sn, dt, rb.ptr, rc, rd, dt, cx->comm),
           MPI_Iallgatherv(sb.ptr, sn, dt, rb.ptr, rc, rd, dt, cx->comm, &rq_));
        break;
    }
    buf_same(cx, &rb, &eb, "allgather result");
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&eb);
    free(rc);
    free(rd);
}

/* ---- alltoall ------------------------------------------------------------- */
enum { AA_PLAIN, AA_V, AA_W, AA_INPLACE };

/* what rank a sends to rank b in the v/w forms */
static int acnt(const struct ctx *cx, int a, int b) { return (a + b) % 2 ? cx->count / 2 : cx->count; }

static void alltoall_(struct ctx *cx, int kind, int nb)
{
    int n = cx->count, rank = cx->rank, ns = nsrc(cx);
    MPI_Datatype dt = cx->ty->dt;
    int *sc = malloc(sizeof(int) * (size_t)ns), *sd = malloc(sizeof(int) * (size_t)ns);
    int *rc = malloc(sizeof(int) * (size_t)ns), *rd = malloc(sizeof(int) * (size_t)ns);
    int *sdb = malloc(sizeof(int) * (size_t)ns), *rdb = malloc(sizeof(int) * (size_t)ns);
    MPI_Datatype *ts = malloc(sizeof(MPI_Datatype) * (size_t)ns);
    int vw = kind == AA_V || kind == AA_W;
    for (int i = 0; i < ns; i++) {
        sc[i] = vw ? acnt(cx, rank, i) : n;
        rc[i] = vw ? acnt(cx, i, rank) : n;
        sd[i] = rd[i] = vw ? vdsp(cx, i) : i * n;
        sdb[i] = rdb[i] = (int)(sd[i] * cx->extent);
        ts[i] = dt;
    }
    MPI_Aint tot = vw ? (MPI_Aint)ns * (n + 1) : (MPI_Aint)ns * n;
    struct buf sb, rb, eb;
    buf_init(cx, &sb, tot, SENT_SEND);
    for (int i = 0; i < ns; i++)
        buf_fill(cx, &sb, sd[i], sc[i], seed_of(cx, 0, cx->side, rank, i));
    buf_init(cx, &rb, tot, SENT_RECV);
    buf_init(cx, &eb, tot, SENT_RECV);
    for (int i = 0; i < ns; i++)
        buf_fill(cx, &eb, rd[i], rc[i], seed_of(cx, 0, sside(cx), i, rank));
    switch (kind) {
    case AA_PLAIN:
        NB(cx, nb, MPI_Alltoall(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm),
           MPI_Ialltoall(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm, &rq_));
        break;
    case AA_INPLACE:
        for (int i = 0; i < ns; i++)
            buf_fill(cx, &rb, rd[i], rc[i], seed_of(cx, 0, cx->side, rank, i));
        CX_RC(cx, MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb.ptr, n, dt, cx->comm),
              "MPI_Alltoall(MPI_IN_PLACE)");
        break;
    case AA_V:
        NB(cx, nb, MPI_Alltoallv(sb.ptr, sc, sd, dt, rb.ptr, rc, rd, dt, cx->comm),
           MPI_Ialltoallv(sb.ptr, sc, sd, dt, rb.ptr, rc, rd, dt, cx->comm, &rq_));
        break;
    case AA_W:
        NB(cx, nb, MPI_Alltoallw(sb.ptr, sc, sdb, ts, rb.ptr, rc, rdb, ts, cx->comm),
           MPI_Ialltoallw(sb.ptr, sc, sdb, ts, rb.ptr, rc, rdb, ts, cx->comm, &rq_));
        break;
    }
    buf_same(cx, &rb, &eb, "alltoall result");
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&eb);
    free(sc), free(sd), free(rc), free(rd), free(sdb), free(rdb), free(ts);
}

/* ---- the table -------------------------------------------------------------- */
TEST_FN(t_barrier, barrier_(cx, 0))
TEST_FN(t_ibarrier, barrier_(cx, 1))
TEST_FN(t_bcast, bcast_(cx, 0))
TEST_FN(t_ibcast, bcast_(cx, 1))
TEST_FN(t_reduce, reduce_(cx, R_REDUCE, 0))
TEST_FN(t_ireduce, reduce_(cx, R_REDUCE, 1))
TEST_FN(t_reduce_inplace, reduce_(cx, R_REDUCE_INPLACE, 0))
TEST_FN(t_allreduce, reduce_(cx, R_ALLREDUCE, 0))
TEST_FN(t_iallreduce, reduce_(cx, R_ALLREDUCE, 1))
TEST_FN(t_allreduce_inplace, reduce_(cx, R_ALLREDUCE_INPLACE, 0))
TEST_FN(t_scan, reduce_(cx, R_SCAN, 0))
TEST_FN(t_iscan, reduce_(cx, R_SCAN, 1))
TEST_FN(t_exscan, reduce_(cx, R_EXSCAN, 0))
TEST_FN(t_iexscan, reduce_(cx, R_EXSCAN, 1))
TEST_FN(t_reduce_scatter, reduce_(cx, R_RS, 0))
TEST_FN(t_ireduce_scatter, reduce_(cx, R_RS, 1))
TEST_FN(t_reduce_scatter_block, reduce_(cx, R_RSB, 0))
TEST_FN(t_ireduce_scatter_block, reduce_(cx, R_RSB, 1))
TEST_FN(t_gather, gather_(cx, 0, 0))
TEST_FN(t_igather, gather_(cx, 0, 1))
TEST_FN(t_gatherv, gather_(cx, 1, 0))
TEST_FN(t_igatherv, gather_(cx, 1, 1))
TEST_FN(t_scatter, scatter_(cx, 0, 0))
TEST_FN(t_iscatter, scatter_(cx, 0, 1))
TEST_FN(t_scatterv, scatter_(cx, 1, 0))
TEST_FN(t_iscatterv, scatter_(cx, 1, 1))
TEST_FN(t_allgather, allgather_(cx, AG_PLAIN, 0))
TEST_FN(t_iallgather, allgather_(cx, AG_PLAIN, 1))
TEST_FN(t_allgather_inplace, allgather_(cx, AG_INPLACE, 0))
TEST_FN(t_allgatherv, allgather_(cx, AG_V, 0))
TEST_FN(t_iallgatherv, allgather_(cx, AG_V, 1))
TEST_FN(t_alltoall, alltoall_(cx, AA_PLAIN, 0))
TEST_FN(t_ialltoall, alltoall_(cx, AA_PLAIN, 1))
TEST_FN(t_alltoall_inplace, alltoall_(cx, AA_INPLACE, 0))
TEST_FN(t_alltoallv, alltoall_(cx, AA_V, 0))
TEST_FN(t_ialltoallv, alltoall_(cx, AA_V, 1))
TEST_FN(t_alltoallw, alltoall_(cx, AA_W, 0))
TEST_FN(t_ialltoallw, alltoall_(cx, AA_W, 1))

#define C(n, fl, f) {n, "coll", fl, f}
const struct test_def coll_tests[] = {
    C("barrier", TF_INTER, t_barrier),
    C("ibarrier", TF_INTER, t_ibarrier),
    C("bcast", TF_INTER, t_bcast),
    C("ibcast", TF_INTER, t_ibcast),
    C("reduce", TF_RED, t_reduce),
    C("ireduce", TF_RED, t_ireduce),
    C("reduce_inplace", TF_RED, t_reduce_inplace),
    C("allreduce", TF_RED | TF_INTER, t_allreduce),
    C("iallreduce", TF_RED | TF_INTER, t_iallreduce),
    C("allreduce_inplace", TF_RED, t_allreduce_inplace),
    C("scan", TF_RED, t_scan),
    C("iscan", TF_RED, t_iscan),
    C("exscan", TF_RED, t_exscan),
    C("iexscan", TF_RED, t_iexscan),
    C("reduce_scatter", TF_RED, t_reduce_scatter),
    C("ireduce_scatter", TF_RED, t_ireduce_scatter),
    C("reduce_scatter_block", TF_RED, t_reduce_scatter_block),
    C("ireduce_scatter_block", TF_RED, t_ireduce_scatter_block),
    C("gather", 0, t_gather),
    C("igather", 0, t_igather),
    C("gatherv", 0, t_gatherv),
    C("igatherv", 0, t_igatherv),
    C("scatter", 0, t_scatter),
    C("iscatter", 0, t_iscatter),
    C("scatterv", 0, t_scatterv),
    C("iscatterv", 0, t_iscatterv),
    C("allgather", TF_INTER, t_allgather),
    C("iallgather", TF_INTER, t_iallgather),
    C("allgather_inplace", 0, t_allgather_inplace),
    C("allgatherv", 0, t_allgatherv),
    C("iallgatherv", 0, t_iallgatherv),
    C("alltoall", TF_INTER, t_alltoall),
    C("ialltoall", TF_INTER, t_ialltoall),
    C("alltoall_inplace", 0, t_alltoall_inplace),
    C("alltoallv", 0, t_alltoallv),
    C("ialltoallv", 0, t_ialltoallv),
    C("alltoallw", 0, t_alltoallw),
    C("ialltoallw", 0, t_ialltoallw),
};
const int n_coll_tests = (int)(sizeof coll_tests / sizeof coll_tests[0]);
