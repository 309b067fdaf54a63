/*
 * comm_inter: intercommunicators.
 *  - Two groups by rank parity (each spans the sites in the test layouts), joined with
 *    MPI_Intercomm_create over MPI_COMM_WORLD; Comm_test_inter, sizes, remote group.
 *  - Point-to-point across the groups: local rank i sends to remote rank i % remote size
 *    (small and 300 KiB messages: eager and rendezvous); each rank receives exactly the
 *    messages aimed at it with MPI_ANY_SOURCE, and the status names the remote rank.
 *  - Collectives: Barrier; Bcast rooted in either group (MPI_ROOT / MPI_PROC_NULL / the
 *    root's remote rank); Allreduce (each group gets the sum over the other group) and a
 *    non-commutative user op; Reduce to a root of the other group; Gather, Scatter,
 *    Allgather, Alltoall, Alltoallw, Reduce_scatter(_block); Ibcast.
 *  - Comm_dup of the intercommunicator (traffic on both stays apart), and
 *    Intercomm_merge with high = group: the even group first, ranks in group order; with
 *    the same high everywhere: a valid intracommunicator of everyone.
 */
#include "check.h"
#include <string.h>

static int wrank, wsize;

typedef struct {
    int a, b;
} affine; /* x -> a*x + b mod 46337, composed in rank order: non-commutative */

