/*
 * io_basic: one file written and read by every rank (MPI-IO, explicit offsets and
 * individual file pointers). Rank 0 names a file in $TMPDIR (or /tmp); every rank opens
 * it on MPI_COMM_WORLD, writes its own block of ints with MPI_File_write_at, reads its
 * neighbour's block back with MPI_File_read_at, seeks and reads with the individual
 * pointer, writes with MPI_File_write, and checks sizes (get_size, set_size,
 * preallocate), sync, amode, group, info, atomicity, and reading past the end of the
 * file (a short count). Error cases: a file that does not exist opened for reading
 * gives MPI_ERR_NO_SUCH_FILE; RDONLY with CREATE gives MPI_ERR_AMODE; writing a file
 * opened read-only fails; the default file error handler is MPI_ERRORS_RETURN; a user
 * file error handler is called. Under isthmus the file lives at rank 0's site, so the
 * other sites' ranks go through the gateways. Under isthmus (ISTHMUS_SITE_NAMES set) a
 * second file is put at the last rank's site with the info key "isthmus_file_site":
 * written and read by every rank, reported by MPI_File_get_info, deleted by rank 0
 * through the same key. Works for any size >= 1.
 */
#include "check.h"
#include <string.h>
#include <unistd.h>

#define N 1000

static int err_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

static int handler_calls, handler_code;
static void file_handler(MPI_File *fh, int *code, ...)
{
    (void)fh;
    handler_calls++;
    handler_code = *code;
}

/* isthmus: the last rank's site, by name (ISTHMUS_SITE_NAMES, ISTHMUS_SITE); "" elsewhere */
static void last_site(char *name, int n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    name[0] = 0;
    const char *names = getenv("ISTHMUS_SITE_NAMES"), *idx = getenv("ISTHMUS_SITE");
    if (rank == size - 1 && names && idx) {
        int want = atoi(idx);
        const char *p = names;
        for (int i = 0; i < want && p; i++)
            p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
        if (p)
            snprintf(name, (size_t)n, "%.*s", (int)strcspn(p, ","), p);
    }
    MPI_Bcast(name, n, MPI_CHAR, size - 1, MPI_COMM_WORLD);
}

