/* test_probes.c: real, short probe runs on this machine. Each probe runs pinned on one
 * cpu; for the detour checks a disturbing thread is pinned to the same cpu and made to
 * spin for stretches of time, so the scheduler must take the cpu from the probe. How the
 * scheduler shares the cpu is not assumed (CFS and EEVDF slice two spinning threads
 * differently; at real-time priority the disturber takes the cpu at once): the disturber
 * records when it actually ran, from its own clock reads, and the checks are that the
 * probe saw exactly that: it lost every stretch the disturber ran (selfish and FWQ: the
 * stretch lies in the probe's detours; FTQ: every grid slot inside it counted nothing),
 * whatever the machine's own noise adds. FTQ also accounts for every grid slot of the run
 * (skipped ones as zero counts). */
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

#define MAX_STRETCHES 8192

typedef struct {
    uint64_t a, b; /* the disturber's first and last clock read of a stretch on the cpu */
} stretch;

typedef struct {
    int cpu;
    int fifo;            /* ask for SCHED_FIFO (granted only to root) */
    int got_fifo;
    volatile int stop;
    int bursts;
    uint64_t gap;        /* a longer pause between two of its reads: it was switched out */
    stretch ran[MAX_STRETCHES];
    size_t n_ran;
} disturber;

static void ran(disturber *d, uint64_t a, uint64_t b)
{
    if (d->n_ran < MAX_STRETCHES)
        d->ran[d->n_ran++] = (stretch){a, b};
}

/* Sleeps 20 ms, then spins 15 ms (wall time), on the probe's cpu, until told to stop,
 * recording the stretches it ran. */
static void *disturb(void *v)
{
    disturber *d = v;
    ism_cpus_pin_self(d->cpu);
    d->got_fifo = d->fifo && ism_prio_apply(SCHED_FIFO, 1) == 0;
    while (!d->stop) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        uint64_t t0 = ism_noise_monoraw_ns(), first = ism_noise_now(), last = first;
        while (ism_noise_monoraw_ns() - t0 < 15000000 && !d->stop) {
            uint64_t t = ism_noise_now();
            if (t - last > d->gap) {
                ran(d, first, last);
                first = t;
            }
            last = t;
        }
        ran(d, first, last);
        d->bursts++;
    }
    return NULL;
}

static void run(ism_probe_params *p, ism_probe_result *r, int cpu, disturber *d)
{
    pthread_t th;
    CHECK(ism_probe_result_init(r, p, cpu) == 0, "alloc");
    CHECK(ism_cpus_pin_self(cpu) == 0, "pin");
    if (d) {
        d->cpu = cpu;
        d->gap = (uint64_t)(2e-6 * p->hz);
        pthread_create(&th, NULL, disturb, d);
    }
    uint64_t end = ism_noise_now() + (uint64_t)(p->duration_s * p->hz);
    if (p->kind == ISM_PROBE_FTQ)
        ism_probe_ftq(p, r, end);
    else if (p->kind == ISM_PROBE_FWQ)
        ism_probe_fwq(p, r, end);
    else
        ism_probe_selfish(p, r, end);
    CHECK(!r->refused[0], "probe refused: %s", r->refused);
    if (d) {
        d->stop = 1;
        pthread_join(th, NULL);
        CHECK(d->bursts >= 2, "disturber ran %d bursts", d->bursts);
        CHECK(d->n_ran < MAX_STRETCHES, "more than %d stretches recorded", MAX_STRETCHES);
    }
}

/* The disturber's time on the cpu inside the probe's run, in stretches of at least `least`
 * ticks. At SCHED_FIFO such a stretch must exist (it takes the cpu for 15 ms at a time);
 * sharing the cpu with the fair scheduler and the machine's other processes it gets what
 * they leave, which may be none that long: then there is nothing to check, and it says so. */
static uint64_t disturber_time(const disturber *d, const ism_probe_result *r, uint64_t least, const char *probe)
{
    uint64_t total = 0;
    size_t n = 0;
    for (size_t i = 0; i < d->n_ran; i++)
        if (d->ran[i].a >= r->t_begin && d->ran[i].b <= r->t_end && d->ran[i].b - d->ran[i].a >= least) {
            total += d->ran[i].b - d->ran[i].a;
            n++;
        }
    CHECK(n > 0 || !d->got_fifo, "%s: the disturber (fifo) never ran %.0f us at a stretch inside the probe's run (%zu "
          "stretches)", probe, (double)least * 1e6 / clk.hz, d->n_ran);
    printf("%s (%s): the disturber ran %.1f ms of %.1f in %zu stretches of %.0f us or more\n", probe,
           d->got_fifo ? "fifo" : "fair share", (double)total * 1e3 / clk.hz,
           (double)(r->t_end - r->t_begin) * 1e3 / clk.hz, n, (double)least * 1e6 / clk.hz);
    return total;
}

