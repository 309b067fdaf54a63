/* test_probes.c: real, short probe runs on this machine. Each probe runs pinned on one
 * cpu; for the detour checks a disturbing thread is pinned to the same cpu and made to
 * spin for known stretches, so the scheduler must take the cpu from the probe. The
 * checks are on what must hold whatever the machine's own noise: FTQ accounts for every
 * grid slot of the run (skipped ones as zero counts), and the forced detours are found. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../../tests/check.h"
#include "corelat.h"
#include "cpus.h"
#include "prio.h"
#include "probe.h"
#include "tsc.h"

static ism_noise_clock clk;

static ism_probe_params params(ism_probe_kind k, double dur)
{
    ism_probe_params p;
    memset(&p, 0, sizeof p);
    p.kind = k;
    p.duration_s = dur;
    p.ftq_log2 = 16;
    p.fwq_quantum_us = 50;
    p.selfish_k = 10;
    p.outlier_tol = 0.01;
    p.max_events = 100000;
    p.raw = 1;
    p.max_raw = 1000000;
    p.hz = clk.hz;
    return p;
}

typedef struct {
    int cpu;
    volatile int stop;
    int bursts;
} disturber;

/* Sleeps 20 ms, then spins 15 ms, on the probe's cpu, until told to stop. At real-time
 * priority where allowed (root), so that on a loaded machine it still takes the cpu from
 * the probe when it wakes; otherwise the fair scheduler shares the cpu between them. */
static void *disturb(void *v)
{
    disturber *d = v;
    ism_cpus_pin_self(d->cpu);
    ism_prio_apply(SCHED_FIFO, 1);
    while (!d->stop) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        uint64_t t0 = ism_noise_monoraw_ns();
        while (ism_noise_monoraw_ns() - t0 < 15000000 && !d->stop)
            ;
        d->bursts++;
    }
    return NULL;
}

static void run(ism_probe_params *p, ism_probe_result *r, int cpu, int disturbed)
{
    pthread_t th;
    disturber d = {cpu, 0, 0};
    CHECK(ism_probe_result_init(r, p, cpu) == 0, "alloc");
    CHECK(ism_cpus_pin_self(cpu) == 0, "pin");
    if (disturbed)
        pthread_create(&th, NULL, disturb, &d);
    uint64_t end = ism_noise_now() + (uint64_t)(p->duration_s * p->hz);
    if (p->kind == ISM_PROBE_FTQ)
        ism_probe_ftq(p, r, end);
    else if (p->kind == ISM_PROBE_FWQ)
        ism_probe_fwq(p, r, end);
    else
        ism_probe_selfish(p, r, end);
    if (disturbed) {
        d.stop = 1;
        pthread_join(th, NULL);
        CHECK(d.bursts >= 2, "disturber ran %d bursts", d.bursts);
    }
}

static void test_ftq(int cpu)
{
    ism_probe_params p = params(ISM_PROBE_FTQ, 0.25);
    ism_probe_result r;
    run(&p, &r, cpu, 1);
    uint64_t first = r.t_begin >> p.ftq_log2, last = r.t_end >> p.ftq_log2;
    /* every slot from the first whole one to the end is a sample, counted or zero */
    CHECK(r.samples + 2 >= last - first && r.samples <= last - first + 1, "samples %llu for slots %llu",
          (unsigned long long)r.samples, (unsigned long long)(last - first));
    CHECK(r.n_raw == r.samples, "raw %zu vs samples %llu", r.n_raw, (unsigned long long)r.samples);
    for (size_t i = 1; i < r.n_raw; i++)
        CHECK(r.raw[i].t == r.raw[i - 1].t + (1ull << p.ftq_log2), "slot %zu not on the grid", i);
    /* the disturber spins 15 ms at a time: ~570 slots of 2^16 ticks, so slots were skipped */
    CHECK(r.skipped_slots > 10, "skipped slots %llu", (unsigned long long)r.skipped_slots);
    CHECK(r.baseline > 0 && r.value_max == r.baseline, "baseline %llu", (unsigned long long)r.baseline);
    double frac = (double)r.sum_lost / (double)(r.samples << p.ftq_log2);
    /* the disturber alone takes ~40% of the cpu; other load on the machine only adds */
    CHECK(frac > 0.1 && frac <= 1.0, "noise fraction %.3f with a cpu shared with a spinner", frac);
    CHECK(ism_hist_quantile(&r.overhead, 0.5) > 0, "overhead measured");
    CHECK(r.ovh_median > 0 && r.ovh_p99 >= r.ovh_median && r.ovh_max >= r.ovh_p99 && r.ovh_mean > 0,
          "exact overhead %u/%u/%u", r.ovh_median, r.ovh_p99, r.ovh_max);
    ism_probe_result_free(&r);
}

