/*
 * rma.c - one-sided communication (MPI-3 RMA) between the first and the last rank, each
 * timed against a point-to-point baseline measured in the same run (issue 28's benchmarks).
 *
 * Uses only standard MPI, so the same source builds with a vendor's mpicc and with
 * isthmus-cc. Rank 0 is the origin, the last rank the target (across sites when `isthmus
 * run` puts them at different sites); other ranks only take part in the window creation and
 * the barriers. Every figure is a median over iterations, with the minimum beside it.
 *
 *   rtt        8-byte MPI_Send/MPI_Recv round trip (the baseline of put/get)
 *   put_flush  MPI_Put of SIZE bytes + MPI_Win_flush, inside one MPI_Win_lock_all epoch
 *   get_flush  MPI_Get of SIZE bytes + MPI_Win_flush, same epoch; the target waits in
 *              MPI_Barrier (it is in MPI, so it can progress the operation)
 *   get_busy   one lock / MPI_Get / unlock while the target computes for BUSY ms without
 *              calling MPI: how long a busy target holds up a passive-target get
 *   get_busy_flush  MPI_Get of SIZE bytes + MPI_Win_flush inside an MPI_Win_lock_all epoch
 *              opened before the target starts computing BUSY ms: the get alone, against
 *              issue 28's goal of one round trip with the target busy
 *   fence      MPI_Win_fence with nothing to transfer, repeated: the time of one fence
 *   stream     COUNT puts of STREAM bytes in one lock epoch, unlock included, against the
 *              same bytes as COUNT MPI_Isend (the point-to-point baseline): MB/s of each
 *   puts       NPUTS puts of SIZE bytes to distinct, non-adjacent places of the target, then
 *              one MPI_Win_flush, inside one MPI_Win_lock_all epoch: the time of the whole
 *              (small-put message rate; isthmus gathers such puts into few frames)
 *
 *   rma [-s SIZE] [-i ITERS] [-S STREAM] [-c COUNT] [-p NPUTS] [-b BUSY_MS] [-m MODES]
 *     MODES: comma-separated subset of rtt,put_flush,get_flush,get_busy,get_busy_flush,fence,
 *     stream,puts
 *     (default all but puts). Output, rank 0 only, one line per figure:
 *   rma op=<op> size=<bytes> median=<value> min=<value> unit=<us|MB/s> iters=<n>
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size, target;

static void die(const char *msg)
{
    if (rank == 0)
        fprintf(stderr, "rma: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static long parse(const char *s, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    else if (*end == 'M')
        v *= 1024 * 1024, end++;
    if (end == s || *end || v < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: '%s' is not a non-negative count (suffix k or M allowed)",
                 what, s);
        die(msg);
    }
    return v;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *op, long bytes, double *t, int n, double scale, const char *unit)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    printf("rma op=%s size=%ld median=%.3f min=%.3f unit=%s iters=%d\n", op, bytes, med * scale,
           t[0] * scale, unit, n);
    fflush(stdout);
}

static int wanted(const char *modes, const char *m)
{
    size_t n = strlen(m);
    for (const char *p = modes; (p = strstr(p, m)); p += n)
        if ((p == modes || p[-1] == ',') && (p[n] == ',' || !p[n]))
            return 1;
    return 0;
}

/* Spin for ms milliseconds of wall time without calling MPI. */
static void compute(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    volatile double x = 1;
    do {
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

int main(int argc, char **argv)
{
    long sz = 8, iters = 50, stream = 1 << 20, count = 32, busy = 500, nputs = 1000;
    const char *modes = "rtt,put_flush,get_flush,get_busy,get_busy_flush,fence,stream";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die("every option takes a value: rma [-s SIZE] [-i ITERS] [-S STREAM] [-c COUNT] "
                "[-p NPUTS] [-b BUSY_MS] [-m MODES]");
        i++;
        if (!strcmp(a, "-s"))
            sz = parse(v, "-s SIZE");
        else if (!strcmp(a, "-i"))
            iters = parse(v, "-i ITERS");
        else if (!strcmp(a, "-S"))
            stream = parse(v, "-S STREAM");
        else if (!strcmp(a, "-c"))
            count = parse(v, "-c COUNT");
        else if (!strcmp(a, "-p"))
            nputs = parse(v, "-p NPUTS");
        else if (!strcmp(a, "-b"))
            busy = parse(v, "-b BUSY_MS");
        else if (!strcmp(a, "-m"))
            modes = v;
        else
            die("unknown option (rma [-s SIZE] [-i ITERS] [-S STREAM] [-c COUNT] [-p NPUTS] "
                "[-b BUSY_MS] [-m MODES])");
    }
    if (size < 2)
        die("needs at least 2 ranks");
    if (iters < 1 || count < 1 || sz < 1 || stream < 1 || nputs < 1)
        die("-i, -c, -p, -s and -S must be at least 1");
    target = size - 1;
    long winbytes = stream * count > 2 * sz * nputs ? stream * count : 2 * sz * nputs;
    char *base, *local = malloc((size_t)(stream > sz ? stream : sz));
    double *t = malloc(sizeof(double) * (size_t)(iters > count ? iters : count));
    MPI_Win win;
    if (!local || !t)
        die("out of memory");
    memset(local, 1, (size_t)(stream > sz ? stream : sz));
    MPI_Win_allocate(rank == target ? winbytes : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    char tiny[8] = {0};

    if (wanted(modes, "rtt")) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < iters + 1; i++) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(tiny, 8, MPI_BYTE, target, 1, MPI_COMM_WORLD);
                MPI_Recv(tiny, 8, MPI_BYTE, target, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == target) {
                MPI_Recv(tiny, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(tiny, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            if (i) /* the first is a warm-up (connections, first-touch) */
                t[i - 1] = MPI_Wtime() - t0;
        }
        if (rank == 0)
            report("rtt", 8, t, (int)iters, 1e6, "us");
    }

    for (int g = 0; g < 3; g++) {
        const char *op = g == 2 ? "puts" : g ? "get_flush" : "put_flush";
        if (!wanted(modes, op))
            continue;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock_all(0, win);
            for (long i = 0; i < iters + 1; i++) {
                double t0 = MPI_Wtime();
                if (g == 2) /* a gap of SIZE bytes between two puts */
                    for (long k = 0; k < nputs; k++)
                        MPI_Put(local, (int)sz, MPI_BYTE, target, 2 * sz * k, (int)sz, MPI_BYTE,
                                win);
                else if (g)
                    MPI_Get(local, (int)sz, MPI_BYTE, target, 0, (int)sz, MPI_BYTE, win);
                else
                    MPI_Put(local, (int)sz, MPI_BYTE, target, 0, (int)sz, MPI_BYTE, win);
                MPI_Win_flush(target, win);
                if (i)
                    t[i - 1] = MPI_Wtime() - t0;
            }
            MPI_Win_unlock_all(win);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* the target waits here, inside MPI */
        if (rank == 0)
            report(op, sz, t, (int)iters, 1e6, "us");
    }

    if (wanted(modes, "get_busy")) {
        /* once round the origin's epoch start so its lock is not the one held up: the
         * origin starts after a barrier that the target leaves at the same moment */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == target) {
            compute((double)busy);
        } else if (rank == 0) {
            compute(busy / 10.0); /* the target is surely computing by now */
            double t0 = MPI_Wtime();
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            MPI_Get(local, (int)sz, MPI_BYTE, target, 0, (int)sz, MPI_BYTE, win);
            MPI_Win_unlock(target, win);
            t[0] = MPI_Wtime() - t0;
            report("get_busy", sz, t, 1, 1e6, "us");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    if (wanted(modes, "get_busy_flush")) {
        /* the epoch is open before the target starts computing: only the get waits on it */
        if (rank == 0)
            MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == target) {
            compute((double)busy);
        } else if (rank == 0) {
            compute(busy / 10.0);
            double t0 = MPI_Wtime();
            MPI_Get(local, (int)sz, MPI_BYTE, target, 0, (int)sz, MPI_BYTE, win);
            MPI_Win_flush(target, win);
            t[0] = MPI_Wtime() - t0;
            MPI_Win_unlock_all(win);
            report("get_busy_flush", sz, t, 1, 1e6, "us");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    if (wanted(modes, "fence")) {
        MPI_Win_fence(0, win);
        for (long i = 0; i < iters + 1; i++) {
            double t0 = MPI_Wtime();
            MPI_Win_fence(0, win);
            if (i)
                t[i - 1] = MPI_Wtime() - t0;
        }
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        /* each rank's own times; the origin reports its own */
        if (rank == 0)
            report("fence", 0, t, (int)iters, 1e6, "us");
    }

    if (wanted(modes, "stream")) {
        /* 3 rounds of each, alternating; MB/s of the bytes from the first byte sent to the
         * last one known to be at the target (unlock; the receiver's 1-byte ack) */
        char *rbuf = rank == target ? malloc((size_t)(stream * count)) : NULL;
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)count);
        double tp[3], ts[3];
        if ((rank == target && !rbuf) || !rq)
            die("out of memory for the stream");
        for (int r = 0; r < 3; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t0 = MPI_Wtime();
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
                for (long k = 0; k < count; k++)
                    MPI_Put(local, (int)stream, MPI_BYTE, target, k * stream, (int)stream,
                            MPI_BYTE, win);
                MPI_Win_unlock(target, win);
                tp[r] = MPI_Wtime() - t0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t0 = MPI_Wtime();
                for (long k = 0; k < count; k++)
                    MPI_Isend(local, (int)stream, MPI_BYTE, target, 2, MPI_COMM_WORLD, &rq[k]);
                MPI_Waitall((int)count, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(tiny, 1, MPI_BYTE, target, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ts[r] = MPI_Wtime() - t0;
            } else if (rank == target) {
                for (long k = 0; k < count; k++)
                    MPI_Irecv(rbuf + k * stream, (int)stream, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                              &rq[k]);
                MPI_Waitall((int)count, rq, MPI_STATUSES_IGNORE);
                MPI_Send(tiny, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            double mb = (double)stream * (double)count / 1e6;
            for (int r = 0; r < 3; r++)
                tp[r] = mb / tp[r], ts[r] = mb / ts[r];
            /* report the rates; min= is the lowest rate of the three */
            report("stream_put", stream, tp, 3, 1, "MB/s");
            report("stream_send", stream, ts, 3, 1, "MB/s");
        }
        free(rbuf);
        free(rq);
    }
    MPI_Win_free(&win);
    free(local);
    free(t);
    MPI_Finalize();
    return 0;
}
