/* record.h: the per-sample bookkeeping all probes share (totals, histogram, bounded
 * event list, optional raw samples). Inline: it sits on the probes' timed path. */
#ifndef ISM_NOISE_RECORD_H
#define ISM_NOISE_RECORD_H

#include "probe.h"

static inline void ism_rec_event(ism_probe_result *r, size_t cap, uint64_t t, uint64_t value, uint64_t lost,
                                 uint32_t slots)
{
    r->n_outliers += slots;
    if (r->n_events < cap) {
        ism_probe_event *e = &r->events[r->n_events++];
        e->t = t;
        e->value = value;
        e->lost = lost;
        e->slots = slots;
    } else {
        r->dropped_events++;
        r->dropped_lost += lost;
    }
}

static inline void ism_rec_raw(ism_probe_result *r, const ism_probe_params *p, uint64_t t, uint64_t value)
{
    if (!p->raw)
        return;
    if (r->n_raw < p->max_raw) {
        r->raw[r->n_raw].t = t;
        r->raw[r->n_raw].value = value;
        r->n_raw++;
    } else {
        r->dropped_raw++;
    }
}

static inline void ism_rec_value(ism_probe_result *r, uint64_t value, uint64_t times)
{
    r->samples += times;
    r->sum_value += value * times;
    ism_hist_add(&r->hist, value, times);
    if (value < r->value_min)
        r->value_min = value;
    if (value > r->value_max)
        r->value_max = value;
}

#endif
