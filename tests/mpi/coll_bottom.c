/*
 * coll_bottom: MPI_Alltoallw and MPI_Alltoallv with MPI_BOTTOM as the send and receive
 * buffer and types that hold absolute addresses (MPI_Get_address), as mpi4py's suite
 * does (testAlltoallwBottom): MPI_BOTTOM is NULL in the ABI, and the core once read a NULL
 * send buffer as MPI_IN_PLACE, so every rank received its own old receive buffer.
 */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sb = malloc(sizeof(int) * (size_t)size), *rb = malloc(sizeof(int) * (size_t)size);
    int *one = malloc(sizeof(int) * (size_t)size), *zero = calloc((size_t)size, sizeof(int));
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * (size_t)size);
    MPI_Datatype *rt = malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int r = 0; r < size; r++) {
        int bl = 1;
        MPI_Aint a;
        sb[r] = rank * 1000 + r;
        rb[r] = -1;
        one[r] = 1;
        MPI_Get_address(&sb[r], &a);
        MPI_Type_create_struct(1, &bl, &a, (MPI_Datatype[]){MPI_INT}, &st[r]);
        MPI_Get_address(&rb[r], &a);
        MPI_Type_create_struct(1, &bl, &a, (MPI_Datatype[]){MPI_INT}, &rt[r]);
        MPI_Type_commit(&st[r]);
        MPI_Type_commit(&rt[r]);
    }
    MPI_Alltoallw(MPI_BOTTOM, one, zero, st, MPI_BOTTOM, one, zero, rt, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(rb[r] == r * 1000 + rank, "Alltoallw from MPI_BOTTOM: from %d got %d", r, rb[r]);
    for (int r = 0; r < size; r++)
        rb[r] = -1;
    MPI_Request rq;
    MPI_Ialltoallw(MPI_BOTTOM, one, zero, st, MPI_BOTTOM, one, zero, rt, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int r = 0; r < size; r++)
        CHECK(rb[r] == r * 1000 + rank, "Ialltoallw from MPI_BOTTOM: from %d got %d", r, rb[r]);
    /* in place still works */
    for (int r = 0; r < size; r++)
        rb[r] = rank * 1000 + r;
    MPI_Datatype *it = malloc(sizeof(MPI_Datatype) * (size_t)size);
    int *byte = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++) {
        it[r] = MPI_INT;
        byte[r] = r * (int)sizeof(int);
    }
    MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rb, one, byte, it, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(rb[r] == r * 1000 + rank, "Alltoallw in place: from %d got %d", r, rb[r]);
    for (int r = 0; r < size; r++) {
        MPI_Type_free(&st[r]);
        MPI_Type_free(&rt[r]);
    }
    free(sb);
    free(rb);
    free(one);
    free(zero);
    free(st);
    free(rt);
    free(it);
    free(byte);
    int rc = check_finish("coll_bottom");
    MPI_Finalize();
    return rc;
}
