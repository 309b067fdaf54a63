/* fwq.c: the Fixed Work Quantum probe. The same amount of work (a dependent chain of
 * integer operations the compiler cannot remove, calibrated once to about the requested
 * quantum) is timed again and again; a detour makes one quantum take longer. */
#include "probe.h"
#include "record.h"
#include "tsc.h"
#include "work.h"

static uint64_t fwq_time(uint64_t iters, int tries)
{
    uint64_t best = UINT64_MAX;
    for (int t = 0; t < tries; t++) {
        uint64_t a = ism_noise_now();
        ism_noise_work(iters);
        uint64_t b = ism_noise_now();
        if (b - a < best)
            best = b - a;
    }
    return best;
}

void ism_probe_fwq(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end)
{
    double want = p->fwq_quantum_us * 1e-6 * p->hz;
    /* scale until two rounds agree within 5%: one round taken while the host was busy
     * (another guest on the core, SMT contention) no longer sets the quantum alone */
    uint64_t iters = 1024;
    for (int round = 0, agreed = 0; round < 12 && agreed < 2; round++) {
        uint64_t t = fwq_time(iters, 9);
        double scaled = (double)iters * want / (double)(t ? t : 1);
        uint64_t next = scaled < 1 ? 1 : (uint64_t)scaled;
        agreed = round > 0 && next * 20 > iters * 19 && next * 19 < iters * 20 ? agreed + 1 : 0;
        iters = next;
    }
    r->work_iters = iters;
    uint64_t base = fwq_time(iters, 20);
    r->threshold = (uint64_t)((double)base * (1.0 + p->outlier_tol));
    r->t_begin = ism_noise_now();
    uint64_t t1 = r->t_begin;
    volatile uint64_t sink = 0;
    while (t1 < t_end) {
        uint64_t t0 = ism_noise_now();
        sink += ism_noise_work(iters);
        t1 = ism_noise_now();
        uint64_t d = t1 - t0;
        ism_rec_value(r, d, 1);
        if (d > r->threshold)
            ism_rec_event(r, p->max_events, t0, d, 0, 1);
        ism_rec_raw(r, p, t0, d);
    }
    (void)sink;
    r->t_end = t1;
    r->baseline = r->value_min < base ? r->value_min : base;
    for (size_t i = 0; i < r->n_events; i++)
        r->events[i].lost = r->events[i].value - r->baseline;
    r->sum_lost = r->sum_value - r->samples * r->baseline;
}
