/*
 * coll_zero_args: every collective called with zero counts and NULL buffers, with and
 * without MPI_IN_PLACE where MPI allows it, blocking and nonblocking, on every rank
 * (mpi4py's suite does this: MPI_Reduce_scatter_block(MPI_IN_PLACE, NULL, 0, ...) once
 * failed on each site's second rank only, and the next collective hung). Each call must
 * return MPI_SUCCESS on every rank, as both vendors do; the return codes are compared
 * across ranks after each call so that a check failing on some ranks only is named.
 * Alltoallv/w and the neighborhood collectives receive into a dummy address: MPICH refuses a NULL send and receive buffer
 * there as aliased even with zero counts.
 */
#include "check.h"
#include <string.h>

static int rank_, size_;

/* Every rank's code for one call; a mismatch or an error is one failure naming the ranks. */
static void agree(int rc, const char *what)
{
    int *all = malloc(sizeof(int) * (size_t)size_);
    MPI_Allgather(&rc, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size_; r++)
        if (rank_ == 0 && all[r] != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING] = "";
            int len = 0;
            MPI_Error_string(all[r], msg, &len);
            CHECK(0, "%s: rank %d returned %d (%s)", what, r, all[r], msg);
        }
    free(all);
}

static void agree_req(int rc, MPI_Request *rq, const char *what)
{
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(rq, MPI_STATUS_IGNORE);
    agree(rc, what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Comm_rank(w, &rank_);
    MPI_Comm_size(w, &size_);
    int n = size_, *zero = calloc((size_t)n, sizeof(int));
    MPI_Datatype *ints = malloc(sizeof(MPI_Datatype) * (size_t)n);
    for (int r = 0; r < n; r++)
        ints[r] = MPI_INT;
    const int root = n - 1;
    void *IP = MPI_IN_PLACE;
    int dummy; /* MPICH calls a NULL send and receive buffer of Alltoallv/w aliased */
    void *rb = &dummy;
    MPI_Request rq;

    for (int pass = 0; pass < 2; pass++) { /* the second pass: again, all in step */
        agree(MPI_Barrier(w), "Barrier");
        agree(MPI_Bcast(NULL, 0, MPI_INT, root, w), "Bcast");
        agree(MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, root, w), "Reduce");
        agree(MPI_Reduce(rank_ == root ? IP : NULL, NULL, 0, MPI_INT, MPI_SUM, root, w),
              "Reduce in place");
        agree(MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, w), "Allreduce");
        agree(MPI_Allreduce(IP, NULL, 0, MPI_INT, MPI_SUM, w), "Allreduce in place");
        agree(MPI_Reduce_local(NULL, NULL, 0, MPI_INT, MPI_SUM), "Reduce_local");
        agree(MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, w), "Gather");
        agree(MPI_Gather(rank_ == root ? IP : NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, w),
              "Gather in place");
        agree(MPI_Gatherv(NULL, 0, MPI_INT, NULL, zero, zero, MPI_INT, root, w), "Gatherv");
        agree(MPI_Gatherv(rank_ == root ? IP : NULL, 0, MPI_INT, NULL, zero, zero, MPI_INT, root,
                          w),
              "Gatherv in place");
        agree(MPI_Scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, w), "Scatter");
        agree(MPI_Scatter(NULL, 0, MPI_INT, rank_ == root ? IP : NULL, 0, MPI_INT, root, w),
              "Scatter in place");
        agree(MPI_Scatterv(NULL, zero, zero, MPI_INT, NULL, 0, MPI_INT, root, w), "Scatterv");
        agree(MPI_Scatterv(NULL, zero, zero, MPI_INT, rank_ == root ? IP : NULL, 0, MPI_INT, root,
                           w),
              "Scatterv in place");
        agree(MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, w), "Allgather");
        agree(MPI_Allgather(IP, 0, MPI_INT, NULL, 0, MPI_INT, w), "Allgather in place");
        agree(MPI_Allgatherv(NULL, 0, MPI_INT, NULL, zero, zero, MPI_INT, w), "Allgatherv");
        agree(MPI_Allgatherv(IP, 0, MPI_INT, NULL, zero, zero, MPI_INT, w),
              "Allgatherv in place");
        agree(MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, w), "Alltoall");
        agree(MPI_Alltoall(IP, 0, MPI_INT, NULL, 0, MPI_INT, w), "Alltoall in place");
        agree(MPI_Alltoallv(NULL, zero, zero, MPI_INT, rb, zero, zero, MPI_INT, w),
              "Alltoallv");
        agree(MPI_Alltoallv(IP, zero, zero, MPI_INT, NULL, zero, zero, MPI_INT, w),
              "Alltoallv in place");
        agree(MPI_Alltoallw(NULL, zero, zero, ints, rb, zero, zero, ints, w), "Alltoallw");
        agree(MPI_Alltoallw(IP, zero, zero, ints, NULL, zero, zero, ints, w),
              "Alltoallw in place");
        agree(MPI_Reduce_scatter(NULL, NULL, zero, MPI_INT, MPI_SUM, w), "Reduce_scatter");
        agree(MPI_Reduce_scatter(IP, NULL, zero, MPI_INT, MPI_SUM, w),
              "Reduce_scatter in place");
        agree(MPI_Reduce_scatter_block(NULL, NULL, 0, MPI_INT, MPI_SUM, w),
              "Reduce_scatter_block");
        agree(MPI_Reduce_scatter_block(IP, NULL, 0, MPI_INT, MPI_SUM, w),
              "Reduce_scatter_block in place");
        agree(MPI_Scan(NULL, NULL, 0, MPI_INT, MPI_SUM, w), "Scan");
        agree(MPI_Scan(IP, NULL, 0, MPI_INT, MPI_SUM, w), "Scan in place");
        agree(MPI_Exscan(NULL, NULL, 0, MPI_INT, MPI_SUM, w), "Exscan");
        agree(MPI_Exscan(IP, NULL, 0, MPI_INT, MPI_SUM, w), "Exscan in place");

        agree_req(MPI_Ibarrier(w, &rq), &rq, "Ibarrier");
        agree_req(MPI_Ibcast(NULL, 0, MPI_INT, root, w, &rq), &rq, "Ibcast");
        agree_req(MPI_Ireduce(NULL, NULL, 0, MPI_INT, MPI_SUM, root, w, &rq), &rq, "Ireduce");
        agree_req(MPI_Ireduce(rank_ == root ? IP : NULL, NULL, 0, MPI_INT, MPI_SUM, root, w, &rq),
                  &rq, "Ireduce in place");
        agree_req(MPI_Iallreduce(IP, NULL, 0, MPI_INT, MPI_SUM, w, &rq), &rq,
                  "Iallreduce in place");
        agree_req(MPI_Igather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, w, &rq), &rq, "Igather");
        agree_req(MPI_Igatherv(NULL, 0, MPI_INT, NULL, zero, zero, MPI_INT, root, w, &rq), &rq,
                  "Igatherv");
        agree_req(MPI_Iscatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, w, &rq), &rq,
                  "Iscatter");
        agree_req(MPI_Iscatterv(NULL, zero, zero, MPI_INT, NULL, 0, MPI_INT, root, w, &rq), &rq,
                  "Iscatterv");
        agree_req(MPI_Iallgather(IP, 0, MPI_INT, NULL, 0, MPI_INT, w, &rq), &rq,
                  "Iallgather in place");
        agree_req(MPI_Iallgatherv(NULL, 0, MPI_INT, NULL, zero, zero, MPI_INT, w, &rq), &rq,
                  "Iallgatherv");
        agree_req(MPI_Ialltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, w, &rq), &rq, "Ialltoall");
        agree_req(MPI_Ialltoallv(NULL, zero, zero, MPI_INT, rb, zero, zero, MPI_INT, w, &rq),
                  &rq, "Ialltoallv");
        agree_req(MPI_Ialltoallw(NULL, zero, zero, ints, rb, zero, zero, ints, w, &rq), &rq,
                  "Ialltoallw");
        agree_req(MPI_Ireduce_scatter(IP, NULL, zero, MPI_INT, MPI_SUM, w, &rq), &rq,
                  "Ireduce_scatter in place");
        agree_req(MPI_Ireduce_scatter_block(IP, NULL, 0, MPI_INT, MPI_SUM, w, &rq), &rq,
                  "Ireduce_scatter_block in place");
        agree_req(MPI_Ireduce_scatter_block(NULL, NULL, 0, MPI_INT, MPI_SUM, w, &rq), &rq,
                  "Ireduce_scatter_block");
        agree_req(MPI_Iscan(IP, NULL, 0, MPI_INT, MPI_SUM, w, &rq), &rq, "Iscan in place");
        agree_req(MPI_Iexscan(NULL, NULL, 0, MPI_INT, MPI_SUM, w, &rq), &rq, "Iexscan");

        MPI_Comm cart;
        int dims[1] = {n}, periods[1] = {1};
        MPI_Cart_create(w, 1, dims, periods, 0, &cart);
        MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
        agree(MPI_Neighbor_allgather(NULL, 0, MPI_INT, rb, 0, MPI_INT, cart),
              "Neighbor_allgather");
        agree(MPI_Neighbor_allgatherv(NULL, 0, MPI_INT, rb, zero, zero, MPI_INT, cart),
              "Neighbor_allgatherv");
        agree(MPI_Neighbor_alltoall(NULL, 0, MPI_INT, rb, 0, MPI_INT, cart), "Neighbor_alltoall");
        agree(MPI_Neighbor_alltoallv(NULL, zero, zero, MPI_INT, rb, zero, zero, MPI_INT, cart),
              "Neighbor_alltoallv");
        MPI_Aint azero[2] = {0, 0};
        agree(MPI_Neighbor_alltoallw(NULL, zero, azero, ints, rb, zero, azero, ints, cart),
              "Neighbor_alltoallw");
        agree_req(MPI_Ineighbor_alltoall(NULL, 0, MPI_INT, rb, 0, MPI_INT, cart, &rq), &rq,
                  "Ineighbor_alltoall");
        MPI_Comm_free(&cart);
    }
    free(zero);
    free(ints);
    int rc = check_finish("coll_zero_args");
    MPI_Finalize();
    return rc;
}
