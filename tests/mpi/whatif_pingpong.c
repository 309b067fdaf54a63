/* whatif_pingpong.c: rank 0 and rank 1 bounce one message of BYTES bytes N times
 * (MPI_Send/MPI_Recv), then all ranks meet in an MPI_Barrier. The replay of its trace has
 * a time one can compute by hand on any platform: N x 2 x (latency + BYTES/bandwidth),
 * which is what python/tests/test_whatif.py checks `isthmus whatif` against. STALL_US
 * keeps rank 1 from its first receive that long, as a scheduler that has not run it would:
 * its replay then overlaps the first crossing with that wait.
 *
 * usage: whatif_pingpong N BYTES [STALL_US]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, n = argc > 1 ? atoi(argv[1]) : 10, bytes = argc > 2 ? atoi(argv[2]) : 1000;
    int stall_us = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (n < 1 || bytes < 1 || stall_us < 0 || size < 2) {
        fprintf(stderr, "whatif_pingpong: N and BYTES must be positive, STALL_US not negative, "
                        "and ranks at least 2\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc((size_t)bytes, 1);
    if (rank == 1 && stall_us > 0)
        usleep((useconds_t)stall_us);
    for (int i = 0; i < n && rank < 2; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("whatif_pingpong: ok\n");
    free(buf);
    MPI_Finalize();
    return 0;
}
