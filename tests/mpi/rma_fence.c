/*
 * rma_fence: one-sided communication in active target mode (MPI_Win_fence).
 *   put:    every rank puts a block of K ints into every rank's window (its own
 *           slot), MPI_Win_create over a user array; after the fence each slot
 *           holds exactly its writer's values;
 *   get:    every rank reads another rank's slot back;
 *   acc:    every rank accumulates (MPI_SUM, MPI_MAX) into the same K ints of every
 *           rank: the sums are exact, whatever the order;
 *   ring:   40 fences back to back, each epoch putting the epoch number into the
 *           right neighbour (alternating two cells) and reading it from the left one,
 *           with no other synchronisation: an operation never lands before its target
 *           has ended the previous epoch;
 *   big:    MPI_Win_allocate of 1.5 MiB (several frames across sites) filled by
 *           one MPI_Put from the far peer and read back with one MPI_Get;
 *   types:  a strided (MPI_Type_vector) origin into a contiguous target, a window
 *           with disp_unit = sizeof(double), MPI_PROC_NULL targets;
 *   derived: derived target datatypes (a strided vector, an indexed type) for put, get
 *           and accumulate, also one of 30000 blocks (many frames across sites);
 *   attrs:  MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR,
 *           MPI_WIN_MODEL, MPI_Win_get_group, names.
 * Works for any size >= 1.
 */
#include "check.h"
#include <string.h>

enum { K = 16 };

static int rank, size;

static void put_get_acc(void)
{
    int *mem = malloc(sizeof(int) * (size_t)(size * K + K));
    for (int i = 0; i < size * K + K; i++)
        mem[i] = -1;
    MPI_Win w;
    CHECK_RC(MPI_Win_create(mem, (MPI_Aint)sizeof(int) * (size * K + K), sizeof(int),
                            MPI_INFO_NULL, MPI_COMM_WORLD, &w), "Win_create");
    int src[K];
    MPI_Win_fence(0, w);
    for (int t = 0; t < size; t++) {
        for (int i = 0; i < K; i++)
            src[i] = rank * 1000 + t * 10 + i;
        CHECK_RC(MPI_Put(src, K, MPI_INT, t, rank * K, K, MPI_INT, w), "Put");
        MPI_Win_fence(0, w); /* src is reused: the epoch must end first */
    }
    for (int r = 0; r < size; r++)
        for (int i = 0; i < K; i++)
            CHECK(mem[r * K + i] == r * 1000 + rank * 10 + i, "slot of rank %d [%d] = %d", r, i,
                  mem[r * K + i]);
    int got[K];
    int from = (rank + 1) % size;
    CHECK_RC(MPI_Get(got, K, MPI_INT, from, ((rank + 2) % size) * K, K, MPI_INT, w), "Get");
    MPI_Win_fence(0, w);
    for (int i = 0; i < K; i++)
        CHECK(got[i] == ((rank + 2) % size) * 1000 + from * 10 + i, "get [%d] = %d", i, got[i]);
    /* the accumulate region: K ints after the slots, reset by each rank for itself */
    for (int i = 0; i < K; i++)
        mem[size * K + i] = 0;
    MPI_Win_fence(0, w);
    int one[K];
    for (int i = 0; i < K; i++)
        one[i] = rank + i;
    for (int t = 0; t < size; t++)
        CHECK_RC(MPI_Accumulate(one, K, MPI_INT, t, size * K, K, MPI_INT, MPI_SUM, w), "Acc");
    MPI_Win_fence(0, w);
    int sumr = size * (size - 1) / 2;
    for (int i = 0; i < K; i++)
        CHECK(mem[size * K + i] == sumr + size * i, "sum [%d] = %d, want %d", i,
              mem[size * K + i], sumr + size * i);
    for (int t = 0; t < size; t++)
        CHECK_RC(MPI_Accumulate(one, K, MPI_INT, t, size * K, K, MPI_INT, MPI_MAX, w), "Acc max");
    MPI_Win_fence(0, w);
    for (int i = 0; i < K; i++)
        CHECK(mem[size * K + i] == sumr + size * i, "max left [%d] = %d", i, mem[size * K + i]);
    CHECK_RC(MPI_Win_free(&w), "Win_free");
    CHECK(w == MPI_WIN_NULL, "Win_free leaves MPI_WIN_NULL");
    free(mem);
}

