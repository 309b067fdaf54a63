/* pmpi_app.c: an MPI program that counts its own MPI calls, for the PMPI interposition test
 * (python/tests/test_pmpi_tool.py): a profiling library built over PMPI must see exactly
 * these calls, no more (libisthmus never calls MPI_X itself, so a tool never sees the
 * library's own work: nonblocking and persistent collectives, communicator creation,
 * the cross-site protocol), no fewer (every MPI_X a program calls is the tool's).
 *
 * Every call goes through C(), which tallies it; at the end each rank writes its tally to
 * $PMPI_APP_OUT.<rank> as "name count" lines, before MPI_Finalize (the tool's wrapper of
 * MPI_Finalize counts itself; the app writes it as 1). Rank 0 and the last rank talk
 * across sites when the job has two.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 128
static const char *names[MAXF];
static long counts[MAXF];

static void tally(const char *name)
{
    for (int i = 0; i < MAXF; i++) {
        if (names[i] && !strcmp(names[i], name)) {
            counts[i]++;
            return;
        }
        if (!names[i]) {
            names[i] = name;
            counts[i] = 1;
            return;
        }
    }
}

#define C(f, ...) (tally(#f), f(__VA_ARGS__))

int main(int argc, char **argv)
{
    int rank, size, provided;
    C(MPI_Init_thread, &argc, &argv, MPI_THREAD_SINGLE, &provided);
    C(MPI_Comm_rank, MPI_COMM_WORLD, &rank);
    C(MPI_Comm_size, MPI_COMM_WORLD, &size);
    int far = size - 1, v = rank, sum = 0;
    double t = C(MPI_Wtime);
    (void)t;
    /* point-to-point, blocking and not, across sites */
    if (rank == 0) {
        C(MPI_Send, &v, 1, MPI_INT, far, 1, MPI_COMM_WORLD);
        MPI_Request r[2];
        C(MPI_Isend, &v, 1, MPI_INT, far, 2, MPI_COMM_WORLD, &r[0]);
        C(MPI_Irecv, &sum, 1, MPI_INT, far, 3, MPI_COMM_WORLD, &r[1]);
        C(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);
    } else if (rank == far) {
        MPI_Status st;
        C(MPI_Probe, 0, 1, MPI_COMM_WORLD, &st);
        int n;
        C(MPI_Get_count, &st, MPI_INT, &n);
        C(MPI_Recv, &sum, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Request r;
        C(MPI_Irecv, &sum, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &r);
        int flag = 0;
        while (!flag)
            C(MPI_Test, &r, &flag, MPI_STATUS_IGNORE);
        C(MPI_Sendrecv, &v, 1, MPI_INT, 0, 3, &sum, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
          MPI_STATUS_IGNORE);
    }
    /* collectives: blocking, nonblocking, persistent */
    C(MPI_Barrier, MPI_COMM_WORLD);
    C(MPI_Bcast, &v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    C(MPI_Allreduce, &v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int *all = malloc(sizeof(int) * (size_t)size);
    C(MPI_Allgather, &v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    C(MPI_Alltoall, all, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Request q;
    C(MPI_Ibarrier, MPI_COMM_WORLD, &q);
    C(MPI_Wait, &q, MPI_STATUS_IGNORE);
    C(MPI_Iallreduce, &v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    C(MPI_Wait, &q, MPI_STATUS_IGNORE);
    C(MPI_Allreduce_init, &v, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    C(MPI_Start, &q);
    C(MPI_Wait, &q, MPI_STATUS_IGNORE);
    C(MPI_Request_free, &q);
    /* communicators, groups, datatypes, info, attributes, errors */
    MPI_Comm dup, split, idup;
    C(MPI_Comm_dup, MPI_COMM_WORLD, &dup);
    C(MPI_Comm_split, dup, rank % 2, rank, &split);
    C(MPI_Comm_idup, MPI_COMM_WORLD, &idup, &q);
    C(MPI_Wait, &q, MPI_STATUS_IGNORE);
    MPI_Group g;
    int gs;
    C(MPI_Comm_group, split, &g);
    C(MPI_Group_size, g, &gs);
    C(MPI_Group_free, &g);
    MPI_Datatype vec;
    C(MPI_Type_vector, 2, 1, 2, MPI_INT, &vec);
    C(MPI_Type_commit, &vec);
    int ts;
    C(MPI_Type_size, vec, &ts);
    C(MPI_Type_free, &vec);
    MPI_Info info;
    C(MPI_Info_create, &info);
    C(MPI_Info_set, info, "key", "value");
    C(MPI_Info_free, &info);
    C(MPI_Comm_set_errhandler, dup, MPI_ERRORS_RETURN);
    char name[MPI_MAX_PROCESSOR_NAME];
    int nl;
    C(MPI_Get_processor_name, name, &nl);
    C(MPI_Comm_free, &idup);
    C(MPI_Comm_free, &split);
    C(MPI_Comm_free, &dup);
    free(all);
    int done;
    C(MPI_Finalized, &done);
    tally("MPI_Finalize"); /* counted before, as the tally is written before it runs */
    const char *out = getenv("PMPI_APP_OUT");
    if (out) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", out, rank);
        FILE *f = fopen(path, "w");
        for (int i = 0; f && i < MAXF && names[i]; i++)
            fprintf(f, "%s %ld\n", names[i], counts[i]);
        if (f)
            fclose(f);
    }
    MPI_Finalize();
    if (rank == 0)
        printf("pmpi_app: done\n");
    return 0;
}
