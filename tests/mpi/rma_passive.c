/*
 * rma_passive: one-sided communication in passive target mode.
 *   counter:  every rank increments a counter on rank 0 M times with get, flush, put
 *             under MPI_LOCK_EXCLUSIVE: the total is exact only if the locks exclude
 *             each other (origins at the target's site and at other sites alike);
 *   fetch:    MPI_Fetch_and_op(+1) on the last rank under MPI_Win_lock_all: the values
 *             fetched by all ranks are exactly 0 .. size*M-1;
 *   acc:      overlapping MPI_Accumulate(MPI_SUM) from every rank into every rank
 *             under MPI_LOCK_SHARED: exact sums;
 *   cas:      a spin lock built from MPI_Compare_and_swap guards a get/put increment;
 *   gacc:     MPI_Get_accumulate with MPI_NO_OP (atomic read) and MPI_REPLACE (swap),
 *             MPI_Rput/MPI_Rget/MPI_Raccumulate completed with MPI_Wait;
 *   busy:     the last rank computes for about a second without calling MPI while the
 *             others lock it, put, get and unlock: every access completes correctly;
 *   `rma_passive busyfar` runs only busy, with 3 s of computation, and asserts that each
 *             origin's lock/put/flush/get/unlock took less than 0.5 s: run it with every
 *             rank at its own site (1,1 or 1,1,1), where the target's site is another than
 *             every origin's, and isthmus's progress helper must serve the target
 *             (core/rma_progress.c; without it each origin waits the 3 s out);
 *   errors:   an unlock without a lock and a put outside the window are reported
 *             (MPI_ERRORS_RETURN) and leave the window usable.
 * Works for any size >= 1.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "check.h"
#include <stdint.h>
#include <string.h>
#include <time.h>

enum { M = 10, K = 8, SLOTS = 64 };
/* window layout, in int64: 0 counter, 1 fetch counter, 2..2+K accumulate, 2+K cas lock,
 * 3+K cas-guarded counter, 4+K gacc cell, 8+K.. busy slots (one per rank) */
enum { W_CNT = 0, W_FETCH = 1, W_ACC = 2, W_CAS = 2 + K, W_CASCNT = 3 + K, W_GACC = 4 + K,
       W_BUSY = 8 + K };

static int rank, size;
static int64_t *mem;
static MPI_Win win;

static void counter(void)
{
    for (int i = 0; i < M; i++) {
        int64_t v = -1;
        CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win), "lock excl");
        CHECK_RC(MPI_Get(&v, 1, MPI_INT64_T, 0, W_CNT, 1, MPI_INT64_T, win), "get");
        CHECK_RC(MPI_Win_flush(0, win), "flush");
        v++;
        CHECK_RC(MPI_Put(&v, 1, MPI_INT64_T, 0, W_CNT, 1, MPI_INT64_T, win), "put");
        CHECK_RC(MPI_Win_unlock(0, win), "unlock");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Win_sync(win);
        CHECK(mem[W_CNT] == (int64_t)size * M, "counter %lld, want %d", (long long)mem[W_CNT],
              size * M);
        MPI_Win_unlock(0, win);
    }
}

static void fetch(void)
{
    int64_t got[M], one = 1;
    int t = size - 1;
    CHECK_RC(MPI_Win_lock_all(0, win), "lock_all");
    for (int i = 0; i < M; i++) {
        CHECK_RC(MPI_Fetch_and_op(&one, &got[i], MPI_INT64_T, t, W_FETCH, MPI_SUM, win), "fop");
        CHECK_RC(MPI_Win_flush(t, win), "flush fop");
    }
    CHECK_RC(MPI_Win_unlock_all(win), "unlock_all");
    for (int i = 1; i < M; i++)
        CHECK(got[i] > got[i - 1], "fetched %lld after %lld", (long long)got[i],
              (long long)got[i - 1]);
    int64_t *all = malloc(sizeof(int64_t) * (size_t)(size * M));
    MPI_Gather(got, M, MPI_INT64_T, all, M, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char *seen = calloc((size_t)(size * M), 1);
        for (int i = 0; i < size * M; i++) {
            CHECK(all[i] >= 0 && all[i] < size * M, "fetched %lld out of range",
                  (long long)all[i]);
            if (all[i] >= 0 && all[i] < size * M) {
                CHECK(!seen[all[i]], "value %lld fetched twice", (long long)all[i]);
                seen[all[i]] = 1;
            }
        }
        free(seen);
    }
    free(all);
}

