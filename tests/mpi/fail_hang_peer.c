/*
 * fail_hang_peer: a process that dies without MPI_Finalize (a crash) must
 * not leave the others hanging forever.
 * argv[1] = the crashing rank (default: the last rank); argv[2] = what the
 * other ranks are blocked in: "recv" (default; MPI_Recv from the crashed
 * rank), "any" (MPI_Recv from MPI_ANY_SOURCE), "coll" (MPI_Allreduce) or "icoll"
 * (MPI_Iallreduce, then MPI_Wait: a collective in flight, coll/nb.c).
 * After a barrier the chosen rank calls _exit(3); the others wait for a
 * message from it that never comes.
 * Expected: the job ends, with non-zero exit status, within the harness's
 * time limit.  Nothing is printed.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int victim = argc > 1 ? atoi(argv[1]) : size - 1;
    const char *mode = argc > 2 ? argv[2] : "recv";
    CHECK(victim >= 0 && victim < size, "crashing rank %d out of range", victim);
    CHECK(!strcmp(mode, "recv") || !strcmp(mode, "any") || !strcmp(mode, "coll") ||
              !strcmp(mode, "icoll"),
          "unknown mode '%s'", mode);
    if (check_failures())
        MPI_Abort(MPI_COMM_WORLD, 2);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim)
        _exit(3); /* no MPI_Finalize, no atexit handlers, no flushing */

    int x = 0;
    if (!strcmp(mode, "coll")) {
        MPI_Allreduce(&rank, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(mode, "icoll")) {
        MPI_Request q;
        MPI_Iallreduce(&rank, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else
        MPI_Recv(&x, 1, MPI_INT, !strcmp(mode, "any") ? MPI_ANY_SOURCE : victim, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    fprintf(stderr, "[rank %d] fail_hang_peer: returned from a wait that cannot complete\n",
            rank);
    MPI_Finalize();
    return 0;
}