static void ring(void)
{
    /* epoch e writes cell[e % 2]: the program reads a cell after the fence that ends its
     * epoch, while the next epoch writes the other one (a put and a local load of the same
     * location in one epoch would be erroneous); a put that landed before its target had
     * ended the previous epoch would overwrite the cell being checked */
    /* read through volatile: plain MPICH 4.0.2 at -O2 otherwise saw stale cells (and with
     * the cells on the stack, its puts overwrote the window handle next to them) */
    volatile int *cell = malloc(2 * sizeof(int));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    cell[0] = cell[1] = -1;
    MPI_Win w;
    CHECK_RC(MPI_Win_create((void *)cell, 2 * sizeof(int), sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &w), "Win_create ring");
    MPI_Win_fence(MPI_MODE_NOPRECEDE, w);
    for (int e = 0; e < 40; e++) {
        int v = e * 100 + rank;
        CHECK_RC(MPI_Put(&v, 1, MPI_INT, right, e % 2, 1, MPI_INT, w), "ring put");
        MPI_Win_fence(0, w);
        CHECK(cell[e % 2] == e * 100 + left, "epoch %d: cell %d, want %d", e, cell[e % 2],
              e * 100 + left);
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w);
    MPI_Win_free(&w);
    free((void *)cell);
}

