/* trace_rma.c: one of each kind of one-sided call, on a window whose ranks are not the
 * world's (a communicator in reverse order: window rank w is global rank size-1-w), so
 * that python/tests/test_trace.py can check that the trace names every target by its
 * global rank and carries the bytes each call moved. Each rank prints one line per call,
 * "trace_rma: rank R: OP target T bytes OUT BACK" with T global, which the test sets
 * beside the trace's RMA records, then "trace_rma: ok" from rank 0 when every value read
 * was right.
 *
 * usage: trace_rma
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank;

static void say(const char *op, int target, long out, long back)
{
    printf("trace_rma: rank %d: %s target %d bytes %ld %ld\n", rank, op, target, out, back);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &rev);
    int me;
    MPI_Comm_rank(rev, &me);
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, rev, &mem, &win);
    for (int i = 0; i < 64; i++)
        mem[i] = 1000 * me + i;
    MPI_Barrier(rev);
    int next = (me + 1) % size, prev = (me + size - 1) % size; /* window ranks */
    int gnext = size - 1 - next, gprev = size - 1 - prev;    /* their global ranks */
    int buf[16] = {0}, one = 1, two[2] = {1, 1}, old = -1, bad = 0;

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
    say("lock", gnext, 0, 0);
    MPI_Get(buf, 10, MPI_INT, next, 0, 10, MPI_INT, win);
    say("get", gnext, 0, 40);
    MPI_Put(&one, 1, MPI_INT, next, 20, 1, MPI_INT, win);
    say("put", gnext, 4, 0);
    MPI_Win_unlock(next, win);
    say("unlock", gnext, 0, 0);
    for (int i = 0; i < 10; i++)
        bad += buf[i] != 1000 * next + i;

    MPI_Win_lock_all(0, win);
    say("lock_all", -1, 0, 0);
    MPI_Fetch_and_op(&one, &old, MPI_INT, prev, 30, MPI_SUM, win);
    say("fop", gprev, 4, 4);
    MPI_Accumulate(two, 2, MPI_INT, prev, 40, 2, MPI_INT, MPI_SUM, win);
    say("acc", gprev, 8, 0);
    MPI_Win_flush(prev, win);
    say("flush", gprev, 0, 0);
    MPI_Win_unlock_all(win);
    say("unlock_all", -1, 0, 0);

    MPI_Win_fence(0, win);
    say("fence", -1, 0, 0);
    MPI_Request req;
    MPI_Rget(buf, 3, MPI_INT, prev, 0, 3, MPI_INT, win, &req);
    say("get", gprev, 0, 12);
    MPI_Win_fence(0, win);
    say("fence", -1, 0, 0);
    MPI_Wait(&req, MPI_STATUS_IGNORE);

    MPI_Group wg, peers;
    MPI_Win_get_group(win, &wg);
    int pair[2] = {prev, next};
    MPI_Group_incl(wg, prev == next ? 1 : 2, pair, &peers);
    MPI_Win_post(peers, 0, win);
    say("post", gprev, 0, 0);
    if (prev != next)
        say("post", gnext, 0, 0);
    MPI_Win_start(peers, 0, win);
    say("start", gprev, 0, 0);
    if (prev != next)
        say("start", gnext, 0, 0);
    MPI_Put(buf, 2, MPI_INT, next, 50, 2, MPI_INT, win);
    say("put", gnext, 8, 0);
    MPI_Win_complete(win);
    say("complete", -1, 0, 0);
    MPI_Win_wait(win);
    say("wait", -1, 0, 0);
    MPI_Group_free(&peers);
    MPI_Group_free(&wg);

    MPI_Win_free(&win);
    MPI_Comm_free(&rev);
    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all_bad ? "trace_rma: FAILED: %d wrong values\n" : "trace_rma: ok\n", all_bad);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
