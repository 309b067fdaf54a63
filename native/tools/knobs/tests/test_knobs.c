/* test_knobs.c: the settings' parser (src/common/knobs.c, units.c) without MPI: every
 * kind takes its good values, refuses garbage and values out of range with the one line
 * that names the variable, the value and what is allowed, and the environment check
 * reports each bad variable once. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/common/knobs.h"
#include "../../../src/common/units.h"
#include "../../../tests/check.h"

static void sizes(void)
{
    static const struct { const char *s; int64_t v; } good[] = {
        {"0", 0}, {"65536", 65536}, {"64k", 65536}, {"64K", 65536}, {"64KiB", 65536},
        {"64kB", 65536}, {"64kib", 65536}, {"64ki", 65536}, {"1m", 1 << 20}, {"1M", 1 << 20},
        {"1MiB", 1 << 20}, {"2g", 2LL << 30}, {"1t", 1LL << 40}, {"1.5m", 3 << 19},
        {"0.5k", 512}, {"100B", 100}, {"100b", 100}, {"1.25k", 1280},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t v = -1;
        CHECK(ism_units_size(good[i].s, &v) == 0 && v == good[i].v, "%s -> %lld, want %lld",
              good[i].s, (long long)v, (long long)good[i].v);
    }
    static const char *const bad[] = {
        "", "abc", "-1", "+1", " 1", "1 ", "1x", "1kk", "1.3k", "0x10", "1e3", ".5k", "5.",
        "1kbit", "9999999999999999999", "8388608t", "1.k", "inf", "nan", "1ik",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        CHECK(ism_units_size(bad[i], &v) == -1 && v == 42, "size \"%s\" accepted as %lld",
              bad[i], (long long)v);
    }
    char buf[32];
    ism_units_size_text(1 << 20, buf, sizeof buf);
    CHECK(!strcmp(buf, "1m"), "%s", buf);
    ism_units_size_text(1000, buf, sizeof buf);
    CHECK(!strcmp(buf, "1000"), "%s", buf);
    ism_units_size_text(0, buf, sizeof buf);
    CHECK(!strcmp(buf, "0"), "%s", buf);
}

static void rates(void)
{
    static const struct { const char *s; double v; } good[] = {
        {"1000", 1000}, {"10e9", 10e9}, {"1.5e6", 1.5e6}, {"100mbit", 100e6},
        {"1gbit", 1e9}, {"1Gbit", 1e9}, {"10mbps", 10e6}, {"125MB/s", 1e9}, {"1kB/s", 8000},
        {"1KiB/s", 8192}, {"1kibit", 1024}, {"2tbit", 2e12}, {"0", 0}, {"56kbit", 56000},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        CHECK(ism_units_rate(good[i].s, &v) == 0 && fabs(v - good[i].v) <= 1e-9 * good[i].v,
              "%s -> %g, want %g", good[i].s, v, good[i].v);
    }
    static const char *const bad[] = {
        "", "fast", "1g", "100m", "-1", "1e999", "inf", "1 gbit", "1gbits", "1b/s", "1mb",
        "0x10", "1.", "1e",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = 42;
        CHECK(ism_units_rate(bad[i], &v) == -1 && v == 42, "rate \"%s\" accepted", bad[i]);
    }
}

static void durations_fractions_counts(void)
{
    double v;
    CHECK(!ism_units_duration("250", 1e-3, &v) && v == 250, "250 ms: %g", v);
    CHECK(!ism_units_duration("1.5s", 1e-3, &v) && v == 1500, "1.5s in ms: %g", v);
    CHECK(!ism_units_duration("90s", 1, &v) && v == 90, "90s: %g", v);
    CHECK(!ism_units_duration("200us", 1e-6, &v) && fabs(v - 200) < 1e-9, "200us: %g", v);
    CHECK(!ism_units_duration("20.5", 1e-3, &v) && v == 20.5, "20.5: %g", v);
    CHECK(ism_units_duration("5min", 1, &v) == -1, "5min accepted");
    CHECK(ism_units_duration("ms", 1, &v) == -1, "ms accepted");
    CHECK(ism_units_duration("-1", 1, &v) == -1, "-1 accepted");
    CHECK(!ism_units_fraction("0.1%", &v) && fabs(v - 0.001) < 1e-15, "0.1%%: %g", v);
    CHECK(!ism_units_fraction("1e-4", &v) && v == 1e-4, "1e-4: %g", v);
    CHECK(ism_units_fraction("1%%", &v) == -1 && ism_units_fraction("%", &v) == -1,
          "bad fraction accepted");
    int64_t c;
    CHECK(!ism_units_count("16", &c) && c == 16, "16: %lld", (long long)c);
    CHECK(ism_units_count("16k", &c) == -1 && ism_units_count("1.0", &c) == -1 &&
              ism_units_count("", &c) == -1 && ism_units_count("99999999999999999999", &c) == -1,
          "bad count accepted");
}

/* knob `id` refuses `text` with exactly `want` */
static void refused(ism_knob_id id, const char *text, const char *want)
{
    ism_knob_val v;
    char err[512] = "";
    CHECK(ism_knob_parse(id, text, &v, err, sizeof err) == -1 && !strcmp(err, want),
          "%s=%s:\n  got  %s\n  want %s", ism_knobs[id].name, text, err, want);
}

