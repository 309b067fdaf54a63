/*
 * p2p_early: rendezvous messages whose first bytes travel ahead of the receiver's
 * clear-to-send (isthmus's "early data" across sites; any MPI must pass it).
 * Every rank sends to its far peer and receives from its far-from peer:
 *   - late receives: two messages (300 KiB, 100 KiB) sent before the receiver posts
 *     anything, received in the reverse order of sending (by tag);
 *   - a receive posted before the message is sent;
 *   - a strided type (every other double) sent, received as contiguous doubles, both
 *     late and posted first;
 *   - MPI_Mprobe, a pause, then MPI_Mrecv of a 200 KiB message;
 *   - MPI_Issend of 100 KiB whose receiver posts the receive only when the sender,
 *     after 150 ms of MPI_Test finding it incomplete, tells it to;
 *   - argument "pingpong [KiB]" instead: 20 ping-pong rounds of 200 KiB (or KiB) between
 *     rank r and r + size/2, printing the bytes each rank sent, so a test can compare
 *     them with the gateways' count of early data.
 * Every byte is checked; data is a function of (sender, tag, index).
 * Works for any size >= 1 (a rank is its own far peer at size 1).
 */
#include "check.h"
#include <string.h>
#include <time.h>

static int rank, size, to, from;

static unsigned char byte_of(int sender, int tag, size_t i)
{
    return (unsigned char)((size_t)sender * 131u + (size_t)tag * 17u + i * 7u + (i >> 9));
}

static void fill(unsigned char *b, size_t n, int sender, int tag)
{
    for (size_t i = 0; i < n; i++)
        b[i] = byte_of(sender, tag, i);
}

static int bad_bytes(const unsigned char *b, size_t n, int sender, int tag)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != byte_of(sender, tag, i);
    return bad;
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void check_status(const MPI_Status *st, int tag, int bytes, const char *what)
{
    int cnt = -1;
    MPI_Get_count(st, MPI_BYTE, &cnt);
    CHECK(st->MPI_SOURCE == from && st->MPI_TAG == tag && cnt == bytes,
          "%s: source %d tag %d count %d, expected %d %d %d", what, st->MPI_SOURCE, st->MPI_TAG,
          cnt, from, tag, bytes);
}

static void late_receives(void)
{
    const int n1 = 300 << 10, n2 = 100 << 10;
    unsigned char *s1 = malloc(n1), *s2 = malloc(n2), *r1 = calloc(1, n1), *r2 = calloc(1, n2);
    fill(s1, n1, rank, 1);
    fill(s2, n2, rank, 2);
    MPI_Request sr[2];
    MPI_Isend(s1, n1, MPI_BYTE, to, 1, MPI_COMM_WORLD, &sr[0]);
    MPI_Isend(s2, n2, MPI_BYTE, to, 2, MPI_COMM_WORLD, &sr[1]);
    pause_ms(150); /* the announcements and early bytes arrive with no receive posted */
    MPI_Status st;
    MPI_Recv(r2, n2, MPI_BYTE, from, 2, MPI_COMM_WORLD, &st);
    check_status(&st, 2, n2, "late, second message");
    MPI_Recv(r1, n1, MPI_BYTE, from, 1, MPI_COMM_WORLD, &st);
    check_status(&st, 1, n1, "late, first message");
    MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
    int b1 = bad_bytes(r1, n1, from, 1), b2 = bad_bytes(r2, n2, from, 2);
    CHECK(b1 == 0 && b2 == 0, "late receives: %d and %d bytes wrong", b1, b2);
    free(s1), free(s2), free(r1), free(r2);
}

static void posted_first(void)
{
    const int n = 400 << 10;
    unsigned char *s = malloc(n), *r = calloc(1, n);
    fill(s, n, rank, 3);
    MPI_Request rq;
    MPI_Irecv(r, n, MPI_BYTE, from, 3, MPI_COMM_WORLD, &rq);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(s, n, MPI_BYTE, to, 3, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Wait(&rq, &st);
    check_status(&st, 3, n, "posted first");
    int b = bad_bytes(r, n, from, 3);
    CHECK(b == 0, "receive posted first: %d bytes wrong", b);
    free(s), free(r);
}

/* every other double of 2n sent, n contiguous doubles received */
static void strided(int late)
{
    const int n = 40000, tag = late ? 4 : 5;
    double *s = malloc(sizeof(double) * 2 * (size_t)n), *r = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < 2 * n; i++)
        s[i] = i % 2 ? -1.0 : rank * 1e6 + i / 2 + tag;
    for (int i = 0; i < n; i++)
        r[i] = -2.0;
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Request rq = MPI_REQUEST_NULL, sq;
    if (!late)
        MPI_Irecv(r, n, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, &rq);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Isend(s, 1, vec, to, tag, MPI_COMM_WORLD, &sq);
    if (late) {
        pause_ms(100);
        MPI_Irecv(r, n, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, &rq);
    }
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += r[i] != from * 1e6 + i + tag;
    CHECK(bad == 0, "strided type (%s): %d of %d doubles wrong", late ? "late" : "posted first",
          bad, n);
    MPI_Type_free(&vec);
    free(s), free(r);
}

