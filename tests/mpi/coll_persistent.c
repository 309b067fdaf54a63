/*
 * coll_persistent: the MPI-4 persistent collectives (MPI 4.0 §6.13).
 *  - Every MPI_<x>_init: Barrier, Bcast, Reduce, Allreduce, Gather(v), Scatter(v),
 *    Allgather(v), Alltoall(v,w), Reduce_scatter(_block), Scan, Exscan, on world and on a
 *    reversed communicator; and the five neighborhood forms on a periodic ring.
 *  - Each request is started four times, with new send data each time (a copy taken at
 *    initialization would show): MPI_Start + MPI_Wait one by one; MPI_Startall +
 *    MPI_Waitall; started in reverse order on odd ranks and forward on even ones (MPI
 *    lets ranks start persistent collectives in different orders), then MPI_Testall in a
 *    loop; MPI_Startall + MPI_Waitany. Every result is checked against values computed
 *    locally.
 *  - A non-commutative user op (composition of affine maps x -> a*x+b mod P on a derived
 *    pair type) in Reduce, Allreduce, Reduce_scatter_block, Scan and Exscan: the ranks
 *    must combine in rank order, wherever they are placed.
 *  - Derived types freed right after initialization (the request keeps them): the
 *    Bcast's vector, the op's pair type, the Alltoallw and Neighbor_alltoallw types.
 *  - The request's life: a completed request stays allocated and inactive; MPI_Wait,
 *    MPI_Test and MPI_Request_get_status on an inactive one return at once with the empty
 *    status; MPI_Request_get_status alone drives a started request to completion;
 *    MPI_Cancel of a persistent collective is an error (ERRORS_RETURN); freeing an
 *    inactive request sets the handle to MPI_REQUEST_NULL. A non-null info is accepted.
 *    Requests outlive MPI_Comm_free of their communicator; under isthmus, freeing an
 *    active request (erroneous) neither crashes nor hangs.
 *  - An intercommunicator (the two halves of world): Barrier, Bcast (MPI_ROOT), Allreduce,
 *    Alltoall and Gather persistent, started in different orders in the two groups.
 * Skipped, saying so, under an MPI older than 4.0.
 */
#include "check.h"
#include <string.h>

#if MPI_VERSION >= 4

#define P 1000003LL
#define ITERS 4
#define MAXRQ 24

/* element (a, b) stands for x -> a*x + b; in = lower ranks, inout = higher ranks */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++, x += 2, y += 2) {
        long long a = (long long)x[0] * y[0] % P, b = ((long long)x[1] * y[0] + y[1]) % P;
        y[0] = (int)a;
        y[1] = (int)b;
    }
}

static void aff(int r, int k, int it, int out[2])
{
    out[0] = 2 + (r + k) % 7;
    out[1] = (r * 31 + k * 7 + it * 13 + 1) % 1000;
}

/* reference: the composition over ranks lo..hi-1 (identity when empty) */
static void fold(int lo, int hi, int k, int it, int out[2])
{
    int acc[2] = {1, 0}, e[2], one = 1;
    for (int r = lo; r < hi; r++) {
        aff(r, k, it, e);
        compose(acc, e, &one, NULL);
        acc[0] = e[0];
        acc[1] = e[1];
    }
    out[0] = acc[0];
    out[1] = acc[1];
}

static int v(int r, int j, int it) { return it * 100000 + r * 100 + j; }

