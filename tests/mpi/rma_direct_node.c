/*
 * rma_direct_node: puts and gets between ranks of one node on windows whose memory is
 * shared (MPI_Win_allocate, and MPI_Win_allocate_shared over the node), mixed with the
 * accumulates and atomics that go another way under isthmus (core/rma_direct.c: puts and
 * gets of contiguous types are isthmus's memmove there, everything else the vendor's), the
 * results checked. Per window, in one MPI_Win_lock_all epoch, every rank:
 *   - accumulates 1 into word 0 of every rank, NITER times, each followed by a flush and a
 *     get of that word (its value must not go down, and must count at least this rank's
 *     own accumulates: the flush completed the accumulate before the get read it);
 *   - puts into its own cell at every rank, the middle word with a contiguous type, the
 *     two ends with a strided one (not the memmove road), reads them back with MPI_Rget
 *     and MPI_Get, and puts the middle word again with MPI_Rput;
 *   - fetch-and-ops 1 into word 1 of rank 0, NITER times: the fetched values all differ.
 * After the epoch, word 0 is NITER x size everywhere and word 1 at rank 0 NITER x size.
 * With isthmus, prints "direct ops: N" from rank 0 (MPI_T isthmus_rank_rma_direct_ops)
 * and "expected direct: M", the contiguous puts and gets it made to ranks on this node
 * (all of them, when run on one site without a gateway); "none" under a plain vendor.
 */
#include "check.h"
#include <stdint.h>

enum { NITER = 100 };
/* per rank's window: word 0 the accumulate counter, word 1 the fetch-and-op counter,
 * then a cell of 3 words per rank: the strided pair's ends around the contiguous word */
enum { W_ACC, W_FOP, W_CELLS };

