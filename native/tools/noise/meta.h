/* meta.h: the node metadata saved with every run: kernel and its command line,
 * isolcpus/nohz_full, governor and turbo state, CPU model, clock source and the probe
 * clock (with its timer check), load, and /proc/interrupts and /proc/softirqs before and after the run. */
#ifndef ISM_NOISE_META_H
#define ISM_NOISE_META_H

#include "json.h"
#include "tsc.h"

typedef struct {
    char *interrupts;
    char *softirqs;
    char *loadavg;
    double wall;  /* seconds since the epoch */
} ism_meta_snap;

/* Read a whole (pseudo-)file, at most cap bytes; NULL if unreadable. *truncated is set
 * when the file was longer than cap. */
char *ism_meta_read(const char *path, size_t cap, int *truncated);

void ism_meta_snap_take(ism_meta_snap *s);
void ism_meta_snap_free(ism_meta_snap *s);

/* A timer check as a JSON object under `key`: the deltas in ticks, and in ns at hz. */
void ism_meta_timer(ism_json *j, const char *key, const ism_timer_check *c, double hz);

/* Write the "meta" object: node facts, clock, the probed cpus, both snapshots. */
void ism_meta_write(ism_json *j, const ism_noise_clock *c, const int *cpus, int n, const ism_meta_snap *before,
                    const ism_meta_snap *after);

#endif
