/* ftq.c: the Fixed Time Quantum probe. Interval ends lie on a fixed grid of 2^n clock
 * ticks (absolute: slot = tick >> n), and the probe counts how many timer reads fit in
 * each interval. A detour shows as a low count; a detour longer than an interval leaves
 * whole slots without counting, which stay zero-count samples, never lost.
 * The timed path writes one count and one overhead value per slot into arrays sized for
 * the whole run (6 bytes a slot) and does nothing else; histograms and outlier events are
 * built after the run. The overhead is the ticks between one interval's last read and
 * the next interval's first read: the probe's own cost per sample, which is reported.
 * The baseline is the 90th percentile of the counted slots' counts (calib.h), not the
 * largest count, and a slot loses the reads it misses against it. */
#include <stdio.h>
#include <stdlib.h>

#include "probe.h"
#include "record.h"
#include "tsc.h"

/* Count in slots [first, stop_slot); returns the number of slots covered. Generated once
 * per clock so the timed loop calls the clock read directly, without a branch on which
 * clock is active. */
#define FTQ_COUNT(name, READ)                                                                       \
    static uint64_t name(const unsigned n, uint64_t first, uint64_t stop_slot, uint32_t *counts,    \
                         uint16_t *ovh)                                                             \
    {                                                                                               \
        uint64_t now = READ();                                                                      \
        while (ism_ftq_slot(now, n) < first)                                                        \
            now = READ();                                                                           \
        for (;;) {                                                                                  \
            const uint64_t start = READ();                                                          \
            const uint64_t cur = ism_ftq_slot(start, n);                                            \
            if (cur >= stop_slot)                                                                   \
                return stop_slot - first;                                                           \
            const uint64_t gap = start - now, end = (cur + 1) << n;                                 \
            uint32_t count = 0;                                                                     \
            do {                                                                                    \
                now = READ();                                                                       \
                count++;                                                                            \
            } while (now < end);                                                                    \
            counts[cur - first] = count;                                                            \
            ovh[cur - first] = gap > 65535 ? 65535 : (uint16_t)gap;                                 \
        }                                                                                           \
    }
FTQ_COUNT(ftq_count_tsc, ism_noise_rdtsc)
FTQ_COUNT(ftq_count_mono, ism_noise_monoraw_ns)

static uint64_t ftq_count(const unsigned n, uint64_t first, uint64_t stop_slot, uint32_t *counts, uint16_t *ovh)
{
    if (ism_noise_clock_active == ISM_NOISE_CLOCK_TSC)
        return ftq_count_tsc(n, first, stop_slot, counts, ovh);
    return ftq_count_mono(n, first, stop_slot, counts, ovh);
}

/* Exact quantiles of the per-sample overhead (a counting pass over the uint16 values),
 * over the slots that follow a counted slot: after a skipped slot the "overhead" is the
 * detour itself. */
static void ftq_overhead_stats(ism_probe_result *r, uint64_t slots)
{
    uint32_t *n = calloc(65536, sizeof *n);
    if (!n)
        return;
    uint64_t total = 0;
    double sum = 0;
    for (uint64_t i = 1; i < slots; i++)
        if (r->slot_count[i] && r->slot_count[i - 1]) {
            n[r->slot_ovh[i]]++;
            total++;
            sum += r->slot_ovh[i];
        }
    uint64_t seen = 0;
    int have_med = 0, have_p99 = 0;
    for (uint32_t v = 0; v < 65536 && total; v++) {
        if (!n[v])
            continue;
        seen += n[v];
        if (!have_med && seen * 2 >= total) {
            r->ovh_median = v;
            have_med = 1;
        }
        if (!have_p99 && seen * 100 >= total * 99) {
            r->ovh_p99 = v;
            have_p99 = 1;
        }
        r->ovh_max = v;
    }
    r->ovh_mean = total ? sum / (double)total : 0.0;
    free(n);
}

/* An interval that holds fewer reads than this counts mostly rounding (where its end falls
 * between two reads), not time. */
#define FTQ_MIN_READS 16
/* An interval's count moves by one read with where its end falls: a slot must miss more
 * than this many reads to be an outlier. */
#define FTQ_FLOOR_COUNTS 2

