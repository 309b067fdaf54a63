/*
 * largecount_limits: what isthmus refuses of the large-count (_c) forms, and how. Under
 * MPI_ERRORS_RETURN every rank checks that each of these gives MPI_ERR_COUNT without
 * touching a buffer (all NULL) or hanging its peers:
 *   - a count below INT_MIN (negative, not wrapped into an int) in Send_c, Isend_c,
 *     Recv_c, Bsend_c, Send_init_c, Bcast_c and Type_contiguous_c;
 * and that Type_vector_c(2^40, 1, 2) is refused with MPI_ERR_UNSUPPORTED_OPERATION: a
 * type map holds at most 2^22 blocks.
 * (Alltoall_c in place, the v/w collectives such as Gatherv_c, the one-sided and the I/O
 * forms and the type constructors beyond INT_MAX were refused too until they were built:
 * coll_bigcount, coll_vwide, rma_bigcount, file_bigcount, type_wide.)
 * With an argument (type), the last rank then makes that call again
 * under MPI_ERRORS_ARE_FATAL, so the caller can read the message isthmus aborts with.
 */
#include "check.h"
#include <limits.h>
#include <string.h>

#if MPI_VERSION >= 4
#define EXPECT_COUNT_ERR(call, what)                                                               \
    do {                                                                                           \
        int rc_ = (call), cls_ = -1;                                                               \
        MPI_Error_class(rc_, &cls_);                                                               \
        CHECK(cls_ == MPI_ERR_COUNT, "%s: error class %d, not MPI_ERR_COUNT", what, cls_);         \
    } while (0)
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const MPI_Count huge = (MPI_Count)1 << 40, below = (MPI_Count)INT_MIN - 5;
    const int peer = (rank + 1) % size;
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    EXPECT_COUNT_ERR(MPI_Send_c(NULL, below, MPI_BYTE, peer, 1, MPI_COMM_WORLD), "Send_c");
    EXPECT_COUNT_ERR(MPI_Isend_c(NULL, below, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq), "Isend_c");
    EXPECT_COUNT_ERR(MPI_Recv_c(NULL, below, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE), "Recv_c");
    EXPECT_COUNT_ERR(MPI_Bsend_c(NULL, below, MPI_BYTE, peer, 1, MPI_COMM_WORLD), "Bsend_c");
    EXPECT_COUNT_ERR(MPI_Send_init_c(NULL, below, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq),
                     "Send_init_c");
    EXPECT_COUNT_ERR(MPI_Bcast_c(NULL, below, MPI_BYTE, 0, MPI_COMM_WORLD), "Bcast_c");
    EXPECT_COUNT_ERR(MPI_Type_contiguous_c(below, MPI_BYTE, &t), "Type_contiguous_c");
    int rc = MPI_Type_vector_c(huge, 1, 2, MPI_BYTE, &t), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "Type_vector_c(2^40, 1, 2): class %d", cls);
    CHECK(rq == MPI_REQUEST_NULL && t == MPI_DATATYPE_NULL, "a refused call made a handle");
    /* every rank still talks to every other: nothing above left a message behind */
    int sum = 0, one = 1;
    CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "Allreduce");
    CHECK(sum == size, "Allreduce after the refusals gave %d", sum);
    if (argc > 1 && rank == size - 1) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        if (!strcmp(argv[1], "type"))
            MPI_Type_vector_c(huge, 1, 2, MPI_BYTE, &t);
        CHECK(0, "%s: the fatal call returned", argv[1]);
    }
#else
    if (rank == 0)
        printf("largecount_limits: skipped: the library implements MPI %d.%d\n", MPI_VERSION,
               MPI_SUBVERSION);
#endif
    int ok = check_finish("largecount_limits");
    MPI_Finalize();
    return ok;
}
