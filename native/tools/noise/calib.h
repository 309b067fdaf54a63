/* calib.h: how every probe turns calibration samples into its baseline and its outlier
 * threshold, in one place (selfish loop times, FWQ quanta, FTQ counts, MPI-Jitter's work).
 * The baseline is a robust statistic of many samples, never the extreme one: on a clock
 * whose read pairs take 20-30 ticks 95 % of the time and 1-9 ticks 5 % of the time, the
 * minimum loop time is 1 tick, "10 x the minimum" sits below the ordinary loop, and every
 * loop becomes a detour (issue 23: 97.7 % noise on an idle cpu). The threshold is the
 * probe's own rule (k x the baseline, or the baseline +- a tolerance), but never inside
 * the ordinary samples' spread and never finer than the clock resolves; which of the
 * three bounds set it is recorded with the run. */
#ifndef ISM_NOISE_CALIB_H
#define ISM_NOISE_CALIB_H

#include <stddef.h>
#include <stdint.h>

/* A threshold lies at least this many spreads of the ordinary samples from the baseline:
 * for normally distributed ordinary samples both put it about 5 standard deviations away
 * (the densest quarter is 0.64 sd wide; p99 - p75 is 1.65 sd). */
#define ISM_CALIB_LONGER_SPREADS 8
#define ISM_CALIB_FEWER_SPREADS 4

typedef enum {
    ISM_CALIB_RULE_FACTOR = 0, /* the probe's rule: k x baseline, or baseline x (1 +- tol) */
    ISM_CALIB_RULE_SPREAD,     /* the ordinary samples spread wider than the rule allows */
    ISM_CALIB_RULE_TIMER,      /* the rule is finer than the clock (or one FTQ read) resolves */
    ISM_CALIB_RULE_FIXED,      /* given by the user (--threshold-ns) */
} ism_calib_rule;

typedef struct {
    uint64_t n;                            /* samples */
    uint64_t min, p10, median, p75, p90, p99, max;
    uint64_t typical;                      /* the baseline: an ordinary sample */
    uint64_t spread;                       /* the ordinary samples' spread, from their clean side */
    uint64_t threshold;                    /* longer: outlier above it; fewer: outlier below it */
    ism_calib_rule rule;                   /* which bound set the threshold */
} ism_calib;

/* Samples where a detour makes one sample longer (a selfish loop, an FWQ quantum). The
 * baseline is the ordinary sample: the middle of the densest quarter of the samples (the
 * shortest interval that holds a quarter of them, at least 5). A few unusually fast
 * samples cannot move it (they moved the minimum), nor can many disturbed ones (an FWQ
 * quantum on a cpu other processes share: they would move the median). The spread is
 * that interval's width. threshold = the largest of factor x baseline, baseline +
 * ISM_CALIB_LONGER_SPREADS x spread, baseline + floor (floor: the least span the clock
 * resolves, ism_timer_floor). Sorts v. */
void ism_calib_longer(ism_calib *c, uint64_t *v, size_t n, double factor, uint64_t floor);

/* The baseline of ism_calib_longer alone (for scaling work to a time). Sorts v. */
uint64_t ism_calib_typical(uint64_t *v, size_t n);

/* Samples where a detour lowers the value (FTQ counts of the slots that counted): a
 * detour can shorten most intervals (a tick in every other one, or in nearly every one
 * when the interval is long), and then they, not the clean ones, are the densest; so the
 * baseline is the 90th percentile and the spread is measured in the top quarter
 * (p99 - p75), which stays clean while a quarter of the intervals are. threshold = the
 * smallest of factor x p90, p90 - ISM_CALIB_FEWER_SPREADS x spread, p90 - floor (floor in
 * counts), at least 1 (an interval that counted nothing is always a detour). Sorts v. */
void ism_calib_fewer(ism_calib *c, uint64_t *v, size_t n, double factor, uint64_t floor);

/* A threshold the user fixed, recorded the same way (baseline and spread as for longer). */
void ism_calib_fixed(ism_calib *c, uint64_t *v, size_t n, uint64_t threshold);

const char *ism_calib_rule_name(ism_calib_rule r);

#endif
