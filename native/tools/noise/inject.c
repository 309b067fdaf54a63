/* inject.c: the noise injector (see inject.h). Bursts start on an absolute schedule
 * (clock_nanosleep TIMER_ABSTIME on CLOCK_MONOTONIC), so the period does not drift with
 * wake-up latency; each burst spins for its duration from the moment it woke. Every
 * burst's start and end are logged in TSC ticks, the same clock the probes use, which is
 * the ground truth the analysis is checked against. */
#include "inject.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "json.h"
#include "prio.h"
#include "tsc.h"

static volatile sig_atomic_t inject_stop;

static void on_signal(int sig)
{
    (void)sig;
    inject_stop = 1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ism_inject_run(const ism_inject_opts *o)
{
    if (!(o->period_s > 0) || !(o->burst_s > 0) || o->burst_s >= o->period_s) {
        fprintf(stderr, "isthmus-noise inject: need 0 < --duration < --period (got %g s and %g s)\n", o->burst_s,
                o->period_s);
        return 2;
    }
    ism_noise_clock clk;
    if (ism_noise_clock_init(&clk, 0, 50) != 0) {
        fprintf(stderr, "isthmus-noise inject: no usable clock for the log: %s\n", clk.check.verdict);
        return 1;
    }
    if (o->cpu >= 0) {
        int e = ism_cpus_pin_self(o->cpu);
        if (e) {
            fprintf(stderr, "isthmus-noise inject: cannot pin to cpu %d: %s\n", o->cpu, strerror(e));
            return 1;
        }
    }
    if (ism_prio_set("isthmus-noise inject", o->priority) != 0)
        return 1;
    prctl(PR_SET_NAME, "isthmus-inject", 0, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    uint64_t *log = NULL;
    if (o->log_path && o->max_log) {
        log = calloc(o->max_log * 2, sizeof *log);
        if (!log) {
            fprintf(stderr, "isthmus-noise inject: out of memory for %lu logged bursts\n", o->max_log);
            return 1;
        }
    }
    const uint64_t period = (uint64_t)(o->period_s * 1e9), burst = (uint64_t)(o->burst_s * 1e9);
    const uint64_t t0 = mono_ns() + 1000000, stop = o->run_s > 0 ? t0 + (uint64_t)(o->run_s * 1e9) : UINT64_MAX;
    uint64_t k = 0, bursts = 0, missed = 0, late_sum = 0, late_max = 0, logged = 0;
    fprintf(stderr, "isthmus-noise inject: pid %d, cpu %d, %.3f ms every %.3f ms, priority %s\n", (int)getpid(),
            o->cpu, o->burst_s * 1e3, o->period_s * 1e3, o->priority);
    while (!inject_stop) {
        uint64_t deadline = t0 + k * period;
        if (deadline >= stop)
            break;
        struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
        int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (rc == EINTR)
            continue;
        uint64_t woke = mono_ns(), tsc0 = ism_noise_now();
        uint64_t late = woke > deadline ? woke - deadline : 0;
        late_sum += late;
        if (late > late_max)
            late_max = late;
        while (mono_ns() - woke < burst)
            ;
        uint64_t tsc1 = ism_noise_now();
        if (log) {
            if (logged < o->max_log) {
                log[2 * logged] = tsc0;
                log[2 * logged + 1] = tsc1;
                logged++;
            }
        }
        bursts++;
        uint64_t now = mono_ns();
        uint64_t next = (now - t0) / period + 1;
        missed += next - (k + 1);
        k = next;
    }
    fprintf(stderr, "isthmus-noise inject: %llu bursts, %llu periods missed, wake-up late by %.1f us mean, %.1f us max\n",
            (unsigned long long)bursts, (unsigned long long)missed, bursts ? late_sum / 1e3 / (double)bursts : 0.0,
            late_max / 1e3);
    int ret = 0;
    if (log) {
        FILE *f = fopen(o->log_path, "w");
        if (!f) {
            fprintf(stderr, "isthmus-noise inject: cannot write %s: %s\n", o->log_path, strerror(errno));
            ret = 1;
        } else {
            ism_json j;
            ism_json_init(&j, f);
            ism_json_obj(&j, NULL);
            ism_json_str(&j, "format", "isthmus-noise-inject/1");
            ism_json_i64(&j, "pid", getpid());
            ism_json_str(&j, "comm", "isthmus-inject");
            ism_json_i64(&j, "cpu", o->cpu);
            ism_json_str(&j, "priority", o->priority);
            ism_json_dbl(&j, "period_s", o->period_s);
            ism_json_dbl(&j, "burst_s", o->burst_s);
            ism_json_str(&j, "clock", clk.kind == ISM_NOISE_CLOCK_TSC ? "tsc" : "monotonic_raw");
            ism_json_dbl(&j, "hz", clk.hz);
            ism_json_u64(&j, "bursts", bursts);
            ism_json_u64(&j, "missed_periods", missed);
            ism_json_dbl(&j, "late_mean_s", bursts ? late_sum / 1e9 / (double)bursts : 0.0);
            ism_json_dbl(&j, "late_max_s", late_max / 1e9);
            ism_json_u64(&j, "unlogged", bursts - logged);
            ism_json_arr(&j, "log");
            for (uint64_t i = 0; i < logged; i++) {
                ism_json_arr(&j, NULL);
                ism_json_u64(&j, NULL, log[2 * i]);
                ism_json_u64(&j, NULL, log[2 * i + 1]);
                ism_json_end_arr(&j);
            }
            ism_json_end_arr(&j);
            ism_json_end_obj(&j);
            if (fclose(f) != 0)
                ret = 1;
        }
        free(log);
    }
    return ret;
}
