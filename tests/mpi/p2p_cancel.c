/*
 * p2p_cancel: MPI_Cancel of receive (and send) requests.
 *  1. Irecv from the far source with a tag nobody sends, Cancel, Wait:
 *     Test_cancelled is true, the buffer is untouched; the same with an
 *     MPI_ANY_SOURCE receive and with cancel completed by MPI_Test.
 *  2. Afterwards messages with exactly those tags are sent and received
 *     by ordinary receives: a cancelled receive must not swallow them.
 *  3. An Irecv that has already completed (seen with
 *     MPI_Request_get_status, which does not free it) is cancelled:
 *     Cancel has no effect, Wait gives the data and Test_cancelled false.
 *  4. Cancelling a send (10 and 50000 ints) may succeed or fail (MPI-3.1):
 *     the receiver has an Irecv posted; the sender reports the outcome and
 *     the receive must then complete with the data (not cancelled) or be
 *     cancellable (cancelled), and the message never shows up later.
 *  5. A normal near/far exchange still works; Test_cancelled is false for
 *     ordinary receives.
 * Works for any size >= 1.
 */
#include "check.h"
#include <string.h>

static int rank, size;

enum { TAG_UNUSED = 500, TAG_UNUSED_ANY = 501, TAG_UNUSED_TEST = 502 };