/* Every stretch of at least `least` ticks the disturber ran inside the probe's run lies,
 * to 95 % or more, inside the probe's detours (events [t, t + value]). */
static void check_stretches_in_detours(const disturber *d, const ism_probe_result *r, uint64_t least, const char *probe)
{
    CHECK(r->dropped_events == 0, "%s: %zu detours not kept: the check needs them all", probe, r->dropped_events);
    size_t bad = 0;
    for (size_t i = 0; i < d->n_ran && bad < 5; i++) {
        const stretch *s = &d->ran[i];
        if (s->a < r->t_begin || s->b > r->t_end || s->b - s->a < least)
            continue;
        uint64_t covered = 0;
        for (size_t e = 0; e < r->n_events; e++) {
            uint64_t lo = r->events[e].t, hi = r->events[e].t + r->events[e].value;
            lo = lo > s->a ? lo : s->a;
            hi = hi < s->b ? hi : s->b;
            covered += hi > lo ? hi - lo : 0;
        }
        bad += covered * 100 < (s->b - s->a) * 95;
        CHECK(covered * 100 >= (s->b - s->a) * 95,
              "%s: the disturber (%s) ran %.1f us from tick %llu, but only %.1f us of it lie in the probe's detours",
              probe, d->got_fifo ? "fifo" : "fair share", (double)(s->b - s->a) * 1e6 / clk.hz,
              (unsigned long long)s->a, (double)covered * 1e6 / clk.hz);
    }
}

static disturber *new_disturber(int fifo)
{
    disturber *d = calloc(1, sizeof *d);
    if (!d) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    d->fifo = fifo;
    return d;
}

static void test_ftq(int cpu, int fifo)
{
    ism_probe_params p = params(ISM_PROBE_FTQ, 0.25);
    ism_probe_result r;
    disturber *d = new_disturber(fifo);
    run(&p, &r, cpu, d);
    const unsigned n = p.ftq_log2;
    const uint64_t q = 1ull << n;
    uint64_t first = r.t_begin >> n, last = r.t_end >> n;
    /* every slot from the first whole one to the end is a sample, counted or zero */
    CHECK(r.samples + 2 >= last - first && r.samples <= last - first + 1, "samples %llu for slots %llu",
          (unsigned long long)r.samples, (unsigned long long)(last - first));
    CHECK(r.n_raw == r.samples, "raw %zu vs samples %llu", r.n_raw, (unsigned long long)r.samples);
    for (size_t i = 1; i < r.n_raw; i++)
        CHECK(r.raw[i].t == r.raw[i - 1].t + q, "slot %zu not on the grid", i);
    /* every grid slot wholly inside a stretch the disturber ran is one the probe could not
     * count in: zero, and skipped */
    uint64_t inside = 0, bad = 0;
    for (size_t i = 0; i < d->n_ran; i++) {
        const stretch *s = &d->ran[i];
        if (s->a < r.t_begin || s->b > r.t_end)
            continue;
        for (uint64_t slot = (s->a >> n) + 1; (slot + 1) << n <= s->b; slot++) {
            inside++;
            uint64_t k = slot - first;
            if (k < r.n_raw && r.raw[k].value != 0 && bad++ < 5)
                CHECK(0, "ftq: slot %llu lies inside a stretch the disturber ran, but counted %llu",
                      (unsigned long long)slot, (unsigned long long)r.raw[k].value);
        }
    }
    CHECK((inside > 0 || !d->got_fifo) && r.skipped_slots >= inside,
          "ftq: %llu slots inside the disturber's stretches, %llu skipped", (unsigned long long)inside,
          (unsigned long long)r.skipped_slots);
    CHECK(r.baseline > 0 && r.value_max >= r.baseline && r.threshold < r.baseline, "baseline %llu, threshold %llu",
          (unsigned long long)r.baseline, (unsigned long long)r.threshold);
    /* the probe lost at least those slots whole (the partly taken slots at a stretch's ends
     * count as the threshold decides); other load on the machine only adds */
    disturber_time(d, &r, 0, "ftq");
    CHECK(r.sum_lost >= inside << n && r.sum_lost <= r.samples << n, "ftq: lost %llu ticks, %llu slots of %llu taken",
          (unsigned long long)r.sum_lost, (unsigned long long)inside, (unsigned long long)q);
    CHECK(ism_hist_quantile(&r.overhead, 0.5) > 0, "overhead measured");
    CHECK(r.ovh_median > 0 && r.ovh_p99 >= r.ovh_median && r.ovh_max >= r.ovh_p99 && r.ovh_mean > 0,
          "exact overhead %u/%u/%u", r.ovh_median, r.ovh_p99, r.ovh_max);
    ism_probe_result_free(&r);
    free(d);
}

