/*
 * coll_temps: collectives whose algorithms stage data in the executor's temporaries
 * (allgather and alltoall Bruck, Rabenseifner allreduce, recursive-halving
 * reduce-scatter), called many times on buffers at chosen page offsets, every result
 * checked.
 *
 * usage: coll_temps same|mixed
 *   same   send and receive buffers at the same page offset: first 0 (page-aligned), then
 *          16 (where malloc puts large blocks). The executor's temporaries follow the
 *          buffers' offset, so no copy between them is "skewed" (ISTHMUS_COLL_STATS=1
 *          reports 0 skewed copies; python/tests/test_coll_temps.py checks it).
 *   mixed  send buffer page-aligned, receive buffer 16 bytes into a page: the copies
 *          from the send buffer into the temporaries are skewed and take move.c's
 *          backward path, whose results are checked here.
 * The algorithms are named with the communicator hints isthmus_coll_<coll> and
 * isthmus_coll_wan_<coll>; a vendor MPI ignores them and must pass too.
 */
#include "check.h"
#include <string.h>

#define ITERS 12
#define BLK 4096 /* ints per block: 16 KiB, above the 2 KiB where skew matters */

static int val(int from, int to, int i, int it) { return from * 1000003 + to * 7919 + i * 3 + it; }

static void round_of(MPI_Comm c, int off_in, int off_out, int it)
{
    int n, me;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    size_t len = (size_t)n * BLK * sizeof(int) + 4096;
    char *pin = aligned_alloc(4096, len), *pout = aligned_alloc(4096, len);
    CHECK(pin && pout, "no memory for %zu bytes", len);
    if (!pin || !pout)
        return;
    int *in = (int *)(pin + off_in), *out = (int *)(pout + off_out);

    /* allgather: my block */
    for (int i = 0; i < BLK; i++)
        in[i] = val(me, 0, i, it);
    memset(out, 0xa5, (size_t)n * BLK * sizeof(int));
    CHECK_RC(MPI_Allgather(in, BLK, MPI_INT, out, BLK, MPI_INT, c), "allgather");
    for (int j = 0, bad = 0; j < n && !bad; j++)
        for (int i = 0; i < BLK && !bad; i++)
            if (out[j * BLK + i] != val(j, 0, i, it)) {
                bad = 1;
                CHECK(0, "allgather it %d: block %d [%d] = %d", it, j, i, out[j * BLK + i]);
            }

    /* alltoall: block j for member j */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < BLK; i++)
            in[j * BLK + i] = val(me, j, i, it);
    memset(out, 0xa5, (size_t)n * BLK * sizeof(int));
    CHECK_RC(MPI_Alltoall(in, BLK, MPI_INT, out, BLK, MPI_INT, c), "alltoall");
    for (int j = 0, bad = 0; j < n && !bad; j++)
        for (int i = 0; i < BLK && !bad; i++)
            if (out[j * BLK + i] != val(j, me, i, it)) {
                bad = 1;
                CHECK(0, "alltoall it %d: from %d [%d] = %d", it, j, i, out[j * BLK + i]);
            }

    /* allreduce and reduce_scatter_block: sums of n blocks (small values: no overflow) */
    for (int i = 0; i < n * BLK; i++)
        in[i] = (me + 1) * (i % 97 + it);
    int want_f = n * (n + 1) / 2;
    memset(out, 0xa5, (size_t)n * BLK * sizeof(int));
    CHECK_RC(MPI_Allreduce(in, out, n * BLK, MPI_INT, MPI_SUM, c), "allreduce");
    for (int i = 0; i < n * BLK; i++)
        if (out[i] != want_f * (i % 97 + it)) {
            CHECK(0, "allreduce it %d: [%d] = %d, want %d", it, i, out[i], want_f * (i % 97 + it));
            break;
        }
    memset(out, 0xa5, (size_t)BLK * sizeof(int));
    CHECK_RC(MPI_Reduce_scatter_block(in, out, BLK, MPI_INT, MPI_SUM, c), "reduce_scatter");
    for (int i = 0; i < BLK; i++) {
        int k = me * BLK + i;
        if (out[i] != want_f * (k % 97 + it)) {
            CHECK(0, "reduce_scatter it %d: [%d] = %d, want %d", it, i, out[i],
                  want_f * (k % 97 + it));
            break;
        }
    }
    free(pin);
    free(pout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int mixed = argc > 1 && !strcmp(argv[1], "mixed");
    MPI_Comm c;
    MPI_Info info;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Info_create(&info);
    MPI_Info_set(info, "isthmus_coll_allgather", "bruck");
    MPI_Info_set(info, "isthmus_coll_wan_allgather", "bruck");
    MPI_Info_set(info, "isthmus_coll_alltoall", "bruck");
    MPI_Info_set(info, "isthmus_coll_allreduce", "rabenseifner");
    MPI_Info_set(info, "isthmus_coll_wan_allreduce", "rabenseifner");
    MPI_Info_set(info, "isthmus_coll_reduce_scatter", "recursive_halving");
    MPI_Info_set(info, "isthmus_coll_wan_reduce_scatter", "recursive_halving");
    MPI_Comm_set_info(c, info);
    MPI_Info_free(&info);
    for (int it = 0; it < ITERS; it++) {
        if (mixed)
            round_of(c, 0, 16, it);
        else
            round_of(c, it < ITERS / 2 ? 0 : 16, it < ITERS / 2 ? 0 : 16, it);
    }
    MPI_Comm_free(&c);
    int rc = check_finish("coll_temps");
    MPI_Finalize();
    return rc;
}
