/* test_units.c: the noise probes' pure parts: cpu lists, the TSC flag check, histogram
 * buckets, FTQ slot accounting, the clock-map fit, the injector's priority syntax and
 * JSON escaping. */
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../../../tests/check.h"
#include "clocksync.h"
#include "cpus.h"
#include "hist.h"
#include "prio.h"
#include "json.h"
#include "probe.h"
#include "tsc.h"

static void test_cpus(void)
{
    int c[64];
    char err[200];
    int n = ism_cpus_parse("3,0-2,2,7", c, 64, err, sizeof err);
    CHECK(n == 5 && c[0] == 0 && c[1] == 1 && c[2] == 2 && c[3] == 3 && c[4] == 7, "n=%d", n);
    CHECK(ism_cpus_parse("", c, 64, err, sizeof err) == -1 && strstr(err, "empty"), "%s", err);
    CHECK(ism_cpus_parse("2-1", c, 64, err, sizeof err) == -1 && strstr(err, "bad range"), "%s", err);
    CHECK(ism_cpus_parse("1;2", c, 64, err, sizeof err) == -1 && strstr(err, "unexpected ';'"), "%s", err);
    CHECK(ism_cpus_parse("0-9999", c, 64, err, sizeof err) == -1 && strstr(err, "beyond"), "%s", err);
    CHECK(ism_cpus_parse("0-99", c, 64, err, sizeof err) == -1 && strstr(err, "more than 64"), "%s", err);
    CHECK(ism_cpus_allowed(c, 64) >= 1, "no allowed cpu");
}

static void test_tsc_flags(void)
{
    CHECK(ism_noise_tsc_flags_ok("processor : 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n"), "both");
    CHECK(!ism_noise_tsc_flags_ok("processor : 0\nflags\t\t: fpu tsc constant_tsc rdtscp\n"), "nonstop missing");
    CHECK(!ism_noise_tsc_flags_ok("flags : fpu tsc nonstop_tsc_x constant_tsc\n"), "word boundary");
    CHECK(!ism_noise_tsc_flags_ok("model name : x\n"), "no flags line");
}

static void test_hist(void)
{
    for (uint64_t v = 0; v < 100000; v = v * 3 / 2 + 1) {
        unsigned b = ism_hist_bucket(v);
        CHECK(ism_hist_lo(b) <= v && v < ism_hist_lo(b + 1), "v=%llu b=%u", (unsigned long long)v, b);
        if (v >= 16)
            CHECK((double)(ism_hist_lo(b + 1) - ism_hist_lo(b)) / (double)v <= 1.0 / 16 + 1e-12, "width at %llu",
                  (unsigned long long)v);
    }
    CHECK(ism_hist_bucket(UINT64_MAX) < ISM_HIST_BUCKETS, "top bucket");
    static ism_hist h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 99; i++)
        ism_hist_add(&h, 100, 1);
    ism_hist_add(&h, 5000, 1);
    CHECK(ism_hist_quantile(&h, 0.5) == ism_hist_lo(ism_hist_bucket(100)), "median");
    CHECK(ism_hist_quantile(&h, 1.0) == ism_hist_lo(ism_hist_bucket(5000)), "max");
}

static void test_ftq_slots(void)
{
    const unsigned n = 10; /* slots of 1024 ticks */
    CHECK(ism_ftq_slot(1023, n) == 0 && ism_ftq_slot(1024, n) == 1, "slot edges");
    /* counted in slot 5, next start late inside slot 6: nothing skipped */
    CHECK(ism_ftq_skipped(5, 6 * 1024 + 100, n) == 0, "late start");
    /* next start in slot 9: slots 6, 7, 8 were never counted in */
    CHECK(ism_ftq_skipped(5, 9 * 1024 + 3, n) == 3, "three skipped");
    CHECK(ism_ftq_skipped(5, 6 * 1024, n) == 0, "exact edge");
}

