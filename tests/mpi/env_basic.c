/*
 * env_basic: the process-environment calls every MPI program relies on.
 * Checks Initialized/Finalized before and after Init/Finalize, rank/size on
 * MPI_COMM_WORLD and MPI_COMM_SELF (and that world ranks are a permutation
 * of 0..size-1), Get_processor_name (non-empty, length == strlen),
 * Get_version (>= 3.0) and Get_library_version (non-empty), Wtime
 * monotone and Wtick > 0.  Works for any size >= 1.
 * The post-Finalize check can only be reported locally: a rank that sees
 * MPI_Finalized() == false after MPI_Finalize prints to stderr and exits 1.
 */
#include "check.h"
#include <string.h>

int main(int argc, char **argv)
{
    int flag = -1;

    /* Before MPI_Init: only Initialized/Finalized (and Get_version) are
     * callable; check_fail_ copes with MPI not being initialised. */
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized before Init = %d", flag);
    flag = -1;
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized before Init = %d", flag);
    int pre_major = 0, pre_minor = 0;
    MPI_Get_version(&pre_major, &pre_minor); /* allowed before Init */

    MPI_Init(&argc, &argv);

    flag = -1;
    MPI_Initialized(&flag);
    CHECK(flag != 0, "MPI_Initialized after Init = %d", flag);
    flag = -1;
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized after Init = %d", flag);

    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 1, "world size %d", size);
    CHECK(rank >= 0 && rank < size, "world rank %d of %d", rank, size);

    int srank = -1, ssize = -1;
    MPI_Comm_rank(MPI_COMM_SELF, &srank);
    MPI_Comm_size(MPI_COMM_SELF, &ssize);
    CHECK(srank == 0, "SELF rank %d", srank);
    CHECK(ssize == 1, "SELF size %d", ssize);

    /* world ranks are distinct and cover 0..size-1 */
    int *all = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        CHECK(all[i] == i, "allgather of ranks: slot %d holds %d", i, all[i]);
    int sum = 0, expect = size * (size - 1) / 2;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == expect, "sum of ranks %d, expected %d", sum, expect);
    int maxsize = 0;
    MPI_Allreduce(&size, &maxsize, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(maxsize == size, "ranks disagree on size: max %d, mine %d", maxsize, size);
    free(all);

    /* processor name */
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    memset(name, 'x', sizeof name);
    name[MPI_MAX_PROCESSOR_NAME] = '\0';
    int len = -1;
    MPI_Get_processor_name(name, &len);
    CHECK(len > 0 && len <= MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
    if (len >= 0 && len <= MPI_MAX_PROCESSOR_NAME)
        CHECK((int)strlen(name) == len, "strlen(name)=%zu but resultlen=%d",
              strlen(name), len);

    /* version */
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    CHECK(major >= 3, "MPI_Get_version %d.%d < 3", major, minor);
    CHECK(major == MPI_VERSION && minor == MPI_SUBVERSION,
          "MPI_Get_version %d.%d != header MPI_VERSION %d.%d", major, minor,
          MPI_VERSION, MPI_SUBVERSION);
    CHECK(pre_major == major && pre_minor == minor,
          "Get_version before Init %d.%d, after %d.%d", pre_major, pre_minor,
          major, minor);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    memset(lib, 0, sizeof lib);
    len = -1;
    MPI_Get_library_version(lib, &len);
    CHECK(len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING,
          "library version length %d", len);
    CHECK(lib[0] != '\0', "library version string empty");

    /* clocks */
    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick < 1.0, "MPI_Wtick = %g", tick);
    double prev = MPI_Wtime();
    int nonmono = 0;
    for (int i = 0; i < 100000; i++) {
        double t = MPI_Wtime();
        if (t < prev)
            nonmono++;
        prev = t;
    }
    CHECK(nonmono == 0, "MPI_Wtime went backwards %d times", nonmono);
    double t0 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    CHECK(t1 >= t0, "Wtime across barriers %f < %f", t1, t0);

    /* MPI_WTIME_IS_GLOBAL attribute exists (value is implementation choice) */
    int *wg = NULL;
    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &wg, &flag);
    if (flag)
        CHECK(*wg == 0 || *wg == 1, "MPI_WTIME_IS_GLOBAL = %d", *wg);
    /* MPI_TAG_UB must be at least 32767 */
    int *tagub = NULL;
    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagub, &flag);
    CHECK(flag, "MPI_TAG_UB attribute missing");
    if (flag)
        CHECK(*tagub >= 32767, "MPI_TAG_UB = %d", *tagub);

    int rc = check_finish("env_basic");
    MPI_Finalize();

    flag = -1;
    MPI_Finalized(&flag);
    if (flag == 0) {
        fprintf(stderr, "[rank %d] env_basic: MPI_Finalized after Finalize = 0\n", rank);
        rc = 1;
    }
    flag = -1;
    MPI_Initialized(&flag);
    if (flag == 0) {
        /* MPI_Initialized stays true after MPI_Finalize (MPI-3.1 8.7) */
        fprintf(stderr, "[rank %d] env_basic: MPI_Initialized after Finalize = 0\n", rank);
        rc = 1;
    }
    return rc;
}
