/* meta.c: collecting the node metadata (see meta.h). Everything is read from /proc and
 * /sys; what is missing is written as null or with the reason, never guessed. */
#include "meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define META_CAP (4u << 20)

char *ism_meta_read(const char *path, size_t cap, int *truncated)
{
    FILE *f = fopen(path, "r");
    if (truncated)
        *truncated = 0;
    if (!f)
        return NULL;
    size_t size = 4096, len = 0;
    char *buf = malloc(size);
    while (buf) {
        if (len + 1 >= size) {
            if (size >= cap) {
                if (truncated)
                    *truncated = 1;
                break;
            }
            char *nb = realloc(buf, size * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            size *= 2;
        }
        size_t got = fread(buf + len, 1, size - len - 1, f);
        if (got == 0)
            break;
        len += got;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static char *read_line(const char *path)
{
    char *s = ism_meta_read(path, 1 << 16, NULL);
    if (s) {
        size_t n = strlen(s);
        while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
            s[--n] = '\0';
    }
    return s;
}

void ism_meta_snap_take(ism_meta_snap *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->wall = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    s->interrupts = ism_meta_read("/proc/interrupts", META_CAP, NULL);
    s->softirqs = ism_meta_read("/proc/softirqs", META_CAP, NULL);
    s->loadavg = read_line("/proc/loadavg");
}

void ism_meta_snap_free(ism_meta_snap *s)
{
    free(s->interrupts);
    free(s->softirqs);
    free(s->loadavg);
    memset(s, 0, sizeof *s);
}

static void put_file_line(ism_json *j, const char *key, const char *path)
{
    char *s = read_line(path);
    ism_json_str(j, key, s);
    free(s);
}

/* The value of a kernel parameter on the command line ("isolcpus=2-3"), or NULL. */
static void put_cmdline_param(ism_json *j, const char *cmdline, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = cmdline; p && *p;) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            ism_json_strn(j, name, p + n + 1, len - n - 1);
            return;
        }
        p = end;
    }
    ism_json_null(j, name);
}

static void put_cpu_model(ism_json *j)
{
    char *info = ism_meta_read("/proc/cpuinfo", META_CAP, NULL);
    const char *m = info ? strstr(info, "model name") : NULL;
    if (m && (m = strchr(m, ':'))) {
        m++;
        while (*m == ' ')
            m++;
        size_t len = strcspn(m, "\n");
        ism_json_strn(j, "cpu_model", m, len);
    } else {
        ism_json_null(j, "cpu_model");
    }
    free(info);
}

static void put_snap(ism_json *j, const char *key, const ism_meta_snap *s)
{
    ism_json_obj(j, key);
    ism_json_dbl(j, "wall", s->wall);
    ism_json_str(j, "loadavg", s->loadavg);
    ism_json_str(j, "interrupts", s->interrupts);
    ism_json_str(j, "softirqs", s->softirqs);
    ism_json_end_obj(j);
}

void ism_meta_timer(ism_json *j, const char *key, const ism_timer_check *c, double hz)
{
    ism_json_obj(j, key);
    ism_json_bool(j, "usable", c->usable);
    ism_json_str(j, "verdict", c->verdict);
    ism_json_u64(j, "pairs", c->n);
    ism_json_u64(j, "min", c->min);
    ism_json_u64(j, "p05", c->p05);
    ism_json_u64(j, "median", c->median);
    ism_json_u64(j, "p95", c->p95);
    ism_json_u64(j, "p99", c->p99);
    ism_json_u64(j, "max", c->max);
    ism_json_u64(j, "step", c->step);
    ism_json_u64(j, "increment", c->gcd);
    ism_json_u64(j, "distinct", c->distinct);
    ism_json_u64(j, "repeats", c->repeats);
    ism_json_u64(j, "backward", c->backward);
    ism_json_dbl(j, "fast_share", c->fast_share);
    ism_json_u64(j, "floor", ism_timer_floor(c));
    ism_json_dbl(j, "median_ns", hz > 0 ? (double)c->median * 1e9 / hz : 0.0);
    ism_json_dbl(j, "step_ns", hz > 0 ? (double)c->step * 1e9 / hz : 0.0);
    ism_json_dbl(j, "floor_ns", hz > 0 ? (double)ism_timer_floor(c) * 1e9 / hz : 0.0);
    ism_json_end_obj(j);
}

