/* delay.c: delay, jitter and optional reordering as described in delay.h. */
#include "delay.h"

void ism_le_delay_init(ism_le_delay *d, uint64_t delay_ns, uint64_t jitter_ns, int reorder,
                       double reorder_p)
{
    *d = (ism_le_delay){.delay_ns = delay_ns, .jitter_ns = jitter_ns, .reorder = reorder,
                        .reorder_p = reorder_p};
}

uint64_t ism_le_delay_release(ism_le_delay *d, ism_le_prng *g, uint64_t sent_ns)
{
    if (d->reorder_p > 0 && ism_le_prng_unit(g) < d->reorder_p)
        return sent_ns; /* overtakes what is in flight; the others' order is untouched */
    int64_t total = (int64_t)d->delay_ns;
    if (d->jitter_ns > 0) {
        double u = ism_le_prng_unit(g) * 2.0 - 1.0;
        total += (int64_t)(u * (double)d->jitter_ns);
        if (total < 0)
            total = 0;
    }
    uint64_t out = sent_ns + (uint64_t)total;
    if (!d->reorder && out < d->last_out_ns)
        out = d->last_out_ns;
    if (out > d->last_out_ns)
        d->last_out_ns = out;
    return out;
}
