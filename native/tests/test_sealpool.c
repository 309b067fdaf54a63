/* test_sealpool.c: checks for the crypto workers (wan/sealpool.c) and the record stream
 * sealing and opening on them (wan/sstream.c, ism_sstream_use_pool).
 *
 * Owns: a batch runs every job exactly once, on the workers as well as the caller, each
 * thread's jobs in increasing order, failures counted; a stream sealing on workers puts
 * on the wire exactly the bytes of one sealing alone (numbers and places assigned in
 * order, key updates inside batches), for both suites; a reader opening on workers gets
 * the pattern back; and a damaged record in the middle of a batch is delivered as
 * nothing: the records before it arrive, it and every record after it fail, and what
 * the workers opened after it is wiped.
 */
#include "aead.h"
#include "sealpool.h"
#include "sstream.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_keys.h"

#define JOBS 64

typedef struct batch {
    atomic_int runs[JOBS];
    int slot_of[JOBS];
    atomic_int on_worker; /* jobs a worker ran */
    int fail_every;
} batch;

static int job(void *ctx, int i, int slot)
{
    batch *b = ctx;
    atomic_fetch_add(&b->runs[i], 1);
    b->slot_of[i] = slot;
    if (slot)
        atomic_fetch_add(&b->on_worker, 1);
    /* the first job waits (10 s at most) until a worker took one: the batch is shared */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (i == 0 && atomic_load(&b->on_worker) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10)
            break;
        sched_yield();
    }
    return b->fail_every && i % b->fail_every == 0 ? -1 : 0;
}

static void test_pool_runs_every_job_once(void)
{
    ism_sealpool *p = ism_sealpool_new(3);
    CHECK(p && ism_sealpool_workers(p) == 3, "pool of 3");
    CHECK(ism_sealpool_workers(NULL) == 0 && ism_sealpool_new(0) == NULL, "no pool");
    for (int round = 0; round < 200; round++) {
        static batch b;
        memset(&b, 0, sizeof b);
        b.fail_every = round % 3 ? 0 : 7;
        int n = round % 2 ? JOBS : 2 + round % 13;
        int failed = ism_sealpool_run(p, n, job, &b);
        int want = b.fail_every ? (n + 6) / 7 : 0;
        CHECK(failed == want, "round %d: %d failed, want %d", round, failed, want);
        int last[ISM_SEALPOOL_MAX + 1];
        for (int s = 0; s <= ISM_SEALPOOL_MAX; s++)
            last[s] = -1;
        for (int i = 0; i < n; i++) {
            CHECK(atomic_load(&b.runs[i]) == 1, "round %d job %d ran %d times", round, i,
                  atomic_load(&b.runs[i]));
            int s = b.slot_of[i];
            CHECK(s >= 0 && s <= 3 && last[s] < i, "round %d: slot %d out of order", round, s);
            last[s] = i;
        }
        CHECK(atomic_load(&b.on_worker) > 0, "round %d: no job ran on a worker", round);
    }
    ism_sealpool_free(p);
    /* without a pool the caller runs them all */
    static batch b;
    memset(&b, 0, sizeof b);
    b.on_worker = 1; /* job 0 must not wait for a worker that does not exist */
    CHECK(ism_sealpool_run(NULL, 10, job, &b) == 0, "inline batch");
    for (int i = 0; i < 10; i++)
        CHECK(b.runs[i] == 1 && b.slot_of[i] == 0, "inline job %d", i);
}

/* The wire of n bytes of src sealed by s, in writes of varied sizes and iovecs. */
static uint8_t *wire_of(ism_sstream *s, const uint8_t *src, size_t n, size_t *wlen)
{
    int fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0, "socketpair");
    size_t cap = n + n / 8 + 4096, len = 0, sent = 0;
    uint8_t *w = malloc(cap);
    while (sent < n || ism_sstream_pending(s)) {
        if (sent < n) {
            size_t k = n - sent < 300000 ? n - sent : 100 + (sent * 31) % 300000;
            struct iovec v[3] = {{(void *)(src + sent), k / 4},
                                 {(void *)(src + sent + k / 4), k / 2},
                                 {(void *)(src + sent + k / 4 + k / 2), k - k / 4 - k / 2}};
            ssize_t t = ism_sstream_seal(s, v, 3);
            CHECK(t >= 0, "seal");
            sent += (size_t)t;
        }
        CHECK(ism_sstream_flush(s, fds[0]) >= 0, "flush: %s", strerror(errno));
        ssize_t r;
        while ((r = read(fds[1], w + len, cap - len)) > 0)
            len += (size_t)r;
    }
    close(fds[0]);
    close(fds[1]);
    *wlen = len;
    return w;
}

/* Feed wire to reader r, reading into dst in reads of up to `ask` bytes: the bytes read,
 * and the errno that ended it (0: all of want arrived). */
static size_t read_wire(ism_sstream *r, const uint8_t *w, size_t wlen, uint8_t *dst, size_t want,
                        size_t ask, int *err)
{
    int fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0, "socketpair");
    size_t fed = 0, got = 0;
    *err = 0;
    while (got < want) {
        if (fed < wlen) {
            ssize_t k = write(fds[0], w + fed, wlen - fed);
            if (k > 0)
                fed += (size_t)k;
        }
        size_t n = want - got < ask ? want - got : ask;
        ssize_t k = ism_sstream_read(r, fds[1], dst + got, n);
        if (k > 0)
            got += (size_t)k;
        else if (k < 0 && errno != EAGAIN) {
            *err = errno;
            break;
        } else if (k < 0 && fed == wlen && !ism_sstream_readable(r)) {
            *err = EAGAIN; /* stalled: nothing more will come */
            break;
        }
    }
    close(fds[0]);
    close(fds[1]);
    return got;
}

