/*
 * rma_zero_count: one-sided operations that move nothing. A count of 0, or a datatype of
 * size 0, is legal for every RMA call and changes nothing (MPI 4.1 §12.3); the origin
 * buffer may then be NULL. Every rank does each call, plain and request-based, to every
 * rank (at its own site and, under isthmus, at the others), in a fence epoch and in a
 * passive one (the request-based forms in the passive one only, as MPI allows), then checks no window byte changed. A window over MPI_COMM_SELF repeats the
 * get-accumulate mpi4py starts with: 0 bytes of MPI_BYTE combined with MPI_SUM, an op
 * MPI does not define on bytes but which, applied to no element, is no error in MPICH or
 * Open MPI. Works for any size.
 */
#include <string.h>

#include "check.h"

enum { CELLS = 4 };

/* Each zero-size operation to target t; in a passive epoch also the R* forms (MPI allows
 * them there only), completed at once. */
static void zero_ops(MPI_Win w, int t, MPI_Datatype empty, int passive)
{
    MPI_Request rq[4];
    int junk = 0;
    CHECK_RC(MPI_Put(NULL, 0, MPI_INT, t, 0, 0, MPI_INT, w), "put count 0");
    CHECK_RC(MPI_Get(NULL, 0, MPI_INT, t, 0, 0, MPI_INT, w), "get count 0");
    CHECK_RC(MPI_Accumulate(NULL, 0, MPI_INT, t, 0, 0, MPI_INT, MPI_SUM, w), "accumulate 0");
    CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_INT, NULL, 0, MPI_INT, t, 0, 0, MPI_INT, MPI_SUM,
                                w), "get_accumulate count 0");
    CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_INT, NULL, 0, MPI_INT, t, 0, 0, MPI_INT,
                                MPI_NO_OP, w), "get_accumulate no_op count 0");
    CHECK_RC(MPI_Put(&junk, 3, empty, t, 1, 3, empty, w), "put of a 0-byte type");
    CHECK_RC(MPI_Accumulate(&junk, 2, empty, t, 1, 2, empty, MPI_REPLACE, w),
             "accumulate of a 0-byte type");
    CHECK_RC(MPI_Get(&junk, 3, empty, t, 1, 3, empty, w), "get of a 0-byte type");
    CHECK(junk == 0, "a 0-byte get wrote %d into the origin", junk);
    if (!passive)
        return;
    CHECK_RC(MPI_Rput(NULL, 0, MPI_INT, t, 0, 0, MPI_INT, w, &rq[0]), "rput count 0");
    CHECK_RC(MPI_Rget(NULL, 0, MPI_INT, t, 0, 0, MPI_INT, w, &rq[1]), "rget count 0");
    CHECK_RC(MPI_Raccumulate(NULL, 0, MPI_INT, t, 0, 0, MPI_INT, MPI_MAX, w, &rq[2]),
             "raccumulate count 0");
    CHECK_RC(MPI_Rget_accumulate(NULL, 0, MPI_INT, NULL, 0, MPI_INT, t, 0, 0, MPI_INT,
                                 MPI_REPLACE, w, &rq[3]), "rget_accumulate count 0");
    CHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE), "waitall of the R* forms");
}

static void check_cells(const int *cells, int rank, const char *when)
{
    for (int i = 0; i < CELLS; i++)
        CHECK(cells[i] == 10 * rank + i, "%s: cell %d is %d, was %d", when, i, cells[i],
              10 * rank + i);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);

    int *cells;
    MPI_Win w;
    CHECK_RC(MPI_Win_allocate(CELLS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &cells, &w), "win_allocate");
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w);
    for (int i = 0; i < CELLS; i++)
        cells[i] = 10 * rank + i;
    MPI_Win_unlock(rank, w);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_fence(0, w);
    for (int t = 0; t < size; t++)
        zero_ops(w, t, empty, 0);
    MPI_Win_fence(0, w);
    MPI_Win_lock_all(0, w);
    for (int t = 0; t < size; t++) {
        zero_ops(w, t, empty, 1);
        CHECK_RC(MPI_Win_flush(t, w), "flush");
    }
    MPI_Win_unlock_all(w);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w);
    check_cells(cells, rank, "after the zero-size operations");
    MPI_Win_unlock(rank, w);
    MPI_Win_free(&w);

    /* over MPI_COMM_SELF: the window's one member is its own target */
    char byte = 5, res = 7;
    MPI_Win self;
    CHECK_RC(MPI_Win_create(&byte, 1, 1, MPI_INFO_NULL, MPI_COMM_SELF, &self), "self window");
    MPI_Win_set_errhandler(self, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, self);
    CHECK_RC(MPI_Get_accumulate(&byte, 0, MPI_BYTE, &res, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE,
                                MPI_SUM, self), "get_accumulate of 0 bytes with MPI_SUM");
    CHECK_RC(MPI_Accumulate(NULL, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, MPI_SUM, self),
             "accumulate of 0 bytes with MPI_SUM");
    zero_ops(self, 0, empty, 0);
    MPI_Win_fence(0, self);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, self);
    zero_ops(self, 0, empty, 1);
    MPI_Win_unlock(0, self);
    CHECK(byte == 5 && res == 7, "self window byte %d, result %d after 0-byte operations", byte,
          res);
    MPI_Win_free(&self);

    MPI_Type_free(&empty);
    return check_finish("rma_zero_count") + MPI_Finalize();
}
