/*
 * coll_all: every blocking collective beyond the basic four, on three communicators
 * whose ranks are laid out differently over the sites: MPI_COMM_WORLD, world reversed
 * (split with key -rank) and the odd/even halves (split by rank parity).
 *  - Gather, Gatherv, Scatter, Scatterv from every root, with MPI_IN_PLACE at the root
 *    once per root; per-rank counts differ in the v forms (rank r: r % 3 + 1 elements,
 *    one rank with 0), with gaps between blocks.
 *  - Allgather, Allgatherv (also in place), Alltoall, Alltoallv (per-pair counts), and
 *    Alltoallw with a different datatype per peer (MPI_INT vs MPI_SHORT_INT pairs).
 *  - Reduce_scatter_block, Reduce_scatter (MPI_SUM, in place too), Scan, Exscan with a
 *    predefined op and with a user-defined non-commutative op: composition of affine
 *    maps x -> a*x + b (mod 46337), whose result depends on the order of ranks.
 *  - Reduce and Allreduce with the same non-commutative op, and with a commutative
 *    user op (integer max), and MPI_Reduce_local.
 *  - Large sizes: Alltoall with 64 KiB per pair and Gather with 300 KiB per rank
 *    (cross-site rendezvous path).
 * Every value is a function of (rank, index), so each check knows what to expect.
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define P 46337LL /* products of two residues fit in an int */

static int wrank;

typedef struct {
    int a, b; /* travels as MPI_2INT */
} affine;

/* inout = in o inout (apply inout first, then in): (in o io)(x) = in.a*(io.a*x+io.b)+in.b */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        long long a = (long long)x[i].a * y[i].a % P, b = ((long long)x[i].a * y[i].b + x[i].b) % P;
        y[i].a = (int)a;
        y[i].b = (int)b;
    }
}

static void imax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] = x[i] > y[i] ? x[i] : y[i];
}

static affine aff_of(int r, int i) { return (affine){(r * 7 + i * 3) % 1000 + 2, (r * 13 + i + 1) % P}; }

/* r0 o r1 o ... o r(k-1), by the MPI rule (inout = in op inout, left to right) */
static affine aff_prefix(int k, int i)
{
    affine acc = aff_of(k - 1, i);
    for (int r = k - 2; r >= 0; r--) {
        affine x = aff_of(r, i);
        int one = 1;
        compose(&x, &acc, &one, NULL);
    }
    return acc;
}

static int val(int r, int i) { return r * 1000 + i; }

static void rooted(MPI_Comm comm, const char *cn)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r == size / 2 && size > 1 ? 0 : r % 3 + 1;
        displs[r] = total + r; /* a gap of one element after each block */
        total += counts[r] + 1;
    }
    int *big = malloc(sizeof(int) * (total + 8));
    int mine[4], got[4];
    for (int root = 0; root < size; root++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            /* Gather */
            for (int i = 0; i < 4; i++)
                mine[i] = val(rank, i);
            for (int i = 0; i < total + 8; i++)
                big[i] = -1;
            if (inplace && rank == root)
                for (int i = 0; i < 3; i++)
                    big[rank * 3 + i] = val(rank, i);
            MPI_Gather(inplace && rank == root ? MPI_IN_PLACE : mine, 3, MPI_INT, big, 3, MPI_INT,
                       root, comm);
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < 3; i++)
                        CHECK(big[r * 3 + i] == val(r, i), "%s Gather root %d from %d[%d]: %d", cn,
                              root, r, i, big[r * 3 + i]);
            /* Gatherv with holes */
            for (int i = 0; i < total + 8; i++)
                big[i] = -1;
            if (inplace && rank == root)
                for (int i = 0; i < counts[rank]; i++)
                    big[displs[rank] + i] = val(rank, i);
            MPI_Gatherv(inplace && rank == root ? MPI_IN_PLACE : mine, counts[rank], MPI_INT, big,
                        counts, displs, MPI_INT, root, comm);
            if (rank == root)
                for (int r = 0; r < size; r++) {
                    for (int i = 0; i < counts[r]; i++)
                        CHECK(big[displs[r] + i] == val(r, i), "%s Gatherv root %d from %d[%d]",
                              cn, root, r, i);
                    CHECK(big[displs[r] + counts[r]] == -1, "%s Gatherv wrote into a gap", cn);
                }
            /* Scatter and Scatterv */
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < 3; i++)
                        big[r * 3 + i] = val(r, i) + root;
            for (int i = 0; i < 4; i++)
                got[i] = -7;
            MPI_Scatter(big, 3, MPI_INT, inplace && rank == root ? MPI_IN_PLACE : got, 3, MPI_INT,
                        root, comm);
            if (!(inplace && rank == root))
                for (int i = 0; i < 3; i++)
                    CHECK(got[i] == val(rank, i) + root, "%s Scatter root %d [%d]=%d", cn, root, i,
                          got[i]);
            CHECK(got[3] == -7, "%s Scatter wrote past the count", cn);
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < counts[r]; i++)
                        big[displs[r] + i] = val(r, i) - root;
            for (int i = 0; i < 4; i++)
                got[i] = -7;
            MPI_Scatterv(big, counts, displs, MPI_INT, inplace && rank == root ? MPI_IN_PLACE : got,
                         counts[rank], MPI_INT, root, comm);
            if (!(inplace && rank == root))
                for (int i = 0; i < counts[rank]; i++)
                    CHECK(got[i] == val(rank, i) - root, "%s Scatterv root %d [%d]", cn, root, i);
            CHECK(got[counts[rank]] == -7, "%s Scatterv wrote past the count", cn);
        }
    }
    free(big);
    free(counts);
    free(displs);
}

