/*
 * rma_putbatch: many small puts, which isthmus gathers into one frame per target at
 * another site (core/rma_batch.c); every byte is checked at the targets.
 *   fence:  every rank tiles its slot of every rank's window with puts of 1 to 255 bytes,
 *           in an order that is neither ascending nor descending, with a put larger than
 *           the batching threshold (5000 bytes) among them; MPI_BYTE, an origin vector
 *           (every other byte of a buffer), a target vector (even bytes, then odd bytes),
 *           and MPI_INT;
 *   flush:  in one MPI_Win_lock_all epoch, four passes over shrinking parts of the slot,
 *           each pass overwriting the last (MPI_Win_flush between them: conflicting puts
 *           in separate flush intervals are ordered), each followed by an MPI_Get of what
 *           it wrote and interleaved with MPI_Accumulate into a counter;
 *   pscw:   the same tiling in a post/start/complete/wait epoch (every other rank);
 *   lock:   the same tiling under MPI_LOCK_EXCLUSIVE, one target after another;
 *   order:  (isthmus, targets at another site only) put, then get, accumulate,
 *           fetch-and-op, compare-and-swap, MPI_Rput and MPI_Rget of the same cell with no
 *           flush between: isthmus applies one origin's operations on a target in order,
 *           so each sees the puts before it (MPI itself leaves this undefined, so the vendor
 *           at one site is not asked);
 * With the argument "frames" (isthmus across 2 sites, ranks 0 and 1 at different sites):
 *   1000 puts of 8 bytes to rank 1 in one epoch and a flush: the number of one-sided frames
 *   rank 0 sent (MPI_T variable isthmus_rank_rma_frames_sent) is printed ("frames: N") and
 *   must be under 100 (over 1000 with ISTHMUS_RMA_BATCH=0: one per put); then a put followed by a blocking MPI_Recv must reach the target
 *   while the origin waits (the batch goes out when the origin's progress engine idles).
 * Works for any size >= 1.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <stdint.h>
#include <string.h>
#include <time.h>

enum { SLOT = 16384, BIG = 5000, NPASS = 4, NPUT = 1000 };

static int rank, size, *site;
static unsigned char *mem;
static MPI_Win win;

/* Origin buffers: MPI lets a put read its buffer until the operation completes (a flush,
 * the end of the epoch), so each put's bytes stay in this arena until then (reset()). */
static unsigned char *arena;
static size_t arena_used, arena_cap;

