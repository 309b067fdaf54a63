/*
 * coll_inter_nb: nonblocking collectives on intercommunicators, many outstanding at once.
 *  - Two intercommunicators over world: its halves (on a two-site run, one group per
 *    site: a simulation coupled to another) and its even and odd ranks (each group spans
 *    the sites).
 *  - On each, three rounds of 19 collectives of 18 kinds started back to back: Ibarrier;
 *    Ibcast from either group, one into a strided vector type; Iallreduce with a sum, a
 *    non-commutative user op (the result is the remote group's rank 0's value) and
 *    32 KiB of doubles; Ireduce to a root in either group, one with a strided type;
 *    Igather, Igatherv, Iscatter, Iscatterv, Iallgather, Iallgatherv, Ialltoall,
 *    Ialltoallv, Ialltoallw, Ireduce_scatter (counts of unequal sizes) and
 *    Ireduce_scatter_block. Roots follow MPI's rule (MPI_ROOT at the root,
 *    MPI_PROC_NULL at the rest of its group, the root's rank in the other group).
 *  - They complete in an order of each rank's own (a shuffle seeded by its rank): half by
 *    MPI_Waitany over a window, the rest by MPI_Testsome; every result is checked.
 *  - A blocking MPI_Barrier and MPI_Allreduce on the intercommunicator after each round.
 *  - MPI_Ibcast_c, MPI_Iallreduce_c, MPI_Ireduce_c and MPI_Iallgather_c with counts beyond
 *    INT_MAX of a type of no bytes (MPI 4).
 *  - Bad arguments refused at the call (a root out of range, MPI_IN_PLACE, a negative
 *    count) with no request made, then one more round that must still match.
 */
#include "check.h"
#include <string.h>

#define NQ 19
#define RS 60 /* the reduce-scatters' vector: fits groups of 1-6 ranks */
#define BIG 4096 /* doubles: 32 KiB */

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

/* The root argument of a collective rooted at local rank r of group g. */
static int root_of(int gid, int lrank, int g, int r)
{
    return gid == g ? (lrank == r ? MPI_ROOT : MPI_PROC_NULL) : r;
}