static void cancel_unmatched(int src, int tag, const char *what, int use_test)
{
    int buf[4] = {-5, -5, -5, -5};
    MPI_Request r;
    MPI_Irecv(buf, 4, MPI_INT, src, tag, MPI_COMM_WORLD, &r);
    CHECK_RC(MPI_Cancel(&r), "Cancel");
    CHECK(r != MPI_REQUEST_NULL, "%s: Cancel freed the request", what);
    MPI_Status st;
    if (use_test) {
        int flag = 0;
        while (!flag)
            MPI_Test(&r, &flag, &st); /* a cancelled request completes */
    } else {
        MPI_Wait(&r, &st);
    }
    CHECK(r == MPI_REQUEST_NULL, "%s: request not freed after completion", what);
    int c = 0;
    MPI_Test_cancelled(&st, &c);
    CHECK(c, "%s: Test_cancelled false for a receive that could not match", what);
    CHECK(buf[0] == -5 && buf[3] == -5, "%s: cancelled receive wrote the buffer", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int far_to = peer_far_to(rank, size), far_from = peer_far_from(rank, size);
    int near_p = peer_near(rank, size);

    /* 1 */
    cancel_unmatched(far_from, TAG_UNUSED, "specific source", 0);
    cancel_unmatched(MPI_ANY_SOURCE, TAG_UNUSED_ANY, "ANY_SOURCE", 0);
    cancel_unmatched(near_p, TAG_UNUSED_TEST, "cancel + Test", 1);
    /* nobody sends before everybody has cancelled */
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2: the tags are live now; ordinary receives get the messages */
    {
        int out[3] = {rank * 10 + 1, rank * 10 + 2, rank * 10 + 3}, in[3] = {-1, -1, -1};
        MPI_Request sr[3];
        MPI_Isend(&out[0], 1, MPI_INT, far_to, TAG_UNUSED, MPI_COMM_WORLD, &sr[0]);
        MPI_Isend(&out[1], 1, MPI_INT, far_to, TAG_UNUSED_ANY, MPI_COMM_WORLD, &sr[1]);
        MPI_Isend(&out[2], 1, MPI_INT, near_p, TAG_UNUSED_TEST, MPI_COMM_WORLD, &sr[2]);
        MPI_Status st;
        MPI_Recv(&in[0], 1, MPI_INT, far_from, TAG_UNUSED, MPI_COMM_WORLD, &st);
        CHECK(in[0] == far_from * 10 + 1, "after cancel: tag %d got %d", TAG_UNUSED, in[0]);
        MPI_Recv(&in[1], 1, MPI_INT, MPI_ANY_SOURCE, TAG_UNUSED_ANY, MPI_COMM_WORLD, &st);
        CHECK(in[1] == far_from * 10 + 2 && st.MPI_SOURCE == far_from,
              "after cancel: ANY_SOURCE tag %d got %d from %d", TAG_UNUSED_ANY, in[1],
              st.MPI_SOURCE);
        MPI_Recv(&in[2], 1, MPI_INT, near_p, TAG_UNUSED_TEST, MPI_COMM_WORLD, &st);
        CHECK(in[2] == near_p * 10 + 3, "after cancel: tag %d got %d", TAG_UNUSED_TEST, in[2]);
        int c = 1;
        MPI_Test_cancelled(&st, &c);
        CHECK(!c, "Test_cancelled true for an ordinary receive");
        MPI_Waitall(3, sr, MPI_STATUSES_IGNORE);
    }

    /* 3: cancel after completion has no effect */
    {
        enum { N = 20000 };
        int *out = malloc(sizeof(int) * N), *in = malloc(sizeof(int) * N);
        for (int i = 0; i < N; i++) {
            out[i] = rank + i;
            in[i] = -1;
        }
        MPI_Request rr, sr;
        MPI_Irecv(in, N, MPI_INT, far_from, 600, MPI_COMM_WORLD, &rr);
        MPI_Isend(out, N, MPI_INT, far_to, 600, MPI_COMM_WORLD, &sr);
        int flag = 0;
        MPI_Status st;
        while (!flag)
            MPI_Request_get_status(rr, &flag, &st);
        CHECK_RC(MPI_Cancel(&rr), "Cancel of a completed receive");
        MPI_Wait(&rr, &st);
        int c = 1;
        MPI_Test_cancelled(&st, &c);
        CHECK(!c, "Test_cancelled true for a receive that had completed");
        int cnt = -1, bad = -1;
        MPI_Get_count(&st, MPI_INT, &cnt);
        for (int i = 0; i < N && bad < 0; i++)
            if (in[i] != far_from + i)
                bad = i;
        CHECK(cnt == N && bad < 0 && st.MPI_SOURCE == far_from && st.MPI_TAG == 600,
              "completed-then-cancelled receive: count %d mismatch at %d src %d tag %d", cnt,
              bad, st.MPI_SOURCE, st.MPI_TAG);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        free(out);
        free(in);
    }

    /* 4: cancel a send: either outcome, but consistent.  The receiver posts
     * its Irecv before anyone waits, so an uncancelled send can complete;
     * once told the outcome it waits for (not cancelled) or cancels (send
     * cancelled: nothing can match any more) its receive. */
    for (int sz = 0; sz < 2; sz++) {
        int n = sz ? 50000 : 10, tag = 700 + sz * 10;
        int *out = malloc(sizeof(int) * (size_t)n), *in = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) {
            out[i] = rank * 3 + i;
            in[i] = -1;
        }
        MPI_Request sr, rr;
        MPI_Status st;
        MPI_Isend(out, n, MPI_INT, far_to, tag, MPI_COMM_WORLD, &sr);
        MPI_Cancel(&sr);
        MPI_Irecv(in, n, MPI_INT, far_from, tag, MPI_COMM_WORLD, &rr);
        MPI_Wait(&sr, &st);
        int cancelled = -1;
        MPI_Test_cancelled(&st, &cancelled);
        cancelled = cancelled ? 1 : 0;
        int peer_cancelled = -1;
        MPI_Sendrecv(&cancelled, 1, MPI_INT, far_to, tag + 1, &peer_cancelled, 1, MPI_INT,
                     far_from, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (peer_cancelled)
            MPI_Cancel(&rr);
        MPI_Wait(&rr, &st);
        int rc_cancelled = -1;
        MPI_Test_cancelled(&st, &rc_cancelled);
        if (peer_cancelled) {
            CHECK(rc_cancelled, "%d ints: send was cancelled but the receive got a message", n);
        } else {
            CHECK(!rc_cancelled, "%d ints: receive reported cancelled", n);
            int bad = -1;
            for (int i = 0; i < n && bad < 0; i++)
                if (in[i] != far_from * 3 + i)
                    bad = i;
            CHECK(bad < 0, "%d ints: uncancelled send: data mismatch at %d", n, bad);
        }
        /* a cancelled send must never be delivered later */
        MPI_Barrier(MPI_COMM_WORLD);
        int flag = -1;
        MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(flag == 0, "%d ints: a cancelled send was delivered after all", n);
        int n_cancel = 0;
        MPI_Reduce(&cancelled, &n_cancel, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("p2p_cancel: info: %d ints: %d of %d send cancellations succeeded\n", n,
                   n_cancel, size);
        free(out);
        free(in);
    }

    /* 5: ordinary traffic */
    {
        int out = rank, in1 = -1, in2 = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, far_to, 800, &in1, 1, MPI_INT, far_from, 800,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&out, 1, MPI_INT, near_p, 801, &in2, 1, MPI_INT, near_p, 801,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in1 == far_from && in2 == near_p, "final exchange got %d %d", in1, in2);
    }

    int rc = check_finish("p2p_cancel");
    MPI_Finalize();
    return rc;
}
