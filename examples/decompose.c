/* decompose.c: a 1-D Jacobi smoother over CELLS cells split across sites of different
 * speed, evenly ("even") or by isthmus-patterns' speed-weighted decomposition
 * ("weighted"), which splits again from measured compute times every REBALANCE steps
 * (docs/patterns.md; the DD_Filtre2 case of seed 000). A site's ranks repeat each update
 * SLOW times (the same result each time), standing for a slower cluster: SLOW is a list,
 * one factor per site, e.g. 1,4.
 *
 * CLOCK says how compute is timed. "cpu" (the default): the calling thread's CPU time, for
 * sites that share this machine's cores unlimited, where wall time would measure the
 * scheduler and only SLOW makes a site slower. "wall": the wall clock (MPI_Wtime), for sites
 * that are really slower, e.g. under `isthmus run --site-cpu`, whose limit a thread's CPU
 * time does not show. The link cost per step is measured once, as the median of single halo
 * exchanges with nothing between them, so that waiting for a slow neighbour is not
 * mistaken for a slow link.
 *
 * At the end rank 0 gathers the field and compares it bit for bit with a serial run.
 * Rank 0 prints "decompose: MODE ranks N cells C steps S: T s, X ms per step, last half
 * Y ms per step", "decompose: compute timed by CLOCK", "decompose: site K: slow F, R ranks,
 * C cells, V Mcell/s" (V: the cells the site's ranks smoothed per second of compute over
 * the run, summed, on CLOCK: the speed the split sees) and "decompose: ok".
 *
 * build: isthmus-cc -O2 -o decompose decompose.c -listhmus-patterns -lm
 * usage: decompose even|weighted [SLOW [CELLS [STEPS [REBALANCE [CLOCK]]]]]
 *        (defaults 1,4  100000 cells, 40 steps, every 10, cpu)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <isthmus_patterns.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_now(void)
{
    return MPI_Wtime();
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double initial(long i)
{
    return (double)(i % 17) / 17.0;
}

/* u holds count cells with a ghost each side: u[0] and u[count + 1] */
static void halo(double *u, long count, int left, int right, MPI_Comm comm)
{
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[count + 1], 1, MPI_DOUBLE, right, 0, comm,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[count], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, comm,
                 MPI_STATUS_IGNORE);
    if (left == MPI_PROC_NULL)
        u[0] = 1.0;
    if (right == MPI_PROC_NULL)
        u[count + 1] = 0.0;
}

static void smooth(const double *u, double *v, long count, int slow)
{
    for (int k = 0; k < slow; k++)
        for (long i = 1; i <= count; i++)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
}

static double *serial(long n, int steps)
{
    double *u = malloc(sizeof(double) * (size_t)(n + 2)), *v = malloc(sizeof(double) * (size_t)(n + 2));
    for (long i = 0; i < n; i++)
        u[i + 1] = initial(i);
    for (int s = 0; s < steps; s++) {
        u[0] = 1.0, u[n + 1] = 0.0;
        smooth(u, v, n, 1);
        double *t = u;
        u = v, v = t;
    }
    free(v);
    return u;
}

