/*
 * env_finalize_attr: MPI_Finalize first deletes the attributes of MPI_COMM_SELF
 * (MPI 3.1 §8.7.1), calling their delete callbacks in the reverse order of setting and
 * while MPI is still usable (MPI_Finalized gives 0, a collective on MPI_COMM_WORLD works).
 * Checked after MPI_Finalize, so each rank judges itself: a rank that failed prints why
 * and exits 1 (which fails the job); rank 0 prints "env_finalize_attr: OK" if it passed.
 */
#include <mpi.h>
#include <stdio.h>

#define NATTR 5
static int order[NATTR], ncalls, bad_finalized, bad_coll;

static int on_delete(MPI_Comm comm, int kv, void *val, void *extra)
{
    (void)comm; (void)kv; (void)extra;
    int fin = 1, one = 1, n = 0, size = 0;
    MPI_Finalized(&fin);
    bad_finalized += fin != 0;
    if (ncalls < NATTR)
        order[ncalls] = (int)(MPI_Aint)val;
    ncalls++;
    if ((int)(MPI_Aint)val == 0) { /* the last one: MPI still works */
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad_coll += n != size;
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank, kv[NATTR];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < NATTR; i++) {
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &kv[i], NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, kv[i], (void *)(MPI_Aint)i);
        MPI_Comm_free_keyval(&kv[i]); /* the attribute keeps the keyval alive */
    }
    MPI_Finalize();
    int fails = 0;
    if (ncalls != NATTR) {
        fprintf(stderr, "[rank %d] %d delete callbacks ran, want %d\n", rank, ncalls, NATTR);
        fails++;
    }
    for (int i = 0; i < NATTR && i < ncalls; i++)
        if (order[i] != NATTR - 1 - i) {
            fprintf(stderr, "[rank %d] callback %d deleted attribute %d, want %d (LIFO)\n",
                    rank, i, order[i], NATTR - 1 - i);
            fails++;
        }
    if (bad_finalized || bad_coll) {
        fprintf(stderr, "[rank %d] inside the callbacks: MPI_Finalized true %d times, "
                "allreduce wrong %d times\n", rank, bad_finalized, bad_coll);
        fails++;
    }
    if (rank == 0 && !fails)
        printf("env_finalize_attr: OK\n");
    return fails ? 1 : 0;
}
