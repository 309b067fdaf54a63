/* mt.h: isthmus's thread safety under MPI_THREAD_MULTIPLE: one core lock (core/mt.c).
 *
 * When the vendor grants MPI_THREAD_MULTIPLE, every MPI entry point except the local
 * send/receive fast path runs holding one recursive process-wide lock (the generated
 * abi/mt_entry.c takes it), so the core's tables (requests, matching queues, the gateway
 * ring, early-data budgets, collective and attribute state, error handlers) are only ever
 * touched by one thread at a time. A thread gives the lock up whenever it waits: in every
 * idle round (ism_idle) and around every vendor call that may block (the backend table is
 * wrapped), so a thread blocked in MPI_Recv never keeps another from progressing.
 * docs/design.md ("Threads") has the measurements behind one lock.
 */
#ifndef ISM_MT_H
#define ISM_MT_H

/* 1 once MPI_THREAD_MULTIPLE is in force; read without the lock (set before any second
 * thread may call MPI, cleared after the last) */
extern int ism_mt_on;
/* Who needs the core lock taken at every MPI entry: ISM_MT_THREADS (MPI_THREAD_MULTIPLE)
 * and ISM_MT_HELPER (the progress helper of windows across sites, core/rma_progress.c,
 * which calls the core from a second thread while the program computes). Read without the
 * lock (atomically), once per entry; changed only by a thread inside MPI. */
extern int ism_mt_locking;
enum { ISM_MT_THREADS = 1, ISM_MT_HELPER = 2 };
static inline int ism_mt_locks(void) { return __atomic_load_n(&ism_mt_locking, __ATOMIC_RELAXED); }
static inline void ism_mt_need(int who, int on)
{
    if (on)
        __atomic_fetch_or(&ism_mt_locking, who, __ATOMIC_RELAXED);
    else
        __atomic_fetch_and(&ism_mt_locking, ~who, __ATOMIC_RELAXED);
}

void ism_mt_lock(void);
void ism_mt_unlock(void);
/* The lock if it is free now (1), else 0 without waiting: for the progress helper, which
 * leaves the progress to a thread already inside MPI. */
int ism_mt_trylock(void);
/* Give the lock up entirely while waiting (returns this thread's depth, 0 when it did not
 * hold it or runs inside a nonblocking collective's coroutine, which never gives it up),
 * and take it back at that depth. */
unsigned ism_mt_release(void);
void ism_mt_reacquire(unsigned depth);
/* Turn MPI_THREAD_MULTIPLE on: ism.be becomes the wrapped table (ism.vbe stays the
 * vendor's own, for the fast path, which holds no lock). */
void ism_mt_start(void);
void ism_mt_stop(void);

#endif
