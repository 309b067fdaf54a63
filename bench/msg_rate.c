/* msg_rate.c: the cross-site message rate of small eager sends. Rank 0 posts N MPI_Isend
 * of SIZE bytes to rank 1 (at the other site), waits for them, then for a zero-byte reply
 * that rank 1 sends once all N have arrived: one round trip plus what the N messages add.
 * Also the 8-byte round trip (rtt) for scale. Standard MPI only.
 *
 *   msg_rate [N [SIZE [REPS]]]   (defaults 1000 8 20)
 * Prints "rtt_ms X", then "burst_ms X" per repetition (rank 0). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, n = argc > 1 ? atoi(argv[1]) : 1000, sz = argc > 2 ? atoi(argv[2]) : 8;
    int reps = argc > 3 ? atoi(argv[3]) : 20;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    char *buf = calloc((size_t)n, (size_t)(sz > 0 ? sz : 1));
    MPI_Request *q = malloc(sizeof *q * (size_t)n);
    char b8[8] = {0};
    double rtt = 1e30;
    for (int i = 0; i < 20; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (r == 0) {
            MPI_Send(b8, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(b8, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (MPI_Wtime() - t0 < rtt)
                rtt = MPI_Wtime() - t0;
        } else if (r == 1) {
            MPI_Recv(b8, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b8, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (r == 0)
        printf("rtt_ms %.4f\n", rtt * 1e3);
    for (int rep = 0; rep < reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (r == 0) {
            for (int i = 0; i < n; i++)
                MPI_Isend(buf + (size_t)i * sz, sz, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &q[i]);
            MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("burst_ms %.4f\n", (MPI_Wtime() - t0) * 1e3);
        } else if (r == 1) {
            for (int i = 0; i < n; i++)
                MPI_Irecv(buf + (size_t)i * sz, sz, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &q[i]);
            MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    free(q);
    free(buf);
    MPI_Finalize();
    return 0;
}
