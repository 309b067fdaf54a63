/*
 * fail_rma_timeout: rank 0 locks the last rank, which sleeps for 8 s without calling MPI.
 * With ISTHMUS_RMA_TIMEOUT=2 the lock (or, if rank 1 granted it on its way out of
 * MPI_Win_create, the unlock) must fail after about 2 s with one line naming the rank and
 * site it waited for (python/tests/test_rma.py), and the job stops on every
 * site. Needs 2 ranks at different sites, and ISTHMUS_RMA_PROGRESS_US=0: isthmus's
 * progress helper thread would otherwise serve the lock while rank 1 sleeps.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "check.h"
#include <time.h>

int main(int argc, char **argv)
{
    int rank, size;
    long cell = 0;
    MPI_Win w;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (rank == size - 1) {
        struct timespec ts = {8, 0};
        nanosleep(&ts, NULL);
    } else if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, size - 1, 0, w);
        MPI_Win_unlock(size - 1, w);
    }
    MPI_Win_free(&w);
    MPI_Finalize();
    return 0;
}