static void everyone(MPI_Comm comm, const char *cn)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (r + 1) % 3;
        displs[r] = total;
        total += counts[r] + 2;
    }
    int *all = malloc(sizeof(int) * (total + 3 * size + 1));
    int mine[3] = {val(rank, 0), val(rank, 1), val(rank, 2)};
    /* Allgather, also in place */
    for (int inplace = 0; inplace < 2; inplace++) {
        for (int i = 0; i < 3 * size; i++)
            all[i] = inplace && i / 3 == rank ? val(rank, i % 3) : -1;
        MPI_Allgather(inplace ? MPI_IN_PLACE : mine, 3, MPI_INT, all, 3, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < 3; i++)
                CHECK(all[r * 3 + i] == val(r, i), "%s Allgather%s [%d][%d]", cn,
                      inplace ? " in place" : "", r, i);
        for (int i = 0; i < total; i++)
            all[i] = -1;
        if (inplace)
            for (int i = 0; i < counts[rank]; i++)
                all[displs[rank] + i] = val(rank, i);
        MPI_Allgatherv(inplace ? MPI_IN_PLACE : mine, counts[rank], MPI_INT, all, counts, displs,
                       MPI_INT, comm);
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < counts[r]; i++)
                CHECK(all[displs[r] + i] == val(r, i), "%s Allgatherv%s [%d][%d]", cn,
                      inplace ? " in place" : "", r, i);
            CHECK(all[displs[r] + counts[r]] == -1, "%s Allgatherv wrote into a gap", cn);
        }
    }
    /* Alltoall (also in place) and Alltoallv with per-pair counts */
    int *sb = malloc(sizeof(int) * 4 * size), *rb = malloc(sizeof(int) * 4 * size);
    for (int inplace = 0; inplace < 2; inplace++) {
        for (int j = 0; j < size; j++)
            for (int i = 0; i < 2; i++) {
                sb[j * 2 + i] = rank * 100000 + j * 10 + i;
                rb[j * 2 + i] = inplace ? sb[j * 2 + i] : -1;
            }
        MPI_Alltoall(inplace ? MPI_IN_PLACE : sb, 2, MPI_INT, rb, 2, MPI_INT, comm);
        for (int j = 0; j < size; j++)
            for (int i = 0; i < 2; i++)
                CHECK(rb[j * 2 + i] == j * 100000 + rank * 10 + i, "%s Alltoall%s from %d [%d]=%d",
                      cn, inplace ? " in place" : "", j, i, rb[j * 2 + i]);
    }
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int so = 0, ro = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = (rank + j) % 4; /* what I send j; j sends me (j + rank) % 4 too */
        rc[j] = (j + rank) % 4;
        sd[j] = so;
        rd[j] = ro + 1;
        so += sc[j];
        ro += rc[j] + 1;
    }
    int *sv = malloc(sizeof(int) * (so + 1)), *rv = malloc(sizeof(int) * (ro + 2));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < sc[j]; i++)
            sv[sd[j] + i] = rank * 1000 + j * 10 + i;
    for (int i = 0; i < ro + 2; i++)
        rv[i] = -1;
    MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, comm);
    for (int j = 0; j < size; j++) {
        for (int i = 0; i < rc[j]; i++)
            CHECK(rv[rd[j] + i] == j * 1000 + rank * 10 + i, "%s Alltoallv from %d [%d]", cn, j, i);
        CHECK(rv[rd[j] - 1] == -1, "%s Alltoallv wrote into a gap", cn);
    }
    /* Alltoallw: odd peers get MPI_SHORT_INT pairs, even peers MPI_INT, byte displacements */
    struct si {
        short s;
        int i;
    };
    char *wsb = malloc(sizeof(struct si) * 2 * size), *wrb = malloc(sizeof(struct si) * 2 * size);
    int *wc = malloc(sizeof(int) * size), *wd = malloc(sizeof(int) * size);
    MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * size);
    memset(wrb, 0, sizeof(struct si) * 2 * size);
    for (int j = 0; j < size; j++) {
        wc[j] = 2;
        wd[j] = (int)(j * 2 * sizeof(struct si));
        wt[j] = (j % 2) == (rank % 2) ? MPI_SHORT_INT : MPI_INT;
        /* the pair type is used when both ends agree (same parity), so signatures match */
        if (wt[j] == MPI_INT) {
            int *p = (int *)(wsb + wd[j]);
            p[0] = rank * 10 + j;
            p[1] = -(rank * 10 + j);
        } else {
            struct si *p = (struct si *)(wsb + wd[j]);
            p[0].s = (short)rank;
            p[0].i = j;
            p[1].s = (short)j;
            p[1].i = rank;
        }
    }
    MPI_Alltoallw(wsb, wc, wd, wt, wrb, wc, wd, wt, comm);
    for (int j = 0; j < size; j++) {
        if (wt[j] == MPI_INT) {
            int *p = (int *)(wrb + wd[j]);
            CHECK(p[0] == j * 10 + rank && p[1] == -(j * 10 + rank), "%s Alltoallw int from %d",
                  cn, j);
        } else {
            struct si *p = (struct si *)(wrb + wd[j]);
            CHECK(p[0].s == j && p[0].i == rank && p[1].s == rank && p[1].i == j,
                  "%s Alltoallw short_int from %d", cn, j);
        }
    }
    free(wsb);
    free(wrb);
    free(wc);
    free(wd);
    free(wt);
    free(sv);
    free(rv);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sb);
    free(rb);
    free(all);
    free(counts);
    free(displs);
}

