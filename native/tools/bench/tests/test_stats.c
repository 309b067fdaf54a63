/*
 * test_stats.c - isthmus-bench's per-point statistics against known answers: exact
 * quantiles of small sets (numpy's linear definition), and the sample quantiles of
 * large draws from uniform and exponential distributions against their true values.
 */
#include "../stats.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK_NEAR(got, want, tol)                                                           \
    do {                                                                                     \
        double g_ = (got), w_ = (want);                                                      \
        if (!(fabs(g_ - w_) <= (tol))) {                                                     \
            fprintf(stderr, "%s:%d: %s = %.9g, want %.9g (tol %g)\n", __FILE__, __LINE__, #got, \
                    g_, w_, (double)(tol));                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static uint64_t state = 0x9e3779b97f4a7c15ull;
static double uniform01(void)
{
    /* splitmix64 */
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

int main(void)
{
    ism_bench_summary s;
    double scratch[200000];

    /* exact small cases: numpy.quantile([...], q) with the default (linear) method */
    double a[] = {5, 1, 4, 2, 3};
    ism_bench_summarise(a, 5, scratch, &s);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 5, 0);
    CHECK_NEAR(s.median, 3, 0);
    CHECK_NEAR(s.p25, 2, 0);
    CHECK_NEAR(s.p99, 4.96, 1e-12);
    CHECK_NEAR(s.mean, 3, 1e-12);
    CHECK_NEAR(s.stddev, sqrt(2.5), 1e-12);
    CHECK_NEAR(a[0], 5, 0); /* input untouched */

    double b[] = {10, 20, 30, 40};
    ism_bench_summarise(b, 4, scratch, &s);
    CHECK_NEAR(s.median, 25, 1e-12);
    CHECK_NEAR(s.p75, 32.5, 1e-12);
    CHECK_NEAR(s.p99, 39.7, 1e-12);

    double one[] = {7.5};
    ism_bench_summarise(one, 1, scratch, &s);
    CHECK_NEAR(s.median, 7.5, 0);
    CHECK_NEAR(s.p99, 7.5, 0);
    CHECK_NEAR(s.stddev, 0, 0);

    /* large draws: sample quantiles converge to the distribution's */
    enum { N = 200000 };
    static double u[N], e[N];
    for (int i = 0; i < N; i++) {
        u[i] = 2.0 + 3.0 * uniform01();      /* U(2, 5) */
        e[i] = -log(uniform01()) / 0.5;      /* Exp(rate 0.5): median 2 ln 2, p99 2 ln 100 */
    }
    ism_bench_summarise(u, N, scratch, &s);
    CHECK_NEAR(s.median, 3.5, 0.02);
    CHECK_NEAR(s.p99, 2.0 + 3.0 * 0.99, 0.02);
    CHECK_NEAR(s.mean, 3.5, 0.01);
    CHECK_NEAR(s.stddev, 3.0 / sqrt(12.0), 0.01);
    CHECK_NEAR(s.min, 2.0, 0.001);
    CHECK_NEAR(s.max, 5.0, 0.001);
    ism_bench_summarise(e, N, scratch, &s);
    CHECK_NEAR(s.median, 2.0 * log(2.0), 0.03);
    CHECK_NEAR(s.p99, 2.0 * log(100.0), 0.15);
    CHECK_NEAR(s.p25, -2.0 * log(0.75), 0.02);
    CHECK_NEAR(s.mean, 2.0, 0.02);

    if (failures == 0)
        printf("bench stats: OK\n");
    return failures != 0;
}