static void acc(void)
{
    int64_t add[K];
    for (int i = 0; i < K; i++)
        add[i] = (rank + 1) * (i + 1);
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < size; k++) {
            int t = (rank + k) % size;
            CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win), "lock shared");
            CHECK_RC(MPI_Accumulate(add, K, MPI_INT64_T, t, W_ACC, K, MPI_INT64_T, MPI_SUM, win),
                     "acc");
            CHECK_RC(MPI_Win_unlock(t, win), "unlock shared");
        }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Win_sync(win);
    int64_t s = (int64_t)size * (size + 1) / 2 * 3;
    for (int i = 0; i < K; i++)
        CHECK(mem[W_ACC + i] == s * (i + 1), "acc [%d] = %lld, want %lld", i,
              (long long)mem[W_ACC + i], (long long)(s * (i + 1)));
    MPI_Win_unlock(rank, win);
}

static void cas(void)
{
    int t = size / 2;
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < M / 2; i++) {
        int64_t me = rank + 1, zero = 0, old = -1, v = -1;
        do {
            CHECK_RC(MPI_Compare_and_swap(&me, &zero, &old, MPI_INT64_T, t, W_CAS, win), "cas");
            CHECK_RC(MPI_Win_flush(t, win), "flush cas");
        } while (old != 0);
        MPI_Get(&v, 1, MPI_INT64_T, t, W_CASCNT, 1, MPI_INT64_T, win);
        MPI_Win_flush(t, win);
        v++;
        MPI_Put(&v, 1, MPI_INT64_T, t, W_CASCNT, 1, MPI_INT64_T, win);
        MPI_Win_flush(t, win);
        CHECK_RC(MPI_Compare_and_swap(&zero, &me, &old, MPI_INT64_T, t, W_CAS, win), "unlock cas");
        MPI_Win_flush(t, win);
        CHECK(old == me, "cas lock held by %lld while I (%lld) held it", (long long)old,
              (long long)me);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == t) {
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        MPI_Win_sync(win);
        CHECK(mem[W_CASCNT] == (int64_t)size * (M / 2), "cas-guarded counter %lld, want %d",
              (long long)mem[W_CASCNT], size * (M / 2));
        MPI_Win_unlock(t, win);
    }
}

