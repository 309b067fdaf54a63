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

static uint64_t dist(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* The densest quarter of sorted v: its middle value, and its width in *width. Of equally
 * narrow quarters (a flat stretch of the distribution) the one nearest the median. */
static uint64_t densest(const uint64_t *v, size_t n, uint64_t *width)
{
    *width = 0;
    if (!n)
        return 0;
    const size_t h = n / 4 > 5 ? n / 4 : (n < 5 ? n : 5);
    const uint64_t median = v[n / 2];
    size_t best = 0;
    uint64_t w = UINT64_MAX;
    for (size_t i = 0; i + h <= n; i++) {
        uint64_t wi = v[i + h - 1] - v[i];
        if (wi < w || (wi == w && dist(v[i + h / 2], median) < dist(v[best + h / 2], median))) {
            w = wi;
            best = i;
        }
    }
    *width = w;
    return v[best + h / 2];
}

uint64_t ism_calib_typical(uint64_t *v, size_t n)
{
    uint64_t w;
    ism_timer_sort(v, n);
    return densest(v, n, &w);
}

void ism_calib_longer(ism_calib *c, uint64_t *v, size_t n, double factor, uint64_t floor)
{
    stats(c, v, n);
    c->typical = densest(v, n, &c->spread);
    uint64_t by_factor = (uint64_t)(factor * (double)c->typical);
    uint64_t by_spread = c->typical + ISM_CALIB_LONGER_SPREADS * c->spread;
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
    uint64_t by_spread = sat_sub(c->typical, ISM_CALIB_FEWER_SPREADS * c->spread);
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
    c->typical = densest(v, n, &c->spread);
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
