/*
 * rma_getacc_derived: MPI_Get_accumulate with a derived target datatype (a vector of ints)
 * on the "far" peer (another site on a multi-site run), with MPI_SUM and MPI_NO_OP, small
 * (one frame) and large (20000 strided ints: many frames, one reply), checking the fetched
 * values and what the target holds afterwards; and a get-accumulate whose origin is a NULL
 * buffer of count 0 with MPI_SUM while the result has 8 ints: the signatures differ, so it
 * is refused (MPI_ERR_TYPE), not run as MPI_NO_OP (left out with the argument "noerrors":
 * the vendors alone do not check it). Works for any size >= 1.
 */
#include "check.h"
#include <string.h>

#define N 20000 /* ints in the large vector; the window holds 2 N */

static int initial(int owner, int i) { return owner * 100000 + i; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int far = peer_far_to(rank, size);
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < 2 * N; i++)
        mem[i] = initial(rank, i);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Datatype small, large;
    MPI_Type_vector(8, 1, 2, MPI_INT, &small); /* ints 0, 2, ..., 14 from the displacement */
    MPI_Type_vector(N, 1, 2, MPI_INT, &large);
    MPI_Type_commit(&small);
    MPI_Type_commit(&large);
    int ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, res[8], nores[8];
    int *big = malloc(N * sizeof(int)), *bigres = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        big[i] = 3;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, far, 0, win);
    CHECK_RC(MPI_Get_accumulate(ones, 8, MPI_INT, res, 8, MPI_INT, far, 0, 1, small, MPI_SUM,
                                win), "Get_accumulate SUM, small vector");
    CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_INT, nores, 8, MPI_INT, far, 1, 1, small, MPI_NO_OP,
                                win), "Get_accumulate NO_OP, small vector");
    MPI_Win_flush(far, win);
    /* the even ints 16.. of the window, N of them from displacement 16 would overrun: the
     * large vector starts at 1 (odd ints 1, 3, ..., 2N-1) */
    CHECK_RC(MPI_Get_accumulate(big, N, MPI_INT, bigres, N, MPI_INT, far, 1, 1, large, MPI_SUM,
                                win), "Get_accumulate SUM, large vector");
    /* erroneous: the vendors alone do not check it (MPICH 4.0.2 reads the NULL buffer, Open
     * MPI 4.1.4 returns MPI_SUCCESS); "noerrors" leaves it out */
    int erroneous = !(argc > 1 && !strcmp(argv[1], "noerrors"));
    int rc = erroneous ? MPI_Get_accumulate(NULL, 0, MPI_INT, nores, 8, MPI_INT, far, 0, 8,
                                            MPI_INT, MPI_SUM, win)
                       : MPI_ERR_TYPE;
    int cls = -1;
    MPI_Error_class(rc, &cls);
    MPI_Win_unlock(far, win);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TYPE,
          "a get-accumulate of SUM from no origin ints into 8: rc %d class %d, wanted "
          "MPI_ERR_TYPE", rc, cls);
    for (int i = 0; i < 8; i++) {
        CHECK(res[i] == initial(far, 2 * i), "SUM result %d: %d, wanted %d", i, res[i],
              initial(far, 2 * i));
        CHECK(nores[i] == initial(far, 2 * i + 1), "NO_OP result %d: %d, wanted %d", i, nores[i],
              initial(far, 2 * i + 1));
    }
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (bigres[i] != initial(far, 2 * i + 1))
            bad = i;
    CHECK(bad < 0, "large SUM result %d: %d, wanted %d", bad, bad < 0 ? 0 : bigres[bad],
          bad < 0 ? 0 : initial(far, 2 * bad + 1));

    /* what my window holds now: even ints 0..14 one more, odd ints three more */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    bad = -1;
    for (int i = 0; i < 2 * N && bad < 0; i++) {
        int want = initial(rank, i) + (i % 2 ? 3 : (i < 16 ? 1 : 0));
        if (mem[i] != want)
            bad = i;
    }
    CHECK(bad < 0, "window int %d: %d, wanted %d", bad, bad < 0 ? 0 : mem[bad],
          bad < 0 ? 0 : initial(rank, bad) + (bad % 2 ? 3 : (bad < 16 ? 1 : 0)));
    MPI_Win_unlock(rank, win);

    MPI_Type_free(&small);
    MPI_Type_free(&large);
    free(big);
    free(bigres);
    MPI_Win_free(&win);
    rc = check_finish("rma_getacc_derived");
    MPI_Finalize();
    return rc;
}
