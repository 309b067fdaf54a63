/*
 * t_topo.c - neighborhood collectives on the topology kinds (2-D and 3-D
 * Cartesian, ring graph).
 *
 * Neighbors in MPI order: Cartesian, for each dimension the source then the
 * destination of MPI_Cart_shift(d, 1) (MPI_PROC_NULL at a non-periodic edge:
 * that receive block must stay untouched); graph, MPI_Graph_neighbors.
 * Receive block k comes from neighbor q = nbr[k], sent from q's send block
 * k' that points back at us: Cartesian k' = k ^ 1; graph, k' is q's m-th
 * edge to us when nbr[k] is our m-th edge to q (repeated edges match in
 * order).
 */
#include "conf.h"

#include <stdlib.h>

#define MAXN 16

struct nbrs {
    int n, nbr[MAXN], back[MAXN];
};

static void neighbors(struct ctx *cx, struct nbrs *nb)
{
    int status;
    MPI_Topo_test(cx->comm, &status);
    nb->n = 0;
    if (status == MPI_CART) {
        int nd;
        MPI_Cartdim_get(cx->comm, &nd);
        for (int d = 0; d < nd; d++) {
            int s, t;
            MPI_Cart_shift(cx->comm, d, 1, &s, &t);
            nb->nbr[2 * d] = s;
            nb->nbr[2 * d + 1] = t;
            nb->back[2 * d] = 2 * d + 1;
            nb->back[2 * d + 1] = 2 * d;
        }
        nb->n = 2 * nd;
    } else if (status == MPI_GRAPH) {
        MPI_Graph_neighbors_count(cx->comm, cx->rank, &nb->n);
        MPI_Graph_neighbors(cx->comm, cx->rank, MAXN, nb->nbr);
        for (int k = 0; k < nb->n; k++) {
            int q = nb->nbr[k], m = 0, qn, qnbr[MAXN];
            for (int j = 0; j < k; j++)
                m += nb->nbr[j] == q;
            MPI_Graph_neighbors_count(cx->comm, q, &qn);
            MPI_Graph_neighbors(cx->comm, q, MAXN, qnbr);
            nb->back[k] = -1;
            for (int j = 0; j < qn; j++)
                if (qnbr[j] == cx->rank && m-- == 0) {
                    nb->back[k] = j;
                    break;
                }
        }
    }
}

enum { N_AG, N_AGV, N_AA, N_AAV, N_AAW };

/* count sent on block k (v/w forms): odd blocks carry half */
static int kcnt(const struct ctx *cx, int k) { return k % 2 ? cx->count / 2 : cx->count; }
static int scnt(const struct ctx *cx, int r) { return r % 2 ? cx->count / 2 : cx->count; }

