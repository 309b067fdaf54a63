/*
 * rma_flushlocal: MPI_Win_flush_local and MPI_Win_flush_local_all (local completion) to a
 * far target (another site in a 2-site run) and a near one, in a lock_all epoch:
 *   - after Put + flush_local the origin buffer may be reused: it is overwritten at once,
 *     and the target still gets the value put (checked after a barrier and a flush);
 *   - after Get + flush_local the value is in the origin buffer;
 *   - after Fetch_and_op and Get_accumulate + flush_local_all their results are there;
 *   - with an argument (the link's one-way delay in ms, for a run on an emulated link),
 *     rank 0 also times 20 Put + flush_local pairs to its far target and prints the
 *     median and a flush's median for comparison: "flush_local ms X flush ms Y".
 * Any size >= 1 (with one rank every target is itself).
 */
#include "check.h"
#include <stdlib.h>
#include <string.h>

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int far = peer_far_to(rank, size), near = peer_near(rank, size);
    long long *mem;
    MPI_Win win;
    CHECK_RC(MPI_Win_allocate(8 * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &mem, &win),
             "Win_allocate");
    for (int i = 0; i < 8; i++)
        mem[i] = 1000 * rank + i;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_lock_all(0, win), "lock_all");
    /* Put + flush_local, then reuse the buffer at once: slot 0 of far, slot 1 of near */
    long long v = 7000 + rank, got = -1;
    CHECK_RC(MPI_Put(&v, 1, MPI_LONG_LONG, far, 0, 1, MPI_LONG_LONG, win), "Put far");
    CHECK_RC(MPI_Win_flush_local(far, win), "flush_local far");
    v = -1;
    CHECK_RC(MPI_Put((long long[]){8000 + rank}, 1, MPI_LONG_LONG, near, 1, 1, MPI_LONG_LONG, win),
             "Put near");
    CHECK_RC(MPI_Win_flush_local(near, win), "flush_local near");
    /* Get + flush_local: the value is there (slot 7 nobody writes) */
    CHECK_RC(MPI_Get(&got, 1, MPI_LONG_LONG, far, 7, 1, MPI_LONG_LONG, win), "Get far");
    CHECK_RC(MPI_Win_flush_local(far, win), "flush_local after Get");
    CHECK(got == 1000 * far + 7, "Get + flush_local from %d gave %lld", far, got);
    /* Fetch_and_op and Get_accumulate + flush_local_all */
    long long one = 1, old = -1, ga_in = 5, ga_out = -1;
    CHECK_RC(MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, far, 6, MPI_NO_OP, win),
             "Fetch_and_op");
    CHECK_RC(MPI_Get_accumulate(&ga_in, 1, MPI_LONG_LONG, &ga_out, 1, MPI_LONG_LONG, near, 5, 1,
                                MPI_LONG_LONG, MPI_NO_OP, win),
             "Get_accumulate");
    CHECK_RC(MPI_Win_flush_local_all(win), "flush_local_all");
    CHECK(old == 1000 * far + 6, "Fetch_and_op from %d gave %lld", far, old);
    CHECK(ga_out == 1000 * near + 5, "Get_accumulate from %d gave %lld", near, ga_out);
    CHECK_RC(MPI_Win_flush_all(win), "flush_all");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Win_sync(win), "Win_sync");
    /* the far origin's put is in slot 0 (the value before the buffer was overwritten) */
    int from_far = peer_far_from(rank, size);
    CHECK(mem[0] == 7000 + from_far, "slot 0 holds %lld, not %d's put", mem[0], from_far);
    CHECK(mem[1] == 8000 + near, "slot 1 holds %lld, not %d's put", mem[1], near);
    if (argc > 1 && rank == 0 && size > 1) {
        enum { N = 20 };
        double loc[N], full[N];
        for (int i = 0; i < N; i++) {
            long long x = i;
            double t0 = MPI_Wtime();
            MPI_Put(&x, 1, MPI_LONG_LONG, far, 2, 1, MPI_LONG_LONG, win);
            MPI_Win_flush_local(far, win);
            loc[i] = MPI_Wtime() - t0;
            t0 = MPI_Wtime();
            MPI_Put(&x, 1, MPI_LONG_LONG, far, 3, 1, MPI_LONG_LONG, win);
            MPI_Win_flush(far, win);
            full[i] = MPI_Wtime() - t0;
        }
        printf("flush_local ms %.3f flush ms %.3f\n", 1e3 * median(loc, N), 1e3 * median(full, N));
        fflush(stdout);
    }
    CHECK_RC(MPI_Win_unlock_all(win), "unlock_all");
    MPI_Win_free(&win);
    int rc = check_finish("rma_flushlocal");
    MPI_Finalize();
    return rc;
}
