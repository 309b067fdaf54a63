/*
 * p2p_bigmodes: the point-to-point forms beyond MPI_Send_c/MPI_Recv_c with more than 2^31
 * one-byte elements (MPI_UINT8_T), every byte checked: rank 0 sends with MPI_Bsend_c from
 * an attached buffer of 2 GiB (MPI_Buffer_attach_c), rank 1 takes it with MPI_Mprobe and
 * MPI_Mrecv_c; then rank 1 answers with a persistent MPI_Send_init_c, which rank 0 takes
 * with a persistent MPI_Recv_init_c (one start each: every 2 GiB across sites costs ~20 s). Rank 0 holds 4 GiB, rank 1 2 GiB. The
 * optional argument is the excess over 2^31 (default 4099). Skipped under MPI < 4.0.
 */
#include "bigbuf.h"
#include <stdint.h>
#include <string.h>

#if MPI_VERSION >= 4
static void expect(const unsigned char *b, MPI_Count n, int salt, const MPI_Status *st,
                   const char *what)
{
    MPI_Count got = -1;
    MPI_Get_count_c(st, MPI_UINT8_T, &got);
    CHECK(got == n, "%s: Get_count_c %lld, sent %lld", what, (long long)got, (long long)n);
    MPI_Count bad = big_first_wrong(b, n, 0, salt);
    CHECK(bad < 0, "%s: byte %lld is wrong", what, (long long)bad);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Count n = ((MPI_Count)1 << 31) + (argc > 1 ? atoll(argv[1]) : 4099);
    MPI_Status st;
    MPI_Request rq;
    if (rank == 0 && size >= 2) {
        unsigned char *b = big_room(n);
        MPI_Count room_size = n + MPI_BSEND_OVERHEAD;
        unsigned char *att = big_room(room_size);
        CHECK_RC(MPI_Buffer_attach_c(att, room_size), "Buffer_attach_c");
        big_fill(b, n, 0, 1);
        CHECK_RC(MPI_Bsend_c(b, n, MPI_UINT8_T, 1, 7, MPI_COMM_WORLD), "Bsend_c");
        /* the copy went out: the program's buffer is free again at once */
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_Recv_init_c(b, n, MPI_UINT8_T, 1, 8, MPI_COMM_WORLD, &rq), "Recv_init_c");
        CHECK_RC(MPI_Start(&rq), "Start (receive)");
        CHECK_RC(MPI_Wait(&rq, &st), "Wait (receive)");
        expect(b, n, 2, &st, "Recv_init_c");
        MPI_Request_free(&rq);
        void *was;
        MPI_Count was_size;
        CHECK_RC(MPI_Buffer_detach_c(&was, &was_size), "Buffer_detach_c");
        CHECK(was == att && was_size == room_size, "Buffer_detach_c gave %p, %lld", was,
              (long long)was_size);
        free(att);
        free(b);
    } else if (rank == 1) {
        unsigned char *b = big_room(n);
        MPI_Message msg;
        CHECK_RC(MPI_Mprobe(0, 7, MPI_COMM_WORLD, &msg, &st), "Mprobe");
        MPI_Count probed = -1;
        MPI_Get_count_c(&st, MPI_UINT8_T, &probed);
        CHECK(probed == n, "Mprobe: Get_count_c %lld, sent %lld", (long long)probed, (long long)n);
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_Mrecv_c(b, n, MPI_UINT8_T, &msg, &st), "Mrecv_c");
        expect(b, n, 1, &st, "Bsend_c to Mrecv_c");
        CHECK_RC(MPI_Send_init_c(b, n, MPI_UINT8_T, 0, 8, MPI_COMM_WORLD, &rq), "Send_init_c");
        big_fill(b, n, 0, 2);
        CHECK_RC(MPI_Start(&rq), "Start (send)");
        CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "Wait (send)");
        MPI_Request_free(&rq);
        free(b);
    }
#else
    if (rank == 0)
        printf("p2p_bigmodes: skipped: the library implements MPI %d.%d, _c forms are MPI 4.0\n",
               MPI_VERSION, MPI_SUBVERSION);
#endif
    int rc = check_finish("p2p_bigmodes");
    MPI_Finalize();
    return rc;
}
