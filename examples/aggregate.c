/* aggregate.c: many small updates to random ranks, sent one MPI message each ("naive")
 * or through isthmus-patterns' aggregator ("agg"), which packs them per destination site
 * (docs/patterns.md). Every step each rank sends MSGS updates of BYTES bytes to ranks
 * drawn from its own seeded generator, then the step ends (naive: every rank receives
 * the updates it knows are coming, by replaying the generators; agg: a flush).
 *
 * Every update carries its source and a sequence number per (source, destination) and
 * bytes derived from both; the receiver checks each, that they arrive in order, and at
 * the end that it got exactly what the generators say it should. Rank 0 prints
 * "aggregate: MODE ranks N steps S msgs M bytes B: T s, T/step ms per step (slowest
 * X ms)" (the slowest step of any rank) and
 * "aggregate: ok" when every rank's checks passed.
 *
 * build: isthmus-cc -O2 -o aggregate aggregate.c -listhmus-patterns
 * usage: aggregate naive|agg [STEPS [MSGS [BYTES [THRESHOLD]]]]  (defaults 5 200 16 8192)
 */
#include <isthmus_patterns.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct update {
    int32_t source, seq;
} update;

typedef struct state {
    int rank, size, bytes;
    int32_t *next_seq;   /* [size]: the next sequence number to send to each rank */
    int32_t *expect_seq; /* [size]: the next one expected from each rank */
    long bad;
} state;

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint64_t seed(int source, int step)
{
    return 0x9E3779B97F4A7C15ull * (uint64_t)(source + 1) + (uint64_t)step * 7919 + 1;
}

static void fill(unsigned char *p, int bytes, int source, int seq)
{
    update u = {source, seq};
    memcpy(p, &u, sizeof u);
    for (int i = (int)sizeof u; i < bytes; i++)
        p[i] = (unsigned char)(source * 31 + seq * 7 + i);
}

static void check(state *st, int source, const unsigned char *p, size_t len)
{
    update u;
    if (len != (size_t)st->bytes || source < 0 || source >= st->size) {
        st->bad++;
        return;
    }
    memcpy(&u, p, sizeof u);
    int ok = u.source == source && u.seq == st->expect_seq[source];
    for (int i = (int)sizeof u; ok && i < st->bytes; i++)
        ok = p[i] == (unsigned char)(source * 31 + u.seq * 7 + i);
    if (!ok && st->bad++ < 3)
        fprintf(stderr, "aggregate: rank %d: from rank %d got seq %d, expected %d%s\n", st->rank,
                source, u.seq, st->expect_seq[source], u.source == source ? "" : " (wrong source)");
    st->expect_seq[source] = u.seq + 1;
}

static void on_update(int source, int tag, const void *data, size_t len, void *ctx)
{
    (void)tag;
    check(ctx, source, data, len);
}

/* How many updates rank `me` gets from each source in step: by replaying the generators. */
static long incoming(const state *st, int step, int msgs, int me)
{
    long n = 0;
    for (int src = 0; src < st->size; src++) {
        uint64_t x = seed(src, step);
        for (int i = 0; i < msgs; i++)
            n += (int)(next(&x) % (uint64_t)st->size) == me;
    }
    return n;
}

static void naive_step(state *st, int step, int msgs, unsigned char *out)
{
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)msgs);
    uint64_t x = seed(st->rank, step);
    for (int i = 0; i < msgs; i++) {
        int dest = (int)(next(&x) % (uint64_t)st->size);
        unsigned char *p = out + (size_t)i * st->bytes;
        fill(p, st->bytes, st->rank, st->next_seq[dest]++);
        MPI_Isend(p, st->bytes, MPI_BYTE, dest, step, MPI_COMM_WORLD, &req[i]);
    }
    unsigned char *in = malloc((size_t)st->bytes);
    for (long n = incoming(st, step, msgs, st->rank); n > 0; n--) {
        MPI_Status s;
        MPI_Recv(in, st->bytes, MPI_BYTE, MPI_ANY_SOURCE, step, MPI_COMM_WORLD, &s);
        check(st, s.MPI_SOURCE, in, (size_t)st->bytes);
    }
    MPI_Waitall(msgs, req, MPI_STATUSES_IGNORE);
    free(in);
    free(req);
}

