/*
 * fail_rma_dynamic: an MPI_Put into another site's dynamic window at an address the target
 * never attached (8 bytes past the region it did attach). Only the target knows what it
 * attached, so the target stops the job, with one line naming itself, the origin rank and
 * site, and the addresses. python/tests/test_rma.py checks the line. Needs 2 ranks at
 * different sites.
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
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_attach(w, cell, sizeof cell);
    MPI_Aint mine, last;
    MPI_Get_address(cell, &mine);
    /* the last rank's address, known to rank 0 */
    last = mine;
    MPI_Bcast(&last, 1, MPI_AINT, size - 1, MPI_COMM_WORLD);
    MPI_Win_fence(0, w);
    if (rank == 0) /* bytes 24..40 of a 32-byte region */
        MPI_Put(cell, 2, MPI_DOUBLE, size - 1, MPI_Aint_add(last, 24), 2, MPI_DOUBLE, w);
    MPI_Win_fence(0, w);
    MPI_Win_detach(w, cell);
    MPI_Win_free(&w);
    if (rank == 0)
        printf("fail_rma_dynamic: the put outside the attached region was not refused\n");
    MPI_Finalize();
    return 0;
}
