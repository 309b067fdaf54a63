/* main.c: isthmus-noise, the OS-noise probes in one binary. Sub-commands:
 *   ftq | fwq | selfish   single-core probes, one pinned thread per core of --cpus
 *   mpi-jitter            the n-process probe (run it under `isthmus run` or mpirun)
 *   inject                periodic busy bursts, to validate the analysis
 *   clock                 which clock the probes use, its rate and its cost
 *   corelat               the cache-line round trip between two cpus, over time
 * Options are parsed strictly: a bad value is an error naming the option, never a default. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corelat.h"
#include "cpus.h"
#include "inject.h"
#include "meta.h"
#include "mpijitter.h"
#include "mpisync.h"
#include "prio.h"
#include "probe.h"
#include "runfile.h"
#include "tsc.h"

static const char usage[] =
    "usage: isthmus-noise <ftq|fwq|selfish|mpi-jitter|inject|clock|corelat> [options]\n"
    "probes (ftq, fwq, selfish):\n"
    "  --cpus LIST          cores to probe at once, one pinned thread each (default: all allowed)\n"
    "  --duration S         seconds of measuring per core (default 10)\n"
    "  --interval-log2 N    ftq: interval of 2^N clock ticks (default 20)\n"
    "  --quantum-us US      fwq: work quantum (default 100)\n"
    "  --k K                selfish: threshold = K x the ordinary loop time (default 10)\n"
    "  --threshold-ns NS    selfish: fixed threshold instead of --k\n"
    "  --tol F              ftq/fwq: outlier beyond this relative loss (default 0.01)\n"
    "  --max-events N       outlier events kept per core (default 200000)\n"
    "  --raw                also write every sample (TSV per core)\n"
    "  --max-raw N          raw samples kept per core (default 2000000)\n"
    "  --out DIR            write <probe>-<tag>.json (and raw files) into DIR (default: JSON to stdout)\n"
    "  --tag TAG            file name tag (default: host name)\n"
    "  --clock tsc|monotonic_raw  force the clock (default: tsc where constant and nonstop)\n"
    "  --probe-priority P   run the probe threads at fifo:N, rr:N or nice:N (root), so that they\n"
    "                       do not share their cpu with ordinary processes (mpi-jitter too)\n"
    "  --mpi                run as MPI ranks (under isthmus run or mpirun): node-local rank i probes\n"
    "                       every lsize-th cpu of --cpus from the i-th; node clocks are mapped onto\n"
    "                       rank 0's (clockmap.json); one file per rank\n"
    "mpi-jitter:\n"
    "  --iterations N (1000) --compute-us US (1000) --max-delay-us US (1000)\n"
    "  --collective barrier|allreduce|alltoall (barrier) --cpus LIST --out DIR --raw\n"
    "  --sync-rounds N (64) --seed N\n"
    "  --pin-by-rank        index --cpus by world rank, not node-local rank (sites on one host)\n"
    "inject:\n"
    "  --period-ms MS --duration-ms MS [--cpu N] [--priority fifo:N|rr:N|nice:N|normal]\n"
    "  [--for S] [--log FILE]\n"
    "corelat (JSON on stdout):\n"
    "  --cpus A,B           the two cpus (default: the first two allowed)\n"
    "  --samples N (10) --interval-ms MS (100) --trips N round trips per sample (100000)\n";

static int bad(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "isthmus-noise: %s '%s': expected %s\n", opt, val, want);
    return 2;
}

static int num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e || errno || !isfinite(v) || v < lo || v > hi) {
        char want[96];
        snprintf(want, sizeof want, "a number in [%g, %g]", lo, hi);
        bad(opt, s, want);
        return -1;
    }
    *out = v;
    return 0;
}

static char *join_argv(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = 0; i < argc; i++) {
        strcat(s, argv[i]);
        if (i + 1 < argc)
            strcat(s, " ");
    }
    return s;
}

enum {
    O_CPUS = 1000, O_DURATION, O_LOG2, O_QUANTUM, O_K, O_THR, O_TOL, O_MAXEV, O_RAW, O_MAXRAW, O_OUT, O_TAG,
    O_CLOCK, O_PPRIO, O_MPI, O_PINW, O_ITER, O_COMPUTE, O_DELAY, O_COLL, O_SYNC, O_SEED, O_PERIOD, O_BURST, O_CPU, O_PRIO, O_FOR, O_LOG,
    O_SAMPLES, O_INTERVAL, O_TRIPS,
};

static const struct option opts[] = {
    {"cpus", 1, 0, O_CPUS}, {"duration", 1, 0, O_DURATION}, {"interval-log2", 1, 0, O_LOG2},
    {"quantum-us", 1, 0, O_QUANTUM}, {"k", 1, 0, O_K}, {"threshold-ns", 1, 0, O_THR}, {"tol", 1, 0, O_TOL},
    {"max-events", 1, 0, O_MAXEV}, {"raw", 0, 0, O_RAW}, {"max-raw", 1, 0, O_MAXRAW}, {"out", 1, 0, O_OUT},
    {"tag", 1, 0, O_TAG}, {"clock", 1, 0, O_CLOCK}, {"iterations", 1, 0, O_ITER}, {"pin-by-rank", 0, 0, O_PINW}, {"mpi", 0, 0, O_MPI}, {"probe-priority", 1, 0, O_PPRIO}, {"compute-us", 1, 0, O_COMPUTE},
    {"max-delay-us", 1, 0, O_DELAY}, {"collective", 1, 0, O_COLL}, {"sync-rounds", 1, 0, O_SYNC},
    {"seed", 1, 0, O_SEED}, {"period-ms", 1, 0, O_PERIOD}, {"duration-ms", 1, 0, O_BURST}, {"cpu", 1, 0, O_CPU},
    {"priority", 1, 0, O_PRIO}, {"for", 1, 0, O_FOR}, {"log", 1, 0, O_LOG},
    {"samples", 1, 0, O_SAMPLES}, {"interval-ms", 1, 0, O_INTERVAL}, {"trips", 1, 0, O_TRIPS}, {"help", 0, 0, 'h'}, {0, 0, 0, 0},
};

typedef struct {
    ism_probe_params p;
    ism_mpijitter_opts mj;
    ism_inject_opts inj;
    ism_corelat_opts cl;
    const char *cpus, *out, *tag;
    int force_fallback;
    int mpi;
    const char *prio;  /* probe threads' priority, or NULL to keep the caller's */
} cli;

