/* cpus.c: cpu-list parsing, pinning, and the one-pinned-thread-per-core runner. */
#include "cpus.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ism_cpus_parse(const char *spec, int *out, int cap, char *err, size_t errlen)
{
    static unsigned char seen[ISM_NOISE_MAX_CPUS];
    memset(seen, 0, sizeof seen);
    const char *p = spec;
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty cpu list");
        return -1;
    }
    while (*p) {
        char *e;
        errno = 0;
        long a = strtol(p, &e, 10), b;
        if (e == p || errno || a < 0) {
            snprintf(err, errlen, "cpu list '%s': expected a cpu number at '%s'", spec, p);
            return -1;
        }
        b = a;
        p = e;
        if (*p == '-') {
            const char *q = p + 1;
            b = strtol(q, &e, 10);
            if (e == q || b < a) {
                snprintf(err, errlen, "cpu list '%s': bad range at '%s'", spec, q);
                return -1;
            }
            p = e;
        }
        if (b >= ISM_NOISE_MAX_CPUS) {
            snprintf(err, errlen, "cpu list '%s': cpu %ld is beyond %d", spec, b, ISM_NOISE_MAX_CPUS - 1);
            return -1;
        }
        for (long c = a; c <= b; c++)
            seen[c] = 1;
        if (*p == ',')
            p++;
        else if (*p) {
            snprintf(err, errlen, "cpu list '%s': unexpected '%c'", spec, *p);
            return -1;
        }
    }
    int n = 0;
    for (int c = 0; c < ISM_NOISE_MAX_CPUS; c++) {
        if (!seen[c])
            continue;
        if (n >= cap) {
            snprintf(err, errlen, "cpu list '%s': more than %d cpus", spec, cap);
            return -1;
        }
        out[n++] = c;
    }
    return n;
}

int ism_cpus_allowed(int *out, int cap)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
        if (CPU_ISSET(c, &set))
            out[n++] = c;
    return n;
}

int ism_cpus_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

typedef struct {
    int cpu;
    pthread_barrier_t *go;
    ism_cpus_fn fn;
    void *arg;
} runner;

static void *runner_main(void *v)
{
    runner *r = v;
    int err = ism_cpus_pin_self(r->cpu);
    pthread_barrier_wait(r->go);
    r->fn(r->arg, err);
    return NULL;
}

int ism_cpus_run(const int *cpus, int n, ism_cpus_fn fn, void *args, size_t argsize, char *err, size_t errlen)
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    runner *rs = calloc((size_t)n, sizeof *rs);
    pthread_barrier_t go;
    if (!th || !rs || pthread_barrier_init(&go, NULL, (unsigned)n) != 0) {
        free(th);
        free(rs);
        snprintf(err, errlen, "out of memory starting %d probe threads", n);
        return -1;
    }
    int started = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        rs[i] = (runner){cpus[i], &go, fn, (char *)args + (size_t)i * argsize};
        int e = pthread_create(&th[i], NULL, runner_main, &rs[i]);
        if (e) {
            snprintf(err, errlen, "cannot start the probe thread for cpu %d: %s", cpus[i], strerror(e));
            rc = -1;
            break;
        }
        started++;
    }
    if (rc) {
        /* The barrier needs n parties: a failed start can never release the others, so
         * this is fatal for the process (reported by the caller before exiting). */
        return rc;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    free(th);
    free(rs);
    return 0;
}
