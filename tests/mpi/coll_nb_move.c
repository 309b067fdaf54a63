/*
 * coll_nb_move: the nonblocking collectives that only move data, with their v- and
 * w-forms, all outstanding at once on one communicator and completed by one MPI_Waitall
 * in an order of each rank's own (a rotation by rank):
 *  - MPI_Igatherv with counts of 0-2 per rank, displacements in reverse rank order with
 *    gaps, sent as one strided vector on odd ranks (another layout of the same signature);
 *    MPI_Igatherv in place at the root; MPI_Igather received into a strided type;
 *  - MPI_Iscatterv with counts of 0-2, reverse displacements, received into a strided
 *    vector on odd ranks; MPI_Iscatter in place at the root;
 *  - MPI_Iallgatherv with counts of 0-2 and gaps, the send side strided on odd ranks, and
 *    one in place into a dense buffer;
 *  - MPI_Ialltoallv with counts (s + d) % 3 and reverse displacements; MPI_Ialltoall in
 *    place; MPI_Ialltoallw whose type to each peer alternates between MPI_INT and a
 *    strided vector, with byte displacements.
 *  - MPI_Ineighbor_alltoall and MPI_Ineighbor_allgather outstanding together on a periodic
 *    2-D grid (dimensions of 1 or 2 list one neighbour twice, or the rank itself), odd
 *    ranks receiving into a strided type: a block sent towards -1 arrives in the
 *    neighbour's +1 slot.
 *  - Argument "mix" (MPI >= 4): MPI_Igatherv, MPI_Iallgatherv, MPI_Ialltoallv and
 *    MPI_Ineighbor_allgather called through their large-count (_c) forms on odd ranks and
 *    their int forms on even ones, outstanding together: MPI lets ranks mix the two.
 *    Under isthmus only on communicators that span sites (on one site the int forms go to
 *    the vendor whole, docs/design.md "Large counts"), so it is asked for, not default.
 * Every element received is checked: value(s, d, e) for element e from rank s to rank d.
 * The same runs on world and on a communicator whose sites' members are not consecutive
 * ranks (ranks reordered: evens first), which takes the per-pair path of allgatherv.
 */
#include "check.h"
#include <string.h>

static int val(int s, int d, int e, int k) { return k * 100000 + s * 1000 + d * 10 + e; }

