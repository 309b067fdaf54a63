/*
 * coll_nonblocking: the nonblocking collectives, and that they never block at the call.
 *  - Every MPI_I<collective> with checked results: Ibarrier, Ibcast, Ireduce, Iallreduce,
 *    Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v,w), Ireduce_scatter(_block),
 *    Iscan, Iexscan; on world and on a reversed communicator.
 *  - Several pending at once: three Ibcasts and an Iallreduce on one communicator, an
 *    Ibarrier on another, completed with one Waitall in reverse order; then a blocking
 *    Allreduce right after an Ibcast on the same communicator.
 *  - No blocking at the call: rank 0 starts an Ibarrier and then sends rank 1 a 1 MiB
 *    message (rendezvous across sites); rank 1 receives it before it starts its own
 *    Ibarrier. An Ibarrier that waited for everyone would deadlock here.
 *  - The NBX pattern (sparse data exchange): each rank Issends to three others, then
 *    receives with Iprobe until its sends are done, then starts an Ibarrier and keeps
 *    receiving while testing it; every message must arrive exactly once.
 *  - Overlap: an Iallreduce is tested in a loop while doing local work.
 *  - A blocking collective beside pending nonblocking ones on another communicator
 *    (MPI 3.1 §5.12): rank 0 enters MPI_Allreduce on the reversed communicator before it
 *    waits for its Iallreduce and MPI_Comm_idup of world; the other ranks wait for theirs
 *    first, which completes only if rank 0's progress while it is blocked (on one site
 *    this hung while isthmus used the vendor's blocking form there).
 *  - Types freed while pending (MPI: pending operations complete normally): an Igather
 *    and an Ibcast whose derived types are freed right after the call, queued behind an
 *    Ibarrier so that they start only after the free; and an Igather receiving with
 *    MPI_Type_dup(MPI_INT), not committed by the program (a duplicate of a committed
 *    type is committed), freed before the wait.
 */
#include "check.h"
#include <string.h>

static int val(int r, int i) { return r * 1000 + i; }

