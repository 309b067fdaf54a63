/*
 * env_thread: MPI_Init_thread requesting MPI_THREAD_FUNNELED.
 * The thread-level constants must be ordered SINGLE < FUNNELED < SERIALIZED
 * < MULTIPLE, provided must be >= FUNNELED (every serious MPI supports it,
 * and isthmus promises it), MPI_Query_thread must return the same level and
 * MPI_Is_thread_main must be true on the thread that called Init_thread.
 * Then a little communication to show the library is usable.
 */
#include "check.h"

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);

    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED &&
              MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
          "thread level constants not ordered: %d %d %d %d", MPI_THREAD_SINGLE,
          MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE);
    CHECK(provided >= MPI_THREAD_FUNNELED && provided <= MPI_THREAD_MULTIPLE,
          "provided thread level %d < FUNNELED (%d)", provided, MPI_THREAD_FUNNELED);

    int q = -1;
    MPI_Query_thread(&q);
    CHECK(q == provided, "Query_thread %d != provided %d", q, provided);

    int ismain = 0;
    MPI_Is_thread_main(&ismain);
    CHECK(ismain, "Is_thread_main false on the thread that called Init_thread");

    int init = 0;
    MPI_Initialized(&init);
    CHECK(init, "Initialized false after Init_thread");

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* everyone agrees on the level */
    int lo = 0, hi = 0;
    MPI_Allreduce(&provided, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&provided, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "ranks got different thread levels (%d..%d)", lo, hi);

    /* a far exchange works */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int out = rank * 10 + 1, in = -1;
    MPI_Status st;
    MPI_Sendrecv(&out, 1, MPI_INT, to, 3, &in, 1, MPI_INT, from, 3, MPI_COMM_WORLD, &st);
    CHECK(in == from * 10 + 1, "far exchange got %d from %d", in, from);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 3, "status src %d tag %d",
          st.MPI_SOURCE, st.MPI_TAG);

    int rc = check_finish("env_thread");
    MPI_Finalize();
    return rc;
}
