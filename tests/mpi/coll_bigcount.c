/*
 * coll_bigcount: collectives with a count beyond INT_MAX (2^31 + 4099 one-byte elements,
 * MPI_UINT8_T), every byte checked. The first argument picks the operation, so each run
 * holds only what that operation needs:
 *   bcast      MPI_Bcast_c from rank 0, then MPI_Ibcast_c from the last rank (one 2 GiB
 *              buffer per rank)
 *   allreduce  MPI_Allreduce_c in place with MPI_SUM (one buffer; the small call before it
 *              also with MPI_BAND)
 *   gather     MPI_Gather_c to rank 0, the root's block in place (size buffers at the
 *              root, one elsewhere)
 *   gatherv    MPI_Gatherv_c to rank 0 of size buffers from every other rank and 4099 bytes
 *              of its own, placed after them (a displacement beyond INT_MAX; size buffers at
 *              the root, two at the others: the packed copy)
 *   scatter    MPI_Scatter_c from the last rank, which keeps its own block through a message
 *              to itself (size buffers at the root, one elsewhere), then a persistent
 *              MPI_Bcast_init_c from it
 *   redscat    MPI_Reduce_scatter_block_c in place with MPI_BAND (size buffers per rank)
 *   alltoall   MPI_Alltoall_c in place (size buffers per rank): each pair of ranks swaps
 *              its blocks in pieces
 * The optional second argument is the excess over 2^31 (default 4099, so the count is not
 * a multiple of any piece or chunk). Before the large call, each mode makes the same call
 * with a small count, which takes the int form. Skipped, saying so, under MPI < 4.0.
 */
#include "bigbuf.h"
#include <stdint.h>
#include <string.h>

#if MPI_VERSION >= 4
static void bcast(MPI_Count n, int rank, int size)
{
    unsigned char *b = big_room(n);
    for (int pass = 0; pass < 2; pass++) {
        int root = pass ? size - 1 : 0;
        memset(b, 0, (size_t)n);
        if (rank == root)
            big_fill(b, n, 0, 10 + pass);
        CHECK_RC(MPI_Bcast_c(b, 4099, MPI_UINT8_T, root, MPI_COMM_WORLD), "small Bcast_c");
        if (pass == 0) {
            CHECK_RC(MPI_Bcast_c(b, n, MPI_UINT8_T, root, MPI_COMM_WORLD), "Bcast_c");
        } else {
            MPI_Request rq;
            CHECK_RC(MPI_Ibcast_c(b, n, MPI_UINT8_T, root, MPI_COMM_WORLD, &rq), "Ibcast_c");
            CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "wait for Ibcast_c");
        }
        MPI_Count bad = big_first_wrong(b, n, 0, 10 + pass);
        CHECK(bad < 0, "%s from %d: byte %lld is wrong", pass ? "Ibcast_c" : "Bcast_c", root,
              (long long)bad);
    }
    free(b);
}

/* A rank's operand of a reduction. The SUM operands stay below 64, so up to 4 ranks never
 * overflow a byte: Open MPI 4.1.4's op/avx component saturates MPI_UINT8_T sums at 255
 * (Debian's build; correct with OMPI_MCA_op=^avx), and isthmus gives the site's vendor's
 * result, so a wrapping sum would be checked against a vendor bug. */
static unsigned char operand(MPI_Count i, int salt, MPI_Op op)
{
    return op == MPI_SUM ? big_pattern(i, salt) & 0x3f : big_pattern(i, salt);
}

static void fill_op(unsigned char *b, MPI_Count n, MPI_Count from, int salt, MPI_Op op)
{
    for (MPI_Count i = 0; i < n; i++)
        b[i] = operand(from + i, salt, op);
}

/* what element i becomes when every rank's operand is reduced with op */
static unsigned char reduced(MPI_Count i, int size, MPI_Op op, int salt0)
{
    unsigned char v = op == MPI_SUM ? 0 : 0xff;
    for (int r = 0; r < size; r++)
        v = op == MPI_SUM ? (unsigned char)(v + operand(i, salt0 + r, op))
                          : v & operand(i, salt0 + r, op);
    return v;
}

