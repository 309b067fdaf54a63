/*
 * win_query_name: MPI_Win_shared_query on windows made by MPI_Win_create and
 * MPI_Win_allocate, and the name of MPI_WIN_NULL. MPI 4.1 §12.2.3 allows the query on
 * any flavor but dynamic: a rank whose memory the caller cannot load and store directly
 * comes back as size 0 (base NULL); one that does come back is that rank's memory, size
 * and unit. A process's own memory is always directly accessible and is what isthmus,
 * MPICH and Open MPI return for it; MPI_PROC_NULL names the lowest rank with memory. Both
 * are MPI 4.1 rules: under an MPI older than 4.1 (Open MPI 4.1 is 3.1, MPICH 4.0 is 4.0)
 * they are skipped. Works for any size.
 */
#include <string.h>

#include "check.h"

typedef struct { void *base; MPI_Aint size; int unit; } seg;

/* all: every rank's (base, size, unit); rank 0 has no memory unless it is alone, so
 * MPI_PROC_NULL names rank 1 */
static void query_all(MPI_Win w, const char *what, int rank, int size, const seg *all)
{
    for (int r = -1; r < size; r++) {
        int q = r < 0 ? MPI_PROC_NULL : r, who = r < 0 ? 1 : r; /* rank 0 has no memory */
        if (r < 0 && size < 2)
            continue;
        MPI_Aint sz = -1;
        int du = -1;
        void *base = &sz;
        int rc = MPI_Win_shared_query(w, q, &sz, &du, &base);
        CHECK(rc == MPI_SUCCESS, "%s: shared_query of rank %d: error %d", what, q, rc);
        if (rc != MPI_SUCCESS)
            continue;
        if (who == rank && all[who].size == 0)
            CHECK(sz == 0, "%s: my own rank %d has no memory, query gave %ld bytes", what, who,
                  (long)sz);
        else if (who == rank)
            CHECK(sz == all[who].size && base == all[who].base && du == all[who].unit,
                  "%s: query of my own rank %d%s gave %p, %ld bytes, unit %d; mine is %p, %ld, "
                  "%d", what, who, r < 0 ? " (as MPI_PROC_NULL)" : "", base, (long)sz, du,
                  all[who].base, (long)all[who].size, all[who].unit);
        else if (sz != 0)
            CHECK(sz == all[who].size && du == all[who].unit && base != NULL,
                  "%s: rank %d's memory came back as %ld bytes, unit %d (it has %ld, %d)",
                  what, q, (long)sz, du, (long)all[who].size, all[who].unit);
        else
            CHECK(base == NULL, "%s: rank %d: size 0 with base %p", what, q, base);
    }
}

static void check_flavor(MPI_Comm comm, int allocate, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    seg me = {NULL, rank == 0 && size > 1 ? 0 : 8 * (MPI_Aint)(rank + 1), 2 + rank % 3};
    seg *all = malloc(sizeof *all * size);
    static char mem[8 * 64]; /* Win_create's memory, for up to 63 ranks */
    MPI_Win w;
    int rc = allocate ? MPI_Win_allocate(me.size, me.unit, MPI_INFO_NULL, comm, &me.base, &w)
                      : MPI_Win_create(me.base = mem, me.size, me.unit, MPI_INFO_NULL, comm, &w);
    CHECK_RC(rc, what);
    MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, comm);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    query_all(w, what, rank, size, all);
    MPI_Win_free(&w);
    free(all);
}

int main(int argc, char **argv)
{
    int version, subversion;
    MPI_Init(&argc, &argv);
    MPI_Get_version(&version, &subversion);
    if (version * 10 + subversion >= 41) {
        char name[MPI_MAX_OBJECT_NAME] = "";
        int len = -1;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        CHECK_RC(MPI_Win_get_name(MPI_WIN_NULL, name, &len), "win_get_name of MPI_WIN_NULL");
        CHECK(!strcmp(name, "MPI_WIN_NULL") && len == 12, "MPI_WIN_NULL is named '%s' (%d)",
              name, len);
        check_flavor(MPI_COMM_WORLD, 0, "win_create over world");
        check_flavor(MPI_COMM_WORLD, 1, "win_allocate over world");
        check_flavor(MPI_COMM_SELF, 0, "win_create over self");
        check_flavor(MPI_COMM_SELF, 1, "win_allocate over self");
    } else {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (!rank)
            printf("win_query_name: MPI %d.%d is older than 4.1, its rules are skipped\n",
                   version, subversion);
    }
    return check_finish("win_query_name") + MPI_Finalize();
}
