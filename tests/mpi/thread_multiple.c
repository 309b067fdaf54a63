/*
 * thread_multiple: MPI_THREAD_MULTIPLE with several threads per rank calling MPI at once
 * (isthmus's core lock, native/src/core/mt.c).
 *
 *   thread_multiple [part] [threads] [iterations]
 *   part: dup | shared | probe | all (default all); threads default 4; iterations 24
 *
 * dup:    each thread works on its own duplicate of MPI_COMM_WORLD: a far and a near
 *         exchange (blocking and nonblocking, eager and rendezvous sizes), Allreduce,
 *         Bcast, Barrier, Iallreduce, and an MPI_Comm_dup of its own communicator made
 *         while the other threads make theirs (context ids agreed at the same time).
 * shared: all threads on one communicator, thread t on tag t: each (source, tag) stream
 *         arrives whole and in order; plus MPI_ANY_SOURCE receives on per-thread tags.
 * probe:  MPI_Probe / MPI_Iprobe on per-thread tags, then MPI_Mprobe / MPI_Improbe by
 *         every thread at once on one tag from any source: each message must reach
 *         exactly one thread.
 * The library must grant MPI_THREAD_MULTIPLE (isthmus does whenever the vendor does);
 * anything less is a failure, so the test cannot pass without running threads.
 */
#include <pthread.h>
#include <string.h>

#include "check.h"

#define SMALL 8          /* ints: eager everywhere */
#define BIG (50 * 1024)  /* ints (200 KiB): a rendezvous across sites */
#define TAG_ANY 100      /* + thread: the ANY_SOURCE streams of part shared */
#define TAG_PROBE 200    /* + thread: part probe, MPI_Probe */
#define TAG_RACE 300     /* part probe, MPI_Mprobe: one tag for every thread */

static int rank, size, nthreads = 4, iters = 24;
static MPI_Comm *dups, shared;
static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER;

/* check.h's failure count is not thread safe: record failures one at a time */
#define TCHECK(cond, ...)                                                                     \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            pthread_mutex_lock(&check_mu);                                                    \
            check_fail_(__FILE__, __LINE__, #cond, __VA_ARGS__);                              \
            pthread_mutex_unlock(&check_mu);                                                  \
        }                                                                                     \
    } while (0)
#define TCHECK_RC(rc, what) TCHECK((rc) == MPI_SUCCESS, "%s returned %d", what, (rc))

/* message contents: a header (source, thread, sequence, length) then a pattern */
static void fill(int *b, int n, int src, int t, int seq)
{
    b[0] = src, b[1] = t, b[2] = seq, b[3] = n;
    for (int i = 4; i < n; i++)
        b[i] = src * 7919 + t * 104729 + seq * 31 + i;
}

static int intact(const int *b, int n)
{
    if (n < 4 || b[3] != n)
        return 0;
    for (int i = 4; i < n; i++)
        if (b[i] != b[0] * 7919 + b[1] * 104729 + b[2] * 31 + i)
            return 0;
    return 1;
}

static int len_of(int it) { return it % 3 == 2 ? BIG : SMALL; }

