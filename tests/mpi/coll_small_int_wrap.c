/*
 * coll_small_int_wrap: MPI_SUM and MPI_PROD on 8- and 16-bit integers whose results
 * overflow wrap around modulo 2^n, as C's unsigned arithmetic does (and the standard's
 * reductions are defined by it; MPICH does so). Open MPI 4.1.4's op/avx component, which
 * Debian 12 ships, uses saturating vector adds and returns 255 for 200 + 100 in
 * MPI_UINT8_T (open-mpi/ompi#8045), on CPUs with AVX2/AVX-512; isthmus starts Open MPI
 * sites with that component off. Counts large enough for the vector path (4096), through
 * Allreduce, Reduce, Reduce_local and Scan, on every layout.
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

enum { N = 4096 };

#define WRAP_TEST(T, MPIT, A, B)                                                             \
    do {                                                                                 \
        static T in[N], out[N], loc[N];                                                  \
        for (int i = 0; i < N; i++)                                                      \
            in[i] = (T)(rank == 0 ? (A) : (B));                                          \
        T expect = (T)(A);                                                               \
        for (int r = 1; r < size; r++)                                                   \
            expect = (T)(expect + (T)(B));                                               \
        CHECK_RC(MPI_Allreduce(in, out, N, MPIT, MPI_SUM, MPI_COMM_WORLD), #T " allreduce"); \
        for (int i = 0; i < N; i++)                                                      \
            if (out[i] != expect) {                                                      \
                CHECK(0, #T " allreduce sum: element %d is %lld, expected %lld", i,      \
                      (long long)out[i], (long long)expect);                             \
                break;                                                                   \
            }                                                                            \
        memset(out, 0, sizeof out);                                                      \
        CHECK_RC(MPI_Reduce(in, out, N, MPIT, MPI_SUM, size - 1, MPI_COMM_WORLD), #T " reduce"); \
        if (rank == size - 1)                                                            \
            CHECK(out[0] == expect && out[N - 1] == expect,                              \
                  #T " reduce sum at the last rank: %lld, expected %lld", (long long)out[0], \
                  (long long)expect);                                                    \
        for (int i = 0; i < N; i++)                                                      \
            loc[i] = (T)(A);                                                             \
        for (int i = 0; i < N; i++)                                                      \
            out[i] = (T)(B);                                                             \
        CHECK_RC(MPI_Reduce_local(loc, out, N, MPIT, MPI_SUM), #T " reduce_local");      \
        CHECK(out[7] == (T)((T)(A) + (T)(B)), #T " reduce_local sum: %lld, expected %lld", \
              (long long)out[7], (long long)(T)((T)(A) + (T)(B)));                       \
        CHECK_RC(MPI_Scan(in, out, N, MPIT, MPI_SUM, MPI_COMM_WORLD), #T " scan");       \
        T pre = (T)(A);                                                                  \
        for (int r = 1; r <= rank; r++)                                                  \
            pre = (T)(pre + (T)(B));                                                     \
        CHECK(out[N / 2] == pre, #T " scan sum at rank %d: %lld, expected %lld", rank,   \
              (long long)out[N / 2], (long long)pre);                                    \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    WRAP_TEST(uint8_t, MPI_UINT8_T, 200, 100);
    WRAP_TEST(int8_t, MPI_INT8_T, 100, 100);
    WRAP_TEST(unsigned char, MPI_UNSIGNED_CHAR, 250, 7);
    WRAP_TEST(uint16_t, MPI_UINT16_T, 60000, 30000);
    WRAP_TEST(int16_t, MPI_SHORT, 16384, 16384);
    int rc = check_finish("coll_small_int_wrap");
    MPI_Finalize();
    return rc;
}