void ism_meta_write(ism_json *j, const ism_noise_clock *c, const int *cpus, int n, const ism_meta_snap *before,
                    const ism_meta_snap *after)
{
    struct utsname u;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    ism_json_obj(j, "meta");
    ism_json_str(j, "hostname", host);
    if (uname(&u) == 0) {
        ism_json_str(j, "kernel", u.release);
        ism_json_str(j, "kernel_version", u.version);
        ism_json_str(j, "machine", u.machine);
    }
    char *cmdline = read_line("/proc/cmdline");
    ism_json_str(j, "cmdline", cmdline);
    ism_json_obj(j, "cmdline_params");
    put_cmdline_param(j, cmdline, "isolcpus");
    put_cmdline_param(j, cmdline, "nohz_full");
    put_cmdline_param(j, cmdline, "rcu_nocbs");
    put_cmdline_param(j, cmdline, "irqaffinity");
    ism_json_end_obj(j);
    free(cmdline);
    put_file_line(j, "isolated", "/sys/devices/system/cpu/isolated");
    put_file_line(j, "nohz_full", "/sys/devices/system/cpu/nohz_full");
    put_file_line(j, "clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource");
    put_cpu_model(j);
    ism_json_i64(j, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
    /* turbo: intel_pstate says "no_turbo", acpi-cpufreq and amd-pstate say "boost" */
    char *nt = read_line("/sys/devices/system/cpu/intel_pstate/no_turbo");
    char *boost = read_line("/sys/devices/system/cpu/cpufreq/boost");
    if (nt)
        ism_json_str(j, "turbo", strcmp(nt, "0") == 0 ? "on (intel_pstate no_turbo=0)" : "off (intel_pstate no_turbo=1)");
    else if (boost)
        ism_json_str(j, "turbo", strcmp(boost, "1") == 0 ? "on (cpufreq boost=1)" : "off (cpufreq boost=0)");
    else
        ism_json_str(j, "turbo", "unknown (no intel_pstate/no_turbo, no cpufreq/boost)");
    free(nt);
    free(boost);
    ism_json_obj(j, "clock");
    ism_json_str(j, "kind", c->kind == ISM_NOISE_CLOCK_TSC ? "tsc" : "monotonic_raw");
    ism_json_dbl(j, "hz", c->hz);
    ism_json_dbl(j, "read_ticks", c->read_cycles);
    ism_json_str(j, "why", c->why);
    ism_json_str(j, "hz_source", c->hz_source);
    ism_json_dbl(j, "monoraw_res_ns", c->res_ns);
    ism_meta_timer(j, "check", &c->check, c->hz);
    ism_json_u64(j, "ref_tick", c->ref_tick);
    ism_json_u64(j, "ref_monoraw_ns", c->ref_ns);
    ism_json_end_obj(j);
    ism_json_arr(j, "cpus");
    for (int i = 0; i < n; i++) {
        char path[128];
        ism_json_obj(j, NULL);
        ism_json_i64(j, "cpu", cpus[i]);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpus[i]);
        char *g = read_line(path);
        ism_json_str(j, "governor", g ? g : "unavailable (no cpufreq for this cpu)");
        free(g);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpus[i]);
        put_file_line(j, "cur_freq_khz", path);
        ism_json_end_obj(j);
    }
    ism_json_end_arr(j);
    put_snap(j, "before", before);
    if (after)
        put_snap(j, "after", after);
    ism_json_end_obj(j);
}
