/* rma_progress.c: the progress helper, a second thread of a rank that holds a window
 * spanning sites, so that a target computing without MPI calls does not stall the
 * passive-target operations of other sites (issue 28).
 *
 * Frames from other sites reach a rank through its ring of receives from the gateway,
 * which only the rank's own progress engine drains (gwlink.c); a target busy outside MPI
 * held a remote lock/put/flush/get/unlock until its next call. The helper wakes every
 * ISTHMUS_RMA_PROGRESS_US, takes the core lock if nobody holds it, and runs one progress
 * round: the frames are applied by the same code as before (rma.c), so accumulate
 * atomicity, lock exclusion, per-origin ordering and the unified memory model are those of
 * the rank itself. While the program is inside MPI it holds the lock and progresses on its
 * own, and the helper leaves it be (a trylock).
 *
 * The lock discipline is MPI_THREAD_MULTIPLE's (mt.c), turned on for as long as the
 * helper runs (ISM_MT_HELPER): every entry takes the core lock, and remote_active stays
 * raised so that no send or receive takes the unlocked fast path. The vendor is asked
 * for MPI_THREAD_SERIALIZED at least (init.c): its calls from the two threads never
 * overlap, since each holds the core lock. docs/design.md, "Who applies a remote operation".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "core.h"
#include "mt.h"
#include "win.h"

static pthread_t helper;
static int running;  /* the helper thread exists */
static int stopping; /* atomic: the helper leaves at its next wake-up */
static int users;    /* windows that span sites */
static long nap_ns;

/* Frames applied in one turn at most: a stream of puts must not keep the lock from the
 * program for long when it comes back into MPI. */
enum { HELPER_ROUNDS = 64 };

static void *helper_main(void *arg)
{
    (void)arg;
    struct timespec nap = {nap_ns / 1000000000L, nap_ns % 1000000000L};
    while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
        nanosleep(&nap, NULL);
        if (!ism_mt_trylock())
            continue;
        for (int i = 0; i < HELPER_ROUNDS && ism_progress(); i++) {
        }
        ism_mt_unlock();
    }
    return NULL;
}

void ism_rma_progress_join(ism_win *w)
{
    if (!w->nremote || !ism.multisite || ism.rma_progress_ns <= 0 || !ism.helper_ok)
        return;
    w->helped = 1;
    if (users++ || running)
        return;
    nap_ns = (long)ism.rma_progress_ns;
    __atomic_store_n(&stopping, 0, __ATOMIC_RELEASE);
    /* the lock discipline first: from here on every entry locks and no fast path runs */
    ism_remote_add(1);
    ism_mt_need(ISM_MT_HELPER, 1);
    if (pthread_create(&helper, NULL, helper_main, NULL)) {
        ism_mt_need(ISM_MT_HELPER, 0);
        ism_remote_add(-1);
        users = 0;
        w->helped = 0;
        fprintf(stderr, "isthmus: site %s rank %d: cannot start the one-sided progress helper "
                        "thread; a rank computing outside MPI delays other sites' operations on "
                        "its windows until its next MPI call\n", ism_site_name(ism.lay.site),
                ism.grank);
        return;
    }
    running = 1;
}

static void stop(void)
{
    __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
    /* the helper never waits for the lock, so it leaves within one nap */
    pthread_join(helper, NULL);
    running = 0;
    ism_mt_need(ISM_MT_HELPER, 0);
    ism_remote_add(-1);
}

void ism_rma_progress_leave(ism_win *w)
{
    if (!w->helped)
        return;
    w->helped = 0;
    if (--users == 0 && running)
        stop();
}

void ism_rma_progress_finalize(void)
{
    users = 0;
    if (running)
        stop();
}
