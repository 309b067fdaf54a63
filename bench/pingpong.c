/*
 * pingpong.c - point-to-point latency and bandwidth between ranks 0 and 1.
 *
 * Uses only MPI-1 calls, so the same source builds against a vendor MPI
 * (mpicc) and against isthmus (isthmus-cc) and the results can be compared.
 *
 * Latency mode (default): rank 0 sends SIZE bytes to rank 1, rank 1 sends
 * them back; repeated ITERS times after WARMUP untimed rounds. Reported value
 * is the one-way latency, elapsed / (2 * ITERS), in microseconds.
 *
 * Bandwidth mode (--bw): rank 0 posts a window of 64 back-to-back MPI_Isend
 * of SIZE bytes to rank 1 (which has 64 matching MPI_Irecv), both sides
 * MPI_Waitall, then rank 1 sends a 4-byte ack back to rank 0. Repeated ITERS
 * times; value = SIZE * 64 * ITERS / elapsed / 1e6 MB/s. The ack closes each
 * round: MPI_Waitall on the sender only says the send buffers are reusable
 * (the data may still be buffered in flight or, for eager messages, not yet
 * received), so without the ack rank 0 could stop the clock before rank 1 has
 * the data and report more than the link delivers. Waiting for the ack means
 * the timed interval covers the full delivery of every window (plus one small
 * message per 64 large ones).
 *
 * Other ranks, if any, do no communication of their own: they only take part
 * in the MPI_Barrier that starts the timed phase and in the final MPI_Barrier.
 * PINGPONG_THREAD=single|funneled|serialized|multiple starts MPI with MPI_Init_thread
 * at that level (bench/thread_cost.sh); the program stops if it is not provided.
 * Output: exactly one line from rank 0:
 *   pingpong size=<bytes> mode=<lat|bw> value=<number> unit=<us|MB/s> iters=<n>
 */
#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define TAG_DATA 1
#define TAG_ACK 2

static void usage(const char *prog, const char *msg)
{
    fprintf(stderr,
            "pingpong: %s\n"
            "usage: %s [-s SIZE] [-i ITERS] [-x WARMUP] [--bw]\n"
            "  -s SIZE    message size in bytes, suffix k (1024) or M (1048576) allowed"
            " (default 8)\n"
            "  -i ITERS   timed iterations, >= 1 (default 1000)\n"
            "  -x WARMUP  untimed warm-up iterations, >= 0 (default 100)\n"
            "  --bw       bandwidth mode (window of %d sends + ack) instead of latency\n"
            "needs at least 2 MPI ranks; ranks 0 and 1 take part\n",
            msg, prog, WINDOW);
}

/* Parse a non-negative integer with an optional k/M suffix (suffix only if
 * allow_suffix). Returns 0 on success, -1 on a malformed or too large value. */
static int parse_count(const char *s, int allow_suffix, long long *out)
{
    char *end;
    long long v, mult = 1;
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    if (*end != '\0') {
        if (!allow_suffix || end[1] != '\0')
            return -1;
        if (*end == 'k' || *end == 'K')
            mult = 1024;
        else if (*end == 'M' || *end == 'm')
            mult = 1024 * 1024;
        else
            return -1;
    }
    if (v > LLONG_MAX / mult)
        return -1;
    *out = v * mult;
    return 0;
}

