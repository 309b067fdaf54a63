/*
 * coll_nb_many: many nonblocking collectives outstanding on one communicator at once.
 *  - 17 collectives of 16 kinds started back to back on world (Iallreduce with a sum, a
 *    max, a non-commutative user op and 128 KiB; Ibcast from two roots, one of them with
 *    a derived type freed right after the call; Ireduce to two roots, one in place;
 *    Ibarrier; Iallgather, Ialltoall, Igather, Iscatter, Iscan, Iexscan,
 *    Ireduce_scatter_block, Ireduce_scatter in place with counts of 1-3), then completed in an order of each rank's own (a shuffle
 *    seeded by its rank) through MPI_Waitany and MPI_Testsome over a sliding window; every
 *    result checked. Five rounds, each with other values.
 *  - 200 Iallreduce outstanding at once, completed by one MPI_Waitall in reverse order.
 *  - An Ibcast outstanding across a blocking MPI_Allreduce and an MPI_Bcast on the same
 *    communicator (the collectives are started in one order on every rank, as MPI asks).
 *  - Types of one signature and other layouts on different ranks (MPI asks only for the
 *    signature): an Ibcast from 6 contiguous ints into a strided vector elsewhere, and an
 *    Iallgather of 2 contiguous ints into strided blocks; a user op freed right after its
 *    MPI_Iallreduce starts (pending operations complete normally).
 *  - A nonblocking start never blocks, even as the first collective on a new communicator:
 *    near pairs Issend to each other on a fresh duplicate; the even rank waits for its
 *    send, then starts an Ibarrier and only then receives, while its partner receives,
 *    waits for its own send and only then starts the Ibarrier (an Ibarrier that waited
 *    for the partner, as one that made a vendor communicator at its start did, hangs).
 */
#include "check.h"
#include <string.h>

#define NQ 17
#define BIG 16384 /* doubles: 128 KiB */

