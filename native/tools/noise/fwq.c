/* fwq.c: the Fixed Work Quantum probe. The same amount of work (a dependent chain of
 * integer operations the compiler cannot remove, calibrated once to about the requested
 * quantum) is timed again and again, each quantum from the read that ended the one before
 * (so no time between quanta goes unmeasured); a detour makes one quantum take longer. A quantum is
 * an outlier above the threshold calib.h sets from the ordinary calibration quantum (the
 * densest quarter of many), and loses its excess over it. */
#include "probe.h"
#include "record.h"
#include "tsc.h"
#include "work.h"

/* The calibration quanta's ordinary one must lie this close to the request, */
#define FWQ_AGREE 0.1
/* or the work is scaled again from it, at most this many times. */
#define FWQ_RESCALES 3

/* The ordinary one of `tries` (at most 63) timings of the work (calib.h): interrupted
 * tries do not set it. */
static uint64_t fwq_time(uint64_t iters, int tries)
{
    uint64_t t[63];
    int n = tries < 63 ? tries : 63;
    for (int i = 0; i < n; i++) {
        uint64_t a = ism_noise_now();
        ism_noise_work(iters);
        t[i] = ism_noise_now() - a;
    }
    return ism_calib_typical(t, (size_t)n);
}

uint64_t ism_probe_work_iterations(double want)
{
    uint64_t iters = 1024;
    for (int round = 0, agreed = 0; round < 12 && agreed < 2; round++) {
        uint64_t t = fwq_time(iters, 15);
        double scaled = (double)iters * want / (double)(t ? t : 1);
        uint64_t next = scaled < 1 ? 1 : (uint64_t)scaled;
        agreed = round > 0 && next * 20 > iters * 19 && next * 19 < iters * 20 ? agreed + 1 : 0;
        iters = next;
    }
    return iters;
}

void ism_probe_fwq(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end)
{
    if (ism_probe_check_timer(p, r, ism_noise_now) != 0)
        return;
    const double want = p->fwq_quantum_us * 1e-6 * p->hz;
    if (ism_timer_resolves(&r->timer, (uint64_t)want, p->hz, "the FWQ quantum", r->refused, sizeof r->refused) != 0)
        return;
    uint64_t iters = ism_probe_work_iterations(want);
    /* the baseline from many quanta (at most ~50 ms of them), which must agree with the
     * scaling within FWQ_AGREE: scaling rounds taken while the cpu was busier or quieter
     * than now are redone from the baseline, up to FWQ_RESCALES times */
    double fit = 0.05 * p->hz / (want > 1 ? want : 1);
    size_t n = fit > 63 ? 63 : fit < 9 ? 9 : (size_t)fit;
    for (int round = 0;; round++) {
        uint64_t a = ism_noise_now();
        for (size_t i = 0; i < n; i++) {
            ism_noise_work(iters);
            uint64_t b = ism_noise_now();
            r->calib_buf[i] = b - a;
            a = b;
        }
        ism_calib_longer(&r->calib, r->calib_buf, n, 1.0 + p->outlier_tol, ism_timer_floor(&r->timer));
        double off = (double)r->calib.typical / want;
        if (round == FWQ_RESCALES || (off > 1.0 - FWQ_AGREE && off < 1.0 + FWQ_AGREE))
            break;
        double scaled = (double)iters / off;
        iters = scaled < 1 ? 1 : (uint64_t)scaled;
    }
    r->work_iters = iters;
    const uint64_t thr = r->calib.threshold, typ = r->calib.typical;
    r->threshold = thr;
    r->baseline = typ;
    /* back to back: a quantum starts at the read that ended the one before, so a detour
     * during the bookkeeping between two quanta is in the next one, never lost */
    r->t_begin = ism_noise_now();
    uint64_t t0 = r->t_begin, lost = 0;
    volatile uint64_t sink = 0;
    while (t0 < t_end) {
        sink += ism_noise_work(iters);
        const uint64_t t1 = ism_noise_now();
        const uint64_t d = t1 - t0;
        ism_rec_value(r, d, 1);
        if (d > thr) {
            lost += d - typ;
            ism_rec_event(r, p->max_events, t0, d, d - typ, 1);
        }
        ism_rec_raw(r, p, t0, d);
        t0 = t1;
    }
    (void)sink;
    r->t_end = t0;
    r->sum_lost = lost;
}