static double accepted(ism_knob_id id, const char *text)
{
    ism_knob_val v = {-1, NULL};
    char err[512] = "";
    CHECK(ism_knob_parse(id, text, &v, err, sizeof err) == 0, "%s=%s refused: %s",
          ism_knobs[id].name, text, err);
    return v.num;
}

static void knobs(void)
{
    const char *size_eager = "expected a size in bytes (e.g. 65536, 64k, 1m) from 0 to 1m";
    char want[512];
    snprintf(want, sizeof want, "ISTHMUS_EAGER=abc: %s", size_eager);
    refused(ISM_K_EAGER, "abc", want);
    snprintf(want, sizeof want, "ISTHMUS_EAGER=2m: %s", size_eager);
    refused(ISM_K_EAGER, "2m", want);
    CHECK(accepted(ISM_K_EAGER, "0") == 0 && accepted(ISM_K_EAGER, "32k") == 32768, "eager");
    refused(ISM_K_CHUNK, "0",
            "ISTHMUS_CHUNK=0: expected a size in bytes (e.g. 65536, 64k, 1m) from 4k to 1m");
    CHECK(accepted(ISM_K_CHUNK, "1MiB") == 1 << 20, "chunk 1MiB");
    refused(ISM_K_WINDOW, "8k", "ISTHMUS_WINDOW=8k: expected a whole number from 2 to 1024");
    refused(ISM_K_WINDOW, "1", "ISTHMUS_WINDOW=1: expected a whole number from 2 to 1024");
    refused(ISM_K_WINDOW, "x", "ISTHMUS_WINDOW=x: expected a whole number from 2 to 1024");
    CHECK(accepted(ISM_K_WINDOW, "16") == 16, "window 16");
    refused(ISM_K_STATS, "yes", "ISTHMUS_STATS=yes: expected 0 or 1");
    refused(ISM_K_STATS, "2", "ISTHMUS_STATS=2: expected 0 or 1");
    CHECK(accepted(ISM_K_STATS, "1") == 1 && accepted(ISM_K_STATS, "0") == 0, "stats");
    refused(ISM_K_LINK_OUTAGE, "soon",
            "ISTHMUS_LINK_OUTAGE=soon: expected a duration in s (a number, or with a unit: ns, "
            "us, ms, s) from 1 to 86400 s");
    refused(ISM_K_LINK_OUTAGE, "500ms",
            "ISTHMUS_LINK_OUTAGE=500ms: expected a duration in s (a number, or with a unit: ns, "
            "us, ms, s) from 1 to 86400 s");
    CHECK(accepted(ISM_K_LINK_OUTAGE, "90") == 90 && accepted(ISM_K_LINK_OUTAGE, "1500ms") == 1.5,
          "outage");
    CHECK(accepted(ISM_K_WAN_RTT_MS, "20.500") == 20.5, "rtt");
    refused(ISM_K_WAN_RATE, "fast",
            "ISTHMUS_WAN_RATE=fast: expected a rate in bits/s (e.g. 10e9, 100mbit, 1gbit, "
            "125MB/s) from 0 to 1e+15");
    CHECK(accepted(ISM_K_WAN_RATE, "1gbit") == 1e9 && accepted(ISM_K_WAN_RATE, "10e9") == 1e10,
          "rate");
    refused(ISM_K_WAN_LOSS, "2", "ISTHMUS_WAN_LOSS=2: expected a number (e.g. 0.5 or 50%) from 0 to 1");
    CHECK(accepted(ISM_K_WAN_LOSS, "0.1%") == 0.001, "loss");
    refused(ISM_K_WAN_TRANSPORT, "quic", "ISTHMUS_WAN_TRANSPORT=quic: expected one of tcp, udp");
    accepted(ISM_K_WAN_TRANSPORT, "udp");
    refused(ISM_K_WAN_CC, "BBR",
            "ISTHMUS_WAN_CC=BBR: expected a name of 1 to 15 lowercase letters, digits or _");
    refused(ISM_K_WAN_CC, "bbr;reboot",
            "ISTHMUS_WAN_CC=bbr;reboot: expected a name of 1 to 15 lowercase letters, digits or _");
    accepted(ISM_K_WAN_CC, "cubic");
}

