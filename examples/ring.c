/* ring.c: the program of the README's tour. A plain MPI program (it knows nothing about
 * isthmus): a token goes around the ring of all ranks LAPS times, each rank adding its
 * rank number, so with ranks on several sites it crosses every site boundary on every
 * lap; then a message of SIZE bytes goes around once, checked byte for byte, and the
 * time of one lap is printed. Rank 0 prints "ring: ok" only if every rank's check
 * passed, else every rank returns 1.
 *
 * usage: ring [LAPS [SIZE]]   (defaults 10 and 1048576; SIZE 0 skips the big message)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_arg(const char *s, const char *what, long max)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < 0 || v > max) {
        fprintf(stderr, "ring: %s %s: expected a whole number from 0 to %ld\n", what, s, max);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int laps = argc > 1 ? check_arg(argv[1], "LAPS", 1000000) : 10;
    int bytes = argc > 2 ? check_arg(argv[2], "SIZE", 1 << 30) : 1 << 20;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, ok = 1;

    /* the token: rank 0 starts each lap with 0; after a lap it holds 0 + 1 + ... + size-1 */
    long want = (long)size * (size - 1) / 2;
    for (int lap = 0; lap < laps; lap++) {
        long token = 0;
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_LONG, next, 1, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ok &= token == want;
        } else {
            MPI_Recv(&token, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank;
            MPI_Send(&token, 1, MPI_LONG, next, 1, MPI_COMM_WORLD);
        }
    }

    /* one lap of a big message, each rank checking what it got before passing it on */
    double lap_s = 0;
    if (bytes > 0 && size > 1) {
        unsigned char *buf = malloc((size_t)bytes);
        if (!buf) {
            fprintf(stderr, "ring: rank %d: cannot allocate %d bytes\n", rank, bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double t0 = MPI_Wtime();
        if (rank == 0) {
            for (int i = 0; i < bytes; i++)
                buf[i] = (unsigned char)(i * 7 + 3);
            MPI_Send(buf, bytes, MPI_BYTE, next, 2, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, next, 2, MPI_COMM_WORLD);
        }
        lap_s = MPI_Wtime() - t0;
        for (int i = 0; i < bytes; i++)
            ok &= buf[i] == (unsigned char)(i * 7 + 3);
        free(buf);
    }

    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_ok && bytes > 0 && size > 1)
            printf("ring: ok: %d ranks, %d laps of the token (sum %ld), %d bytes around in "
                   "%.3f ms\n", size, laps, want, bytes, lap_s * 1e3);
        else if (all_ok)
            printf("ring: ok: %d ranks, %d laps of the token (sum %ld)\n", size, laps, want);
        else
            printf("ring: FAILED: a rank received a wrong token or wrong bytes\n");
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