static void *take(size_t n)
{
    void *p = arena + arena_used;
    arena_used += (n + 7) & ~(size_t)7;
    if (arena_used > arena_cap) {
        fprintf(stderr, "rma_putbatch: origin arena of %zu bytes too small\n", arena_cap);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static unsigned char val(int origin, int target, int phase, long off)
{
    return (unsigned char)(origin * 131 + target * 31 + off * 7 + phase * 17 + (off >> 8));
}

/* The tiling of [lo, hi) of a slot: spans of the sizes below, one BIG one a third of the
 * way in. Returns the count; spans[i] = {off, len}. */
static int tiling(long lo, long hi, long spans[][2])
{
    static const int sizes[] = {1, 2, 3, 8, 13, 24, 64, 100, 255, 8, 8, 4, 16, 5, 40, 8};
    int n = 0, k = 0;
    for (long at = lo; at < hi; n++) {
        long len = n == 7 && hi - lo > 3 * BIG ? BIG : sizes[k++ % 16];
        if (len > hi - at)
            len = hi - at;
        spans[n][0] = at;
        spans[n][1] = len;
        at += len;
    }
    return n;
}

/* One span of the slot at target t: a kind chosen by its index. */
static void put_span(int t, int phase, long off, long len, int i)
{
    long base = (long)rank * SLOT;
    unsigned char *buf = take((size_t)len);
    for (long j = 0; j < len; j++)
        buf[j] = val(rank, t, phase, off + j);
    int kind = len < 2 || len == BIG ? 0 : i % 4;
    if (kind == 3 && (len % 4 || off % 4))
        kind = 0;
    MPI_Datatype dt;
    switch (kind) {
    case 0:
        CHECK_RC(MPI_Put(buf, (int)len, MPI_BYTE, t, base + off, (int)len, MPI_BYTE, win), "put");
        break;
    case 1: { /* origin: every other byte of a buffer */
        unsigned char *sp = take(2 * (size_t)len);
        for (long j = 0; j < len; j++)
            sp[2 * j] = buf[j];
        MPI_Type_vector((int)len, 1, 2, MPI_BYTE, &dt);
        MPI_Type_commit(&dt);
        CHECK_RC(MPI_Put(sp, 1, dt, t, base + off, (int)len, MPI_BYTE, win), "put vector origin");
        MPI_Type_free(&dt);
        break;
    }
    case 2: { /* target: the even bytes, then the odd ones */
        unsigned char *ev = take(128), *od = take(128);
        int ne = (int)((len + 1) / 2), no = (int)(len / 2);
        for (int j = 0; j < ne; j++)
            ev[j] = buf[2 * j];
        for (int j = 0; j < no; j++)
            od[j] = buf[2 * j + 1];
        MPI_Type_vector(ne, 1, 2, MPI_BYTE, &dt);
        MPI_Type_commit(&dt);
        CHECK_RC(MPI_Put(ev, ne, MPI_BYTE, t, base + off, 1, dt, win), "put vector target");
        MPI_Type_free(&dt);
        MPI_Type_vector(no, 1, 2, MPI_BYTE, &dt);
        MPI_Type_commit(&dt);
        CHECK_RC(MPI_Put(od, no, MPI_BYTE, t, base + off + 1, 1, dt, win), "put vector target");
        MPI_Type_free(&dt);
        break;
    }
    default: {
        int *iv = take((size_t)len);
        memcpy(iv, buf, (size_t)len);
        CHECK_RC(MPI_Put(iv, (int)(len / 4), MPI_INT, t, base + off, (int)(len / 4), MPI_INT,
                         win), "put ints");
    }
    }
}

static long (*spans)[2];

/* The tiling of [lo, hi) at target t: even spans ascending, then odd spans descending. */
static void put_tiling(int t, int phase, long lo, long hi)
{
    int n = tiling(lo, hi, spans);
    for (int i = 0; i < n; i += 2)
        put_span(t, phase, spans[i][0], spans[i][1], i);
    for (int i = n - 1 - (n % 2 == 0 ? 0 : 1); i >= 1; i -= 2)
        put_span(t, phase, spans[i][0], spans[i][1], i);
}

/* Every origin's slot of my window: the bytes of phase p over [lo_p, hi_p), later
 * passes over earlier ones; the slot of rank skip (if any) untouched. */
static void verify(const char *what, int phase, int npass, int skip)
{
    for (int r = 0; r < size; r++) {
        int bad = 0;
        for (long off = 0; off < SLOT && bad < 3; off++) {
            int p = -1;
            for (int q = 0; q < npass; q++)
                if (off >= q * (SLOT / 16) && off < SLOT - q * (SLOT / 16))
                    p = q;
            unsigned char want = p < 0 || r == skip ? 0 : val(r, rank, phase + p, off);
            unsigned char got = mem[(long)r * SLOT + off];
            if (got != want) {
                CHECK(got == want, "%s: byte %ld of rank %d's slot is %d, want %d", what, off, r,
                      got, want);
                bad++;
            }
        }
    }
}

static void reset(void)
{
    arena_used = 0;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(mem, 0, (size_t)size * SLOT);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void fence_phase(void)
{
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; t++)
        put_tiling((rank + t) % size, 10, 0, SLOT);
    MPI_Win_fence(0, win);
    verify("fence", 10, 1, -1);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
}

static void flush_phase(int *acc)
{
    MPI_Win_lock_all(0, win);
    int one = 1;
    for (int p = 0; p < NPASS; p++) {
        long lo = p * (SLOT / 16), hi = SLOT - p * (SLOT / 16);
        for (int t = 0; t < size; t++) {
            int tt = (rank + t) % size;
            put_tiling(tt, 20 + p, lo, hi);
            CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT, tt, (MPI_Aint)size * SLOT +
                                    4 * (MPI_Aint)rank, 1, MPI_INT, MPI_SUM, win), "acc");
        }
        for (int t = 0; t < size; t++) {
            CHECK_RC(MPI_Win_flush(t, win), "flush");
            if (t == size - 1)
                arena_used = 0; /* every put of the pass has completed */
            /* what this pass wrote, read back: ordered after the flush */
            unsigned char got[64];
            long at = lo + 100;
            CHECK_RC(MPI_Get(got, 64, MPI_BYTE, t, (MPI_Aint)rank * SLOT + at, 64, MPI_BYTE, win),
                     "get");
            CHECK_RC(MPI_Win_flush(t, win), "flush get");
            for (int j = 0; j < 64; j++)
                CHECK(got[j] == val(rank, t, 20 + p, at + j), "pass %d: got byte %ld of rank %d: "
                      "%d, want %d", p, at + j, t, got[j], val(rank, t, 20 + p, at + j));
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    verify("flush", 20, NPASS, -1);
    for (int r = 0; r < size; r++)
        CHECK(acc[r] == NPASS, "rank %d's accumulates: %d, want %d", r, acc[r], NPASS);
    MPI_Win_unlock(rank, win);
}

static void pscw_phase(void)
{
    /* every other rank: isthmus's MPI_Win_post sends its POST to each member of the group
     * with a blocking send, which to itself waits for ever under MPICH (ch4:ucx) when the
     * caller is in its own group (a defect apart from this test's subject) */
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_excl(world, 1, &rank, &g);
    MPI_Win_post(g, 0, win);
    MPI_Win_start(g, 0, win);
    for (int t = 1; t < size; t++)
        put_tiling((rank + t) % size, 30, 0, SLOT);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    verify("pscw", 30, 1, rank);
    MPI_Group_free(&g);
    MPI_Group_free(&world);
}

static void lock_phase(void)
{
    for (int t = 0; t < size; t++) {
        int tt = (rank + t) % size;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, tt, 0, win);
        put_tiling(tt, 40, 0, SLOT);
        MPI_Win_unlock(tt, win);
        arena_used = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    verify("lock", 40, 1, -1);
    MPI_Win_unlock(rank, win);
}

/* isthmus orders one origin's operations on a target at another site: each sees the puts
 * before it, with no flush between. Cells of my slot's first 64 bytes at each target. */
static void order_phase(void)
{
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < size; t++) {
        if (site[t] < 0 || site[t] == site[rank])
            continue;
        MPI_Aint c = (MPI_Aint)rank * SLOT, d = c + 8;
        int v = 1000 * rank + t, g = -1, ten = 10, f = -1, x = -1, nv = v + 100, cmp = v + 11;
        int r1 = v + 200, rg = -1, zero = 0;
        MPI_Request rq[2];
        CHECK_RC(MPI_Put(&v, 1, MPI_INT, t, c, 1, MPI_INT, win), "order put");
        CHECK_RC(MPI_Get(&g, 1, MPI_INT, t, c, 1, MPI_INT, win), "order get");
        CHECK_RC(MPI_Put(&v, 1, MPI_INT, t, c, 1, MPI_INT, win), "order put");
        CHECK_RC(MPI_Accumulate(&ten, 1, MPI_INT, t, c, 1, MPI_INT, MPI_SUM, win), "order acc");
        int w1 = v + 1;
        CHECK_RC(MPI_Put(&w1, 1, MPI_INT, t, c + 4, 1, MPI_INT, win), "order put");
        CHECK_RC(MPI_Fetch_and_op(&zero, &f, MPI_INT, t, c + 4, MPI_SUM, win), "order fop");
        int w2 = v + 11;
        CHECK_RC(MPI_Put(&w2, 1, MPI_INT, t, c, 1, MPI_INT, win), "order put");
        CHECK_RC(MPI_Compare_and_swap(&nv, &cmp, &x, MPI_INT, t, c, win), "order cas");
        CHECK_RC(MPI_Rput(&r1, 1, MPI_INT, t, d, 1, MPI_INT, win, &rq[0]), "order rput");
        CHECK_RC(MPI_Rget(&rg, 1, MPI_INT, t, d, 1, MPI_INT, win, &rq[1]), "order rget");
        MPI_Status st[2];
        CHECK_RC(MPI_Waitall(2, rq, st), "order waitall");
        int gacc = -1;
        CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_INT, &gacc, 1, MPI_INT, t, c, 1, MPI_INT,
                                    MPI_NO_OP, win), "order gacc");
        CHECK_RC(MPI_Win_flush(t, win), "order flush");
        CHECK(g == v, "a get after a put to rank %d read %d, want %d", t, g, v);
        CHECK(f == v + 1, "a fetch-and-op after a put to rank %d read %d, want %d", t, f, v + 1);
        CHECK(x == v + 11, "a compare-and-swap after a put to rank %d read %d, want %d", t, x,
              v + 11);
        CHECK(rg == v + 200, "an MPI_Rget after an MPI_Rput to rank %d read %d, want %d", t, rg,
              v + 200);
        CHECK(gacc == v + 100, "a get-accumulate after a put to rank %d read %d, want %d", t,
              gacc, v + 100);
    }
    MPI_Win_unlock_all(win);
}

