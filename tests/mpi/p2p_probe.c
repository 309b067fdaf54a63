/*
 * p2p_probe: MPI_Probe/MPI_Iprobe and matched probes (Mprobe/Improbe).
 *  1. far: each rank Isends a message whose length and tag depend on the
 *     sender; the receiver Probes (specific source, ANY_TAG), sizes its
 *     buffer with Get_count and receives exactly that.
 *  2. ANY_SOURCE/ANY_TAG: rank 0 (and then rank size/2) probes messages of
 *     sender-dependent size from every other rank and receives each with
 *     the source/tag/count the probe reported.
 *  3. a 5-byte message: Get_count(MPI_INT) is MPI_UNDEFINED, Get_count
 *     and Get_elements with MPI_BYTE give 5.
 *  4. Iprobe: false when nothing matching was sent (after a barrier, on
 *     WORLD and on a dup; a pending message with another tag must not
 *     match); true for a message already found by Probe; an Iprobe loop
 *     sees a message that is on its way.
 *  5. Mprobe/Mrecv and Improbe/Imrecv: a matched message is removed from
 *     matching, so a following wildcard Recv gets the next message.
 *  6. MPI_ERROR of a status is left alone by single completions (Recv, Mprobe, Mrecv,
 *     Wait, Test: "may be updated only by the functions ... which return multiple
 *     statuses", MPI 3.1 §3.2.5), for messages from the far peer.  (Not checked for
 *     Probe: MPICH 4.0.2's MPI_Probe sets it to MPI_SUCCESS.)
 * Senders use Isend, so nothing relies on buffering.  Works for size >= 1.
 */
#include "check.h"
#include <string.h>

static int rank, size;

static int len_for(int sender) { return 100 + sender * 37 + (sender % 2) * 20000; }

static void far_probe(void)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int n = len_for(rank);
    int *s = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        s[i] = rank * 3 + i;
    MPI_Request req;
    MPI_Isend(s, n, MPI_INT, to, 40 + rank % 3, MPI_COMM_WORLD, &req);

    MPI_Status st;
    MPI_Probe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    int cnt = -1;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 40 + from % 3 && cnt == len_for(from),
          "far probe: src %d tag %d count %d, expected %d %d %d", st.MPI_SOURCE, st.MPI_TAG, cnt,
          from, 40 + from % 3, len_for(from));
    if (cnt < 0)
        cnt = 0;
    int *r = malloc(sizeof(int) * (size_t)(cnt + 1));
    MPI_Status st2;
    MPI_Recv(r, cnt, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2);
    int cnt2 = -1, bad = -1;
    MPI_Get_count(&st2, MPI_INT, &cnt2);
    CHECK(cnt2 == cnt, "far probe: received %d after probing %d", cnt2, cnt);
    for (int i = 0; i < cnt2 && bad < 0; i++)
        if (r[i] != from * 3 + i)
            bad = i;
    CHECK(bad < 0, "far probe: mismatch at %d", bad);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    free(s);
    free(r);
}

static void wildcard_probe(int root, int tag)
{
    /* own communicator: a rank that is done here may already send the next
     * step's messages, which a wildcard probe on WORLD would see */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rank != root) {
        int n = len_for(rank);
        int *s = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            s[i] = rank + i;
        MPI_Request req;
        MPI_Isend(s, n, MPI_INT, root, tag + rank, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        free(s);
        MPI_Comm_free(&comm);
        return;
    }
    int *seen = calloc((size_t)size, sizeof(int));
    for (int m = 0; m < size - 1; m++) {
        MPI_Status st;
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
        int src = st.MPI_SOURCE, cnt = -1;
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(src >= 0 && src < size && src != root && cnt >= 0,
              "wildcard probe: source %d count %d", src, cnt);
        if (src < 0 || src >= size || src == root || cnt < 0)
            break;
        CHECK(!seen[src], "wildcard probe: source %d twice", src);
        seen[src] = 1;
        CHECK(st.MPI_TAG == tag + src && cnt == len_for(src),
              "wildcard probe from %d: tag %d count %d", src, st.MPI_TAG, cnt);
        int *r = malloc(sizeof(int) * (size_t)(cnt + 1));
        MPI_Status st2;
        MPI_Recv(r, cnt, MPI_INT, src, st.MPI_TAG, comm, &st2);
        int bad = -1;
        for (int i = 0; i < cnt && bad < 0; i++)
            if (r[i] != src + i)
                bad = i;
        CHECK(bad < 0 && st2.MPI_SOURCE == src, "wildcard probe from %d: mismatch at %d", src,
              bad);
        free(r);
    }
    free(seen);
    MPI_Comm_free(&comm);
}