static int ftq_resolves(const ism_probe_params *p, ism_probe_result *r)
{
    const uint64_t q = 1ull << p->ftq_log2;
    if (ism_timer_resolves(&r->timer, q, p->hz, "the FTQ interval", r->refused, sizeof r->refused) != 0)
        return -1;
    uint64_t read = r->timer.median ? r->timer.median : 1;
    if (q >= FTQ_MIN_READS * read)
        return 0;
    unsigned need = p->ftq_log2;
    while ((1ull << need) < FTQ_MIN_READS * read)
        need++;
    snprintf(r->refused, sizeof r->refused,
             "an FTQ interval of 2^%u ticks (%.3g us) holds only %llu reads of the clock on cpu %d (median %llu ticks "
             "a read); its counts would be mostly rounding: use --interval-log2 %u or more",
             p->ftq_log2, (double)q * 1e6 / p->hz, (unsigned long long)(q / read), r->cpu, (unsigned long long)read,
             need);
    return -1;
}

void ism_probe_ftq_summarise(const ism_probe_params *p, ism_probe_result *r, uint64_t first, uint64_t slots)
{
    const unsigned n = p->ftq_log2;
    const uint64_t q = 1ull << n;
    /* the baseline from the slots that counted, every stride-th if there are more than fit */
    uint64_t counted = 0, k = 0;
    for (uint64_t i = 0; i < slots; i++)
        counted += r->slot_count[i] != 0;
    const uint64_t stride = counted / ISM_TIMER_PAIRS + 1;
    for (uint64_t i = 0, seen = 0; i < slots && k < ISM_TIMER_PAIRS; i++)
        if (r->slot_count[i] && seen++ % stride == 0)
            r->calib_buf[k++] = r->slot_count[i];
    ism_calib_fewer(&r->calib, r->calib_buf, k, 1.0 - p->outlier_tol, FTQ_FLOOR_COUNTS);
    const uint64_t typ = r->calib.typical, thr = r->calib.threshold;
    r->baseline = typ;
    r->threshold = thr;
    uint64_t lost_all = 0;
    for (uint64_t i = 0; i < slots;) {
        const uint32_t c = r->slot_count[i];
        uint64_t run = 1;
        if (c == 0)
            while (i + run < slots && r->slot_count[i + run] == 0)
                run++;
        ism_rec_value(r, c, run);
        if (c == 0)
            r->skipped_slots += run;
        else if (i > 0 && r->slot_count[i - 1] != 0)
            ism_hist_add(&r->overhead, r->slot_ovh[i], 1); /* only after a counted slot */
        if (c < thr) {
            /* the reads missing against the baseline, as time; an empty slot lost all of it */
            uint64_t lost = c == 0 ? q * run : (uint64_t)((double)(typ - c) * (double)q / (double)typ);
            lost_all += lost;
            ism_rec_event(r, p->max_events, (first + i) << n, c, lost, (uint32_t)(run > UINT32_MAX ? UINT32_MAX : run));
        }
        for (uint64_t j = 0; j < run; j++)
            ism_rec_raw(r, p, (first + i + j) << n, c);
        i += run;
    }
    ftq_overhead_stats(r, slots);
    r->sum_lost = lost_all;
}

void ism_probe_ftq(const ism_probe_params *p, ism_probe_result *r, uint64_t t_end)
{
    if (ism_probe_check_timer(p, r, ism_noise_now) != 0 || ftq_resolves(p, r) != 0)
        return;
    const unsigned n = p->ftq_log2;
    /* warm-up: a few slots to reach steady state (caches, frequency), not recorded */
    uint64_t first = ism_ftq_slot(ism_noise_now(), n) + 1;
    uint64_t warm = r->slot_cap < 32 ? r->slot_cap : 32;
    ftq_count(n, first, first + warm, r->slot_count, r->slot_ovh);
    first += warm + 1;
    uint64_t stop = ism_ftq_slot(t_end, n);
    if (stop > first + r->slot_cap)
        stop = first + r->slot_cap;
    if (stop < first + 1)
        stop = first + 1;
    for (size_t i = 0; i < r->slot_cap; i++)
        r->slot_count[i] = 0;
    r->t_begin = first << n;
    uint64_t slots = ftq_count(n, first, stop, r->slot_count, r->slot_ovh);
    r->t_end = stop << n;
    ism_probe_ftq_summarise(p, r, first, slots);
}
