/* runfile.c: the run's JSON, raw TSV files and stdout summary (see runfile.h). */
#include "runfile.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

void ism_runfile_hist(ism_json *j, const char *key, const ism_hist *h)
{
    ism_json_arr(j, key);
    for (unsigned b = 0; b < ISM_HIST_BUCKETS; b++) {
        if (!h->n[b])
            continue;
        ism_json_arr(j, NULL);
        ism_json_u64(j, NULL, ism_hist_lo(b));
        ism_json_u64(j, NULL, h->n[b]);
        ism_json_end_arr(j);
    }
    ism_json_end_arr(j);
}

static uint64_t largest_lost(const ism_probe_result *r)
{
    uint64_t m = 0;
    for (size_t i = 0; i < r->n_events; i++) {
        uint64_t per = r->events[i].lost / (r->events[i].slots ? r->events[i].slots : 1);
        uint64_t l = r->events[i].slots > 1 ? r->events[i].lost : per;
        if (l > m)
            m = l;
    }
    return m;
}

static double span_s(const ism_probe_result *r, double hz)
{
    return r->t_end > r->t_begin ? (double)(r->t_end - r->t_begin) / hz : 0.0;
}

static double noise_fraction(const ism_probe_result *r, double hz)
{
    double s = span_s(r, hz);
    return s > 0 ? (double)r->sum_lost / hz / s : 0.0;
}

static int write_raw(const char *path, const ism_probe_result *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# t_ticks\tvalue\n");
    for (size_t i = 0; i < r->n_raw; i++)
        fprintf(f, "%llu\t%llu\n", (unsigned long long)r->raw[i].t, (unsigned long long)r->raw[i].value);
    return fclose(f);
}

static void write_params(ism_json *j, const ism_probe_params *p)
{
    ism_json_obj(j, "params");
    ism_json_str(j, "probe", ism_probe_name(p->kind));
    ism_json_dbl(j, "duration_s", p->duration_s);
    if (p->kind == ISM_PROBE_FTQ) {
        ism_json_u64(j, "ftq_log2", p->ftq_log2);
        ism_json_u64(j, "interval_ticks", 1ull << p->ftq_log2);
    }
    if (p->kind == ISM_PROBE_FWQ)
        ism_json_dbl(j, "quantum_us", p->fwq_quantum_us);
    if (p->kind == ISM_PROBE_SELFISH) {
        ism_json_dbl(j, "k", p->selfish_k);
        ism_json_dbl(j, "threshold_ns", p->threshold_ns);
    }
    ism_json_dbl(j, "outlier_tol", p->outlier_tol);
    ism_json_u64(j, "max_events", p->max_events);
    ism_json_bool(j, "raw", p->raw);
    ism_json_u64(j, "max_raw", p->max_raw);
    ism_json_end_obj(j);
}

static void write_calib(ism_json *j, const ism_calib *c)
{
    ism_json_obj(j, "calib");
    ism_json_u64(j, "samples", c->n);
    ism_json_u64(j, "min", c->min);
    ism_json_u64(j, "p10", c->p10);
    ism_json_u64(j, "median", c->median);
    ism_json_u64(j, "p75", c->p75);
    ism_json_u64(j, "p90", c->p90);
    ism_json_u64(j, "p99", c->p99);
    ism_json_u64(j, "max", c->max);
    ism_json_u64(j, "typical", c->typical);
    ism_json_u64(j, "spread", c->spread);
    ism_json_u64(j, "threshold", c->threshold);
    ism_json_str(j, "rule", ism_calib_rule_name(c->rule));
    ism_json_end_obj(j);
}

static void write_core(ism_json *j, const ism_probe_params *p, const ism_probe_result *r, const char *raw_name)
{
    ism_json_obj(j, NULL);
    ism_json_i64(j, "cpu", r->cpu);
    ism_json_i64(j, "tid", r->tid);
    if (r->error)
        ism_json_str(j, "pin_error", strerror(r->error));
    else
        ism_json_null(j, "pin_error");
    if (r->refused[0])
        ism_json_str(j, "error", r->refused);
    else
        ism_json_null(j, "error");
    ism_meta_timer(j, "timer", &r->timer, p->hz);
    write_calib(j, &r->calib);
    ism_json_u64(j, "t_begin", r->t_begin);
    ism_json_u64(j, "t_end", r->t_end);
    ism_json_dbl(j, "span_s", span_s(r, p->hz));
    ism_json_u64(j, "samples", r->samples);
    ism_json_u64(j, "baseline", r->baseline);
    ism_json_u64(j, "threshold", r->threshold);
    ism_json_u64(j, "value_min", r->value_min == UINT64_MAX ? 0 : r->value_min);
    ism_json_u64(j, "value_max", r->value_max);
    ism_json_u64(j, "sum_value", r->sum_value);
    ism_json_u64(j, "sum_lost", r->sum_lost);
    ism_json_dbl(j, "noise_fraction", noise_fraction(r, p->hz));
    ism_json_u64(j, "n_outliers", r->n_outliers);
    ism_json_dbl(j, "events_per_s", span_s(r, p->hz) > 0 ? (double)r->n_outliers / span_s(r, p->hz) : 0.0);
    ism_json_u64(j, "largest_lost", largest_lost(r));
    if (p->kind == ISM_PROBE_FTQ) {
        ism_json_u64(j, "skipped_slots", r->skipped_slots);
        ism_json_obj(j, "overhead");
        ism_json_u64(j, "median", r->ovh_median);
        ism_json_u64(j, "p99", r->ovh_p99);
        ism_json_dbl(j, "mean", r->ovh_mean);
        ism_json_u64(j, "max", r->ovh_max);
        ism_runfile_hist(j, "hist", &r->overhead);
        ism_json_end_obj(j);
    }
    if (p->kind == ISM_PROBE_FWQ)
        ism_json_u64(j, "work_iters", r->work_iters);
    ism_runfile_hist(j, "hist", &r->hist);
    ism_json_u64(j, "dropped_events", r->dropped_events);
    ism_json_u64(j, "dropped_lost", r->dropped_lost);
    ism_json_arr(j, "events");
    for (size_t i = 0; i < r->n_events; i++) {
        const ism_probe_event *e = &r->events[i];
        ism_json_arr(j, NULL);
        ism_json_u64(j, NULL, e->t);
        ism_json_u64(j, NULL, e->value);
        ism_json_u64(j, NULL, e->lost);
        ism_json_u64(j, NULL, e->slots);
        ism_json_end_arr(j);
    }
    ism_json_end_arr(j);
    ism_json_str(j, "raw_file", raw_name);
    ism_json_u64(j, "dropped_raw", r->dropped_raw);
    ism_json_end_obj(j);
}

