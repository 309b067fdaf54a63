/*
 * dt_p2p_paths: a derived datatype on every point-to-point path besides plain
 * Isend/Irecv, with the near peer (usually the same site) and the far peer (another
 * site on a split run), small (eager) and large (rendezvous, > 64 KiB):
 *  - MPI_Bsend (the attached buffer holds the packed copy);
 *  - MPI_Sendrecv_replace (the outgoing data must not be overwritten too early);
 *  - persistent MPI_Send_init/MPI_Recv_init started twice, the type freed after init;
 *  - MPI_ANY_SOURCE receives;
 *  - MPI_Probe then MPI_Get_count/MPI_Get_elements with the type, and MPI_Mprobe/MPI_Mrecv.
 * The type is a vector of 2 ints every 3 (a hole in each block of 3 ints); holes in the
 * receive buffer must stay untouched. Works for any size >= 1.
 */
#include "check.h"
#include <string.h>

static int rank, size;
static MPI_Datatype vec; /* 2 ints, stride 3, resized to 12 bytes */

static int val(int src, int i) { return src * 100003 + i * 3 + 1; }

static int *make_buf(int count, int who)
{
    int *b = malloc(sizeof(int) * (size_t)(3 * count + 1));
    for (int i = 0; i < 3 * count + 1; i++)
        b[i] = who >= 0 ? val(who, i) : -1;
    return b;
}

static void check_buf(const int *b, int count, int src, const char *what)
{
    int bad = 0;
    for (int i = 0; i < 3 * count + 1 && bad < 3; i++) {
        int want = i < 3 * count && i % 3 != 2 ? val(src, i) : -1;
        if (b[i] != want) {
            CHECK(0, "%s (count %d, from %d): int %d is %d, expected %d", what, count, src, i,
                  b[i], want);
            bad++;
        }
    }
}

static void bsend(int to, int from, int count)
{
    int pk = 0;
    MPI_Pack_size(count, vec, MPI_COMM_WORLD, &pk);
    int bsize = pk + MPI_BSEND_OVERHEAD;
    void *att = malloc((size_t)bsize);
    MPI_Buffer_attach(att, bsize);
    int *s = make_buf(count, rank), *r = make_buf(count, -1);
    MPI_Request rq;
    MPI_Irecv(r, count, vec, from, 1, MPI_COMM_WORLD, &rq);
    CHECK_RC(MPI_Bsend(s, count, vec, to, 1, MPI_COMM_WORLD), "bsend");
    memset(s, 0, sizeof(int) * (size_t)(3 * count)); /* the copy is already taken */
    MPI_Status st;
    MPI_Wait(&rq, &st);
    int cnt = 0;
    MPI_Get_count(&st, vec, &cnt);
    CHECK(cnt == count, "bsend: Get_count %d, expected %d", cnt, count);
    check_buf(r, count, from, "bsend");
    void *back;
    MPI_Buffer_detach(&back, &bsize);
    free(att);
    free(s);
    free(r);
}

static void sendrecv_replace(int to, int from, int count)
{
    int *b = make_buf(count, rank);
    for (int i = 2; i < 3 * count; i += 3)
        b[i] = -1; /* holes: must stay -1 */
    b[3 * count] = -1;
    MPI_Status st;
    CHECK_RC(MPI_Sendrecv_replace(b, count, vec, to, 2, from, 2, MPI_COMM_WORLD, &st),
             "sendrecv_replace");
    check_buf(b, count, from, "sendrecv_replace");
    free(b);
}

static void persistent(int to, int from, int count)
{
    MPI_Datatype t;
    MPI_Type_dup(vec, &t);
    MPI_Type_commit(&t);
    int *s = make_buf(count, rank), *r = make_buf(count, -1);
    MPI_Request rq[2];
    MPI_Recv_init(r, count, t, from, 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Send_init(s, count, t, to, 3, MPI_COMM_WORLD, &rq[1]);
    MPI_Type_free(&t); /* the requests keep what they need */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3 * count + 1; i++)
            r[i] = -1;
        MPI_Startall(2, rq);
        CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), "persistent waitall");
        check_buf(r, count, from, round ? "persistent, second start" : "persistent");
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    free(s);
    free(r);
}

static void any_source_and_probe(int to, int from, int count)
{
    int *s = make_buf(count, rank), *r = make_buf(count, -1);
    MPI_Request sq;
    MPI_Status st;
    /* ANY_SOURCE: tag 4 comes only from `from` */
    MPI_Isend(s, count, vec, to, 4, MPI_COMM_WORLD, &sq);
    MPI_Recv(r, count, vec, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st);
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    CHECK(st.MPI_SOURCE == from, "any_source: source %d, expected %d", st.MPI_SOURCE, from);
    check_buf(r, count, from, "any_source");

    /* probe: the status counts packed bytes, readable with the type */
    for (int i = 0; i < 3 * count + 1; i++)
        r[i] = -1;
    MPI_Isend(s, count, vec, to, 5, MPI_COMM_WORLD, &sq);
    MPI_Probe(from, 5, MPI_COMM_WORLD, &st);
    int cnt = 0, el = 0;
    MPI_Get_count(&st, vec, &cnt);
    MPI_Get_elements(&st, vec, &el);
    CHECK(cnt == count && el == 2 * count, "probe: Get_count %d Get_elements %d, expected %d %d",
          cnt, el, count, 2 * count);
    MPI_Recv(r, count, vec, from, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    check_buf(r, count, from, "probe then recv");

    /* matched probe */
    for (int i = 0; i < 3 * count + 1; i++)
        r[i] = -1;
    MPI_Isend(s, count, vec, to, 6, MPI_COMM_WORLD, &sq);
    MPI_Message m;
    MPI_Mprobe(from, 6, MPI_COMM_WORLD, &m, &st);
    MPI_Get_count(&st, vec, &cnt);
    CHECK(cnt == count, "mprobe: Get_count %d, expected %d", cnt, count);
    CHECK_RC(MPI_Mrecv(r, count, vec, &m, &st), "mrecv");
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
    check_buf(r, count, from, "mprobe/mrecv");
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype v;
    MPI_Type_vector(1, 2, 3, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 12, &vec);
    MPI_Type_free(&v);
    MPI_Type_commit(&vec);
    int peers[2][2] = {{peer_near(rank, size), peer_near(rank, size)},
                       {peer_far_to(rank, size), peer_far_from(rank, size)}};
    int counts[] = {5, 20000}; /* 40 bytes; 160 KB */
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 2; c++) {
            int to = peers[p][0], from = peers[p][1], count = counts[c];
            bsend(to, from, count);
            sendrecv_replace(to, from, count);
            persistent(to, from, count);
            any_source_and_probe(to, from, count);
            MPI_Barrier(MPI_COMM_WORLD); /* tags are reused in the next round */
        }
    MPI_Type_free(&vec);
    int rc = check_finish("dt_p2p_paths");
    MPI_Finalize();
    return rc;
}