static void test_stream_on_workers(int suite)
{
    size_t n = 3 << 20;
    uint8_t *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 11);
    ism_sealpool *p = ism_sealpool_new(2);
    ism_aead_keys k;
    test_keys(&k, suite);
    ism_sstream alone, shared, rd;
    CHECK(ism_sstream_init(&alone, &k, 1) == 0 && ism_sstream_init(&shared, &k, 1) == 0,
          "init");
    CHECK(ism_sstream_use_pool(&shared, p) == 0 && shared.nslots == 3, "use pool");
    size_t l1, l2;
    uint8_t *w1 = wire_of(&alone, src, n, &l1), *w2 = wire_of(&shared, src, n, &l2);
    CHECK(shared.par_batches > 0, "%s: no batch went to the workers", ism_aead_suite_name(suite));
    /* record boundaries differ with the buffer's size, so compare what the reader gets;
     * and the same numbers: both wires open with one reader alone */
    int err;
    CHECK(ism_sstream_init(&rd, &k, 0) == 0, "init reader");
    CHECK(read_wire(&rd, w1, l1, dst, n, n, &err) == n && memcmp(dst, src, n) == 0,
          "the wire sealed alone");
    ism_sstream_free(&rd);
    CHECK(ism_sstream_init(&rd, &k, 0) == 0, "init reader");
    memset(dst, 0, n);
    CHECK(read_wire(&rd, w2, l2, dst, n, n, &err) == n && memcmp(dst, src, n) == 0,
          "%s: the wire sealed on workers, opened alone: %s", ism_aead_suite_name(suite),
          strerror(err));
    ism_sstream_free(&rd);
    /* opened on workers, in reads of whole payloads and of odd sizes */
    size_t asks[] = {n, 256 << 10, 40000, 777};
    for (size_t a = 0; a < sizeof asks / sizeof *asks; a++) {
        CHECK(ism_sstream_init(&rd, &k, 0) == 0 && ism_sstream_use_pool(&rd, p) == 0, "reader");
        memset(dst, 0, n);
        size_t got = read_wire(&rd, w2, l2, dst, n, asks[a], &err);
        CHECK(got == n && memcmp(dst, src, n) == 0, "%s: opened on workers, reads of %zu: %zu "
              "bytes, %s", ism_aead_suite_name(suite), asks[a], got, strerror(err));
        CHECK(asks[a] < 40000 || rd.par_batches > 0, "reads of %zu: no batch on the workers",
              asks[a]);
        CHECK(ism_sstream_rekeys(&rd) == ism_sstream_rekeys(&shared) && ism_sstream_rekeys(&rd) >= 12,
              "key updates: %llu opening, %llu sealing", (unsigned long long)ism_sstream_rekeys(&rd),
              (unsigned long long)ism_sstream_rekeys(&shared));
        ism_sstream_free(&rd);
    }
    /* a bit flipped in the 2nd record of a batch: the 1st arrives, then EBADMSG, and
     * nothing of the records the workers opened after it */
    size_t before = w2[0] | (size_t)w2[1] << 8 | (size_t)w2[2] << 16;
    size_t at = ISM_SSTREAM_OVERHEAD + before;
    w2[at + 100] ^= 0x20;
    CHECK(ism_sstream_init(&rd, &k, 0) == 0 && ism_sstream_use_pool(&rd, p) == 0, "reader");
    memset(dst, 0, n);
    size_t got = read_wire(&rd, w2, l2, dst, n, n, &err);
    CHECK(err == EBADMSG && got == before && memcmp(dst, src, got) == 0,
          "%s: damaged 2nd record: %zu bytes (want %zu), %s", ism_aead_suite_name(suite), got,
          before, strerror(err));
    CHECK(rd.par_batches > 0 && rd.rejected == 1, "the damage was met in a batch (%llu, %llu)",
          (unsigned long long)rd.par_batches, (unsigned long long)rd.rejected);
    for (size_t x = got; x < got + 3 * ISM_SSTREAM_MAX; x += ISM_SSTREAM_MAX)
        CHECK(memcmp(dst + x, src + x, ISM_SSTREAM_MAX) != 0, "plaintext after the damaged "
              "record left at byte %zu", x);
    CHECK(ism_sstream_read(&rd, -1, dst, 10) < 0 && errno == EBADMSG, "the stream stays failed");
    ism_sstream_free(&rd);
    ism_sstream_free(&alone);
    ism_sstream_free(&shared);
    ism_sealpool_free(p);
    free(w1);
    free(w2);
    free(src);
    free(dst);
}

int main(void)
{
    test_pool_runs_every_job_once();
    test_stream_on_workers(ISM_AEAD_AES256GCM);
    test_stream_on_workers(ISM_AEAD_CHACHA20POLY1305);
    if (failures) {
        fprintf(stderr, "test_sealpool: %d checks failed\n", failures);
        return 1;
    }
    printf("test_sealpool: all checks passed\n");
    return 0;
}
