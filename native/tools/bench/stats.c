/*
 * stats.c - per-point statistics (see stats.h). Sorting is insertion-free qsort; the
 * sample counts are small (repetitions of one point), so there is no need for selection.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ism_bench_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0.0)
        return sorted[0];
    if (q >= 1.0)
        return sorted[n - 1];
    double h = q * (double)(n - 1);
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (h - (double)lo) * (sorted[hi] - sorted[lo]);
}

void ism_bench_summarise(const double *values, size_t n, double *scratch, ism_bench_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0)
        return;
    memcpy(scratch, values, n * sizeof *scratch);
    qsort(scratch, n, sizeof *scratch, cmp_double);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += scratch[i];
    out->mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (scratch[i] - out->mean) * (scratch[i] - out->mean);
    out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    out->min = scratch[0];
    out->max = scratch[n - 1];
    out->median = ism_bench_quantile(scratch, n, 0.5);
    out->p25 = ism_bench_quantile(scratch, n, 0.25);
    out->p75 = ism_bench_quantile(scratch, n, 0.75);
    out->p99 = ism_bench_quantile(scratch, n, 0.99);
}
