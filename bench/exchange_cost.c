/* bench/exchange_cost.c: what a two-way step costs inside a node, for issue 8's model,
 * with the vendor MPI alone (no libisthmus): per block size m, 2 ranks, each pattern
 * timed as calls back to back (as isthmus-bench coll runs a collective), interleaved
 * pattern by pattern in every repetition so the machine's load touches all alike:
 *
 *   one_way   half a ping-pong round trip of m bytes (what the model is calibrated on)
 *   sendrecv  MPI_Sendrecv of m bytes both ways, buffers of m (calibrate's "exchange")
 *   isend     MPI_Irecv + MPI_Isend + MPI_Waitall both ways (how libisthmus's executor
 *             runs a round)
 *   a2a       a pairwise alltoall by hand on buffers of 2 m: memcpy of one's own block,
 *             then the exchange of the other (what ISTHMUS_COLL_ALLTOALL=pairwise does)
 *   a2a_x     the same buffers, the exchange alone (no memcpy)
 *   memcpy    the memcpy alone (rank 0)
 *
 * Prints one line per size and pattern: the median and min..max over the repetitions
 * of the per-call time in microseconds.
 *
 *   mpicc.openmpi -O2 -o /tmp/xc bench/exchange_cost.c
 *   mpirun.openmpi --oversubscribe --allow-run-as-root -np 2 /tmp/xc [reps]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_ONE_WAY, P_SENDRECV, P_ISEND, P_A2A, P_A2A_X, P_MEMCPY, P_N };
static const char *const NAME[P_N] = {"one_way", "sendrecv", "isend", "a2a", "a2a_x", "memcpy"};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run(int pat, int me, int n, long iters, char *s, char *r, char *s2, char *r2)
{
    int o = 1 - me;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request q[2];
    MPI_Status st[2]; /* real statuses: MPICH's MPI_STATUSES_IGNORE upsets -Wall */
    MPI_Barrier(w);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        switch (pat) {
        case P_ONE_WAY:
            if (me == 0) {
                MPI_Send(s, n, MPI_CHAR, o, 0, w);
                MPI_Recv(r, n, MPI_CHAR, o, 0, w, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(r, n, MPI_CHAR, o, 0, w, MPI_STATUS_IGNORE);
                MPI_Send(s, n, MPI_CHAR, o, 0, w);
            }
            break;
        case P_SENDRECV:
            MPI_Sendrecv(s, n, MPI_CHAR, o, 0, r, n, MPI_CHAR, o, 0, w, MPI_STATUS_IGNORE);
            break;
        case P_ISEND:
            MPI_Irecv(r, n, MPI_CHAR, o, 0, w, &q[0]);
            MPI_Isend(s, n, MPI_CHAR, o, 0, w, &q[1]);
            MPI_Waitall(2, q, st);
            break;
        case P_A2A:
        case P_A2A_X:
            if (pat == P_A2A)
                memcpy(r2 + (size_t)me * n, s2 + (size_t)me * n, (size_t)n);
            MPI_Irecv(r2 + (size_t)o * n, n, MPI_CHAR, o, 0, w, &q[0]);
            MPI_Isend(s2 + (size_t)o * n, n, MPI_CHAR, o, 0, w, &q[1]);
            MPI_Waitall(2, q, st);
            break;
        case P_MEMCPY:
            if (me == 0) {
                memcpy(r, s, (size_t)n);
                s[i % n] ^= 1; /* not a loop to drop */
            }
            break;
        }
    }
    double t = (MPI_Wtime() - t0) * 1e6 / (double)iters;
    return pat == P_ONE_WAY ? t / 2 : t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) {
        if (me == 0)
            fprintf(stderr, "exchange_cost: run it on 2 ranks (got %d)\n", np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 100)
        reps = 7;
    static const int sizes[] = {1, 64, 1024, 4096, 16384, 65536, 262144, 1048576};
    const int maxn = 1 << 20;
    char *s = aligned_alloc(4096, maxn), *r = aligned_alloc(4096, maxn);
    char *s2 = aligned_alloc(4096, 2 * (size_t)maxn), *r2 = aligned_alloc(4096, 2 * (size_t)maxn);
    if (!s || !r || !s2 || !r2)
        MPI_Abort(MPI_COMM_WORLD, 3);
    memset(s, 1, maxn);
    memset(r, 0, maxn);
    memset(s2, 1, 2 * (size_t)maxn);
    memset(r2, 0, 2 * (size_t)maxn);
    if (me == 0)
        printf("%8s %-9s %9s %9s %9s\n", "size", "pattern", "median", "min", "max");
    for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k];
        long iters = n <= 8192 ? 1000 : n <= 262144 ? 100 : 30;
        double t[P_N][100];
        for (int rep = 0; rep < reps; rep++)
            for (int p = 0; p < P_N; p++) {
                run(p, me, n, iters / 10 + 1, s, r, s2, r2); /* warm-up */
                t[p][rep] = run(p, me, n, iters, s, r, s2, r2);
            }
        if (me == 0)
            for (int p = 0; p < P_N; p++) {
                qsort(t[p], (size_t)reps, sizeof(double), cmp);
                printf("%8d %-9s %9.2f %9.2f %9.2f\n", n, NAME[p], t[p][reps / 2], t[p][0],
                       t[p][reps - 1]);
            }
        fflush(stdout);
    }
    free(s);
    free(r);
    free(s2);
    free(r2);
    MPI_Finalize();
    return 0;
}