static void round_on(MPI_Comm ic, int gid, int k, MPI_Op firstop, unsigned *seed)
{
    int lrank, lsize, rsize;
    MPI_Comm_rank(ic, &lrank);
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    int n = lsize > rsize ? lsize : rsize;
    MPI_Request q[NQ];
    MPI_Datatype vec; /* 3 ints, every other one */
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    /* 0 */
    MPI_Ibarrier(ic, &q[0]);
    /* 1: 4 ints from group 0's last rank */
    int b1[4];
    for (int i = 0; i < 4; i++)
        b1[i] = gid == 0 && lrank == lsize - 1 ? 7 * i + k : -1;
    MPI_Ibcast(b1, 4, MPI_INT, root_of(gid, lrank, 0, gid == 0 ? lsize - 1 : rsize - 1), ic,
               &q[1]);
    /* 2: 3 ints from group 1's rank 0, received strided by group 0 */
    int b2[6] = {-1, -1, -1, -1, -1, -1};
    if (gid == 1)
        for (int i = 0; i < 3; i++)
            b2[i] = 11 * i + k;
    if (gid == 0)
        MPI_Ibcast(b2, 1, vec, 0, ic, &q[2]);
    else
        MPI_Ibcast(b2, 3, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic, &q[2]);
    /* 3: a sum of 3 ints; 4: the non-commutative op; 5: 32 KiB of doubles */
    int s3[3], r3[3] = {-1, -1, -1}, s4[2] = {lrank + 100 * k, gid}, r4[2] = {-1, -1};
    for (int i = 0; i < 3; i++)
        s3[i] = (lrank + 1 + k) * (i + 1);
    MPI_Iallreduce(s3, r3, 3, MPI_INT, MPI_SUM, ic, &q[3]);
    MPI_Iallreduce(s4, r4, 2, MPI_INT, firstop, ic, &q[4]);
    double *s5 = malloc(sizeof(double) * BIG), *r5 = malloc(sizeof(double) * BIG);
    for (int i = 0; i < BIG; i++) {
        s5[i] = lrank + i % 7 + k;
        r5[i] = -1;
    }
    MPI_Iallreduce(s5, r5, BIG, MPI_DOUBLE, MPI_SUM, ic, &q[5]);
    /* 6: the max to group 1's rank 0; 7: a strided sum to group 0's rank 0 */
    int s6 = lrank * 10 + k, r6 = -1, s7[6], r7[6] = {-1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 6; i++)
        s7[i] = i % 2 ? -5 : lrank + i + k;
    MPI_Ireduce(&s6, &r6, 1, MPI_INT, MPI_MAX, root_of(gid, lrank, 1, 0), ic, &q[6]);
    MPI_Ireduce(s7, r7, 1, vec, MPI_SUM, root_of(gid, lrank, 0, 0), ic, &q[7]);
    /* 8: 2 ints from each of group 1 to group 0's rank 0 */
    int s8[2] = {lrank, k}, *r8 = malloc(sizeof(int) * 2 * (size_t)n);
    for (int i = 0; i < 2 * n; i++)
        r8[i] = -1;
    MPI_Igather(s8, 2, MPI_INT, r8, 2, MPI_INT, root_of(gid, lrank, 0, 0), ic, &q[8]);
    /* 9: rank r of group 0 sends r + 1 ints to group 1's last rank */
    int s9[64], *r9 = malloc(sizeof(int) * (size_t)(n * (n + 1) / 2 + 1));
    int *c9 = malloc(sizeof(int) * (size_t)n), *d9 = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < 64; i++)
        s9[i] = 1000 * lrank + i + k;
    for (int j = 0, o = 0; j < n; j++) {
        c9[j] = j + 1;
        d9[j] = o;
        o += j + 1;
    }
    for (int i = 0; i < n * (n + 1) / 2 + 1; i++)
        r9[i] = -1;
    MPI_Igatherv(s9, lrank + 1, MPI_INT, r9, c9, d9, MPI_INT,
                 root_of(gid, lrank, 1, gid == 1 ? lsize - 1 : rsize - 1), ic, &q[9]);
    /* 10: one int each from group 1's rank 0 to group 0; 11: r + 1 ints to rank r of
     * group 1 from group 0's rank 0 */
    int *s10 = malloc(sizeof(int) * (size_t)n), r10 = -1, r11[64];
    int *s11 = malloc(sizeof(int) * (size_t)(n * (n + 1) / 2 + 1));
    for (int j = 0; j < n; j++)
        s10[j] = 100 * j + k;
    for (int i = 0; i < n * (n + 1) / 2 + 1; i++)
        s11[i] = 3 * i + k;
    for (int i = 0; i < 64; i++)
        r11[i] = -1;
    MPI_Iscatter(s10, 1, MPI_INT, &r10, 1, MPI_INT, root_of(gid, lrank, 1, 0), ic, &q[10]);
    MPI_Iscatterv(s11, c9, d9, MPI_INT, r11, lrank + 1, MPI_INT, root_of(gid, lrank, 0, 0), ic,
                  &q[11]);
    /* 12: one int from every remote rank; 13: r + 1 ints from remote rank r */
    int s12 = gid * 1000 + lrank + k, *r12 = malloc(sizeof(int) * (size_t)n);
    int *r13 = malloc(sizeof(int) * (size_t)(n * (n + 1) / 2 + 1));
    for (int j = 0; j < n; j++)
        r12[j] = -1;
    for (int i = 0; i < n * (n + 1) / 2 + 1; i++)
        r13[i] = -1;
    MPI_Iallgather(&s12, 1, MPI_INT, r12, 1, MPI_INT, ic, &q[12]);
    MPI_Iallgatherv(s9, lrank + 1, MPI_INT, r13, c9, d9, MPI_INT, ic, &q[13]);
    /* 14: one int to and from every remote rank; 15: (j % 3) + 1 ints to remote rank j;
     * 16: the same as 14 through the w-form, received at byte displacements */
    int *s14 = malloc(sizeof(int) * (size_t)n), *r14 = malloc(sizeof(int) * (size_t)n);
    int *s15 = malloc(sizeof(int) * 3 * (size_t)n), *r15 = malloc(sizeof(int) * 3 * (size_t)n);
    int *sc = malloc(sizeof(int) * 6 * (size_t)n), *r16 = malloc(sizeof(int) * (size_t)n);
    int *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n, *wb = sc + 4 * n, *ws = sc + 5 * n;
    MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * (size_t)n);
    for (int j = 0; j < n; j++) {
        s14[j] = lrank * 100 + j + k;
        r14[j] = r16[j] = -1;
        sc[j] = j % 3 + 1;
        sd[j] = 3 * j;
        rc[j] = lrank % 3 + 1;
        rd[j] = 3 * j;
        for (int i = 0; i < 3; i++) {
            s15[3 * j + i] = lrank * 100 + j + 10 * i + k;
            r15[3 * j + i] = -1;
        }
        wb[j] = (int)sizeof(int) * j;
        ws[j] = 1;
        wt[j] = MPI_INT;
    }
    MPI_Ialltoall(s14, 1, MPI_INT, r14, 1, MPI_INT, ic, &q[14]);
    MPI_Ialltoallv(s15, sc, sd, MPI_INT, r15, rc, rd, MPI_INT, ic, &q[15]);
    MPI_Ialltoallw(s14, ws, wb, wt, r16, ws, wb, wt, ic, &q[16]);
    /* 17: RS ints reduced, scattered over the group in blocks of unequal sizes; 18: in
     * blocks of RS / (group size) */
    int s17[RS], r17[RS], r18[RS], *c17 = malloc(sizeof(int) * (size_t)lsize), d17 = 0;
    for (int i = 0; i < RS; i++) {
        s17[i] = lrank + i + k;
        r17[i] = r18[i] = -1;
    }
    for (int j = 0; j < lsize; j++) {
        c17[j] = RS / lsize + (j < RS % lsize);
        d17 += j < lrank ? c17[j] : 0;
    }
    MPI_Ireduce_scatter(s17, r17, c17, MPI_INT, MPI_SUM, ic, &q[17]);
    MPI_Ireduce_scatter_block(s17, r18, RS / lsize, MPI_INT, MPI_SUM, ic, &q[18]);

    /* complete them in an order of this rank's own */
    int order[NQ];
    for (int i = 0; i < NQ; i++)
        order[i] = i;
    for (int i = NQ - 1; i > 0; i--) {
        int j = (int)(rnd(seed) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < NQ / 2; i++) { /* Waitany over a window of 3 in that order */
        MPI_Request w[3];
        int idx[3], m = 0, got;
        for (int j = 0; j < 3 && i + j < NQ; j++) {
            idx[m] = order[i + j];
            w[m++] = q[order[i + j]];
        }
        CHECK_RC(MPI_Waitany(m, w, &got, MPI_STATUS_IGNORE), "MPI_Waitany");
        if (got != MPI_UNDEFINED)
            q[idx[got]] = MPI_REQUEST_NULL;
    }
    for (;;) {
        int outc, idx[NQ];
        CHECK_RC(MPI_Testsome(NQ, q, &outc, idx, MPI_STATUSES_IGNORE), "MPI_Testsome");
        if (outc == MPI_UNDEFINED)
            break;
    }

    /* the results */
    int rs = rsize, rlast = rsize - 1;
    for (int i = 0; i < 4; i++)
        CHECK(b1[i] == 7 * i + k || (gid == 0 && lrank != lsize - 1 && b1[i] == -1),
              "Ibcast[%d] %d", i, b1[i]);
    for (int i = 0; i < 6; i++) {
        int want = gid == 0 ? (i % 2 ? -1 : 11 * (i / 2) + k) : (i < 3 ? 11 * i + k : -1);
        if (gid == 1 && lrank != 0)
            want = i < 3 ? 11 * i + k : -1; /* its own values, untouched */
        CHECK(b2[i] == want, "strided Ibcast[%d] %d, want %d", i, b2[i], want);
    }
    for (int i = 0; i < 3; i++)
        CHECK(r3[i] == (rs * (rs + 1) / 2 + rs * k) * (i + 1), "Iallreduce[%d] %d", i, r3[i]);
    CHECK(r4[0] == 100 * k && r4[1] == 1 - gid, "ordered Iallreduce %d %d", r4[0], r4[1]);
    int bad5 = 0;
    for (int i = 0; i < BIG; i++)
        bad5 += r5[i] != rs * (rs - 1) / 2.0 + rs * (i % 7 + k);
    CHECK(bad5 == 0, "%d of %d doubles wrong", bad5, BIG);
    if (gid == 1 && lrank == 0)
        CHECK(r6 == rlast * 10 + k, "Ireduce max %d", r6);
    else
        CHECK(r6 == -1, "Ireduce touched a non-root: %d", r6);
    if (gid == 0 && lrank == 0)
        for (int i = 0; i < 6; i++)
            CHECK(r7[i] == (i % 2 ? -1 : rs * (rs - 1) / 2 + rs * (i + k)),
                  "strided Ireduce[%d] %d", i, r7[i]);
    if (gid == 0 && lrank == 0)
        for (int j = 0; j < rs; j++)
            CHECK(r8[2 * j] == j && r8[2 * j + 1] == k, "Igather from %d: %d %d", j, r8[2 * j],
                  r8[2 * j + 1]);
    if (gid == 1 && lrank == lsize - 1)
        for (int j = 0; j < rs; j++)
            for (int i = 0; i <= j; i++)
                CHECK(r9[d9[j] + i] == 1000 * j + i + k, "Igatherv from %d [%d] %d", j, i,
                      r9[d9[j] + i]);
    CHECK(gid == 1 || r10 == 100 * lrank + k, "Iscatter %d", r10);
    for (int i = 0; gid == 1 && i <= lrank; i++)
        CHECK(r11[i] == 3 * (d9[lrank] + i) + k, "Iscatterv[%d] %d", i, r11[i]);
    for (int j = 0; j < rs; j++) {
        CHECK(r12[j] == (1 - gid) * 1000 + j + k, "Iallgather from %d: %d", j, r12[j]);
        for (int i = 0; i <= j; i++)
            CHECK(r13[d9[j] + i] == 1000 * j + i + k, "Iallgatherv from %d [%d] %d", j, i,
                  r13[d9[j] + i]);
        CHECK(r14[j] == j * 100 + lrank + k, "Ialltoall from %d: %d", j, r14[j]);
        CHECK(r16[j] == j * 100 + lrank + k, "Ialltoallw from %d: %d", j, r16[j]);
        for (int i = 0; i < 3; i++)
            CHECK(r15[3 * j + i] == (i <= lrank % 3 ? j * 100 + lrank + 10 * i + k : -1),
                  "Ialltoallv from %d [%d] %d", j, i, r15[3 * j + i]);
    }

    for (int i = 0; i < RS; i++) { /* the remote group's sum of element e: rs(rs-1)/2 + rs(e+k) */
        int in17 = i < c17[lrank], in18 = i < RS / lsize, base = rs * (rs - 1) / 2;
        int w17 = base + rs * (d17 + i + k), w18 = base + rs * (lrank * (RS / lsize) + i + k);
        CHECK(r17[i] == (in17 ? w17 : -1), "Ireduce_scatter[%d] %d, want %d", i, r17[i],
              in17 ? w17 : -1);
        CHECK(r18[i] == (in18 ? w18 : -1), "Ireduce_scatter_block[%d] %d, want %d", i, r18[i],
              in18 ? w18 : -1);
    }

    /* blocking collectives on it after the round */
    CHECK_RC(MPI_Barrier(ic), "MPI_Barrier");
    int one = 1, all = 0;
    CHECK_RC(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, ic), "MPI_Allreduce");
    CHECK(all == rs, "blocking Allreduce %d", all);
    MPI_Type_free(&vec);
    free(s5), free(r5), free(r8), free(r9), free(c9), free(d9), free(s10), free(s11);
    free(r12), free(r13), free(s14), free(r14), free(s15), free(r15), free(sc), free(r16);
    free(wt), free(c17);
}

