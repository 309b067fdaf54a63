/* bench/trace_overhead.c: what `isthmus run --trace` costs an application, for issue 30.
 * Built with isthmus-cc; bench/trace_overhead.py runs it with and without --trace,
 * interleaved, and compares.
 *
 *   halo   every rank, each iteration: W units of arithmetic (the application's work),
 *          then MPI_Irecv from both ring neighbours, MPI_Isend to both, MPI_Waitall: 2
 *          messages of S bytes sent and 2 received per iteration, 5 MPI calls. W is what
 *          sets the message rate; --calibrate RATE picks the W that makes it RATE
 *          messages sent per second per rank on this machine now (the driver does that
 *          once, untraced, and passes the same W to every run). Prints the loop's time
 *          (the slowest rank's, from a barrier to its last MPI_Waitall), the most CPU
 *          time a rank's process used in it, and the rates.
 *   calls  the record path itself: every rank times, one by one, N calls of a cheap MPI
 *          call with CLOCK_MONOTONIC around each, and rank 0 prints the percentiles of
 *          the per-call time in ns. The kinds: `rank` (MPI_Comm_rank: a CALL record
 *          only) and `null` (MPI_Isend to MPI_PROC_NULL then MPI_Wait, timed as one
 *          pair: CALL+SEND and CALL+DONE records) and `halo` (one iteration of the halo
 *          loop's five calls, to and from MPI_PROC_NULL: the loop's exact records, without
 *          the messages) and `rma` (an MPI_Put and an MPI_Get to MPI_PROC_NULL on a
 *          window in a passive epoch: CALL+RMA records each). Traced minus untraced, percentile by
 *          percentile, is the distribution of what recording costs per event (the timer
 *          reads are in both).
 *
 *   isthmus-cc -O2 -o /tmp/tro bench/trace_overhead.c
 *   isthmus run -n 2 --sites 1 [--trace DIR] -- /tmp/tro halo -i 100000 -w 2000
 *   isthmus run -n 2 --sites 1 -- /tmp/tro halo --calibrate 100000 -i 20000
 *   isthmus run -n 2 --sites 1 [--trace DIR] -- /tmp/tro calls rank -n 200000
 * Output: one line from rank 0, `key=value` pairs (bench/trace_overhead.py reads them).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* W units of dependent arithmetic the compiler cannot drop or shorten. */
