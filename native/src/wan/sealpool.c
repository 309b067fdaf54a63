/* sealpool.c: the crypto worker threads of sealpool.h and their fork-join batches. */
#include "sealpool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct worker {
    ism_sealpool *p;
    int slot;
    pthread_t t;
} worker;

struct ism_sealpool {
    pthread_mutex_t m;
    pthread_cond_t work; /* a batch opened, or stop */
    pthread_cond_t idle; /* a worker left the batch */
    int nworkers, started;
    worker w[ISM_SEALPOOL_MAX];
    /* the batch, written under m while no worker is in it (active == 0, open == 0) */
    unsigned long gen;
    int open, stop, waiting; /* waiting: the caller sleeps on idle */
    atomic_int active;       /* workers inside the batch (joined under m) */
    ism_sealpool_fn fn;
    void *ctx;
    int n;
    atomic_int next, failed;
    atomic_ullong jobs, on_workers; /* --stats: the share the workers took */
};

/* Take jobs of the open batch until none is left. */
static void drain(ism_sealpool *p, ism_sealpool_fn fn, void *ctx, int n, int slot)
{
    for (;;) {
        int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= n)
            return;
        if (fn(ctx, i, slot) != 0)
            atomic_fetch_add_explicit(&p->failed, 1, memory_order_relaxed);
        if (slot)
            atomic_fetch_add_explicit(&p->on_workers, 1, memory_order_relaxed);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    ism_sealpool *p = w->p;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->m);
    for (;;) {
        while (!p->stop && !(p->open && p->gen != seen))
            pthread_cond_wait(&p->work, &p->m);
        if (p->stop)
            break;
        seen = p->gen;
        atomic_fetch_add_explicit(&p->active, 1, memory_order_relaxed);
        ism_sealpool_fn fn = p->fn;
        void *ctx = p->ctx;
        int n = p->n;
        pthread_mutex_unlock(&p->m);
        drain(p, fn, ctx, n, w->slot);
        /* release: the caller that sees active drop reads what the jobs wrote */
        atomic_fetch_sub_explicit(&p->active, 1, memory_order_release);
        pthread_mutex_lock(&p->m);
        if (p->waiting)
            pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->m);
    return NULL;
}

ism_sealpool *ism_sealpool_new(int workers)
{
    if (workers <= 0)
        return NULL;
    if (workers > ISM_SEALPOOL_MAX)
        workers = ISM_SEALPOOL_MAX;
    ism_sealpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->m, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->idle, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&p->next, 0);
    atomic_init(&p->failed, 0);
    atomic_init(&p->active, 0);
    p->nworkers = workers;
    for (int i = 0; i < workers; i++) {
        p->w[i].p = p;
        p->w[i].slot = i + 1;
        int e = pthread_create(&p->w[i].t, NULL, worker_main, &p->w[i]);
        if (e) {
            ism_sealpool_free(p);
            errno = e;
            return NULL;
        }
        p->started++;
    }
    return p;
}

void ism_sealpool_free(ism_sealpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->m);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->m);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->w[i].t, NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->m);
    free(p);
}

int ism_sealpool_workers(const ism_sealpool *p) { return p ? p->nworkers : 0; }

void ism_sealpool_counts(ism_sealpool *p, unsigned long long *jobs, unsigned long long *on_workers)
{
    *jobs = p ? atomic_load_explicit(&p->jobs, memory_order_relaxed) : 0;
    *on_workers = p ? atomic_load_explicit(&p->on_workers, memory_order_relaxed) : 0;
}

int ism_sealpool_run(ism_sealpool *p, int n, ism_sealpool_fn fn, void *ctx)
{
    if (n <= 0)
        return 0;
    if (!p || n == 1) { /* nothing to share: no handoff */
        int failed = 0;
        for (int i = 0; i < n; i++)
            failed += fn(ctx, i, 0) != 0;
        return failed;
    }
    pthread_mutex_lock(&p->m);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->failed, 0, memory_order_relaxed);
    p->gen++;
    p->open = 1;
    atomic_fetch_add_explicit(&p->jobs, (unsigned long long)n, memory_order_relaxed);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->m);
    drain(p, fn, ctx, n, 0);
    /* Every job is taken; the batch closes to latecomers, and the workers still inside
     * are finishing the jobs they took (each at most one job's CPU time): a short spin
     * first (a sleep and a wake-up cost more than a record's seal), then a sleep whose
     * timeout only re-checks. A job in progress writes the caller's buffers, so it is
     * awaited. */
    pthread_mutex_lock(&p->m);
    p->open = 0;
    pthread_mutex_unlock(&p->m);
    for (int spin = 0; spin < 50 && atomic_load_explicit(&p->active, memory_order_acquire);
         spin++)
        sched_yield();
    pthread_mutex_lock(&p->m);
    p->waiting = 1;
    while (atomic_load_explicit(&p->active, memory_order_acquire) > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->idle, &p->m, &ts);
    }
    p->waiting = 0;
    int failed = atomic_load_explicit(&p->failed, memory_order_relaxed);
    pthread_mutex_unlock(&p->m);
    return failed;
}

