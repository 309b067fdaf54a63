/*
 * timer.c - isthmus-bench's clock, MPI_Wtime, checked at start on every rank rather than
 * assumed fine: its back-to-back reads go through the noise probes' timer check
 * (native/tools/noise/timercheck.c: steps, repeats, reads that go back). The check is
 * recorded in every record's config ("timer"); a clock that goes back or never advances
 * ends the run; a value timed one call at a time that lies within 10x of what the clock
 * resolves carries a note.
 */
#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "timercheck.h"

#define TIMER_PAIRS 4096
#define TIMER_NOTE_FACTOR 10.0

static double wtime_origin;

/* MPI_Wtime as nanoseconds since the check began (a read that goes back wraps, and the
 * check counts it as backwards) */
static uint64_t wtime_ns(void) { return (uint64_t)llround((MPI_Wtime() - wtime_origin) * 1e9); }

void ism_bench_check_timer(ism_bench_ctx *c)
{
    uint64_t *d = malloc(TIMER_PAIRS * sizeof *d);
    if (!d)
        MPI_Abort(c->world, 3);
    ism_timer_check t;
    wtime_origin = MPI_Wtime();
    ism_timer_collect(wtime_ns, d, TIMER_PAIRS);
    ism_timer_check_deltas(&t, d, TIMER_PAIRS, 1e9);
    free(d);
    /* what one call timed alone can be off by: a read, or a step of a clock coarser than a read */
    double res = (double)(t.repeats ? t.step : t.median) * 1e-3;
    struct {
        int usable, rank;
    } mine = {t.usable, c->rank}, worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MINLOC, c->world);
    MPI_Allreduce(&res, &c->timer_resolution_us, 1, MPI_DOUBLE, MPI_MAX, c->world);
    if (!worst.usable) {
        char why[sizeof t.verdict];
        snprintf(why, sizeof why, "%s", t.verdict);
        MPI_Bcast(why, (int)sizeof why, MPI_CHAR, worst.rank, c->world);
        ism_bench_usage_error(c, "MPI_Wtime on rank %d cannot time anything: %s", worst.rank, why);
    }
    char esc[512];
    snprintf(c->timer_json, sizeof c->timer_json,
             "{\"source\":\"MPI_Wtime\",\"wtick_s\":%.9g,\"median_ns\":%llu,\"p99_ns\":%llu,\"step_ns\":%llu,"
             "\"repeats\":%llu,\"pairs\":%llu,\"resolution_us_worst_rank\":%.6g,\"verdict\":\"%s\"}",
             MPI_Wtick(), (unsigned long long)t.median, (unsigned long long)t.p99, (unsigned long long)t.step,
             (unsigned long long)t.repeats, (unsigned long long)t.n, c->timer_resolution_us,
             ism_bench_json_escape(t.verdict, esc, sizeof esc));
}

int ism_bench_timer_note(const ism_bench_ctx *c, const ism_bench_point *p, double value_us, char *out,
                         size_t len)
{
    if (!p->timed_per_call || !(value_us < TIMER_NOTE_FACTOR * c->timer_resolution_us))
        return 0;
    snprintf(out, len,
             "timed one call at a time with MPI_Wtime, which resolves %.3g us: %.3g us is within %.0fx of that, "
             "so a read's or a step's error is over %.0f%% of it",
             c->timer_resolution_us, value_us, TIMER_NOTE_FACTOR, 100.0 / TIMER_NOTE_FACTOR);
    return 1;
}
