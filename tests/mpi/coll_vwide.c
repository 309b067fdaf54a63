/*
 * coll_vwide: the v/w collectives through their large-count (_c) forms and their int forms,
 * with counts that differ per rank, a strided send type (ints 8 bytes apart) received as
 * plain ints, MPI_IN_PLACE, and every value checked: Gatherv, Scatterv, Allgatherv,
 * Alltoallv, Alltoallw, Reduce_scatter_c, Neighbor_alltoallv_c, Neighbor_allgatherv_c and
 * Neighbor_alltoallw_c on a periodic ring; and Gatherv_c, Scatterv_c, Allgatherv_c,
 * Alltoallv_c and Alltoallw_c on an intercommunicator of the even and the odd ranks, with
 * its non-v forms (Gather_c, Scatter_c, Allgather_c, Alltoall_c) and Reduce_scatter_c and
 * Reduce_scatter_block_c (groups of unequal size). Run with ISTHMUS_VENDOR_MAX set low, the site
 * phases take the roads of counts beyond INT_MAX (point-to-point, pieces, covering types)
 * with small data.
 * Argument "mix": odd ranks call the int forms and even ranks the _c forms of the same
 * collective (only for communicators that span sites: on one site the int form goes to the
 * vendor whole, docs/design.md "Large counts"). Skipped, saying so, under MPI < 4.0.
 */
#include "check.h"
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
static int use_c = 1;

static int val(int from, int to, int i) { return from * 1000003 + to * 1009 + i; }
static int cnt(int r) { return 50 + 37 * r; }              /* rank r's block */
static int pair(int from, int to) { return (from + 1) * (to + 2) + 5; } /* all-to-all */

/* n ints 8 bytes apart: the send side's type */
static MPI_Datatype strided(void)
{
    MPI_Datatype t;
    MPI_Type_create_resized(MPI_INT, 0, 8, &t);
    MPI_Type_commit(&t);
    return t;
}

static int *ints(int n) { return calloc((size_t)n + 1, sizeof(int)); }

static void gatherv(int rank, int size, MPI_Datatype st)
{
    int root = size - 1, total = 0;
    int n = cnt(rank), *sb = ints(2 * n), *rb = NULL;
    MPI_Count *rc = calloc((size_t)size, sizeof *rc);
    MPI_Aint *di = calloc((size_t)size, sizeof *di);
    int *rci = calloc((size_t)size, sizeof *rci), *dii = calloc((size_t)size, sizeof *dii);
    for (int i = 0; i < n; i++)
        sb[2 * i] = val(rank, root, i);
    for (int r = size - 1; r >= 0; r--) { /* blocks in reverse rank order */
        rc[r] = rci[r] = cnt(r);
        di[r] = dii[r] = total;
        total += cnt(r);
    }
    for (int pass = 0; pass < 2; pass++) {
        int in_place = pass == 1 && rank == root;
        if (rank == root) {
            free(rb);
            rb = ints(total);
            if (in_place)
                for (int i = 0; i < n; i++)
                    rb[di[root] + i] = val(root, root, i);
        }
        const void *s = in_place ? MPI_IN_PLACE : sb;
        if (use_c)
            CHECK_RC(MPI_Gatherv_c(s, n, st, rb, rc, di, MPI_INT, root, MPI_COMM_WORLD),
                     "Gatherv_c");
        else
            CHECK_RC(MPI_Gatherv(s, n, st, rb, rci, dii, MPI_INT, root, MPI_COMM_WORLD),
                     "Gatherv");
        for (int r = 0; rank == root && r < size; r++)
            for (int i = 0; i < cnt(r); i++)
                CHECK(rb[di[r] + i] == val(r, root, i), "gatherv pass %d: from %d [%d] = %d",
                      pass, r, i, rb[di[r] + i]);
    }
    free(sb);
    free(rb);
    free(rc);
    free(di);
    free(rci);
    free(dii);
}

