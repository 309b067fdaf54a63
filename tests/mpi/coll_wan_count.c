/*
 * coll_wan_count: repeats one collective on MPI_COMM_WORLD, so that the gateways'
 * message counters (ISTHMUS_STATS=1) show how many cross-site messages it costs.
 * usage: coll_wan_count <collective> <repetitions>
 *   collective: barrier bcast reduce allreduce gather scatter allgather alltoall
 *               reduce_scatter scan, and the data movers' other forms: igather iscatter
 *               ialltoall gatherv alltoallv, gather_last (the root the last rank, not
 *               its site's leader)
 * python/tests/test_wan_counts.py runs it with 0 and with k repetitions and checks the
 * difference per repetition against the two-level bound (it grows with sites, never
 * with ranks). The results are checked too, so a wrong algorithm cannot pass.
 */
#include "check.h"
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: coll_wan_count <collective> <repetitions>\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *c = argv[1];
    int k = atoi(argv[2]), n = 4;
    int *in = malloc(sizeof(int) * n * size), *out = malloc(sizeof(int) * n * size);
    for (int it = 0; it < k; it++) {
        for (int i = 0; i < n * size; i++) {
            in[i] = rank + i + it;
            out[i] = -1;
        }
        if (!strcmp(c, "barrier")) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (!strcmp(c, "bcast")) {
            MPI_Bcast(in, n, MPI_INT, 0, MPI_COMM_WORLD);
            CHECK(in[1] == 1 + it, "bcast");
        } else if (!strcmp(c, "reduce")) {
            MPI_Reduce(in, out, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
            CHECK(rank || out[0] == size * (size - 1) / 2 + size * it, "reduce");
        } else if (!strcmp(c, "allreduce")) {
            MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK(out[0] == size * (size - 1) / 2 + size * it, "allreduce");
        } else if (!strcmp(c, "gather")) {
            MPI_Gather(in, n, MPI_INT, out, n, MPI_INT, 0, MPI_COMM_WORLD);
            CHECK(rank || out[n * (size - 1)] == size - 1 + it, "gather");
        } else if (!strcmp(c, "scatter")) {
            MPI_Scatter(in, n, MPI_INT, out, n, MPI_INT, 0, MPI_COMM_WORLD);
            CHECK(out[0] == rank * n + it, "scatter");
        } else if (!strcmp(c, "allgather")) {
            MPI_Allgather(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD);
            CHECK(out[n * (size - 1)] == size - 1 + it, "allgather");
        } else if (!strcmp(c, "alltoall")) {
            MPI_Alltoall(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD);
            CHECK(out[n * (size - 1)] == size - 1 + rank * n + it, "alltoall %d", out[n * (size - 1)]);
        } else if (!strcmp(c, "igather") || !strcmp(c, "iscatter") ||
                   !strcmp(c, "ialltoall")) {
            MPI_Request q;
            if (c[1] == 'g')
                MPI_Igather(in, n, MPI_INT, out, n, MPI_INT, 0, MPI_COMM_WORLD, &q);
            else if (c[1] == 's')
                MPI_Iscatter(in, n, MPI_INT, out, n, MPI_INT, 0, MPI_COMM_WORLD, &q);
            else
                MPI_Ialltoall(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            CHECK(c[1] != 'g' || rank || out[n * (size - 1)] == size - 1 + it, "igather");
            CHECK(c[1] != 's' || out[0] == rank * n + it, "iscatter");
            CHECK(c[1] != 'a' || out[n * (size - 1)] == size - 1 + rank * n + it, "ialltoall");
        } else if (!strcmp(c, "gather_last")) {
            MPI_Gather(in, n, MPI_INT, out, n, MPI_INT, size - 1, MPI_COMM_WORLD);
            CHECK(rank != size - 1 || out[0] == it, "gather_last");
        } else if (!strcmp(c, "gatherv") || !strcmp(c, "alltoallv")) {
            int *cnt = malloc(sizeof(int) * 2 * size);
            for (int r = 0; r < size; r++) {
                cnt[r] = n;
                cnt[size + r] = r * n;
            }
            if (c[0] == 'g') {
                MPI_Gatherv(in, n, MPI_INT, out, cnt, cnt + size, MPI_INT, 0, MPI_COMM_WORLD);
                CHECK(rank || out[n * (size - 1)] == size - 1 + it, "gatherv");
            } else {
                MPI_Alltoallv(in, cnt, cnt + size, MPI_INT, out, cnt, cnt + size, MPI_INT,
                              MPI_COMM_WORLD);
                CHECK(out[n * (size - 1)] == size - 1 + rank * n + it, "alltoallv");
            }
            free(cnt);
        } else if (!strcmp(c, "reduce_scatter")) {
            MPI_Reduce_scatter_block(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK(out[0] == size * (rank * n) + size * (size - 1) / 2 + size * it,
                  "reduce_scatter %d", out[0]);
        } else if (!strcmp(c, "scan")) {
            MPI_Scan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK(out[0] == rank * (rank + 1) / 2 + (rank + 1) * it, "scan");
        } else {
            if (rank == 0)
                fprintf(stderr, "coll_wan_count: unknown collective '%s'\n", c);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    free(in);
    free(out);
    int rc = check_finish("coll_wan_count");
    MPI_Finalize();
    return rc;
}