/* a op b = a: combined in rank order, the result is the lowest rank's value */
static void first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, sizeof(int) * (size_t)*len);
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static void round_of_16(int round, MPI_Op firstop)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int k = round * 7 + 1, bl = size - 1, rr = size / 2;
    MPI_Request q[NQ];
    double s0 = rank + k, r0 = -1;
    int *mx = malloc(sizeof(int) * 1000), *mxr = malloc(sizeof(int) * 1000);
    int *fv = malloc(sizeof(int) * 4096), *fr = malloc(sizeof(int) * 4096);
    double *big = malloc(sizeof(double) * BIG), *bigr = malloc(sizeof(double) * BIG);
    int b0[100], b1[4 * 600];
    long rs[77], rsr[77];
    int ip[5], ipr[5];
    int ag[3], *agr = malloc(sizeof(int) * 3 * size);
    int *a2a = malloc(sizeof(int) * 2 * size), *a2ar = malloc(sizeof(int) * 2 * size);
    int g = rank * k, *gr = malloc(sizeof(int) * size);
    int *sc = malloc(sizeof(int) * size), scr = -1;
    int sn = rank + k, snr = -1, ex = rank + k, exr = -1;
    int *rsb = malloc(sizeof(int) * size), rsbr = -1;
    int *rcn = malloc(sizeof(int) * size), tot = 0, before = 0;
    for (int j = 0; j < size; j++) {
        rcn[j] = j % 3 + 1;
        before += j < rank ? rcn[j] : 0;
        tot += rcn[j];
    }
    int *rsv = malloc(sizeof(int) * tot); /* in place: the whole vector in, my block out */
    for (int i = 0; i < tot; i++)
        rsv[i] = rank * i + k;
    for (int i = 0; i < 1000; i++)
        mx[i] = rank * i + k;
    for (int i = 0; i < 4096; i++)
        fv[i] = rank * 10000 + i + k;
    for (int i = 0; i < BIG; i++)
        big[i] = rank + i % 97 + k;
    for (int i = 0; i < 100; i++)
        b0[i] = rank == 0 ? i * k : -1;
    for (int i = 0; i < 4 * 600; i++)
        b1[i] = rank == bl ? i + k : -1;
    for (int i = 0; i < 77; i++)
        rs[i] = (long)rank * i + k;
    for (int i = 0; i < 5; i++)
        ip[i] = ipr[i] = rank + i + k;
    for (int i = 0; i < 3; i++)
        ag[i] = rank * 3 + i + k;
    for (int j = 0; j < size; j++) {
        a2a[2 * j] = rank * 100 + j + k;
        a2a[2 * j + 1] = -(rank * 100 + j + k);
        sc[j] = j * 5 + k;
        rsb[j] = rank + j + k;
    }
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_INT, &four);
    MPI_Type_commit(&four);

    int n = 0;
    MPI_Iallreduce(&s0, &r0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[n++]);
    MPI_Iallreduce(mx, mxr, 1000, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q[n++]);
    MPI_Iallreduce(fv, fr, 4096, MPI_INT, firstop, MPI_COMM_WORLD, &q[n++]);
    MPI_Iallreduce(big, bigr, BIG, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[n++]);
    MPI_Ibcast(b0, 100, MPI_INT, 0, MPI_COMM_WORLD, &q[n++]);
    MPI_Ibcast(b1, 600, four, bl, MPI_COMM_WORLD, &q[n++]);
    MPI_Type_free(&four); /* pending operations complete normally */
    MPI_Ireduce(rs, rsr, 77, MPI_LONG, MPI_SUM, rr, MPI_COMM_WORLD, &q[n++]);
    MPI_Ireduce(rank == 0 ? MPI_IN_PLACE : ip, ipr, 5, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD,
                &q[n++]);
    MPI_Ibarrier(MPI_COMM_WORLD, &q[n++]);
    MPI_Iallgather(ag, 3, MPI_INT, agr, 3, MPI_INT, MPI_COMM_WORLD, &q[n++]);
    MPI_Ialltoall(a2a, 2, MPI_INT, a2ar, 2, MPI_INT, MPI_COMM_WORLD, &q[n++]);
    MPI_Igather(&g, 1, MPI_INT, gr, 1, MPI_INT, 0, MPI_COMM_WORLD, &q[n++]);
    MPI_Iscatter(sc, 1, MPI_INT, &scr, 1, MPI_INT, bl, MPI_COMM_WORLD, &q[n++]);
    MPI_Iscan(&sn, &snr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[n++]);
    MPI_Iexscan(&ex, &exr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[n++]);
    MPI_Ireduce_scatter_block(rsb, &rsbr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[n++]);
    MPI_Ireduce_scatter(MPI_IN_PLACE, rsv, rcn, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[n++]);

    /* this rank's own completion order: a shuffle; a window of 4 of it at a time, taken
     * by MPI_Waitany in even rounds and by MPI_Testsome in odd ones */
    int order[NQ], seen[NQ] = {0}, left = NQ;
    unsigned seed = (unsigned)(rank * 7919 + round * 104729 + 1);
    for (int i = 0; i < NQ; i++)
        order[i] = i;
    for (int i = NQ - 1; i > 0; i--) {
        int j = (int)(rnd(&seed) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int head = 0;
    while (left) {
        MPI_Request w[4];
        int wi[4], nw = 0;
        for (int i = head; i < NQ && nw < 4; i++)
            if (!seen[order[i]]) {
                wi[nw] = order[i];
                w[nw++] = q[order[i]];
            }
        if (round % 2 == 0) {
            int idx = -1;
            CHECK_RC(MPI_Waitany(nw, w, &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
            CHECK(idx >= 0 && idx < nw, "Waitany gave index %d of %d", idx, nw);
            if (idx < 0 || idx >= nw)
                break;
            CHECK(w[idx] == MPI_REQUEST_NULL, "Waitany left its request active");
            seen[wi[idx]]++;
            q[wi[idx]] = MPI_REQUEST_NULL;
            left--;
        } else {
            int outc = 0, idx[4];
            CHECK_RC(MPI_Testsome(nw, w, &outc, idx, MPI_STATUSES_IGNORE), "MPI_Testsome");
            for (int j = 0; j < outc; j++) {
                seen[wi[idx[j]]]++;
                q[wi[idx[j]]] = MPI_REQUEST_NULL;
                left--;
            }
        }
        while (head < NQ && seen[order[head]])
            head++;
    }
    for (int i = 0; i < NQ; i++)
        CHECK(seen[i] == 1, "round %d: collective %d completed %d times", round, i, seen[i]);

    double want0 = (double)size * (size - 1) / 2 + (double)k * size;
    CHECK(r0 == want0, "Iallreduce sum: %g, want %g", r0, want0);
    for (int i = 0; i < 1000; i++)
        if (mxr[i] != (size - 1) * i + k) {
            CHECK(0, "Iallreduce max [%d]: %d, want %d", i, mxr[i], (size - 1) * i + k);
            break;
        }
    for (int i = 0; i < 4096; i++)
        if (fr[i] != i + k) {
            CHECK(0, "Iallreduce non-commutative [%d]: %d, want rank 0's %d", i, fr[i], i + k);
            break;
        }
    for (int i = 0; i < BIG; i++) {
        double w = (double)size * (size - 1) / 2 + (double)size * (i % 97 + k);
        if (bigr[i] != w) {
            CHECK(0, "Iallreduce 128 KiB [%d]: %g, want %g", i, bigr[i], w);
            break;
        }
    }
    for (int i = 0; i < 100; i++)
        if (b0[i] != i * k) {
            CHECK(0, "Ibcast root 0 [%d]: %d", i, b0[i]);
            break;
        }
    for (int i = 0; i < 4 * 600; i++)
        if (b1[i] != i + k) {
            CHECK(0, "Ibcast root %d, freed type [%d]: %d", bl, i, b1[i]);
            break;
        }
    if (rank == rr)
        for (int i = 0; i < 77; i++) {
            long w = (long)size * (size - 1) / 2 * i + (long)k * size;
            if (rsr[i] != w) {
                CHECK(0, "Ireduce root %d [%d]: %ld, want %ld", rr, i, rsr[i], w);
                break;
            }
        }
    if (rank == 0)
        for (int i = 0; i < 5; i++)
            CHECK(ipr[i] == size * (size - 1) / 2 + size * (i + k),
                  "Ireduce in place [%d]: %d", i, ipr[i]);
    for (int j = 0; j < 3 * size; j++)
        CHECK(agr[j] == j + k, "Iallgather [%d]: %d", j, agr[j]);
    for (int j = 0; j < size; j++)
        CHECK(a2ar[2 * j] == j * 100 + rank + k && a2ar[2 * j + 1] == -(j * 100 + rank + k),
              "Ialltoall from %d: %d %d", j, a2ar[2 * j], a2ar[2 * j + 1]);
    if (rank == 0)
        for (int j = 0; j < size; j++)
            CHECK(gr[j] == j * k, "Igather [%d]: %d", j, gr[j]);
    CHECK(scr == rank * 5 + k, "Iscatter: %d", scr);
    CHECK(snr == rank * (rank + 1) / 2 + (rank + 1) * k, "Iscan: %d", snr);
    if (rank > 0)
        CHECK(exr == rank * (rank - 1) / 2 + rank * k, "Iexscan: %d", exr);
    CHECK(rsbr == size * (size - 1) / 2 + size * (rank + k), "Ireduce_scatter_block: %d", rsbr);
    for (int i = 0; i < rcn[rank]; i++)
        CHECK(rsv[i] == size * (size - 1) / 2 * (before + i) + size * k,
              "Ireduce_scatter in place [%d]: %d", i, rsv[i]);
    free(mx), free(mxr), free(fv), free(fr), free(big), free(bigr), free(agr);
    free(a2a), free(a2ar), free(gr), free(sc), free(rsb), free(rcn), free(rsv);
}

static void two_hundred(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 200 };
    MPI_Request q[N], rev[N];
    int in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i] = rank + i;
        out[i] = -1;
        MPI_Iallreduce(&in[i], &out[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[i]);
    }
    for (int i = 0; i < N; i++)
        rev[i] = q[N - 1 - i];
    CHECK_RC(MPI_Waitall(N, rev, MPI_STATUSES_IGNORE), "MPI_Waitall of 200 Iallreduce");
    for (int i = 0; i < N; i++)
        if (out[i] != size * (size - 1) / 2 + size * i) {
            CHECK(0, "Iallreduce %d of 200: %d", i, out[i]);
            break;
        }
}

static void across_blocking(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int b[64], x = rank, y = -1, z = rank == 0 ? 42 : -1;
    for (int i = 0; i < 64; i++)
        b[i] = rank == size - 1 ? i * 3 : -1;
    MPI_Request q;
    MPI_Ibcast(b, 64, MPI_INT, size - 1, MPI_COMM_WORLD, &q);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(&z, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
    CHECK(y == size * (size - 1) / 2, "Allreduce beside an Ibcast: %d", y);
    CHECK(z == 42, "Bcast beside an Ibcast: %d", z);
    for (int i = 0; i < 64; i++)
        if (b[i] != i * 3) {
            CHECK(0, "Ibcast across blocking collectives [%d]: %d", i, b[i]);
            break;
        }
}

static void sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void layouts(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype strided, every2;
    MPI_Type_vector(3, 2, 3, MPI_INT, &strided); /* ints 0,1 3,4 6,7 */
    MPI_Type_commit(&strided);
    MPI_Type_vector(2, 1, 2, MPI_INT, &every2); /* ints 0 and 2 of 3 */
    MPI_Type_commit(&every2);
    int b[9], *g = malloc(sizeof(int) * 3 * size), two[2] = {rank * 10, rank * 10 + 1};
    for (int i = 0; i < 9; i++)
        b[i] = rank == 0 ? i * 7 : -1;
    for (int i = 0; i < 3 * size; i++)
        g[i] = -1;
    MPI_Op op;
    MPI_Op_create(sum_fn, 1, &op);
    int x = rank + 1, y = -1;
    MPI_Request q[3];
    if (rank == 0)
        MPI_Ibcast(b, 6, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    else
        MPI_Ibcast(b, 1, strided, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Iallgather(two, 2, MPI_INT, g, 1, every2, MPI_COMM_WORLD, &q[1]);
    MPI_Iallreduce(&x, &y, 1, MPI_INT, op, MPI_COMM_WORLD, &q[2]);
    MPI_Op_free(&op);
    MPI_Type_free(&strided);
    MPI_Type_free(&every2);
    CHECK_RC(MPI_Waitall(3, q, MPI_STATUSES_IGNORE), "MPI_Waitall");
    static const int at[6] = {0, 1, 3, 4, 6, 7};
    for (int i = 0; i < 6 && rank; i++)
        CHECK(b[at[i]] == i * 7, "Ibcast into a strided type [%d]: %d, want %d", at[i], b[at[i]],
              i * 7);
    if (rank)
        CHECK(b[2] == -1 && b[5] == -1 && b[8] == -1, "Ibcast wrote between the strides");
    for (int r = 0; r < size; r++)
        CHECK(g[3 * r] == r * 10 && g[3 * r + 2] == r * 10 + 1 && g[3 * r + 1] == -1,
              "Iallgather into strided blocks, rank %d: %d %d %d", r, g[3 * r], g[3 * r + 1],
              g[3 * r + 2]);
    CHECK(y == size * (size + 1) / 2, "Iallreduce with a freed user op: %d", y);
    free(g);
}

static void fresh_start(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    int peer = peer_near(rank, size), v = rank, got = -1;
    MPI_Request s = MPI_REQUEST_NULL, b;
    if (peer != rank)
        MPI_Issend(&v, 1, MPI_INT, peer, 5, d, &s);
    if (peer != rank && rank % 2 == 0) {
        MPI_Wait(&s, MPI_STATUS_IGNORE); /* the partner has received */
        MPI_Ibarrier(d, &b);             /* must return before this rank receives */
        MPI_Recv(&got, 1, MPI_INT, peer, 5, d, MPI_STATUS_IGNORE);
    } else if (peer != rank) {
        MPI_Recv(&got, 1, MPI_INT, peer, 5, d, MPI_STATUS_IGNORE);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        MPI_Ibarrier(d, &b);
    } else {
        MPI_Ibarrier(d, &b);
    }
    CHECK_RC(MPI_Wait(&b, MPI_STATUS_IGNORE), "MPI_Wait on the Ibarrier");
    CHECK(peer == rank || got == peer, "message from %d: %d", peer, got);
    MPI_Comm_free(&d);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Op firstop;
    MPI_Op_create(first, 0, &firstop);
    for (int round = 0; round < 5; round++)
        round_of_16(round, firstop);
    two_hundred();
    across_blocking();
    layouts();
    fresh_start();
    MPI_Op_free(&firstop);
    int rc = check_finish("coll_nb_many");
    MPI_Finalize();
    return rc;
}
