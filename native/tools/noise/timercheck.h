/* timercheck.h: is a clock fit to measure with, and how fine a span does it resolve?
 * Back-to-back reads are summarised (min, median, p95, p99, max of their deltas; the
 * smallest step the clock shows and the common increment of all steps; how often two
 * reads return the same value; whether it ever goes back; the share of read pairs faster
 * than half the median, the signature of a clock whose reads sometimes overlap) into a
 * verdict. Never assumed: on one machine of this project's kind 5 % of rdtsc pairs took
 * 1-9 ticks and 95 % took 20-30 (issue 23), and an aarch64 clock may step by 40 ns.
 * Pure over the deltas, so tests feed it synthetic clocks; no other dependency, so
 * isthmus-bench builds it with any vendor's mpicc. */
#ifndef ISM_TIMER_CHECK_H
#define ISM_TIMER_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* A span shorter than this many steps of the clock is not resolved (+-25 % or worse). */
#define ISM_TIMER_MIN_STEPS 4
/* Read pairs the probes examine (about 1-2 ms of reads). */
#define ISM_TIMER_PAIRS 32768

typedef struct {
    uint64_t n;          /* read pairs examined */
    uint64_t min, p05, median, p95, p99, max; /* forward deltas, in ticks */
    uint64_t step;       /* smallest nonzero delta: the finest difference two reads show */
    uint64_t gcd;        /* greatest common divisor of the nonzero deltas: the clock's increment */
    uint64_t distinct;   /* distinct delta values */
    uint64_t repeats;    /* pairs where the clock did not advance */
    uint64_t backward;   /* pairs where the second read is earlier than the first */
    double fast_share;   /* pairs faster than half the median */
    int usable;
    char verdict[240];   /* one line: what was seen and what it means */
} ism_timer_check;

/* Examine n back-to-back deltas d[i] = t[i+1] - t[i] (mod 2^64: a read that went back is
 * a huge value). Sorts d in place; afterwards the first n - c->backward entries are the
 * forward deltas in ascending order. hz (ticks per second, 0 if unknown) only puts times
 * into the verdict. */
void ism_timer_check_deltas(ism_timer_check *c, uint64_t *d, size_t n, double hz);

/* Sorted samples, shared with the calibration (calib.c): sort ascending, and the value
 * at fraction q (nearest rank) of n sorted values (0 if n is 0). */
void ism_timer_sort(uint64_t *v, size_t n);
uint64_t ism_timer_quantile(const uint64_t *sorted, size_t n, double q);

/* The shortest span the clock resolves: ISM_TIMER_MIN_STEPS steps (at least one tick). */
uint64_t ism_timer_floor(const ism_timer_check *c);

/* Can `what`, a span of `span` ticks, be measured with this clock? 0, or -1 with a message
 * in err naming the span, the clock's step and the least span it resolves (hz converts
 * ticks to time for the message). */
int ism_timer_resolves(const ism_timer_check *c, uint64_t span, double hz, const char *what, char *err,
                       size_t errlen);

#if defined(__GNUC__)
#define ISM_TIMER_INLINE static inline __attribute__((always_inline))
#else
#define ISM_TIMER_INLINE static inline
#endif

/* n back-to-back deltas of `read`. Inline, so a constant `read` is inlined and the deltas
 * are those of the probes' own loops. */
ISM_TIMER_INLINE void ism_timer_collect(uint64_t (*read)(void), uint64_t *d, size_t n)
{
    uint64_t prev = read();
    for (size_t i = 0; i < n; i++) {
        uint64_t t = read();
        d[i] = t - prev;
        prev = t;
    }
}

#endif
