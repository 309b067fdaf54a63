/*
 * io_shared: shared file pointers under concurrent writers, ordered access, nonblocking
 * and split collective forms, atomic mode, MPI_MODE_DELETE_ON_CLOSE.
 * (1) Every rank appends K records {rank, i} with MPI_File_write_shared at once; the
 * file then holds each record exactly once, each rank's in its own order, and the
 * shared position is at the end. (2) MPI_File_seek_shared back to 0, then
 * MPI_File_write_ordered (rank r writes r+1 ints of value r) lays the ranks out in rank
 * order; MPI_File_read_ordered reads them back. (3) MPI_File_iwrite_at/iread_at with
 * MPI_Wait and counts. (4) Split collectives: write_at_all_begin/end, read_all_begin/end.
 * (5) Atomic mode: every rank writes the same M ints (its own value) at once, three
 * times; afterwards the region holds one rank's values only. The file is opened with
 * DELETE_ON_CLOSE and must be gone after close. (6) MPI_MODE_SEQUENTIAL: a header by
 * rank 0, ordered ints after it; reopened sequential, rank 0 reads the header with the
 * shared pointer and everyone sets the view at MPI_DISPLACEMENT_CURRENT and reads its
 * own int with MPI_File_read_ordered. Works for any size >= 1.
 */
#include "check.h"
#include <string.h>
#include <unistd.h>