static void scatterv(int rank, int size, MPI_Datatype st)
{
    int root = 0, total = 0;
    MPI_Count *sc = calloc((size_t)size, sizeof *sc);
    MPI_Aint *di = calloc((size_t)size, sizeof *di);
    int *sci = calloc((size_t)size, sizeof *sci), *dii = calloc((size_t)size, sizeof *dii);
    for (int r = 0; r < size; r++) {
        sc[r] = sci[r] = cnt(r);
        di[r] = dii[r] = total;
        total += cnt(r);
    }
    int *sb = ints(2 * total), n = cnt(rank), *rb = ints(n);
    for (int r = 0; rank == root && r < size; r++)
        for (int i = 0; i < cnt(r); i++)
            sb[2 * (di[r] + i)] = val(root, r, i);
    if (use_c)
        CHECK_RC(MPI_Scatterv_c(sb, sc, di, st, rb, n, MPI_INT, root, MPI_COMM_WORLD),
                 "Scatterv_c");
    else
        CHECK_RC(MPI_Scatterv(sb, sci, dii, st, rb, n, MPI_INT, root, MPI_COMM_WORLD),
                 "Scatterv");
    for (int i = 0; i < n; i++)
        CHECK(rb[i] == val(root, rank, i), "scatterv [%d] = %d", i, rb[i]);
    free(sb);
    free(rb);
    free(sc);
    free(di);
    free(sci);
    free(dii);
}

static void allgatherv(int rank, int size, MPI_Datatype st)
{
    int total = 0, n = cnt(rank), *sb = ints(2 * n);
    MPI_Count *rc = calloc((size_t)size, sizeof *rc);
    MPI_Aint *di = calloc((size_t)size, sizeof *di);
    int *rci = calloc((size_t)size, sizeof *rci), *dii = calloc((size_t)size, sizeof *dii);
    for (int r = 0; r < size; r++) {
        rc[r] = rci[r] = cnt(r);
        di[r] = dii[r] = total + 3 * r; /* gaps between blocks stay as they were */
        total += cnt(r) + 3;
    }
    for (int i = 0; i < n; i++)
        sb[2 * i] = val(rank, -1, i);
    for (int pass = 0; pass < 2; pass++) {
        int *rb = ints(total + 3 * size);
        for (int i = 0; i < total + 3 * size; i++)
            rb[i] = -7;
        if (pass)
            for (int i = 0; i < n; i++)
                rb[di[rank] + i] = val(rank, -1, i);
        const void *s = pass ? MPI_IN_PLACE : sb;
        if (use_c)
            CHECK_RC(MPI_Allgatherv_c(s, n, st, rb, rc, di, MPI_INT, MPI_COMM_WORLD),
                     "Allgatherv_c");
        else
            CHECK_RC(MPI_Allgatherv(s, n, st, rb, rci, dii, MPI_INT, MPI_COMM_WORLD),
                     "Allgatherv");
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < cnt(r); i++)
                CHECK(rb[di[r] + i] == val(r, -1, i), "allgatherv pass %d: from %d [%d] = %d",
                      pass, r, i, rb[di[r] + i]);
            CHECK(rb[di[r] + cnt(r)] == -7, "allgatherv pass %d: the gap after %d was written",
                  pass, r);
        }
        free(rb);
    }
    free(sb);
    free(rc);
    free(di);
    free(rci);
    free(dii);
}

/* Alltoallv with the strided type on the send side, then Alltoallw with the types mixed
 * per peer (strided to even ranks, plain to odd ones) and byte displacements. */