/* FWQ's quanta are back to back and cover the run: each one measured at least the time the
 * disturber ran inside it, and one it took more than the threshold from is an outlier.
 * How the disturber's stretches fall (one long one, or short ones with other processes
 * between them) is whatever the scheduler did. */
static void check_quanta(const disturber *d, const ism_probe_result *r)
{
    CHECK(r->n_raw == r->samples && r->dropped_events == 0, "fwq: %zu raw of %llu quanta, %zu events dropped",
          r->n_raw, (unsigned long long)r->samples, r->dropped_events);
    uint64_t total = 0, heavy = 0;
    size_t e = 0, bad = 0;
    for (size_t k = 0; k < r->n_raw && bad < 5; k++) {
        const uint64_t lo = r->raw[k].t, hi = lo + r->raw[k].value;
        if (k > 0)
            CHECK(lo == r->raw[k - 1].t + r->raw[k - 1].value, "fwq: quantum %zu does not start where %zu ended", k,
                  k - 1);
        uint64_t took = 0;
        for (size_t i = 0; i < d->n_ran; i++) {
            uint64_t a = d->ran[i].a > lo ? d->ran[i].a : lo, b = d->ran[i].b < hi ? d->ran[i].b : hi;
            took += b > a ? b - a : 0;
        }
        total += took;
        while (e < r->n_events && r->events[e].t < lo)
            e++;
        int outlier = e < r->n_events && r->events[e].t == lo;
        bad += took > r->raw[k].value || (took > r->threshold && !outlier);
        CHECK(took <= r->raw[k].value, "fwq: quantum %zu lasted %llu ticks, the disturber ran %llu inside it", k,
              (unsigned long long)r->raw[k].value, (unsigned long long)took);
        if (took > r->threshold) {
            heavy++;
            CHECK(outlier, "fwq: the disturber (%s) ran %.1f us inside quantum %zu, over the threshold (%.1f us), "
                  "but it is no outlier", d->got_fifo ? "fifo" : "fair share", (double)took * 1e6 / clk.hz, k,
                  (double)r->threshold * 1e6 / clk.hz);
        }
    }
    CHECK(total > 0, "fwq: the disturber (%s) never ran during the probe's run", d->got_fifo ? "fifo" : "fair share");
    printf("fwq (%s): the disturber ran %.1f ms of %.1f, over the threshold in %llu quanta\n",
           d->got_fifo ? "fifo" : "fair share", (double)total * 1e3 / clk.hz,
           (double)(r->t_end - r->t_begin) * 1e3 / clk.hz, (unsigned long long)heavy);
}

static void test_fwq(int cpu, int fifo)
{
    ism_probe_params p = params(ISM_PROBE_FWQ, 0.25);
    ism_probe_result r;
    disturber *d = new_disturber(fifo);
    run(&p, &r, cpu, d);
    double q_us = (double)r.baseline / p.hz * 1e6;
    CHECK(q_us > 20 && q_us < 200, "quantum %.1f us for 50 requested", q_us);
    CHECK(r.threshold > r.baseline, "threshold %llu over the baseline %llu", (unsigned long long)r.threshold,
          (unsigned long long)r.baseline);
    check_quanta(d, &r);
    ism_probe_result_free(&r);
    free(d);
}