#define K 20
#define M 16384

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[512];
    check_tmp_path("io_shared", path, sizeof path);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                           MPI_INFO_NULL, &fh), "open");
    CHECK_RC(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), "set_view");
    MPI_Status st;

    /* (1) concurrent writers on the shared pointer */
    for (int i = 0; i < K; i++) {
        int rec[2] = {rank, i};
        CHECK_RC(MPI_File_write_shared(fh, rec, 2, MPI_INT, &st), "write_shared");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset sp = -1;
    MPI_File_get_position_shared(fh, &sp);
    CHECK(sp == (MPI_Offset)size * K * 2, "shared position %lld, not %lld", (long long)sp,
          (long long)size * K * 2);
    if (rank == 0) {
        int n = size * K * 2;
        int *all = malloc(sizeof(int) * (size_t)n), *next = calloc((size_t)size, sizeof(int));
        CHECK_RC(MPI_File_read_at(fh, 0, all, n, MPI_INT, &st), "read_at of the records");
        int bad = 0;
        for (int k = 0; k < n; k += 2) {
            int r = all[k], i = all[k + 1];
            if (r < 0 || r >= size || i != next[r])
                bad++;
            else
                next[r]++;
        }
        for (int r = 0; r < size; r++)
            bad += next[r] != K;
        CHECK(bad == 0, "shared-pointer records: %d out of place or missing", bad);
        free(all), free(next);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* (2) ordered */
    CHECK_RC(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET), "seek_shared");
    int mine[64];
    for (int i = 0; i <= rank && i < 64; i++)
        mine[i] = rank;
    CHECK_RC(MPI_File_write_ordered(fh, mine, rank + 1, MPI_INT, &st), "write_ordered");
    /* (the shared position after it is not checked: Open MPI 4.1 and MPICH 4.0 both
     * leave ranks other than 0 reading 0 there) */
    int at = rank * (rank + 1) / 2, v[64];
    MPI_File_read_at(fh, at, v, rank + 1, MPI_INT, &st);
    int bad = 0;
    for (int i = 0; i <= rank; i++)
        bad += v[i] != rank;
    CHECK(bad == 0, "write_ordered: rank %d's ints at %d are not all %d", rank, at, rank);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    memset(v, -1, sizeof v);
    CHECK_RC(MPI_File_read_ordered(fh, v, rank + 1, MPI_INT, &st), "read_ordered");
    bad = 0;
    for (int i = 0; i <= rank; i++)
        bad += v[i] != rank;
    CHECK(bad == 0, "read_ordered: rank %d got other ranks' ints", rank);

    /* (3) nonblocking */
    int base = 100000, w[8], r8[8], count = -1;
    for (int i = 0; i < 8; i++)
        w[i] = rank * 10 + i;
    MPI_Request req;
    CHECK_RC(MPI_File_iwrite_at(fh, base + rank * 8, w, 8, MPI_INT, &req), "iwrite_at");
    CHECK_RC(MPI_Wait(&req, &st), "wait iwrite_at");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 8, "iwrite_at count %d", count);
    MPI_Barrier(MPI_COMM_WORLD);
    int peer = (rank + 1) % size;
    CHECK_RC(MPI_File_iread_at(fh, base + peer * 8, r8, 8, MPI_INT, &req), "iread_at");
    CHECK_RC(MPI_Wait(&req, &st), "wait iread_at");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 8 && r8[0] == peer * 10 && r8[7] == peer * 10 + 7, "iread_at: %d %d", count,
          r8[0]);
    MPI_Barrier(MPI_COMM_WORLD); /* the collective below does not wait for the readers */

    /* (4) split collectives */
    for (int i = 0; i < 8; i++)
        w[i] = -(rank * 10 + i);
    CHECK_RC(MPI_File_write_at_all_begin(fh, base + rank * 8, w, 8, MPI_INT), "write_at_all_begin");
    CHECK_RC(MPI_File_write_at_all_end(fh, w, &st), "write_at_all_end");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 8, "write_at_all_end count %d", count);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_seek(fh, base + peer * 8, MPI_SEEK_SET);
    CHECK_RC(MPI_File_read_all_begin(fh, r8, 8, MPI_INT), "read_all_begin");
    CHECK_RC(MPI_File_read_all_end(fh, r8, &st), "read_all_end");
    CHECK(r8[0] == -(peer * 10) && r8[7] == -(peer * 10 + 7), "split read: %d %d", r8[0], r8[7]);

    /* (5) atomic mode: whole writes, never mixed */
    CHECK_RC(MPI_File_set_atomicity(fh, 1), "set_atomicity");
    int *big = malloc(sizeof(int) * M), *got = malloc(sizeof(int) * M);
    for (int i = 0; i < M; i++)
        big[i] = rank + 1;
    for (int round = 0; round < 3; round++)
        CHECK_RC(MPI_File_write_at(fh, 2 * base, big, M, MPI_INT, &st), "atomic write_at");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_read_at(fh, 2 * base, got, M, MPI_INT, &st), "atomic read_at");
    bad = 0;
    for (int i = 1; i < M; i++)
        bad += got[i] != got[0];
    CHECK(bad == 0 && got[0] >= 1 && got[0] <= size,
          "atomic mode: the region mixes writers (%d ints differ from the first, %d)", bad, got[0]);
    free(big), free(got);

    CHECK_RC(MPI_File_close(&fh), "close");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(access(path, F_OK) != 0, "%s still exists after close with DELETE_ON_CLOSE", path);

    /* (6) MPI_MODE_SEQUENTIAL: a header, then every rank's int in rank order, read back
     * with the view moved to the shared pointer (MPI_DISPLACEMENT_CURRENT) */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                           MPI_INFO_NULL, &fh), "open for the header");
    int hdr = 1000 + size;
    if (rank == 0)
        MPI_File_write_shared(fh, &hdr, 1, MPI_INT, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    int me = 2000 + rank;
    CHECK_RC(MPI_File_write_ordered(fh, &me, 1, MPI_INT, &st), "write_ordered after the header");
    MPI_File_close(&fh);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path,
                           MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_DELETE_ON_CLOSE,
                           MPI_INFO_NULL, &fh), "open sequential");
    int h = -1;
    if (rank == 0)
        MPI_File_read_shared(fh, &h, 1, MPI_INT, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(rank != 0 || h == hdr, "header %d, not %d", h, hdr);
    CHECK_RC(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native",
                               MPI_INFO_NULL), "set_view at the current displacement");
    int got1 = -1;
    CHECK_RC(MPI_File_read_ordered(fh, &got1, 1, MPI_INT, &st), "read_ordered sequential");
    CHECK(got1 == 2000 + rank, "sequential read_ordered: %d, not %d", got1, 2000 + rank);
    MPI_File_close(&fh);
    int r = check_finish("io_shared");
    MPI_Finalize();
    return r;
}
