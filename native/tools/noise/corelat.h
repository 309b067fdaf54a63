/* corelat.h: the round trip of one cache line between two cpus, sampled over time
 * (`isthmus-noise corelat`). On a virtual machine the host may move the guest's vCPUs
 * nearer or farther apart for seconds at a time; every shared-memory measurement inside
 * the node inherits the current distance, so a calibration records it. */
#ifndef ISM_NOISE_CORELAT_H
#define ISM_NOISE_CORELAT_H

#include <stddef.h>

#include "timercheck.h"

typedef struct {
    int cpu_a, cpu_b;   /* the timing thread runs on cpu_a, the echo thread on cpu_b */
    long trips;         /* round trips per sample */
    int samples;
    double interval_s;  /* pause between samples */
    double limit_s;     /* a sample that takes longer is an error (the echo never ran) */
} ism_corelat_opts;

/* A sample must last this many times the least span the clock resolves
 * (ism_timer_floor), so that the clock's step moves its mean by under 1 %. */
#define ISM_CORELAT_MIN_FLOORS 25

/* Measure o->samples samples into ns[] (mean round trip in ns) and t[] (start of each
 * sample in s from the first), after checking CLOCK_MONOTONIC on cpu_a (into *check, in
 * ns, unless check is NULL). The calling thread's affinity is left as it was. Returns 0,
 * or -1 with a message in err (a cpu that cannot be used, a thread that cannot be
 * created, a clock that fails its check, a sample too short for the clock to resolve, a
 * sample over its time limit). */
int ism_corelat_run(const ism_corelat_opts *o, double *ns, double *t, ism_timer_check *check, char *err,
                    size_t errlen);

#endif