static void neighbor_(struct ctx *cx, int kind, int nbf)
{
    struct nbrs nb;
    neighbors(cx, &nb);
    int n = cx->count, k, K = nb.n, rank = cx->rank;
    MPI_Datatype dt = cx->ty->dt;
    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    MPI_Aint sdA[MAXN], rdA[MAXN];
    MPI_Datatype ts[MAXN];
    int ag = kind == N_AG || kind == N_AGV;
    for (k = 0; k < K; k++) {
        int q = nb.nbr[k];
        switch (kind) {
        case N_AG: case N_AA: sc[k] = rc[k] = n; break;
        case N_AGV: sc[k] = scnt(cx, rank); rc[k] = q == MPI_PROC_NULL ? n : scnt(cx, q); break;
        default: sc[k] = kcnt(cx, k); rc[k] = kcnt(cx, nb.back[k] < 0 ? 0 : nb.back[k]); break;
        }
        /* the plain forms place blocks densely; v/w forms leave a gap */
        sd[k] = rd[k] = (kind == N_AG || kind == N_AA) ? k * n : k * (n + 1);
        sdA[k] = rdA[k] = sd[k] * cx->extent;
        ts[k] = dt;
    }
    struct buf sb, rb, eb;
    MPI_Aint tot = (MPI_Aint)K * (n + 1);
    buf_init(cx, &sb, ag ? n : tot, SENT_SEND);
    if (ag)
        buf_fill(cx, &sb, 0, kind == N_AGV ? scnt(cx, rank) : n, seed_of(cx, 0, 0, rank, -1));
    else
        for (k = 0; k < K; k++)
            buf_fill(cx, &sb, sd[k], sc[k], seed_of(cx, 0, 0, rank, 100 + k));
    buf_init(cx, &rb, tot, SENT_RECV);
    buf_init(cx, &eb, tot, SENT_RECV);
    for (k = 0; k < K; k++) {
        int q = nb.nbr[k];
        if (q == MPI_PROC_NULL)
            continue;
        uint32_t s = ag ? seed_of(cx, 0, 0, q, -1) : seed_of(cx, 0, 0, q, 100 + nb.back[k]);
        buf_fill(cx, &eb, rd[k], rc[k], s);
    }
    MPI_Request rq = MPI_REQUEST_NULL;
    int rcode = MPI_SUCCESS;
    switch (kind) {
    case N_AG:
        rcode = nbf ? MPI_Ineighbor_allgather(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm, &rq)
                    : MPI_Neighbor_allgather(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm);
        break;
    case N_AGV:
        rcode = nbf ? MPI_Ineighbor_allgatherv(sb.ptr, K ? sc[0] : 0, dt, rb.ptr, rc, rd, dt, cx->comm, &rq)
                    : MPI_Neighbor_allgatherv(sb.ptr, K ? sc[0] : 0, dt, rb.ptr, rc, rd, dt, cx->comm);
        break;
    case N_AA:
        rcode = nbf ? MPI_Ineighbor_alltoall(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm, &rq)
                    : MPI_Neighbor_alltoall(sb.ptr, n, dt, rb.ptr, n, dt, cx->comm);
        break;
    case N_AAV:
        rcode = nbf ? MPI_Ineighbor_alltoallv(sb.ptr, sc, sd, dt, rb.ptr, rc, rd, dt, cx->comm, &rq)
                    : MPI_Neighbor_alltoallv(sb.ptr, sc, sd, dt, rb.ptr, rc, rd, dt, cx->comm);
        break;
    case N_AAW:
        rcode = nbf ? MPI_Ineighbor_alltoallw(sb.ptr, sc, sdA, ts, rb.ptr, rc, rdA, ts, cx->comm, &rq)
                    : MPI_Neighbor_alltoallw(sb.ptr, sc, sdA, ts, rb.ptr, rc, rdA, ts, cx->comm);
        break;
    }
    CX_RC(cx, rcode, "neighborhood collective");
    if (nbf)
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    buf_same(cx, &rb, &eb, "neighborhood receive buffer");
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&eb);
}

TEST_FN(t_nallgather, neighbor_(cx, N_AG, 0))
TEST_FN(t_inallgather, neighbor_(cx, N_AG, 1))
TEST_FN(t_nallgatherv, neighbor_(cx, N_AGV, 0))
TEST_FN(t_inallgatherv, neighbor_(cx, N_AGV, 1))
TEST_FN(t_nalltoall, neighbor_(cx, N_AA, 0))
TEST_FN(t_inalltoall, neighbor_(cx, N_AA, 1))
TEST_FN(t_nalltoallv, neighbor_(cx, N_AAV, 0))
TEST_FN(t_inalltoallv, neighbor_(cx, N_AAV, 1))
TEST_FN(t_nalltoallw, neighbor_(cx, N_AAW, 0))
TEST_FN(t_inalltoallw, neighbor_(cx, N_AAW, 1))

#define N(n, f) {n, "topo", TF_TOPO, f}
const struct test_def topo_tests[] = {
    N("neighbor_allgather", t_nallgather),   N("ineighbor_allgather", t_inallgather),
    N("neighbor_allgatherv", t_nallgatherv), N("ineighbor_allgatherv", t_inallgatherv),
    N("neighbor_alltoall", t_nalltoall),     N("ineighbor_alltoall", t_inalltoall),
    N("neighbor_alltoallv", t_nalltoallv),   N("ineighbor_alltoallv", t_inalltoallv),
    N("neighbor_alltoallw", t_nalltoallw),   N("ineighbor_alltoallw", t_inalltoallw),
};
const int n_topo_tests = (int)(sizeof topo_tests / sizeof topo_tests[0]);
