/*
 * env_abi_fortran: MPI_Abi_get_fortran_info (MPI 5.0 §20.3). A library whose Fortran
 * datatypes are usable knows its Fortran ABI and must say it: the sizes of LOGICAL,
 * INTEGER, REAL and DOUBLE PRECISION equal MPI_Type_size of their datatypes, and each
 * optional type (LOGICAL1 ... COMPLEX32, DOUBLE COMPLEX) is "true" exactly when its
 * datatype has a size, as mpi4py's test_mpiabi checks. An MPI older than 5.0 has no such
 * call: the program reports itself skipped. Works for any size.
 */
#include <string.h>

#include "check.h"

#if MPI_VERSION >= 5
/* the datatype's size, or 0 when this MPI does not have it */
static int type_size(MPI_Datatype t)
{
    int size = 0;
    if (t == MPI_DATATYPE_NULL || MPI_Type_size(t, &size) != MPI_SUCCESS)
        return 0;
    return size;
}

static void check_info(MPI_Info info)
{
    static const struct { const char *name; MPI_Datatype t; int optional; } types[] = {
        {"logical", MPI_LOGICAL, 0}, {"integer", MPI_INTEGER, 0}, {"real", MPI_REAL, 0},
        {"double_precision", MPI_DOUBLE_PRECISION, 0}, {"logical1", MPI_LOGICAL1, 1},
        {"logical2", MPI_LOGICAL2, 1}, {"logical4", MPI_LOGICAL4, 1},
        {"logical8", MPI_LOGICAL8, 1}, {"logical16", MPI_LOGICAL16, 1},
        {"integer1", MPI_INTEGER1, 1}, {"integer2", MPI_INTEGER2, 1},
        {"integer4", MPI_INTEGER4, 1}, {"integer8", MPI_INTEGER8, 1},
        {"integer16", MPI_INTEGER16, 1}, {"real2", MPI_REAL2, 1}, {"real4", MPI_REAL4, 1},
        {"real8", MPI_REAL8, 1}, {"real16", MPI_REAL16, 1}, {"complex4", MPI_COMPLEX4, 1},
        {"complex8", MPI_COMPLEX8, 1}, {"complex16", MPI_COMPLEX16, 1},
        {"complex32", MPI_COMPLEX32, 1}, {"double_complex", MPI_DOUBLE_COMPLEX, 1},
    };
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        char key[64], value[MPI_MAX_INFO_VAL + 1] = "";
        int flag = 0, size = type_size(types[i].t);
        snprintf(key, sizeof key, "mpi_%s_%s", types[i].name,
                 types[i].optional ? "supported" : "size");
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag, "key %s missing", key);
        if (!flag)
            continue;
        if (types[i].optional)
            CHECK(!strcmp(value, size ? "true" : "false"),
                  "%s is '%s' but the datatype's size is %d", key, value, size);
        else
            CHECK(atoi(value) == size && size > 0, "%s is '%s', MPI_Type_size says %d", key,
                  value, size);
    }
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
#if MPI_VERSION >= 5
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Info info = MPI_INFO_NULL;
    CHECK_RC(MPI_Abi_get_fortran_info(&info), "MPI_Abi_get_fortran_info");
    if (type_size(MPI_INTEGER))
        CHECK(info != MPI_INFO_NULL, "MPI_INTEGER has a size but the Fortran ABI is unknown");
    if (info != MPI_INFO_NULL) {
        check_info(info);
        MPI_Info_free(&info);
    }
#else
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!rank)
        printf("env_abi_fortran: MPI %d.%d has no MPI_Abi_get_fortran_info, skipped\n",
               MPI_VERSION, MPI_SUBVERSION);
#endif
    return check_finish("env_abi_fortran") + MPI_Finalize();
}
