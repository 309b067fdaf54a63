/*
 * fail_abort: MPI_Abort must take the whole job down.
 * argv[1] = the aborting rank (default: the last rank); argv[2] = what the
 * other ranks are blocked in: "recv" (default; MPI_Recv from the aborting
 * rank), "any" (MPI_Recv from MPI_ANY_SOURCE) or "coll" (MPI_Allreduce).
 * After a barrier the chosen rank calls MPI_Abort(MPI_COMM_WORLD, 7); the
 * others wait forever for a message that never comes.
 * Expected: the job ends, with non-zero exit status.  Nothing is printed;
 * the harness checks the exit status (and a time limit).
 */
#include "check.h"
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int victim = argc > 1 ? atoi(argv[1]) : size - 1;
    const char *mode = argc > 2 ? argv[2] : "recv";
    CHECK(victim >= 0 && victim < size, "aborting rank %d out of range", victim);
    CHECK(!strcmp(mode, "recv") || !strcmp(mode, "any") || !strcmp(mode, "coll"),
          "unknown mode '%s'", mode);
    if (check_failures())
        MPI_Abort(MPI_COMM_WORLD, 2); /* a broken invocation must not look like success */

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim)
        MPI_Abort(MPI_COMM_WORLD, 7);

    int x = 0;
    if (!strcmp(mode, "coll"))
        MPI_Allreduce(&rank, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Recv(&x, 1, MPI_INT, !strcmp(mode, "any") ? MPI_ANY_SOURCE : victim, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* not reached when MPI_Abort works */
    fprintf(stderr, "[rank %d] fail_abort: returned from a wait that cannot complete\n", rank);
    MPI_Finalize();
    return 0;
}