static void alltoall(int rank, int size, MPI_Datatype st)
{
    MPI_Count *sc = calloc((size_t)size, sizeof *sc), *rc = calloc((size_t)size, sizeof *rc);
    MPI_Aint *sd = calloc((size_t)size, sizeof *sd), *rd = calloc((size_t)size, sizeof *rd);
    MPI_Aint *sdb = calloc((size_t)size, sizeof *sdb), *rdb = calloc((size_t)size, sizeof *rdb);
    int *sci = calloc((size_t)size, sizeof *sci), *rci = calloc((size_t)size, sizeof *rci);
    int *sdi = calloc((size_t)size, sizeof *sdi), *rdi = calloc((size_t)size, sizeof *rdi);
    int *sdbi = calloc((size_t)size, sizeof *sdbi), *rdbi = calloc((size_t)size, sizeof *rdbi);
    MPI_Datatype *stw = calloc((size_t)size, sizeof *stw), *rtw = calloc((size_t)size, sizeof *rtw);
    int so = 0, ro = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = sci[j] = pair(rank, j);
        rc[j] = rci[j] = pair(j, rank);
        sd[j] = sdi[j] = so;
        rd[j] = rdi[j] = ro;
        so += pair(rank, j);
        ro += pair(j, rank);
        stw[j] = j % 2 ? MPI_INT : st;
        rtw[j] = MPI_INT;
    }
    int *sb = ints(2 * so), *rb = ints(ro);
    for (int pass = 0; pass < 2; pass++) {
        memset(sb, 0, sizeof(int) * 2 * (size_t)so);
        int bo = 0;
        for (int j = 0; j < size; j++) {
            int stride = pass == 0 || j % 2 == 0 ? 2 : 1; /* strided type: every other int */
            sdb[j] = sdbi[j] = (MPI_Aint)bo * (MPI_Aint)sizeof(int);
            for (int i = 0; i < pair(rank, j); i++)
                sb[pass ? bo + stride * i : 2 * (sd[j] + i)] = val(rank, j, i) + pass;
            bo += stride * pair(rank, j);
            rdb[j] = rdbi[j] = rd[j] * (MPI_Aint)sizeof(int);
        }
        memset(rb, 0, sizeof(int) * (size_t)ro);
        if (pass == 0 && use_c)
            CHECK_RC(MPI_Alltoallv_c(sb, sc, sd, st, rb, rc, rd, MPI_INT, MPI_COMM_WORLD),
                     "Alltoallv_c");
        else if (pass == 0)
            CHECK_RC(MPI_Alltoallv(sb, sci, sdi, st, rb, rci, rdi, MPI_INT, MPI_COMM_WORLD),
                     "Alltoallv");
        else if (use_c)
            CHECK_RC(MPI_Alltoallw_c(sb, sc, sdb, stw, rb, rc, rdb, rtw, MPI_COMM_WORLD),
                     "Alltoallw_c");
        else
            CHECK_RC(MPI_Alltoallw(sb, sci, sdbi, stw, rb, rci, rdbi, rtw, MPI_COMM_WORLD),
                     "Alltoallw");
        for (int j = 0; j < size; j++)
            for (int i = 0; i < pair(j, rank); i++)
                CHECK(rb[rd[j] + i] == val(j, rank, i) + pass, "alltoall%s from %d [%d] = %d",
                      pass ? "w" : "v", j, i, rb[rd[j] + i]);
    }
    free(sb);
    free(rb);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    free(sdb);
    free(rdb);
    free(sci);
    free(rci);
    free(sdi);
    free(rdi);
    free(sdbi);
    free(rdbi);
    free(stw);
    free(rtw);
}

static void reduce_scatter(int rank, int size)
{
    MPI_Count *rc = calloc((size_t)size, sizeof *rc);
    int total = 0;
    for (int r = 0; r < size; r++)
        total += (int)(rc[r] = cnt(r));
    int *sb = ints(total), *rb = ints(cnt(rank)), off = 0;
    for (int i = 0; i < total; i++)
        sb[i] = i * (rank + 1);
    for (int r = 0; r < rank; r++)
        off += cnt(r);
    CHECK_RC(MPI_Reduce_scatter_c(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
             "Reduce_scatter_c");
    for (int i = 0; i < cnt(rank); i++)
        CHECK(rb[i] == (off + i) * size * (size + 1) / 2, "reduce_scatter [%d] = %d", i, rb[i]);
    free(sb);
    free(rb);
    free(rc);
}

/* A periodic ring: the -1 neighbor's block, then the +1 neighbor's. */
static void neighbors(int rank, int size, MPI_Datatype st)
{
    MPI_Comm ring;
    int dims[1] = {size}, per[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &ring);
    int left = (rank - 1 + size) % size, right = (rank + 1) % size, nb[2] = {left, right};
    MPI_Count sc[2] = {pair(rank, left), pair(rank, right)};
    MPI_Count rc[2] = {pair(left, rank), pair(right, rank)};
    MPI_Aint sd[2] = {0, sc[0]}, rd[2] = {0, rc[0]};
    int *sb = ints(2 * (int)(sc[0] + sc[1])), *rb = ints((int)(rc[0] + rc[1]));
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < sc[k]; i++)
            sb[2 * (sd[k] + i)] = val(rank, nb[k], i);
    CHECK_RC(MPI_Neighbor_alltoallv_c(sb, sc, sd, st, rb, rc, rd, MPI_INT, ring),
             "Neighbor_alltoallv_c");
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < rc[k]; i++)
            CHECK(rb[rd[k] + i] == val(nb[k], rank, i), "neighbor_alltoallv from %d [%d] = %d",
                  nb[k], i, rb[rd[k] + i]);
    /* allgatherv: my block to both neighbors, theirs back */
    int n = cnt(rank);
    MPI_Count gc[2] = {cnt(left), cnt(right)};
    MPI_Aint gd[2] = {0, cnt(left)};
    int *gb = ints(cnt(left) + cnt(right)), *mine = ints(2 * n);
    for (int i = 0; i < n; i++)
        mine[2 * i] = val(rank, -2, i);
    CHECK_RC(MPI_Neighbor_allgatherv_c(mine, n, st, gb, gc, gd, MPI_INT, ring),
             "Neighbor_allgatherv_c");
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < gc[k]; i++)
            CHECK(gb[gd[k] + i] == val(nb[k], -2, i), "neighbor_allgatherv from %d [%d] = %d",
                  nb[k], i, gb[gd[k] + i]);
    /* alltoallw: byte displacements, plain ints both ways */
    MPI_Datatype t[2] = {MPI_INT, MPI_INT};
    MPI_Aint sdb[2] = {0, sc[0] * (MPI_Aint)sizeof(int)}, rdb[2] = {0, rc[0] * (MPI_Aint)sizeof(int)};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < sc[k]; i++)
            sb[sd[k] + i] = val(rank, nb[k], i) + 5;
    memset(rb, 0, sizeof(int) * (size_t)(rc[0] + rc[1]));
    CHECK_RC(MPI_Neighbor_alltoallw_c(sb, sc, sdb, t, rb, rc, rdb, t, ring),
             "Neighbor_alltoallw_c");
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < rc[k]; i++)
            CHECK(rb[rd[k] + i] == val(nb[k], rank, i) + 5,
                  "neighbor_alltoallw from %d [%d] = %d", nb[k], i, rb[rd[k] + i]);
    free(sb);
    free(rb);
    free(gb);
    free(mine);
    MPI_Comm_free(&ring);
}