static void big(void)
{
    const int n = 3 * 32768 + 17; /* 768 KiB of doubles, twice */
    double *base = NULL;
    MPI_Win w;
    CHECK_RC(MPI_Win_allocate((MPI_Aint)sizeof(double) * 2 * n, sizeof(double), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &base, &w), "Win_allocate");
    double *src = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) {
        src[i] = rank * 1e7 + i;
        base[i] = base[n + i] = -1;
    }
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    MPI_Win_fence(0, w);
    CHECK_RC(MPI_Put(src, n, MPI_DOUBLE, to, n, n, MPI_DOUBLE, w), "big put");
    MPI_Win_fence(0, w);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += base[n + i] != from * 1e7 + i;
    CHECK(bad == 0, "%d of %d doubles wrong after the big put from %d", bad, n, from);
    for (int i = 0; i < n; i++)
        base[i] = rank * 3e7 + i;
    MPI_Win_fence(0, w);
    CHECK_RC(MPI_Get(src, n, MPI_DOUBLE, to, 0, n, MPI_DOUBLE, w), "big get");
    MPI_Win_fence(0, w);
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += src[i] != to * 3e7 + i;
    CHECK(bad == 0, "%d of %d doubles wrong after the big get from %d", bad, n, to);
    void *attr = NULL;
    int flag = 0;
    MPI_Win_get_attr(w, MPI_WIN_BASE, &attr, &flag);
    CHECK(flag && attr == base, "MPI_WIN_BASE %p, want %p", attr, (void *)base);
    MPI_Aint *sz = NULL;
    MPI_Win_get_attr(w, MPI_WIN_SIZE, &sz, &flag);
    CHECK(flag && *sz == (MPI_Aint)sizeof(double) * 2 * n, "MPI_WIN_SIZE");
    int *iv = NULL;
    MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &iv, &flag);
    CHECK(flag && *iv == (int)sizeof(double), "MPI_WIN_DISP_UNIT");
    MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &iv, &flag);
    CHECK(flag && *iv == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_CREATE_FLAVOR %d", *iv);
    MPI_Win_get_attr(w, MPI_WIN_MODEL, &iv, &flag);
    CHECK(flag && (*iv == MPI_WIN_UNIFIED || *iv == MPI_WIN_SEPARATE), "MPI_WIN_MODEL");
    MPI_Group g, wg;
    int cmp = 0;
    MPI_Win_get_group(w, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group compares %d", cmp);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Win_set_name(w, "bigwin");
    MPI_Win_get_name(w, name, &len);
    CHECK(len == 6 && strcmp(name, "bigwin") == 0, "name '%s'", name);
    MPI_Win_free(&w);
    free(src);
}

static void types(void)
{
    /* the window counts in doubles; the origin takes every other double of 2*K */
    double win[4 * K], src[2 * K];
    for (int i = 0; i < 4 * K; i++)
        win[i] = -1;
    for (int i = 0; i < 2 * K; i++)
        src[i] = i % 2 ? -7 : rank + i / 2 * 0.5;
    MPI_Datatype every2;
    MPI_Type_vector(K, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_commit(&every2);
    MPI_Win w;
    CHECK_RC(MPI_Win_create(win, sizeof win, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &w),
             "Win_create doubles");
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    MPI_Win_fence(0, w);
    CHECK_RC(MPI_Put(src, 1, every2, to, K, K, MPI_DOUBLE, w), "strided put");
    CHECK_RC(MPI_Put(src, 1, every2, MPI_PROC_NULL, 0, K, MPI_DOUBLE, w), "put to PROC_NULL");
    MPI_Win_fence(0, w);
    for (int i = 0; i < K; i++)
        CHECK(win[K + i] == from + i * 0.5, "strided [%d] = %g", i, win[K + i]);
    CHECK(win[0] == -1 && win[2 * K] == -1, "neighbours of the strided put untouched");
    /* and back into a strided origin */
    double back[2 * K];
    for (int i = 0; i < 2 * K; i++)
        back[i] = -3;
    CHECK_RC(MPI_Get(back, 1, every2, to, K, K, MPI_DOUBLE, w), "strided get");
    MPI_Win_fence(0, w);
    for (int i = 0; i < 2 * K; i++)
        CHECK(back[i] == (i % 2 ? -3 : rank + i / 2 * 0.5), "strided get [%d] = %g", i, back[i]);
    MPI_Win_free(&w);
    MPI_Type_free(&every2);
}

static void derived_target(void)
{
    enum { N = 30000 };
    double *win = malloc(sizeof(double) * 2 * N), *src = malloc(sizeof(double) * N);
    for (int i = 0; i < 2 * N; i++)
        win[i] = -1;
    for (int i = 0; i < N; i++)
        src[i] = rank * 1e6 + i;
    MPI_Datatype every2, some;
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_commit(&every2);
    int lens[3] = {2, 1, 3}, displs[3] = {5, 0, 9}; /* out of order, with gaps */
    MPI_Type_indexed(3, lens, displs, MPI_DOUBLE, &some);
    MPI_Type_commit(&some);
    MPI_Win w;
    CHECK_RC(MPI_Win_create(win, sizeof(double) * 2 * N, sizeof(double), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &w), "Win_create derived");
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    MPI_Win_fence(0, w);
    CHECK_RC(MPI_Put(src, N, MPI_DOUBLE, to, 1, 1, every2, w), "put into a vector");
    MPI_Win_fence(0, w);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += win[2 * i + 1] != from * 1e6 + i || win[2 * i] != -1;
    CHECK(bad == 0, "%d of %d doubles wrong after the put into a vector from %d", bad, N, from);
    double got[6] = {0}, one[6] = {1, 2, 3, 4, 5, 6};
    CHECK_RC(MPI_Get(got, 6, MPI_DOUBLE, to, 1, 1, some, w), "get from an indexed type");
    MPI_Win_fence(0, w);
    /* the type's blocks in type-map order: doubles 5,6 then 0 then 9,10,11 (from disp 1) */
    int at[6] = {6, 7, 1, 10, 11, 12};
    for (int i = 0; i < 6; i++) {
        double want = at[i] % 2 ? rank * 1e6 + at[i] / 2 : -1; /* what I put there */
        CHECK(got[i] == want, "indexed get [%d] = %g, want %g", i, got[i], want);
    }
    MPI_Win_fence(0, w);
    for (int t = 0; t < size; t++)
        CHECK_RC(MPI_Accumulate(one, 6, MPI_DOUBLE, t, 1, 1, some, MPI_SUM, w), "acc indexed");
    MPI_Win_fence(0, w);
    for (int i = 0; i < 6; i++) {
        double before = at[i] % 2 ? from * 1e6 + at[i] / 2 : -1;
        CHECK(win[at[i]] == before + size * one[i], "indexed acc [%d] = %g, want %g", at[i],
              win[at[i]], before + size * one[i]);
    }
    MPI_Win_free(&w);
    MPI_Type_free(&every2);
    MPI_Type_free(&some);
    free(win);
    free(src);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    put_get_acc();
    ring();
    big();
    types();
    derived_target();
    return check_finish("rma_fence") + MPI_Finalize();
}