static void allreduce(MPI_Count n, int rank, int size)
{
    MPI_Op ops[2] = {MPI_SUM, MPI_BAND};
    for (int k = 0; k < 2; k++) {
        unsigned char small[64];
        fill_op(small, 64, 0, 20 + rank, ops[k]);
        CHECK_RC(MPI_Allreduce_c(MPI_IN_PLACE, small, 64, MPI_UINT8_T, ops[k], MPI_COMM_WORLD),
                 "small Allreduce_c");
        for (MPI_Count i = 0; i < 64; i++)
            CHECK(small[i] == reduced(i, size, ops[k], 20), "small Allreduce_c: byte %lld",
                  (long long)i);
    }
    /* the large call with MPI_SUM only: it moves 2 GiB each way between the sites */
    unsigned char *b = big_room(n);
    fill_op(b, n, 0, 20 + rank, MPI_SUM);
    CHECK_RC(MPI_Allreduce_c(MPI_IN_PLACE, b, n, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD),
             "Allreduce_c");
    MPI_Count bad = -1;
    for (MPI_Count i = 0; i < n && bad < 0; i++)
        if (b[i] != reduced(i, size, MPI_SUM, 20))
            bad = i;
    CHECK(bad < 0, "Allreduce_c (SUM): byte %lld is wrong", (long long)bad);
    free(b);
}

static void gather(MPI_Count n, int rank, int size)
{
    unsigned char *b = big_room(rank == 0 ? n * size : n);
    /* a small gather first (the int form), to the last rank, every block checked */
    unsigned char mine[64], *all = big_room(64 * (MPI_Count)size);
    big_fill(mine, 64, 0, 30 + rank);
    CHECK_RC(MPI_Gather_c(mine, 64, MPI_UINT8_T, all, 64, MPI_UINT8_T, size - 1, MPI_COMM_WORLD),
             "small Gather_c");
    for (int r = 0; rank == size - 1 && r < size; r++)
        CHECK(big_first_wrong(all + 64 * r, 64, 0, 30 + r) < 0, "small Gather_c: rank %d's block", r);
    free(all);
    if (rank == 0) {
        memset(b + n, 0, (size_t)(n * (size - 1)));
        big_fill(b, n, 0, 30);
        CHECK_RC(MPI_Gather_c(MPI_IN_PLACE, n, MPI_UINT8_T, b, n, MPI_UINT8_T, 0, MPI_COMM_WORLD),
                 "Gather_c at the root");
        for (int r = 0; r < size; r++) {
            MPI_Count bad = big_first_wrong(b + n * r, n, 0, 30 + r);
            CHECK(bad < 0, "Gather_c: byte %lld of rank %d's block is wrong", (long long)bad, r);
        }
    } else {
        big_fill(b, n, 0, 30 + rank);
        CHECK_RC(MPI_Gather_c(b, n, MPI_UINT8_T, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD),
                 "Gather_c");
    }
    free(b);
}

/* the v-form: the root's own small block lies beyond all the large ones */
static void gatherv(MPI_Count n, int rank, int size)
{
    const MPI_Count own = 4099;
    MPI_Count *rc = calloc((size_t)size, sizeof *rc);
    MPI_Aint *di = calloc((size_t)size, sizeof *di);
    for (int r = 1; r < size; r++) {
        rc[r] = n;
        di[r] = (MPI_Aint)((r - 1) * n);
    }
    rc[0] = own;
    di[0] = (MPI_Aint)((size - 1) * n);
    MPI_Count mine = rank == 0 ? own : n;
    unsigned char *b = big_room(mine);
    big_fill(b, mine, 0, 50 + rank);
    if (rank == 0) {
        unsigned char *all = big_room((size - 1) * n + own);
        memset(all, 0, (size_t)((size - 1) * n + own));
        CHECK_RC(MPI_Gatherv_c(b, own, MPI_UINT8_T, all, rc, di, MPI_UINT8_T, 0, MPI_COMM_WORLD),
                 "Gatherv_c at the root");
        for (int r = 0; r < size; r++) {
            MPI_Count bad = big_first_wrong(all + di[r], rc[r], 0, 50 + r);
            CHECK(bad < 0, "Gatherv_c: byte %lld of rank %d's block is wrong", (long long)bad, r);
        }
        free(all);
    } else {
        CHECK_RC(MPI_Gatherv_c(b, n, MPI_UINT8_T, NULL, NULL, NULL, MPI_DATATYPE_NULL, 0,
                               MPI_COMM_WORLD),
                 "Gatherv_c");
    }
    free(b);
    free(rc);
    free(di);
}

