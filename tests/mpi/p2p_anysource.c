/*
 * p2p_anysource: wildcard receives and the non-overtaking rule.
 * Part 1: for a few receivers (rank 0, size/2, size-1), every other rank
 * sends K messages (varying tags, a mix of MPI_Send, MPI_Isend and MPI_Ssend,
 * and every 50th message 64 KB so eager and rendezvous protocols mix);
 * the receiver takes them all with MPI_ANY_SOURCE/MPI_ANY_TAG and checks
 * that every (source, seq) arrives exactly once and, per source, in send
 * order (both messages match the wildcard receive, so they may not
 * overtake), and that the status tag/count agree with the payload.
 * Part 2 (on a dup of MPI_COMM_WORLD, started without synchronisation, so
 * it also checks that wildcard receives on WORLD never match messages of
 * another communicator): each sender Isends interleaved tags A,B,C; the
 * receiver first takes all tag B with (ANY_SOURCE, B), then all tag A with
 * (ANY_SOURCE, A), then tag C with (specific source, ANY_TAG);
 * per-(source, tag) order is checked.  Senders use Isend so nothing relies on buffering.
 * Works for any size >= 1 (nothing is sent with one rank).
 */
#include "check.h"
#include <string.h>

enum { K = 400, BIGN = 16384, K2 = 150 };

static int rank, size;

static void part1(int root, int tagbase)
{
    if (rank != root) {
        int *buf = malloc(sizeof(int) * BIGN);
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * K);
        int **ibufs = malloc(sizeof(int *) * K);
        int nreq = 0;
        for (int seq = 0; seq < K; seq++) {
            int n = (seq % 50 == 49) ? BIGN : 3 + seq % 5;
            int tag = tagbase + seq % 7;
            int *p = buf;
            if (seq % 3 == 1) { /* Isend needs its own buffer until completion */
                p = malloc(sizeof(int) * (size_t)n);
                ibufs[nreq] = p;
            }
            p[0] = rank;
            p[1] = seq;
            p[2] = tag;
            for (int i = 3; i < n; i++)
                p[i] = rank ^ seq ^ i;
            if (seq % 3 == 1)
                MPI_Isend(p, n, MPI_INT, root, tag, MPI_COMM_WORLD, &reqs[nreq++]);
            else if (seq % 3 == 2)
                MPI_Ssend(p, n, MPI_INT, root, tag, MPI_COMM_WORLD);
            else
                MPI_Send(p, n, MPI_INT, root, tag, MPI_COMM_WORLD);
        }
        MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < nreq; i++)
            free(ibufs[i]);
        free(ibufs);
        free(reqs);
        free(buf);
        return;
    }
    int *next = calloc((size_t)size, sizeof(int));
    int *buf = malloc(sizeof(int) * BIGN);
    int total = (size - 1) * K;
    for (int m = 0; m < total; m++) {
        MPI_Status st;
        MPI_Recv(buf, BIGN, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        int src = st.MPI_SOURCE, cnt = -1;
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(src >= 0 && src < size && src != root, "root %d: bad source %d", root, src);
        if (src < 0 || src >= size || src == root)
            continue;
        int seq = buf[1];
        CHECK(buf[0] == src, "root %d: payload source %d, status source %d", root, buf[0], src);
        CHECK(seq == next[src], "root %d: from %d got seq %d, expected %d (overtaking/loss)",
              root, src, seq, next[src]);
        int n = (seq % 50 == 49) ? BIGN : 3 + seq % 5;
        CHECK(cnt == n, "root %d: from %d seq %d count %d, expected %d", root, src, seq, cnt, n);
        CHECK(st.MPI_TAG == tagbase + seq % 7 && buf[2] == st.MPI_TAG,
              "root %d: from %d seq %d tag %d (payload %d)", root, src, seq, st.MPI_TAG, buf[2]);
        int bad = -1;
        for (int i = 3; i < cnt && i < n && bad < 0; i++)
            if (buf[i] != (src ^ seq ^ i))
                bad = i;
        CHECK(bad < 0, "root %d: from %d seq %d data mismatch at %d", root, src, seq, bad);
        next[src] = seq + 1;
    }
    for (int s = 0; s < size; s++)
        if (s != root)
            CHECK(next[s] == K, "root %d: from %d received %d of %d", root, s, next[s], K);
    free(next);
    free(buf);
}

static void part2(MPI_Comm comm, int root, int tagA, int tagB, int tagC)
{
    if (rank != root) {
        MPI_Request reqs[3 * K2];
        int (*msg)[2] = malloc(sizeof(int[2]) * 3 * K2);
        for (int seq = 0; seq < K2; seq++) {
            int tags[3] = {tagA, tagB, tagC};
            for (int t = 0; t < 3; t++) {
                int k = seq * 3 + t;
                msg[k][0] = rank;
                msg[k][1] = seq;
                MPI_Isend(msg[k], 2, MPI_INT, root, tags[t], comm, &reqs[k]);
            }
        }
        MPI_Waitall(3 * K2, reqs, MPI_STATUSES_IGNORE);
        free(msg);
        return;
    }
    int *next = malloc(sizeof(int) * (size_t)size);
    int tags[2] = {tagB, tagA};
    for (int t = 0; t < 2; t++) {
        for (int s = 0; s < size; s++)
            next[s] = 0;
        for (int m = 0; m < (size - 1) * K2; m++) {
            int in[2] = {-1, -1};
            MPI_Status st;
            MPI_Recv(in, 2, MPI_INT, MPI_ANY_SOURCE, tags[t], comm, &st);
            int src = st.MPI_SOURCE;
            CHECK(st.MPI_TAG == tags[t], "part2: wanted tag %d got %d", tags[t], st.MPI_TAG);
            CHECK(src >= 0 && src < size && src != root && in[0] == src,
                  "part2: source %d payload %d", src, in[0]);
            if (src < 0 || src >= size || src == root)
                continue;
            CHECK(in[1] == next[src], "part2 tag %d: from %d seq %d, expected %d", tags[t], src,
                  in[1], next[src]);
            next[src] = in[1] + 1;
        }
    }
    /* only tag C messages are left: specific source, ANY_TAG */
    for (int s = 0; s < size; s++) {
        if (s == root)
            continue;
        for (int seq = 0; seq < K2; seq++) {
            int in[2] = {-1, -1};
            MPI_Status st;
            MPI_Recv(in, 2, MPI_INT, s, MPI_ANY_TAG, comm, &st);
            CHECK(st.MPI_SOURCE == s && st.MPI_TAG == tagC && in[0] == s && in[1] == seq,
                  "part2 ANY_TAG from %d: src %d tag %d payload %d/%d, expected seq %d", s,
                  st.MPI_SOURCE, st.MPI_TAG, in[0], in[1], seq);
        }
    }
    free(next);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int roots[3] = {0, size / 2, size - 1};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && (roots[i] == roots[i - 1] || roots[i] == roots[0]))
            continue;
        part1(roots[i], 10 + i * 10);
        /* part 2 runs on a duplicate communicator with no barrier in
         * between: senders that finished part 1 already send part-2
         * messages while the root still receives part 1 with ANY_SOURCE/
         * ANY_TAG on MPI_COMM_WORLD, which must not match them. */
        part2(dup, roots[i], 100 + i * 10, 101 + i * 10, 102 + i * 10);
    }

    MPI_Comm_free(&dup);
    int rc = check_finish("p2p_anysource");
    MPI_Finalize();
    return rc;
}
