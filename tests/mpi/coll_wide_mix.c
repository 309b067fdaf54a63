/*
 * coll_wide_mix: the data movers' _c forms with displacements beyond INT_MAX on some ranks
 * and the int forms on the others, in one collective. Even ranks give their side of
 * MPI_Gatherv_c, MPI_Scatterv_c, MPI_Allgatherv_c, MPI_Alltoallv_c and MPI_Alltoallw_c
 * (blocking, then nonblocking) with MPI_BOTTOM and absolute addresses as displacements
 * (above 2^31 on this platform's heap: the wide road, with small data); with argument
 * "mix", odd ranks call the int forms with ordinary displacements (MPI lets ranks mix the
 * forms; a wide form that took another algorithm than its int form would hang), without
 * it every rank calls the _c forms. Mixing needs a communicator spanning sites: on one
 * site the int form goes to the vendor whole (docs/design.md "Large counts"). Every value
 * is checked.
 * Skipped, saying so, under MPI < 4.0 or where the heap lies below 2^31.
 */
#include "check.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
#define N 3 /* ints per block */

static int val(int from, int to, int i) { return from * 10007 + to * 101 + i; }

static MPI_Aint addr(const void *p)
{
    MPI_Aint a;
    MPI_Get_address(p, &a);
    return a;
}

/* p's displacement from MPI_BOTTOM in ints (a v-form's unit: the type's extent) */
static MPI_Aint at_int(const int *p) { return addr(p) / (MPI_Aint)sizeof(int); }