/* The _c forms with counts beyond INT_MAX of a type of no bytes: they start in flight as
 * the int forms do (the report of in-flight collectives counts them), and end. */
static void beyond_int(MPI_Comm ic, int gid)
{
#if MPI_VERSION >= 4
    int lrank, a[1] = {5}, b[1] = {6};
    MPI_Comm_rank(ic, &lrank);
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    MPI_Count big = (MPI_Count)2147483647 + 7;
    MPI_Request q[4];
    CHECK_RC(MPI_Ibcast_c(a, big, none, root_of(gid, lrank, 0, 0), ic, &q[0]), "MPI_Ibcast_c");
    CHECK_RC(MPI_Iallreduce_c(a, b, big, none, MPI_SUM, ic, &q[1]), "MPI_Iallreduce_c");
    CHECK_RC(MPI_Ireduce_c(a, b, big, none, MPI_SUM, root_of(gid, lrank, 1, 0), ic, &q[2]),
             "MPI_Ireduce_c");
    CHECK_RC(MPI_Iallgather_c(a, big, none, b, big, none, ic, &q[3]), "MPI_Iallgather_c");
    CHECK_RC(MPI_Waitall(4, q, MPI_STATUSES_IGNORE), "MPI_Waitall");
    CHECK(a[0] == 5 && b[0] == 6, "a type of no bytes moved data: %d %d", a[0], b[0]);
    MPI_Type_free(&none);
#else
    (void)ic, (void)gid;
#endif
}

