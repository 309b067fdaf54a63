/*
 * wan_stream.c - one-way streaming bandwidth of large messages between ranks 0 and 1, and
 * the 8-byte ping-pong latency, for the WAN transport benchmark (bench/wan_transport.py).
 *
 * Uses only MPI-1 calls, so it builds against a vendor MPI (mpicc) and against isthmus
 * (isthmus-cc). Usage: wan_stream lat ITERS WARMUP
 *                      wan_stream bw SIZE COUNT WARMUP
 * lat: one-way latency = elapsed / (2 * ITERS) of an 8-byte ping-pong; also the median of
 *      the ITERS round trips, halved (median=), which a few slow iterations do not move.
 * bw:  rank 0 sends COUNT messages of SIZE bytes back to back (two in flight), rank 1
 *      answers with a 4-byte ack after the last; MB/s = SIZE * COUNT / elapsed / 1e6.
 *      The ack makes the timed interval cover delivery, not just the sender's buffers.
 * Prints one line from rank 0: wan_stream mode=<lat|bw> size=<bytes> value=<us|MB/s>
 * [median=<us>]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *msg)
{
    fprintf(stderr, "wan_stream: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        die("needs at least 2 ranks");
    if (argc < 2 || (strcmp(argv[1], "lat") && strcmp(argv[1], "bw")))
        die("usage: wan_stream lat ITERS WARMUP | wan_stream bw SIZE COUNT WARMUP");
    int bw = strcmp(argv[1], "bw") == 0;
    long msg = bw ? atol(argc > 2 ? argv[2] : "0") : 8;
    int iters = atoi(argc > (bw ? 3 : 2) ? argv[bw ? 3 : 2] : "0");
    int warm = atoi(argc > (bw ? 4 : 3) ? argv[bw ? 4 : 3] : "0");
    if (msg < 1 || msg > (1L << 30) || iters < 1 || warm < 0)
        die("bad arguments (size 1..1 GiB, iterations >= 1, warm-up >= 0)");
    char *buf = malloc((size_t)msg * (bw ? 2 : 1));
    if (!buf)
        die("out of memory");
    memset(buf, rank + 1, (size_t)msg * (bw ? 2 : 1));
    int ack = 0;
    double t0 = 0;
    double *rtt = !bw && rank == 0 ? malloc(sizeof(double) * (size_t)iters) : NULL;
    if (!bw && rank == 0 && !rtt)
        die("out of memory");
    for (int i = -warm; i < iters; i++) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (rank > 1)
            continue;
        if (!bw) {
            if (rank == 0) {
                double s = MPI_Wtime();
                MPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (i >= 0)
                    rtt[i] = MPI_Wtime() - s;
            } else {
                MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            continue;
        }
        /* one round = one message; two in flight, alternating buffers */
        static MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int slot = (i + warm) & 1;
        MPI_Wait(&rq[slot], MPI_STATUS_IGNORE);
        if (rank == 0)
            MPI_Isend(buf + slot * msg, (int)msg, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[slot]);
        else
            MPI_Irecv(buf + slot * msg, (int)msg, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[slot]);
        if (i == iters - 1 || i == -1) {
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            if (rank == 1)
                MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
            else
                MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) {
        if (bw)
            printf("wan_stream mode=bw size=%ld value=%.3f unit=MB/s count=%d\n", msg,
                   (double)msg * iters / t / 1e6, iters);
        else {
            qsort(rtt, (size_t)iters, sizeof *rtt, cmp_double);
            double med = iters % 2 ? rtt[iters / 2] : (rtt[iters / 2 - 1] + rtt[iters / 2]) / 2;
            printf("wan_stream mode=lat size=8 value=%.3f unit=us iters=%d median=%.3f\n",
                   t / (2.0 * iters) * 1e6, iters, med / 2 * 1e6);
        }
    }
    free(rtt);
    free(buf);
    MPI_Finalize();
    return 0;
}