/* The non-v forms and the reductions on the intercommunicator (K ints per block), in the
 * _c form or (mix, odd ranks) the int form: on an intercommunicator both take the same
 * road, so the groups need not agree. */
#define K 33
#define T 60 /* elements reduced: divisible by every group size up to 6 */
static void inter_uniform(MPI_Comm ic, int rank, int grp, int lrank, int rsize)
{
    int other = 1 - grp, lsize, *mine = ints(K), *all = ints(rsize * K + T);
    MPI_Comm_size(ic, &lsize);
    /* Gather_c to rank 0 of the even group */
    int root = grp == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    for (int i = 0; i < K; i++)
        mine[i] = val(rank, -5, i);
    CHECK_RC(use_c ? MPI_Gather_c(mine, K, MPI_INT, all, K, MPI_INT, root, ic)
                   : MPI_Gather(mine, K, MPI_INT, all, K, MPI_INT, root, ic),
             "inter Gather_c");
    for (int r = 0; root == MPI_ROOT && r < rsize; r++)
        for (int i = 0; i < K; i++)
            CHECK(all[r * K + i] == val(2 * r + other, -5, i), "inter Gather_c from %d [%d]", r,
                  i);
    /* Scatter_c from rank 0 of the odd group */
    root = grp == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    for (int r = 0; root == MPI_ROOT && r < rsize; r++)
        for (int i = 0; i < K; i++)
            all[r * K + i] = val(rank, 2 * r + other, i);
    memset(mine, 0, sizeof(int) * K);
    CHECK_RC(use_c ? MPI_Scatter_c(all, K, MPI_INT, mine, K, MPI_INT, root, ic)
                   : MPI_Scatter(all, K, MPI_INT, mine, K, MPI_INT, root, ic),
             "inter Scatter_c");
    for (int i = 0; grp == 0 && i < K; i++)
        CHECK(mine[i] == val(1, rank, i), "inter Scatter_c [%d] = %d", i, mine[i]);
    /* Allgather_c: every remote block */
    for (int i = 0; i < K; i++)
        mine[i] = val(rank, -6, i);
    CHECK_RC(use_c ? MPI_Allgather_c(mine, K, MPI_INT, all, K, MPI_INT, ic)
                   : MPI_Allgather(mine, K, MPI_INT, all, K, MPI_INT, ic),
             "inter Allgather_c");
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i < K; i++)
            CHECK(all[r * K + i] == val(2 * r + other, -6, i), "inter Allgather_c from %d", r);
    /* Alltoall_c: a block for each remote rank */
    int *sb = ints(rsize * K);
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i < K; i++)
            sb[r * K + i] = val(rank, 2 * r + other, i);
    CHECK_RC(use_c ? MPI_Alltoall_c(sb, K, MPI_INT, all, K, MPI_INT, ic)
                   : MPI_Alltoall(sb, K, MPI_INT, all, K, MPI_INT, ic),
             "inter Alltoall_c");
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i < K; i++)
            CHECK(all[r * K + i] == val(2 * r + other, rank, i), "inter Alltoall_c from %d [%d]",
                  r, i);
    /* Reduce_scatter_block_c and Reduce_scatter_c: the remote group's vectors of T ints
     * summed, scattered over this group (remote world rank 2r + other sends 100 w + j) */
    int *vec = ints(T), remote_sum = 0;
    for (int j = 0; j < T; j++)
        vec[j] = 100 * rank + j;
    for (int r = 0; r < rsize; r++)
        remote_sum += 100 * (2 * r + other);
    for (int form = 0; form < 2; form++) {
        MPI_Count cnt[8], off = 0, mycount = 0, myoff = 0;
        int icnt[8];
        for (int r = 0; r < lsize && r < 8; r++) {
            /* block: T / lsize each; v: uneven, the first ranks one more */
            cnt[r] = form == 0 ? T / lsize : (T - 1) / lsize + (r < (T - 1) % lsize) + (r == 0);
            icnt[r] = (int)cnt[r];
            if (r == lrank)
                mycount = cnt[r], myoff = off;
            off += cnt[r];
        }
        memset(all, 0, sizeof(int) * T);
        if (form == 0)
            CHECK_RC(use_c ? MPI_Reduce_scatter_block_c(vec, all, T / lsize, MPI_INT, MPI_SUM, ic)
                           : MPI_Reduce_scatter_block(vec, all, T / lsize, MPI_INT, MPI_SUM, ic),
                     "inter Reduce_scatter_block_c");
        else
            CHECK_RC(use_c ? MPI_Reduce_scatter_c(vec, all, cnt, MPI_INT, MPI_SUM, ic)
                           : MPI_Reduce_scatter(vec, all, icnt, MPI_INT, MPI_SUM, ic),
                     "inter Reduce_scatter_c");
        CHECK(off == T, "the counts sum to %lld", (long long)off);
        for (MPI_Count j = 0; j < mycount; j++)
            CHECK(all[j] == remote_sum + rsize * (int)(myoff + j),
                  "inter Reduce_scatter%s_c [%lld] = %d, not %d", form ? "" : "_block",
                  (long long)j, all[j], remote_sum + rsize * (int)(myoff + j));
    }
    free(vec);
    free(sb);
    free(mine);
    free(all);
}

