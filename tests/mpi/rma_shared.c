/*
 * rma_shared: MPI_Win_allocate_shared on the ranks that share a node
 * (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), MPI_Win_shared_query, direct loads and
 * stores into a neighbour's segment, and MPI_Put/MPI_Get through the same window.
 * Over MPI_COMM_WORLD it must work when every rank is on this node and otherwise fail
 * with MPI_ERR_RMA_SHARED (under isthmus: ranks at several sites). Works for any size.
 */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size, nrank, nsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int *mine = NULL;
    MPI_Win w;
    CHECK_RC(MPI_Win_allocate_shared((MPI_Aint)sizeof(int) * (nrank + 1), sizeof(int),
                                     MPI_INFO_NULL, node, &mine, &w), "allocate_shared");
    int *flavor = NULL, flag = 0;
    MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "flavor %d", flag ? *flavor : -1);
    MPI_Win_lock_all(0, w);
    for (int i = 0; i <= nrank; i++)
        mine[i] = 100 * nrank + i;
    MPI_Win_sync(w);
    MPI_Barrier(node);
    MPI_Win_sync(w);
    int right = (nrank + 1) % nsize;
    MPI_Aint sz = 0;
    int du = 0, *theirs = NULL;
    CHECK_RC(MPI_Win_shared_query(w, right, &sz, &du, &theirs), "shared_query");
    CHECK(sz == (MPI_Aint)sizeof(int) * (right + 1) && du == (int)sizeof(int),
          "neighbour's segment %ld bytes, unit %d", (long)sz, du);
    for (int i = 0; i <= right; i++)
        CHECK(theirs[i] == 100 * right + i, "load [%d] = %d", i, theirs[i]);
    int v = -7, back = 0;
    MPI_Barrier(node);
    CHECK_RC(MPI_Put(&v, 1, MPI_INT, right, right, 1, MPI_INT, w), "put");
    MPI_Win_flush(right, w);
    CHECK_RC(MPI_Get(&back, 1, MPI_INT, right, right, 1, MPI_INT, w), "get");
    MPI_Win_flush(right, w);
    CHECK(back == -7, "get after put %d", back);
    MPI_Barrier(node);
    MPI_Win_sync(w);
    CHECK(mine[nrank] == -7, "my last int %d after the left neighbour's put", mine[nrank]);
    MPI_Win_unlock_all(w);
    MPI_Win_free(&w);

    /* odd ranks of the node give no memory: their segments are empty, with no address
     * (NULL, as MPICH answers; MPICH's win_shared_noncontig_put asserts it) */
    CHECK_RC(MPI_Win_allocate_shared(nrank % 2 ? 0 : (MPI_Aint)sizeof(int), sizeof(int),
                                     MPI_INFO_NULL, node, &mine, &w), "allocate_shared, some 0");
    for (int r = 0; r < nsize; r++) {
        int *b = NULL;
        CHECK_RC(MPI_Win_shared_query(w, r, &sz, &du, &b), "shared_query");
        if (r % 2)
            CHECK(sz == 0 && b == NULL, "empty segment of %d: %ld bytes at %p", r, (long)sz,
                  (void *)b);
        else
            CHECK(sz == (MPI_Aint)sizeof(int) && b != NULL, "segment of %d: %ld bytes at %p", r,
                  (long)sz, (void *)b);
    }
    MPI_Win_free(&w);

    /* over every rank: works on one node, else MPI_ERR_RMA_SHARED */
    int all_here = 0;
    MPI_Allreduce(&nsize, &all_here, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                     &mine, &w);
    int cls = 0;
    MPI_Error_class(rc, &cls);
    if (all_here == size) {
        CHECK(rc == MPI_SUCCESS, "allocate_shared over one node: class %d", cls);
        if (rc == MPI_SUCCESS)
            MPI_Win_free(&w);
    } else {
        CHECK(cls == MPI_ERR_RMA_SHARED, "allocate_shared across nodes: class %d", cls);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&node);
    return check_finish("rma_shared") + MPI_Finalize();
}