static int parse(cli *c, int argc, char **argv)
{
    double v;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        const char *a = optarg;
        switch (o) {
        case O_CPUS: c->cpus = a; c->mj.cpus = a; break;
        case O_DURATION: if (num("--duration", a, 1e-3, 1e6, &c->p.duration_s)) return 2; break;
        case O_LOG2: if (num("--interval-log2", a, 8, 40, &v)) return 2; c->p.ftq_log2 = (unsigned)v; break;
        case O_QUANTUM: if (num("--quantum-us", a, 0.1, 1e7, &c->p.fwq_quantum_us)) return 2; break;
        case O_K: if (num("--k", a, 1.01, 1e6, &c->p.selfish_k)) return 2; break;
        case O_THR: if (num("--threshold-ns", a, 1, 1e12, &c->p.threshold_ns)) return 2; break;
        case O_TOL: if (num("--tol", a, 0, 0.99, &c->p.outlier_tol)) return 2; break;
        case O_MAXEV: if (num("--max-events", a, 0, 1e9, &v)) return 2; c->p.max_events = (size_t)v; break;
        case O_RAW: c->p.raw = 1; c->mj.raw = 1; break;
        case O_MAXRAW: if (num("--max-raw", a, 1, 1e10, &v)) return 2; c->p.max_raw = (size_t)v; break;
        case O_OUT: c->out = a; c->mj.out_dir = a; break;
        case O_TAG: c->tag = a; break;
        case O_CLOCK:
            if (!strcmp(a, "tsc")) c->force_fallback = 0;
            else if (!strcmp(a, "monotonic_raw")) c->force_fallback = 1;
            else return bad("--clock", a, "tsc or monotonic_raw");
            break;
        case O_PINW: c->mj.pin_world = 1; break;
        case O_MPI: c->mpi = 1; break;
        case O_PPRIO: {
            int pol, val;
            if (ism_prio_parse(a, &pol, &val) != 0)
                return bad("--probe-priority", a, ISM_PRIO_SYNTAX);
            c->prio = a;
            c->mj.priority = a;
            break;
        }
        case O_ITER: if (num("--iterations", a, 1, 1e8, &v)) return 2; c->mj.iterations = (int)v; break;
        case O_COMPUTE: if (num("--compute-us", a, 0.01, 1e8, &c->mj.compute_us)) return 2; break;
        case O_DELAY: if (num("--max-delay-us", a, 0, 1e8, &c->mj.max_delay_us)) return 2; break;
        case O_COLL:
            if (strcmp(a, "barrier") && strcmp(a, "allreduce") && strcmp(a, "alltoall"))
                return bad("--collective", a, "barrier, allreduce or alltoall");
            c->mj.collective = a;
            break;
        case O_SYNC: if (num("--sync-rounds", a, 4, 1e6, &v)) return 2; c->mj.sync_rounds = (int)v; break;
        case O_SEED: if (num("--seed", a, 0, 4294967295.0, &v)) return 2; c->mj.seed = (unsigned)v; break;
        case O_PERIOD: if (num("--period-ms", a, 0.01, 1e7, &v)) return 2; c->inj.period_s = v * 1e-3; break;
        case O_BURST: if (num("--duration-ms", a, 0.001, 1e7, &v)) return 2; c->inj.burst_s = v * 1e-3; break;
        case O_CPU: if (num("--cpu", a, 0, ISM_NOISE_MAX_CPUS - 1, &v)) return 2; c->inj.cpu = (int)v; break;
        case O_PRIO: c->inj.priority = a; break;
        case O_FOR: if (num("--for", a, 0.001, 1e9, &c->inj.run_s)) return 2; break;
        case O_LOG: c->inj.log_path = a; break;
        case O_SAMPLES: if (num("--samples", a, 1, 1e6, &v)) return 2; c->cl.samples = (int)v; break;
        case O_INTERVAL: if (num("--interval-ms", a, 0, 1e7, &v)) return 2; c->cl.interval_s = v * 1e-3; break;
        case O_TRIPS: if (num("--trips", a, 1, 1e10, &v)) return 2; c->cl.trips = (long)v; break;
        case 'h': fputs(usage, stdout); exit(0);
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "isthmus-noise: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return 0;
}

typedef struct {
    const ism_probe_params *p;
    ism_probe_result *r;
    uint64_t t_end;
    const char *prio;
} probe_job;

static void probe_thread(void *arg, int pin_error)
{
    probe_job *j = arg;
    j->r->error = pin_error;
    j->r->tid = (int)syscall(SYS_gettid);
    if (pin_error)
        return;
    if (j->prio) {
        int pol, val;
        ism_prio_parse(j->prio, &pol, &val);
        j->r->error = ism_prio_apply(pol, val);
        if (j->r->error)
            return;
    }
    /* every thread ends at the same tick; the start was released together by the barrier */
    uint64_t end = ism_noise_now() + (uint64_t)(j->p->duration_s * j->p->hz);
    j->t_end = end;
    switch (j->p->kind) {
    case ISM_PROBE_FTQ: ism_probe_ftq(j->p, j->r, end); break;
    case ISM_PROBE_FWQ: ism_probe_fwq(j->p, j->r, end); break;
    case ISM_PROBE_SELFISH: ism_probe_selfish(j->p, j->r, end); break;
    }
}

static int write_clockmap(const char *dir, const ism_mpisync *s, double hz)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/clockmap.json", dir ? dir : ".");
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "isthmus-noise: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    ism_json j;
    ism_json_init(&j, f);
    ism_json_obj(&j, NULL);
    ism_json_str(&j, "format", "isthmus-noise-clockmap/1");
    ism_json_dbl(&j, "hz", hz);
    ism_mpisync_write(&j, s, hz);
    ism_json_end_obj(&j);
    return fclose(f);
}