static void each(MPI_Comm comm, const char *cn)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request rq[16];
    int n = 0;
    int b = rank == size - 1 ? 99 : -1;
    int red = -1, allred = -1, mine = rank + 1;
    int *gat = malloc(sizeof(int) * size * 2), *ag = malloc(sizeof(int) * size * 2);
    int *agv = malloc(sizeof(int) * size * 2);
    int *sa = malloc(sizeof(int) * size), *ra = malloc(sizeof(int) * size);
    int *sav = malloc(sizeof(int) * size), *rav = malloc(sizeof(int) * size);
    int *ones = malloc(sizeof(int) * size), *iota = malloc(sizeof(int) * size);
    int *bytes = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    int *sca = malloc(sizeof(int) * size), scr = -1, scvr = -1;
    int *rsb = malloc(sizeof(int) * size), rsr = -1, rsbr = -1, scan = -1, exscan = -1;
    int pair[2] = {val(rank, 0), val(rank, 1)};
    for (int j = 0; j < size; j++) {
        sa[j] = rank * 100 + j;
        sav[j] = rank * 100 + j + 7;
        ones[j] = 1;
        iota[j] = j;
        bytes[j] = j * (int)sizeof(int);
        types[j] = MPI_INT;
        sca[j] = j * 3;
        rsb[j] = rank + j;
    }
    MPI_Ibarrier(comm, &rq[n++]);
    MPI_Ibcast(&b, 1, MPI_INT, size - 1, comm, &rq[n++]);
    MPI_Ireduce(&mine, &red, 1, MPI_INT, MPI_SUM, 0, comm, &rq[n++]);
    MPI_Iallreduce(&mine, &allred, 1, MPI_INT, MPI_MAX, comm, &rq[n++]);
    MPI_Igather(pair, 2, MPI_INT, gat, 2, MPI_INT, size / 2, comm, &rq[n++]);
    MPI_Iscatter(sca, 1, MPI_INT, &scr, 1, MPI_INT, 0, comm, &rq[n++]);
    MPI_Iscatterv(sca, ones, iota, MPI_INT, &scvr, 1, MPI_INT, size - 1, comm, &rq[n++]);
    MPI_Iallgather(pair, 2, MPI_INT, ag, 2, MPI_INT, comm, &rq[n++]);
    MPI_Iallgatherv(pair, 1, MPI_INT, agv, ones, iota, MPI_INT, comm, &rq[n++]);
    MPI_Ialltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, comm, &rq[n++]);
    MPI_Ialltoallw(sav, ones, bytes, types, rav, ones, bytes, types, comm, &rq[n++]);
    MPI_Ireduce_scatter_block(rsb, &rsbr, 1, MPI_INT, MPI_SUM, comm, &rq[n++]);
    MPI_Ireduce_scatter(rsb, &rsr, ones, MPI_INT, MPI_SUM, comm, &rq[n++]);
    MPI_Iscan(&mine, &scan, 1, MPI_INT, MPI_SUM, comm, &rq[n++]);
    MPI_Iexscan(&mine, &exscan, 1, MPI_INT, MPI_SUM, comm, &rq[n++]);
    MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    CHECK(b == 99, "%s Ibcast %d", cn, b);
    if (rank == 0)
        CHECK(red == size * (size + 1) / 2, "%s Ireduce %d", cn, red);
    CHECK(allred == size, "%s Iallreduce %d", cn, allred);
    for (int r = 0; rank == size / 2 && r < size; r++)
        CHECK(gat[2 * r] == val(r, 0) && gat[2 * r + 1] == val(r, 1), "%s Igather from %d", cn, r);
    CHECK(scr == rank * 3 && scvr == rank * 3, "%s Iscatter(v) %d %d", cn, scr, scvr);
    for (int r = 0; r < size; r++) {
        CHECK(ag[2 * r] == val(r, 0) && ag[2 * r + 1] == val(r, 1), "%s Iallgather from %d", cn,
              r);
        CHECK(agv[r] == val(r, 0), "%s Iallgatherv from %d", cn, r);
        CHECK(ra[r] == r * 100 + rank, "%s Ialltoall from %d: %d", cn, r, ra[r]);
        CHECK(rav[r] == r * 100 + rank + 7, "%s Ialltoallw from %d: %d", cn, r, rav[r]);
    }
    CHECK(rsbr == size * (size - 1) / 2 + size * rank, "%s Ireduce_scatter_block %d", cn, rsbr);
    CHECK(rsr == rsbr, "%s Ireduce_scatter %d", cn, rsr);
    CHECK(scan == (rank + 1) * (rank + 2) / 2, "%s Iscan %d", cn, scan);
    if (rank > 0)
        CHECK(exscan == rank * (rank + 1) / 2, "%s Iexscan %d", cn, exscan);
    /* Igatherv with a rank that sends nothing */
    int *gv = malloc(sizeof(int) * size);
    int *cnt = malloc(sizeof(int) * size);
    for (int j = 0; j < size; j++) {
        cnt[j] = j == 0 ? 0 : 1;
        gv[j] = -1;
    }
    MPI_Request r1;
    MPI_Igatherv(&mine, cnt[rank], MPI_INT, gv, cnt, iota, MPI_INT, 0, comm, &r1);
    MPI_Wait(&r1, MPI_STATUS_IGNORE);
    for (int j = 1; rank == 0 && j < size; j++)
        CHECK(gv[j] == j + 1, "%s Igatherv from %d: %d", cn, j, gv[j]);
    /* Ialltoallv */
    MPI_Ialltoallv(sa, ones, iota, MPI_INT, ra, ones, iota, MPI_INT, comm, &r1);
    MPI_Wait(&r1, MPI_STATUS_IGNORE);
    for (int r = 0; r < size; r++)
        CHECK(ra[r] == r * 100 + rank, "%s Ialltoallv from %d", cn, r);
    free(gv);
    free(cnt);
    free(gat);
    free(ag);
    free(agv);
    free(sa);
    free(ra);
    free(sav);
    free(rav);
    free(ones);
    free(iota);
    free(bytes);
    free(types);
    free(sca);
    free(rsb);
}

