/*
 * p2p_bigreplace: MPI_Isendrecv_replace_c with more than 2^31 one-byte elements
 * (MPI_UINT8_T) between ranks 0 and 1, each sending its buffer and receiving the other's
 * in its place, every byte and the status count checked (each rank holds 4 GiB: the
 * buffer and the packed copy of what it sends); then MPI_Sendrecv_replace_c and
 * MPI_Isendrecv_c with small counts. Rank 0 then packs and unpacks n bytes with
 * MPI_Pack_size_c, MPI_Pack_c and MPI_Unpack_c (positions beyond INT_MAX). The optional argument is the excess over 2^31
 * (default 4099). Skipped under MPI < 4.0.
 */
#include "bigbuf.h"
#include <stdint.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Count n = ((MPI_Count)1 << 31) + (argc > 1 ? atoll(argv[1]) : 4099);
    if (rank < 2 && size >= 2) {
        int peer = 1 - rank;
        MPI_Status st;
        MPI_Request rq;
        unsigned char *b = big_room(n);
        big_fill(b, n, 0, 60 + rank);
        CHECK_RC(MPI_Isendrecv_replace_c(b, n, MPI_UINT8_T, peer, 3, peer, 3, MPI_COMM_WORLD,
                                         &rq),
                 "Isendrecv_replace_c");
        CHECK_RC(MPI_Wait(&rq, &st), "wait for Isendrecv_replace_c");
        MPI_Count got = -1, bad = big_first_wrong(b, n, 0, 60 + peer);
        MPI_Get_count_c(&st, MPI_UINT8_T, &got);
        CHECK(got == n && st.MPI_SOURCE == peer, "Isendrecv_replace_c: count %lld from %d", (long long)got,
              st.MPI_SOURCE);
        CHECK(bad < 0, "Isendrecv_replace_c: byte %lld is wrong", (long long)bad);
        free(b);
        /* the small forms, through the same code */
        int v[3] = {rank, rank + 10, rank + 20}, w[3] = {0};
        CHECK_RC(MPI_Sendrecv_replace_c(v, 3, MPI_INT, peer, 4, peer, 4, MPI_COMM_WORLD, &st),
                 "Sendrecv_replace_c");
        CHECK(v[0] == peer && v[2] == peer + 20, "Sendrecv_replace_c got %d %d", v[0], v[2]);
        CHECK_RC(MPI_Isendrecv_c(v, 3, MPI_INT, peer, 5, w, 3, MPI_INT, peer, 5, MPI_COMM_WORLD,
                                 &rq),
                 "Isendrecv_c");
        CHECK_RC(MPI_Wait(&rq, &st), "wait for Isendrecv_c");
        CHECK(w[0] == rank && w[1] == rank + 10, "Isendrecv_c got %d %d", w[0], w[1]);
    }
    if (rank == 0) {
        MPI_Count need = -1, pos = 0, back = 0;
        CHECK_RC(MPI_Pack_size_c(n, MPI_UINT8_T, MPI_COMM_WORLD, &need), "Pack_size_c");
        CHECK(need == n, "Pack_size_c gave %lld for %lld bytes", (long long)need, (long long)n);
        unsigned char *b = big_room(n), *p = big_room(n);
        big_fill(b, n, 0, 70);
        CHECK_RC(MPI_Pack_c(b, n, MPI_UINT8_T, p, n, &pos, MPI_COMM_WORLD), "Pack_c");
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_Unpack_c(p, n, &back, b, n, MPI_UINT8_T, MPI_COMM_WORLD), "Unpack_c");
        MPI_Count bad = big_first_wrong(b, n, 0, 70);
        CHECK(pos == n && back == n && bad < 0, "Pack_c/Unpack_c: positions %lld %lld, byte %lld",
              (long long)pos, (long long)back, (long long)bad);
        free(b);
        free(p);
    }
    int rc = check_finish("p2p_bigreplace");
    MPI_Finalize();
    return rc;
#else
    if (rank == 0)
        printf("p2p_bigreplace: skipped (MPI %d.%d has no large-count forms)\n", MPI_VERSION,
               MPI_SUBVERSION);
    MPI_Finalize();
    return 0;
#endif
}
