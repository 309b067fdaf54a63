/*
 * rma_pscw: generalized active target synchronisation (MPI_Win_post, MPI_Win_start,
 * MPI_Win_complete, MPI_Win_wait, MPI_Win_test) and window info.
 *   pairs:  every rank exposes its window to its left neighbour and accesses its right
 *           one (a put and a get per epoch), 10 epochs in a row: each value is exact;
 *   many:   rank 0 exposes its window to all others, each accumulates into the same
 *           cells; rank 0 polls MPI_Win_test until the epoch ends: exact sums;
 *   self:   every rank exposes its window to all ranks and accesses all, itself included
 *           (a put into each one's cell), 3 epochs, the last ended by MPI_Win_test: a
 *           rank's POST and COMPLETE to itself must not wait (under MPICH a site of one
 *           rank hung in MPI_Win_post, sending itself the POST with a blocking send);
 *   info:   MPI_Win_get_info gives an info object, MPI_Win_set_info accepts hints.
 * Works for any size >= 1.
 */
#include "check.h"

enum { K = 8 };

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *mem = NULL;
    MPI_Win w;
    CHECK_RC(MPI_Win_allocate(2 * K * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &mem, &w), "Win_allocate");
    for (int i = 0; i < 2 * K; i++)
        mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group world, left_g, right_g, others, zero;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int left = (rank + size - 1) % size, right = (rank + 1) % size, z = 0;
    MPI_Group_incl(world, 1, &left, &left_g);
    MPI_Group_incl(world, 1, &right, &right_g);
    MPI_Group_excl(world, 1, &z, &others);
    MPI_Group_incl(world, 1, &z, &zero);

    for (int e = 0; e < 10; e++) {
        int v[K], got[K];
        for (int i = 0; i < K; i++)
            v[i] = e * 1000 + rank * 10 + i;
        CHECK_RC(MPI_Win_post(left_g, 0, w), "post");
        CHECK_RC(MPI_Win_start(right_g, 0, w), "start");
        CHECK_RC(MPI_Put(v, K, MPI_INT, right, 0, K, MPI_INT, w), "put");
        CHECK_RC(MPI_Get(got, K, MPI_INT, right, K, K, MPI_INT, w), "get");
        CHECK_RC(MPI_Win_complete(w), "complete");
        CHECK_RC(MPI_Win_wait(w), "wait");
        for (int i = 0; i < K; i++) {
            CHECK(mem[i] == e * 1000 + left * 10 + i, "epoch %d: [%d] = %d", e, i, mem[i]);
            /* what the right neighbour's second half held before this epoch */
            int want = e == 0 ? -1 : (e - 1) * 1000 + 7 * right + i;
            CHECK(got[i] == want, "epoch %d: got [%d] = %d, want %d", e, i, got[i], want);
        }
        for (int i = 0; i < K; i++)
            mem[K + i] = e * 1000 + 7 * rank + i; /* read by the left neighbour next epoch */
        MPI_Barrier(MPI_COMM_WORLD);
    }

    if (size > 1) {
        for (int i = 0; i < K; i++)
            mem[i] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            int flag = 0, polls = 0;
            CHECK_RC(MPI_Win_post(others, 0, w), "post many");
            while (!flag) {
                CHECK_RC(MPI_Win_test(w, &flag), "test");
                polls++;
            }
            for (int i = 0; i < K; i++)
                CHECK(mem[i] == (size - 1) * size / 2 * (i + 1), "sum [%d] = %d after %d polls",
                      i, mem[i], polls);
        } else {
            int add[K];
            for (int i = 0; i < K; i++)
                add[i] = rank * (i + 1);
            CHECK_RC(MPI_Win_start(zero, 0, w), "start many");
            CHECK_RC(MPI_Accumulate(add, K, MPI_INT, 0, 0, K, MPI_INT, MPI_SUM, w), "acc");
            CHECK_RC(MPI_Win_complete(w), "complete many");
        }
    }

    int cells = size < 2 * K ? size : 2 * K;
    for (int e = 0; e < 3; e++) {
        MPI_Barrier(MPI_COMM_WORLD); /* the previous epoch's checks are done everywhere */
        CHECK_RC(MPI_Win_post(world, 0, w), "post self");
        CHECK_RC(MPI_Win_start(world, 0, w), "start self");
        int v = rank * 10 + e;
        for (int t = 0; t < size && rank < cells; t++)
            CHECK_RC(MPI_Put(&v, 1, MPI_INT, t, rank, 1, MPI_INT, w), "put self");
        CHECK_RC(MPI_Win_complete(w), "complete self");
        if (e < 2) {
            CHECK_RC(MPI_Win_wait(w), "wait self");
        } else {
            int done = 0;
            while (!done)
                CHECK_RC(MPI_Win_test(w, &done), "test self");
        }
        for (int r = 0; r < cells; r++)
            CHECK(mem[r] == r * 10 + e, "self epoch %d: cell %d is %d, want %d", e, r, mem[r],
                  r * 10 + e);
    }

    MPI_Info info = MPI_INFO_NULL, hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "no_locks", "false");
    CHECK_RC(MPI_Win_set_info(w, hints), "set_info");
    CHECK_RC(MPI_Win_get_info(w, &info), "get_info");
    CHECK(info != MPI_INFO_NULL, "get_info gave MPI_INFO_NULL");
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Info_free(&hints);
    MPI_Group_free(&world);
    MPI_Group_free(&left_g);
    MPI_Group_free(&right_g);
    MPI_Group_free(&others);
    MPI_Group_free(&zero);
    MPI_Win_free(&w);
    return check_finish("rma_pscw") + MPI_Finalize();
}
