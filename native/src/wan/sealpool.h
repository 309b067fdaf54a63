/* sealpool.h: a few crypto worker threads that seal or open a batch of records together
 * with the thread that asks (issue 25: the gateway's event loop spent a third of its CPU
 * per byte in the cipher, so one core per gateway capped the sealed link's rate).
 *
 * Fork and join: the caller hands over n jobs, works on them itself, and returns when all
 * n are done; the workers take jobs from the same counter. So every buffer a job reads
 * or writes belongs to the caller for the whole call (no copies, nothing outlives it),
 * and the caller assigns what must be in order (sequence numbers, the place of each
 * record) before it asks. Jobs are claimed in increasing index by every thread, so the
 * jobs one thread runs in a batch have increasing indices: each thread (slot 0 for the
 * caller, 1..workers) can keep its own cipher state for increasing sequence numbers.
 *
 * The only wait is for jobs a worker has already started (the caller runs every job no
 * worker took), so it lasts at most one job's CPU time plus scheduling; with no workers,
 * or while they sleep, the caller runs all jobs itself. One caller at a time.
 */
#ifndef ISM_WAN_SEALPOOL_H
#define ISM_WAN_SEALPOOL_H

#define ISM_SEALPOOL_MAX 16 /* workers */

typedef struct ism_sealpool ism_sealpool;

/* A job: index i of the batch on thread slot (0: the caller); 0, or -1 (failure). */
typedef int (*ism_sealpool_fn)(void *ctx, int i, int slot);

/* workers threads (0: NULL, the caller does everything); NULL with errno on failure. */
ism_sealpool *ism_sealpool_new(int workers);
/* Stops and joins the workers. */
void ism_sealpool_free(ism_sealpool *p);
int ism_sealpool_workers(const ism_sealpool *p); /* 0 for NULL */
/* Jobs run so far in batches given to the pool, and how many of them the workers ran. */
void ism_sealpool_counts(ism_sealpool *p, unsigned long long *jobs,
                         unsigned long long *on_workers);

/* Runs fn(ctx, i, slot) for i in [0, n) on the caller and the workers; returns when all
 * are done: the number of jobs that failed (their indices are the caller's to record). */
int ism_sealpool_run(ism_sealpool *p, int n, ism_sealpool_fn fn, void *ctx);

#endif