static void reductions(MPI_Comm comm, const char *cn, MPI_Datatype afft, MPI_Op aop,
                       MPI_Op maxop)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Reduce_scatter_block and Reduce_scatter with SUM, in place too */
    int *in = malloc(sizeof(int) * 3 * size), *out = malloc(sizeof(int) * 3 * size);
    int *rcounts = malloc(sizeof(int) * size);
    for (int inplace = 0; inplace < 2; inplace++) {
        for (int i = 0; i < 2 * size; i++)
            in[i] = rank + i;
        MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : in, inplace ? in : out, 2, MPI_INT,
                                 MPI_SUM, comm);
        int *res = inplace ? in : out;
        for (int i = 0; i < 2; i++) {
            int k = rank * 2 + i;
            CHECK(res[i] == size * (size - 1) / 2 + size * k, "%s Reduce_scatter_block [%d]=%d",
                  cn, i, res[i]);
        }
        int tot = 0;
        for (int r = 0; r < size; r++) {
            rcounts[r] = r % 2 + 1;
            tot += rcounts[r];
        }
        for (int i = 0; i < tot; i++)
            in[i] = rank * 2 + i;
        int off = 0;
        for (int r = 0; r < rank; r++)
            off += rcounts[r];
        MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : in, inplace ? in : out, rcounts, MPI_INT,
                           MPI_SUM, comm);
        res = inplace ? in : out;
        for (int i = 0; i < rcounts[rank]; i++)
            CHECK(res[i] == size * (size - 1) + size * (off + i), "%s Reduce_scatter [%d]=%d", cn,
                  i, res[i]);
    }
    /* Scan, Exscan with SUM and with the non-commutative op */
    int x = rank + 1, s = -1;
    MPI_Scan(&x, &s, 1, MPI_INT, MPI_SUM, comm);
    CHECK(s == (rank + 1) * (rank + 2) / 2, "%s Scan sum %d", cn, s);
    s = -1;
    MPI_Exscan(&x, &s, 1, MPI_INT, MPI_SUM, comm);
    if (rank > 0)
        CHECK(s == rank * (rank + 1) / 2, "%s Exscan sum %d", cn, s);
    affine a[2] = {aff_of(rank, 0), aff_of(rank, 1)}, r2[2];
    MPI_Scan(a, r2, 2, afft, aop, comm);
    for (int i = 0; i < 2; i++) {
        affine e = aff_prefix(rank + 1, i);
        CHECK(r2[i].a == e.a && r2[i].b == e.b, "%s Scan non-commutative [%d]", cn, i);
    }
    r2[0] = a[0];
    r2[1] = a[1];
    MPI_Scan(MPI_IN_PLACE, r2, 2, afft, aop, comm);
    for (int i = 0; i < 2; i++) {
        affine e = aff_prefix(rank + 1, i);
        CHECK(r2[i].a == e.a && r2[i].b == e.b, "%s Scan in place non-commutative [%d]", cn, i);
    }
    MPI_Exscan(a, r2, 2, afft, aop, comm);
    for (int i = 0; i < 2 && rank > 0; i++) {
        affine e = aff_prefix(rank, i);
        CHECK(r2[i].a == e.a && r2[i].b == e.b, "%s Exscan non-commutative [%d]", cn, i);
    }
    /* Reduce (every root) and Allreduce with the non-commutative op */
    for (int root = 0; root < size; root++) {
        r2[0].a = r2[1].a = -1;
        MPI_Reduce(a, r2, 2, afft, aop, root, comm);
        for (int i = 0; i < 2 && rank == root; i++) {
            affine e = aff_prefix(size, i);
            CHECK(r2[i].a == e.a && r2[i].b == e.b, "%s Reduce non-commutative root %d", cn,
                  root);
        }
    }
    MPI_Allreduce(a, r2, 2, afft, aop, comm);
    for (int i = 0; i < 2; i++) {
        affine e = aff_prefix(size, i);
        CHECK(r2[i].a == e.a && r2[i].b == e.b, "%s Allreduce non-commutative [%d]", cn, i);
    }
    /* commutative user op, in place */
    int m[2] = {rank * 3, -rank};
    MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_INT, maxop, comm);
    CHECK(m[0] == (size - 1) * 3 && m[1] == 0, "%s Allreduce user max %d %d", cn, m[0], m[1]);
    /* Reduce_local with a user op */
    affine l0 = aff_of(1, 0), l1 = aff_of(2, 0);
    MPI_Reduce_local(&l0, &l1, 1, afft, aop);
    affine e = aff_of(2, 0);
    int one = 1;
    affine t = aff_of(1, 0);
    compose(&t, &e, &one, NULL);
    CHECK(l1.a == e.a && l1.b == e.b, "%s Reduce_local user op", cn);
    int comm_flag = -1;
    MPI_Op_commutative(aop, &comm_flag);
    CHECK(comm_flag == 0, "MPI_Op_commutative of a non-commutative op: %d", comm_flag);
    free(in);
    free(out);
    free(rcounts);
}

