/* tsc.c: choosing the probe clock (TSC or CLOCK_MONOTONIC_RAW), checking it (its
 * back-to-back reads, timercheck.h) and calibrating its rate against CLOCK_MONOTONIC_RAW. */
#include "tsc.h"
#include "meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ism_noise_clock_kind ism_noise_clock_active = ISM_NOISE_CLOCK_MONORAW;

static int has_word(const char *line, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(line, word); p; p = strstr(p + 1, word)) {
        int left = (p == line) || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
        int right = p[n] == '\0' || p[n] == ' ' || p[n] == '\n' || p[n] == '\t';
        if (left && right)
            return 1;
    }
    return 0;
}

int ism_noise_tsc_flags_ok(const char *text)
{
    const char *p = strstr(text, "\nflags");
    if (!p && strncmp(text, "flags", 5) == 0)
        p = text;
    if (!p)
        return 0;
    const char *end = strchr(p + 1, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char *line = malloc(len + 1);
    if (!line)
        return 0;
    memcpy(line, p, len);
    line[len] = '\0';
    int ok = has_word(line, "constant_tsc") && has_word(line, "nonstop_tsc");
    free(line);
    return ok;
}

/* Ticks per second: TSC and CLOCK_MONOTONIC_RAW read together at both ends of a span;
 * each end pair is taken as the tightest of several tries so a preemption between the
 * two reads cannot skew the rate. */
static double calibrate_hz(int calib_ms, uint64_t *ref_tick, uint64_t *ref_ns)
{
    uint64_t t[2], n[2];
    for (int end = 0; end < 2; end++) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 16; i++) {
            uint64_t a = ism_noise_monoraw_ns();
            uint64_t tsc = ism_noise_rdtsc();
            uint64_t b = ism_noise_monoraw_ns();
            if (b - a < best) {
                best = b - a;
                t[end] = tsc;
                n[end] = a + (b - a) / 2;
            }
        }
        if (end == 0) {
            struct timespec ts = {calib_ms / 1000, (long)(calib_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    *ref_tick = t[1];
    *ref_ns = n[1];
    return (double)(t[1] - t[0]) * 1e9 / (double)(n[1] - n[0]);
}

/* Examine the active clock; 0 if it passed. */
static int check_active(ism_noise_clock *c)
{
    uint64_t *d = malloc(ISM_TIMER_PAIRS * sizeof *d);
    if (!d) {
        memset(&c->check, 0, sizeof c->check);
        snprintf(c->check.verdict, sizeof c->check.verdict, "unusable: out of memory for the timer check");
        return -1;
    }
    ism_timer_collect(ism_noise_now, d, ISM_TIMER_PAIRS);
    ism_timer_check_deltas(&c->check, d, ISM_TIMER_PAIRS, c->hz);
    free(d);
    c->read_cycles = (double)c->check.median;
    return c->check.usable ? 0 : -1;
}

static void use_monoraw(ism_noise_clock *c)
{
    c->kind = ISM_NOISE_CLOCK_MONORAW;
    c->hz = 1e9;
    c->ref_ns = c->ref_tick = ism_noise_monoraw_ns();
    snprintf(c->hz_source, sizeof c->hz_source, "CLOCK_MONOTONIC_RAW counts nanoseconds (clock_getres: %.3g ns)",
             c->res_ns);
    ism_noise_clock_active = c->kind;
}

int ism_noise_clock_init(ism_noise_clock *c, int force_fallback, int calib_ms)
{
    memset(c, 0, sizeof *c);
    struct timespec res;
    c->res_ns = clock_getres(CLOCK_MONOTONIC_RAW, &res) == 0 ? (double)res.tv_sec * 1e9 + (double)res.tv_nsec : 0;
    int tsc_ok = 0, known_freq = 0;
    if (!ISM_NOISE_HAVE_TSC) {
        snprintf(c->why, sizeof c->why, "no TSC on this architecture");
    } else if (force_fallback) {
        snprintf(c->why, sizeof c->why, "clock_gettime requested (--clock monotonic_raw)");
    } else {
        char *info = ism_meta_read("/proc/cpuinfo", 4u << 20, NULL);
        if (!info)
            snprintf(c->why, sizeof c->why, "/proc/cpuinfo unreadable");
        else if (!ism_noise_tsc_flags_ok(info))
            snprintf(c->why, sizeof c->why, "cpuinfo lacks constant_tsc or nonstop_tsc");
        else {
            tsc_ok = 1;
            known_freq = strstr(info, " tsc_known_freq") != NULL;
            snprintf(c->why, sizeof c->why, "cpuinfo flags constant_tsc and nonstop_tsc");
        }
        free(info);
    }
    if (tsc_ok) {
        int ms = calib_ms > 0 ? calib_ms : 100;
        c->kind = ISM_NOISE_CLOCK_TSC;
        c->hz = calibrate_hz(ms, &c->ref_tick, &c->ref_ns);
        snprintf(c->hz_source, sizeof c->hz_source, "TSC calibrated against CLOCK_MONOTONIC_RAW over %d ms%s", ms,
                 known_freq ? " (the kernel knows the TSC rate: tsc_known_freq)" : "");
        ism_noise_clock_active = c->kind;
        if (check_active(c) == 0)
            return 0;
        size_t w = strlen(c->why);
        snprintf(c->why + w, sizeof c->why - w, ", but the TSC failed the timer check (%s); using clock_gettime",
                 c->check.verdict);
    }
    use_monoraw(c);
    return check_active(c);
}
