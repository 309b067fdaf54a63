/*
 * nbc_overlap.c - several nonblocking allreduces outstanding at once on one communicator
 * (MPI_COMM_WORLD), against one alone and against the blocking form, in the same run.
 * Measures what isthmus costs when collectives on one communicator could overlap: today
 * they run one at a time in start order (docs/design.md "Nonblocking collectives as
 * coroutines"); bench/nbc_overlap.py runs it across emulated sites.
 *
 * Standard MPI plus POSIX clock_gettime, so the same source builds with isthmus-cc and a
 * vendor's mpicc. Cases (MPI_DOUBLE, MPI_SUM):
 *   one         one MPI_Iallreduce of 1 double (8 bytes), then MPI_Wait
 *   eight       8 MPI_Iallreduce of 1 double started back to back, then MPI_Waitall
 *   eight_128k  8 MPI_Iallreduce of 16384 doubles (128 KiB) each, then MPI_Waitall
 *   blocking    one MPI_Allreduce of 1 double (the baseline)
 * Each repetition starts after an MPI_Barrier; its time is the slowest rank's elapsed time
 * (MPI_Allreduce MAX of each rank's), so a rank that leaves the barrier early pays for the
 * skew as the slowest rank would. WARMUP untimed repetitions come first. Every result is
 * checked against the sum it must be (each value is an integer, so the sum is exact); a
 * wrong element makes the program exit 1 after printing where.
 *
 * The barrier cannot release two sites at once: over a link of one-way delay d the sites
 * leave it up to d apart, and how far apart depends on the calls before it, so the slowest
 * rank's time holds that skew too. When every rank runs on one machine (the same kernel
 * boot_id, hence one CLOCK_MONOTONIC, as under `isthmus run` with network namespaces), each
 * repetition also records the skew (last rank's start - first rank's start) and the time
 * from the last rank's start to the last rank's end, which holds no skew; else both are
 * null.
 *
 *   nbc_overlap [REPS [WARMUP [inter]]]     (defaults 5 and 1)
 * With "inter" the allreduces run on an intercommunicator of world's two halves (on two
 * sites of equal size, one group per site: two coupled codes), each rank getting the sum
 * over the other group; the barrier and the timing stay on world.
 * Output, rank 0 only, one JSON line per case:
 *   {"case": "one", "bytes": 8, "n": 1, "ranks": 4, "reps": 5, "best_ms": ..,
 *    "median_ms": .., "all_ms": [..], "skew_all_ms": [..], "from_last_start_best_ms": ..,
 *    "from_last_start_median_ms": .., "from_last_start_all_ms": [..]}
 * bytes is per allreduce, n the number outstanding at once, lists in repetition order.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OUT 8

struct nbc_case {
    const char *name;
    int count;    /* doubles per allreduce */
    int n;        /* allreduces outstanding at once */
    int blocking; /* MPI_Allreduce instead of MPI_Iallreduce */
};

static const struct nbc_case cases[] = {
    {"one", 1, 1, 0},
    {"eight", 1, 8, 0},
    {"eight_128k", 16384, 8, 0},
    {"blocking", 1, 1, 1},
};

static int rank, nranks;
static int one_clock;   /* every rank reads the same CLOCK_MONOTONIC */
static MPI_Comm comm;   /* the allreduces' communicator: world, or the intercommunicator */
static int crank, nsum; /* my rank in it, and how many ranks each sum adds up */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Whether all ranks run on one kernel (one boot_id), so their monotonic clocks compare. */
static int same_kernel(void)
{
    unsigned long long mine[3] = {0, 0, 1}, all[3]; /* hash, ~hash, unknown */
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    char id[64];
    if (f && fgets(id, sizeof id, f)) {
        unsigned long long h = 1469598103934665603ULL; /* FNV-1a */
        for (const char *p = id; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        mine[0] = h, mine[1] = ~h, mine[2] = 0;
    }
    if (f)
        fclose(f);
    MPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return !all[2] && all[0] == mine[0] && all[1] == mine[1];
}

static int parse_count(const char *s, const char *what, long min, long max)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < min || v > max) {
        if (rank == 0)
            fprintf(stderr, "nbc_overlap: %s '%s' is not an integer from %ld to %ld\n", what, s,
                    min, max);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (int)v;
}

/* The value rank r contributes at element k of allreduce j: small integers, so the sum
 * over ranks is exact in a double and every element and allreduce differs. */
static double contribution(int r, int j, int k)
{
    return (double)(r + 1) * (j + 1) + k;
}

static double expected(int j, int k)
{
    return (double)nsum * (nsum + 1) / 2 * (j + 1) + (double)nsum * k;
}

static void fill(const struct nbc_case *c, double *send, double *recv)
{
    for (int j = 0; j < c->n; j++)
        for (int k = 0; k < c->count; k++) {
            send[(size_t)j * c->count + k] = contribution(crank, j, k);
            recv[(size_t)j * c->count + k] = -1.0;
        }
}

/* Wrong elements of this rank's results; the first one is reported on stderr. */
static long check(const struct nbc_case *c, const double *recv, int rep)
{
    long bad = 0;
    for (int j = 0; j < c->n; j++)
        for (int k = 0; k < c->count; k++) {
            double got = recv[(size_t)j * c->count + k];
            if (got != expected(j, k) && bad++ == 0)
                fprintf(stderr, "nbc_overlap: case %s rep %d: rank %d, allreduce %d element %d: "
                        "got %.17g, want %.17g\n", c->name, rep, rank, j, k, got, expected(j, k));
        }
    return bad;
}