static int run_probe(cli *c, int argc, char **argv)
{
    int cpus[ISM_NOISE_MAX_CPUS], n;
    char err[256];
    ism_mpisync sync;
    if (c->mpi) {
        MPI_Init(&argc, &argv);
        if (ism_mpisync_init(&sync, c->mj.sync_rounds, 2) != 0) {
            fprintf(stderr, "isthmus-noise: out of memory for the clock synchronisation\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (c->cpus)
        n = ism_cpus_parse(c->cpus, cpus, ISM_NOISE_MAX_CPUS, err, sizeof err);
    else
        n = ism_cpus_allowed(cpus, ISM_NOISE_MAX_CPUS);
    if (n > 0 && c->mpi) {
        /* node-local rank i takes cpus i, i + lsize, ... of the list */
        int k = 0;
        for (int i = sync.lrank; i < n; i += sync.lsize)
            cpus[k++] = cpus[i];
        n = k;
        if (n == 0)
            snprintf(err, sizeof err, "node-local rank %d of %d has no cpu left in '%s'", sync.lrank, sync.lsize,
                     c->cpus ? c->cpus : "(allowed cpus)");
    }
    if (n <= 0) {
        fprintf(stderr, "isthmus-noise: --cpus: %s\n", c->cpus || c->mpi ? err : "no cpu allowed");
        if (c->mpi)
            MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    long online = sysconf(_SC_NPROCESSORS_CONF);
    for (int i = 0; i < n; i++)
        if (cpus[i] >= online) {
            fprintf(stderr, "isthmus-noise: --cpus: cpu %d does not exist (this machine has %ld)\n", cpus[i], online);
            return 2;
        }
    ism_noise_clock clk;
    if (ism_noise_clock_init(&clk, c->force_fallback, 100) != 0) {
        fprintf(stderr, "isthmus-noise: no usable clock (%s): %s\n", clk.why, clk.check.verdict);
        if (c->mpi)
            MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    c->p.hz = clk.hz;
    ism_probe_result *res = calloc((size_t)n, sizeof *res);
    probe_job *jobs = calloc((size_t)n, sizeof *jobs);
    if (!res || !jobs) {
        fprintf(stderr, "isthmus-noise: out of memory for %d cores\n", n);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (ism_probe_result_init(&res[i], &c->p, cpus[i]) != 0) {
            fprintf(stderr, "isthmus-noise: out of memory for cpu %d's buffers (lower --max-events/--max-raw)\n", cpus[i]);
            return 1;
        }
        jobs[i] = (probe_job){&c->p, &res[i], 0, c->prio};
    }
    if (c->mpi) {
        ism_mpisync_phase(&sync);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    ism_meta_snap before, after;
    ism_meta_snap_take(&before);
    if (ism_cpus_run(cpus, n, probe_thread, jobs, sizeof *jobs, err, sizeof err) != 0) {
        fprintf(stderr, "isthmus-noise: %s\n", err);
        _exit(1);
    }
    ism_meta_snap_take(&after);
    char host[256] = "node", tag[320];
    gethostname(host, sizeof host - 1);
    char *line = join_argv(argc, argv);
    ism_runfile_opts ro = {c->out, c->tag ? c->tag : host, line, -1, 0, 0};
    if (c->mpi) {
        MPI_Barrier(MPI_COMM_WORLD);
        ism_mpisync_phase(&sync);
        snprintf(tag, sizeof tag, "%s-rank%d", c->tag ? c->tag : host, sync.rank);
        ro.tag = tag;
        ro.mpi_rank = sync.rank;
        ro.mpi_size = sync.size;
        ro.mpi_node = sync.my_node;
        if (c->out && sync.rank == 0)
            mkdir(c->out, 0777);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int rc = ism_runfile_write(&ro, &c->p, &clk, cpus, res, n, &before, &after) ? 1 : 0;
    if (c->out)
        ism_runfile_summary(stdout, &c->p, &clk, res, n);
    for (int i = 0; i < n; i++) {
        if (res[i].refused[0])
            fprintf(stderr, "isthmus-noise %s: cpu %d not measured: %s\n", ism_probe_name(c->p.kind), res[i].cpu,
                    res[i].refused);
        if (res[i].error || res[i].refused[0])
            rc = 1;
        ism_probe_result_free(&res[i]);
    }
    free(line);
    free(res);
    free(jobs);
    ism_meta_snap_free(&before);
    ism_meta_snap_free(&after);
    if (c->mpi) {
        if (sync.rank == 0 && write_clockmap(c->out, &sync, clk.hz) != 0)
            rc = 1;
        ism_mpisync_free(&sync);
        MPI_Finalize();
    }
    return rc;
}

static int run_clock(cli *c)
{
    ism_noise_clock clk;
    int rc = ism_noise_clock_init(&clk, c->force_fallback, 200);
    printf("clock %s\nhz %.0f\nhz_source %s\nread_ticks %.1f\nwhy %s\ncheck %s\n",
           clk.kind == ISM_NOISE_CLOCK_TSC ? "tsc" : "monotonic_raw", clk.hz, clk.hz_source, clk.read_cycles, clk.why,
           clk.check.verdict);
    return rc ? 1 : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* corelat: the two cpus from --cpus (exactly two) or the first two allowed */
static int run_corelat(cli *c)
{
    int cpus[ISM_NOISE_MAX_CPUS], n;
    char err[512];
    if (c->cpus) {
        n = ism_cpus_parse(c->cpus, cpus, ISM_NOISE_MAX_CPUS, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "isthmus-noise: --cpus: %s\n", err);
            return 2;
        }
        if (n != 2) {
            fprintf(stderr, "isthmus-noise corelat: --cpus '%s': expected exactly two cpus\n", c->cpus);
            return 2;
        }
    } else if ((n = ism_cpus_allowed(cpus, ISM_NOISE_MAX_CPUS)) < 2) {
        fprintf(stderr, "isthmus-noise corelat: this process may run on %d cpu(s); it needs two\n", n);
        return 2;
    }
    long online = sysconf(_SC_NPROCESSORS_CONF);
    for (int i = 0; i < 2; i++)
        if (cpus[i] >= online) {
            fprintf(stderr, "isthmus-noise: --cpus: cpu %d does not exist (this machine has %ld)\n", cpus[i], online);
            return 2;
        }
    c->cl.cpu_a = cpus[0];
    c->cl.cpu_b = cpus[1];
    c->cl.limit_s = 10;
    double *ns = calloc((size_t)c->cl.samples, sizeof *ns), *t = calloc((size_t)c->cl.samples, sizeof *t);
    double *sorted = calloc((size_t)c->cl.samples, sizeof *sorted);
    if (!ns || !t || !sorted) {
        fprintf(stderr, "isthmus-noise: out of memory for %d samples\n", c->cl.samples);
        return 1;
    }
    int rc = 0;
    ism_timer_check timer;
    if (ism_corelat_run(&c->cl, ns, t, &timer, err, sizeof err) != 0) {
        fprintf(stderr, "isthmus-noise corelat: %s\n", err);
        rc = 1;
    } else {
        memcpy(sorted, ns, (size_t)c->cl.samples * sizeof *ns);
        qsort(sorted, (size_t)c->cl.samples, sizeof *sorted, cmp_dbl);
        int k = c->cl.samples;
        double med = k % 2 ? sorted[k / 2] : 0.5 * (sorted[k / 2 - 1] + sorted[k / 2]);
        ism_json j;
        ism_json_init(&j, stdout);
        ism_json_obj(&j, NULL);
        ism_json_str(&j, "format", "isthmus-noise-corelat/1");
        ism_json_arr(&j, "cpus");
        ism_json_i64(&j, NULL, c->cl.cpu_a);
        ism_json_i64(&j, NULL, c->cl.cpu_b);
        ism_json_end_arr(&j);
        ism_json_i64(&j, "trips", c->cl.trips);
        ism_meta_timer(&j, "timer", &timer, 1e9);
        ism_json_dbl(&j, "interval_ms", c->cl.interval_s * 1e3);
        ism_json_dbl(&j, "median_ns", med);
        ism_json_dbl(&j, "min_ns", sorted[0]);
        ism_json_dbl(&j, "max_ns", sorted[k - 1]);
        ism_json_arr(&j, "t_s");
        for (int i = 0; i < k; i++)
            ism_json_dbl(&j, NULL, t[i]);
        ism_json_end_arr(&j);
        ism_json_arr(&j, "round_trip_ns");
        for (int i = 0; i < k; i++)
            ism_json_dbl(&j, NULL, ns[i]);
        ism_json_end_arr(&j);
        ism_json_end_obj(&j);
    }
    free(ns);
    free(t);
    free(sorted);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    cli c;
    memset(&c, 0, sizeof c);
    c.p.duration_s = 10;
    c.p.ftq_log2 = 20;
    c.p.fwq_quantum_us = 100;
    c.p.selfish_k = 10;
    c.p.outlier_tol = 0.01;
    c.p.max_events = 200000;
    c.p.max_raw = 2000000;
    c.mpi = 0;
    c.mj = (ism_mpijitter_opts){1000, 1000, 1000, "barrier", NULL, 0, NULL, 0, 64, 12345, NULL, NULL};
    c.inj = (ism_inject_opts){0, 0, -1, "normal", 0, NULL, 1000000};
    c.cl = (ism_corelat_opts){0, 1, 100000, 10, 0.1, 10};
    if (!strcmp(sub, "ftq"))
        c.p.kind = ISM_PROBE_FTQ;
    else if (!strcmp(sub, "fwq"))
        c.p.kind = ISM_PROBE_FWQ;
    else if (!strcmp(sub, "selfish"))
        c.p.kind = ISM_PROBE_SELFISH;
    else if (strcmp(sub, "mpi-jitter") && strcmp(sub, "inject") && strcmp(sub, "clock") &&
             strcmp(sub, "corelat")) {
        fprintf(stderr, "isthmus-noise: unknown sub-command '%s'\n%s", sub, usage);
        return 2;
    }
    int rc = parse(&c, argc - 1, argv + 1);
    if (rc)
        return rc;
    if (!strcmp(sub, "clock"))
        return run_clock(&c);
    if (!strcmp(sub, "corelat"))
        return run_corelat(&c);
    if (!strcmp(sub, "inject")) {
        if (!(c.inj.period_s > 0) || !(c.inj.burst_s > 0)) {
            fprintf(stderr, "isthmus-noise inject: --period-ms and --duration-ms are required\n");
            return 2;
        }
        return ism_inject_run(&c.inj);
    }
    if (!strcmp(sub, "mpi-jitter")) {
        char *line = join_argv(argc, argv);
        c.mj.argv_line = line;
        rc = ism_mpijitter_run(&c.mj, &argc, &argv);
        free(line);
        return rc;
    }
    return run_probe(&c, argc, argv);
}
