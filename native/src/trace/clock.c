/* clock.c: which clock a traced rank reads (see ism_tr_now in tool.h), decided at MPI_Init.
 *
 * The time-stamp counter is used only when the CPU says it ticks at a constant rate in
 * every state (constant_tsc, nonstop_tsc) and the kernel keeps time with it (clocksource
 * tsc: the kernel checked that the cores' counters agree, and would have switched away
 * from it otherwise). Its rate is measured against CLOCK_MONOTONIC between the moment the
 * library was loaded and MPI_Init, which connects the sites, so the two readings are
 * usually far apart and the rate is known to a fraction of a ppm; each reading brackets
 * CLOCK_MONOTONIC between two counter reads and keeps the tightest of a few tries.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tool.h"

ism_tr_clock_map ism_tr_clk;

#ifdef ISM_TR_HAVE_TSC
typedef struct {
    int64_t tsc;   /* the middle of the two counter reads */
    uint64_t ns;   /* CLOCK_MONOTONIC between them */
    int64_t width; /* ticks between the two counter reads */
} clock_pair;

static clock_pair pair(void)
{
    clock_pair best = {0, 0, INT64_MAX};
    for (int k = 0; k < 9; k++) {
        int64_t a = (int64_t)__rdtsc();
        uint64_t ns = ism_tr_mono();
        int64_t b = (int64_t)__rdtsc();
        if (b - a >= 0 && b - a < best.width)
            best = (clock_pair){a + (b - a) / 2, ns, b - a};
    }
    return best;
}

static clock_pair at_load;

__attribute__((constructor)) static void clock_at_load(void) { at_load = pair(); }

/* 1 if /proc/cpuinfo's first flags line lists each of the n flags. */
static int cpu_has(const char *const *flags, int n)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int all = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5))
            continue;
        all = 1;
        for (int i = 0; all && i < n; i++) {
            size_t k = strlen(flags[i]);
            const char *hit = line;
            while ((hit = strstr(hit + 1, flags[i])) &&
                   !(hit[-1] == ' ' && (hit[k] == ' ' || hit[k] == '\n' || !hit[k])))
                ;
            all = hit != NULL;
        }
        break;
    }
    if (f)
        fclose(f);
    return all;
}

static int kernel_uses_tsc(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char cs[64] = "";
    if (f) {
        if (!fgets(cs, sizeof cs, f))
            cs[0] = 0;
        fclose(f);
    }
    return !strcmp(cs, "tsc\n") || !strcmp(cs, "tsc");
}
#endif

void ism_tr_clock_choose(int allow_tsc, char *desc, size_t desclen)
{
    ism_tr_clk.tsc = 0;
    const char *why = "ISTHMUS_TRACE_CLOCK=monotonic";
#ifdef ISM_TR_HAVE_TSC
    static const char *const invariant[] = {"constant_tsc", "nonstop_tsc"};
    if (allow_tsc && !cpu_has(invariant, 2))
        why = "the CPU does not say its time-stamp counter is invariant";
    else if (allow_tsc && !kernel_uses_tsc())
        why = "the kernel does not keep time with the time-stamp counter";
    else if (allow_tsc) {
        clock_pair now = pair();
        if (now.ns - at_load.ns < 20000000u) { /* loaded just now: wait for a usable baseline */
            struct timespec d = {0, (long)(20000000u - (now.ns - at_load.ns))};
            nanosleep(&d, NULL);
            now = pair();
        }
        double ticks = (double)(now.tsc - at_load.tsc), ns = (double)(now.ns - at_load.ns);
        double per = ticks > 0 ? ns / ticks : 0;
        /* the rate's uncertainty: each reading is known to within its bracket */
        double ppm = per > 0 ? (double)(now.width + at_load.width) * per / ns * 1e6 : 1e9;
        if (per < 0.01 || per > 100 || ppm > 50) {
            why = "the time-stamp counter's rate could not be measured well";
        } else {
            ism_tr_clk = (ism_tr_clock_map){1, now.tsc, now.ns, per};
            snprintf(desc, desclen,
                     "\"clock\":\"TSC\",\"tsc_ns_per_tick\":%.9f,\"tsc_rate_error_ppm\":%.3f,"
                     "\"tsc_calibration_s\":%.3f",
                     per, ppm, ns / 1e9);
            return;
        }
    }
#else
    if (allow_tsc)
        why = "this CPU has no time-stamp counter isthmus knows";
#endif
    snprintf(desc, desclen, "\"clock\":\"CLOCK_MONOTONIC\",\"clock_why\":\"%s\"", why);
}