static int parse_slow(const char *list, int nsites, int *slow)
{
    const char *p = list;
    for (int s = 0; s < nsites; s++) {
        char *end;
        long f = strtol(p, &end, 10);
        if (end == p || f < 1 || f > 1000)
            return 0;
        slow[s] = (int)f;
        p = *end == ',' ? end + 1 : end; /* a short list repeats its last factor */
    }
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ism_pat_sites *sites;
    if (ism_pat_sites_create(MPI_COMM_WORLD, &sites))
        MPI_Abort(MPI_COMM_WORLD, 3);
    int weighted = argc > 1 && strcmp(argv[1], "weighted") == 0;
    long n = argc > 3 ? atol(argv[3]) : 100000;
    int steps = argc > 4 ? atoi(argv[4]) : 40, every = argc > 5 ? atoi(argv[5]) : 10;
    const char *clock_name = argc > 6 ? argv[6] : "cpu";
    int wall = strcmp(clock_name, "wall") == 0;
    double (*now)(void) = wall ? wall_now : cpu_now;
    int *slow = malloc(sizeof(int) * (size_t)sites->nsites);
    if (argc < 2 || (!weighted && strcmp(argv[1], "even") != 0) || n < size || steps < 1 ||
        every < 1 || (!wall && strcmp(clock_name, "cpu") != 0) ||
        !parse_slow(argc > 2 ? argv[2] : "1,4", sites->nsites, slow)) {
        if (rank == 0)
            fprintf(stderr, "usage: decompose even|weighted [SLOW [CELLS [STEPS [REBALANCE "
                    "[CLOCK]]]]]: SLOW a list of factors 1..1000 per site, CELLS >= ranks (%d), "
                    "STEPS and REBALANCE positive, CLOCK cpu or wall\n", size);
        MPI_Finalize();
        return 2;
    }
    int my_slow = slow[sites->my_site];
    ism_pat_decomp *d;
    if (ism_pat_decomp_create(MPI_COMM_WORLD, n, NULL, &d))
        MPI_Abort(MPI_COMM_WORLD, 3);
    long first, count;
    ism_pat_decomp_range(d, &first, &count);
    double *u = malloc(sizeof(double) * (size_t)(count + 2));
    for (long i = 0; i < count; i++)
        u[i + 1] = initial(first + i);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    /* the link cost of one step, without anyone's compute in it: the median of single
     * exchanges, so that a rank descheduled once does not count as a slow link */
    double one[11];
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 11; k++) {
        double t = MPI_Wtime();
        halo(u, count, left, right, MPI_COMM_WORLD);
        one[k] = MPI_Wtime() - t;
    }
    qsort(one, 11, sizeof(double), by_value);
    double halo_s = one[5];

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1); /* the timed steps, phase 1 of a trace */
    double t0 = MPI_Wtime(), thalf = t0, compute = 0, compute_all = 0, cell_steps = 0;
    double *v = malloc(sizeof(double) * (size_t)(count + 2));
    for (int s = 0; s < steps; s++) {
        if (s == steps / 2) {
            MPI_Barrier(MPI_COMM_WORLD);
            thalf = MPI_Wtime();
        }
        halo(u, count, left, right, MPI_COMM_WORLD);
        double c0 = now();
        smooth(u, v, count, my_slow);
        double c = now() - c0;
        compute += c, compute_all += c, cell_steps += (double)count;
        double *tmp = u;
        u = v, v = tmp;
        if (weighted && (s + 1) % every == 0 && s + 1 < steps) {
            int changed;
            /* the rebalance moves the cells without their ghosts */
            void *cells = malloc(sizeof(double) * (size_t)count + 1);
            memcpy(cells, u + 1, sizeof(double) * (size_t)count);
            if (ism_pat_decomp_rebalance(d, compute, halo_s * every, 0.05, &cells,
                                         sizeof(double), &changed))
                MPI_Abort(MPI_COMM_WORLD, 3);
            ism_pat_decomp_range(d, &first, &count);
            free(u), free(v);
            u = malloc(sizeof(double) * (size_t)(count + 2));
            v = malloc(sizeof(double) * (size_t)(count + 2));
            memcpy(u + 1, cells, sizeof(double) * (size_t)count);
            free(cells);
            compute = 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    MPI_Pcontrol(0);

    const long *firsts = ism_pat_decomp_firsts(d);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++)
        counts[r] = (int)(firsts[r + 1] - firsts[r]), displs[r] = (int)firsts[r];
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
    MPI_Gatherv(u + 1, (int)count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* each rank's speed over the run, on the chosen clock: what the split was made from */
    double speed = compute_all > 0 ? cell_steps / compute_all : 0;
    double *speeds = rank == 0 ? malloc(sizeof(double) * (size_t)size) : NULL;
    MPI_Gather(&speed, 1, MPI_DOUBLE, speeds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        double *ref = serial(n, steps);
        ok = memcmp(ref + 1, all, sizeof(double) * (size_t)n) == 0;
        printf("decompose: %s ranks %d cells %ld steps %d: %.6f s, %.3f ms per step, last half "
               "%.3f ms per step\n", argv[1], size, n, steps, t1 - t0, 1e3 * (t1 - t0) / steps,
               1e3 * (t1 - thalf) / (steps - steps / 2));
        printf("decompose: compute timed by %s\n", wall ? "the wall clock" : "the thread's CPU time");
        for (int s = 0; s < sites->nsites; s++) {
            long cells = 0;
            double site_speed = 0;
            for (int r = 0; r < size; r++)
                if (sites->site_of[r] == s)
                    cells += counts[r], site_speed += speeds[r];
            printf("decompose: site %d: slow %d, %d ranks, %ld cells, %.3f Mcell/s\n", s, slow[s],
                   sites->site_size[s], cells, 1e-6 * site_speed);
        }
        printf(ok ? "decompose: ok\n" : "decompose: FAILED: the field differs from a serial run\n");
        free(ref);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all), free(speeds), free(counts), free(displs), free(u), free(v), free(slow);
    ism_pat_decomp_free(&d);
    ism_pat_sites_free(&sites);
    MPI_Finalize();
    return ok ? 0 : 1;
}