/* Gatherv to the last rank (odd or even by size), then scatterv from it. */
static void rooted(int rank, int size, int wide, int nb)
{
    int root = size - 1, *all = calloc((size_t)(N * size), sizeof(int)), mine[N];
    for (int i = 0; i < N; i++)
        mine[i] = val(rank, root, i);
    int cnt[64], dsp[64];
    MPI_Count cc[64];
    MPI_Aint ad[64];
    for (int r = 0; r < size; r++) {
        cnt[r] = N;
        dsp[r] = r * N;
        cc[r] = N;
        ad[r] = at_int(all + r * N);
    }
    MPI_Request q = MPI_REQUEST_NULL;
    if (wide && nb)
        MPI_Igatherv_c(mine, N, MPI_INT, MPI_BOTTOM, cc, ad, MPI_INT, root, MPI_COMM_WORLD, &q);
    else if (wide)
        MPI_Gatherv_c(mine, N, MPI_INT, MPI_BOTTOM, cc, ad, MPI_INT, root, MPI_COMM_WORLD);
    else if (nb)
        MPI_Igatherv(mine, N, MPI_INT, all, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD, &q);
    else
        MPI_Gatherv(mine, N, MPI_INT, all, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int r = 0; rank == root && r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(all[r * N + i] == val(r, root, i), "gatherv%s%s: block of %d", wide ? "_c" : "",
                  nb ? " (I)" : "", r);
    for (int r = 0; rank == root && r < size; r++)
        for (int i = 0; i < N; i++)
            all[r * N + i] = val(root, r, i);
    int got[N] = {0};
    if (wide && nb)
        MPI_Iscatterv_c(MPI_BOTTOM, cc, ad, MPI_INT, got, N, MPI_INT, root, MPI_COMM_WORLD, &q);
    else if (wide)
        MPI_Scatterv_c(MPI_BOTTOM, cc, ad, MPI_INT, got, N, MPI_INT, root, MPI_COMM_WORLD);
    else if (nb)
        MPI_Iscatterv(all, cnt, dsp, MPI_INT, got, N, MPI_INT, root, MPI_COMM_WORLD, &q);
    else
        MPI_Scatterv(all, cnt, dsp, MPI_INT, got, N, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(got[i] == val(root, rank, i), "scatterv%s%s: element %d", wide ? "_c" : "",
              nb ? " (I)" : "", i);
    free(all);
}

static void allgatherv(int rank, int size, int wide, int nb)
{
    int *all = calloc((size_t)(N * size), sizeof(int)), mine[N], cnt[64], dsp[64];
    MPI_Count cc[64];
    MPI_Aint ad[64];
    for (int i = 0; i < N; i++)
        mine[i] = val(rank, 0, i);
    for (int r = 0; r < size; r++) {
        cnt[r] = N;
        dsp[r] = (size - 1 - r) * N; /* reversed: blocks not in rank order */
        cc[r] = N;
        ad[r] = at_int(all + dsp[r]);
    }
    MPI_Request q = MPI_REQUEST_NULL;
    if (wide && nb)
        MPI_Iallgatherv_c(mine, N, MPI_INT, MPI_BOTTOM, cc, ad, MPI_INT, MPI_COMM_WORLD, &q);
    else if (wide)
        MPI_Allgatherv_c(mine, N, MPI_INT, MPI_BOTTOM, cc, ad, MPI_INT, MPI_COMM_WORLD);
    else if (nb)
        MPI_Iallgatherv(mine, N, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q);
    else
        MPI_Allgatherv(mine, N, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(all[dsp[r] + i] == val(r, 0, i), "allgatherv%s%s: block of %d",
                  wide ? "_c" : "", nb ? " (I)" : "", r);
    free(all);
}

/* alltoallv (w 0) or alltoallw (1) */
static void alltoall(int rank, int size, int wide, int nb, int w)
{
    int *out = calloc((size_t)(N * size), sizeof(int)), *in = calloc((size_t)(N * size), sizeof(int));
    int cnt[64], dsp[64], bdsp[64];
    MPI_Count cc[64];
    MPI_Aint so[64], ro[64], sv[64], rv[64]; /* in bytes (w) and in ints (v) */
    MPI_Datatype t[64];
    for (int r = 0; r < size; r++) {
        cnt[r] = cc[r] = N;
        dsp[r] = r * N;
        bdsp[r] = r * N * (int)sizeof(int);
        so[r] = addr(out + r * N);
        ro[r] = addr(in + r * N);
        sv[r] = at_int(out + r * N);
        rv[r] = at_int(in + r * N);
        t[r] = MPI_INT;
        for (int i = 0; i < N; i++)
            out[r * N + i] = val(rank, r, i);
    }
    MPI_Request q = MPI_REQUEST_NULL;
    if (wide && w && nb)
        MPI_Ialltoallw_c(MPI_BOTTOM, cc, so, t, MPI_BOTTOM, cc, ro, t, MPI_COMM_WORLD, &q);
    else if (wide && w)
        MPI_Alltoallw_c(MPI_BOTTOM, cc, so, t, MPI_BOTTOM, cc, ro, t, MPI_COMM_WORLD);
    else if (wide && nb)
        MPI_Ialltoallv_c(MPI_BOTTOM, cc, sv, MPI_INT, MPI_BOTTOM, cc, rv, MPI_INT, MPI_COMM_WORLD,
                         &q);
    else if (wide)
        MPI_Alltoallv_c(MPI_BOTTOM, cc, sv, MPI_INT, MPI_BOTTOM, cc, rv, MPI_INT, MPI_COMM_WORLD);
    else if (w && nb)
        MPI_Ialltoallw(out, cnt, bdsp, t, in, cnt, bdsp, t, MPI_COMM_WORLD, &q);
    else if (w)
        MPI_Alltoallw(out, cnt, bdsp, t, in, cnt, bdsp, t, MPI_COMM_WORLD);
    else if (nb)
        MPI_Ialltoallv(out, cnt, dsp, MPI_INT, in, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q);
    else
        MPI_Alltoallv(out, cnt, dsp, MPI_INT, in, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(in[r * N + i] == val(r, rank, i), "alltoall%s%s%s: block from %d",
                  w ? "w" : "v", wide ? "_c" : "", nb ? " (I)" : "", r);
    free(out);
    free(in);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    int *probe = malloc(sizeof *probe), low = at_int(probe) <= INT32_MAX, any = 0;
    MPI_Allreduce(&low, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    free(probe);
    if (any || size > 64) {
        if (rank == 0)
            printf("coll_wide_mix: skipped (a heap below 2^31, or more than 64 ranks)\n");
        MPI_Finalize();
        return 0;
    }
    int wide = argc > 1 && !strcmp(argv[1], "mix") ? rank % 2 == 0 : 1;
    for (int nb = 0; nb < 2; nb++) {
        rooted(rank, size, wide, nb);
        allgatherv(rank, size, wide, nb);
        alltoall(rank, size, wide, nb, 0);
        alltoall(rank, size, wide, nb, 1);
    }
#else
    if (rank == 0)
        printf("coll_wide_mix: skipped (MPI < 4.0)\n");
    MPI_Finalize();
    return 0;
#endif
    int rc = check_finish("coll_wide_mix");
    MPI_Finalize();
    return rc;
}
