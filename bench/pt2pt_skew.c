/* bench/pt2pt_skew.c: a vendor MPI's point-to-point transfer of 128 KiB between 2 ranks
 * of one node by the page offset of the receive buffer against the send buffer's (page
 * aligned), for issue 8: the kernel's CMA copy (Open MPI) and the shared-memory copy
 * (MPICH) hit the same `rep movsb` slow case on Zen 3 as glibc's memmove (bench/copy_skew.c),
 * which is why libisthmus places its temporaries at its caller's page offset
 * (native/src/coll/move.c). Prints, per offset, the best of 5 repetitions of 200
 * send+acknowledgement pairs.
 *
 *   mpicc.openmpi -O2 -o /tmp/pt2pt_skew bench/pt2pt_skew.c
 *   mpirun.openmpi --oversubscribe --allow-run-as-root -np 2 /tmp/pt2pt_skew
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 131072
#define ITERS 200

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    char *s = aligned_alloc(4096, N + 8192), *r = aligned_alloc(4096, N + 8192);
    if (!s || !r)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(s, 1, N + 8192);
    memset(r, 0, N + 8192);
    const int offs[] = {0, 8, 16, 24, 32, 64, 4080};
    for (unsigned k = 0; k < sizeof offs / sizeof *offs; k++) {
        int ro = me == 1 ? offs[k] : 0;
        double best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < ITERS; i++) {
                if (me == 0) {
                    MPI_Send(s, N, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(r, 0, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (me == 1) {
                    MPI_Recv(r + ro, N, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(s, 0, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
                }
            }
            double t = (MPI_Wtime() - t0) / ITERS * 1e6;
            best = t < best ? t : best;
        }
        if (me == 0)
            printf("receive buffer at page offset %4d: %7.1f us per 128 KiB send + ack\n", offs[k],
                   best);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