int main(int argc, char **argv)
{
    long long size = 8, iters = 1000, warmup = 100;
    int bw = 0, rank, nranks, i, bad = 0;
    char msg[256] = "";
    char *buf = NULL;

    const char *level = getenv("PINGPONG_THREAD");
    if (level) {
        static const char *names[] = {"single", "funneled", "serialized", "multiple"};
        const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                              MPI_THREAD_MULTIPLE};
        int want = -1, got = -1;
        for (i = 0; i < 4; i++)
            if (!strcmp(level, names[i]))
                want = levels[i];
        if (want < 0) {
            fprintf(stderr, "pingpong: PINGPONG_THREAD=%s is not single, funneled, serialized "
                    "or multiple\n", level);
            return 2;
        }
        MPI_Init_thread(&argc, &argv, want, &got);
        if (got != want) {
            fprintf(stderr, "pingpong: PINGPONG_THREAD=%s: the library provides level %d, "
                    "not %d\n", level, got, want);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    for (i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        long long *dst = NULL;
        int suffix = 0;
        if (strcmp(a, "--bw") == 0) {
            bw = 1;
            continue;
        } else if (strcmp(a, "-s") == 0) {
            dst = &size;
            suffix = 1;
        } else if (strcmp(a, "-i") == 0) {
            dst = &iters;
        } else if (strcmp(a, "-x") == 0) {
            dst = &warmup;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            snprintf(msg, sizeof msg, "help requested");
            bad = 1;
            break;
        } else {
            snprintf(msg, sizeof msg, "unknown argument '%s'", a);
            bad = 1;
            break;
        }
        if (i + 1 >= argc) {
            snprintf(msg, sizeof msg, "option %s needs a value", a);
            bad = 1;
        } else if (parse_count(argv[i + 1], suffix, dst) != 0) {
            snprintf(msg, sizeof msg, "bad value '%s' for %s", argv[i + 1], a);
            bad = 1;
        }
        i++;
    }
    if (!bad && size > INT_MAX) {
        snprintf(msg, sizeof msg, "size %lld too large (max %d)", size, INT_MAX);
        bad = 1;
    }
    if (!bad && iters < 1) {
        snprintf(msg, sizeof msg, "iterations must be >= 1");
        bad = 1;
    }
    if (!bad && (iters > INT_MAX || warmup > INT_MAX)) {
        snprintf(msg, sizeof msg, "iteration count too large");
        bad = 1;
    }
    if (!bad && bw && size > (long long)INT_MAX / WINDOW) {
        snprintf(msg, sizeof msg, "size %lld too large for --bw (max %d)", size,
                 INT_MAX / WINDOW);
        bad = 1;
    }
    if (!bad && nranks < 2) {
        snprintf(msg, sizeof msg, "needs at least 2 ranks, got %d", nranks);
        bad = 1;
    }
    if (bad) {
        if (rank == 0)
            usage(argv[0], msg);
        MPI_Finalize();
        return 2;
    }

    if (rank <= 1) {
        /* one buffer holding a whole window in bw mode (distinct receive
         * buffers for the outstanding Irecvs); touch every page before timing */
        size_t bytes = (size_t)size * (bw ? WINDOW : 1);
        buf = malloc(bytes > 0 ? bytes : 1);
        if (buf == NULL) {
            fprintf(stderr, "pingpong: rank %d: cannot allocate %zu bytes\n", rank, bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(buf, rank + 1, bytes > 0 ? bytes : 1);
    }

    double t0 = 0.0, t1 = 0.0;
    int isize = (int)size, n = (int)iters, nw = (int)warmup;
    MPI_Status st;

    if (rank <= 1) {
        int peer = 1 - rank;
        if (!bw) {
            int it;
            for (it = -nw; it < n; it++) {
                if (it == 0) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    t0 = MPI_Wtime();
                }
                if (rank == 0) {
                    MPI_Send(buf, isize, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
                    MPI_Recv(buf, isize, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
                } else {
                    MPI_Recv(buf, isize, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
                    MPI_Send(buf, isize, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
                }
            }
            t1 = MPI_Wtime();
        } else {
            MPI_Request req[WINDOW];
            /* a real status array rather than MPI_STATUSES_IGNORE: GCC 12 warns
             * falsely about MPICH's (MPI_Status *)1 sentinel */
            MPI_Status sts[WINDOW];
            char ack[4] = {0, 0, 0, 0};
            int it, w;
            for (it = -nw; it < n; it++) {
                if (it == 0) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    t0 = MPI_Wtime();
                }
                if (rank == 0) {
                    for (w = 0; w < WINDOW; w++)
                        MPI_Isend(buf + (size_t)w * size, isize, MPI_BYTE, peer, TAG_DATA,
                                  MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(WINDOW, req, sts);
                    MPI_Recv(ack, 4, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, &st);
                } else {
                    for (w = 0; w < WINDOW; w++)
                        MPI_Irecv(buf + (size_t)w * size, isize, MPI_BYTE, peer, TAG_DATA,
                                  MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(WINDOW, req, sts);
                    MPI_Send(ack, 4, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
                }
            }
            t1 = MPI_Wtime();
        }
    } else {
        /* idle ranks still join the start barrier that ranks 0/1 enter */
        MPI_Barrier(MPI_COMM_WORLD);
    }

    if (rank == 0) {
        double elapsed = t1 - t0;
        if (!bw)
            printf("pingpong size=%lld mode=lat value=%.3f unit=us iters=%lld\n", size,
                   elapsed / (2.0 * (double)iters) * 1e6, iters);
        else
            printf("pingpong size=%lld mode=bw value=%.1f unit=MB/s iters=%lld\n", size,
                   (double)size * WINDOW * (double)iters / elapsed / 1e6, iters);
        fflush(stdout);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return 0;
}