static void pending(int rank, int size)
{
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    int b[3] = {-1, -1, -1}, s = -1, one = 1;
    if (rank == 0)
        b[0] = b[1] = b[2] = 5;
    MPI_Request rq[5];
    MPI_Ibcast(&b[0], 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Ibarrier(other, &rq[1]);
    MPI_Ibcast(&b[1], 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[2]);
    MPI_Iallreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[3]);
    MPI_Ibcast(&b[2], 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[4]);
    for (int i = 4; i >= 0; i--)
        MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
    CHECK(b[0] == 5 && b[1] == 5 && b[2] == 5 && s == size, "pending: %d %d %d %d", b[0], b[1],
          b[2], s);
    /* a blocking collective right behind a pending nonblocking one */
    int x = rank == 0 ? 8 : 0, y = -1;
    MPI_Request r;
    MPI_Ibcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, &r);
    MPI_Allreduce(&one, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(x == 8 && y == size, "blocking after nonblocking: %d %d", x, y);
    MPI_Comm_free(&other);
}

static void no_block_at_call(int rank, int size)
{
    if (size < 2)
        return;
    int n = 1 << 18; /* 1 MiB of ints */
    int *big = malloc(sizeof(int) * n);
    MPI_Request r;
    int last = size - 1; /* placed on another site than rank 0 in the test layouts */
    if (rank == 0) {
        for (int i = 0; i < n; i++)
            big[i] = i ^ 0x5a5a;
        MPI_Ibarrier(MPI_COMM_WORLD, &r);
        MPI_Send(big, n, MPI_INT, last, 3, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (rank == last) {
        MPI_Recv(big, n, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ibarrier(MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += big[i] != (i ^ 0x5a5a);
        CHECK(bad == 0, "message beside an Ibarrier: %d wrong", bad);
    } else {
        MPI_Ibarrier(MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    free(big);
}

static void nbx(int rank, int size)
{
    MPI_Request sreq[3], bar = MPI_REQUEST_NULL;
    int payload[3], got = 0, sum = 0, ns = size > 1 ? 3 : 0;
    for (int k = 0; k < ns; k++) {
        int to = (rank + 1 + k * 7 % (size - 1 ? size - 1 : 1)) % size;
        if (to == rank)
            to = (rank + 1) % size;
        payload[k] = rank * 10 + k;
        MPI_Issend(&payload[k], 1, MPI_INT, to, 11, MPI_COMM_WORLD, &sreq[k]);
    }
    int barrier_done = 0, started = 0;
    while (!barrier_done) {
        int flag;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v / 10 == st.MPI_SOURCE, "NBX message %d from %d", v, st.MPI_SOURCE);
            got++;
            sum += v;
        }
        if (!started) {
            int all = 0;
            MPI_Testall(ns, sreq, &all, MPI_STATUSES_IGNORE);
            if (all) {
                MPI_Ibarrier(MPI_COMM_WORLD, &bar);
                started = 1;
            }
        } else {
            MPI_Test(&bar, &barrier_done, MPI_STATUS_IGNORE);
        }
    }
    int tot_got = 0, tot_sent = 0;
    MPI_Allreduce(&got, &tot_got, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&ns, &tot_sent, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(tot_got == tot_sent, "NBX: %d messages received, %d sent", tot_got, tot_sent);
    (void)sum;
}

static void overlap(int rank, int size)
{
    int n = 100000;
    double *in = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++)
        in[i] = rank + i % 7;
    MPI_Request r;
    MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    int done = 0, rounds = 0;
    volatile double work = 0;
    while (!done) {
        for (int i = 0; i < 1000; i++)
            work += i * 0.5;
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        rounds++;
    }
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += out[i] != (double)size * (size - 1) / 2 + (double)size * (i % 7);
    CHECK(bad == 0, "overlapped Iallreduce: %d wrong after %d rounds", bad, rounds);
    free(in);
    free(out);
}

static void blocking_beside(int rank, int size, MPI_Comm other)
{
    int one = 1, sum = 0, v[2] = {rank, 1}, w[2] = {-1, -1};
    MPI_Request r[2];
    MPI_Comm d = MPI_COMM_NULL;
    MPI_Iallreduce(v, w, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    MPI_Comm_idup(MPI_COMM_WORLD, &d, &r[1]);
    if (rank == 0) {
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, other);
        CHECK_RC(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "Waitall after the blocking Allreduce");
    } else {
        CHECK_RC(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "Waitall before the blocking Allreduce");
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, other);
    }
    CHECK(sum == size, "blocking Allreduce beside pending ones gave %d, want %d", sum, size);
    CHECK(w[0] == size * (size - 1) / 2 && w[1] == size,
          "Iallreduce beside a blocking one gave %d %d, want %d %d", w[0], w[1],
          size * (size - 1) / 2, size);
    int in_d = 0;
    MPI_Allreduce(&one, &in_d, 1, MPI_INT, MPI_SUM, d);
    CHECK(in_d == size, "the idup made beside a blocking Allreduce: allreduce gave %d", in_d);
    MPI_Comm_free(&d);
}

static void freed_types(int rank, int size)
{
    enum { N = 4 };
    MPI_Datatype vec, rty, bty;
    MPI_Type_vector(N, 1, 2, MPI_INT, &vec); /* every other int */
    MPI_Type_dup(vec, &rty);
    MPI_Type_commit(&rty);
    MPI_Type_dup(vec, &bty);
    MPI_Type_commit(&bty);
    MPI_Type_free(&vec);
    int mine[N], *all = malloc(sizeof(int) * 2 * N * (size_t)size), b[2 * N];
    for (int i = 0; i < N; i++)
        mine[i] = val(rank, i);
    for (int i = 0; i < 2 * N * size; i++)
        all[i] = -1;
    for (int i = 0; i < 2 * N; i++)
        b[i] = rank == 0 ? val(7, i) : -1;
    MPI_Request rq[3];
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
    /* rank 0 receives N ints per rank into every other slot of a 2N-int block */
    MPI_Igather(mine, N, MPI_INT, all, 1, rty, 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Ibcast(b, 1, bty, 0, MPI_COMM_WORLD, &rq[2]);
    MPI_Type_free(&rty);
    MPI_Type_free(&bty);
    CHECK(rty == MPI_DATATYPE_NULL && bty == MPI_DATATYPE_NULL, "Type_free did not reset");
    MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    /* the vector's extent is 2N-1 ints: block r starts at (2N-1)*r */
    for (int r = 0; rank == 0 && r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(all[(2 * N - 1) * r + 2 * i] == val(r, i), "freed-type Igather: rank %d "
                  "item %d is %d", r, i, all[(2 * N - 1) * r + 2 * i]);
    for (int i = 0; i < 2 * N - 1; i++)
        CHECK(b[i] == (i % 2 ? (rank == 0 ? val(7, i) : -1) : val(7, i)),
              "freed-type Ibcast: item %d is %d", i, b[i]);
    /* the duplicate of a predefined type, never committed by us, freed before the wait */
    MPI_Datatype dup;
    int x = val(rank, 0);
    MPI_Type_dup(MPI_INT, &dup);
    for (int i = 0; i < size; i++)
        all[i] = -1;
    MPI_Igather(&x, 1, MPI_INT, all, 1, dup, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Type_free(&dup);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (int r = 0; rank == 0 && r < size; r++)
        CHECK(all[r] == val(r, 0), "Igather into a freed Type_dup(MPI_INT): rank %d gave %d",
              r, all[r]);
    free(all);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev);
    each(MPI_COMM_WORLD, "world");
    each(rev, "reversed");
    pending(rank, size);
    no_block_at_call(rank, size);
    nbx(rank, size);
    overlap(rank, size);
    blocking_beside(rank, size, rev);
    freed_types(rank, size);
    MPI_Comm_free(&rev);
    int rc = check_finish("coll_nonblocking");
    MPI_Finalize();
    return rc;
}