static void test_selfish(int cpu, int fifo)
{
    ism_probe_params p = params(ISM_PROBE_SELFISH, 0.25);
    ism_probe_result r;
    disturber *d = new_disturber(fifo);
    run(&p, &r, cpu, d);
    CHECK(r.baseline == r.calib.typical && r.threshold >= (uint64_t)(10.0 * (double)r.baseline) &&
              r.threshold >= r.baseline + ism_timer_floor(&r.timer),
          "threshold %llu from the ordinary loop %llu (%s)", (unsigned long long)r.threshold,
          (unsigned long long)r.baseline, ism_calib_rule_name(r.calib.rule));
    const uint64_t least = (uint64_t)(20e-6 * p.hz);
    check_stretches_in_detours(d, &r, least, "selfish");
    double span = (double)(r.t_end - r.t_begin), took = (double)disturber_time(d, &r, least, "selfish");
    CHECK((double)r.sum_lost >= 0.9 * took, "selfish: lost %.3f of the run, the disturber took %.3f",
          (double)r.sum_lost / span, took / span);
    for (size_t i = 1; i < r.n_events; i++)
        CHECK(r.events[i].t >= r.events[i - 1].t + r.events[i - 1].value, "events overlap at %zu", i);
    ism_probe_result_free(&r);
    free(d);
}

/* the cores' round trip: plausible, ordered in time, and the caller's affinity untouched */
static void test_corelat(int a, int b)
{
    cpu_set_t before, after;
    sched_getaffinity(0, sizeof before, &before);
    ism_corelat_opts o = {a, b, 500, 3, 0.002, 10}; /* few trips: a busy machine slows each one */
    double ns[3], t[3];
    char err[512] = "";
    ism_timer_check tc;
    CHECK(ism_corelat_run(&o, ns, t, &tc, err, sizeof err) == 0, "corelat: %s", err);
    CHECK(tc.usable && tc.n > 0, "corelat's clock check: %s", tc.verdict);
    for (int i = 0; i < 3; i++)
        /* 0.1-1 us on an idle machine; with other processes on both cpus a round trip can
         * wait for a time slice, so the upper bound is only "measured something" */
        CHECK(ns[i] > 5 && ns[i] < 50e6, "round trip %.1f ns between cpus %d and %d", ns[i], a, b);
    CHECK(t[0] >= 0 && t[1] >= t[0] + 0.002 && t[2] >= t[1] + 0.002, "samples at %.4f %.4f %.4f s", t[0], t[1], t[2]);
    sched_getaffinity(0, sizeof after, &after);
    CHECK(CPU_EQUAL(&before, &after), "corelat changed the caller's affinity");
    o.cpu_b = a;
    CHECK(ism_corelat_run(&o, ns, t, NULL, err, sizeof err) != 0 && strstr(err, "must differ"), "same cpu: %s", err);
    o.cpu_b = ISM_NOISE_MAX_CPUS - 1;
    CHECK(ism_corelat_run(&o, ns, t, NULL, err, sizeof err) != 0 && strstr(err, "cannot pin to cpu 4095"), "missing cpu: %s",
          err);
}

int main(void)
{
    CHECK(ism_noise_clock_init(&clk, 0, 50) == 0, "no usable clock: %s", clk.check.verdict);
    int cpus[64];
    int n = ism_cpus_allowed(cpus, 64);
    int cpu = cpus[n - 1];
    printf("clock %s, %.3f GHz, read %.0f ticks; probing cpu %d\ntimer check: %s\n",
           clk.kind == ISM_NOISE_CLOCK_TSC ? "tsc" : "monotonic_raw", clk.hz * 1e-9, clk.read_cycles, cpu,
           clk.check.verdict);
    /* the disturber at real-time priority where granted (root), then sharing the cpu as
     * the fair scheduler decides */
    for (int fifo = 1; fifo >= 0; fifo--) {
        test_ftq(cpu, fifo);
        test_fwq(cpu, fifo);
        test_selfish(cpu, fifo);
    }
    if (n >= 2)
        test_corelat(cpus[0], cpus[1]);
    else
        printf("one cpu allowed: the round trip between two is not tested\n");
    /* the clock_gettime fallback works too */
    CHECK(ism_noise_clock_init(&clk, 1, 50) == 0 && clk.kind == ISM_NOISE_CLOCK_MONORAW && clk.hz == 1e9,
          "fallback clock: %s", clk.check.verdict);
    test_selfish(cpu, 1);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    else
        printf("noise probes: all checks passed\n");
    return failures ? 1 : 0;
}
