/*
 * stats.h - per-point statistics of isthmus-bench: the samples of one measurement point
 * (one value per repetition) reduced to min, median, p99, max, mean and spread.
 * Pure C, no MPI, so tests/test_stats.c checks it against known distributions.
 */
#ifndef ISM_BENCH_STATS_H
#define ISM_BENCH_STATS_H

#include <stddef.h>

typedef struct {
    size_t n;
    double min, max, mean, median, p25, p75, p99, stddev;
} ism_bench_summary;

/* Quantile q in [0,1] of n sorted values, linear interpolation between closest ranks
 * (the "type 7" definition, numpy's default), so Python and C agree exactly. */
double ism_bench_quantile(const double *sorted, size_t n, double q);

/* Summarise n values (n >= 1). `scratch` has room for n doubles; the input is untouched. */
void ism_bench_summarise(const double *values, size_t n, double *scratch, ism_bench_summary *out);

#endif