/* the root keeps its own block too (not in place): a message to itself */
static void scatter(MPI_Count n, int rank, int size)
{
    int root = size - 1;
    unsigned char *all = rank == root ? big_room(n * size) : NULL, *b = big_room(n);
    for (int r = 0; rank == root && r < size; r++)
        big_fill(all + n * r, n, 0, 50 + r);
    memset(b, 0, (size_t)n);
    CHECK_RC(MPI_Scatter_c(all, n, MPI_UINT8_T, b, n, MPI_UINT8_T, root, MPI_COMM_WORLD),
             "Scatter_c");
    MPI_Count bad = big_first_wrong(b, n, 0, 50 + rank);
    CHECK(bad < 0, "Scatter_c: byte %lld of rank %d's block is wrong", (long long)bad, rank);
    free(all);
    /* then a persistent broadcast of the same size (a coroutine running Bcast_c) */
    MPI_Request rq;
    CHECK_RC(MPI_Bcast_init_c(b, n, MPI_UINT8_T, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq),
             "Bcast_init_c");
    memset(b, 0, (size_t)n);
    if (rank == root)
        big_fill(b, n, 0, 60);
    CHECK_RC(MPI_Start(&rq), "Start (Bcast_init_c)");
    CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "Wait (Bcast_init_c)");
    bad = big_first_wrong(b, n, 0, 60);
    CHECK(bad < 0, "Bcast_init_c: byte %lld is wrong", (long long)bad);
    MPI_Request_free(&rq);
    free(b);
}

/* in place: block j of rank r starts as salt 50 + 4 r + j and must end as rank j's block r */
static void alltoall(MPI_Count n, int rank, int size)
{
    unsigned char *b = big_room(n * size);
    for (int j = 0; j < size; j++)
        big_fill(b + 4099 * j, 4099, 0, 50 + 4 * rank + j);
    CHECK_RC(MPI_Alltoall_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 4099, MPI_UINT8_T,
                            MPI_COMM_WORLD), "small Alltoall_c in place");
    for (int j = 0; j < size; j++)
        CHECK(big_first_wrong(b + 4099 * j, 4099, 0, 50 + 4 * j + rank) < 0,
              "small Alltoall_c in place: block %d of rank %d is wrong", j, rank);
    for (int j = 0; j < size; j++)
        big_fill(b + n * j, n, 0, 50 + 4 * rank + j);
    CHECK_RC(MPI_Alltoall_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, n, MPI_UINT8_T,
                            MPI_COMM_WORLD), "Alltoall_c in place");
    for (int j = 0; j < size; j++) {
        MPI_Count bad = big_first_wrong(b + n * j, n, 0, 50 + 4 * j + rank);
        CHECK(bad < 0, "Alltoall_c in place: byte %lld of block %d of rank %d is wrong",
              (long long)bad, j, rank);
    }
    free(b);
}

static void redscat(MPI_Count n, int rank, int size)
{
    unsigned char *b = big_room(n * size);
    for (int r = 0; r < size; r++)
        fill_op(b + n * r, n, n * r, 40 + rank, MPI_BAND);
    CHECK_RC(MPI_Reduce_scatter_block_c(MPI_IN_PLACE, b, n, MPI_UINT8_T, MPI_BAND,
                                        MPI_COMM_WORLD),
             "Reduce_scatter_block_c");
    MPI_Count bad = -1;
    for (MPI_Count i = 0; i < n && bad < 0; i++)
        if (b[i] != reduced(n * rank + i, size, MPI_BAND, 40))
            bad = i;
    CHECK(bad < 0, "Reduce_scatter_block_c: byte %lld of rank %d's block is wrong",
          (long long)bad, rank);
    free(b);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    const char *mode = argc > 1 ? argv[1] : "bcast";
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Count n = ((MPI_Count)1 << 31) + (argc > 2 ? atoll(argv[2]) : 4099);
    CHECK(size <= 4, "at most 4 ranks (the sums must not overflow a byte), not %d", size);
    if (!strcmp(mode, "bcast"))
        bcast(n, rank, size);
    else if (!strcmp(mode, "allreduce"))
        allreduce(n, rank, size);
    else if (!strcmp(mode, "gather"))
        gather(n, rank, size);
    else if (!strcmp(mode, "gatherv"))
        gatherv(n, rank, size);
    else if (!strcmp(mode, "scatter"))
        scatter(n, rank, size);
    else if (!strcmp(mode, "redscat"))
        redscat(n, rank, size);
    else if (!strcmp(mode, "alltoall"))
        alltoall(n, rank, size);
    else
        CHECK(0, "unknown mode '%s' (bcast, allreduce, gather, gatherv, scatter, redscat, alltoall)",
              mode);
#else
    if (rank == 0)
        printf("coll_bigcount: skipped: the library implements MPI %d.%d, _c forms are MPI 4.0\n",
               MPI_VERSION, MPI_SUBVERSION);
#endif
    int rc = check_finish("coll_bigcount");
    MPI_Finalize();
    return rc;
}