static void agg_step(state *st, ism_pat_agg *agg, int step, int msgs, unsigned char *out)
{
    uint64_t x = seed(st->rank, step);
    for (int i = 0; i < msgs; i++) {
        int dest = (int)(next(&x) % (uint64_t)st->size);
        fill(out, st->bytes, st->rank, st->next_seq[dest]++);
        if (ism_pat_agg_send(agg, dest, 0, out, (size_t)st->bytes) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (ism_pat_agg_flush(agg) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    state st = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &st.size);
    int agg_mode = argc > 1 && strcmp(argv[1], "agg") == 0;
    int steps = argc > 2 ? atoi(argv[2]) : 5, msgs = argc > 3 ? atoi(argv[3]) : 200;
    st.bytes = argc > 4 ? atoi(argv[4]) : 16;
    long threshold = argc > 5 ? atol(argv[5]) : 8192;
    if (argc < 2 || (!agg_mode && strcmp(argv[1], "naive") != 0) || steps < 1 || msgs < 1 ||
        st.bytes < (int)sizeof(update) || threshold < 1) {
        if (st.rank == 0)
            fprintf(stderr, "usage: aggregate naive|agg [STEPS [MSGS [BYTES [THRESHOLD]]]]: "
                    "STEPS, MSGS, THRESHOLD positive, BYTES at least %zu\n", sizeof(update));
        MPI_Finalize();
        return 2;
    }
    st.next_seq = calloc((size_t)st.size, sizeof(int32_t));
    st.expect_seq = calloc((size_t)st.size, sizeof(int32_t));
    unsigned char *out = malloc((size_t)msgs * st.bytes);
    ism_pat_agg *agg = NULL;
    if (agg_mode && ism_pat_agg_create(MPI_COMM_WORLD, (size_t)threshold, on_update, &st, &agg))
        MPI_Abort(MPI_COMM_WORLD, 3);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1); /* the timed steps, phase 1 of a trace */
    double t0 = MPI_Wtime();
    double slowest = 0;
    for (int step = 0; step < steps; step++) {
        double ts = MPI_Wtime();
        if (agg_mode)
            agg_step(&st, agg, step, msgs, out);
        else
            naive_step(&st, step, msgs, out);
        ts = MPI_Wtime() - ts;
        slowest = ts > slowest ? ts : slowest;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    MPI_Pcontrol(0);

    long expected_total = 0, got_total = 0;
    for (int step = 0; step < steps; step++)
        expected_total += incoming(&st, step, msgs, st.rank);
    for (int src = 0; src < st.size; src++)
        got_total += st.expect_seq[src];
    long packets = 0;
    if (agg) {
        ism_pat_agg_stats s;
        ism_pat_agg_get_stats(agg, &s);
        packets = s.packets;
        if (ism_pat_agg_free(&agg) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (got_total != expected_total) {
        fprintf(stderr, "aggregate: rank %d: received %ld updates, the generators say %ld\n",
                st.rank, got_total, expected_total);
        st.bad++;
    }
    long bad = 0, all_packets = 0;
    MPI_Allreduce(&st.bad, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&packets, &all_packets, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    double slowest_all = 0;
    MPI_Reduce(&slowest, &slowest_all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (st.rank == 0) {
        printf("aggregate: %s ranks %d steps %d msgs %d bytes %d: %.6f s, %.3f ms per step "
               "(slowest %.3f ms)", argv[1], st.size, steps, msgs, st.bytes, t, 1e3 * t / steps,
               1e3 * slowest_all);
        if (agg_mode)
            printf(", %ld packets for %ld updates", all_packets, (long)steps * msgs * st.size);
        printf("\n%s\n", bad ? "aggregate: FAILED" : "aggregate: ok");
    }
    free(out);
    free(st.next_seq);
    free(st.expect_seq);
    MPI_Finalize();
    return bad ? 1 : 0;
}
