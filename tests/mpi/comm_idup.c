/*
 * comm_idup: MPI_Comm_idup is nonblocking (MPI 3.1 §6.4.2).
 *  1. A rank starts the idup, then sends to a rank that only starts its idup after the
 *     receive: a blocking duplication would deadlock here.
 *  2. Overlapping idups started in different orders: every rank duplicates the pair
 *     communicator it shares with its right neighbour, then the one with its left
 *     neighbour (MPICH's comm/comm_idup_overlap), so neighbours start them in opposite
 *     orders.
 *  3. Several idups of one communicator interleaved with Iallreduce and Ibarrier, pending
 *     together with a blocking MPI_Comm_dup and MPI_Comm_split of another communicator.
 *  4. MPI_Comm_idup_with_info with the info freed right after the call, and the idup of
 *     an intercommunicator.
 *  5. MPI_Comm_create_group on a communicator with an idup pending at some members and
 *     not yet started at others (it is collective over the group only; MPICH's
 *     comm/comm_create_group_idup).
 * Every communicator made is checked: congruent with its parent, and isolated from all
 * the others (the same message on each must arrive on that one only).
 */
#include <string.h>

#include "check.h"

enum { NDUP = 4 };

/* Each communicator in cs[0..n) carries a message to the right neighbour with the same
 * tag; each must receive the one sent on it. ids[i] names cs[i] alike on every member. */
static void check_isolated(MPI_Comm *cs, const int *ids, int n, const char *what)
{
    MPI_Request rq[2 * 16];
    int in[16], out[16];
    for (int i = 0; i < n; i++) {
        int r, s;
        MPI_Comm_rank(cs[i], &r);
        MPI_Comm_size(cs[i], &s);
        out[i] = 1000 * ids[i] + r;
        in[i] = -1;
        MPI_Irecv(&in[i], 1, MPI_INT, (r - 1 + s) % s, 7, cs[i], &rq[2 * i]);
        MPI_Isend(&out[i], 1, MPI_INT, (r + 1) % s, 7, cs[i], &rq[2 * i + 1]);
    }
    MPI_Waitall(2 * n, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < n; i++) {
        int r, s;
        MPI_Comm_rank(cs[i], &r);
        MPI_Comm_size(cs[i], &s);
        CHECK(in[i] == 1000 * ids[i] + (r - 1 + s) % s, "%s: communicator %d got %d, want %d",
              what, ids[i], in[i], 1000 * ids[i] + (r - 1 + s) % s);
    }
}

