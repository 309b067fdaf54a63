/*
 * env_environ: a program that refers to `environ` (so, built without
 * -mno-direct-extern-access, the executable holds its own copy of it) and changes its
 * environment before and after MPI_Init. The vendor MPI, loaded by isthmus with
 * RTLD_DEEPBIND, must see the same environment and must not crash editing it (Open MPI
 * did: a free() of the start-up environment in MPI_Init).
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <string.h>

extern char **environ;

static int has(const char *kv)
{
    for (char **e = environ; *e; e++)
        if (strcmp(*e, kv) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    setenv("ISTHMUS_TEST_BEFORE_INIT", "1", 1);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(has("ISTHMUS_TEST_BEFORE_INIT=1"), "variable set before MPI_Init is gone");
    for (int i = 0; i < 50; i++) { /* grow the environment: libc moves it */
        char name[64];
        snprintf(name, sizeof name, "ISTHMUS_TEST_GROW_%d", i);
        setenv(name, "x", 1);
    }
    CHECK(has("ISTHMUS_TEST_GROW_49=x"), "setenv after MPI_Init not visible in environ");
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sum == size, "allreduce gave %d", sum);
    return check_finish("env_environ") | (MPI_Finalize() != MPI_SUCCESS);
}
