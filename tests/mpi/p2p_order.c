/*
 * p2p_order: message ordering (non-overtaking) per (source, tag, comm).
 * Each rank streams NTOT messages to its peer (far: (r+size/2)%size, then
 * near: r^1): ~10800 one-int messages with tag 1, interleaved with tag 2
 * (1..17 ints) and, every 500th, tag 3 messages of 200 KB, so eager and
 * rendezvous protocols alternate.  The payload carries the global sequence
 * number k, from which the receiver derives the expected tag and size.
 *   round A: the receiver takes everything with MPI_ANY_TAG from the peer:
 *            all messages match, so they must arrive exactly in send order;
 *   round B: the receiver takes tag 3, then tag 2, then tag 1 (the reverse
 *            of how they are interleaved): per tag, send order must hold;
 *   round C: the receiver posts Irecvs in reverse tag order while the
 *            sender uses blocking MPI_Send in forward order (legal: the
 *            receives are already posted); matched by tag.
 * Senders use Isend in rounds A/B, so nothing relies on buffering.
 * Works for any size >= 1 (self-messages at size 1).
 */
#include "check.h"
#include <string.h>

enum { NTOT = 12000, BIGN = 50000 };

static int rank, size;

static int tag_of(int k) { return k % 500 == 250 ? 3 : (k % 10 == 5 ? 2 : 1); }
static int len_of(int k)
{
    int t = tag_of(k);
    return t == 3 ? BIGN : (t == 2 ? 1 + k % 17 : 1);
}
static int fillv(int k, int i) { return k * 31 + i; }

struct sender {
    MPI_Request *reqs;
    int *ks;     /* one-int payloads */
    int **bufs;  /* multi-int payloads */
};

static void start_stream(struct sender *s, int to, MPI_Comm comm)
{
    s->reqs = malloc(sizeof(MPI_Request) * NTOT);
    s->ks = malloc(sizeof(int) * NTOT);
    s->bufs = calloc(NTOT, sizeof(int *));
    for (int k = 0; k < NTOT; k++) {
        int n = len_of(k);
        int *p = &s->ks[k];
        if (n > 1) {
            p = s->bufs[k] = malloc(sizeof(int) * (size_t)n);
            for (int i = 1; i < n; i++)
                p[i] = fillv(k, i);
        }
        p[0] = k;
        MPI_Isend(p, n, MPI_INT, to, tag_of(k), comm, &s->reqs[k]);
    }
}

static void finish_stream(struct sender *s)
{
    MPI_Waitall(NTOT, s->reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < NTOT; k++)
        free(s->bufs[k]);
    free(s->bufs);
    free(s->ks);
    free(s->reqs);
}

static void check_msg(const int *buf, const MPI_Status *st, int from, int want_k,
                      const char *what)
{
    int cnt = -1;
    MPI_Get_count(st, MPI_INT, &cnt);
    int k = buf[0];
    CHECK(k == want_k, "%s: got seq %d, expected %d", what, k, want_k);
    if (k < 0 || k >= NTOT)
        return;
    CHECK(st->MPI_SOURCE == from && st->MPI_TAG == tag_of(k) && cnt == len_of(k),
          "%s: seq %d src %d tag %d count %d (expected %d %d %d)", what, k, st->MPI_SOURCE,
          st->MPI_TAG, cnt, from, tag_of(k), len_of(k));
    int bad = -1;
    for (int i = 1; i < cnt && i < len_of(k) && bad < 0; i++)
        if (buf[i] != fillv(k, i))
            bad = i;
    CHECK(bad < 0, "%s: seq %d data mismatch at %d", what, k, bad);
}

