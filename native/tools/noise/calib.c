/* calib.c: baselines and thresholds from robust statistics of calibration samples
 * (see calib.h). */
#include "calib.h"

#include <string.h>

#include "timercheck.h"

static void stats(ism_calib *c, uint64_t *v, size_t n)
{
    memset(c, 0, sizeof *c);
    ism_timer_sort(v, n);
    c->n = n;
    if (!n)
        return;
    c->min = v[0];
    c->p10 = ism_timer_quantile(v, n, 0.10);
    c->median = ism_timer_quantile(v, n, 0.50);
    c->p75 = ism_timer_quantile(v, n, 0.75);
    c->p90 = ism_timer_quantile(v, n, 0.90);
    c->p99 = ism_timer_quantile(v, n, 0.99);
    c->max = v[n - 1];
}

static uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void ism_calib_longer(ism_calib *c, uint64_t *v, size_t n, double factor, uint64_t floor)
{
    stats(c, v, n);
    c->typical = c->median;
    c->spread = c->median - c->p10;
    uint64_t by_factor = (uint64_t)(factor * (double)c->typical);
    uint64_t by_spread = c->typical + ISM_CALIB_SPREADS * c->spread;
    uint64_t by_timer = c->typical + floor;
    c->threshold = by_factor;
    c->rule = ISM_CALIB_RULE_FACTOR;
    if (by_spread > c->threshold) {
        c->threshold = by_spread;
        c->rule = ISM_CALIB_RULE_SPREAD;
    }
    if (by_timer > c->threshold) {
        c->threshold = by_timer;
        c->rule = ISM_CALIB_RULE_TIMER;
    }
}

void ism_calib_fewer(ism_calib *c, uint64_t *v, size_t n, double factor, uint64_t floor)
{
    stats(c, v, n);
    c->typical = c->p90;
    c->spread = c->p99 - c->p75;
    uint64_t by_factor = (uint64_t)(factor * (double)c->typical);
    uint64_t by_spread = sat_sub(c->typical, ISM_CALIB_SPREADS * c->spread);
    uint64_t by_timer = sat_sub(c->typical, floor);
    c->threshold = by_factor;
    c->rule = ISM_CALIB_RULE_FACTOR;
    if (by_spread < c->threshold) {
        c->threshold = by_spread;
        c->rule = ISM_CALIB_RULE_SPREAD;
    }
    if (by_timer < c->threshold) {
        c->threshold = by_timer;
        c->rule = ISM_CALIB_RULE_TIMER;
    }
    if (c->threshold < 1)
        c->threshold = 1;
}

void ism_calib_fixed(ism_calib *c, uint64_t *v, size_t n, uint64_t threshold)
{
    stats(c, v, n);
    c->typical = c->median;
    c->spread = c->median - c->p10;
    c->threshold = threshold;
    c->rule = ISM_CALIB_RULE_FIXED;
}

const char *ism_calib_rule_name(ism_calib_rule r)
{
    switch (r) {
    case ISM_CALIB_RULE_FACTOR: return "factor";
    case ISM_CALIB_RULE_SPREAD: return "spread";
    case ISM_CALIB_RULE_TIMER: return "timer";
    case ISM_CALIB_RULE_FIXED: return "fixed";
    }
    return "?";
}