static void start_all(int it, int rank, int n, MPI_Request *rq)
{
    if (it == 0) {
        for (int i = 0; i < n; i++) {
            CHECK_RC(MPI_Start(&rq[i]), "MPI_Start");
            CHECK_RC(MPI_Wait(&rq[i], MPI_STATUS_IGNORE), "MPI_Wait");
        }
    } else if (it == 1) {
        CHECK_RC(MPI_Startall(n, rq), "MPI_Startall");
        CHECK_RC(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE), "MPI_Waitall");
    } else if (it == 2) {
        for (int i = 0; i < n; i++)
            CHECK_RC(MPI_Start(&rq[rank % 2 ? n - 1 - i : i]), "MPI_Start (reordered)");
        int flag = 0;
        while (!flag)
            CHECK_RC(MPI_Testall(n, rq, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    } else {
        CHECK_RC(MPI_Startall(n, rq), "MPI_Startall");
        for (int k = 0; k < n; k++) {
            int idx = -1;
            CHECK_RC(MPI_Waitany(n, rq, &idx, MPI_STATUS_IGNORE), "MPI_Waitany");
            CHECK(idx != MPI_UNDEFINED, "Waitany found no active request after %d", k);
        }
        int idx = 0;
        MPI_Waitany(n, rq, &idx, MPI_STATUS_IGNORE);
        CHECK(idx == MPI_UNDEFINED, "Waitany on inactive requests gave index %d", idx);
    }
    for (int i = 0; i < n; i++)
        CHECK(rq[i] != MPI_REQUEST_NULL, "request %d was freed by its completion", i);
}

static void intra(MPI_Comm comm, const char *cn, MPI_Info info)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t S = (size_t)size;
    MPI_Request rq[MAXRQ];
    int n = 0;
    int bc[4], sbuf[3], ar[3], g[2], *gat = malloc(sizeof(int) * 2 * S);
    int *cnt = malloc(sizeof(int) * S), *dsp = malloc(sizeof(int) * S), gvs[3];
    int *gv = malloc(sizeof(int) * 3 * S), *sc = malloc(sizeof(int) * S), scr, scvr;
    int *scv = malloc(sizeof(int) * 3 * S), *ag = malloc(sizeof(int) * 2 * S);
    int *agv = malloc(sizeof(int) * 3 * S), *a2s = malloc(sizeof(int) * S);
    int *a2r = malloc(sizeof(int) * S), *avs = malloc(sizeof(int) * S), *avr = malloc(sizeof(int) * S);
    int *aws = malloc(sizeof(int) * S), *awr = malloc(sizeof(int) * S);
    int *ones = malloc(sizeof(int) * S), *iota = malloc(sizeof(int) * S);
    int *bytes = malloc(sizeof(int) * S), *rsc = malloc(sizeof(int) * S);
    int *rss = malloc(sizeof(int) * 2 * S), rsr[2];
    int *rbs = malloc(sizeof(int) * 2 * S), rbr[2], red[2], redin[2], all[2], scan[2], exs[2];
    MPI_Datatype *wt = malloc(sizeof(MPI_Datatype) * S);
    MPI_Datatype vec, pair, int1;
    MPI_Op op;
    int total = 0, rtotal = 0;
    for (int r = 0; r < size; r++) {
        cnt[r] = r % 3 + 1;
        dsp[r] = total;
        total += cnt[r];
        ones[r] = 1;
        iota[r] = r;
        bytes[r] = r * (int)sizeof(int);
        rsc[r] = r % 2 + 1;
        rtotal += rsc[r];
    }
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_contiguous(1, MPI_INT, &int1);
    MPI_Type_commit(&int1);
    for (int r = 0; r < size; r++)
        wt[r] = int1;
    MPI_Op_create(compose, 0, &op);
    int broot = size - 1, groot = size / 2, sroot = size - 1;
    MPI_Barrier_init(comm, info, &rq[n++]);
    MPI_Bcast_init(bc, 1, vec, broot, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Reduce_init(redin, red, 1, pair, op, 0, comm, info, &rq[n++]);
    MPI_Allreduce_init(sbuf, ar, 3, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Allreduce_init(redin, all, 1, pair, op, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Gather_init(g, 2, MPI_INT, gat, 2, MPI_INT, groot, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Gatherv_init(gvs, cnt[rank], MPI_INT, gv, cnt, dsp, MPI_INT, 0, comm, MPI_INFO_NULL,
                     &rq[n++]);
    MPI_Scatter_init(sc, 1, MPI_INT, &scr, 1, MPI_INT, sroot, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Scatterv_init(scv, ones, dsp, MPI_INT, &scvr, 1, MPI_INT, 0, comm, MPI_INFO_NULL,
                      &rq[n++]);
    MPI_Allgather_init(g, 2, MPI_INT, ag, 2, MPI_INT, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Allgatherv_init(gvs, cnt[rank], MPI_INT, agv, cnt, dsp, MPI_INT, comm, MPI_INFO_NULL,
                        &rq[n++]);
    MPI_Alltoall_init(a2s, 1, MPI_INT, a2r, 1, MPI_INT, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Alltoallv_init(avs, ones, iota, MPI_INT, avr, ones, iota, MPI_INT, comm, MPI_INFO_NULL,
                       &rq[n++]);
    MPI_Alltoallw_init(aws, ones, bytes, wt, awr, ones, bytes, wt, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Reduce_scatter_init(rss, rsr, rsc, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Reduce_scatter_block_init(rbs, rbr, 1, pair, op, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Scan_init(redin, scan, 1, pair, op, comm, MPI_INFO_NULL, &rq[n++]);
    MPI_Exscan_init(redin, exs, 1, pair, op, comm, MPI_INFO_NULL, &rq[n++]);
    /* the requests keep their types (MPI 4.0 §6.13 with §5.1.10 "pending operations") */
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    MPI_Type_free(&int1);
    for (int it = 0; it < ITERS; it++) {
        bc[0] = bc[2] = rank == broot ? v(broot, 0, it) : -1;
        bc[1] = bc[3] = -7; /* holes of the vector: untouched */
        aff(rank, 0, it, redin);
        red[0] = red[1] = all[0] = all[1] = scan[0] = scan[1] = -1;
        exs[0] = exs[1] = -1;
        for (int j = 0; j < 3; j++) {
            sbuf[j] = v(rank, j, it);
            ar[j] = -1;
            gvs[j] = v(rank, j, it);
        }
        g[0] = v(rank, 0, it);
        g[1] = v(rank, 1, it);
        scr = scvr = rsr[0] = rsr[1] = rbr[0] = rbr[1] = -1;
        for (int r = 0; r < size; r++) {
            gat[2 * r] = gat[2 * r + 1] = ag[2 * r] = ag[2 * r + 1] = -1;
            sc[r] = v(sroot, r, it);
            a2s[r] = avs[r] = aws[r] = v(rank, r, it);
            a2r[r] = avr[r] = awr[r] = -1;
            aff(rank, r, it, &rbs[2 * r]);
        }
        for (int j = 0; j < 3 * size; j++)
            gv[j] = agv[j] = -1;
        for (int j = 0; j < total; j++)
            scv[j] = v(0, j, it);
        for (int j = 0; j < rtotal; j++)
            rss[j] = v(rank, j, it);
        start_all(it, rank, n, rq);
        int want[2];
        CHECK(bc[0] == v(broot, 0, it) && bc[2] == bc[0] && bc[1] == -7 && bc[3] == -7,
              "%s it %d Bcast_init (vector) %d %d %d %d", cn, it, bc[0], bc[1], bc[2], bc[3]);
        fold(0, size, 0, it, want);
        if (rank == 0)
            CHECK(red[0] == want[0] && red[1] == want[1], "%s it %d Reduce_init (non-commutative) "
                  "(%d,%d) want (%d,%d)", cn, it, red[0], red[1], want[0], want[1]);
        CHECK(all[0] == want[0] && all[1] == want[1], "%s it %d Allreduce_init (non-commutative) "
              "(%d,%d) want (%d,%d)", cn, it, all[0], all[1], want[0], want[1]);
        for (int j = 0; j < 3; j++) {
            long long s = 0;
            for (int r = 0; r < size; r++)
                s += v(r, j, it);
            CHECK(ar[j] == s, "%s it %d Allreduce_init[%d] %d want %lld", cn, it, j, ar[j], s);
        }
        for (int r = 0; r < size; r++) {
            if (rank == groot)
                CHECK(gat[2 * r] == v(r, 0, it) && gat[2 * r + 1] == v(r, 1, it),
                      "%s it %d Gather_init from %d: %d", cn, it, r, gat[2 * r]);
            CHECK(ag[2 * r] == v(r, 0, it) && ag[2 * r + 1] == v(r, 1, it),
                  "%s it %d Allgather_init from %d: %d", cn, it, r, ag[2 * r]);
            for (int j = 0; j < cnt[r]; j++) {
                if (rank == 0)
                    CHECK(gv[dsp[r] + j] == v(r, j, it), "%s it %d Gatherv_init from %d[%d]: %d",
                          cn, it, r, j, gv[dsp[r] + j]);
                CHECK(agv[dsp[r] + j] == v(r, j, it), "%s it %d Allgatherv_init from %d[%d]: %d",
                      cn, it, r, j, agv[dsp[r] + j]);
            }
            CHECK(a2r[r] == v(r, rank, it), "%s it %d Alltoall_init from %d: %d", cn, it, r, a2r[r]);
            CHECK(avr[r] == v(r, rank, it), "%s it %d Alltoallv_init from %d: %d", cn, it, r,
                  avr[r]);
            CHECK(awr[r] == v(r, rank, it), "%s it %d Alltoallw_init from %d: %d", cn, it, r,
                  awr[r]);
        }
        CHECK(scr == v(sroot, rank, it), "%s it %d Scatter_init %d", cn, it, scr);
        CHECK(scvr == v(0, dsp[rank], it), "%s it %d Scatterv_init %d", cn, it, scvr);
        for (int j = 0; j < rsc[rank]; j++) {
            int at = 0;
            for (int r = 0; r < rank; r++)
                at += rsc[r];
            long long s = 0;
            for (int r = 0; r < size; r++)
                s += v(r, at + j, it);
            CHECK(rsr[j] == s, "%s it %d Reduce_scatter_init[%d] %d want %lld", cn, it, j, rsr[j], s);
        }
        fold(0, size, rank, it, want);
        CHECK(rbr[0] == want[0] && rbr[1] == want[1], "%s it %d Reduce_scatter_block_init "
              "(non-commutative) (%d,%d) want (%d,%d)", cn, it, rbr[0], rbr[1], want[0], want[1]);
        fold(0, rank + 1, 0, it, want);
        CHECK(scan[0] == want[0] && scan[1] == want[1], "%s it %d Scan_init (non-commutative) "
              "(%d,%d) want (%d,%d)", cn, it, scan[0], scan[1], want[0], want[1]);
        fold(0, rank, 0, it, want);
        if (rank > 0)
            CHECK(exs[0] == want[0] && exs[1] == want[1], "%s it %d Exscan_init "
                  "(non-commutative) (%d,%d) want (%d,%d)", cn, it, exs[0], exs[1], want[0], want[1]);
    }
    for (int i = 0; i < n; i++) {
        CHECK_RC(MPI_Request_free(&rq[i]), "MPI_Request_free");
        CHECK(rq[i] == MPI_REQUEST_NULL, "%s: freed request %d is not MPI_REQUEST_NULL", cn, i);
    }
    MPI_Op_free(&op);
    free(gat), free(cnt), free(dsp), free(gv), free(sc), free(scv), free(ag), free(agv);
    free(a2s), free(a2r), free(avs), free(avr), free(aws), free(awr), free(ones), free(iota);
    free(bytes), free(rsc), free(rss), free(rbs), free(wt);
}

/* An inactive request's calls, and a start driven to completion by get_status alone. */
static void lifecycle(void)
{
    int rank, size, x, flag = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Request r;
    MPI_Status st;
    MPI_Bcast_init(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    st.MPI_SOURCE = st.MPI_TAG = 77;
    CHECK_RC(MPI_Wait(&r, &st), "MPI_Wait (inactive)");
    CHECK(r != MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
          "Wait on an inactive request: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    CHECK_RC(MPI_Test(&r, &flag, &st), "MPI_Test (inactive)");
    CHECK(flag && r != MPI_REQUEST_NULL, "Test on an inactive request: flag %d", flag);
    flag = 0;
    CHECK_RC(MPI_Request_get_status(r, &flag, &st), "MPI_Request_get_status (inactive)");
    CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE, "get_status on an inactive request: flag %d",
          flag);
    for (int k = 0; k < 3; k++) {
        x = rank == 0 ? 40 + k : -1;
        CHECK_RC(MPI_Start(&r), "MPI_Start");
        flag = 0;
        while (!flag)
            CHECK_RC(MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE), "get_status (active)");
        CHECK(x == 40 + k, "Bcast_init completed by get_status: %d, want %d", x, 40 + k);
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait after get_status");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Cancel(&r);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK(rc != MPI_SUCCESS, "MPI_Cancel of a persistent collective request succeeded");
    CHECK_RC(MPI_Request_free(&r), "MPI_Request_free (inactive)");
    CHECK(r == MPI_REQUEST_NULL, "freed request is not MPI_REQUEST_NULL");
}

/* The program's communicator freed while its persistent requests live (they keep it);
 * and, under isthmus only (MPI makes it erroneous, a vendor may do anything), a request
 * freed while active: no crash, no hang, and the next collective works. */
static void after_free(void)
{
    int rank, size, y = 0, z = 0;
    /* the freed request's buffers: it may still run after we return */
    static int me, x;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Request act, keep;
    me = rank;
    MPI_Allreduce_init(&me, &x, 1, MPI_INT, MPI_SUM, dup, MPI_INFO_NULL, &act);
    MPI_Bcast_init(&y, 1, MPI_INT, 0, dup, MPI_INFO_NULL, &keep);
    MPI_Comm_free(&dup);
    for (int k = 0; k < 2; k++) {
        y = rank == 0 ? 50 + k : -1;
        MPI_Start(&keep);
        MPI_Wait(&keep, MPI_STATUS_IGNORE);
        CHECK(y == 50 + k, "Bcast_init after MPI_Comm_free: %d, want %d", y, 50 + k);
    }
    MPI_Request_free(&keep);
    if (strstr(lib, "isthmus")) {
        MPI_Start(&act);
        MPI_Request_free(&act);
        CHECK(act == MPI_REQUEST_NULL, "freeing an active request left the handle set");
    } else {
        MPI_Start(&act);
        MPI_Wait(&act, MPI_STATUS_IGNORE);
        MPI_Request_free(&act);
    }
    MPI_Allreduce(&rank, &z, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(z == size * (size - 1) / 2, "Allreduce after freeing an active request: %d", z);
}

static void neighbors(void)
{
    int rank, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size < 3) { /* with one or two ranks both ring neighbors are one rank */
        if (rank == 0)
            printf("coll_persistent: neighborhood part skipped (needs 3 ranks)\n");
        return;
    }
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Comm_rank(ring, &rank);
    int lo = (rank - 1 + size) % size, hi = (rank + 1) % size;
    int s1, r2[2], cnts[2] = {1, 1}, dv[2] = {0, 1}, s2[2], ra[2], rv[2], rw[2];
    MPI_Aint bd[2] = {0, sizeof(int)};
    MPI_Datatype int1, ty[2];
    MPI_Type_contiguous(1, MPI_INT, &int1);
    MPI_Type_commit(&int1);
    ty[0] = ty[1] = int1;
    int ag2[2];
    MPI_Request rq[5];
    MPI_Neighbor_allgather_init(&s1, 1, MPI_INT, r2, 1, MPI_INT, ring, MPI_INFO_NULL, &rq[0]);
    MPI_Neighbor_allgatherv_init(&s1, 1, MPI_INT, ag2, cnts, dv, MPI_INT, ring, MPI_INFO_NULL,
                                 &rq[1]);
    MPI_Neighbor_alltoall_init(s2, 1, MPI_INT, ra, 1, MPI_INT, ring, MPI_INFO_NULL, &rq[2]);
    MPI_Neighbor_alltoallv_init(s2, cnts, dv, MPI_INT, rv, cnts, dv, MPI_INT, ring, MPI_INFO_NULL,
                                &rq[3]);
    MPI_Neighbor_alltoallw_init(s2, cnts, bd, ty, rw, cnts, bd, ty, ring, MPI_INFO_NULL, &rq[4]);
    MPI_Type_free(&int1);
    for (int it = 0; it < ITERS; it++) {
        s1 = v(rank, 0, it);
        s2[0] = v(rank, 1, it); /* to the -1 neighbor */
        s2[1] = v(rank, 2, it); /* to the +1 neighbor */
        for (int j = 0; j < 2; j++)
            r2[j] = ag2[j] = ra[j] = rv[j] = rw[j] = -1;
        start_all(it, rank, 5, rq);
        CHECK(r2[0] == v(lo, 0, it) && r2[1] == v(hi, 0, it), "it %d Neighbor_allgather_init %d %d",
              it, r2[0], r2[1]);
        CHECK(ag2[0] == v(lo, 0, it) && ag2[1] == v(hi, 0, it),
              "it %d Neighbor_allgatherv_init %d %d", it, ag2[0], ag2[1]);
        /* from the -1 neighbor what it sent to its +1 neighbor, and vice versa */
        int w0 = v(lo, 2, it), w1 = v(hi, 1, it);
        CHECK(ra[0] == w0 && ra[1] == w1, "it %d Neighbor_alltoall_init %d %d want %d %d", it,
              ra[0], ra[1], w0, w1);
        CHECK(rv[0] == w0 && rv[1] == w1, "it %d Neighbor_alltoallv_init %d %d", it, rv[0], rv[1]);
        CHECK(rw[0] == w0 && rw[1] == w1, "it %d Neighbor_alltoallw_init %d %d", it, rw[0], rw[1]);
    }
    for (int i = 0; i < 5; i++)
        MPI_Request_free(&rq[i]);
    MPI_Comm_free(&ring);
}

static void inter(void)
{
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2)
        return;
    int half = wsize / 2, low = wrank < half;
    MPI_Comm local, ic;
    MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? half : 0, 17, &ic);
    int rank, rsize;
    MPI_Comm_rank(ic, &rank);
    MPI_Comm_remote_size(ic, &rsize);
    int rbase = low ? half : 0; /* world rank of remote rank 0 */
    int b, one, sum, *a2s = malloc(sizeof(int) * (size_t)rsize);
    int *a2r = malloc(sizeof(int) * (size_t)rsize), *gat = malloc(sizeof(int) * (size_t)rsize);
    MPI_Request rq[5];
    int n = 0;
    MPI_Barrier_init(ic, MPI_INFO_NULL, &rq[n++]);
    /* low group's rank 0 broadcasts to the high group; high group's rank 0 gathers */
    int broot = low ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int groot = low ? 0 : (rank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    MPI_Bcast_init(&b, 1, MPI_INT, broot, ic, MPI_INFO_NULL, &rq[n++]);
    MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &rq[n++]);
    MPI_Alltoall_init(a2s, 1, MPI_INT, a2r, 1, MPI_INT, ic, MPI_INFO_NULL, &rq[n++]);
    MPI_Gather_init(&one, 1, MPI_INT, gat, 1, MPI_INT, groot, ic, MPI_INFO_NULL, &rq[n++]);
    for (int it = 0; it < ITERS; it++) {
        b = low && rank == 0 ? v(wrank, 9, it) : -1;
        one = v(wrank, 0, it);
        sum = -1;
        for (int j = 0; j < rsize; j++) {
            a2s[j] = v(wrank, j, it);
            a2r[j] = gat[j] = -1;
        }
        /* the two groups start in opposite orders */
        start_all(it, low ? 0 : 1, n, rq);
        long long s = 0;
        for (int j = 0; j < rsize; j++) {
            s += v(rbase + j, 0, it);
            CHECK(a2r[j] == v(rbase + j, rank, it), "inter it %d Alltoall_init from %d: %d", it, j,
                  a2r[j]);
            if (!low && rank == 0)
                CHECK(gat[j] == v(rbase + j, 0, it), "inter it %d Gather_init from %d: %d", it, j,
                      gat[j]);
        }
        CHECK(sum == s, "inter it %d Allreduce_init %d want %lld", it, sum, s);
        if (!low)
            CHECK(b == v(0, 9, it), "inter it %d Bcast_init %d", it, b);
    }
    for (int i = 0; i < n; i++)
        MPI_Request_free(&rq[i]);
    free(a2s), free(a2r), free(gat);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "isthmus_test_hint", "ignored");
    intra(MPI_COMM_WORLD, "world", info);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    intra(rev, "reversed", MPI_INFO_NULL);
    MPI_Comm_free(&rev);
    MPI_Info_free(&info);
    lifecycle();
    after_free();
    neighbors();
    inter();
    int rc = check_finish("coll_persistent");
    MPI_Finalize();
    return rc;
}

#else

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("coll_persistent: skipped: the library implements MPI %d.%d, persistent "
               "collectives are MPI 4.0\n", MPI_VERSION, MPI_SUBVERSION);
    int rc = check_finish("coll_persistent");
    MPI_Finalize();
    return rc;
}

#endif
