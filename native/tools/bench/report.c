/*
 * report.c - the measurement driver and the output of isthmus-bench: warm-up,
 * repetitions, statistics (stats.c), and one record per point, either as OSU-style
 * columns for people or as a JSON line (--json) carrying the full configuration.
 */
#include "bench.h"
#include "stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *ism_bench_json_escape(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (len == 0)
        return buf;
    for (; s && *s && o + 7 < len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else if (ch == '\t') {
            buf[o++] = '\\';
            buf[o++] = 't';
        } else if (ch < 0x20) {
            o += (size_t)snprintf(buf + o, len - o, "\\u%04x", ch);
        } else {
            buf[o++] = (char)ch;
        }
    }
    buf[o] = '\0';
    return buf;
}

_Noreturn void ism_bench_usage_error(ism_bench_ctx *c, const char *fmt, ...)
{
    if (c->rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "isthmus-bench: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    MPI_Finalize();
    exit(2);
}

void *ism_bench_alloc(ism_bench_ctx *c, size_t bytes)
{
    size_t align = 4096, n = bytes ? (bytes + align - 1) / align * align : align;
    void *p = aligned_alloc(align, n);
    if (p == NULL) {
        fprintf(stderr, "isthmus-bench: rank %d: cannot allocate %zu bytes of buffers\n", c->rank, n);
        MPI_Abort(c->world, 3);
    }
    memset(p, 0, n);
    return p;
}

void ism_bench_point_init(ism_bench_ctx *c, ism_bench_point *p, const char *metric,
                          const char *unit, long long size)
{
    memset(p, 0, sizeof *p);
    p->benchmark = c->opt.benchmark;
    p->metric = metric;
    p->unit = unit;
    p->size = size;
    p->iters = ism_bench_iters(c, size);
    p->warmup = ism_bench_warmup(c, p->iters);
}

static void append(char *dst, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(dst);
    if (used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + used, cap - used, fmt, ap);
    va_end(ap);
}

void ism_bench_param_int(ism_bench_point *p, const char *key, long long v)
{
    append(p->params_json, sizeof p->params_json, ",\"%s\":%lld", key, v);
    append(p->params_text, sizeof p->params_text, "%-16lld", v);
    append(p->header_text, sizeof p->header_text, "%-16s", key);
}

void ism_bench_param_str(ism_bench_point *p, const char *key, const char *v)
{
    char esc[256];
    append(p->params_json, sizeof p->params_json, ",\"%s\":\"%s\"", key,
           ism_bench_json_escape(v, esc, sizeof esc));
    append(p->params_text, sizeof p->params_text, "%-22s", v);
    append(p->header_text, sizeof p->header_text, "%-22s", key);
}

void ism_bench_param_num(ism_bench_point *p, const char *key, double v, int in_columns)
{
    append(p->params_json, sizeof p->params_json, ",\"%s\":%.17g", key, v);
    if (!in_columns)
        return;
    append(p->params_text, sizeof p->params_text, "%-12g", v);
    append(p->header_text, sizeof p->header_text, "%-12s", key);
}

static const char *metric_title(const ism_bench_point *p)
{
    if (!strcmp(p->metric, "latency"))
        return "Latency(us)";
    if (!strcmp(p->metric, "bandwidth"))
        return "Bandwidth(MB/s)";
    if (!strcmp(p->metric, "rate"))
        return "Messages/s";
    return "Time(us)";
}

static void print_header(ism_bench_ctx *c, const ism_bench_point *p)
{
    char key[sizeof c->last_header + 64];
    snprintf(key, sizeof key, "%s|%s|%s", p->benchmark, p->metric, p->header_text);
    if (c->header_done && !strcmp(key, c->last_header))
        return;
    snprintf(c->last_header, sizeof c->last_header, "%.*s", (int)sizeof c->last_header - 1, key);
    c->header_done = 1;
    printf("# isthmus-bench %s: %s\n", ISM_BENCH_VERSION, p->benchmark);
    printf("# %s; %d ranks; sites", c->library, c->nranks);
    for (int r = 0; r < c->nranks; r++) {
        int first = 1;
        for (int q = 0; q < r; q++)
            first &= strcmp(c->site[q], c->site[r]) != 0;
        if (first) {
            int count = 0;
            for (int q = 0; q < c->nranks; q++)
                count += !strcmp(c->site[q], c->site[r]);
            printf(" %s:%d", c->site[r], count);
        }
    }
    printf("; link %s\n", c->opt.link && *c->opt.link ? c->opt.link : "(not given)");
    printf("# %s%-10s%18s%12s%12s%12s%6s\n", p->header_text, "Size", metric_title(p), "Min", "P99",
           "Max", "Reps");
}

static void emit(ism_bench_ctx *c, const ism_bench_point *p, const char *status,
                 const char *reason, const double *samples, int n, double seconds)
{
    if (!c->opt.json) {
        if (strcmp(status, "ok") != 0) {
            print_header(c, p);
            printf("  %s%-10lld %s: %s\n", p->params_text, p->size, status, reason);
        } else {
            double *scratch = malloc((size_t)n * sizeof *scratch);
            ism_bench_summary s;
            ism_bench_summarise(samples, (size_t)n, scratch, &s);
            free(scratch);
            print_header(c, p);
            int prec = !strcmp(p->metric, "rate") ? 0 : 2;
            printf("  %s%-10lld%18.*f%12.*f%12.*f%12.*f%6d\n", p->params_text, p->size, prec,
                   s.median, prec, s.min, prec, s.p99, prec, s.max, n);
            char note[256];
            if (ism_bench_timer_note(c, p, s.median, note, sizeof note))
                printf("    note: %s\n", note);
        }
        fflush(stdout);
        return;
    }
    char esc[512];
    printf("{\"isthmus_bench\":1,\"benchmark\":\"%s\",\"metric\":\"%s\",\"unit\":\"%s\","
           "\"size\":%lld%s,\"iters\":%ld,\"warmup\":%ld,\"status\":\"%s\"",
           p->benchmark, p->metric, p->unit, p->size, p->params_json, p->iters, p->warmup, status);
    if (reason)
        printf(",\"reason\":\"%s\"", ism_bench_json_escape(reason, esc, sizeof esc));
    if (n > 0) {
        double *scratch = malloc((size_t)n * sizeof *scratch);
        ism_bench_summary s;
        ism_bench_summarise(samples, (size_t)n, scratch, &s);
        free(scratch);
        printf(",\"reps\":%d,\"reps_requested\":%d,\"min\":%.9g,\"p25\":%.9g,\"median\":%.9g,"
               "\"p75\":%.9g,\"p99\":%.9g,\"max\":%.9g,\"mean\":%.9g,\"stddev\":%.9g,\"seconds\":%.6f,"
               "\"samples\":[", n, c->opt.reps, s.min, s.p25, s.median, s.p75, s.p99, s.max, s.mean,
               s.stddev, seconds);
        for (int i = 0; i < n; i++)
            printf("%s%.9g", i ? "," : "", samples[i]);
        printf("]");
        char note[256];
        if (ism_bench_timer_note(c, p, s.median, note, sizeof note))
            printf(",\"timer_note\":\"%s\"", ism_bench_json_escape(note, esc, sizeof esc));
    }
    printf(",\"config\":%s}\n", c->config_json);
    fflush(stdout);
}

void ism_bench_report_skipped(ism_bench_ctx *c, ism_bench_point *p, const char *reason)
{
    if (c->rank == 0)
        emit(c, p, "skipped", reason, NULL, 0, 0.0);
}

void ism_bench_run_point(ism_bench_ctx *c, ism_bench_point *p, MPI_Comm ctl,
                         ism_bench_sample_fn fn, void *arg)
{
    ism_bench_run_interleaved(c, p, 1, ctl, fn, &arg);
}

void ism_bench_run_interleaved(ism_bench_ctx *c, ism_bench_point *p, int n, MPI_Comm ctl,
                               ism_bench_sample_fn fn, void **args)
{
    int crank;
    MPI_Comm_rank(ctl, &crank);
    for (int i = 0; i < n; i++)
        if (p[i].warmup > 0)
            fn(c, args[i], p[i].warmup);
    double *samples = malloc((size_t)n * (size_t)c->opt.reps * sizeof *samples);
    double *seconds = calloc((size_t)n, sizeof *seconds);
    if (samples == NULL || seconds == NULL)
        MPI_Abort(c->world, 3);
    int done = 0;
    double start = MPI_Wtime();
    for (int rep = 0; rep < c->opt.reps; rep++) {
        for (int k = 0; k < n; k++) {
            int i = (rep + k) % n;
            double t0 = MPI_Wtime();
            samples[(size_t)i * (size_t)c->opt.reps + (size_t)rep] = fn(c, args[i], p[i].iters);
            seconds[i] += MPI_Wtime() - t0;
        }
        done++;
        if (c->opt.max_time > 0.0) {
            int go = !(done >= 3 && MPI_Wtime() - start > c->opt.max_time);
            MPI_Bcast(&go, 1, MPI_INT, 0, ctl);
            if (!go)
                break;
        }
    }
    if (crank == 0)
        for (int i = 0; i < n; i++)
            emit(c, &p[i], "ok", NULL, samples + (size_t)i * (size_t)c->opt.reps, done, seconds[i]);
    free(samples);
    free(seconds);
}
