/*
 * coll_largecount: the MPI-4 large-count (_c) forms with counts that fit an int:
 * Send_c/Recv_c with Get_count_c, Type_size_c, Type_contiguous_c, Bcast_c, Allreduce_c,
 * Gatherv_c (NULL vectors at the non-roots), Scatterv_c, Allgatherv_c, Alltoallv_c,
 * Reduce_scatter_c; the nonblocking and persistent forms with per-rank arrays
 * (Ialltoallv_c, Igatherv_c, Ireduce_scatter_c, Alltoallv_init_c; the arrays are read while
 * the operation is pending; Reduce_scatter_init_c keeps its own copy of the counts),
 * Pack_c/Unpack_c and their external32 forms one after the other (position in and out), Neighbor_alltoallv_c on a ring, a user op of Op_create_c, and
 * Type_get_envelope_c. Skipped, saying so, under an MPI older than 4.0.
 */
#include "check.h"
#include <string.h>

#if MPI_VERSION >= 4
static void add_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    (void)dt;
    for (MPI_Count i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int a[5] = {rank, rank + 1, rank + 2, rank + 3, rank + 4}, b[5] = {0};
    MPI_Status st;
    MPI_Request rq;
    MPI_Irecv_c(b, 5, MPI_INT, from, 7, MPI_COMM_WORLD, &rq);
    MPI_Send_c(a, (MPI_Count)5, MPI_INT, to, 7, MPI_COMM_WORLD);
    MPI_Wait(&rq, &st);
    MPI_Count n = -1, sz = -1;
    MPI_Get_count_c(&st, MPI_INT, &n);
    MPI_Type_size_c(MPI_DOUBLE, &sz);
    CHECK(n == 5 && b[4] == from + 4 && sz == 8, "p2p _c: count %lld b[4] %d size %lld",
          (long long)n, b[4], (long long)sz);
    MPI_Datatype three;
    MPI_Type_contiguous_c(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    MPI_Type_size_c(three, &sz);
    CHECK(sz == 12, "Type_contiguous_c size %lld", (long long)sz);
    MPI_Type_free(&three);
    int v = rank == 0 ? 99 : -1, sum = -1;
    MPI_Bcast_c(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce_c(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(v == 99 && sum == size * (size - 1) / 2, "Bcast_c %d Allreduce_c %d", v, sum);
    MPI_Count *cnt = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *dis = malloc(sizeof(MPI_Aint) * size);
    int *all = malloc(sizeof(int) * size * 2), mine[2] = {rank * 10, rank * 10 + 1};
    for (int r = 0; r < size; r++) {
        cnt[r] = 2;
        dis[r] = 2 * r;
    }
    for (int i = 0; i < 2 * size; i++)
        all[i] = -1;
    MPI_Gatherv_c(mine, 2, MPI_INT, all, rank == 0 ? cnt : NULL, rank == 0 ? dis : NULL, MPI_INT,
                  0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++)
        CHECK(all[2 * r] == r * 10 && all[2 * r + 1] == r * 10 + 1, "Gatherv_c from %d", r);
    int got[2] = {-1, -1};
    MPI_Scatterv_c(all, cnt, dis, MPI_INT, got, 2, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(got[0] == rank * 10 && got[1] == rank * 10 + 1, "Scatterv_c %d %d", got[0], got[1]);
    for (int i = 0; i < 2 * size; i++)
        all[i] = -1;
    MPI_Allgatherv_c(mine, 2, MPI_INT, all, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(all[2 * r] == r * 10, "Allgatherv_c from %d", r);
    int *sb = malloc(sizeof(int) * 2 * size), *rb = malloc(sizeof(int) * 2 * size);
    for (int r = 0; r < size; r++)
        sb[2 * r] = sb[2 * r + 1] = rank * 100 + r;
    MPI_Alltoallv_c(sb, cnt, dis, MPI_INT, rb, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(rb[2 * r] == r * 100 + rank, "Alltoallv_c from %d: %d", r, rb[2 * r]);
    int *rs = malloc(sizeof(int) * 2 * size), out[2] = {-1, -1};
    for (int i = 0; i < 2 * size; i++)
        rs[i] = i;
    MPI_Reduce_scatter_c(rs, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(out[0] == size * 2 * rank && out[1] == size * (2 * rank + 1),
          "Reduce_scatter_c %d %d", out[0], out[1]);
    /* nonblocking and persistent, with arrays */
    MPI_Request rq2[3];
    for (int i = 0; i < 2 * size; i++)
        rb[i] = -1;
    MPI_Ialltoallv_c(sb, cnt, dis, MPI_INT, rb, cnt, dis, MPI_INT, MPI_COMM_WORLD, &rq2[0]);
    for (int i = 0; i < 2 * size; i++)
        all[i] = -1;
    MPI_Igatherv_c(mine, 2, MPI_INT, all, rank == 0 ? cnt : NULL, rank == 0 ? dis : NULL,
                   MPI_INT, 0, MPI_COMM_WORLD, &rq2[1]);
    out[0] = out[1] = -1;
    MPI_Ireduce_scatter_c(rs, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq2[2]);
    MPI_Waitall(3, rq2, MPI_STATUSES_IGNORE);
    for (int r = 0; r < size; r++)
        CHECK(rb[2 * r] == r * 100 + rank, "Ialltoallv_c from %d: %d", r, rb[2 * r]);
    for (int r = 0; rank == 0 && r < size; r++)
        CHECK(all[2 * r + 1] == r * 10 + 1, "Igatherv_c from %d", r);
    CHECK(out[1] == size * (2 * rank + 1), "Ireduce_scatter_c %d", out[1]);
    MPI_Request pr;
    MPI_Alltoallv_init_c(sb, cnt, dis, MPI_INT, rb, cnt, dis, MPI_INT, MPI_COMM_WORLD,
                         MPI_INFO_NULL, &pr);
    for (int k = 0; k < 2; k++) {
        for (int r = 0; r < size; r++)
            sb[2 * r] = sb[2 * r + 1] = rank * 100 + r + k;
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        for (int r = 0; r < size; r++)
            CHECK(rb[2 * r] == r * 100 + rank + k, "Alltoallv_init_c run %d from %d: %d", k, r,
                  rb[2 * r]);
    }
    MPI_Request_free(&pr);
    /* the counts given at initialization, overwritten before the start: the request must
     * have kept its own (MPICH copies them; mpi4py 4.1.2 frees the array it passed) */
    MPI_Count *rc_counts = malloc(sizeof(MPI_Count) * size);
    for (int r = 0; r < size; r++)
        rc_counts[r] = 2;
    MPI_Reduce_scatter_init_c(rs, out, rc_counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &pr);
    for (int r = 0; r < size; r++)
        rc_counts[r] = -77;
    free(rc_counts);
    out[0] = out[1] = -1;
    MPI_Start(&pr);
    MPI_Wait(&pr, MPI_STATUS_IGNORE);
    MPI_Request_free(&pr);
    CHECK(out[0] == size * 2 * rank && out[1] == size * (2 * rank + 1),
          "Reduce_scatter_init_c with its counts array gone: %d %d", out[0], out[1]);
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1}, nb[2] = {-1, -1}, me2[2] = {rank, rank};
    MPI_Count ncnt[2] = {1, 1};
    MPI_Aint ndis[2] = {0, 1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Neighbor_alltoallv_c(me2, ncnt, ndis, MPI_INT, nb, ncnt, ndis, MPI_INT, ring);
    CHECK(nb[0] == (rank - 1 + size) % size && nb[1] == (rank + 1) % size,
          "Neighbor_alltoallv_c: %d %d", nb[0], nb[1]);
    MPI_Comm_free(&ring);
    MPI_Op op;
    MPI_Op_create_c(add_c, 1, &op);
    int two[2] = {1, rank}, tot[2] = {0, 0};
    MPI_Allreduce(two, tot, 2, MPI_INT, op, MPI_COMM_WORLD);
    CHECK(tot[0] == size && tot[1] == size * (size - 1) / 2, "Op_create_c allreduce: %d %d",
          tot[0], tot[1]);
    MPI_Op_free(&op);
    /* position is read and written: two packs one after the other, and back */
    char pk[64], ek[64];
    short sh[2] = {(short)rank, 7}, sh2[2] = {0, 0};
    int in2[2] = {rank, -rank}, in3[2] = {0, 0};
    MPI_Count pos = 0;
    MPI_Pack_c(in2, 2, MPI_INT, pk, sizeof pk, &pos, MPI_COMM_WORLD);
    MPI_Pack_c(sh, 2, MPI_SHORT, pk, sizeof pk, &pos, MPI_COMM_WORLD);
    CHECK(pos == 12, "Pack_c: position %lld after 2 ints and 2 shorts", (long long)pos);
    pos = 0;
    MPI_Unpack_c(pk, sizeof pk, &pos, in3, 2, MPI_INT, MPI_COMM_WORLD);
    MPI_Unpack_c(pk, sizeof pk, &pos, sh2, 2, MPI_SHORT, MPI_COMM_WORLD);
    CHECK(in3[1] == -rank && sh2[0] == rank && sh2[1] == 7 && pos == 12,
          "Unpack_c: %d %d %d, position %lld", in3[1], sh2[0], sh2[1], (long long)pos);
    pos = 0;
    MPI_Pack_external_c("external32", in2, 2, MPI_INT, ek, sizeof ek, &pos);
    MPI_Pack_external_c("external32", sh, 2, MPI_SHORT, ek, sizeof ek, &pos);
    MPI_Count epos = 0;
    sh2[0] = sh2[1] = 0;
    MPI_Unpack_external_c("external32", ek, pos, &epos, in3, 2, MPI_INT);
    MPI_Unpack_external_c("external32", ek, pos, &epos, sh2, 2, MPI_SHORT);
    CHECK(pos == 12 && epos == 12 && sh2[1] == 7, "Pack/Unpack_external_c: %lld %lld %d",
          (long long)pos, (long long)epos, sh2[1]);
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Count ni = -1, na = -1, nl = -1, nt = -1;
    int comb = -1;
    MPI_Type_get_envelope_c(vec, &ni, &na, &nl, &nt, &comb);
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nl == 0 && nt == 1,
          "Type_get_envelope_c: combiner %d, %lld %lld %lld %lld", comb, (long long)ni,
          (long long)na, (long long)nl, (long long)nt);
    MPI_Type_free(&vec);
    free(cnt);
    free(dis);
    free(all);
    free(sb);
    free(rb);
    free(rs);
#else
    if (rank == 0)
        printf("coll_largecount: skipped: the library implements MPI %d.%d, _c forms are MPI 4.0\n",
               MPI_VERSION, MPI_SUBVERSION);
#endif
    int rc = check_finish("coll_largecount");
    MPI_Finalize();
    return rc;
}