static void check_congruent(MPI_Comm parent, MPI_Comm c, const char *what)
{
    int res = -1;
    MPI_Comm_compare(parent, c, &res);
    CHECK(res == MPI_CONGRUENT, "%s: compare gave %d, want MPI_CONGRUENT", what, res);
    int one = 1, sum = 0, size;
    MPI_Comm_size(c, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == size, "%s: allreduce gave %d, want %d", what, sum, size);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1: the last rank starts the idup only after a message the first sends after its own */
    {
        MPI_Comm d;
        MPI_Request r;
        int token = 42, got = 0;
        if (rank == 0 && size > 1) {
            MPI_Comm_idup(MPI_COMM_WORLD, &d, &r);
            MPI_Send(&token, 1, MPI_INT, size - 1, 1, MPI_COMM_WORLD);
        } else if (rank == size - 1 && size > 1) {
            MPI_Recv(&got, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got == 42, "token %d", got);
            MPI_Comm_idup(MPI_COMM_WORLD, &d, &r);
        } else {
            MPI_Comm_idup(MPI_COMM_WORLD, &d, &r);
        }
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait on the idup");
        CHECK(r == MPI_REQUEST_NULL, "the idup request was not freed by MPI_Wait");
        check_congruent(MPI_COMM_WORLD, d, "idup before a send");
        MPI_Comm_free(&d);
    }

    /* 2: pair communicators {r, r+1}, duplicated right pair first, then left pair */
    if (size > 1) {
        MPI_Comm right = MPI_COMM_NULL, left = MPI_COMM_NULL;
        for (int i = 0; i < size; i++) {
            MPI_Comm t;
            int color = rank == i || rank == (i + 1) % size ? 0 : MPI_UNDEFINED;
            MPI_Comm_split(MPI_COMM_WORLD, color, rank == i ? 0 : 1, &t);
            if (rank == i)
                right = t;
            else if (rank == (i + 1) % size)
                left = t;
        }
        if (size == 2) { /* both pairs are {0, 1}: still two distinct communicators */
            CHECK(right != MPI_COMM_NULL && left != MPI_COMM_NULL, "pair communicators");
        }
        MPI_Comm d[2];
        MPI_Request r[2];
        MPI_Comm_idup(right, &d[0], &r[0]);
        MPI_Comm_idup(left, &d[1], &r[1]);
        CHECK_RC(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "MPI_Waitall on crossed idups");
        /* blocking checks in an order that cannot deadlock around the ring */
        for (int k = 0; k < 2; k++) {
            int i = rank % 2 ? 1 - k : k;
            check_congruent(i ? left : right, d[i], i ? "crossed idup (left)" : "crossed idup (right)");
        }
        MPI_Comm all[4] = {right, left, d[0], d[1]};
        int lo = (rank - 1 + size) % size, ids[4] = {2 * rank, 2 * lo, 2 * rank + 1, 2 * lo + 1};
        check_isolated(all, ids, 4, "crossed idups");
        for (int i = 0; i < 2; i++)
            MPI_Comm_free(&d[i]);
        MPI_Comm_free(&right);
        MPI_Comm_free(&left);
    }

    /* 3: idups of world interleaved with nonblocking collectives on world, pending while
     * blocking constructors run on another communicator */
    {
        MPI_Comm other, d[NDUP], made[2];
        MPI_Comm_dup(MPI_COMM_WORLD, &other);
        MPI_Request r[3 * NDUP];
        int in[NDUP], sum[NDUP];
        for (int i = 0; i < NDUP; i++) {
            in[i] = rank + i;
            MPI_Comm_idup(MPI_COMM_WORLD, &d[i], &r[3 * i]);
            MPI_Iallreduce(&in[i], &sum[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[3 * i + 1]);
            MPI_Ibarrier(MPI_COMM_WORLD, &r[3 * i + 2]);
        }
        MPI_Comm_dup(other, &made[0]);
        MPI_Comm_split(other, rank % 2, size - rank, &made[1]);
        CHECK_RC(MPI_Waitall(3 * NDUP, r, MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (int i = 0; i < NDUP; i++) {
            int want = size * (size - 1) / 2 + size * i;
            CHECK(sum[i] == want, "Iallreduce %d gave %d, want %d", i, sum[i], want);
            check_congruent(MPI_COMM_WORLD, d[i], "idup of world");
        }
        MPI_Comm all[NDUP + 3] = {MPI_COMM_WORLD, other, made[0]};
        for (int i = 0; i < NDUP; i++)
            all[3 + i] = d[i];
        int ids[NDUP + 3];
        for (int i = 0; i < NDUP + 3; i++)
            ids[i] = i;
        check_isolated(all, ids, NDUP + 3, "idups and blocking dups");
        for (int i = 0; i < NDUP; i++)
            MPI_Comm_free(&d[i]);
        MPI_Comm_free(&made[0]);
        MPI_Comm_free(&made[1]);
        MPI_Comm_free(&other);
    }

    /* 4a: idup_with_info, the info freed before completion */
    {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        MPI_Comm d;
        MPI_Request r;
        CHECK_RC(MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &d, &r), "idup_with_info");
        MPI_Info_free(&info);
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait on idup_with_info");
        check_congruent(MPI_COMM_WORLD, d, "idup_with_info");
        MPI_Comm_free(&d);
    }

    /* 4b: the idup of an intercommunicator between the two halves */
    if (size > 1) {
        int half = size / 2, low = rank < half;
        MPI_Comm local, inter, d;
        MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? half : 0, 5, &inter);
        MPI_Request r;
        MPI_Comm_idup(inter, &d, &r);
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait on an intercommunicator idup");
        int flag = 0, rsize = 0, res = -1;
        MPI_Comm_test_inter(d, &flag);
        MPI_Comm_remote_size(d, &rsize);
        MPI_Comm_compare(inter, d, &res);
        CHECK(flag && rsize == (low ? size - half : half) && res == MPI_CONGRUENT,
              "intercommunicator idup: inter %d remote size %d compare %d", flag, rsize, res);
        int lr, mine, got = -1;
        MPI_Comm_rank(d, &lr);
        mine = 100 * low + lr;
        /* local rank 0 of each group swaps a value with the other group's rank 0 */
        if (lr == 0)
            MPI_Sendrecv(&mine, 1, MPI_INT, 0, 9, &got, 1, MPI_INT, 0, 9, d, MPI_STATUS_IGNORE);
        if (lr == 0)
            CHECK(got == 100 * !low, "intercommunicator idup: got %d, want %d", got, 100 * !low);
        MPI_Comm_free(&d);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }

    /* 5: even ranks create_group then idup, odd ranks the other way round */
    {
        MPI_Group wg;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Comm g, d;
        MPI_Request r;
        if (rank % 2 == 0) {
            MPI_Comm_create_group(MPI_COMM_WORLD, wg, 3, &g);
            MPI_Comm_idup(MPI_COMM_WORLD, &d, &r);
        } else {
            MPI_Comm_idup(MPI_COMM_WORLD, &d, &r);
            MPI_Comm_create_group(MPI_COMM_WORLD, wg, 3, &g);
        }
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait on the idup beside create_group");
        check_congruent(MPI_COMM_WORLD, d, "idup beside create_group");
        check_congruent(MPI_COMM_WORLD, g, "create_group beside an idup");
        MPI_Comm all[2] = {d, g};
        int ids[2] = {0, 1};
        check_isolated(all, ids, 2, "idup and create_group");
        MPI_Comm_free(&d);
        MPI_Comm_free(&g);
        MPI_Group_free(&wg);
    }

    int rc = check_finish("comm_idup");
    MPI_Finalize();
    return rc;
}