/* The two groups by rank parity; remote rank r of a group holds world rank 2r + other. */
static void intercomm(int rank, int size)
{
    MPI_Comm half, ic;
    int grp = rank % 2, lrank, rsize;
    MPI_Comm_split(MPI_COMM_WORLD, grp, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - grp, 77, &ic);
    MPI_Comm_rank(half, &lrank);
    MPI_Comm_remote_size(ic, &rsize);
    int other = 1 - grp, total = 0;
    MPI_Count *rc = calloc((size_t)rsize, sizeof *rc);
    MPI_Aint *di = calloc((size_t)rsize, sizeof *di);
    MPI_Datatype *ts = calloc((size_t)rsize, sizeof *ts);
    for (int r = 0; r < rsize; r++) {
        rc[r] = cnt(2 * r + other);
        di[r] = total;
        total += (int)rc[r];
    }
    int n = cnt(rank), *mine = ints(n), *all = ints(total);
    for (int i = 0; i < n; i++)
        mine[i] = val(rank, -3, i);
    /* Gatherv_c: to rank 0 of the even group, from every odd rank */
    int root = grp == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Gatherv_c(mine, n, MPI_INT, all, rc, di, MPI_INT, root, ic), "inter Gatherv_c");
    for (int r = 0; root == MPI_ROOT && r < rsize; r++)
        for (int i = 0; i < rc[r]; i++)
            CHECK(all[di[r] + i] == val(2 * r + other, -3, i), "inter Gatherv_c from %d [%d]", r, i);
    /* Scatterv_c: from rank 0 of the odd group to every even rank */
    root = grp == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    for (int r = 0; root == MPI_ROOT && r < rsize; r++)
        for (int i = 0; i < rc[r]; i++)
            all[di[r] + i] = val(rank, 2 * r + other, i);
    memset(mine, 0, sizeof(int) * (size_t)n);
    CHECK_RC(MPI_Scatterv_c(all, rc, di, MPI_INT, mine, n, MPI_INT, root, ic), "inter Scatterv_c");
    for (int i = 0; grp == 0 && i < n; i++)
        CHECK(mine[i] == val(1, rank, i), "inter Scatterv_c [%d] = %d", i, mine[i]);
    /* Allgatherv_c: every remote block */
    for (int i = 0; i < n; i++)
        mine[i] = val(rank, -4, i);
    memset(all, 0, sizeof(int) * (size_t)total);
    CHECK_RC(MPI_Allgatherv_c(mine, n, MPI_INT, all, rc, di, MPI_INT, ic), "inter Allgatherv_c");
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i < rc[r]; i++)
            CHECK(all[di[r] + i] == val(2 * r + other, -4, i), "inter Allgatherv_c from %d", r);
    /* Alltoallv_c and Alltoallw_c: pair(me, remote) ints to each remote rank */
    int so = 0, ro = 0;
    MPI_Count *sc = calloc((size_t)rsize, sizeof *sc), *rcc = calloc((size_t)rsize, sizeof *rcc);
    MPI_Aint *sd = calloc((size_t)rsize, sizeof *sd), *rd = calloc((size_t)rsize, sizeof *rd);
    MPI_Aint *sdb = calloc((size_t)rsize, sizeof *sdb), *rdb = calloc((size_t)rsize, sizeof *rdb);
    for (int r = 0; r < rsize; r++) {
        int peer = 2 * r + other;
        sc[r] = pair(rank, peer);
        rcc[r] = pair(peer, rank);
        sd[r] = so;
        rd[r] = ro;
        sdb[r] = so * (MPI_Aint)sizeof(int);
        rdb[r] = ro * (MPI_Aint)sizeof(int);
        so += (int)sc[r];
        ro += (int)rcc[r];
        ts[r] = MPI_INT;
    }
    int *sb = ints(so), *rb = ints(ro);
    for (int pass = 0; pass < 2; pass++) {
        for (int r = 0; r < rsize; r++)
            for (int i = 0; i < sc[r]; i++)
                sb[sd[r] + i] = val(rank, 2 * r + other, i) + pass;
        memset(rb, 0, sizeof(int) * (size_t)ro);
        if (pass == 0)
            CHECK_RC(MPI_Alltoallv_c(sb, sc, sd, MPI_INT, rb, rcc, rd, MPI_INT, ic),
                     "inter Alltoallv_c");
        else
            CHECK_RC(MPI_Alltoallw_c(sb, sc, sdb, ts, rb, rcc, rdb, ts, ic), "inter Alltoallw_c");
        for (int r = 0; r < rsize; r++)
            for (int i = 0; i < rcc[r]; i++)
                CHECK(rb[rd[r] + i] == val(2 * r + other, rank, i) + pass,
                      "inter alltoall%s from %d [%d]", pass ? "w_c" : "v_c", r, i);
    }
    free(sb);
    free(rb);
    free(sc);
    free(rcc);
    free(sd);
    free(rd);
    free(sdb);
    free(rdb);
    free(rc);
    free(di);
    free(ts);
    free(mine);
    free(all);
    inter_uniform(ic, rank, grp, lrank, rsize);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    if (argc > 1 && !strcmp(argv[1], "mix"))
        use_c = rank % 2 == 0;
    MPI_Datatype st = strided();
    gatherv(rank, size, st);
    scatterv(rank, size, st);
    allgatherv(rank, size, st);
    alltoall(rank, size, st);
    reduce_scatter(rank, size);
    if (size > 1) {
        neighbors(rank, size, st);
        intercomm(rank, size);
    }
    MPI_Type_free(&st);
    int rc = check_finish("coll_vwide");
    MPI_Finalize();
    return rc;
#else
    if (rank == 0)
        printf("coll_vwide: skipped (MPI %d.%d has no large-count forms)\n", MPI_VERSION,
               MPI_SUBVERSION);
    MPI_Finalize();
    return 0;
#endif
}