static volatile uint64_t sink;
static void work(long units)
{
    uint64_t x = sink | 1;
    for (long i = 0; i < units; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

static void die(int rank, const char *msg)
{
    if (rank == 0)
        fprintf(stderr, "trace_overhead: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The halo loop; returns the slowest rank's time in seconds, and in *cpu the most CPU
 * time a rank's process used meanwhile (its writer thread's included: on a shared
 * machine the wall time also counts other jobs' turns, CPU time only what ran). */
static double halo(long iters, long units, int bytes, int rank, int size, double *cpu)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    char *buf = calloc(4, (size_t)bytes + 1);
    if (!buf)
        die(rank, "out of memory");
    char *sl = buf, *sr = buf + bytes, *rl = buf + 2 * bytes, *rr = buf + 3 * bytes;
    MPI_Request req[4];
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_s();
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        work(units);
        MPI_Irecv(rl, bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(rr, bytes, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(sl, bytes, MPI_BYTE, left, 2, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(sr, bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    }
    double mine[2] = {(double)(now_ns() - t0) / 1e9, cpu_s() - c0}, most[2] = {0, 0};
    MPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double slowest = most[0];
    if (cpu)
        *cpu = most[1];
    free(buf);
    return slowest;
}

/* Seconds per unit of work, the fastest of a few tries (agreed by all ranks). */
static double unit_seconds(void)
{
    double best = 1e30, all;
    for (int k = 0; k < 5; k++) {
        uint64_t t0 = now_ns();
        work(1000000);
        double s = (double)(now_ns() - t0) / 1e9 / 1e6;
        if (s < best)
            best = s;
    }
    MPI_Allreduce(&best, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void calls(const char *kind, long n, int rank)
{
    uint64_t *ns = malloc(sizeof *ns * (size_t)n);
    if (!ns)
        die(rank, "out of memory");
    int null = !strcmp(kind, "null"), iter = !strcmp(kind, "halo"), me, v[4] = {0, 0, 0, 0};
    int rma = !strcmp(kind, "rma");
    if (!null && !iter && !rma && strcmp(kind, "rank"))
        die(rank, "calls: the kind is rank, null, halo or rma");
    MPI_Win win = MPI_WIN_NULL;
    if (rma) { /* a window in a passive epoch, for one-sided calls to MPI_PROC_NULL */
        void *base;
        MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_lock_all(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double p0 = cpu_s(), th0 = thread_cpu_s();
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        if (null) {
            MPI_Request r;
            MPI_Isend(&v[0], 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else if (rma) { /* a put and a get: their records, with no target to move bytes */
            MPI_Put(&v[0], 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win);
            MPI_Get(&v[1], 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win);
        } else if (iter) { /* one halo iteration's calls, with nobody at the other end */
            MPI_Request r[4];
            MPI_Irecv(&v[0], 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]);
            MPI_Irecv(&v[1], 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &r[1]);
            MPI_Isend(&v[2], 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &r[2]);
            MPI_Isend(&v[3], 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[3]);
            MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        } else {
            MPI_Comm_rank(MPI_COMM_WORLD, &me);
        }
        ns[i] = now_ns() - t0;
    }
    /* CPU time of this process's other threads meanwhile: the trace writer's, when traced */
    double others = (cpu_s() - p0) - (thread_cpu_s() - th0);
    /* the timer's own cost, measured the same way */
    uint64_t *tm = malloc(sizeof *tm * (size_t)n);
    if (!tm)
        die(rank, "out of memory");
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        tm[i] = now_ns() - t0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rma) {
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
    }
    qsort(ns, (size_t)n, sizeof *ns, cmp_u64);
    qsort(tm, (size_t)n, sizeof *tm, cmp_u64);
    if (rank == 0) {
        static const double q[] = {0.01, 0.10, 0.25, 0.50, 0.75, 0.90, 0.99, 0.999, 0.9999};
        printf("trace_overhead mode=calls kind=%s n=%ld timer_p50_ns=%llu", kind, n,
               (unsigned long long)tm[n / 2]);
        for (size_t k = 0; k < sizeof q / sizeof *q; k++)
            printf(" p%g=%llu", q[k] * 100, (unsigned long long)ns[(size_t)(q[k] * (double)(n - 1))]);
        uint64_t sum = 0;
        for (long i = 0; i < n; i++)
            sum += ns[i];
        printf(" max=%llu mean=%.1f other_threads_cpu_ns_per_call=%.1f\n",
               (unsigned long long)ns[n - 1], (double)sum / (double)n, others * 1e9 / (double)n);
        fflush(stdout);
    }
    free(ns);
    free(tm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        die(rank, "usage: trace_overhead halo [-i ITERS] [-w UNITS] [-s BYTES] [--calibrate "
                  "RATE] | calls rank|null|halo|rma [-n N]");
    const char *mode = argv[1], *kind = "rank";
    long iters = 100000, units = 0, n = 200000;
    int bytes = 8;
    double rate = 0;
    int a = 2;
    if (!strcmp(mode, "calls") && argc > 2 && argv[2][0] != '-')
        kind = argv[a++];
    for (; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!v)
            die(rank, "an option lacks its value");
        if (!strcmp(o, "-i"))
            iters = atol(v);
        else if (!strcmp(o, "-w"))
            units = atol(v);
        else if (!strcmp(o, "-s"))
            bytes = atoi(v);
        else if (!strcmp(o, "-n"))
            n = atol(v);
        else if (!strcmp(o, "--calibrate"))
            rate = atof(v);
        else
            die(rank, "unknown option (use -i, -w, -s, -n, --calibrate)");
        a++;
    }
    if (iters < 1 || units < 0 || bytes < 0 || n < 1)
        die(rank, "-i and -n must be >= 1, -w and -s >= 0");
    if (!strcmp(mode, "calls")) {
        calls(kind, n, rank);
    } else if (!strcmp(mode, "halo")) {
        if (rate > 0) {
            /* time per iteration the rate asks for (2 messages sent per iteration), less
             * what the exchange alone takes, in units of work */
            halo(iters, 0, bytes, rank, size, NULL); /* first contact: connections, pages */
            double u = unit_seconds();
            double comm = halo(iters, 0, bytes, rank, size, NULL) / (double)iters;
            double want = 2.0 / rate;
            units = want > comm ? (long)((want - comm) / u) : 0;
            if (rank == 0)
                printf("trace_overhead mode=calibrate rate=%.0f unit_ns=%.3f exchange_us=%.3f "
                       "work=%ld\n", rate, u * 1e9, comm * 1e6, units);
        }
        double cpu = 0, s = halo(iters, units, bytes, rank, size, &cpu);
        if (rank == 0)
            printf("trace_overhead mode=halo ranks=%d iters=%ld work=%ld bytes=%d loop_s=%.6f "
                   "cpu_s=%.6f msgs_per_s_per_rank=%.0f calls_per_s_per_rank=%.0f\n",
                   size, iters, units, bytes, s, cpu, 2.0 * (double)iters / s,
                   5.0 * (double)iters / s);
    } else {
        die(rank, "the mode is halo or calls");
    }
    MPI_Finalize();
    return 0;
}
