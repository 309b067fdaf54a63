/* selfish.c: the selfish-detour probe. A tight loop reads the clock; every gap between
 * two reads longer than the threshold is a detour (the time the OS took the core). The
 * threshold defaults to k x the minimum loop time, calibrated on the core before the run. */
#include "probe.h"
#include "record.h"
#include "tsc.h"

static uint64_t selfish_min_loop(uint64_t span)
{
    uint64_t prev = ism_noise_now(), stop = prev + span, best = UINT64_MAX;
    for (;;) {
        uint64_t t = ism_noise_now();
        uint64_t d = t - prev;
        if (d < best)
            best = d;
        if (t >= stop)
            break;
        prev = t;
    }
    return best ? best : 1;
}

void ism_probe_selfish(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end)
{
    uint64_t min = selfish_min_loop((uint64_t)(0.02 * p->hz));
    r->baseline = min;
    if (p->threshold_ns > 0)
        r->threshold = (uint64_t)(p->threshold_ns * 1e-9 * p->hz);
    else
        r->threshold = (uint64_t)(p->selfish_k * (double)min);
    if (r->threshold < 1)
        r->threshold = 1;
    const uint64_t thr = r->threshold;
    uint64_t iters = 0, lost = 0;
    uint64_t prev = ism_noise_now();
    r->t_begin = prev;
    for (;;) {
        uint64_t t = ism_noise_now();
        uint64_t d = t - prev;
        iters++;
        if (__builtin_expect(d > thr, 0)) {
            ism_hist_add(&r->hist, d, 1);
            lost += d - min;
            ism_rec_event(r, p->max_events, prev, d, d - min, 1);
            ism_rec_raw(r, p, prev, d);
            if (d > r->value_max)
                r->value_max = d;
            if (d < r->value_min)
                r->value_min = d;
            if (t >= t_end) {
                prev = t;
                break;
            }
        } else if (__builtin_expect((iters & 0xfff) == 0, 0) && t >= t_end) {
            prev = t;
            break;
        }
        prev = t;
    }
    r->t_end = prev; /* the last read: every detour lies inside [t_begin, t_end] */
    r->samples = iters;
    r->sum_lost = lost;
}
