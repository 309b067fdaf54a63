/* selfish.c: the selfish-detour probe. A tight loop reads the clock; every gap between
 * two reads longer than the threshold is a detour (the time the OS took the core), and
 * what it lost is its excess over the ordinary loop. The loop is calibrated on the core
 * before the run: its back-to-back reads are the timer check's samples, and the threshold
 * is k x the ordinary one (the densest quarter of them, calib.h), never k x their minimum. */
#include "probe.h"
#include "record.h"
#include "tsc.h"

/* Calibration: 0, or -1 with r->refused set (the clock, or a fixed threshold it cannot
 * resolve or that lies inside the ordinary loop: at or below its 99th percentile). */
static inline __attribute__((always_inline)) int selfish_calibrate(const ism_probe_params *p, ism_probe_result *r,
                                                                   uint64_t (*read)(void))
{
    if (ism_probe_check_timer(p, r, read) != 0)
        return -1;
    const size_t n = ISM_TIMER_PAIRS - r->timer.backward;
    const uint64_t floor = ism_timer_floor(&r->timer);
    if (p->threshold_ns <= 0) {
        ism_calib_longer(&r->calib, r->calib_buf, n, p->selfish_k, floor);
        return 0;
    }
    uint64_t thr = (uint64_t)(p->threshold_ns * 1e-9 * p->hz);
    ism_calib_fixed(&r->calib, r->calib_buf, n, thr);
    if (ism_timer_resolves(&r->timer, thr, p->hz, "the threshold", r->refused, sizeof r->refused) != 0)
        return -1;
    if (thr <= r->calib.p99) {
        snprintf(r->refused, sizeof r->refused,
                 "the threshold of %.1f ns lies inside the ordinary loop on cpu %d (ordinary %.1f ns, p99 %.1f ns): "
                 "over 1%% of all loops would count as detours; use more than %.1f ns",
                 p->threshold_ns, r->cpu, (double)r->calib.typical * 1e9 / p->hz, (double)r->calib.p99 * 1e9 / p->hz,
                 (double)r->calib.p99 * 1e9 / p->hz);
        return -1;
    }
    return 0;
}

/* Inlined with a constant `read`: the probe's loop holds the clock read itself. */
static inline __attribute__((always_inline)) void selfish_run(const ism_probe_params *p, ism_probe_result *r,
                                                              uint64_t t_end, uint64_t (*read)(void))
{
    if (selfish_calibrate(p, r, read) != 0)
        return;
    const uint64_t thr = r->calib.threshold, typ = r->calib.typical;
    r->threshold = thr;
    r->baseline = typ;
    uint64_t iters = 0, lost = 0;
    uint64_t prev = read();
    r->t_begin = prev;
    for (;;) {
        uint64_t t = read();
        uint64_t d = t - prev;
        iters++;
        if (__builtin_expect(d > thr, 0)) {
            const uint64_t l = d > typ ? d - typ : 0;
            ism_hist_add(&r->hist, d, 1);
            lost += l;
            ism_rec_event(r, p->max_events, prev, d, l, 1);
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

void ism_probe_selfish_on(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end, uint64_t (*read)(void))
{
    selfish_run(p, r, t_end, read);
}

void ism_probe_selfish(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end)
{
    if (ism_noise_clock_active == ISM_NOISE_CLOCK_TSC)
        selfish_run(p, r, t_end, ism_noise_rdtsc);
    else
        selfish_run(p, r, t_end, ism_noise_monoraw_ns);
}