/* Bad arguments are refused at the call, on the intercommunicator's error handler, with
 * no request made and nothing started (every rank refuses alike: no sequence number is
 * taken, so the collectives after still match). */
static void bad_args(MPI_Comm ic)
{
    int rsize, x = 1, y = 0, rc, cls;
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    rc = MPI_Ibcast(&x, 1, MPI_INT, rsize, ic, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT && q == MPI_REQUEST_NULL, "Ibcast to remote rank %d: class %d",
          rsize, cls);
    rc = MPI_Iallreduce(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, ic, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER && q == MPI_REQUEST_NULL, "Iallreduce in place: class %d", cls);
    rc = MPI_Ireduce_scatter_block(&x, &y, -1, MPI_INT, MPI_SUM, ic, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT && q == MPI_REQUEST_NULL, "count -1: class %d", cls);
    rc = MPI_Igather(&x, 1, MPI_INT, &y, 1, MPI_INT, -7, ic, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT && q == MPI_REQUEST_NULL, "Igather root -7: class %d", cls);
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op firstop;
    MPI_Op_create(first, 0, &firstop);
    unsigned seed = 12345u + 77u * (unsigned)rank;
    for (int how = 0; how < 2; how++) { /* halves, then even and odd ranks */
        int gid = how ? rank % 2 : rank >= size / 2;
        int other = how ? 1 - gid : (gid ? 0 : size / 2); /* the other group's leader */
        MPI_Comm local, ic;
        MPI_Comm_split(MPI_COMM_WORLD, gid, rank, &local);
        CHECK_RC(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, other, 40 + how, &ic),
                 "MPI_Intercomm_create");
        for (int k = 0; k < 3; k++)
            round_on(ic, gid, k + 10 * how, firstop, &seed);
        beyond_int(ic, gid);
        bad_args(ic);
        round_on(ic, gid, 20 + how, firstop, &seed); /* still in step after the refusals */
        MPI_Comm_free(&ic);
        MPI_Comm_free(&local);
    }
    MPI_Op_free(&firstop);
    int rc = check_finish("coll_inter_nb");
    MPI_Finalize();
    return rc;
}