/* count strided ints (stride 2): the same signature as count MPI_INTs */
static MPI_Datatype strided(int count)
{
    MPI_Datatype t;
    MPI_Type_vector(count, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

static void moves(MPI_Comm comm, const char *name, int k)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int n = size, root = size - 1, odd = rank % 2;
    enum { GV, GVIP, G, SV, SIP, AGV, AGIP, A2AV, A2AIP, A2AW, NQ };
    MPI_Request q[NQ];
    int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n);
    int tot = 0;
    for (int j = n - 1; j >= 0; j--) { /* reverse order, one int of gap before each block */
        cnt[j] = j % 3;
        dsp[j] = tot + 1;
        tot += cnt[j] + 1;
    }
    int big = tot + 4, sl = 2 * 2 + 1;

    /* gatherv: mine is cnt[rank] ints (odd ranks: strided, every other int) */
    int *gsend = malloc(sizeof(int) * sl), *grecv = malloc(sizeof(int) * big);
    for (int e = 0; e < cnt[rank]; e++)
        gsend[odd ? 2 * e : e] = val(rank, root, e, k);
    for (int i = 0; i < big; i++)
        grecv[i] = -7;
    MPI_Datatype gt = strided(cnt[rank]);
    if (odd)
        MPI_Igatherv(gsend, 1, gt, grecv, cnt, dsp, MPI_INT, root, comm, &q[GV]);
    else
        MPI_Igatherv(gsend, cnt[rank], MPI_INT, grecv, cnt, dsp, MPI_INT, root, comm, &q[GV]);
    MPI_Type_free(&gt);
    /* gatherv in place at the root 0 */
    int *gip = malloc(sizeof(int) * big), gipmine[2];
    for (int i = 0; i < big; i++)
        gip[i] = -7;
    for (int e = 0; e < cnt[rank]; e++)
        (rank == 0 ? gip + dsp[0] : gipmine)[e] = val(rank, 0, e, k + 1);
    MPI_Igatherv(rank == 0 ? MPI_IN_PLACE : gipmine, cnt[rank], MPI_INT, gip, cnt, dsp, MPI_INT,
                 0, comm, &q[GVIP]);
    /* gather of 2 ints each, received strided at the root */
    int g2[2] = {val(rank, root, 0, k + 2), val(rank, root, 1, k + 2)};
    int *g2r = malloc(sizeof(int) * 4 * n);
    for (int i = 0; i < 4 * n; i++)
        g2r[i] = -7;
    MPI_Datatype pair = strided(2), pair_r; /* a strided pair, 4 ints of extent */
    MPI_Type_create_resized(pair, 0, 4 * sizeof(int), &pair_r);
    MPI_Type_commit(&pair_r);
    MPI_Igather(g2, 2, MPI_INT, g2r, 1, pair_r, root, comm, &q[G]);
    MPI_Type_free(&pair_r);
    MPI_Type_free(&pair);

    /* scatterv from root: block for d at dsp[d]; odd ranks receive strided */
    int *ssend = malloc(sizeof(int) * big), srecv[5] = {-7, -7, -7, -7, -7};
    for (int d = 0; d < n; d++)
        for (int e = 0; e < cnt[d]; e++)
            ssend[dsp[d] + e] = rank == root ? val(root, d, e, k + 3) : -1;
    MPI_Datatype st = strided(cnt[rank]);
    if (odd)
        MPI_Iscatterv(ssend, cnt, dsp, MPI_INT, srecv, 1, st, root, comm, &q[SV]);
    else
        MPI_Iscatterv(ssend, cnt, dsp, MPI_INT, srecv, cnt[rank], MPI_INT, root, comm, &q[SV]);
    MPI_Type_free(&st);
    /* scatter in place at root 0: 3 ints each */
    int *sip = malloc(sizeof(int) * 3 * n), siprecv[3] = {-7, -7, -7};
    for (int d = 0; d < n; d++)
        for (int e = 0; e < 3; e++)
            sip[3 * d + e] = rank == 0 ? val(0, d, e, k + 4) : -1;
    MPI_Iscatter(sip, 3, MPI_INT, rank == 0 ? MPI_IN_PLACE : siprecv, 3, MPI_INT, 0, comm,
                 &q[SIP]);

    /* allgatherv with gaps, odd ranks sending strided */
    int agsend[4], *agr = malloc(sizeof(int) * big);
    for (int e = 0; e < cnt[rank]; e++)
        agsend[odd ? 2 * e : e] = val(rank, -1, e, k + 5);
    for (int i = 0; i < big; i++)
        agr[i] = -7;
    MPI_Datatype at = strided(cnt[rank]);
    if (odd)
        MPI_Iallgatherv(agsend, 1, at, agr, cnt, dsp, MPI_INT, comm, &q[AGV]);
    else
        MPI_Iallgatherv(agsend, cnt[rank], MPI_INT, agr, cnt, dsp, MPI_INT, comm, &q[AGV]);
    MPI_Type_free(&at);
    /* allgatherv in place, dense (blocks one after the other in rank order) */
    int *dc = malloc(sizeof(int) * n), *dd = malloc(sizeof(int) * n), dt = 0;
    for (int j = 0; j < n; j++) {
        dc[j] = (j + 1) % 3;
        dd[j] = dt;
        dt += dc[j];
    }
    int *agip = malloc(sizeof(int) * (dt + 1));
    for (int i = 0; i < dt; i++)
        agip[i] = -7;
    for (int e = 0; e < dc[rank]; e++)
        agip[dd[rank] + e] = val(rank, -2, e, k + 6);
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, agip, dc, dd, MPI_INT, comm, &q[AGIP]);

    /* alltoallv: (s + d) % 3 ints from s to d, reverse displacements on both sides */
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n);
    int *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n), so = 0, ro = 0;
    for (int j = n - 1; j >= 0; j--) {
        sc[j] = (rank + j) % 3;
        rc[j] = (j + rank) % 3;
        sd[j] = so;
        rd[j] = ro + 1;
        so += sc[j];
        ro += rc[j] + 1;
    }
    int *avs = malloc(sizeof(int) * (so + 1)), *avr = malloc(sizeof(int) * (ro + 1));
    for (int j = 0; j < n; j++)
        for (int e = 0; e < sc[j]; e++)
            avs[sd[j] + e] = val(rank, j, e, k + 7);
    for (int i = 0; i < ro + 1; i++)
        avr[i] = -7;
    MPI_Ialltoallv(avs, sc, sd, MPI_INT, avr, rc, rd, MPI_INT, comm, &q[A2AV]);
    /* alltoall in place: 2 ints each */
    int *aip = malloc(sizeof(int) * 2 * n);
    for (int j = 0; j < n; j++)
        for (int e = 0; e < 2; e++)
            aip[2 * j + e] = val(rank, j, e, k + 8);
    MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, aip, 2, MPI_INT, comm, &q[A2AIP]);
    /* alltoallw: 2 ints to each peer, strided to odd peers and from odd peers, byte
     * displacements of 8 ints per peer */
    int *aws = malloc(sizeof(int) * 8 * n), *awr = malloc(sizeof(int) * 8 * n);
    int *wc = malloc(sizeof(int) * n), *wd = malloc(sizeof(int) * n);
    MPI_Datatype *wst = malloc(sizeof(MPI_Datatype) * n), *wrt = malloc(sizeof(MPI_Datatype) * n);
    MPI_Datatype two = strided(2);
    for (int j = 0; j < n; j++) {
        int sodd = j % 2, rodd = j % 2;
        wst[j] = sodd ? two : MPI_INT;
        wrt[j] = rodd ? two : MPI_INT;
        wc[j] = sodd ? 1 : 2; /* the same counts on both sides: j's parity names both */
        wd[j] = 8 * j * (int)sizeof(int);
        for (int e = 0; e < 2; e++)
            aws[8 * j + (sodd ? 2 * e : e)] = val(rank, j, e, k + 9);
        for (int i = 0; i < 8; i++)
            awr[8 * j + i] = -7;
    }
    int *wrc = malloc(sizeof(int) * n);
    for (int j = 0; j < n; j++) /* from j: strided if I am odd-received... by j's parity */
        wrc[j] = wrt[j] == two ? 1 : 2;
    MPI_Ialltoallw(aws, wc, wd, wst, awr, wrc, wd, wrt, comm, &q[A2AW]);

    /* complete in an order of this rank's own */
    MPI_Request rot[NQ];
    for (int i = 0; i < NQ; i++)
        rot[i] = q[(i + rank) % NQ];
    CHECK_RC(MPI_Waitall(NQ, rot, MPI_STATUSES_IGNORE), "MPI_Waitall");
    MPI_Type_free(&two); /* (the coroutine that runs it on one site holds no w-form types) */

    if (rank == root) {
        for (int s = 0; s < n; s++)
            for (int e = 0; e < cnt[s]; e++)
                CHECK(grecv[dsp[s] + e] == val(s, root, e, k), "%s gatherv from %d [%d]: %d",
                      name, s, e, grecv[dsp[s] + e]);
        for (int s = 0; s < n; s++)
            CHECK(grecv[dsp[s] - 1] == -7, "%s gatherv wrote the gap before %d", name, s);
        for (int s = 0; s < n; s++)
            for (int e = 0; e < 2; e++)
                CHECK(g2r[4 * s + 2 * e] == val(s, root, e, k + 2) && g2r[4 * s + 1] == -7,
                      "%s gather strided from %d [%d]: %d", name, s, e, g2r[4 * s + 2 * e]);
    }
    if (rank == 0)
        for (int s = 0; s < n; s++)
            for (int e = 0; e < cnt[s]; e++)
                CHECK(gip[dsp[s] + e] == val(s, 0, e, k + 1), "%s gatherv in place from %d: %d",
                      name, s, gip[dsp[s] + e]);
    for (int e = 0; e < cnt[rank]; e++)
        CHECK(srecv[odd ? 2 * e : e] == val(root, rank, e, k + 3), "%s scatterv [%d]: %d", name,
              e, srecv[odd ? 2 * e : e]);
    if (odd && cnt[rank] > 1)
        CHECK(srecv[1] == -7, "%s scatterv wrote between the strided ints", name);
    for (int e = 0; e < 3; e++)
        CHECK((rank == 0 ? sip[e] : siprecv[e]) == val(0, rank, e, k + 4), "%s scatter in place",
              name);
    for (int s = 0; s < n; s++) {
        for (int e = 0; e < cnt[s]; e++)
            CHECK(agr[dsp[s] + e] == val(s, -1, e, k + 5), "%s allgatherv from %d [%d]: %d", name,
                  s, e, agr[dsp[s] + e]);
        CHECK(agr[dsp[s] - 1] == -7, "%s allgatherv wrote the gap before %d", name, s);
        for (int e = 0; e < dc[s]; e++)
            CHECK(agip[dd[s] + e] == val(s, -2, e, k + 6), "%s allgatherv in place from %d: %d",
                  name, s, agip[dd[s] + e]);
    }
    for (int s = 0; s < n; s++) {
        for (int e = 0; e < rc[s]; e++)
            CHECK(avr[rd[s] + e] == val(s, rank, e, k + 7), "%s alltoallv from %d [%d]: %d", name,
                  s, e, avr[rd[s] + e]);
        CHECK(avr[rd[s] - 1] == -7, "%s alltoallv wrote the gap before %d", name, s);
        for (int e = 0; e < 2; e++)
            CHECK(aip[2 * s + e] == val(s, rank, e, k + 8), "%s alltoall in place from %d: %d",
                  name, s, aip[2 * s + e]);
        for (int e = 0; e < 2; e++) {
            int at_ = 8 * s + (s % 2 ? 2 * e : e);
            CHECK(awr[at_] == val(s, rank, e, k + 9), "%s alltoallw from %d [%d]: %d", name, s,
                  e, awr[at_]);
        }
        if (s % 2)
            CHECK(awr[8 * s + 1] == -7, "%s alltoallw wrote between strided ints", name);
    }
    free(cnt), free(dsp), free(gsend), free(grecv), free(gip), free(g2r), free(ssend), free(sip);
    free(agr), free(dc), free(dd), free(agip), free(sc), free(sd), free(rc), free(rd), free(avs);
    free(avr), free(aip), free(aws), free(awr), free(wc), free(wd), free(wst), free(wrt);
    free(wrc);
}

