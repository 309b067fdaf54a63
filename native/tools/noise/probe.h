/* probe.h: what the single-core probes (FTQ, FWQ, selfish detour) share: their
 * parameters, and the per-core result that is summarised on the node (the core's timer
 * check and calibration, histogram, bounded list of outlier events, totals) with optional
 * raw samples. One result per pinned thread; nothing in a result is shared between
 * threads. */
#ifndef ISM_NOISE_PROBE_H
#define ISM_NOISE_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "calib.h"
#include "hist.h"
#include "timercheck.h"

typedef enum { ISM_PROBE_FTQ, ISM_PROBE_FWQ, ISM_PROBE_SELFISH } ism_probe_kind;

typedef struct {
    ism_probe_kind kind;
    double duration_s;      /* measuring time per core */
    unsigned ftq_log2;      /* FTQ interval = 2^ftq_log2 ticks */
    double fwq_quantum_us;  /* FWQ work quantum, calibrated to this many microseconds */
    double selfish_k;       /* selfish threshold = k x the ordinary loop time (calib.h) ... */
    double threshold_ns;    /* ... unless this is > 0 */
    double outlier_tol;     /* FTQ/FWQ: a sample is an outlier beyond this relative loss (calib.h) */
    size_t max_events;      /* outlier events kept per core (more are counted, not kept) */
    int raw;                /* keep every sample (bounded by max_raw) */
    size_t max_raw;         /* raw samples kept per core */
    double hz;              /* clock ticks per second */
} ism_probe_params;

/* One outlier: FTQ: `slots` consecutive grid slots from `t` with `value` counts each
 * (value 0 and slots > 1 for skipped intervals); FWQ/selfish: a sample starting at `t`
 * lasting `value` ticks. `lost` is the time taken from the probe, in ticks. */
typedef struct {
    uint64_t t;
    uint64_t value;
    uint64_t lost;
    uint32_t slots;
} ism_probe_event;

typedef struct {
    uint64_t t;
    uint64_t value;
} ism_probe_raw;

typedef struct {
    int cpu;
    int error;              /* errno of a failed pinning, 0 if fine */
    int tid;                /* the probe thread's kernel id (to find it in scheduler traces) */
    uint64_t t_begin, t_end;
    uint64_t samples;       /* FTQ: grid slots incl. zero-count ones; FWQ: quanta; selfish: loop iterations */
    uint64_t value_min, value_max;
    uint64_t sum_lost;      /* ticks lost to noise, all outliers (kept or not) */
    uint64_t sum_value;     /* FTQ: total counts; FWQ: total ticks */
    char refused[320];      /* why this core was not measured (a clock or a request it cannot
                             * resolve); empty if it was */
    ism_timer_check timer;  /* the clock's back-to-back reads on this core, before the run */
    ism_calib calib;        /* how baseline and threshold were found */
    uint64_t *calib_buf;    /* ISM_TIMER_PAIRS samples of scratch for the check and calibration */
    uint64_t threshold;     /* FTQ: outlier below this count; FWQ/selfish: above this many ticks */
    uint64_t baseline;      /* FTQ: p90 count; FWQ, selfish: ordinary quantum / loop ticks (calib.h) */
    uint64_t work_iters;    /* FWQ: work loop iterations per quantum */
    ism_hist hist;          /* FTQ: counts; FWQ: quantum ticks; selfish: detour ticks */
    ism_hist overhead;      /* FTQ: ticks between one interval's end and the next start */
    uint32_t ovh_median, ovh_p99, ovh_max;  /* FTQ: exact, from the per-slot values */
    double ovh_mean;
    uint64_t skipped_slots; /* FTQ: zero-count slots */
    ism_probe_event *events;
    size_t n_events, dropped_events;
    uint64_t dropped_lost;  /* ticks lost in the events beyond the cap (counted, not kept) */
    uint64_t n_outliers;
    ism_probe_raw *raw;
    size_t n_raw, dropped_raw;
    /* FTQ: one count and one overhead per grid slot of the whole run, written with a
     * single store each on the timed path and summarised after the run. Slots never
     * counted in keep their zero. */
    uint32_t *slot_count;
    uint16_t *slot_ovh;
    size_t slot_cap;
} ism_probe_result;

/* FTQ memory per core for a run of the given parameters, in bytes. */
size_t ism_probe_ftq_bytes(const ism_probe_params *p);

/* Allocate the result's buffers; 0 on success, -1 (errno set) on failure. */
int ism_probe_result_init(ism_probe_result *r, const ism_probe_params *p, int cpu);
void ism_probe_result_free(ism_probe_result *r);

/* Run one probe on the calling thread until t_end (ticks). Each first checks the clock on
 * its core (r->timer); a core whose clock fails, or that cannot resolve what was asked,
 * is not measured and says why in r->refused. */
void ism_probe_ftq(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end);
void ism_probe_fwq(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end);
void ism_probe_selfish(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end);

/* The selfish probe on any clock `read` (in ticks at p->hz): the probe itself runs on the
 * active clock's read inlined; tests run it on synthetic clocks. */
void ism_probe_selfish_on(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end, uint64_t (*read)(void));

/* Iterations of ism_noise_work that take about `ticks` on this core: scaled until two
 * rounds, each the ordinary one of 15 timings (calib.h), agree within 5 %, so neither
 * interrupted timings nor one round taken while the host was busy (another guest, SMT
 * contention) set it. */
uint64_t ism_probe_work_iterations(double ticks);

/* FTQ's summary of the per-slot counts after the run (r->slot_count[0 .. slots) from grid
 * slot `first`): baseline and threshold (calib.h), outlier events, time lost. For tests. */
void ism_probe_ftq_summarise(const ism_probe_params *p, ism_probe_result *r, uint64_t first, uint64_t slots);

/* Check the clock `read` on the calling core into r->timer; 0 if usable, else -1 with
 * r->refused set. Inline so a constant `read` is the probe's own. */
ISM_TIMER_INLINE int ism_probe_check_timer(const ism_probe_params *p, ism_probe_result *r, uint64_t (*read)(void))
{
    ism_timer_collect(read, r->calib_buf, ISM_TIMER_PAIRS);
    ism_timer_check_deltas(&r->timer, r->calib_buf, ISM_TIMER_PAIRS, p->hz);
    if (r->timer.usable)
        return 0;
    snprintf(r->refused, sizeof r->refused, "the clock on cpu %d is %s", r->cpu, r->timer.verdict);
    return -1;
}

/* FTQ slot bookkeeping, exposed for tests. The grid is absolute (slot = tick >> log2q),
 * so on a machine with synchronised TSCs every core shares one grid. After counting in
 * slot `prev`, the next interval starts at tick `start`; the whole slots strictly between
 * the two were never counted in (skipped intervals, recorded as zero-count samples). */
static inline uint64_t ism_ftq_slot(uint64_t tick, unsigned log2q) { return tick >> log2q; }
static inline uint64_t ism_ftq_skipped(uint64_t prev, uint64_t start, unsigned log2q)
{
    uint64_t s = start >> log2q;
    return s > prev + 1 ? s - prev - 1 : 0;
}

const char *ism_probe_name(ism_probe_kind k);

#endif
