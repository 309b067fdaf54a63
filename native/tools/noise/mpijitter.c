/* mpijitter.c: the MPI-Jitter probe (see mpijitter.h). Results are reduced on the fly
 * (max and sum of t_compute per iteration), so rank 0 holds O(iterations + ranks) data,
 * never O(iterations x ranks); raw per-rank triples (t_start, t_finished, t_wait) are
 * written only with --raw. Node clocks are mapped onto rank 0's (clocksync.h). */
#include "mpijitter.h"

#include <errno.h>
#include <sched.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mpisync.h"
#include "cpus.h"
#include "json.h"
#include "meta.h"
#include "prio.h"
#include "probe.h"
#include "tsc.h"
#include "work.h"

enum { COLL_BARRIER, COLL_ALLREDUCE, COLL_ALLTOALL };

static int coll_kind(const char *s)
{
    if (!strcmp(s, "barrier"))
        return COLL_BARRIER;
    if (!strcmp(s, "allreduce"))
        return COLL_ALLREDUCE;
    if (!strcmp(s, "alltoall"))
        return COLL_ALLTOALL;
    return -1;
}

typedef struct {
    int kind;
    double one, sum;
    int *a2a_send, *a2a_recv;
} coll_state;

static void collective(coll_state *c)
{
    switch (c->kind) {
    case COLL_BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case COLL_ALLREDUCE: MPI_Allreduce(&c->one, &c->sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    default: MPI_Alltoall(c->a2a_send, 1, MPI_INT, c->a2a_recv, 1, MPI_INT, MPI_COMM_WORLD); break;
    }
}

static void busy_ticks(uint64_t ticks)
{
    uint64_t t0 = ism_noise_now();
    while (ism_noise_now() - t0 < ticks)
        ;
}

static int fail(const char *msg, int rank)
{
    fprintf(stderr, "isthmus-noise mpi-jitter (rank %d): %s\n", rank, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
}

static int write_raw(const ism_mpijitter_opts *o, int rank, const uint64_t *tr, int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/mpi-jitter-rank%d.raw.tsv", o->out_dir, rank);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# t_start\tt_finished\tt_wait (ticks of this rank's clock)\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%llu\t%llu\t%llu\n", (unsigned long long)tr[3 * i], (unsigned long long)tr[3 * i + 1],
                (unsigned long long)tr[3 * i + 2]);
    return fclose(f);
}

/* Per-rank facts gathered to rank 0. */
enum { RK_CPU, RK_HZ, RK_MEAN_C, RK_MIN_C, RK_MAX_C, RK_MEAN_ALL, RK_LEADER, RK_N };

int ism_mpijitter_run(const ism_mpijitter_opts *o, int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int kind = coll_kind(o->collective);
    if (kind < 0)
        return fail("--collective must be barrier, allreduce or alltoall", rank);
    if (o->iterations < 1 || !(o->compute_us > 0) || o->max_delay_us < 0 || o->sync_rounds < 4)
        return fail("need --iterations >= 1, --compute-us > 0, --max-delay-us >= 0, --sync-rounds >= 4", rank);

    ism_mpisync sync;
    if (ism_mpisync_init(&sync, o->sync_rounds, 2) != 0)
        return fail("out of memory for the clock synchronisation", rank);
    int cpu = -1;
    if (o->cpus) {
        int list[ISM_NOISE_MAX_CPUS];
        char err[256];
        int n = ism_cpus_parse(o->cpus, list, ISM_NOISE_MAX_CPUS, err, sizeof err);
        if (n < 0)
            return fail(err, rank);
        cpu = list[(o->pin_world ? rank : sync.lrank) % n];
        int e = ism_cpus_pin_self(cpu);
        if (e) {
            char msg[256];
            snprintf(msg, sizeof msg, "cannot pin to cpu %d: %s", cpu, strerror(e));
            return fail(msg, rank);
        }
    }
    ism_noise_clock clk;
    char why[600];
    if (ism_noise_clock_init(&clk, 0, 100) != 0) {
        snprintf(why, sizeof why, "no usable clock: %s", clk.check.verdict);
        return fail(why, rank);
    }
    if (ism_timer_resolves(&clk.check, (uint64_t)(o->compute_us * 1e-6 * clk.hz), clk.hz, "the compute time (--compute-us)",
                           why, sizeof why) != 0)
        return fail(why, rank);
    ism_meta_snap before = {0}, after = {0};
    if (rank == 0)
        ism_meta_snap_take(&before);

    ism_mpisync_phase(&sync);

    uint64_t iters = rank == 0 ? ism_probe_work_iterations(o->compute_us * 1e-6 * clk.hz) : 0;
    MPI_Bcast(&iters, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    uint64_t *tr = malloc(sizeof(uint64_t) * 3 * (size_t)o->iterations);
    double *tc = malloc(sizeof(double) * (size_t)o->iterations), *ta = malloc(sizeof(double) * (size_t)o->iterations);
    coll_state cs = {kind, 1.0, 0.0, calloc((size_t)size, sizeof(int)), calloc((size_t)size, sizeof(int))};
    if (!tr || !tc || !ta || !cs.a2a_send || !cs.a2a_recv)
        return fail("out of memory for the per-iteration times (lower --iterations)", rank);
    unsigned seed = o->seed ^ (0x9e3779b9u * (unsigned)(rank + 1));
    uint64_t max_delay = (uint64_t)(o->max_delay_us * 1e-6 * clk.hz);
    volatile uint64_t sink = 0;
    /* the measuring loop only runs at the requested priority: MPI start-up and the
     * result exchange stay ordinary, so helper processes (launcher, gateways) are not
     * starved by ranks spinning at real-time priority */
    int old_policy = sched_getscheduler(0);
    struct sched_param old_sp;
    sched_getparam(0, &old_sp);
    int prio_ok = 1;
    if (o->priority && ism_prio_set("isthmus-noise mpi-jitter", o->priority) != 0)
        prio_ok = 0;
    int all_ok;
    MPI_Allreduce(&prio_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok)
        return fail("--probe-priority could not be applied on every rank", rank);
    collective(&cs);
    for (int i = 0; i < o->iterations; i++) {
        if (max_delay)
            busy_ticks((uint64_t)((double)rand_r(&seed) / RAND_MAX * (double)max_delay));
        collective(&cs);
        uint64_t t_start = ism_noise_now();
        sink += ism_noise_work(iters);
        uint64_t t_fin = ism_noise_now();
        collective(&cs);
        uint64_t t_wait = ism_noise_now();
        tr[3 * i] = t_start;
        tr[3 * i + 1] = t_fin;
        tr[3 * i + 2] = t_wait;
    }
    (void)sink;
    if (o->priority)
        sched_setscheduler(0, old_policy, &old_sp);
    ism_mpisync_phase(&sync);
    if (rank == 0)
        ism_meta_snap_take(&after);

    double mean_c = 0, min_c = 1e300, max_c = 0, mean_all = 0;
    for (int i = 0; i < o->iterations; i++) {
        tc[i] = (double)(tr[3 * i + 1] - tr[3 * i]) / clk.hz;
        ta[i] = (double)(tr[3 * i + 2] - tr[3 * i]) / clk.hz;
        mean_c += tc[i];
        mean_all += ta[i];
        if (tc[i] < min_c)
            min_c = tc[i];
        if (tc[i] > max_c)
            max_c = tc[i];
    }
    mean_c /= o->iterations;
    mean_all /= o->iterations;
    double *cmax = NULL, *csum = NULL, *amax = NULL, *all_rk = NULL;
    if (rank == 0) {
        cmax = malloc(sizeof(double) * (size_t)o->iterations);
        csum = malloc(sizeof(double) * (size_t)o->iterations);
        amax = malloc(sizeof(double) * (size_t)o->iterations);
        all_rk = malloc(sizeof(double) * RK_N * (size_t)size);
        if (!cmax || !csum || !amax || !all_rk)
            return fail("out of memory for the reductions", rank);
    }
    MPI_Reduce(tc, cmax, o->iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(tc, csum, o->iterations, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(ta, amax, o->iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double mine[RK_N] = {cpu, clk.hz, mean_c, min_c, max_c, mean_all, sync.my_node};
    MPI_Gather(mine, RK_N, MPI_DOUBLE, all_rk, RK_N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int hl;
    MPI_Get_processor_name(host, &hl);

    int rc = 0;
    if (o->out_dir && (mkdir(o->out_dir, 0777) == 0 || errno == EEXIST)) {
        if (o->raw && write_raw(o, rank, tr, o->iterations) != 0) {
            fprintf(stderr, "isthmus-noise mpi-jitter (rank %d): cannot write raw file in %s: %s\n", rank, o->out_dir,
                    strerror(errno));
            rc = 1;
        }
    } else if (o->out_dir) {
        fprintf(stderr, "isthmus-noise mpi-jitter (rank %d): cannot create %s: %s\n", rank, o->out_dir, strerror(errno));
        rc = 1;
    }
    if (rank == 0) {
        double sum_lost = 0, sum_c = 0, sum_all = 0;
        for (int i = 0; i < o->iterations; i++) {
            sum_lost += cmax[i] - csum[i] / size;
            sum_c += csum[i] / size;
            sum_all += amax[i];
        }
        double lost_rel = sum_lost / sum_c;
        FILE *f = stdout;
        char path[4096];
        if (o->out_dir) {
            snprintf(path, sizeof path, "%s/mpi-jitter.json", o->out_dir);
            f = fopen(path, "w");
            if (!f) {
                fprintf(stderr, "isthmus-noise mpi-jitter (rank 0): cannot write %s: %s\n", path, strerror(errno));
                f = stdout;
                rc = 1;
            }
        }
        ism_json j;
        ism_json_init(&j, f);
        ism_json_obj(&j, NULL);
        ism_json_str(&j, "format", "isthmus-noise/1");
        ism_json_str(&j, "probe", "mpi-jitter");
        ism_json_str(&j, "command", o->argv_line);
        ism_json_obj(&j, "params");
        ism_json_i64(&j, "ranks", size);
        ism_json_i64(&j, "iterations", o->iterations);
        ism_json_dbl(&j, "compute_us", o->compute_us);
        ism_json_u64(&j, "work_iters", iters);
        ism_json_dbl(&j, "max_delay_us", o->max_delay_us);
        ism_json_str(&j, "collective", o->collective);
        ism_json_str(&j, "cpus", o->cpus);
        ism_json_i64(&j, "sync_rounds", o->sync_rounds);
        ism_json_end_obj(&j);
        int c0 = cpu;
        ism_meta_write(&j, &clk, &c0, cpu >= 0 ? 1 : 0, &before, &after);
        ism_json_obj(&j, "summary");
        ism_json_dbl(&j, "t_compute_mean_s", sum_c / o->iterations);
        ism_json_dbl(&j, "t_lost_mean_s", sum_lost / o->iterations);
        ism_json_dbl(&j, "t_all_mean_s", sum_all / o->iterations);
        ism_json_dbl(&j, "lost_rel", lost_rel);
        ism_json_end_obj(&j);
        ism_json_obj(&j, "iterations");
        const char *names[3] = {"t_compute_max_s", "t_compute_mean_s", "t_all_max_s"};
        for (int k = 0; k < 3; k++) {
            ism_json_arr(&j, names[k]);
            for (int i = 0; i < o->iterations; i++)
                ism_json_dbl(&j, NULL, k == 0 ? cmax[i] : k == 1 ? csum[i] / size : amax[i]);
            ism_json_end_arr(&j);
        }
        ism_json_arr(&j, "t_start_rank0_ticks");
        for (int i = 0; i < o->iterations; i++)
            ism_json_u64(&j, NULL, tr[3 * i]);
        ism_json_end_arr(&j);
        ism_json_end_obj(&j);
        ism_mpisync_write(&j, &sync, clk.hz);
        ism_json_arr(&j, "ranks");
        for (int r = 0; r < size; r++) {
            double *v = &all_rk[RK_N * r];
            ism_json_obj(&j, NULL);
            ism_json_i64(&j, "rank", r);
            ism_json_i64(&j, "cpu", (int64_t)v[RK_CPU]);
            ism_json_dbl(&j, "hz", v[RK_HZ]);
            ism_json_i64(&j, "node", (int64_t)v[RK_LEADER]);
            ism_json_dbl(&j, "t_compute_mean_s", v[RK_MEAN_C]);
            ism_json_dbl(&j, "t_compute_min_s", v[RK_MIN_C]);
            ism_json_dbl(&j, "t_compute_max_s", v[RK_MAX_C]);
            ism_json_dbl(&j, "t_all_mean_s", v[RK_MEAN_ALL]);
            ism_json_end_obj(&j);
        }
        ism_json_end_arr(&j);
        ism_json_end_obj(&j);
        if (f != stdout && fclose(f) != 0)
            rc = 1;
        printf("# mpi-jitter: %d ranks, %d iterations, %s, compute %.1f us\n", size, o->iterations, o->collective,
               o->compute_us);
        printf("t_compute_mean_us %.3f\nt_lost_mean_us %.3f\nt_all_mean_us %.3f\nlost_rel %.5f\n",
               sum_c / o->iterations * 1e6, sum_lost / o->iterations * 1e6, sum_all / o->iterations * 1e6, lost_rel);
        fflush(stdout);
        ism_meta_snap_free(&before);
        ism_meta_snap_free(&after);
    }
    free(cmax);
    free(csum);
    free(amax);
    free(all_rk);
    free(tr);
    free(tc);
    free(ta);
    free(cs.a2a_send);
    free(cs.a2a_recv);
    ism_mpisync_free(&sync);
    MPI_Finalize();
    return rc;
}