static void *part_dup(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm c = dups[t];
    int far_to = peer_far_to(rank, size), far_from = peer_far_from(rank, size);
    int near = peer_near(rank, size);
    int *out = malloc(sizeof(int) * BIG), *in = malloc(sizeof(int) * BIG);
    int *nout = malloc(sizeof(int) * BIG), *nin = malloc(sizeof(int) * BIG);
    for (int it = 0; it < iters; it++) {
        int n = len_of(it);
        MPI_Status st;
        fill(out, n, rank, t, it);
        TCHECK_RC(MPI_Sendrecv(out, n, MPI_INT, far_to, it, in, n, MPI_INT, far_from, it, c, &st),
                  "MPI_Sendrecv");
        TCHECK(intact(in, n) && in[0] == far_from && in[1] == t && in[2] == it,
               "thread %d iteration %d: far message from %d is (%d,%d,%d)", t, it, far_from,
               in[0], in[1], in[2]);
        MPI_Request rq[2];
        fill(nout, n, rank, t, it);
        TCHECK_RC(MPI_Irecv(nin, n, MPI_INT, near, it, c, &rq[0]), "MPI_Irecv");
        TCHECK_RC(MPI_Isend(nout, n, MPI_INT, near, it, c, &rq[1]), "MPI_Isend");
        TCHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), "MPI_Waitall");
        TCHECK(intact(nin, n) && nin[0] == near && nin[2] == it,
               "thread %d iteration %d: near message from %d is (%d,%d,%d)", t, it, near, nin[0],
               nin[1], nin[2]);
        int mine = rank + t + it, sum = -1;
        TCHECK_RC(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c), "MPI_Allreduce");
        TCHECK(sum == size * (size - 1) / 2 + size * (t + it),
               "thread %d iteration %d: allreduce %d", t, it, sum);
        int root = it % size, b[16];
        for (int i = 0; i < 16; i++)
            b[i] = rank == root ? root * 1000 + t * 100 + it + i : -1;
        TCHECK_RC(MPI_Bcast(b, 16, MPI_INT, root, c), "MPI_Bcast");
        for (int i = 0; i < 16; i++)
            TCHECK(b[i] == root * 1000 + t * 100 + it + i, "thread %d bcast[%d] = %d", t, i,
                   b[i]);
        if (it % 4 == 0)
            TCHECK_RC(MPI_Barrier(c), "MPI_Barrier");
        if (it % 6 == 1) {
            MPI_Request r;
            int v = t * it + rank, m = -1;
            TCHECK_RC(MPI_Iallreduce(&v, &m, 1, MPI_INT, MPI_MAX, c, &r), "MPI_Iallreduce");
            TCHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
            TCHECK(m == t * it + size - 1, "thread %d iallreduce %d", t, m);
        }
    }
    /* every thread creates a communicator at the same time */
    MPI_Comm sub;
    TCHECK_RC(MPI_Comm_dup(c, &sub), "MPI_Comm_dup");
    int one = 1, all = 0;
    TCHECK_RC(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, sub), "MPI_Allreduce on the dup");
    TCHECK(all == size, "thread %d: allreduce on its own dup gave %d", t, all);
    int got = -1, want = peer_far_from(rank, size);
    TCHECK_RC(MPI_Sendrecv(&rank, 1, MPI_INT, far_to, 7, &got, 1, MPI_INT, far_from, 7, sub,
                           MPI_STATUS_IGNORE), "MPI_Sendrecv on the dup");
    TCHECK(got == want, "thread %d: got %d on its dup, want %d", t, got, want);
    TCHECK_RC(MPI_Comm_free(&sub), "MPI_Comm_free");
    free(out), free(in), free(nout), free(nin);
    return NULL;
}

static void *part_shared(void *arg)
{
    int t = (int)(intptr_t)arg;
    int far_to = peer_far_to(rank, size), far_from = peer_far_from(rank, size);
    int near = peer_near(rank, size);
    int *fo = malloc(sizeof(int) * BIG), *no = malloc(sizeof(int) * BIG);
    int *in = malloc(sizeof(int) * BIG), *ao = malloc(sizeof(int) * 2 * SMALL);
    int *next = calloc((size_t)size, sizeof(int)), *sent = calloc((size_t)size, sizeof(int));
    for (int it = 0; it < iters; it++) {
        int n = len_of(it);
        MPI_Request rq[4];
        MPI_Status st;
        fill(fo, n, rank, t, it);
        fill(no, n, rank, t, it);
        TCHECK_RC(MPI_Isend(fo, n, MPI_INT, far_to, t, shared, &rq[0]), "MPI_Isend");
        TCHECK_RC(MPI_Isend(no, n, MPI_INT, near, t, shared, &rq[1]), "MPI_Isend");
        /* ANY_SOURCE stream: a sequence number per destination */
        fill(ao, SMALL, rank, t, sent[far_to]++);
        TCHECK_RC(MPI_Isend(ao, SMALL, MPI_INT, far_to, TAG_ANY + t, shared, &rq[2]), "MPI_Isend");
        fill(ao + SMALL, SMALL, rank, t, sent[near]++);
        TCHECK_RC(MPI_Isend(ao + SMALL, SMALL, MPI_INT, near, TAG_ANY + t, shared, &rq[3]),
                  "MPI_Isend");
        TCHECK_RC(MPI_Recv(in, n, MPI_INT, far_from, t, shared, &st), "MPI_Recv");
        TCHECK(intact(in, n) && in[0] == far_from && in[1] == t && in[2] == it,
               "thread %d iteration %d: tag %d from %d is (%d,%d,%d)", t, it, t, far_from,
               in[0], in[1], in[2]);
        TCHECK_RC(MPI_Recv(in, n, MPI_INT, near, t, shared, &st), "MPI_Recv");
        TCHECK(intact(in, n) && in[0] == near && in[1] == t && in[2] == it,
               "thread %d iteration %d: tag %d from %d is (%d,%d,%d)", t, it, t, near, in[0],
               in[1], in[2]);
        for (int k = 0; k < 2; k++) {
            TCHECK_RC(MPI_Recv(in, SMALL, MPI_INT, MPI_ANY_SOURCE, TAG_ANY + t, shared, &st),
                      "MPI_Recv(MPI_ANY_SOURCE)");
            int s = st.MPI_SOURCE;
            TCHECK(s == far_from || s == near, "thread %d: ANY_SOURCE message from %d", t, s);
            if (s >= 0 && s < size) {
                TCHECK(intact(in, SMALL) && in[0] == s && in[1] == t && in[2] == next[s],
                       "thread %d: ANY_SOURCE stream from %d: seq %d, want %d", t, s, in[2],
                       next[s]);
                next[s]++;
            }
        }
        TCHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE), "MPI_Waitall");
    }
    int want_far = far_from == near ? 2 * iters : iters;
    TCHECK(next[far_from] == want_far, "thread %d: %d ANY_SOURCE messages from %d, want %d", t,
           next[far_from], far_from, want_far);
    free(fo), free(no), free(in), free(ao), free(next), free(sent);
    return NULL;
}

