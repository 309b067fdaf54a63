/*
 * comm_free_pending: MPI_Comm_free while receives on the communicator are still pending
 * ("pending operations complete normally", MPI 3.1 §6.4.3).  Ranks of the first half post
 * an Irecv from their partner in the second half (another site in the 2- and 3-site
 * layouts), and an MPI_ANY_SOURCE Irecv on a second communicator, then free both
 * communicators at once; every rank creates and frees a few more communicators; after a
 * barrier the partners send on their (still valid) handles; the receives must complete
 * with the data and the right status.
 */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 64 };
    int half = size / 2, in[N], in2 = -1, out[N];
    for (int i = 0; i < N; i++) {
        in[i] = -1;
        out[i] = rank * 1000 + i;
    }
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPI_Request rq[2];
    MPI_Status st[2];
    int receiver = rank < half, sender = rank >= half && rank < 2 * half;
    if (receiver) {
        MPI_Irecv(in, N, MPI_INT, rank + half, 3, a, &rq[0]);
        MPI_Irecv(&in2, 1, MPI_INT, MPI_ANY_SOURCE, 4, b, &rq[1]);
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
        CHECK(a == MPI_COMM_NULL && b == MPI_COMM_NULL, "Comm_free did not reset the handles");
    }
    for (int i = 0; i < 4; i++) { /* unrelated creations and frees meanwhile */
        MPI_Comm t;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &t);
        MPI_Comm_free(&t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (sender) {
        int v = 7000 + rank;
        MPI_Send(out, N, MPI_INT, rank - half, 3, a);
        MPI_Send(&v, 1, MPI_INT, rank - half, 4, b);
    }
    if (receiver) {
        MPI_Waitall(2, rq, st);
        for (int i = 0; i < N; i++)
            CHECK(in[i] == (rank + half) * 1000 + i, "item %d is %d", i, in[i]);
        CHECK(in2 == 7000 + rank + half && st[1].MPI_SOURCE == rank + half,
              "any-source receive got %d from %d", in2, st[1].MPI_SOURCE);
    } else {
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
    }
    int bad = check_finish("comm_free_pending");
    MPI_Finalize();
    return bad;
}