static unsigned long long frames_sent(void)
{
    int i, count = 0, prov;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    unsigned long long v = 0;
    CHECK_RC(MPI_T_pvar_session_create(&s), "pvar session");
    CHECK_RC(MPI_T_pvar_get_index("isthmus_rank_rma_frames_sent", MPI_T_PVAR_CLASS_COUNTER, &i),
             "isthmus_rank_rma_frames_sent");
    CHECK_RC(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count), "pvar handle");
    CHECK_RC(MPI_T_pvar_read(s, h, &v), "pvar read");
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    MPI_T_finalize();
    return v;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Rank 0 at one site, rank 1 at another. */
static void frames_mode(void)
{
    CHECK(size >= 2 && site[0] >= 0 && site[1] >= 0 && site[0] != site[1],
          "frames: needs isthmus with ranks 0 and 1 at different sites");
    if (check_failures())
        return;
    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        unsigned long long f0 = frames_sent();
        for (int i = 0; i < NPUT; i++) {
            uint64_t x = 0x0101010101010101ull * (uint64_t)(i & 0x7f);
            /* every other 8 bytes: no two puts are adjacent */
            CHECK_RC(MPI_Put(&x, 8, MPI_BYTE, 1, 16 * (MPI_Aint)i, 8, MPI_BYTE, win), "put");
        }
        CHECK_RC(MPI_Win_flush(1, win), "flush");
        unsigned long long n = frames_sent() - f0;
        printf("frames: %llu for %d puts of 8 bytes and a flush\n", n, NPUT);
        fflush(stdout);
        /* ISTHMUS_RMA_BATCH=0 turns batching off: then a frame per put */
        const char *b = getenv("ISTHMUS_RMA_BATCH");
        if (b && !strcmp(b, "0"))
            CHECK(n > NPUT, "%llu one-sided frames for %d puts of 8 bytes unbatched", n, NPUT);
        else
            CHECK(n < 100, "%llu one-sided frames for %d puts of 8 bytes", n, NPUT);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        for (int i = 0; i < NPUT; i++)
            CHECK(mem[16 * i] == (i & 0x7f) && mem[16 * i + 7] == (i & 0x7f) && mem[16 * i + 8] == 0,
                  "put %d: bytes %d %d %d", i, mem[16 * i], mem[16 * i + 7], mem[16 * i + 8]);
    /* a put, then the origin waits in MPI_Recv for the target to see it */
    int seen = 0;
    const MPI_Aint cell = 16 * NPUT + 64;
    if (rank == 0) {
        unsigned char v = 42;
        CHECK_RC(MPI_Put(&v, 1, MPI_BYTE, 1, cell, 1, MPI_BYTE, win), "put");
        MPI_Recv(&seen, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(seen, "the put stayed at the origin while it waited in MPI_Recv");
    } else if (rank == 1) {
        double t0 = now();
        while (!(seen = ((volatile unsigned char *)mem)[cell] == 42) && now() - t0 < 20)
            MPI_Win_sync(win);
        MPI_Send(&seen, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* each rank's site under isthmus (-1: not known, e.g. the vendor alone) */
    const char *s = getenv("ISTHMUS_SITE");
    int me = s && *s ? atoi(s) : -1;
    site = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&me, 1, MPI_INT, site, 1, MPI_INT, MPI_COMM_WORLD);
    spans = malloc(sizeof *spans * SLOT);
    arena_cap = (size_t)size * SLOT * 8 + 65536;
    arena = malloc(arena_cap);
    /* a multiple of 64 bytes: MPICH 4.0.2's MPI_Win_allocate (alone, on one node) places
     * puts away from where the target's own base pointer says its window starts when the
     * size is not a multiple of 16 (2 ranks, 32776 bytes: 8 bytes early; tests/mpi/README.md) */
    MPI_Aint bytes = ((MPI_Aint)size * SLOT + 4 * (MPI_Aint)size + 63) / 64 * 64;
    CHECK_RC(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win), "allocate");
    memset(mem, 0, (size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && !strcmp(argv[1], "frames")) {
        frames_mode();
    } else {
        fence_phase();
        reset();
        flush_phase((int *)(mem + (size_t)size * SLOT));
        reset();
        pscw_phase();
        reset();
        lock_phase();
        reset();
        order_phase();
    }
    MPI_Win_free(&win);
    free(spans);
    free(arena);
    free(site);
    int rc = check_finish(argc > 1 ? "rma_putbatch frames" : "rma_putbatch");
    MPI_Finalize();
    return rc;
}
