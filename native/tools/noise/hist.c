/* hist.c: bucket bounds and quantiles of the log-linear histogram (see hist.h). */
#include "hist.h"

uint64_t ism_hist_lo(unsigned b)
{
    if (b < ISM_HIST_SUB)
        return b;
    unsigned octave = b / ISM_HIST_SUB - 1; /* msb - SUB_BITS */
    unsigned sub = b % ISM_HIST_SUB;
    return ((uint64_t)(ISM_HIST_SUB + sub)) << octave;
}

uint64_t ism_hist_quantile(const ism_hist *h, double q)
{
    uint64_t total = 0;
    for (unsigned b = 0; b < ISM_HIST_BUCKETS; b++)
        total += h->n[b];
    if (!total)
        return 0;
    double want = q * (double)total, seen = 0;
    for (unsigned b = 0; b < ISM_HIST_BUCKETS; b++) {
        seen += (double)h->n[b];
        if (seen >= want && h->n[b])
            return ism_hist_lo(b);
    }
    return ism_hist_lo(ISM_HIST_BUCKETS - 1);
}