static void neighbours(MPI_Comm comm, int k)
{
    int rank, size, dims[2] = {0, 0}, periods[2] = {1, 1}, nb[4];
    MPI_Comm_size(comm, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(comm, 2, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    for (int d = 0; d < 2; d++) /* slots: dimension 0 -1, +1, dimension 1 -1, +1 */
        MPI_Cart_shift(cart, d, 1, &nb[2 * d], &nb[2 * d + 1]);
    int sb[8], rb[16], mine[2] = {val(rank, 99, 0, k), val(rank, 99, 1, k)}, ag[8];
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 2; e++)
            sb[2 * i + e] = val(rank, i, e, k);
    for (int i = 0; i < 16; i++)
        rb[i] = -7;
    MPI_Datatype pair, pair_r; /* 2 ints 2 apart, 4 ints of extent */
    MPI_Type_vector(2, 1, 2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 4 * sizeof(int), &pair_r);
    MPI_Type_commit(&pair_r);
    MPI_Request q[2];
    int odd = rank % 2;
    if (odd)
        MPI_Ineighbor_alltoall(sb, 2, MPI_INT, rb, 1, pair_r, cart, &q[0]);
    else
        MPI_Ineighbor_alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, cart, &q[0]);
    MPI_Ineighbor_allgather(mine, 2, MPI_INT, ag, 2, MPI_INT, cart, &q[1]);
    MPI_Type_free(&pair_r);
    MPI_Type_free(&pair);
    CHECK_RC(MPI_Waitall(2, q, MPI_STATUSES_IGNORE), "MPI_Waitall (neighbours)");
    /* Open MPI 4.1 alone pairs a neighbour listed twice in posting order, as before the
     * MPI 4.0 errata: there the other slot's block is accepted too */
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, pre_errata;
    MPI_Get_library_version(lib, &len);
    pre_errata = strncmp(lib, "Open MPI", 8) == 0;
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 2; e++) {
            int got = odd ? rb[4 * i + 2 * e] : rb[2 * i + e];
            int also = pre_errata && nb[i] == nb[i ^ 1] ? val(nb[i], i, e, k) : -1;
            CHECK(got == val(nb[i], i ^ 1, e, k) || got == also,
                  "Ineighbor_alltoall slot %d [%d] from %d: %d", i, e, nb[i], got);
            CHECK(ag[2 * i + e] == val(nb[i], 99, e, k), "Ineighbor_allgather slot %d [%d]: %d",
                  i, e, ag[2 * i + e]);
        }
    MPI_Comm_free(&cart);
}

