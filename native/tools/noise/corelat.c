/* corelat.c: the cache-line round trip between two pinned threads (`isthmus-noise
 * corelat`). The timer thread writes a counter into one line, the echo thread copies it
 * into another; each sample is the mean over o->trips exchanges, timed with
 * CLOCK_MONOTONIC after a check that the clock resolves it. Both run on their own
 * threads so the caller's affinity is untouched. */
#include "corelat.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"

typedef struct {
    _Alignas(64) atomic_long ping;
    _Alignas(64) atomic_long pong;
    _Alignas(64) atomic_int stop;
    atomic_int echo_pin_error;
    atomic_int echo_ready;
    const ism_corelat_opts *o;
    ism_timer_check timer;
    uint64_t deltas[4096];
    double *ns, *t;
    char *err;
    size_t errlen;
    int rc;
} shared;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double now(void) { return (double)mono_ns() * 1e-9; }

/* The clock on this cpu: 0, or -1 with the error set. */
static int check_clock(shared *s)
{
    const size_t n = sizeof s->deltas / sizeof s->deltas[0];
    ism_timer_collect(mono_ns, s->deltas, n);
    ism_timer_check_deltas(&s->timer, s->deltas, n, 1e9);
    if (s->timer.usable)
        return 0;
    snprintf(s->err, s->errlen, "CLOCK_MONOTONIC on cpu %d is %s", s->o->cpu_a, s->timer.verdict);
    s->rc = -1;
    return -1;
}

static void *echo(void *arg)
{
    shared *s = arg;
    int e = ism_cpus_pin_self(s->o->cpu_b);
    atomic_store(&s->echo_pin_error, e);
    atomic_store(&s->echo_ready, 1);
    if (e)
        return NULL;
    long seen = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        long v = atomic_load_explicit(&s->ping, memory_order_acquire);
        if (v != seen) {
            seen = v;
            atomic_store_explicit(&s->pong, v, memory_order_release);
        }
    }
    return NULL;
}

static void *timer(void *arg)
{
    shared *s = arg;
    const ism_corelat_opts *o = s->o;
    int e = ism_cpus_pin_self(o->cpu_a);
    if (e) {
        snprintf(s->err, s->errlen, "cannot pin to cpu %d: %s", o->cpu_a, strerror(e));
        s->rc = -1;
        return NULL;
    }
    while (!atomic_load(&s->echo_ready))
        sched_yield();
    if ((e = atomic_load(&s->echo_pin_error))) {
        snprintf(s->err, s->errlen, "cannot pin to cpu %d: %s", o->cpu_b, strerror(e));
        s->rc = -1;
        return NULL;
    }
    if (check_clock(s) != 0)
        return NULL;
    const double least = (double)(ISM_CORELAT_MIN_FLOORS * ism_timer_floor(&s->timer)) * 1e-9;
    long v = 0;
    double start = now();
    for (int k = 0; k < o->samples; k++) {
        double t0 = now();
        for (long i = 0; i < o->trips; i++) {
            atomic_store_explicit(&s->ping, ++v, memory_order_release);
            unsigned spins = 0;
            while (atomic_load_explicit(&s->pong, memory_order_acquire) != v)
                if (++spins == 0x100000u) {   /* ~ms of spinning: is the echo running? */
                    spins = 0;
                    if (now() - t0 > o->limit_s) {
                        snprintf(s->err, s->errlen,
                                 "sample %d took over %.3g s: the thread on cpu %d did not answer",
                                 k, o->limit_s, o->cpu_b);
                        s->rc = -1;
                        return NULL;
                    }
                }
        }
        double t1 = now();
        if (t1 - t0 < least) {
            snprintf(s->err, s->errlen,
                     "sample %d of %ld round trips lasted %.0f ns, under %d x the %.0f ns the clock resolves on cpu "
                     "%d: raise --trips",
                     k, o->trips, (t1 - t0) * 1e9, ISM_CORELAT_MIN_FLOORS, (double)ism_timer_floor(&s->timer), o->cpu_a);
            s->rc = -1;
            return NULL;
        }
        s->t[k] = t0 - start;
        s->ns[k] = (t1 - t0) * 1e9 / (double)o->trips;
        if (k + 1 < o->samples && o->interval_s > 0) {
            struct timespec ts = {(time_t)o->interval_s,
                                  (long)((o->interval_s - (double)(time_t)o->interval_s) * 1e9)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
    }
    return NULL;
}

int ism_corelat_run(const ism_corelat_opts *o, double *ns, double *t, ism_timer_check *check, char *err,
                    size_t errlen)
{
    if (o->cpu_a == o->cpu_b) {
        snprintf(err, errlen, "the two cpus must differ (both %d)", o->cpu_a);
        return -1;
    }
    if (o->trips < 1 || o->samples < 1 || !(o->limit_s > 0)) {
        snprintf(err, errlen, "need at least one sample of at least one round trip");
        return -1;
    }
    /* each counter on its own cache line: sizeof (shared) is a multiple of 64 */
    shared *s = aligned_alloc(64, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->o = o;
    s->ns = ns;
    s->t = t;
    s->err = err;
    s->errlen = errlen;
    pthread_t te, tt;
    int e = pthread_create(&te, NULL, echo, s);
    if (e) {
        snprintf(err, errlen, "cannot create a thread: %s", strerror(e));
        free(s);
        return -1;
    }
    e = pthread_create(&tt, NULL, timer, s);
    if (e) {
        atomic_store(&s->stop, 1);
        pthread_join(te, NULL);
        snprintf(err, errlen, "cannot create a thread: %s", strerror(e));
        free(s);
        return -1;
    }
    pthread_join(tt, NULL);
    atomic_store(&s->stop, 1);
    pthread_join(te, NULL);
    int rc = s->rc;
    if (check)
        *check = s->timer;
    free(s);
    return rc;
}
