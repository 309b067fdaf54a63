/* mt.c: the core lock of MPI_THREAD_MULTIPLE and the vendor calls that give it up.
 *
 * One pthread mutex, made recursive by a per-thread depth: a program's callback run under
 * the lock (error handler, attribute copy or delete function, user op, generalized
 * request query) may call MPI again. Waiting threads give the lock up completely
 * (ism_mt_release) and take it back at the same depth. The vendor calls that can block
 * (the blocking point-to-point calls, waits, probes, the blocking collectives and
 * communicator constructors) are wrapped so they run without the lock: the vendor granted
 * MPI_THREAD_MULTIPLE, and two threads blocked in it on different communicators must not
 * wait for each other through isthmus.
 */
#include "mt.h"

#include <pthread.h>
#include <sched.h>

#include "core.h"

int ism_mt_on;
int ism_mt_locking;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local unsigned depth;
static int waiters; /* threads blocked in pthread_mutex_lock (atomic) */

static void take(void)
{
    if (pthread_mutex_trylock(&mu) == 0)
        return;
    __atomic_fetch_add(&waiters, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&mu);
    __atomic_fetch_sub(&waiters, 1, __ATOMIC_RELAXED);
}

void ism_mt_lock(void)
{
    if (depth++ == 0)
        take();
}

void ism_mt_unlock(void)
{
    if (--depth == 0)
        pthread_mutex_unlock(&mu);
}

int ism_mt_trylock(void)
{
    if (depth || pthread_mutex_trylock(&mu) != 0)
        return 0;
    depth = 1;
    return 1;
}

unsigned ism_mt_release(void)
{
    unsigned d = depth;
    if (!d || ism_nbc_cur)
        return 0;
    depth = 0;
    pthread_mutex_unlock(&mu);
    /* the mutex is not fair: a thread that waits in a loop would otherwise take it
     * straight back, every round, from the threads queued on it */
    if (__atomic_load_n(&waiters, __ATOMIC_RELAXED))
        sched_yield();
    return d;
}

void ism_mt_reacquire(unsigned d)
{
    if (!d)
        return;
    take();
    depth = d;
}

/* The vendor's own table; the wrapped one differs only in the calls that may block. */
static const ism_backend *vb;
static ism_backend wrapped;

#define UNLOCKED(call)                                                                            \
    unsigned d_ = ism_mt_release();                                                               \
    int rc_ = (call);                                                                             \
    ism_mt_reacquire(d_);                                                                         \
    return rc_

static int w_send(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm)
{
    UNLOCKED(vb->send(buf, count, dt, dst, tag, comm));
}
static int w_ssend(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm)
{
    UNLOCKED(vb->ssend(buf, count, dt, dst, tag, comm));
}
static int w_rsend(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm)
{
    UNLOCKED(vb->rsend(buf, count, dt, dst, tag, comm));
}
static int w_recv(void *buf, int count, ism_vh dt, int src, int tag, ism_vh comm, ism_vstatus *st)
{
    UNLOCKED(vb->recv(buf, count, dt, src, tag, comm, st));
}
static int w_sendrecv(const void *sbuf, int scount, ism_vh sdt, int dst, int stag, void *rbuf,
                      int rcount, ism_vh rdt, int src, int rtag, ism_vh comm, ism_vstatus *st)
{
    UNLOCKED(vb->sendrecv(sbuf, scount, sdt, dst, stag, rbuf, rcount, rdt, src, rtag, comm, st));
}
static int w_wait(ism_vh *req, ism_vstatus *st) { UNLOCKED(vb->wait(req, st)); }
static int w_waitall(int n, ism_vh *reqs, ism_vstatus *sts) { UNLOCKED(vb->waitall(n, reqs, sts)); }
static int w_probe(int src, int tag, ism_vh comm, ism_vstatus *st)
{
    UNLOCKED(vb->probe(src, tag, comm, st));
}
static int w_allgather(const void *sbuf, int scount, ism_vh sdt, void *rbuf, int rcount,
                       ism_vh rdt, ism_vh comm)
{
    UNLOCKED(vb->allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}
static int w_comm_split(ism_vh comm, int color, int key, ism_vh *out)
{
    UNLOCKED(vb->comm_split(comm, color, key, out));
}
static int w_comm_dup(ism_vh comm, ism_vh *out) { UNLOCKED(vb->comm_dup(comm, out)); }
static int w_comm_create_group(ism_vh comm, const int *ranks, int n, int tag, ism_vh *out)
{
    UNLOCKED(vb->comm_create_group(comm, ranks, n, tag, out));
}
static int w_gatherv(const void *sbuf, int scount, ism_vh sdt, void *rbuf, const int *rcounts,
                     const int *displs, ism_vh rdt, int root, ism_vh comm)
{
    UNLOCKED(vb->gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm));
}
static int w_scatterv(const void *sbuf, const int *scounts, const int *displs, ism_vh sdt,
                      void *rbuf, int rcount, ism_vh rdt, int root, ism_vh comm)
{
    UNLOCKED(vb->scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm));
}
static int w_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                       const ism_vh *sdts, void *rbuf, const int *rcounts, const int *rdispls,
                       const ism_vh *rdts, ism_vh comm)
{
    UNLOCKED(vb->alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm));
}

void ism_mt_start(void)
{
    vb = ism.vbe;
    wrapped = *vb;
    wrapped.send = w_send;
    wrapped.ssend = w_ssend;
    wrapped.rsend = w_rsend;
    wrapped.recv = w_recv;
    wrapped.sendrecv = w_sendrecv;
    wrapped.wait = w_wait;
    wrapped.waitall = w_waitall;
    wrapped.probe = w_probe;
    wrapped.allgather = w_allgather;
    wrapped.comm_split = w_comm_split;
    wrapped.comm_dup = w_comm_dup;
    wrapped.comm_create_group = w_comm_create_group;
    wrapped.gatherv = w_gatherv;
    wrapped.scatterv = w_scatterv;
    wrapped.alltoallw = w_alltoallw;
    ism.be = &wrapped;
    ism_mt_on = 1;
    ism_mt_need(ISM_MT_THREADS, 1);
}

void ism_mt_stop(void)
{
    ism_mt_on = 0;
    ism_mt_need(ISM_MT_THREADS, 0);
    ism.be = ism.vbe;
}