static void odd_bytes(void)
{
    int peer = peer_near(rank, size);
    unsigned char s[5] = {1, 2, 3, 4, 5}, r[8] = {0};
    MPI_Request req;
    MPI_Isend(s, 5, MPI_BYTE, peer, 60, MPI_COMM_WORLD, &req);
    MPI_Status st;
    MPI_Probe(peer, 60, MPI_COMM_WORLD, &st);
    int ci = -7, cb = -7, eb = -7;
    MPI_Get_count(&st, MPI_INT, &ci);
    MPI_Get_count(&st, MPI_BYTE, &cb);
    MPI_Get_elements(&st, MPI_BYTE, &eb);
    CHECK(ci == MPI_UNDEFINED, "5 bytes: Get_count(MPI_INT) = %d, expected MPI_UNDEFINED", ci);
    CHECK(cb == 5 && eb == 5, "5 bytes: Get_count(BYTE) %d Get_elements(BYTE) %d", cb, eb);
    MPI_Recv(r, 8, MPI_BYTE, peer, 60, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &cb);
    CHECK(cb == 5 && memcmp(r, s, 5) == 0 && r[5] == 0, "5 bytes: received %d bytes", cb);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static void iprobe_checks(void)
{
    int flag = -1;
    MPI_Status st;
    /* between these two barriers nobody sends anything */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 0, "Iprobe(ANY, ANY) true with nothing sent (src %d tag %d)", st.MPI_SOURCE,
          st.MPI_TAG);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    flag = -1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag, MPI_STATUS_IGNORE);
    CHECK(flag == 0, "Iprobe on a fresh dup true");
    MPI_Barrier(MPI_COMM_WORLD);

    /* a pending message with tag 70 must not satisfy tag 71 or another comm */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int v = rank, in = -1;
    MPI_Request req;
    MPI_Isend(&v, 1, MPI_INT, to, 70, MPI_COMM_WORLD, &req);
    MPI_Probe(from, 70, MPI_COMM_WORLD, &st); /* now it has arrived */
    flag = -1;
    MPI_Iprobe(from, 70, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 1 && st.MPI_SOURCE == from && st.MPI_TAG == 70,
          "Iprobe after Probe: flag %d src %d tag %d", flag, st.MPI_SOURCE, st.MPI_TAG);
    flag = -1;
    MPI_Iprobe(from, 71, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 0, "Iprobe(tag 71) true while only tag 70 is pending");
    flag = -1;
    MPI_Iprobe(MPI_ANY_SOURCE, 70, dup, &flag, &st); /* tag 70 is never used on dup */
    CHECK(flag == 0, "Iprobe on dup true while the message is on WORLD");
    MPI_Recv(&in, 1, MPI_INT, from, 70, MPI_COMM_WORLD, &st);
    CHECK(in == from, "tag 70 payload %d", in);
    MPI_Wait(&req, MPI_STATUS_IGNORE);

    /* Iprobe loop for a message on its way (on dup) */
    MPI_Isend(&v, 1, MPI_INT, to, 72, dup, &req);
    flag = 0;
    while (!flag)
        MPI_Iprobe(MPI_ANY_SOURCE, 72, dup, &flag, &st);
    CHECK(st.MPI_TAG == 72, "Iprobe loop tag %d", st.MPI_TAG);
    MPI_Recv(&in, 1, MPI_INT, st.MPI_SOURCE, 72, dup, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    /* with one message per sender all received, nothing is left */
    MPI_Barrier(MPI_COMM_WORLD);
    flag = -1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag, &st);
    CHECK(flag == 0, "Iprobe true after every message was received");
    MPI_Comm_free(&dup);
}