int ism_runfile_write(const ism_runfile_opts *o, const ism_probe_params *p, const ism_noise_clock *c,
                      const int *cpus, ism_probe_result *res, int n, const ism_meta_snap *before,
                      const ism_meta_snap *after)
{
    char path[4096];
    FILE *f = stdout;
    const char *probe = ism_probe_name(p->kind);
    if (o->out_dir) {
        if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "isthmus-noise: cannot create %s: %s\n", o->out_dir, strerror(errno));
            return -1;
        }
        snprintf(path, sizeof path, "%s/%s-%s.json", o->out_dir, probe, o->tag);
        f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "isthmus-noise: cannot write %s: %s\n", path, strerror(errno));
            return -1;
        }
    }
    ism_json j;
    ism_json_init(&j, f);
    ism_json_obj(&j, NULL);
    ism_json_str(&j, "format", "isthmus-noise/1");
    ism_json_str(&j, "probe", probe);
    ism_json_str(&j, "command", o->argv_line);
    write_params(&j, p);
    if (o->mpi_rank >= 0) {
        ism_json_obj(&j, "mpi");
        ism_json_i64(&j, "rank", o->mpi_rank);
        ism_json_i64(&j, "size", o->mpi_size);
        ism_json_i64(&j, "node", o->mpi_node);
        ism_json_end_obj(&j);
    }
    ism_meta_write(&j, c, cpus, n, before, after);
    ism_json_arr(&j, "cores");
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char raw_name[512] = "", raw_path[4096];
        if (p->raw && o->out_dir) {
            snprintf(raw_name, sizeof raw_name, "%s-%s-cpu%d.raw.tsv", probe, o->tag, res[i].cpu);
            snprintf(raw_path, sizeof raw_path, "%s/%s", o->out_dir, raw_name);
            if (write_raw(raw_path, &res[i]) != 0) {
                fprintf(stderr, "isthmus-noise: cannot write %s: %s\n", raw_path, strerror(errno));
                rc = -1;
            }
        }
        write_core(&j, p, &res[i], raw_name[0] ? raw_name : NULL);
    }
    ism_json_end_arr(&j);
    ism_json_end_obj(&j);
    if (f != stdout && fclose(f) != 0) {
        fprintf(stderr, "isthmus-noise: writing %s failed: %s\n", path, strerror(errno));
        return -1;
    }
    if (f != stdout)
        fprintf(stderr, "isthmus-noise: wrote %s\n", path);
    return rc;
}

void ism_runfile_summary(FILE *f, const ism_probe_params *p, const ism_noise_clock *c, const ism_probe_result *res,
                         int n)
{
    double us = 1e6 / p->hz;
    fprintf(f, "# %s: clock %s at %.6f GHz (%s), %.0f ticks per read\n", ism_probe_name(p->kind),
            c->kind == ISM_NOISE_CLOCK_TSC ? "tsc" : "monotonic_raw", p->hz * 1e-9, c->why, c->read_cycles);
    fprintf(f, "# timer check: %s\n", c->check.verdict);
    fprintf(f, "# %4s %10s %9s %9s %10s %12s %12s %-7s %s\n", "cpu", "samples", "noise%", "events/s", "outliers",
            "largest_us", "threshold", "rule", p->kind == ISM_PROBE_FTQ ? "overhead_ticks(median/p99)" : "");
    for (int i = 0; i < n; i++) {
        const ism_probe_result *r = &res[i];
        if (r->error) {
            fprintf(f, "  %4d could not pin the thread or set its priority: %s\n", r->cpu, strerror(r->error));
            continue;
        }
        if (r->refused[0]) {
            fprintf(f, "  %4d not measured: %s\n", r->cpu, r->refused);
            continue;
        }
        double s = span_s(r, p->hz);
        fprintf(f, "  %4d %10llu %9.4f %9.1f %10llu %12.1f %12llu %-7s", r->cpu, (unsigned long long)r->samples,
                100.0 * noise_fraction(r, p->hz), s > 0 ? (double)r->n_outliers / s : 0.0,
                (unsigned long long)r->n_outliers, (double)largest_lost(r) * us, (unsigned long long)r->threshold,
                ism_calib_rule_name(r->calib.rule));
        if (p->kind == ISM_PROBE_FTQ)
            fprintf(f, " %u/%u", r->ovh_median, r->ovh_p99);
        if (r->dropped_events)
            fprintf(f, "  (%zu events beyond --max-events counted, not kept)", r->dropped_events);
        fputc('\n', f);
    }
}