#if MPI_VERSION >= 4
static void mixed_forms(MPI_Comm comm, int k)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int n = size, wide = rank % 2, root = 0;
    int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n), tot = 0;
    MPI_Count *ccnt = malloc(sizeof(MPI_Count) * n);
    MPI_Aint *cdsp = malloc(sizeof(MPI_Aint) * n);
    for (int j = 0; j < n; j++) {
        cnt[j] = ccnt[j] = j % 3 + 1;
        dsp[j] = cdsp[j] = tot;
        tot += cnt[j];
    }
    int mine[3], *g = malloc(sizeof(int) * tot), *ag = malloc(sizeof(int) * tot);
    int *as = malloc(sizeof(int) * 3 * n), *ar = malloc(sizeof(int) * 3 * n);
    for (int e = 0; e < cnt[rank]; e++)
        mine[e] = val(rank, -3, e, k);
    for (int j = 0; j < n; j++) /* cnt[j] ints to j, at 3 * j; from j: cnt[rank] ints */
        for (int e = 0; e < 3; e++)
            as[3 * j + e] = val(rank, j, e, k);
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n), *rcn = malloc(sizeof(int) * n);
    MPI_Count *csc = malloc(sizeof(MPI_Count) * n), *crc = malloc(sizeof(MPI_Count) * n);
    MPI_Aint *csd = malloc(sizeof(MPI_Aint) * n);
    for (int j = 0; j < n; j++) {
        sc[j] = csc[j] = cnt[j];
        sd[j] = csd[j] = 3 * j;
        rcn[j] = crc[j] = cnt[rank];
    }
    MPI_Comm ring;
    int periods = 1;
    MPI_Cart_create(comm, 1, &n, &periods, 0, &ring);
    int nb[2], two[4];
    MPI_Cart_shift(ring, 0, 1, &nb[0], &nb[1]);
    MPI_Request q[4];
    if (wide) {
        MPI_Igatherv_c(mine, cnt[rank], MPI_INT, g, ccnt, cdsp, MPI_INT, root, comm, &q[0]);
        MPI_Iallgatherv_c(mine, cnt[rank], MPI_INT, ag, ccnt, cdsp, MPI_INT, comm, &q[1]);
        MPI_Ialltoallv_c(as, csc, csd, MPI_INT, ar, crc, csd, MPI_INT, comm, &q[2]);
        MPI_Ineighbor_allgather_c(mine, 1, MPI_INT, two, 1, MPI_INT, ring, &q[3]);
    } else {
        MPI_Igatherv(mine, cnt[rank], MPI_INT, g, cnt, dsp, MPI_INT, root, comm, &q[0]);
        MPI_Iallgatherv(mine, cnt[rank], MPI_INT, ag, cnt, dsp, MPI_INT, comm, &q[1]);
        MPI_Ialltoallv(as, sc, sd, MPI_INT, ar, rcn, sd, MPI_INT, comm, &q[2]);
        MPI_Ineighbor_allgather(mine, 1, MPI_INT, two, 1, MPI_INT, ring, &q[3]);
    }
    CHECK_RC(MPI_Waitall(4, q, MPI_STATUSES_IGNORE), "MPI_Waitall (int and _c forms)");
    for (int s = 0; s < n; s++)
        for (int e = 0; e < cnt[s]; e++) {
            if (rank == root)
                CHECK(g[dsp[s] + e] == val(s, -3, e, k), "mixed Igatherv from %d [%d]", s, e);
            CHECK(ag[dsp[s] + e] == val(s, -3, e, k), "mixed Iallgatherv from %d [%d]", s, e);
        }
    for (int s = 0; s < n; s++)
        for (int e = 0; e < cnt[rank]; e++)
            CHECK(ar[3 * s + e] == val(s, rank, e, k), "mixed Ialltoallv from %d [%d]: %d", s, e,
                  ar[3 * s + e]);
    for (int i = 0; i < 2; i++)
        CHECK(two[i] == val(nb[i], -3, 0, k), "mixed Ineighbor_allgather slot %d: %d", i, two[i]);
    MPI_Comm_free(&ring);
    free(cnt), free(dsp), free(ccnt), free(cdsp), free(g), free(ag), free(as), free(ar);
    free(sc), free(sd), free(rcn), free(csc), free(crc), free(csd);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 1; k <= 3; k++)
        moves(MPI_COMM_WORLD, "world", 10 * k);
    MPI_Comm mixed; /* evens first, then odds: sites' members are not consecutive ranks */
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank % 2) * size + rank, &mixed);
    moves(mixed, "reordered", 50);
    neighbours(MPI_COMM_WORLD, 60);
    neighbours(mixed, 70);
#if MPI_VERSION >= 4
    if (argc > 1 && !strcmp(argv[1], "mix")) {
        mixed_forms(MPI_COMM_WORLD, 80);
        mixed_forms(mixed, 90);
    }
#endif
    MPI_Comm_free(&mixed);
    int rc = check_finish("coll_nb_move");
    MPI_Finalize();
    return rc;
}
