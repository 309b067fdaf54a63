/*
 * fail_rma_range: an MPI_Put beyond the end of another site's window, with the window's
 * default error handler (MPI_ERRORS_ARE_FATAL): the job must stop on every site with one
 * line naming the calling site and rank, the function, the target rank and the bytes.
 * python/tests/test_rma.py checks the line. Needs 2 ranks at different sites.
 */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    double cell[4] = {0};
    MPI_Win w;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_create(cell, sizeof cell, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_fence(0, w);
    if (rank == 0)
        MPI_Put(cell, 2, MPI_DOUBLE, size - 1, 3, 2, MPI_DOUBLE, w); /* bytes 24..40 of 32 */
    MPI_Win_fence(0, w);
    MPI_Win_free(&w);
    MPI_Finalize();
    return 0;
}