/* One repetition; t[0], t[1]: when this rank left the barrier and completed the last one. */
static void run_once(const struct nbc_case *c, double *send, double *recv, double t[2])
{
    MPI_Request req[MAX_OUT];
    MPI_Barrier(MPI_COMM_WORLD);
    t[0] = now();
    if (c->blocking) {
        MPI_Allreduce(send, recv, c->count, MPI_DOUBLE, MPI_SUM, comm);
    } else {
        for (int j = 0; j < c->n; j++)
            MPI_Iallreduce(send + (size_t)j * c->count, recv + (size_t)j * c->count, c->count,
                           MPI_DOUBLE, MPI_SUM, comm, &req[j]);
        if (c->n == 1)
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        else
            MPI_Waitall(c->n, req, MPI_STATUSES_IGNORE);
    }
    t[1] = now();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_list(const char *key, const double *xs, int n)
{
    printf(", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        printf("%s%.3f", i ? ", " : "", xs[i]);
    printf("]");
}

/* ", "KEY_best_ms": .., "KEY_median_ms": .., "KEY_all_ms": [..]" (KEY empty: no prefix) */
static void print_series(const char *key, const double *xs, int n)
{
    double *sorted = malloc(sizeof *sorted * (size_t)n);
    if (!sorted)
        MPI_Abort(MPI_COMM_WORLD, 3);
    memcpy(sorted, xs, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    const char *sep = *key ? "_" : "";
    printf(", \"%s%sbest_ms\": %.3f, \"%s%smedian_ms\": %.3f", key, sep, sorted[0], key, sep,
           median);
    char all[64];
    snprintf(all, sizeof all, "%s%sall_ms", key, sep);
    print_list(all, xs, n);
    free(sorted);
}

/* ms[0..reps): slowest rank's times; skew, late: the one-clock figures (unused without). */
static void report(const struct nbc_case *c, const double *ms, const double *skew,
                   const double *late, int reps)
{
    printf("{\"case\": \"%s\", \"bytes\": %zu, \"n\": %d, \"ranks\": %d, \"reps\": %d",
           c->name, (size_t)c->count * sizeof(double), c->n, nranks, reps);
    print_series("", ms, reps);
    if (one_clock) {
        print_list("skew_all_ms", skew, reps);
        print_series("from_last_start", late, reps);
    } else {
        printf(", \"skew_all_ms\": null, \"from_last_start_best_ms\": null, "
               "\"from_last_start_median_ms\": null, \"from_last_start_all_ms\": null");
    }
    printf("}\n");
    fflush(stdout);
}

/* Runs one case; returns the number of wrong elements over all ranks and repetitions. */
static long run_case(const struct nbc_case *c, int reps, int warmup)
{
    size_t elems = (size_t)c->count * c->n;
    double *send = malloc(sizeof *send * elems), *recv = malloc(sizeof *recv * elems);
    double *ms = malloc(sizeof *ms * 3 * (size_t)reps), *skew = ms + reps, *late = ms + 2 * reps;
    if (!send || !recv || !ms) {
        fprintf(stderr, "nbc_overlap: rank %d: out of memory for case %s\n", rank, c->name);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    long bad = 0;
    for (int rep = -warmup; rep < reps; rep++) {
        fill(c, send, recv);
        double t[2], mine[4], max[4];
        run_once(c, send, recv, t);
        mine[0] = t[1] - t[0], mine[1] = t[0], mine[2] = t[1], mine[3] = -t[0];
        MPI_Allreduce(mine, max, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        bad += check(c, recv, rep);
        if (rep >= 0) {
            ms[rep] = max[0] * 1e3;
            skew[rep] = (max[1] + max[3]) * 1e3; /* last start - first start */
            late[rep] = (max[2] - max[1]) * 1e3; /* last end - last start */
        }
    }
    long all_bad;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !all_bad)
        report(c, ms, skew, late, reps);
    else if (rank == 0)
        fprintf(stderr, "nbc_overlap: case %s: %ld wrong elements over all ranks\n", c->name,
                all_bad);
    free(ms);
    free(recv);
    free(send);
    return all_bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int inter = argc > 3 && !strcmp(argv[3], "inter");
    if (argc > 4 || (argc > 3 && !inter) || (inter && nranks < 2)) {
        if (rank == 0)
            fprintf(stderr, "usage: nbc_overlap [REPS [WARMUP [inter]]] (inter: 2 ranks or "
                            "more)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int reps = argc > 1 ? parse_count(argv[1], "REPS", 1, 100000) : 5;
    int warmup = argc > 2 ? parse_count(argv[2], "WARMUP", 0, 100000) : 1;
    one_clock = same_kernel();
    MPI_Comm half = MPI_COMM_NULL;
    comm = MPI_COMM_WORLD;
    crank = rank;
    nsum = nranks;
    if (inter) { /* the halves, each group's leader its first rank */
        int upper = rank >= nranks / 2;
        MPI_Comm_split(MPI_COMM_WORLD, upper, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, upper ? 0 : nranks / 2, 7, &comm);
        MPI_Comm_rank(comm, &crank);
        MPI_Comm_remote_size(comm, &nsum);
    }
    long bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bad += run_case(&cases[i], reps, warmup);
    if (inter) {
        MPI_Comm_free(&comm);
        MPI_Comm_free(&half);
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}