static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        long long a = (long long)x[i].a * y[i].a % 46337;
        long long b = ((long long)x[i].a * y[i].b + x[i].b) % 46337;
        y[i].a = (int)a;
        y[i].b = (int)b;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        int rc = check_finish("comm_inter");
        MPI_Finalize();
        return rc;
    }
    int grp = wrank % 2;
    MPI_Comm half, ic, dup, merged, merged2;
    MPI_Comm_split(MPI_COMM_WORLD, grp, wrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, grp ? 0 : 1, 99, &ic);
    int flag, lsize, rsize, lrank;
    MPI_Comm_test_inter(ic, &flag);
    CHECK(flag, "Comm_test_inter false");
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Comm_rank(ic, &lrank);
    int n0 = (wsize + 1) / 2, n1 = wsize / 2;
    CHECK(lsize == (grp ? n1 : n0) && rsize == (grp ? n0 : n1), "sizes %d %d", lsize, rsize);
    CHECK(lrank == wrank / 2, "rank %d", lrank);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(ic, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int r = 0; r < rsize; r++) {
        int w;
        MPI_Group_translate_ranks(rg, 1, &r, wg, &w);
        CHECK(w == 2 * r + (1 - grp), "remote rank %d is world %d", r, w);
    }
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);

    /* point-to-point: i -> i % rsize; receive what is aimed at me */
    int big = 300 * 1024 / 4;
    int *out = malloc(sizeof(int) * big), *in = malloc(sizeof(int) * big);
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? big : 4;
        for (int i = 0; i < n; i++)
            out[i] = wrank * 7 + i;
        MPI_Request sr;
        MPI_Isend(out, n, MPI_INT, lrank % rsize, 5 + pass, ic, &sr);
        int expect = 0; /* remote ranks j with j % lsize == lrank send to me */
        for (int j = 0; j < rsize; j++)
            expect += j % lsize == lrank;
        for (int k = 0; k < expect; k++) {
            MPI_Status st;
            MPI_Recv(in, n, MPI_INT, MPI_ANY_SOURCE, 5 + pass, ic, &st);
            int src = st.MPI_SOURCE, srcw = 2 * src + (1 - grp), bad = 0;
            CHECK(src >= 0 && src < rsize && src % lsize == lrank, "message from remote %d", src);
            for (int i = 0; i < n; i++)
                bad += in[i] != srcw * 7 + i;
            CHECK(bad == 0, "%d wrong elements from remote %d (n=%d)", bad, src, n);
        }
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
    }

    /* collectives */
    MPI_Barrier(ic);
    for (int rootgrp = 0; rootgrp < 2; rootgrp++) {
        int v = grp == rootgrp && lrank == 0 ? 4242 + rootgrp : -1;
        int root = grp == rootgrp ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Bcast(&v, 1, MPI_INT, root, ic);
        if (grp != rootgrp)
            CHECK(v == 4242 + rootgrp, "inter Bcast from group %d: %d", rootgrp, v);
        else if (lrank != 0)
            CHECK(v == -1, "inter Bcast wrote into the root group");
    }
    int mine = wrank, sum = -1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, ic);
    int want = 0;
    for (int w = 1 - grp; w < wsize; w += 2)
        want += w;
    CHECK(sum == want, "inter Allreduce %d, expected %d", sum, want);
    MPI_Op op;
    MPI_Op_create(compose, 0, &op);
    affine x = {wrank + 2, wrank * 3 + 1}, r = {-1, -1}, e = {1, 0};
    MPI_Allreduce(&x, &r, 1, MPI_2INT, op, ic);
    for (int j = rsize - 1; j >= 0; j--) { /* r0 o r1 o ... over the remote group */
        int w = 2 * j + (1 - grp), one = 1;
        affine t = {w + 2, w * 3 + 1};
        compose(&t, &e, &one, NULL);
    }
    CHECK(r.a == e.a && r.b == e.b, "inter Allreduce non-commutative (%d,%d) vs (%d,%d)", r.a,
          r.b, e.a, e.b);
    MPI_Op_free(&op);
    int red = -1;
    int root = grp == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Reduce(&mine, &red, 1, MPI_INT, MPI_MAX, root, ic);
    if (grp == 1 && lrank == 0)
        CHECK(red == 2 * (n0 - 1), "inter Reduce max %d", red);

    /* gather to / scatter from a root in group 0, allgather, alltoall(v,w) */
    {
        int *blk = malloc(sizeof(int) * 2 * (rsize + lsize)), *got = malloc(sizeof(int) * 2 * rsize);
        int two[2] = {wrank * 10, wrank * 10 + 1};
        int rt = grp == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        for (int i = 0; i < 2 * rsize; i++)
            got[i] = -1;
        MPI_Gather(two, 2, MPI_INT, got, 2, MPI_INT, rt, ic);
        if (rt == MPI_ROOT)
            for (int r = 0; r < rsize; r++)
                CHECK(got[2 * r] == (2 * r + 1) * 10 && got[2 * r + 1] == (2 * r + 1) * 10 + 1,
                      "inter Gather from remote %d: %d", r, got[2 * r]);
        int sc = -1;
        for (int r = 0; r < rsize; r++)
            blk[r] = 500 + r;
        MPI_Scatter(blk, 1, MPI_INT, &sc, 1, MPI_INT, rt, ic);
        if (grp == 1)
            CHECK(sc == 500 + lrank, "inter Scatter got %d", sc);
        MPI_Allgather(two, 2, MPI_INT, got, 2, MPI_INT, ic);
        for (int r = 0; r < rsize; r++) {
            int w = 2 * r + (1 - grp);
            CHECK(got[2 * r] == w * 10 && got[2 * r + 1] == w * 10 + 1,
                  "inter Allgather from remote %d", r);
        }
        for (int r = 0; r < rsize; r++)
            blk[r] = wrank * 100 + r;
        MPI_Alltoall(blk, 1, MPI_INT, got, 1, MPI_INT, ic);
        for (int r = 0; r < rsize; r++)
            CHECK(got[r] == (2 * r + (1 - grp)) * 100 + lrank, "inter Alltoall from %d: %d", r,
                  got[r]);
        int *ones = malloc(sizeof(int) * rsize), *dis = malloc(sizeof(int) * rsize);
        MPI_Datatype *ts = malloc(sizeof(MPI_Datatype) * rsize);
        for (int r = 0; r < rsize; r++) {
            ones[r] = 1;
            dis[r] = r * (int)sizeof(int);
            ts[r] = MPI_INT;
            got[r] = -1;
        }
        MPI_Alltoallw(blk, ones, dis, ts, got, ones, dis, ts, ic);
        for (int r = 0; r < rsize; r++)
            CHECK(got[r] == (2 * r + (1 - grp)) * 100 + lrank, "inter Alltoallw from %d", r);
        /* reduce-scatter: each group reduces vectors of T elements (T the same for both
         * groups, MPI 3.1 §5.10.1) and gets the other group's result, split by its own
         * counts */
        int T = 7;
        int *rsv = malloc(sizeof(int) * T), *rsr = malloc(sizeof(int) * (T + 1));
        int *rcn = malloc(sizeof(int) * lsize);
        for (int i = 0; i < T; i++)
            rsv[i] = wrank + i;
        for (int r = 0; r < lsize; r++)
            rcn[r] = T / lsize + (r < T % lsize);
        MPI_Reduce_scatter(rsv, rsr, rcn, MPI_INT, MPI_SUM, ic);
        int off = 0, sumw = 0;
        for (int r = 0; r < lrank; r++)
            off += rcn[r];
        for (int j = 0; j < rsize; j++)
            sumw += 2 * j + (1 - grp);
        for (int i = 0; i < rcn[lrank]; i++)
            CHECK(rsr[i] == sumw + rsize * (off + i), "inter Reduce_scatter [%d] = %d", i, rsr[i]);
        if (lsize == rsize) { /* the block form needs groups of one size */
            int rsb = -1;
            MPI_Reduce_scatter_block(rsv, &rsb, 1, MPI_INT, MPI_SUM, ic);
            CHECK(rsb == sumw + rsize * lrank, "inter Reduce_scatter_block %d", rsb);
        }
        free(rsv);
        free(rsr);
        free(rcn);
        MPI_Request q;
        int ib = grp == 1 && lrank == 0 ? 77 : -1;
        MPI_Ibcast(&ib, 1, MPI_INT, grp == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, ic, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (grp == 0)
            CHECK(ib == 77, "inter Ibcast %d", ib);
        free(ones);
        free(dis);
        free(ts);
        free(blk);
        free(got);
    }

    /* dup keeps its own traffic apart */
    MPI_Comm_dup(ic, &dup);
    int a = wrank, b = -1, c2 = -1;
    if (lrank == 0) {
        MPI_Request q[4];
        int a2 = wrank + 1000;
        MPI_Irecv(&b, 1, MPI_INT, 0, 1, dup, &q[0]);
        MPI_Irecv(&c2, 1, MPI_INT, 0, 1, ic, &q[1]);
        MPI_Isend(&a, 1, MPI_INT, 0, 1, ic, &q[2]);
        MPI_Isend(&a2, 1, MPI_INT, 0, 1, dup, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        CHECK(c2 == 1 - grp && b == 1 - grp + 1000, "dup traffic mixed: %d %d", c2, b);
    }
    MPI_Comm_free(&dup);

    /* merge: the even group (high = 0) first */
    MPI_Intercomm_merge(ic, grp, &merged);
    int mr, ms;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(ms == wsize && mr == (grp ? n0 + lrank : lrank), "merged rank %d size %d", mr, ms);
    int s2 = -1;
    MPI_Allreduce(&wrank, &s2, 1, MPI_INT, MPI_SUM, merged);
    CHECK(s2 == wsize * (wsize - 1) / 2, "merged Allreduce %d", s2);
    MPI_Intercomm_merge(ic, 0, &merged2);
    MPI_Comm_size(merged2, &ms);
    int s3 = -1;
    MPI_Allreduce(&wrank, &s3, 1, MPI_INT, MPI_SUM, merged2);
    CHECK(ms == wsize && s3 == s2, "second merge %d %d", ms, s3);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&merged2);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
    free(out);
    free(in);
    int rc = check_finish("comm_inter");
    MPI_Finalize();
    return rc;
}
