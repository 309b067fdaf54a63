/* tsc.h: the noise probes' clock. One read function, chosen once at start-up:
 * rdtsc where /proc/cpuinfo says the TSC is constant and nonstop (so a tick is the same
 * length on every core and in every C-state) and the TSC passes the timer check, else
 * clock_gettime (CLOCK_MONOTONIC_RAW) in nanoseconds. Ticks are converted to seconds with
 * a frequency calibrated against CLOCK_MONOTONIC_RAW, never taken from a nominal clock
 * rate; how fine the chosen clock is, is measured (timercheck.h), never assumed. */
#ifndef ISM_NOISE_TSC_H
#define ISM_NOISE_TSC_H

#include <stdint.h>
#include <time.h>

#include "timercheck.h"

typedef enum { ISM_NOISE_CLOCK_TSC = 0, ISM_NOISE_CLOCK_MONORAW = 1 } ism_noise_clock_kind;

typedef struct {
    ism_noise_clock_kind kind;
    double hz;            /* ticks per second, calibrated */
    double read_cycles;   /* median cost of one read, in ticks (back-to-back reads) */
    char why[400];        /* why this clock was chosen */
    char hz_source[160];  /* where hz comes from */
    double res_ns;        /* clock_getres(CLOCK_MONOTONIC_RAW): what the kernel claims */
    ism_timer_check check; /* back-to-back reads of the chosen clock, on the calling thread */
    uint64_t ref_tick;    /* a tick and the CLOCK_MONOTONIC_RAW nanoseconds read with it, */
    uint64_t ref_ns;      /* so other clocks (trace clocks) can be converted to ticks */
} ism_noise_clock;

/* The active clock kind; set once by ism_noise_clock_init, read by ism_noise_now. */
extern ism_noise_clock_kind ism_noise_clock_active;

static inline uint64_t ism_noise_monoraw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t ism_noise_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#define ISM_NOISE_HAVE_TSC 1
#else
static inline uint64_t ism_noise_rdtsc(void) { return ism_noise_monoraw_ns(); }
#define ISM_NOISE_HAVE_TSC 0
#endif

static inline uint64_t ism_noise_now(void)
{
    return ism_noise_clock_active == ISM_NOISE_CLOCK_TSC ? ism_noise_rdtsc() : ism_noise_monoraw_ns();
}

/* Choose, check and calibrate the clock. force_fallback selects clock_gettime even where
 * the TSC qualifies (for tests and for comparing). calib_ms is the calibration span. A TSC
 * that fails the timer check is replaced by clock_gettime (c->why says so); returns 0, or
 * -1 when the chosen clock fails the check too (c->check.verdict says why). */
int ism_noise_clock_init(ism_noise_clock *c, int force_fallback, int calib_ms);

/* Does the cpuinfo text (the flags line) declare constant_tsc and nonstop_tsc? Pure, for tests. */
int ism_noise_tsc_flags_ok(const char *cpuinfo_text);

#endif