/* One window's round; returns the contiguous puts and gets it made (the memmove road's). */
static long long round_on(MPI_Win win, int64_t *mem, MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long long contiguous = 0;
    int64_t one = 1, got = 0, *fetched = malloc(sizeof(int64_t) * NITER);
    MPI_Datatype pair; /* two int64s with one between them */
    MPI_Type_vector(2, 1, 2, MPI_INT64_T, &pair);
    MPI_Type_commit(&pair);
    if (!fetched)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < W_CELLS + 3 * size; i++)
        mem[i] = 0;
    MPI_Win_sync(win);
    MPI_Barrier(comm);
    MPI_Win_sync(win);
    for (int k = 0; k < NITER; k++)
        for (int t = 0; t < size; t++) {
            CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT64_T, t, W_ACC, 1, MPI_INT64_T, MPI_SUM,
                                    win), "accumulate");
            MPI_Win_flush(t, win);
            CHECK_RC(MPI_Get(&got, 1, MPI_INT64_T, t, W_ACC, 1, MPI_INT64_T, win), "get");
            MPI_Win_flush(t, win);
            contiguous++;
            CHECK(got >= k + 1, "%s: rank %d's accumulate word reads %lld after this rank's "
                  "%d-th accumulate and a flush", what, t, (long long)got, k + 1);
        }
    for (int k = 0; k < NITER; k++) {
        CHECK_RC(MPI_Fetch_and_op(&one, &fetched[k], MPI_INT64_T, 0, W_FOP, MPI_SUM, win),
                 "fetch_and_op");
        MPI_Win_flush(0, win);
    }
    for (int k = 1; k < NITER; k++)
        CHECK(fetched[k] > fetched[k - 1], "%s: fetch-and-op %d fetched %lld after %lld", what,
              k, (long long)fetched[k], (long long)fetched[k - 1]);
    int64_t me = rank + 1000, two[3] = {rank + 2000, -1, rank + 3000};
    for (int t = 0; t < size; t++) {
        MPI_Request rq;
        int cell = W_CELLS + 3 * rank;
        CHECK_RC(MPI_Put(&me, 1, MPI_INT64_T, t, cell + 1, 1, MPI_INT64_T, win), "put");
        CHECK_RC(MPI_Put(two, 1, pair, t, cell, 1, pair, win), "put, strided");
        MPI_Win_flush(t, win);
        int64_t back = 0, back2[3] = {0, 0, 0};
        CHECK_RC(MPI_Rget(&back, 1, MPI_INT64_T, t, cell + 1, 1, MPI_INT64_T, win, &rq),
                 "rget");
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK_RC(MPI_Get(back2, 3, MPI_INT64_T, t, cell, 3, MPI_INT64_T, win), "get, 3");
        MPI_Win_flush(t, win);
        contiguous += 3;
        /* the contiguous put wrote the cell's middle word, the strided one both ends */
        CHECK(back == me, "%s: my cell at rank %d reads %lld", what, t, (long long)back);
        CHECK(back2[0] == rank + 2000 && back2[1] == me && back2[2] == rank + 3000,
              "%s: my cell at rank %d reads %lld %lld %lld", what, t, (long long)back2[0],
              (long long)back2[1], (long long)back2[2]);
        CHECK_RC(MPI_Rput(&me, 1, MPI_INT64_T, t, cell + 1, 1, MPI_INT64_T, win, &rq), "rput");
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        contiguous++;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(comm);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(mem[W_ACC] == (int64_t)NITER * size, "%s: my accumulate word is %lld, want %lld",
          what, (long long)mem[W_ACC], (long long)NITER * size);
    if (rank == 0)
        CHECK(mem[W_FOP] == (int64_t)NITER * size, "%s: the fetch-and-op word is %lld, want "
              "%lld", what, (long long)mem[W_FOP], (long long)NITER * size);
    for (int r = 0; r < size; r++) {
        int64_t *c = &mem[W_CELLS + 3 * r];
        CHECK(c[0] == r + 2000 && c[1] == r + 1000 && c[2] == r + 3000,
              "%s: rank %d's cell here holds %lld %lld %lld", what, r, (long long)c[0],
              (long long)c[1], (long long)c[2]);
    }
    MPI_Win_unlock(rank, win);
    MPI_Type_free(&pair);
    free(fetched);
    return contiguous;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    /* a whole number of 64 bytes: MPICH 4.0.2's own MPI_Win_allocate misplaces puts in a
     * window whose size is not a multiple of 16 (tests/mpi/README.md) */
    MPI_Aint bytes = ((MPI_Aint)sizeof(int64_t) * (W_CELLS + 3 * size) + 63) & ~(MPI_Aint)63;
    long long start = check_pvar_counter("isthmus_rank_rma_direct_ops"), contiguous = 0;
    int64_t *mem;
    MPI_Win win;
    CHECK_RC(MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                              &win), "MPI_Win_allocate");
    long long n = round_on(win, mem, MPI_COMM_WORLD, "MPI_Win_allocate");
    contiguous += nsize == size ? n : 0;
    MPI_Win_free(&win);
    bytes = ((MPI_Aint)sizeof(int64_t) * (W_CELLS + 3 * nsize) + 63) & ~(MPI_Aint)63;
    CHECK_RC(MPI_Win_allocate_shared(bytes, sizeof(int64_t), MPI_INFO_NULL, node, &mem, &win),
             "MPI_Win_allocate_shared");
    contiguous += round_on(win, mem, node, "MPI_Win_allocate_shared");
    MPI_Win_free(&win);
    long long end = check_pvar_counter("isthmus_rank_rma_direct_ops");
    if (rank == 0 && start < 0)
        printf("rma_direct_node direct ops: none\n");
    else if (rank == 0)
        printf("rma_direct_node direct ops: %lld\nrma_direct_node expected direct: %lld\n",
               end - start, contiguous);
    MPI_Comm_free(&node);
    int rc = check_finish("rma_direct_node");
    MPI_Finalize();
    return rc;
}
