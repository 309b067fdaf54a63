/* tsc.c: choosing the probe clock (TSC or CLOCK_MONOTONIC_RAW), calibrating its rate
 * against CLOCK_MONOTONIC_RAW, and measuring what one read costs. */
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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
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

static double read_cost(void)
{
    enum { N = 1001 };
    uint64_t d[N];
    for (int i = 0; i < N; i++) {
        uint64_t a = ism_noise_now();
        uint64_t b = ism_noise_now();
        d[i] = b - a;
    }
    qsort(d, N, sizeof d[0], cmp_u64);
    return (double)d[N / 2];
}

void ism_noise_clock_init(ism_noise_clock *c, int force_fallback, int calib_ms)
{
    memset(c, 0, sizeof *c);
    int tsc_ok = 0;
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
            snprintf(c->why, sizeof c->why, "cpuinfo flags constant_tsc and nonstop_tsc");
        }
        free(info);
    }
    if (tsc_ok) {
        c->kind = ISM_NOISE_CLOCK_TSC;
        c->hz = calibrate_hz(calib_ms > 0 ? calib_ms : 100, &c->ref_tick, &c->ref_ns);
    } else {
        c->kind = ISM_NOISE_CLOCK_MONORAW;
        c->hz = 1e9;
        c->ref_ns = c->ref_tick = ism_noise_monoraw_ns();
    }
    ism_noise_clock_active = c->kind;
    c->read_cycles = read_cost();
}
