/*
 * comm_inter_split: constructors on intercommunicators (MPI 3.1 §6.4.2), and a failed dup.
 *  - Two groups by rank parity (spanning the sites of the test layouts), joined with
 *    MPI_Intercomm_create.  MPI_Comm_split on the intercommunicator with color = local
 *    rank % 2 and key = -local rank: each result is an intercommunicator whose local group
 *    is my group's members of my color in reverse rank order, and whose remote group is
 *    the other group's members of that color (same order); checked through the remote
 *    group, a point-to-point exchange and an Allreduce across.
 *  - A color present in one group only, and MPI_UNDEFINED, give MPI_COMM_NULL.
 *  - MPI_Comm_create on the intercommunicator with my local group minus its rank 0: the
 *    remote group is the other group's choice.  (In ascending order: Open MPI 4.1.4 builds
 *    the remote group of a reordered group in the old order, so ranks disagree and the
 *    point-to-point check hangs there; MPICH follows the group.)
 *  - MPI_Comm_dup whose attribute copy callback fails returns an error and MPI_COMM_NULL
 *    (as MPICH and Open MPI do).
 */
#include "check.h"

static int wrank, wsize;

/* world ranks of the remote group of ic, in its rank order */
static void remote_world(MPI_Comm ic, int *out, int n)
{
    MPI_Group rg, wg;
    int *idx = malloc(sizeof(int) * (size_t)n);
    MPI_Comm_remote_group(ic, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    MPI_Group_translate_ranks(rg, n, idx, wg, out);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    free(idx);
}

/* members of group grp (0 even, 1 odd world ranks) whose local rank passes keep(),
 * as world ranks in local-rank order, reversed if rev */
static int expected(int grp, int (*keep)(int lrank, int arg), int arg, int rev, int *out)
{
    int n = 0, gsize = (wsize + 1 - grp) / 2;
    for (int i = 0; i < gsize; i++) {
        int l = rev ? gsize - 1 - i : i;
        if (keep(l, arg))
            out[n++] = 2 * l + grp;
    }
    return n;
}

static int same_parity(int l, int color) { return l % 2 == color; }
static int not_first(int l, int unused) { (void)unused; return l != 0; }

static void check_inter(MPI_Comm nc, int grp, int (*keep)(int, int), int arg, int rev,
                        const char *what)
{
    int *want_l = malloc(sizeof(int) * (size_t)wsize), *want_r = malloc(sizeof(int) * (size_t)wsize);
    int *got = malloc(sizeof(int) * (size_t)wsize);
    int ln = expected(grp, keep, arg, rev, want_l), rn = expected(1 - grp, keep, arg, rev, want_r);
    int flag = 0, size = -1, rsize = -1, rank = -1;
    MPI_Comm_test_inter(nc, &flag);
    MPI_Comm_size(nc, &size);
    MPI_Comm_remote_size(nc, &rsize);
    MPI_Comm_rank(nc, &rank);
    CHECK(flag, "%s: not an intercommunicator", what);
    CHECK(size == ln && rsize == rn, "%s: sizes %d/%d, want %d/%d", what, size, rsize, ln, rn);
    if (size != ln || rsize != rn)
        goto out;
    CHECK(rank >= 0 && rank < ln && want_l[rank] == wrank, "%s: rank %d", what, rank);
    remote_world(nc, got, rn);
    for (int i = 0; i < rn; i++)
        CHECK(got[i] == want_r[i], "%s: remote %d is world %d, want %d", what, i, got[i],
              want_r[i]);
    /* point-to-point across: local rank i sends its world rank to remote rank i % rn */
    int sendto = rank % rn, v = -1, nfrom = 0;
    MPI_Request rq;
    MPI_Isend(&wrank, 1, MPI_INT, sendto, 5, nc, &rq);
    for (int r = 0; r < rn; r++)
        if (r % ln == rank)
            nfrom++;
    for (int k = 0; k < nfrom; k++) {
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 5, nc, &st);
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rn && v == want_r[st.MPI_SOURCE],
              "%s: got %d from remote %d", what, v, st.MPI_SOURCE);
    }
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    /* Allreduce across: each side gets the sum over the other side */
    int sum = -1, want = 0;
    for (int i = 0; i < rn; i++)
        want += want_r[i];
    MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, nc);
    CHECK(sum == want, "%s: allreduce %d, want %d", what, sum, want);
out:
    free(want_l);
    free(want_r);
    free(got);
}

static int copy_fails(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)c; (void)kv; (void)extra; (void)in; (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int grp = wrank % 2, lrank = wrank / 2;
    MPI_Comm half, ic, nc;
    MPI_Comm_split(MPI_COMM_WORLD, grp, wrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, grp ? 0 : 1, 77, &ic);

    /* split by local rank parity, reversed */
    MPI_Comm_split(ic, lrank % 2, -lrank, &nc);
    int rsize_color = 0; /* members of my color in the other group */
    for (int l = 0; l < (wsize + grp) / 2; l++)
        rsize_color += l % 2 == lrank % 2;
    if (rsize_color == 0) {
        CHECK(nc == MPI_COMM_NULL, "split: a color with no remote members gave a communicator");
    } else {
        CHECK(nc != MPI_COMM_NULL, "split: MPI_COMM_NULL");
        if (nc != MPI_COMM_NULL) {
            check_inter(nc, grp, same_parity, lrank % 2, 1, "split");
            MPI_Comm_free(&nc);
        }
    }

    /* one group alone (color 3 only in the even group) and MPI_UNDEFINED in the odd one */
    MPI_Comm_split(ic, grp == 0 ? 3 : MPI_UNDEFINED, 0, &nc);
    CHECK(nc == MPI_COMM_NULL, "split: one-sided color gave a communicator");

    /* create with my group minus its rank 0 */
    MPI_Group lg, sub;
    int lsize;
    MPI_Comm_group(ic, &lg);
    MPI_Group_size(lg, &lsize);
    int *ranks = malloc(sizeof(int) * (size_t)lsize), n = 0;
    for (int l = 1; l < lsize; l++)
        ranks[n++] = l;
    MPI_Group_incl(lg, n, ranks, &sub);
    free(ranks);
    MPI_Comm_create(ic, sub, &nc);
    int other = (wsize + grp) / 2; /* size of the other group */
    if (lrank == 0 || n == 0 || other < 2) {
        CHECK(nc == MPI_COMM_NULL, "create: a communicator for a non-member or empty side");
    } else {
        CHECK(nc != MPI_COMM_NULL, "create: MPI_COMM_NULL for a member");
        if (nc != MPI_COMM_NULL) {
            check_inter(nc, grp, not_first, 0, 0, "create");
            MPI_Comm_free(&nc);
        }
    }
    MPI_Group_free(&sub);
    MPI_Group_free(&lg);

    /* a dup whose copy callback fails */
    MPI_Comm d, d2 = MPI_COMM_WORLD;
    int kv;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    MPI_Comm_create_keyval(copy_fails, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
    MPI_Comm_set_attr(d, kv, NULL);
    int rc = MPI_Comm_dup(d, &d2);
    CHECK(rc != MPI_SUCCESS, "dup with a failing copy callback succeeded");
    CHECK(d2 == MPI_COMM_NULL, "dup with a failing copy callback: newcomm is not MPI_COMM_NULL");
    MPI_Comm_free(&d);
    MPI_Comm_free_keyval(&kv);

    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
    int bad = check_finish("comm_inter_split");
    MPI_Finalize();
    return bad;
}
