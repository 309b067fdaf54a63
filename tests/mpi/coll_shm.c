/*
 * coll_shm: collectives whose messages inside a site go through isthmus's shared-memory
 * channels (native/src/coll/shm.c): sizes on both sides of the 8 KiB cell (whose
 * messages take the channels or the vendor's point-to-point), more calls than the ring
 * has cells, a dup'd communicator and a split one alongside MPI_COMM_WORLD, every result
 * checked; and MPI's progress rule while a rank waits on the channels: rank 0 starts a
 * 4 MiB MPI_Isend to rank 1, then enters an MPI_Allreduce, which rank 1 reaches only
 * after receiving that message.
 *
 * usage: coll_shm [mixed]
 *   mixed  rank 1 sets ISTHMUS_COLL_SHM=0 after MPI_Init (before any collective): one
 *          member without the channels must make every member go without them (the
 *          split communicators, some without rank 1, are left out).
 * A vendor MPI runs it too (and ignores the variable).
 */
#include "check.h"
#include <string.h>

#define ITERS 10
static const int counts[] = {1, 2, 255, 2048, 2049, 16384}; /* ints: 8 KiB is 2048 */

static void round_of(MPI_Comm c, int it)
{
    int n, me;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
        int cnt = counts[k];
        int *in = malloc(sizeof(int) * (size_t)cnt * (size_t)n);
        int *out = malloc(sizeof(int) * (size_t)cnt * (size_t)n);
        for (int i = 0; i < cnt * n; i++)
            in[i] = me * 131 + i + it;
        /* sum over ranks r of (r * 131 + i + it) */
        long rs = 131L * n * (n - 1) / 2;
        CHECK_RC(MPI_Allreduce(in, out, cnt, MPI_INT, MPI_SUM, c), "allreduce");
        int bad = 0;
        for (int i = 0; i < cnt; i++)
            bad += out[i] != (int)(rs + (long)n * (i + it));
        CHECK(!bad, "allreduce %d ints: %d wrong", cnt, bad);
        memset(out, 0, sizeof(int) * (size_t)cnt);
        CHECK_RC(MPI_Reduce(in, out, cnt, MPI_INT, MPI_MAX, n - 1, c), "reduce");
        bad = 0;
        for (int i = 0; me == n - 1 && i < cnt; i++)
            bad += out[i] != (n - 1) * 131 + i + it;
        CHECK(!bad, "reduce %d ints: %d wrong", cnt, bad);
        CHECK_RC(MPI_Scan(in, out, cnt, MPI_INT, MPI_SUM, c), "scan");
        bad = 0;
        for (int i = 0; i < cnt; i++)
            bad += out[i] != (int)(131L * me * (me + 1) / 2 + (long)(me + 1) * (i + it));
        CHECK(!bad, "scan %d ints: %d wrong", cnt, bad);
        CHECK_RC(MPI_Reduce_scatter_block(in, out, cnt, MPI_INT, MPI_SUM, c), "reduce_scatter");
        bad = 0;
        for (int i = 0; i < cnt; i++)
            bad += out[i] != (int)(rs + (long)n * (me * cnt + i + it));
        CHECK(!bad, "reduce_scatter_block %d ints: %d wrong", cnt, bad);
        for (int i = 0; i < cnt; i++)
            out[i] = me == 0 ? i ^ it : -1;
        CHECK_RC(MPI_Bcast(out, cnt, MPI_INT, 0, c), "bcast");
        bad = 0;
        for (int i = 0; i < cnt; i++)
            bad += out[i] != (i ^ it);
        CHECK(!bad, "bcast %d ints: %d wrong", cnt, bad);
        CHECK_RC(MPI_Barrier(c), "barrier");
        free(in);
        free(out);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int mixed = argc > 1 && !strcmp(argv[1], "mixed");
    if (mixed && me == 1)
        setenv("ISTHMUS_COLL_SHM", "0", 1);
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    for (int it = 0; it < ITERS; it++) {
        round_of(MPI_COMM_WORLD, it);
        round_of(dup, it + 1);
        if (!mixed) /* rank 1 is not in every half: those would still use the channels */
            round_of(half, it + 2);
    }
    if (n >= 2) { /* the progress rule: a pending rendezvous send while waiting inside */
        const int big = 1 << 20; /* ints: 4 MiB */
        int *buf = malloc(sizeof(int) * (size_t)big), x = me, sum = 0;
        MPI_Request rq = MPI_REQUEST_NULL;
        if (me == 0) {
            for (int i = 0; i < big; i++)
                buf[i] = i;
            CHECK_RC(MPI_Isend(buf, big, MPI_INT, 1, 7, MPI_COMM_WORLD, &rq), "isend");
        } else if (me == 1) {
            CHECK_RC(MPI_Recv(buf, big, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "recv");
            CHECK(buf[big - 1] == big - 1, "the 4 MiB message");
        }
        CHECK_RC(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "allreduce");
        CHECK(sum == n * (n - 1) / 2, "allreduce after the rendezvous: %d", sum);
        CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "wait");
        free(buf);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    int rc = check_finish("coll_shm");
    MPI_Finalize();
    return rc;
}
