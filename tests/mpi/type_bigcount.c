/*
 * type_bigcount: a datatype of more than 2^31 bytes moving data, and an intercommunicator
 * collective of more than 2^31 elements (2 ranks, about 2 GiB each).
 *
 *   1. T = Type_contiguous_c(2^31 + 4099, MPI_BYTE): rank 0 sends one T to rank 1, which
 *      receives one T and checks every byte and Get_count_c (1) and Get_elements_c.
 *      Within a site the vendor moves it, as the twin isthmus builds from the type map
 *      (pieces of 2^30 elements); across sites isthmus packs it.
 *   2. Gather_c of 2^31 + 4099 bytes on the intercommunicator of {0} and {1}: rank 1 sends
 *      a new pattern to rank 0 (MPI_ROOT), which checks every byte.
 * Run by test_mpi_programs.py (large_memory) on 1+1 ranks (two sites) and 2 (one site).
 */
#include "bigbuf.h"
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    const MPI_Count n = ((MPI_Count)1 << 31) + 4099;
    CHECK(size == 2, "run with 2 ranks, not %d", size);
    MPI_Datatype t;
    CHECK_RC(MPI_Type_contiguous_c(n, MPI_BYTE, &t), "Type_contiguous_c");
    CHECK_RC(MPI_Type_commit(&t), "commit");
    unsigned char *b = big_room(n);
    if (rank == 0) {
        big_fill(b, n, 0, 1);
        CHECK_RC(MPI_Send(b, 1, t, 1, 7, MPI_COMM_WORLD), "Send of one T");
    } else {
        memset(b, 0, (size_t)n);
        MPI_Status st;
        CHECK_RC(MPI_Recv(b, 1, t, 0, 7, MPI_COMM_WORLD, &st), "Recv of one T");
        MPI_Count got = -1, el = -1;
        MPI_Get_count_c(&st, t, &got);
        MPI_Get_elements_c(&st, t, &el);
        CHECK(got == 1 && el == n, "Get_count_c %lld, Get_elements_c %lld", (long long)got,
              (long long)el);
        MPI_Count w = big_first_wrong(b, n, 0, 1);
        CHECK(w < 0, "one T: byte %lld is wrong", (long long)w);
    }
    MPI_Type_free(&t);
    /* Gather_c across the intercommunicator {0} | {1} */
    MPI_Comm self_half, ic;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &self_half);
    CHECK_RC(MPI_Intercomm_create(self_half, 0, MPI_COMM_WORLD, 1 - rank, 9, &ic),
             "Intercomm_create");
    if (rank == 1) {
        big_fill(b, n, 0, 2);
        CHECK_RC(MPI_Gather_c(b, n, MPI_BYTE, NULL, 0, MPI_BYTE, 0, ic), "Gather_c (send)");
    } else {
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_Gather_c(NULL, 0, MPI_BYTE, b, n, MPI_BYTE, MPI_ROOT, ic),
                 "Gather_c (root)");
        MPI_Count w = big_first_wrong(b, n, 0, 2);
        CHECK(w < 0, "inter Gather_c: byte %lld is wrong", (long long)w);
    }
    MPI_Comm_free(&ic);
    MPI_Comm_free(&self_half);
    free(b);
#else
    if (rank == 0)
        printf("type_bigcount: skipped: the library implements MPI %d.%d\n", MPI_VERSION,
               MPI_SUBVERSION);
#endif
    int rc = check_finish("type_bigcount");
    MPI_Finalize();
    return rc;
}