/* part probe, second half: who received what (source, sender thread, sequence) */
static unsigned char *seen;
static int race_k;

static void *part_probe(void *arg)
{
    int t = (int)(intptr_t)arg;
    int far_to = peer_far_to(rank, size), far_from = peer_far_from(rank, size);
    int near = peer_near(rank, size);
    int *out = malloc(sizeof(int) * BIG);
    /* MPI_Probe, then a receive of the size it reported */
    for (int it = 0; it < iters; it++) {
        int n = it % 4 == 3 ? BIG : SMALL + it;
        MPI_Request r;
        MPI_Status st;
        fill(out, n, rank, t, it);
        TCHECK_RC(MPI_Isend(out, n, MPI_INT, far_to, TAG_PROBE + t, shared, &r), "MPI_Isend");
        if (it % 2) {
            int flag = 0;
            while (!flag)
                TCHECK_RC(MPI_Iprobe(far_from, TAG_PROBE + t, shared, &flag, &st), "MPI_Iprobe");
        } else {
            TCHECK_RC(MPI_Probe(far_from, TAG_PROBE + t, shared, &st), "MPI_Probe");
        }
        int cnt = -1;
        MPI_Get_count(&st, MPI_INT, &cnt);
        TCHECK(cnt == n, "thread %d iteration %d: probe says %d ints, want %d", t, it, cnt, n);
        int *in = malloc(sizeof(int) * (size_t)(cnt > 0 ? cnt : 1));
        TCHECK_RC(MPI_Recv(in, cnt, MPI_INT, far_from, TAG_PROBE + t, shared, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        TCHECK(cnt == n && intact(in, n) && in[0] == far_from && in[2] == it,
               "thread %d iteration %d: probed message is (%d,%d,%d)", t, it, in[0], in[1], in[2]);
        free(in);
        TCHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
    }
    /* every thread sends race_k messages to far_to and to near on one tag, then takes
     * 2 * race_k messages from any source with a matched probe */
    int k = race_k;
    int **bufs = malloc(sizeof(int *) * 2 * (size_t)k);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * 2 * (size_t)k);
    for (int j = 0; j < 2 * k; j++) {
        int n = j % 5 == 4 ? BIG : SMALL;
        bufs[j] = malloc(sizeof(int) * (size_t)n);
        fill(bufs[j], n, rank, t, j);
        TCHECK_RC(MPI_Isend(bufs[j], n, MPI_INT, j < k ? far_to : near, TAG_RACE, shared, &rq[j]),
                  "MPI_Isend");
    }
    for (int j = 0; j < 2 * k; j++) {
        MPI_Message m;
        MPI_Status st;
        if (t % 2) {
            int flag = 0;
            while (!flag)
                TCHECK_RC(MPI_Improbe(MPI_ANY_SOURCE, TAG_RACE, shared, &flag, &m, &st),
                          "MPI_Improbe");
        } else {
            TCHECK_RC(MPI_Mprobe(MPI_ANY_SOURCE, TAG_RACE, shared, &m, &st), "MPI_Mprobe");
        }
        int cnt = -1;
        MPI_Get_count(&st, MPI_INT, &cnt);
        int *in = malloc(sizeof(int) * (size_t)(cnt > 4 ? cnt : 4));
        MPI_Status st2;
        TCHECK_RC(MPI_Mrecv(in, cnt, MPI_INT, &m, &st2), "MPI_Mrecv");
        TCHECK(m == MPI_MESSAGE_NULL, "thread %d: MPI_Mrecv left the message handle set", t);
        int s = st2.MPI_SOURCE;
        TCHECK(s == st.MPI_SOURCE && (s == far_from || s == near),
               "thread %d: matched message from %d (probe said %d)", t, s, st.MPI_SOURCE);
        int ok = intact(in, cnt) && in[0] == s && in[1] >= 0 && in[1] < nthreads && in[2] >= 0 &&
                 in[2] < 2 * k;
        TCHECK(ok, "thread %d: matched message from %d is damaged (%d,%d,%d,%d)", t, s, in[0],
               in[1], in[2], in[3]);
        if (ok) {
            pthread_mutex_lock(&check_mu);
            seen[((size_t)s * (size_t)nthreads + (size_t)in[1]) * 2 * (size_t)k + (size_t)in[2]]++;
            pthread_mutex_unlock(&check_mu);
        }
        free(in);
    }
    TCHECK_RC(MPI_Waitall(2 * k, rq, MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (int j = 0; j < 2 * k; j++)
        free(bufs[j]);
    free(bufs), free(rq), free(out);
    return NULL;
}

static void run(void *(*fn)(void *))
{
    pthread_t *th = malloc(sizeof(pthread_t) * (size_t)nthreads);
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, fn, (void *)(intptr_t)t))
            CHECK(0, "pthread_create failed for thread %d", t);
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    free(th);
}

/* After part probe: every message sent to me reached exactly one thread. */
static void check_races(void)
{
    int far_from = peer_far_from(rank, size), near = peer_near(rank, size), k = race_k;
    for (int s = 0; s < size; s++)
        for (int t = 0; t < nthreads; t++)
            for (int j = 0; j < 2 * k; j++) {
                int want = (j < k && s == far_from) + (j >= k && s == near);
                int got = seen[((size_t)s * (size_t)nthreads + (size_t)t) * 2 * (size_t)k + (size_t)j];
                CHECK(got == want, "message %d of thread %d of rank %d arrived %d times, want %d",
                      j, t, s, got, want);
            }
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "all";
    if (argc > 2)
        nthreads = atoi(argv[2]);
    if (argc > 3)
        iters = atoi(argv[3]);
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, want MPI_THREAD_MULTIPLE (%d)", provided,
          MPI_THREAD_MULTIPLE);
    int q = -1;
    MPI_Query_thread(&q);
    CHECK(q == provided, "MPI_Query_thread %d, provided %d", q, provided);
    if (provided == MPI_THREAD_MULTIPLE) {
        int all = !strcmp(part, "all");
        MPI_Comm_dup(MPI_COMM_WORLD, &shared);
        if (all || !strcmp(part, "dup")) {
            dups = malloc(sizeof(MPI_Comm) * (size_t)nthreads);
            for (int t = 0; t < nthreads; t++)
                MPI_Comm_dup(MPI_COMM_WORLD, &dups[t]);
            run(part_dup);
            for (int t = 0; t < nthreads; t++)
                MPI_Comm_free(&dups[t]);
            free(dups);
        }
        if (all || !strcmp(part, "shared"))
            run(part_shared);
        if (all || !strcmp(part, "probe")) {
            race_k = iters / 2 > 2 ? iters / 2 : 2;
            seen = calloc((size_t)size * (size_t)nthreads * 2 * (size_t)race_k, 1);
            run(part_probe);
            check_races();
            free(seen);
        }
        MPI_Comm_free(&shared);
    }
    int rc = check_finish("thread_multiple");
    MPI_Finalize();
    return rc;
}
