/*
 * env_info: MPI_Info objects, MPI_INFO_ENV, MPI_Alloc_mem, and (under isthmus) the
 * MPI_ERR_UNSUPPORTED_OPERATION error of a feature not implemented yet.
 *  - Info: set (also overwrite), get,
 *    get_valuelen, get_nkeys, get_nthkey in insertion order, dup (independent copy),
 *    delete (missing key: MPI_ERR_INFO_NOKEY with MPI_ERRORS_RETURN), free.
 *  - MPI_INFO_ENV can be read.
 *  - MPI_Alloc_mem / MPI_Free_mem give usable memory, also used as a message buffer.
 *  - Under isthmus (MPI_Get_library_version says so), MPI_Win_create and MPI_File_open
 *    return MPI_ERR_UNSUPPORTED_OPERATION through MPI_ERRORS_RETURN.
 */
#include "check.h"
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info in, d;
    char v[64], k[MPI_MAX_INFO_KEY];
    int flag, n, len;
    MPI_Info_create(&in);
    MPI_Info_set(in, "alpha", "1");
    MPI_Info_set(in, "beta", "two words");
    MPI_Info_set(in, "alpha", "one");
    MPI_Info_get_nkeys(in, &n);
    CHECK(n == 2, "nkeys %d", n);
    MPI_Info_get_nthkey(in, 0, k);
    CHECK(!strcmp(k, "alpha"), "key 0 %s", k);
    MPI_Info_get_nthkey(in, 1, k);
    CHECK(!strcmp(k, "beta"), "key 1 %s", k);
    MPI_Info_get(in, "alpha", 63, v, &flag);
    CHECK(flag && !strcmp(v, "one"), "alpha = %s", v);
    /* (a valuelen shorter than the value truncates by MPI 3.1; MPICH 4.0 raises an error
     * instead, so it is not tested here) */
    MPI_Info_get(in, "beta", 63, v, &flag);
    CHECK(flag && !strcmp(v, "two words"), "beta = '%s'", v);
    MPI_Info_get_valuelen(in, "beta", &len, &flag);
    CHECK(flag && len == 9, "valuelen %d", len);
    MPI_Info_get(in, "gamma", 63, v, &flag);
    CHECK(!flag, "missing key found");
    MPI_Info_dup(in, &d);
    MPI_Info_delete(in, "alpha");
    MPI_Info_get_nkeys(in, &n);
    CHECK(n == 1, "nkeys after delete %d", n);
    MPI_Info_get(d, "alpha", 63, v, &flag);
    CHECK(flag && !strcmp(v, "one"), "the duplicate lost its key");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Info_delete(in, "alpha"), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_INFO_NOKEY, "deleting a missing key: class %d", cls);
    MPI_Info_free(&in);
    MPI_Info_free(&d);
    CHECK(in == MPI_INFO_NULL, "Info_free sets MPI_INFO_NULL");
    MPI_Info_get_nkeys(MPI_INFO_ENV, &n);
    CHECK(n >= 0, "MPI_INFO_ENV nkeys %d", n);

    int *mem = NULL;
    MPI_Alloc_mem(1000 * sizeof(int), MPI_INFO_NULL, &mem);
    CHECK(mem != NULL, "Alloc_mem");
    for (int i = 0; i < 1000; i++)
        mem[i] = rank * 1000 + i;
    int peer = (rank + size / 2) % size;
    MPI_Sendrecv_replace(mem, 1000, MPI_INT, peer, 1, (rank - size / 2 + size) % size, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(mem[999] == ((rank - size / 2 + size) % size) * 1000 + 999, "Alloc_mem buffer");
    MPI_Free_mem(mem);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    if (strstr(lib, "isthmus")) {
        MPI_Win w;
        int x;
        rc = MPI_Win_create(&x, sizeof x, sizeof x, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Win_create: class %d", cls);
        MPI_File f;
        rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent", MPI_MODE_RDONLY, MPI_INFO_NULL, &f);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_open: class %d", cls);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    rc = check_finish("env_info");
    MPI_Finalize();
    return rc;
}