static int nbad;
static char lastbad[512];
static void count_bad(const char *line, void *arg)
{
    (void)arg;
    nbad++;
    snprintf(lastbad, sizeof lastbad, "%s", line);
}

static void environment(void)
{
    for (int id = 0; id < ISM_K_N; id++)
        unsetenv(ism_knobs[id].name);
    ism_knob_val v;
    char err[512];
    CHECK(ism_knob_env(ISM_K_EAGER, &v, err, sizeof err) == 0, "unset eager");
    setenv("ISTHMUS_EAGER", "", 1);
    CHECK(ism_knob_env(ISM_K_EAGER, &v, err, sizeof err) == 0, "empty eager is unset");
    setenv("ISTHMUS_EAGER", "16k", 1);
    CHECK(ism_knob_env(ISM_K_EAGER, &v, err, sizeof err) == 1 && v.num == 16384, "eager 16k");
    CHECK(ism_knobs_check_env(ISM_KNOB_LIB | ISM_KNOB_GW | ISM_KNOB_RUN, count_bad, NULL) == 0,
          "good environment refused: %s", lastbad);
    setenv("ISTHMUS_EAGER", "abc", 1);
    setenv("ISTHMUS_GW_BUFFERS", "4", 1);
    nbad = 0;
    CHECK(ism_knobs_check_env(ISM_KNOB_LIB, count_bad, NULL) == 1 && nbad == 1 &&
              !strncmp(lastbad, "ISTHMUS_EAGER=abc: ", 19),
          "library check: %d bad, last %s", nbad, lastbad);
    nbad = 0;
    CHECK(ism_knobs_check_env(ISM_KNOB_GW, count_bad, NULL) == 1 &&
              !strncmp(lastbad, "ISTHMUS_GW_BUFFERS=4: ", 22),
          "gateway check: last %s", lastbad);
    nbad = 0;
    CHECK(ism_knobs_check_env(ISM_KNOB_LIB | ISM_KNOB_GW, count_bad, NULL) == 2 && nbad == 2,
          "both: %d", nbad);
    /* the collective choices are coll/select.c's to check, not the generic parser's */
    setenv("ISTHMUS_COLL_CHOICE", "whatever", 1);
    CHECK(ism_knob_env(ISM_K_COLL_CHOICE, &v, err, sizeof err) == 0, "choice read generically");
}

int main(void)
{
    sizes();
    rates();
    durations_fractions_counts();
    knobs();
    environment();
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures != 0;
}