static void round_any_tag(int to, int from, const char *pname)
{
    char what[64];
    snprintf(what, sizeof what, "%s ANY_TAG", pname);
    struct sender s;
    start_stream(&s, to, MPI_COMM_WORLD);
    int *buf = malloc(sizeof(int) * BIGN);
    for (int k = 0; k < NTOT; k++) {
        MPI_Status st;
        MPI_Recv(buf, BIGN, MPI_INT, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        check_msg(buf, &st, from, k, what);
    }
    finish_stream(&s);
    free(buf);
}

static void round_by_tag(int to, int from, const char *pname)
{
    char what[64];
    struct sender s;
    start_stream(&s, to, MPI_COMM_WORLD);
    int *buf = malloc(sizeof(int) * BIGN);
    for (int t = 3; t >= 1; t--) {
        snprintf(what, sizeof what, "%s tag %d", pname, t);
        for (int k = 0; k < NTOT; k++) {
            if (tag_of(k) != t)
                continue;
            MPI_Status st;
            MPI_Recv(buf, BIGN, MPI_INT, from, t, MPI_COMM_WORLD, &st);
            check_msg(buf, &st, from, k, what);
        }
    }
    finish_stream(&s);
    free(buf);
}

static void round_reverse_post(int to, int from, const char *pname)
{
    enum { NT = 6 };
    static const int lens[NT] = {1000, BIGN, 1, 0, 7, BIGN};
    int *rb[NT], *sb[NT];
    MPI_Request rr[NT];
    for (int t = 0; t < NT; t++) {
        rb[t] = malloc(sizeof(int) * (size_t)(lens[t] + 1));
        sb[t] = malloc(sizeof(int) * (size_t)(lens[t] + 1));
        for (int i = 0; i < lens[t]; i++) {
            sb[t][i] = rank * 7 + t * 100 + i;
            rb[t][i] = -1;
        }
    }
    for (int t = NT - 1; t >= 0; t--)
        MPI_Irecv(rb[t], lens[t], MPI_INT, from, 20 + t, MPI_COMM_WORLD, &rr[t]);
    /* my receives are posted; my sender may now block in MPI_Send safely.
     * A self-message (size 1) needs no handshake: the Irecvs are posted. */
    for (int t = 0; t < NT; t++)
        MPI_Send(sb[t], lens[t], MPI_INT, to, 20 + t, MPI_COMM_WORLD);
    MPI_Status st[NT];
    MPI_Waitall(NT, rr, st);
    for (int t = 0; t < NT; t++) {
        int cnt = -1, bad = -1;
        MPI_Get_count(&st[t], MPI_INT, &cnt);
        CHECK(st[t].MPI_SOURCE == from && st[t].MPI_TAG == 20 + t && cnt == lens[t],
              "%s reverse-post tag %d: src %d tag %d count %d", pname, 20 + t,
              st[t].MPI_SOURCE, st[t].MPI_TAG, cnt);
        for (int i = 0; i < lens[t] && bad < 0; i++)
            if (rb[t][i] != from * 7 + t * 100 + i)
                bad = i;
        CHECK(bad < 0, "%s reverse-post tag %d: mismatch at %d", pname, 20 + t, bad);
        free(rb[t]);
        free(sb[t]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int to[2] = {peer_far_to(rank, size), peer_near(rank, size)};
    int from[2] = {peer_far_from(rank, size), peer_near(rank, size)};
    const char *pname[2] = {"far", "near"};
    for (int p = 0; p < 2; p++) {
        double t0 = MPI_Wtime();
        round_any_tag(to[p], from[p], pname[p]);
        double t1 = MPI_Wtime();
        round_by_tag(to[p], from[p], pname[p]);
        double t2 = MPI_Wtime();
        round_reverse_post(to[p], from[p], pname[p]);
        double t3 = MPI_Wtime();
        if (rank == 0)
            printf("p2p_order: info: %s: ANY_TAG %.2f s, by tag %.2f s, reverse post %.2f s\n",
                   pname[p], t1 - t0, t2 - t1, t3 - t2);
    }

    int rc = check_finish("p2p_order");
    MPI_Finalize();
    return rc;
}
