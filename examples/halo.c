/* halo.c: a halo exchange, the pattern of stencil codes, to look at with `isthmus run
 * --trace` (docs/trace.md). The ranks form a periodic 2-D grid (MPI_Cart_create); each
 * iteration every rank posts receives from its four neighbours, sends them its edges of
 * EDGE doubles (MPI_Irecv, MPI_Isend, MPI_Waitall), and every fifth iteration all agree on
 * a residual (MPI_Allreduce). The first half of the iterations is phase 1, the second
 * phase 2 (MPI_Pcontrol), so a trace can tell them apart.
 *
 * Each rank prints what it did: "halo: rank R: isend N bytes B, irecv N bytes B,
 * allreduce K" so a test can compare a trace with it; rank 0 then prints "halo: ok".
 *
 * usage: halo [ITERATIONS [EDGE]]   (defaults 20 and 512)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank, iters = argc > 1 ? atoi(argv[1]) : 20, edge = argc > 2 ? atoi(argv[2]) : 512;
    if (iters < 1 || edge < 1) {
        fprintf(stderr, "halo: ITERATIONS and EDGE must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    MPI_Comm_rank(grid, &rank);
    int nb[4];
    MPI_Cart_shift(grid, 0, 1, &nb[0], &nb[1]);
    MPI_Cart_shift(grid, 1, 1, &nb[2], &nb[3]);
    double *out = malloc(sizeof(double) * (size_t)edge * 4);
    double *in = malloc(sizeof(double) * (size_t)edge * 4);
    long isends = 0, irecvs = 0, sbytes = 0, rbytes = 0, reduces = 0;
    int ok = 1;
    MPI_Pcontrol(1);
    for (int it = 0; it < iters; it++) {
        if (it == iters / 2)
            MPI_Pcontrol(2);
        MPI_Request req[8];
        for (int d = 0; d < 4; d++) {
            MPI_Irecv(in + (size_t)d * edge, edge, MPI_DOUBLE, nb[d], d ^ 1, grid, &req[d]);
            irecvs++;
            rbytes += (long)edge * (long)sizeof(double);
        }
        for (int d = 0; d < 4; d++) {
            for (int i = 0; i < edge; i++)
                out[(size_t)d * edge + i] = rank * 1000.0 + it + i;
            MPI_Isend(out + (size_t)d * edge, edge, MPI_DOUBLE, nb[d], d, grid, &req[4 + d]);
            isends++;
            sbytes += (long)edge * (long)sizeof(double);
        }
        MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
        /* what came from the neighbour in direction d was its edge toward me */
        for (int d = 0; d < 4; d++)
            ok &= in[(size_t)d * edge + 1] == nb[d] * 1000.0 + it + 1;
        if (it % 5 == 4) {
            double local = in[0], global = 0;
            MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, grid);
            reduces++;
        }
    }
    MPI_Pcontrol(0);
    printf("halo: rank %d: isend %ld bytes %ld, irecv %ld bytes %ld, allreduce %ld\n", rank,
           isends, sbytes, irecvs, rbytes, reduces);
    fflush(stdout);
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all_ok ? "halo: ok\n" : "halo: FAILED: a rank received a wrong edge\n");
    free(out);
    free(in);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