static void elsewhere(const char *base)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char site[64], path[600], got[64];
    last_site(site, sizeof site);
    if (!site[0])
        return; /* not under isthmus */
    snprintf(path, sizeof path, "%s.elsewhere", base);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "isthmus_file_site", site);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh),
             "open at the last rank's site");
    MPI_Info used;
    int flag = 0;
    MPI_File_get_info(fh, &used);
    MPI_Info_get(used, "isthmus_file_site", sizeof got - 1, got, &flag);
    CHECK(flag && !strcmp(got, site), "the file is at site '%s', not '%s'", flag ? got : "",
          site);
    MPI_Info_free(&used);
    int v[3] = {rank, rank * 2, rank * 3}, in[3];
    MPI_Status st;
    CHECK_RC(MPI_File_write_at(fh, rank * 12, v, 3, MPI_INT, &st), "write_at elsewhere");
    MPI_Barrier(MPI_COMM_WORLD);
    int peer = (rank + size - 1) % size;
    CHECK_RC(MPI_File_read_at(fh, peer * 12, in, 3, MPI_INT, &st), "read_at elsewhere");
    CHECK(in[0] == peer && in[2] == peer * 3, "rank %d's ints read as %d %d", peer, in[0], in[2]);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_RC(MPI_File_delete(path, info), "delete at the last rank's site");
        CHECK(access(path, F_OK) != 0, "%s still exists", path);
    }
    MPI_Info_free(&info);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[512];
    check_tmp_path("io_basic", path, sizeof path);

    MPI_Errhandler eh;
    MPI_File_get_errhandler(MPI_FILE_NULL, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "the default file error handler is not MPI_ERRORS_RETURN");

    MPI_File fh;
    char missing[600];
    snprintf(missing, sizeof missing, "%s.missing", path);
    int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(err_class(rc) == MPI_ERR_NO_SUCH_FILE, "opening a missing file: class %d, not %d",
          err_class(rc), MPI_ERR_NO_SUCH_FILE);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh);
    CHECK(err_class(rc) == MPI_ERR_AMODE, "RDONLY|CREATE: class %d, not %d", err_class(rc),
          MPI_ERR_AMODE);

    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK_RC(rc, "MPI_File_open");
    int amode = 0;
    MPI_File_get_amode(fh, &amode);
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "amode %d", amode);
    MPI_Group g;
    int gsize = 0;
    MPI_File_get_group(fh, &g);
    MPI_Group_size(g, &gsize);
    MPI_Group_free(&g);
    CHECK(gsize == size, "group size %d, not %d", gsize, size);
    MPI_Info info;
    CHECK_RC(MPI_File_get_info(fh, &info), "MPI_File_get_info");
    MPI_Info_free(&info);
    CHECK_RC(MPI_File_set_size(fh, 0), "MPI_File_set_size(0)");

    int buf[N], in[N];
    for (int i = 0; i < N; i++)
        buf[i] = rank * 100000 + i;
    MPI_Status st;
    CHECK_RC(MPI_File_write_at(fh, (MPI_Offset)rank * N * 4, buf, N, MPI_INT, &st), "write_at");
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N, "write_at count %d", count);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh), "MPI_File_sync");
    MPI_Offset fsize = -1;
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == (MPI_Offset)size * N * 4, "size %lld, not %lld", (long long)fsize,
          (long long)size * N * 4);

    int peer = (rank + 1) % size;
    CHECK_RC(MPI_File_read_at(fh, (MPI_Offset)peer * N * 4, in, N, MPI_INT, &st), "read_at");
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += in[i] != peer * 100000 + i;
    CHECK(bad == 0, "%d ints of rank %d's block differ", bad, peer);

    /* individual pointer: seek, read, position */
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)peer * N * 4 + 40, MPI_SEEK_SET), "seek");
    memset(in, 0, sizeof in);
    CHECK_RC(MPI_File_read(fh, in, 10, MPI_INT, &st), "read");
    CHECK(in[0] == peer * 100000 + 10 && in[9] == peer * 100000 + 19, "read got %d..%d", in[0],
          in[9]);
    MPI_Offset pos = -1;
    MPI_File_get_position(fh, &pos);
    CHECK(pos == (MPI_Offset)peer * N * 4 + 80, "position %lld", (long long)pos);
    MPI_File_seek(fh, -8, MPI_SEEK_CUR);
    MPI_File_read(fh, in, 1, MPI_INT, &st);
    CHECK(in[0] == peer * 100000 + 18, "after SEEK_CUR read %d", in[0]);

    /* past the end: a short read */
    MPI_File_seek(fh, -4, MPI_SEEK_END);
    MPI_File_read(fh, in, 10, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 1 && in[0] == (size - 1) * 100000 + N - 1, "read at the end: count %d, %d",
          count, in[0]);
    MPI_Barrier(MPI_COMM_WORLD);

    /* write with the individual pointer, after the blocks */
    MPI_File_seek(fh, (MPI_Offset)size * N * 4 + rank * 8, MPI_SEEK_SET);
    int two[2] = {rank, -rank};
    CHECK_RC(MPI_File_write(fh, two, 2, MPI_INT, &st), "write");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_read_at(fh, (MPI_Offset)size * N * 4 + peer * 8, two, 2, MPI_INT, &st);
    CHECK(two[0] == peer && two[1] == -peer, "write with the pointer: %d %d", two[0], two[1]);

    CHECK_RC(MPI_File_preallocate(fh, (MPI_Offset)4 << 20), "preallocate");
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == (MPI_Offset)4 << 20, "size after preallocate %lld", (long long)fsize);
    MPI_Barrier(MPI_COMM_WORLD); /* nobody shrinks it before everyone has looked */
    CHECK_RC(MPI_File_set_size(fh, 4096), "set_size");
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == 4096, "size after set_size %lld", (long long)fsize);
    int flag = -1;
    CHECK_RC(MPI_File_set_atomicity(fh, 1), "set_atomicity");
    MPI_File_get_atomicity(fh, &flag);
    CHECK(flag == 1, "atomicity %d", flag);

    /* a user error handler on the file */
    MPI_Errhandler mine;
    MPI_File_create_errhandler(file_handler, &mine);
    MPI_File_set_errhandler(fh, mine);
    MPI_File_call_errhandler(fh, MPI_ERR_IO);
    CHECK(handler_calls == 1 && handler_code == MPI_ERR_IO, "handler calls %d code %d",
          handler_calls, handler_code);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    CHECK_RC(MPI_File_close(&fh), "MPI_File_close");
    CHECK(fh == MPI_FILE_NULL, "the handle is not MPI_FILE_NULL after close");

    /* read-only: writing fails, through the file's error handler */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
             "open read-only");
    MPI_File_set_errhandler(fh, mine);
    rc = MPI_File_write_at(fh, 0, buf, 1, MPI_INT, &st);
    CHECK(err_class(rc) == MPI_ERR_READ_ONLY || err_class(rc) == MPI_ERR_ACCESS,
          "writing a read-only file: class %d", err_class(rc));
    CHECK(handler_calls == 2, "the handler was called %d times, not twice", handler_calls);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&mine);
    MPI_File_read_at(fh, 0, in, 1, MPI_INT, &st);
    CHECK(in[0] == 0, "first int %d", in[0]);
    MPI_File_close(&fh);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_RC(MPI_File_delete(path, MPI_INFO_NULL), "MPI_File_delete");
        rc = MPI_File_delete(path, MPI_INFO_NULL);
        CHECK(rc != MPI_SUCCESS, "deleting a deleted file succeeded");
        CHECK(access(path, F_OK) != 0, "%s still exists", path);
    }
    elsewhere(path);
    int r = check_finish("io_basic");
    MPI_Finalize();
    return r;
}
