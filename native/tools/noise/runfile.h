/* runfile.h: writing a probe run: one JSON file per node (parameters, metadata, and per
 * core the summary: histograms, outlier events, totals), raw samples as TSV files when
 * asked for, and a short human summary on stdout. */
#ifndef ISM_NOISE_RUNFILE_H
#define ISM_NOISE_RUNFILE_H

#include <stdio.h>

#include "meta.h"
#include "probe.h"

typedef struct {
    const char *out_dir;    /* NULL: JSON to stdout only */
    const char *tag;        /* file name part: "<probe>-<tag>.json" */
    const char *argv_line;  /* the command line, saved with the run */
    int mpi_rank, mpi_size, mpi_node;  /* with --mpi: who wrote the file; mpi_rank < 0 otherwise */
} ism_runfile_opts;

/* Write the run; returns 0, or -1 with a message on stderr naming the file. */
int ism_runfile_write(const ism_runfile_opts *o, const ism_probe_params *p, const ism_noise_clock *c,
                      const int *cpus, ism_probe_result *res, int n, const ism_meta_snap *before,
                      const ism_meta_snap *after);

/* One line per core: samples, noise fraction, events/s, largest detour, overhead. */
void ism_runfile_summary(FILE *f, const ism_probe_params *p, const ism_noise_clock *c, const ism_probe_result *res,
                         int n);

void ism_runfile_hist(ism_json *j, const char *key, const ism_hist *h);

#endif
