/*
 * rma_allocate_node: an MPI_Win_allocate window under every kind of concurrent one-sided
 * traffic, the results checked. Under isthmus with Open MPI, when a site's members share
 * one node, such a window's memory is the vendor's MPI_Win_allocate_shared (core/win.c);
 * this program checks that the operations and isthmus's locks stay atomic and right there
 * (and everywhere else). In one MPI_Win_lock_all epoch, on rank 0's window:
 *   - every rank adds 1 to one word NITER times, alternating MPI_Fetch_and_op (MPI_SUM)
 *     and a compare-and-swap loop (read with MPI_NO_OP, MPI_Compare_and_swap of old + 1
 *     until it takes): the two kinds must be atomic with each other, rank 0 on its own
 *     window included; the word ends at 2 x NITER x size;
 *   - MPI_Accumulate of 1 into a second word and MPI_Get_accumulate of 1 into a third,
 *     NITER times each: they end at NITER x size, and the get-accumulates' fetched values
 *     are distinct (each saw the ones before it);
 *   - MPI_Put of its rank into its own cell of every rank's window, read back with MPI_Get.
 * Then under MPI_Win_lock(MPI_LOCK_EXCLUSIVE) on the last rank, NLOCK times per rank: a get,
 * + 1, a put of a counter (not atomic by itself: the lock must exclude); it ends at
 * NLOCK x size. MPI_LOCK_SHARED gets read it after.
 * Prints "shm windows: N" from rank 0, the MPI_T counter isthmus_rank_rma_shm_windows
 * (isthmus only; "shm windows: none" elsewhere), and "direct ops: N" after the puts and
 * gets, isthmus_rank_rma_direct_ops: those isthmus did as memcpy into shared memory
 * (core/rma_direct.c; "none" elsewhere). Works for any size >= 1.
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

enum { NITER = 200, NLOCK = 50 };
/* words of each rank's window: 0 the fetch-and-op / compare-and-swap counter, 1 the
 * accumulate counter, 2 the get-accumulate counter, 3 the exclusive lock's counter, then one
 * cell per rank */
enum { W_FOP, W_ACC, W_GACC, W_LOCK, W_CELLS };

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int64_t *mem, one = 1, old = 0, got = 0;
    MPI_Win win;
    MPI_Aint bytes = (MPI_Aint)sizeof(int64_t) * (W_CELLS + size);
    CHECK_RC(MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win),
             "MPI_Win_allocate");
    long long shm = check_pvar_counter("isthmus_rank_rma_shm_windows");
    if (rank == 0) {
        if (shm < 0)
            printf("rma_allocate_node shm windows: none\n");
        else
            printf("rma_allocate_node shm windows: %lld\n", shm);
    }

    MPI_Win_lock_all(0, win);
    memset(mem, 0, (size_t)bytes);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t *fetched = malloc(sizeof(int64_t) * NITER);
    if (!fetched)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int k = 0; k < NITER; k++) {
        CHECK_RC(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, W_FOP, MPI_SUM, win), "fetch_and_op");
        MPI_Win_flush(0, win);
        for (int tries = 0;; tries++) {
            int64_t cur = 0, want;
            MPI_Fetch_and_op(NULL, &cur, MPI_INT64_T, 0, W_FOP, MPI_NO_OP, win);
            MPI_Win_flush(0, win);
            want = cur + 1;
            CHECK_RC(MPI_Compare_and_swap(&want, &cur, &old, MPI_INT64_T, 0, W_FOP, win),
                     "compare_and_swap");
            MPI_Win_flush(0, win);
            if (old == cur)
                break;
            if (tries > 1000000) {
                CHECK(0, "compare-and-swap never took after %d tries", tries);
                break;
            }
        }
        CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, W_ACC, 1, MPI_INT64_T, MPI_SUM, win),
                 "accumulate");
        CHECK_RC(MPI_Get_accumulate(&one, 1, MPI_INT64_T, &fetched[k], 1, MPI_INT64_T, 0,
                                    W_GACC, 1, MPI_INT64_T, MPI_SUM, win), "get_accumulate");
        MPI_Win_flush(0, win);
    }
    for (int k = 1; k < NITER; k++)
        CHECK(fetched[k] > fetched[k - 1], "get-accumulate %d fetched %lld after %lld", k,
              (long long)fetched[k], (long long)fetched[k - 1]);
    int64_t me = rank + 1000;
    for (int t = 0; t < size; t++)
        CHECK_RC(MPI_Put(&me, 1, MPI_INT64_T, t, W_CELLS + rank, 1, MPI_INT64_T, win), "put");
    MPI_Win_flush_all(win);
    for (int t = 0; t < size; t++) {
        CHECK_RC(MPI_Get(&got, 1, MPI_INT64_T, t, W_CELLS + rank, 1, MPI_INT64_T, win), "get");
        MPI_Win_flush(t, win);
        CHECK(got == me, "rank %d's cell at rank %d reads %lld, want %lld", rank, t,
              (long long)got, (long long)me);
    }
    MPI_Win_unlock_all(win);
    long long direct = check_pvar_counter("isthmus_rank_rma_direct_ops");
    if (rank == 0 && direct < 0)
        printf("rma_allocate_node direct ops: none\n");
    else if (rank == 0)
        printf("rma_allocate_node direct ops: %lld\n", direct);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(mem[W_FOP] == 2LL * NITER * size, "the fetch-and-op/compare-and-swap word is %lld, "
              "want %lld", (long long)mem[W_FOP], 2LL * NITER * size);
        CHECK(mem[W_ACC] == (int64_t)NITER * size, "the accumulate word is %lld, want %lld",
              (long long)mem[W_ACC], (long long)NITER * size);
        CHECK(mem[W_GACC] == (int64_t)NITER * size, "the get-accumulate word is %lld, want %lld",
              (long long)mem[W_GACC], (long long)NITER * size);
        MPI_Win_unlock(0, win);
    }
    for (int t = 0; t < size; t++) {
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        for (int r = 0; r < size; r++) {
            MPI_Get(&got, 1, MPI_INT64_T, t, W_CELLS + r, 1, MPI_INT64_T, win);
            MPI_Win_flush(t, win);
            CHECK(got == r + 1000, "rank %d's cell %d reads %lld, want %d", t, r,
                  (long long)got, r + 1000);
        }
        MPI_Win_unlock(t, win);
    }

    int last = size - 1;
    for (int k = 0; k < NLOCK; k++) {
        int64_t v = 0;
        CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, last, 0, win), "lock exclusive");
        MPI_Get(&v, 1, MPI_INT64_T, last, W_LOCK, 1, MPI_INT64_T, win);
        MPI_Win_flush(last, win);
        v++;
        MPI_Put(&v, 1, MPI_INT64_T, last, W_LOCK, 1, MPI_INT64_T, win);
        CHECK_RC(MPI_Win_unlock(last, win), "unlock exclusive");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, last, 0, win);
    MPI_Get(&got, 1, MPI_INT64_T, last, W_LOCK, 1, MPI_INT64_T, win);
    MPI_Win_unlock(last, win);
    CHECK(got == (int64_t)NLOCK * size, "the exclusive lock's counter is %lld, want %lld",
          (long long)got, (long long)NLOCK * size);
    free(fetched);
    MPI_Win_free(&win);
    int rc = check_finish("rma_allocate_node");
    MPI_Finalize();
    return rc;
}