static void test_fwq(int cpu)
{
    ism_probe_params p = params(ISM_PROBE_FWQ, 0.25);
    ism_probe_result r;
    run(&p, &r, cpu, 1);
    double q_us = (double)r.baseline / p.hz * 1e6;
    CHECK(q_us > 20 && q_us < 200, "quantum %.1f us for 50 requested", q_us);
    CHECK(r.n_events > 0 && r.value_max > 5 * r.baseline, "largest quantum %llu vs base %llu",
          (unsigned long long)r.value_max, (unsigned long long)r.baseline);
    ism_probe_result_free(&r);
}

static void test_selfish(int cpu)
{
    ism_probe_params p = params(ISM_PROBE_SELFISH, 0.25);
    ism_probe_result r;
    run(&p, &r, cpu, 1);
    CHECK(r.threshold == (uint64_t)(10.0 * (double)r.baseline), "threshold %llu = 10 x %llu",
          (unsigned long long)r.threshold, (unsigned long long)r.baseline);
    uint64_t big = 0;
    for (size_t i = 0; i < r.n_events; i++)
        if ((double)r.events[i].value / p.hz > 300e-6)
            big++;
    CHECK(big >= 2, "%llu detours > 300 us while a thread spun on the same cpu", (unsigned long long)big);
    for (size_t i = 1; i < r.n_events; i++)
        CHECK(r.events[i].t >= r.events[i - 1].t + r.events[i - 1].value, "events overlap at %zu", i);
    ism_probe_result_free(&r);
}

/* the cores' round trip: plausible, ordered in time, and the caller's affinity untouched */
static void test_corelat(int a, int b)
{
    cpu_set_t before, after;
    sched_getaffinity(0, sizeof before, &before);
    ism_corelat_opts o = {a, b, 500, 3, 0.002, 10}; /* few trips: a busy machine slows each one */
    double ns[3], t[3];
    char err[256] = "";
    CHECK(ism_corelat_run(&o, ns, t, err, sizeof err) == 0, "corelat: %s", err);
    for (int i = 0; i < 3; i++)
        /* 0.1-1 us on an idle machine; with other processes on both cpus a round trip can
         * wait for a time slice, so the upper bound is only "measured something" */
        CHECK(ns[i] > 5 && ns[i] < 50e6, "round trip %.1f ns between cpus %d and %d", ns[i], a, b);
    CHECK(t[0] >= 0 && t[1] >= t[0] + 0.002 && t[2] >= t[1] + 0.002, "samples at %.4f %.4f %.4f s", t[0], t[1], t[2]);
    sched_getaffinity(0, sizeof after, &after);
    CHECK(CPU_EQUAL(&before, &after), "corelat changed the caller's affinity");
    o.cpu_b = a;
    CHECK(ism_corelat_run(&o, ns, t, err, sizeof err) != 0 && strstr(err, "must differ"), "same cpu: %s", err);
    o.cpu_b = ISM_NOISE_MAX_CPUS - 1;
    CHECK(ism_corelat_run(&o, ns, t, err, sizeof err) != 0 && strstr(err, "cannot pin to cpu 4095"), "missing cpu: %s",
          err);
}

int main(void)
{
    ism_noise_clock_init(&clk, 0, 50);
    int cpus[64];
    int n = ism_cpus_allowed(cpus, 64);
    int cpu = cpus[n - 1];
    printf("clock %s, %.3f GHz, read %.0f ticks; probing cpu %d\n", clk.kind == ISM_NOISE_CLOCK_TSC ? "tsc" : "monotonic_raw",
           clk.hz * 1e-9, clk.read_cycles, cpu);
    test_ftq(cpu);
    test_fwq(cpu);
    test_selfish(cpu);
    if (n >= 2)
        test_corelat(cpus[0], cpus[1]);
    else
        printf("one cpu allowed: the round trip between two is not tested\n");
    /* the clock_gettime fallback works too */
    ism_noise_clock_init(&clk, 1, 50);
    CHECK(clk.kind == ISM_NOISE_CLOCK_MONORAW && clk.hz == 1e9, "fallback clock");
    test_selfish(cpu);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    else
        printf("noise probes: all checks passed\n");
    return failures ? 1 : 0;
}
