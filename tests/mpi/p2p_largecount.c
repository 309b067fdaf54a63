/*
 * p2p_largecount: one message of more than 2^31 one-byte elements (MPI_Send_c/MPI_Recv_c),
 * and back (MPI_Isend_c/MPI_Irecv_c), between ranks 0 and 1, wherever they are: across
 * sites (64-bit lengths in the frames) or at one site (the vendor gets a type that covers
 * the count). Checks MPI_Get_count_c, MPI_Get_elements_c and every byte. Needs two buffers
 * of the message's size per process (about 2 GiB each); the optional argument is the excess
 * over 2^31 in bytes (default 4099, so the count is not a multiple of any chunk).
 * Skipped, saying so, under an MPI older than 4.0.
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
    MPI_Count n = ((MPI_Count)1 << 31) + (argc > 1 ? atoll(argv[1]) : 4099);
    if (rank < 2 && size >= 2) {
        unsigned char *buf = malloc((size_t)n);
        CHECK(buf != NULL, "no memory for %lld bytes", (long long)n);
        if (!buf)
            MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Status st;
        MPI_Count got = -1, elems = -1;
        if (rank == 0) {
            big_fill(buf, n, 0, 1);
            CHECK_RC(MPI_Send_c(buf, n, MPI_BYTE, 1, 5, MPI_COMM_WORLD), "Send_c");
            memset(buf, 0, (size_t)n);
            MPI_Request rq;
            CHECK_RC(MPI_Irecv_c(buf, n, MPI_UNSIGNED_CHAR, 1, 6, MPI_COMM_WORLD, &rq), "Irecv_c");
            CHECK_RC(MPI_Wait(&rq, &st), "wait for Irecv_c");
            MPI_Get_count_c(&st, MPI_UNSIGNED_CHAR, &got);
            CHECK(got == n, "Irecv_c: Get_count_c %lld, sent %lld", (long long)got, (long long)n);
            MPI_Count bad = big_first_wrong(buf, n, 0, 2);
            CHECK(bad < 0, "Irecv_c: byte %lld is wrong", (long long)bad);
        } else {
            memset(buf, 0, (size_t)n);
            CHECK_RC(MPI_Recv_c(buf, n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st), "Recv_c");
            MPI_Get_count_c(&st, MPI_BYTE, &got);
            MPI_Get_elements_c(&st, MPI_BYTE, &elems);
            CHECK(got == n && elems == n, "Recv_c: Get_count_c %lld, Get_elements_c %lld, sent %lld",
                  (long long)got, (long long)elems, (long long)n);
            int count_int = 0;
            MPI_Get_count(&st, MPI_BYTE, &count_int);
            CHECK(count_int == MPI_UNDEFINED, "Get_count of %lld bytes gave %d, not MPI_UNDEFINED",
                  (long long)n, count_int);
            MPI_Count bad = big_first_wrong(buf, n, 0, 1);
            CHECK(bad < 0, "Recv_c: byte %lld is wrong", (long long)bad);
            big_fill(buf, n, 0, 2);
            MPI_Request rq;
            CHECK_RC(MPI_Isend_c(buf, n, MPI_UNSIGNED_CHAR, 0, 6, MPI_COMM_WORLD, &rq), "Isend_c");
            CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "wait for Isend_c");
        }
        free(buf);
    }
#else
    if (rank == 0)
        printf("p2p_largecount: skipped: the library implements MPI %d.%d, _c forms are MPI 4.0\n",
               MPI_VERSION, MPI_SUBVERSION);
#endif
    int rc = check_finish("p2p_largecount");
    MPI_Finalize();
    return rc;
}
