/*
 * p2p_proc_null: MPI_PROC_NULL as source/destination.
 * Send/Ssend/Rsend/Bsend/Isend/Issend to MPI_PROC_NULL succeed at once;
 * Recv/Irecv (Wait, Test) from it complete at once with status source
 * MPI_PROC_NULL, tag MPI_ANY_TAG, Get_count 0 and the buffer untouched;
 * Sendrecv and Sendrecv_replace with PROC_NULL on either side; Probe and
 * Iprobe (flag true) and Mprobe/Improbe (MPI_MESSAGE_NO_PROC, then Mrecv)
 * on PROC_NULL.  Finally the usual halo pattern: a non-periodic shift where
 * the first rank receives from and the last rank sends to MPI_PROC_NULL,
 * far and near shifts.  Works for any size >= 1.
 */
#include "check.h"
#include <string.h>

static void check_null_status(const MPI_Status *st, const char *what)
{
    int cnt = -1;
    MPI_Get_count(st, MPI_INT, &cnt);
    CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && cnt == 0,
          "%s: status source %d tag %d count %d, expected PROC_NULL/ANY_TAG/0", what,
          st->MPI_SOURCE, st->MPI_TAG, cnt);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8];
    MPI_Status st;
    MPI_Request r;
    int flag;

    CHECK_RC(MPI_Send(out, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), "Send");
    CHECK_RC(MPI_Ssend(out, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), "Ssend");
    CHECK_RC(MPI_Rsend(out, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), "Rsend");
    /* Bsend to PROC_NULL needs no buffer space at all */
    CHECK_RC(MPI_Bsend(out, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), "Bsend");

    for (int i = 0; i < 8; i++)
        in[i] = -1;
    memset(&st, 0x5a, sizeof st);
    CHECK_RC(MPI_Recv(in, 8, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st), "Recv");
    check_null_status(&st, "Recv");
    CHECK(in[0] == -1 && in[7] == -1, "Recv from PROC_NULL wrote the buffer");
    memset(&st, 0x5a, sizeof st);
    MPI_Recv(in, 8, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    check_null_status(&st, "Recv ANY_TAG");

    MPI_Isend(out, 8, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &r);
    CHECK(r != MPI_REQUEST_NULL, "Isend to PROC_NULL returned MPI_REQUEST_NULL");
    MPI_Wait(&r, &st);
    CHECK(r == MPI_REQUEST_NULL, "Isend request not freed");
    MPI_Issend(out, 8, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &r);
    flag = 0;
    MPI_Test(&r, &flag, &st); /* completes immediately */
    CHECK(flag && r == MPI_REQUEST_NULL, "Issend to PROC_NULL not complete at first Test");
    if (!flag)
        MPI_Wait(&r, &st);

    memset(&st, 0x5a, sizeof st);
    MPI_Irecv(in, 8, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, &st);
    check_null_status(&st, "Irecv+Wait");
    memset(&st, 0x5a, sizeof st);
    MPI_Irecv(in, 8, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r);
    flag = 0;
    MPI_Test(&r, &flag, &st);
    CHECK(flag, "Irecv from PROC_NULL not complete at first Test");
    if (flag)
        check_null_status(&st, "Irecv+Test");
    else
        MPI_Wait(&r, &st);
    {
        MPI_Request rs[2];
        MPI_Status sts[2];
        MPI_Irecv(in, 8, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &rs[0]);
        MPI_Isend(out, 8, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &rs[1]);
        MPI_Waitall(2, rs, sts);
        check_null_status(&sts[0], "Irecv+Waitall");
    }
    CHECK(in[0] == -1 && in[7] == -1, "Irecv from PROC_NULL wrote the buffer");

    /* Sendrecv: both null, send-only, receive-only */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    memset(&st, 0x5a, sizeof st);
    MPI_Sendrecv(out, 8, MPI_INT, MPI_PROC_NULL, 4, in, 8, MPI_INT, MPI_PROC_NULL, 4,
                 MPI_COMM_WORLD, &st);
    check_null_status(&st, "Sendrecv both null");
    /* far: I send to `to` and receive from PROC_NULL; then receive from `from` and send to PROC_NULL */
    {
        int v = rank * 5, w = -1;
        MPI_Request sr;
        MPI_Isend(&v, 1, MPI_INT, to, 5, MPI_COMM_WORLD, &sr);
        memset(&st, 0x5a, sizeof st);
        MPI_Sendrecv(out, 1, MPI_INT, MPI_PROC_NULL, 5, &w, 1, MPI_INT, from, 5, MPI_COMM_WORLD,
                     &st);
        CHECK(w == from * 5 && st.MPI_SOURCE == from && st.MPI_TAG == 5,
              "Sendrecv send-to-null: got %d src %d tag %d", w, st.MPI_SOURCE, st.MPI_TAG);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
    }
    {
        int buf[3] = {9, 9, 9};
        memset(&st, 0x5a, sizeof st);
        MPI_Sendrecv_replace(buf, 3, MPI_INT, MPI_PROC_NULL, 6, MPI_PROC_NULL, 6, MPI_COMM_WORLD,
                             &st);
        check_null_status(&st, "Sendrecv_replace");
        CHECK(buf[0] == 9 && buf[2] == 9, "Sendrecv_replace with PROC_NULL changed the buffer");
    }

    /* probes */
    memset(&st, 0x5a, sizeof st);
    MPI_Probe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, &st);
    check_null_status(&st, "Probe");
    flag = 0;
    memset(&st, 0x5a, sizeof st);
    MPI_Iprobe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag, "Iprobe(PROC_NULL) flag false");
    check_null_status(&st, "Iprobe");
    {
        MPI_Message m = MPI_MESSAGE_NULL;
        memset(&st, 0x5a, sizeof st);
        MPI_Mprobe(MPI_PROC_NULL, 8, MPI_COMM_WORLD, &m, &st);
        CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) did not return MPI_MESSAGE_NO_PROC");
        check_null_status(&st, "Mprobe");
        memset(&st, 0x5a, sizeof st);
        MPI_Mrecv(in, 8, MPI_INT, &m, &st);
        CHECK(m == MPI_MESSAGE_NULL, "Mrecv(NO_PROC) did not set MPI_MESSAGE_NULL");
        check_null_status(&st, "Mrecv(NO_PROC)");
        flag = 0;
        MPI_Improbe(MPI_PROC_NULL, 8, MPI_COMM_WORLD, &flag, &m, &st);
        CHECK(flag && m == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL) flag %d", flag);
        MPI_Imrecv(in, 8, MPI_INT, &m, &r);
        MPI_Wait(&r, &st);
        check_null_status(&st, "Imrecv(NO_PROC)");
    }

    /* non-periodic shifts: halo pattern with PROC_NULL at the edges */
    const int shifts[2] = {1, size / 2 > 0 ? size / 2 : 1};
    for (int k = 0; k < 2; k++) {
        int sh = shifts[k];
        int dst = rank + sh < size ? rank + sh : MPI_PROC_NULL;
        int src = rank - sh >= 0 ? rank - sh : MPI_PROC_NULL;
        enum { N = 10000 };
        int *s = malloc(sizeof(int) * N), *q = malloc(sizeof(int) * N);
        for (int i = 0; i < N; i++) {
            s[i] = rank * 100 + i;
            q[i] = -1;
        }
        memset(&st, 0x5a, sizeof st);
        MPI_Sendrecv(s, N, MPI_INT, dst, 9, q, N, MPI_INT, src, 9, MPI_COMM_WORLD, &st);
        if (src == MPI_PROC_NULL) {
            check_null_status(&st, "shift edge");
            CHECK(q[0] == -1 && q[N - 1] == -1, "shift %d: edge buffer written", sh);
        } else {
            int cnt = -1, bad = -1;
            MPI_Get_count(&st, MPI_INT, &cnt);
            for (int i = 0; i < N && bad < 0; i++)
                if (q[i] != src * 100 + i)
                    bad = i;
            CHECK(cnt == N && bad < 0 && st.MPI_SOURCE == src,
                  "shift %d: count %d mismatch at %d src %d", sh, cnt, bad, st.MPI_SOURCE);
        }
        free(s);
        free(q);
    }

    int rc = check_finish("p2p_proc_null");
    MPI_Finalize();
    return rc;
}