static void large(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int per = 16384; /* 64 KiB of ints per pair */
    int *sb = malloc(sizeof(int) * per * size), *rb = malloc(sizeof(int) * per * size);
    for (int j = 0; j < size; j++)
        for (int i = 0; i < per; i++)
            sb[j * per + i] = rank ^ (j << 8) ^ (i << 12);
    MPI_Alltoall(sb, per, MPI_INT, rb, per, MPI_INT, comm);
    int bad = 0;
    for (int j = 0; j < size; j++)
        for (int i = 0; i < per; i++)
            bad += rb[j * per + i] != (j ^ (rank << 8) ^ (i << 12));
    CHECK(bad == 0, "large Alltoall: %d wrong elements", bad);
    int g = 300 * 1024 / 4;
    int *mine = malloc(sizeof(int) * g), *all = rank == 0 ? malloc(sizeof(int) * g * size) : NULL;
    for (int i = 0; i < g; i++)
        mine[i] = rank * 7 + i;
    MPI_Gather(mine, g, MPI_INT, all, g, MPI_INT, 0, comm);
    bad = 0;
    for (int r = 0; rank == 0 && r < size; r++)
        for (int i = 0; i < g; i++)
            bad += all[r * g + i] != r * 7 + i;
    CHECK(bad == 0, "large Gather: %d wrong elements", bad);
    free(sb);
    free(rb);
    free(mine);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype afft = MPI_2INT;
    MPI_Op aop, maxop;
    MPI_Op_create(compose, 0, &aop);
    MPI_Op_create(imax, 1, &maxop);

    MPI_Comm rev, half;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -wrank, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    MPI_Comm comms[3] = {MPI_COMM_WORLD, rev, half};
    const char *names[3] = {"world", "reversed", "odd/even"};
    for (int k = 0; k < 3; k++) {
        rooted(comms[k], names[k]);
        everyone(comms[k], names[k]);
        reductions(comms[k], names[k], afft, aop, maxop);
    }
    large(MPI_COMM_WORLD);
    large(rev);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MPI_Op_free(&aop);
    MPI_Op_free(&maxop);
    int rc = check_finish("coll_all");
    MPI_Finalize();
    return rc;
}
