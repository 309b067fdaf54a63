/* cpus.h: core sets ("0-3,6,8-9") and running one pinned thread per core. */
#ifndef ISM_NOISE_CPUS_H
#define ISM_NOISE_CPUS_H

#include <stddef.h>

#define ISM_NOISE_MAX_CPUS 4096

/* Parse a Linux cpu list into out[] (ascending, no duplicates). Returns the number of
 * cpus, or -1 with a message in err (bad syntax, out of range, empty). */
int ism_cpus_parse(const char *spec, int *out, int cap, char *err, size_t errlen);

/* Cpus this process may run on (sched_getaffinity), ascending. */
int ism_cpus_allowed(int *out, int cap);

/* Pin the calling thread to one cpu; 0 or an errno value. */
int ism_cpus_pin_self(int cpu);

/* Run fn(arg_i) on one thread per cpu, each pinned before it starts and all released
 * together. args is an array of n elements of size argsize; fn reads its cpu from the
 * caller's data. Returns 0, or -1 if a thread could not be created (message in err). */
typedef void (*ism_cpus_fn)(void *arg, int pin_error);
int ism_cpus_run(const int *cpus, int n, ism_cpus_fn fn, void *args, size_t argsize, char *err, size_t errlen);

#endif