static void gacc(void)
{
    int t = peer_far_to(rank, size);
    int64_t cell = -5, mine = 1000 + rank, old = -1;
    MPI_Win_lock_all(0, win);
    /* each rank swaps its value into the far peer's cell; the values seen and left form a
     * chain: exactly one rank per cell reads the initial 0 */
    CHECK_RC(MPI_Get_accumulate(&mine, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, t, W_GACC, 1,
                                MPI_INT64_T, MPI_REPLACE, win), "gacc replace");
    MPI_Win_flush(t, win);
    CHECK(old == 0 || (old >= 1000 && old < 1000 + size), "swapped out %lld", (long long)old);
    MPI_Request rq[3];
    int64_t r1 = -1, put = 77, one = 1;
    CHECK_RC(MPI_Rput(&put, 1, MPI_INT64_T, t, W_BUSY + rank, 1, MPI_INT64_T, win, &rq[0]),
             "rput");
    CHECK_RC(MPI_Raccumulate(&one, 1, MPI_INT64_T, t, W_BUSY + rank, 1, MPI_INT64_T, MPI_SUM,
                             win, &rq[1]), "racc");
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_flush(t, win);
    CHECK_RC(MPI_Rget(&r1, 1, MPI_INT64_T, t, W_BUSY + rank, 1, MPI_INT64_T, win, &rq[2]), "rget");
    MPI_Wait(&rq[2], MPI_STATUS_IGNORE);
    CHECK(r1 == 78, "Rput + Raccumulate + Rget gave %lld, want 78", (long long)r1);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &cell, 1, MPI_INT64_T, rank, W_GACC, 1,
                                MPI_INT64_T, MPI_NO_OP, win), "gacc no_op");
    MPI_Win_flush(rank, win);
    CHECK(cell >= 1000 && cell < 1000 + size, "cell after the swaps %lld", (long long)cell);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    mem[W_BUSY + 0] = 0; /* reset my slots for busy() */
    for (int i = 0; i < size && W_BUSY + i < SLOTS; i++)
        mem[W_BUSY + i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* compute seconds: how long the target computes; bound > 0: each origin's sequence must
 * take less (every origin at another site than the target's) */
static void busy(double compute, double bound)
{
    int t = size - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == t) {
        /* compute, no MPI call */
        volatile double x = 0;
        double t0 = now(), p0 = cpu(CLOCK_PROCESS_CPUTIME_ID), m0 = cpu(CLOCK_THREAD_CPUTIME_ID);
        while (now() - t0 < compute)
            for (int i = 0; i < 10000; i++)
                x += i * 1e-9;
        /* what the process's other threads (isthmus's helper, the vendor's) cost meanwhile:
         * a measurement, not a check */
        double others = cpu(CLOCK_PROCESS_CPUTIME_ID) - p0 - (cpu(CLOCK_THREAD_CPUTIME_ID) - m0);
        fprintf(stderr, "rma_passive: rank %d: other threads used %.1f ms of CPU during %.1f s "
                        "of computation\n", rank, others * 1e3, now() - t0);
    } else {
        int64_t v = 500 + rank, back = -1;
        double t0 = now();
        CHECK_RC(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win), "lock busy");
        CHECK_RC(MPI_Put(&v, 1, MPI_INT64_T, t, W_BUSY + rank, 1, MPI_INT64_T, win), "put busy");
        CHECK_RC(MPI_Win_flush(t, win), "flush busy");
        CHECK_RC(MPI_Get(&back, 1, MPI_INT64_T, t, W_BUSY + rank, 1, MPI_INT64_T, win), "get busy");
        CHECK_RC(MPI_Win_unlock(t, win), "unlock busy");
        CHECK(back == v, "read back %lld from the busy target, want %lld", (long long)back,
              (long long)v);
        double took = now() - t0;
        fprintf(stderr, "rma_passive: rank %d: lock/put/flush/get/unlock of busy rank %d took "
                        "%.3f s\n", rank, t, took);
        CHECK(bound <= 0 || took < bound, "lock/put/flush/get/unlock of rank %d, computing for "
              "%.1f s, took %.3f s (bound %.1f s): the target's computation stalled it", t,
              compute, took, bound);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == t) {
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        MPI_Win_sync(win);
        for (int r = 0; r < size - 1 && W_BUSY + r < SLOTS; r++)
            CHECK(mem[W_BUSY + r] == 500 + r, "busy slot %d = %lld", r, (long long)mem[W_BUSY + r]);
        MPI_Win_unlock(t, win);
    }
}

static void errors(void)
{
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int64_t v = 1;
    int t = peer_far_to(rank, size), cls = 0;
    int rc = MPI_Win_unlock(t, win);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "unlock without lock: class %d", cls);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    rc = MPI_Put(&v, 1, MPI_INT64_T, t, SLOTS + 5, 1, MPI_INT64_T, win);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "put outside: class %d", cls);
    rc = MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "second lock of one target: class %d", cls);
    CHECK_RC(MPI_Win_unlock(t, win), "unlock after errors");
    MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_RC(MPI_Win_allocate(SLOTS * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &mem, &win), "Win_allocate");
    memset(mem, 0, SLOTS * sizeof(int64_t));
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && !strcmp(argv[1], "busyfar")) {
        busy(3.0, 0.5);
        MPI_Win_free(&win);
        return check_finish("rma_passive busyfar") + MPI_Finalize();
    }
    counter();
    fetch();
    acc();
    cas();
    gacc();
    busy(1.0, 0);
    if (size > 1)
        errors();
    MPI_Win_free(&win);
    return check_finish("rma_passive") + MPI_Finalize();
}
