/*
 * rma_bigcount: one-sided operations with more than 2^31 one-byte elements (MPI_UINT8_T),
 * every byte checked: rank 0 puts n bytes into rank 1's window (MPI_Put_c, in a lock
 * epoch), rank 1 checks them; rank 0 XORs a second pattern into them (MPI_Accumulate_c
 * with MPI_BXOR) and reads the result back (MPI_Rget_c into a zeroed buffer). Across
 * sites the bytes travel as 64-bit frames, within a site the vendor gets covering types.
 * Rank 0 holds 2 GiB, rank 1 a window of 2 GiB. The optional argument is the excess over
 * 2^31 (default 4099). Skipped under MPI < 4.0.
 */
#include "bigbuf.h"
#include <stdint.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    MPI_Count n = ((MPI_Count)1 << 31) + (argc > 1 ? atoll(argv[1]) : 4099);
    unsigned char *base = NULL, *b = NULL;
    MPI_Win win;
    CHECK_RC(MPI_Win_allocate(rank == 1 ? (MPI_Aint)n : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                              &base, &win),
             "Win_allocate");
    if (rank == 0) {
        b = big_room(n);
        big_fill(b, n, 0, 80);
        CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), "Win_lock");
        CHECK_RC(MPI_Put_c(b, n, MPI_UINT8_T, 1, 0, n, MPI_UINT8_T, win), "Put_c");
        CHECK_RC(MPI_Win_unlock(1, win), "Win_unlock");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win), "Win_lock (self)");
        MPI_Count bad = big_first_wrong(base, n, 0, 80);
        CHECK(bad < 0, "Put_c: byte %lld of the window is wrong", (long long)bad);
        CHECK_RC(MPI_Win_unlock(1, win), "Win_unlock (self)");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        big_fill(b, n, 0, 81);
        MPI_Request rq;
        CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), "Win_lock");
        CHECK_RC(MPI_Accumulate_c(b, n, MPI_UINT8_T, 1, 0, n, MPI_UINT8_T, MPI_BXOR, win),
                 "Accumulate_c");
        CHECK_RC(MPI_Win_flush(1, win), "Win_flush");
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_Rget_c(b, n, MPI_UINT8_T, 1, 0, n, MPI_UINT8_T, win, &rq), "Rget_c");
        CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "wait for Rget_c");
        CHECK_RC(MPI_Win_unlock(1, win), "Win_unlock");
        MPI_Count bad = -1;
        for (MPI_Count i = 0; i < n && bad < 0; i++)
            if (b[i] != (unsigned char)(big_pattern(i, 80) ^ big_pattern(i, 81)))
                bad = i;
        CHECK(bad < 0, "Accumulate_c then Rget_c: byte %lld is wrong", (long long)bad);
        free(b);
    }
    MPI_Win_free(&win);
#endif
    int rc = check_finish("rma_bigcount");
    MPI_Finalize();
    return rc;
}
