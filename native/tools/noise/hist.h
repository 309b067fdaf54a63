/* hist.h: a fixed-size log-linear histogram of 64-bit tick or count values (16 linear
 * sub-buckets per power of two, so every bucket is within ~6% of its value). Updating it
 * is a few instructions, cheap enough for the probes' per-sample path; its size never
 * grows with run length. */
#ifndef ISM_NOISE_HIST_H
#define ISM_NOISE_HIST_H

#include <stdint.h>

#define ISM_HIST_SUB_BITS 4
#define ISM_HIST_SUB (1u << ISM_HIST_SUB_BITS)
#define ISM_HIST_BUCKETS (64u * ISM_HIST_SUB)

typedef struct {
    uint64_t n[ISM_HIST_BUCKETS];
} ism_hist;

static inline unsigned ism_hist_bucket(uint64_t v)
{
    if (v < ISM_HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned sub = (unsigned)(v >> (msb - ISM_HIST_SUB_BITS)) & (ISM_HIST_SUB - 1);
    return (msb - ISM_HIST_SUB_BITS + 1) * ISM_HIST_SUB + sub;
}

static inline void ism_hist_add(ism_hist *h, uint64_t v, uint64_t times) { h->n[ism_hist_bucket(v)] += times; }

/* Smallest value that falls into bucket b (buckets cover [lo(b), lo(b+1))). */
uint64_t ism_hist_lo(unsigned b);
/* Value below which a fraction q of the samples lie (bucket lower bound), 0 if empty. */
uint64_t ism_hist_quantile(const ism_hist *h, double q);

#endif