static void matched_probe(void)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    enum { N = 30000 };
    int *s[3], *r = malloc(sizeof(int) * N);
    MPI_Request req[3];
    for (int m = 0; m < 3; m++) {
        s[m] = malloc(sizeof(int) * N);
        for (int i = 0; i < N; i++)
            s[m][i] = rank * 100 + m + i;
        /* sizes: 1, N, 1 ints; same tag */
        MPI_Isend(s[m], m == 1 ? N : 1, MPI_INT, to, 80, MPI_COMM_WORLD, &req[m]);
    }
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    MPI_Mprobe(MPI_ANY_SOURCE, 80, MPI_COMM_WORLD, &msg, &st);
    /* only my far source sends me tag 80, so the source is known */
    int cnt = -1;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(st.MPI_SOURCE == from && cnt == 1 && msg != MPI_MESSAGE_NULL,
          "Mprobe: src %d count %d", st.MPI_SOURCE, cnt);
    /* the matched message is out of the queue: Recv gets message 1 */
    MPI_Recv(r, N, MPI_INT, from, 80, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == N && r[0] == from * 100 + 1 && r[N - 1] == from * 100 + 1 + N - 1,
          "Recv after Mprobe got count %d first %d", cnt, r[0]);
    int x = -1;
    MPI_Mrecv(&x, 1, MPI_INT, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NULL, "Mrecv did not reset the message handle");
    CHECK(x == from * 100 + 0 && st.MPI_SOURCE == from && st.MPI_TAG == 80,
          "Mrecv got %d src %d tag %d", x, st.MPI_SOURCE, st.MPI_TAG);
    /* Improbe loop + Imrecv for message 2 */
    int flag = 0;
    while (!flag)
        MPI_Improbe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Request rr;
    x = -1;
    MPI_Imrecv(&x, 1, MPI_INT, &msg, &rr);
    CHECK(msg == MPI_MESSAGE_NULL, "Imrecv did not reset the message handle");
    MPI_Wait(&rr, &st);
    CHECK(x == from * 100 + 2 && st.MPI_SOURCE == from, "Imrecv got %d", x);
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    for (int m = 0; m < 3; m++)
        free(s[m]);
    free(r);
    /* nothing left from my source */
    MPI_Barrier(MPI_COMM_WORLD);
    flag = -1;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag == 0, "Improbe found a message after all were received");
}

static void error_field_kept(void)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size), v[4], x = rank;
    MPI_Request sr[4], rr;
    MPI_Message msg;
    MPI_Status st;
    int flag = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* matched_probe's last Improbe must not see these */
    for (int t = 0; t < 4; t++)
        MPI_Isend(&x, 1, MPI_INT, to, 30 + t, MPI_COMM_WORLD, &sr[t]);
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Recv(&v[0], 1, MPI_INT, from, 30, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Recv wrote MPI_ERROR %d", st.MPI_ERROR);
    st.MPI_ERROR = MPI_ERR_TOPOLOGY;
    MPI_Mprobe(from, 31, MPI_COMM_WORLD, &msg, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "Mprobe wrote MPI_ERROR %d", st.MPI_ERROR);
    st.MPI_ERROR = MPI_ERR_DIMS;
    MPI_Mrecv(&v[1], 1, MPI_INT, &msg, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Mrecv wrote MPI_ERROR %d", st.MPI_ERROR);
    MPI_Irecv(&v[2], 1, MPI_INT, from, 32, MPI_COMM_WORLD, &rr);
    st.MPI_ERROR = MPI_ERR_TOPOLOGY;
    MPI_Wait(&rr, &st);
    CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "Wait wrote MPI_ERROR %d", st.MPI_ERROR);
    MPI_Irecv(&v[3], 1, MPI_INT, from, 33, MPI_COMM_WORLD, &rr);
    while (!flag) {
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Test(&rr, &flag, &st);
    }
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Test wrote MPI_ERROR %d", st.MPI_ERROR);
    for (int t = 0; t < 4; t++)
        CHECK(v[t] == from, "message %d carried %d, want %d", t, v[t], from);
    MPI_Waitall(4, sr, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    far_probe();
    wildcard_probe(0, 1000);
    if (size / 2 != 0)
        wildcard_probe(size / 2, 2000);
    odd_bytes();
    iprobe_checks();
    matched_probe();
    error_field_kept();

    int rc = check_finish("p2p_probe");
    MPI_Finalize();
    return rc;
}
