/*
 * file_bigcount: MPI-IO with more than 2^31 one-byte elements (MPI_UINT8_T), every byte
 * checked. The file lives at rank 0's site (under isthmus); the last rank writes n bytes
 * at offset 0 with MPI_File_write_at_c (across the sites' link when it is at another
 * site), rank 0 reads them with MPI_File_read_at_c and checks them and the status count,
 * then the last rank reads them back through its individual pointer with MPI_File_read_c.
 * Each of those two ranks holds 2 GiB; the file takes 2 GiB in $TMPDIR (or /tmp) and is
 * deleted. The optional argument is the excess over 2^31 (default 4099). Skipped under
 * MPI < 4.0.
 */
#include "bigbuf.h"
#include <stdint.h>
#include <string.h>

static void expect_count(const MPI_Status *st, MPI_Count n, const char *what)
{
    MPI_Count got = -1;
    MPI_Get_count_c(st, MPI_UINT8_T, &got);
    CHECK(got == n, "%s: status count %lld, expected %lld", what, (long long)got, (long long)n);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    MPI_Count n = ((MPI_Count)1 << 31) + (argc > 1 ? atoll(argv[1]) : 4099);
    char path[512];
    check_tmp_path("file_bigcount", path, sizeof path);
    MPI_File fh;
    MPI_Status st;
    int last = size - 1;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                           &fh),
             "File_open");
    unsigned char *b = rank == 0 || rank == last ? big_room(n) : NULL;
    if (rank == last) {
        big_fill(b, n, 0, 90);
        CHECK_RC(MPI_File_write_at_c(fh, 0, b, n, MPI_UINT8_T, &st), "File_write_at_c");
        expect_count(&st, n, "File_write_at_c");
    }
    CHECK_RC(MPI_File_sync(fh), "File_sync");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh), "File_sync");
    if (rank == 0) {
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_File_read_at_c(fh, 0, b, n, MPI_UINT8_T, &st), "File_read_at_c");
        expect_count(&st, n, "File_read_at_c");
        MPI_Count bad = big_first_wrong(b, n, 0, 90);
        CHECK(bad < 0, "File_read_at_c: byte %lld is wrong", (long long)bad);
    }
    if (rank == last) {
        memset(b, 0, (size_t)n);
        CHECK_RC(MPI_File_seek(fh, 0, MPI_SEEK_SET), "File_seek");
        CHECK_RC(MPI_File_read_c(fh, b, n, MPI_UINT8_T, &st), "File_read_c");
        expect_count(&st, n, "File_read_c");
        MPI_Count bad = big_first_wrong(b, n, 0, 90);
        CHECK(bad < 0, "File_read_c: byte %lld is wrong", (long long)bad);
    }
    free(b);
    CHECK_RC(MPI_File_close(&fh), "File_close");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
#endif
    int rc = check_finish("file_bigcount");
    MPI_Finalize();
    return rc;
}
