# tests/mpiprogs.py: small MPI programs that several end-to-end tests build with isthmus-cc.
from __future__ import annotations

# Every rank up (rank 0 says "all ranks up"), then barriers for about two minutes; with the
# argument "c" rank 1 aborts after 2 s (a crash on a node that is not the launcher's).
HANG_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { printf("all ranks up\n"); fflush(stdout); }
    for (int i = 0; i < 1200; i++) {
        if (i == 20 && rank == 1 && argc > 1 && argv[1][0] == 'c') abort(); /* "crash" */
        MPI_Barrier(MPI_COMM_WORLD);
        usleep(100000);
    }
    MPI_Finalize();
    return 0;
}
"""
