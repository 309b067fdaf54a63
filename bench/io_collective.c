/* io_collective.c: MPI-IO across sites, collective against naive. The file (at rank 0's
 * site) is a sequence of blocks of B bytes; rank r owns every size-th block (a strided
 * view). Each repetition writes the whole file, then reads it back, twice:
 *   coll:  MPI_File_write_all / MPI_File_read_all in the strided view (isthmus: each
 *          site's pieces merged at the site, crossing the WAN once in full frames);
 *   naive: every rank writes / reads each of its blocks with MPI_File_write_at /
 *          MPI_File_read_at (one request per block).
 * The two alternate within a repetition, so drift hits both alike. A timing runs from a
 * barrier to a barrier after the last rank finished. Prints, per mode and operation, the
 * median, min and max over the repetitions in MB/s (10^6 bytes) of the whole file, and
 * one JSON line per measurement (with --json).
 * usage: io_collective [-m MiB] [-b KiB] [-r reps] [-o path] [--json] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double timed(MPI_File fh, int mode, int write, char *buf, int nblk, int B, int rank,
                    int size)
{
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (mode == 0 && write)
        MPI_File_write_all(fh, buf, nblk * B, MPI_BYTE, &st);
    else if (mode == 0)
        MPI_File_read_all(fh, buf, nblk * B, MPI_BYTE, &st);
    else
        for (int k = 0; k < nblk; k++) {
            MPI_Offset off = ((MPI_Offset)k * size + rank) * B;
            if (write)
                MPI_File_write_at(fh, off, buf + (size_t)k * B, B, MPI_BYTE, &st);
            else
                MPI_File_read_at(fh, off, buf + (size_t)k * B, B, MPI_BYTE, &st);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, mib = 64, kib = 64, reps = 5, json = 0;
    char path[512] = "";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            mib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc)
            kib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            snprintf(path, sizeof path, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
    }
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/io_collective-%d.dat", (int)getpid());
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    int B = kib * 1024, total = (int)(((long)mib << 20) / B), nblk = total / size;
    if (nblk < 1 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "io_collective: %d MiB in %d KiB blocks is less than a block per "
                    "rank, or reps < 1\n", mib, kib);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double bytes = (double)nblk * size * B;
    char *buf = malloc((size_t)nblk * B);
    memset(buf, rank + 1, (size_t)nblk * B);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    MPI_Datatype blk, ft;
    MPI_Type_contiguous(B, MPI_BYTE, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)size * B, &ft);
    MPI_Type_commit(&ft);
    double *t = malloc(sizeof(double) * 4 * (size_t)reps);
    const char *names[4] = {"coll write", "naive write", "coll read", "naive read"};
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < 2; m++) {
            for (int w = 1; w >= 0; w--) {
                if (m == 0)
                    MPI_File_set_view(fh, (MPI_Offset)rank * B, MPI_BYTE, ft, "native",
                                      MPI_INFO_NULL);
                else
                    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
                double s = timed(fh, m, w, buf, nblk, B, rank, size);
                t[(m + (w ? 0 : 2)) * reps + r] = s;
                if (json && rank == 0)
                    printf("{\"mode\":\"%s\",\"op\":\"%s\",\"bytes\":%.0f,\"block\":%d,"
                           "\"ranks\":%d,\"seconds\":%.6f}\n", m ? "naive" : "coll",
                           w ? "write" : "read", bytes, B, size, s);
            }
        }
    if (rank == 0) {
        printf("# %d ranks, %.0f MiB file in %d KiB blocks, %d repetitions; MB/s of the "
               "whole file\n# %-12s %10s %10s %10s\n", size, bytes / 1048576.0, kib, reps,
               "what", "median", "min", "max");
        for (int k = 0; k < 4; k++) {
            double *v = t + k * reps;
            qsort(v, (size_t)reps, sizeof *v, cmp);
            printf("  %-12s %10.2f %10.2f %10.2f\n", names[k], bytes / v[reps / 2] / 1e6,
                   bytes / v[reps - 1] / 1e6, bytes / v[0] / 1e6);
        }
    }
    MPI_File_close(&fh);
    MPI_Type_free(&ft);
    MPI_Type_free(&blk);
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