static void test_clocksync(void)
{
    /* leader clock = 1000 + 1.00002 * rank-0 clock, symmetric legs of 50 ticks, with some
     * exchanges delayed on one leg only (they must be discarded by the fit) */
    enum { N = 128 };
    ism_pingpong x[N];
    for (int i = 0; i < N; i++) {
        int phase = i / 64;
        uint64_t t0 = 1000000000ull + (uint64_t)phase * 500000000ull + (uint64_t)(i % 64) * 10000ull;
        uint64_t delay = (i % 5 == 0) ? 7000 : 0;
        uint64_t mid = t0 + 50 + delay;
        x[i].t0 = t0;
        x[i].tr = (uint64_t)llround(1000.0 + 1.00002 * (double)mid);
        x[i].t1 = mid + 50;
    }
    ism_clockmap m = ism_clocksync_fit(x, N, 64, 0.25);
    double at = 1.2e9, want = 1000.0 + 1.00002 * at, got = m.a + m.b * at;
    CHECK(fabs(got - want) < 5, "map error %g ticks (a=%g b=%.8f)", got - want, m.a, m.b);
    CHECK(fabs(m.b - 1.00002) < 1e-8, "drift %.9f", m.b);
    CHECK(m.used == 32 && fabs(m.rtt_min - 100) < 1e-9, "used %zu rtt %g", m.used, m.rtt_min);
    CHECK(fabs(m.rtt_max_used - 100) < 1e-9, "delayed exchange used: longest rtt %g", m.rtt_max_used);
    /* keep everything: the delayed exchanges are in, and the longest round trip says so */
    ism_clockmap all = ism_clocksync_fit(x, N, 64, 1.0);
    CHECK(all.used == N && fabs(all.rtt_max_used - 7100) < 1e-9, "all used: longest rtt %g", all.rtt_max_used);
    /* symmetric legs: the bound is about half the round trip (weights of size ~1) */
    CHECK(m.err_max >= 50 && m.err_max < 100, "bound %g ticks for round trips of 100", m.err_max);
}

/* The fastest exchange of each phase is symmetric, the others in the fit spend their whole
 * round trip on the way out: the line is then off by far more than half the fastest round
 * trip (the bound the trace's clock map used to claim), yet never by more than err_max. */
static void test_clocksync_bound(void)
{
    enum { PER = 8, N = 2 * PER };
    ism_pingpong x[N];
    for (int i = 0; i < N; i++) {
        uint64_t t0 = 2000000000ull + (uint64_t)(i / PER) * 300000000ull + (uint64_t)(i % PER) * 5000ull;
        uint64_t rtt = i % PER == 0 ? 100 : 400 + (uint64_t)(i % PER);
        uint64_t mid = i % PER == 0 ? t0 + 50 : t0 + rtt - 1;
        x[i] = (ism_pingpong){t0, t0 + rtt, (uint64_t)llround(1000.0 + 1.00002 * (double)mid)};
    }
    ism_clockmap m = ism_clocksync_fit(x, N, PER, 0.5);
    CHECK(m.used == 8 && fabs(m.rtt_min - 100) < 1e-9, "used %zu, fastest %g", m.used, m.rtt_min);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double at = (double)x[i].t0 + (double)(x[i].t1 - x[i].t0) / 2;
        double off = fabs(m.a + m.b * at - (1000.0 + 1.00002 * at));
        worst = off > worst ? off : worst;
    }
    CHECK(worst > 2 * (m.rtt_min / 2), "the line is off by %g ticks, the fastest half round trip %g", worst,
          m.rtt_min / 2);
    CHECK(worst <= m.err_max && m.err_max <= m.rtt_max_used, "off by %g ticks, bound %g, longest round trip %g",
          worst, m.err_max, m.rtt_max_used);
    double at0 = (double)x[0].t0, off0 = fabs(m.a + m.b * at0 - (1000.0 + 1.00002 * at0));
    CHECK(off0 > m.rtt_min / 2 && off0 <= m.err_first, "off by %g ticks at the first send, bound there %g", off0,
          m.err_first);
}

static void test_priority(void)
{
    int pol, val;
    CHECK(ism_prio_parse("fifo:50", &pol, &val) == 0 && pol == SCHED_FIFO && val == 50, "fifo");
    CHECK(ism_prio_parse("nice:-5", &pol, &val) == 0 && pol == SCHED_OTHER && val == -5, "nice");
    CHECK(ism_prio_parse("normal", &pol, &val) == 0 && pol == SCHED_OTHER, "normal");
    CHECK(ism_prio_parse("fifo:0", &pol, &val) == -1, "fifo 0 out of range");
    CHECK(ism_prio_parse("fifo:x", &pol, &val) == -1, "garbage");
    CHECK(ism_prio_parse("idle:1", &pol, &val) == -1, "unknown policy");
}

static void test_json(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ism_json j;
    ism_json_init(&j, f);
    ism_json_obj(&j, NULL);
    ism_json_str(&j, "s", "a\"b\\c\nd\x01");
    ism_json_arr(&j, "a");
    ism_json_u64(&j, NULL, 1);
    ism_json_dbl(&j, NULL, NAN);
    ism_json_end_arr(&j);
    ism_json_end_obj(&j);
    fclose(f);
    CHECK(strcmp(buf, "{\"s\":\"a\\\"b\\\\c\\nd\\u0001\",\"a\":[1,null]}\n") == 0, "got %s", buf);
    free(buf);
}

int main(void)
{
    test_cpus();
    test_tsc_flags();
    test_hist();
    test_ftq_slots();
    test_clocksync();
    test_clocksync_bound();
    test_priority();
    test_json();
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    else
        printf("noise units: all checks passed\n");
    return failures ? 1 : 0;
}
