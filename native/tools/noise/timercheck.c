/* timercheck.c: the clock's back-to-back deltas summarised and judged (see timercheck.h). */
#include "timercheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void ism_timer_sort(uint64_t *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_u64);
}

uint64_t ism_timer_quantile(const uint64_t *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    double at = q * (double)(n - 1) + 0.5;
    size_t i = at <= 0 ? 0 : (size_t)at;
    return sorted[i < n ? i : n - 1];
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* "12 ticks" or "12 ticks (5.7 ns)" */
static void span_text(char *out, size_t len, uint64_t ticks, double hz)
{
    if (hz > 0)
        snprintf(out, len, "%llu ticks (%.3g ns)", (unsigned long long)ticks, (double)ticks * 1e9 / hz);
    else
        snprintf(out, len, "%llu ticks", (unsigned long long)ticks);
}

static void judge(ism_timer_check *c, uint64_t back_max, double hz)
{
    char a[64], b[64];
    size_t len = sizeof c->verdict;
    c->usable = 0;
    if (c->n == 0) {
        snprintf(c->verdict, len, "unusable: no reads examined");
        return;
    }
    if (c->backward) {
        span_text(a, sizeof a, back_max, hz);
        snprintf(c->verdict, len, "unusable: the clock went backwards in %llu of %llu read pairs (by up to %s)",
                 (unsigned long long)c->backward, (unsigned long long)c->n, a);
        return;
    }
    if (c->repeats == c->n) {
        snprintf(c->verdict, len, "unusable: the clock did not advance in %llu back-to-back reads",
                 (unsigned long long)c->n);
        return;
    }
    c->usable = 1;
    int w = snprintf(c->verdict, len, "usable: reads %llu/%llu/%llu/%llu ticks (min/median/p95/p99), step %llu, "
                     "increment %llu",
                     (unsigned long long)c->min, (unsigned long long)c->median, (unsigned long long)c->p95,
                     (unsigned long long)c->p99, (unsigned long long)c->step, (unsigned long long)c->gcd);
    if (c->repeats && w > 0 && (size_t)w < len) {
        span_text(a, sizeof a, c->step, hz);
        span_text(b, sizeof b, ism_timer_floor(c), hz);
        w += snprintf(c->verdict + w, len - (size_t)w,
                      "; coarse: %.1f%% of read pairs saw no advance, the clock steps by %s, spans under %s "
                      "are not resolved",
                      100.0 * (double)c->repeats / (double)c->n, a, b);
    }
    if (c->fast_share >= 0.01 && w > 0 && (size_t)w < len)
        snprintf(c->verdict + w, len - (size_t)w,
                 "; %.1f%% of read pairs are under half the median: a minimum-based threshold would sit below "
                 "the ordinary loop",
                 100.0 * c->fast_share);
}

void ism_timer_check_deltas(ism_timer_check *c, uint64_t *d, size_t n, double hz)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    uint64_t back_max = 0, g = 0;
    for (size_t i = 0; i < n; i++) {
        if ((int64_t)d[i] < 0) {
            c->backward++;
            uint64_t back = (uint64_t)0 - d[i];
            if (back > back_max)
                back_max = back;
        } else if (d[i] == 0) {
            c->repeats++;
        } else {
            g = gcd_u64(d[i], g);
        }
    }
    ism_timer_sort(d, n);
    size_t m = n - c->backward; /* a backward delta is a huge unsigned value: they sort last */
    c->gcd = g;
    if (m) {
        c->min = d[0];
        c->p05 = ism_timer_quantile(d, m, 0.05);
        c->median = ism_timer_quantile(d, m, 0.5);
        c->p95 = ism_timer_quantile(d, m, 0.95);
        c->p99 = ism_timer_quantile(d, m, 0.99);
        c->max = d[m - 1];
        c->step = c->repeats < m ? d[c->repeats] : 0;
        uint64_t fast = 0;
        for (size_t i = 0; i < m; i++) {
            if (i == 0 || d[i] != d[i - 1])
                c->distinct++;
            if (d[i] * 2 < c->median)
                fast++;
        }
        c->fast_share = (double)fast / (double)m;
    }
    judge(c, back_max, hz);
}

uint64_t ism_timer_floor(const ism_timer_check *c)
{
    uint64_t step = c->step ? c->step : 1;
    return ISM_TIMER_MIN_STEPS * step;
}

int ism_timer_resolves(const ism_timer_check *c, uint64_t span, double hz, const char *what, char *err,
                       size_t errlen)
{
    uint64_t floor = ism_timer_floor(c);
    if (c->usable && span >= floor)
        return 0;
    char a[64], b[64], s[64];
    span_text(s, sizeof s, span, hz);
    if (!c->usable) {
        snprintf(err, errlen, "%s (%s) cannot be measured: the clock is %s", what, s, c->verdict);
        return -1;
    }
    span_text(a, sizeof a, c->step, hz);
    span_text(b, sizeof b, floor, hz);
    snprintf(err, errlen, "%s of %s is finer than the clock resolves: two reads differ by at least %s (its step, "
             "or one read), and a span needs %d of those (%s)", what, s, a, ISM_TIMER_MIN_STEPS, b);
    return -1;
}