static void matched_probe(void)
{
    const int n = 200 << 10;
    unsigned char *s = malloc(n), *r = calloc(1, n);
    fill(s, n, rank, 6);
    MPI_Request sq;
    MPI_Isend(s, n, MPI_BYTE, to, 6, MPI_COMM_WORLD, &sq);
    MPI_Message msg;
    MPI_Status st;
    MPI_Mprobe(from, 6, MPI_COMM_WORLD, &msg, &st);
    check_status(&st, 6, n, "Mprobe");
    pause_ms(50);
    MPI_Mrecv(r, n, MPI_BYTE, &msg, &st);
    check_status(&st, 6, n, "Mrecv");
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    int b = bad_bytes(r, n, from, 6);
    CHECK(b == 0, "Mprobe and Mrecv: %d bytes wrong", b);
    free(s), free(r);
}

static void synchronous(void)
{
    const int n = 100 << 10;
    unsigned char *s = malloc(n), *r = calloc(1, n);
    fill(s, n, rank, 7);
    MPI_Request sq, gq;
    int done = 0, go = 1;
    MPI_Issend(s, n, MPI_BYTE, to, 7, MPI_COMM_WORLD, &sq);
    /* the receiver posts its receive only when told to, after 150 ms of testing here */
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.15 && !done)
        MPI_Test(&sq, &done, MPI_STATUS_IGNORE);
    CHECK(!done, "Issend of %d bytes completed before the receive was posted", n);
    MPI_Isend(&go, 1, MPI_INT, to, 8, MPI_COMM_WORLD, &gq);
    MPI_Recv(&go, 1, MPI_INT, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(r, n, MPI_BYTE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    MPI_Wait(&gq, MPI_STATUS_IGNORE);
    int b = bad_bytes(r, n, from, 7);
    CHECK(b == 0, "Ssend: %d bytes wrong", b);
    free(s), free(r);
}

/* Rank r of the lower half and rank r + size/2 take turns: the lower one sends, the upper
 * one receives and answers. Each message's early bytes are given back before the answer
 * (or the next message) leaves, so with an ISTHMUS_EARLY of at least n bytes every byte
 * goes early. At odd sizes the last rank sits out. */
static void ping_pong(int n, long long *sent, int *peer)
{
    const int rounds = 20, half = size / 2;
    unsigned char *s = malloc(n), *r = calloc(1, n);
    *peer = -1;
    if (half == 0 || rank >= 2 * half)
        goto out;
    int lower = rank < half;
    *peer = lower ? rank + half : rank - half;
    for (int k = 0; k < rounds; k++) {
        fill(s, n, rank, 100 + k);
        MPI_Status st;
        if (lower)
            MPI_Send(s, n, MPI_BYTE, *peer, 100 + k, MPI_COMM_WORLD);
        MPI_Recv(r, n, MPI_BYTE, *peer, 100 + k, MPI_COMM_WORLD, &st);
        if (!lower)
            MPI_Send(s, n, MPI_BYTE, *peer, 100 + k, MPI_COMM_WORLD);
        int b = bad_bytes(r, n, *peer, 100 + k);
        CHECK(b == 0, "ping-pong round %d: %d bytes wrong", k, b);
        *sent += n;
    }
out:
    free(s), free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = peer_far_to(rank, size);
    from = peer_far_from(rank, size);
    if (argc > 1 && !strcmp(argv[1], "pingpong")) {
        long long sent = 0;
        int peer, kib = argc > 2 ? atoi(argv[2]) : 200;
        if (kib <= 0 || kib > (1 << 20)) {
            if (rank == 0)
                fprintf(stderr, "p2p_early: pingpong size %s is not a number of KiB in "
                                "1..1048576\n", argv[2]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        ping_pong(kib << 10, &sent, &peer);
        printf("p2p_early: rank %d sent %lld bytes to rank %d\n", rank, sent, peer);
        fflush(stdout);
    } else {
        late_receives();
        posted_first();
        strided(1);
        strided(0);
        matched_probe();
        synchronous();
    }
    int rc = check_finish("p2p_early");
    MPI_Finalize();
    return rc;
}
