/*
 * topo_neighbor: virtual topologies and the neighborhood collectives.
 *  - MPI_Dims_create: the most balanced factorizations (least max - min, then largest
 *    smallest dimension: MPICH's answers), fixed dimensions honoured, errors for fixed
 *    dimensions that do not divide nnodes and for negative ones.
 *  - 2-D periodic Cartesian grid over all ranks: Cart_get/coords/rank round trip,
 *    Cart_shift in both dimensions (wrap-around), Cart_sub into rows and columns with an
 *    Allreduce on each, Topo_test, the topology surviving Comm_dup; Neighbor_allgather
 *    and Neighbor_alltoall (neighbor order: dimension 0 -1, +1, dimension 1 -1, +1).
 *  - 1-D non-periodic grid: the ends have MPI_PROC_NULL neighbors, whose receive blocks
 *    stay untouched.
 *  - Graph: a ring with symmetric chords; Graph_neighbors(_count), Neighbor_allgatherv.
 *  - Distributed graph, adjacent form (each rank: in from r-1 and r+2, out to r+1 and
 *    r-2) and general form (rank 0 names every edge, weighted): Dist_graph_neighbors and
 *    _count, Neighbor_alltoallv and Neighbor_alltoallw, and Ineighbor_allgather.
 * Neighbors are computed here from the definitions, independently of the library.
 */
#include "check.h"
#include <string.h>

static int rank, size;

static void dims(void)
{
    int d[3] = {0, 0, 0};
    MPI_Dims_create(12, 3, d);
    CHECK(d[0] == 3 && d[1] == 2 && d[2] == 2, "Dims_create(12,3) = %d %d %d", d[0], d[1], d[2]);
    int e[2] = {0, 0};
    MPI_Dims_create(6, 2, e);
    CHECK(e[0] == 3 && e[1] == 2, "Dims_create(6,2) = %d %d", e[0], e[1]);
    int f[3] = {0, 3, 0};
    MPI_Dims_create(24, 3, f);
    CHECK(f[1] == 3 && f[0] * f[2] == 8 && f[0] >= f[2] && f[0] <= 4, "Dims_create fixed: %d %d %d",
          f[0], f[1], f[2]);
    int g[2] = {0, 0};
    MPI_Dims_create(7, 2, g);
    CHECK(g[0] == 7 && g[1] == 1, "Dims_create(7,2) = %d %d", g[0], g[1]);

    /* the most balanced factorization: least max - min, then the largest smallest
     * dimension (MPICH's topo/dims5 answers; Open MPI 4.1 alone spreads prime factors
     * and gives 12 x 6 for 72, so it is not held to them) */
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int libl;
    MPI_Get_library_version(lib, &libl);
    int balanced = strncmp(lib, "Open MPI", 8) != 0;
    static const struct { int n, nd, want[4]; } bal[] = {
        {72, 2, {9, 8}},          {180, 2, {15, 12}},       {1000000, 2, {1000, 1000}},
        {5040, 3, {21, 16, 15}},  {10800, 3, {27, 20, 20}}, {1, 3, {1, 1, 1}},
        {210, 4, {7, 5, 3, 2}},   {4096, 4, {8, 8, 8, 8}},  {2147483646, 2, {49981, 42966}},
    };
    for (size_t t = 0; balanced && t < sizeof bal / sizeof bal[0]; t++) {
        int h[4] = {0, 0, 0, 0};
        int rc = MPI_Dims_create(bal[t].n, bal[t].nd, h);
        int ok = rc == MPI_SUCCESS;
        for (int i = 0; i < bal[t].nd; i++)
            ok = ok && h[i] == bal[t].want[i];
        CHECK(ok, "Dims_create(%d, %d) = %d %d %d %d, want %d %d %d %d", bal[t].n, bal[t].nd,
              h[0], h[1], h[2], h[3], bal[t].want[0], bal[t].want[1], bal[t].want[2],
              bal[t].want[3]);
    }
    /* fixed entries stay, the free ones are balanced among themselves */
    int k[4] = {0, 5, 0, 0};
    MPI_Dims_create(360, 4, k);
    CHECK(k[1] == 5 && (!balanced || (k[0] == 6 && k[2] == 4 && k[3] == 3)),
          "Dims_create(360, {0,5,0,0}) = %d %d %d %d", k[0], k[1], k[2], k[3]);
    /* inconsistent input */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad[2] = {5, 0}, neg[2] = {-1, 0}, cls = -1;
    MPI_Error_class(MPI_Dims_create(72, 2, bad), &cls);
    CHECK(cls == MPI_ERR_DIMS, "Dims_create(72, {5,0}): class %d", cls);
    MPI_Error_class(MPI_Dims_create(72, 2, neg), &cls);
    CHECK(cls != MPI_SUCCESS, "Dims_create(72, {-1,0}) succeeded");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void cart2d(void)
{
    int d[2] = {0, 0}, per[2] = {1, 1};
    MPI_Dims_create(size, 2, d);
    MPI_Comm cart, dup;
    MPI_Cart_create(MPI_COMM_WORLD, 2, d, per, 0, &cart);
    int st;
    MPI_Topo_test(cart, &st);
    CHECK(st == MPI_CART, "Topo_test %d", st);
    MPI_Topo_test(MPI_COMM_WORLD, &st);
    CHECK(st == MPI_UNDEFINED, "Topo_test of world %d", st);
    int r, co[2], gd[2], gp[2], gc[2];
    MPI_Comm_rank(cart, &r);
    MPI_Cart_coords(cart, r, 2, co);
    CHECK(co[0] == r / d[1] && co[1] == r % d[1], "coords of %d: %d %d", r, co[0], co[1]);
    MPI_Cart_get(cart, 2, gd, gp, gc);
    CHECK(gd[0] == d[0] && gd[1] == d[1] && gp[0] && gp[1] && gc[0] == co[0] && gc[1] == co[1],
          "Cart_get");
    int back;
    MPI_Cart_rank(cart, co, &back);
    CHECK(back == r, "Cart_rank(coords) %d", back);
    int wrap[2] = {co[0] + d[0], co[1] - d[1]};
    MPI_Cart_rank(cart, wrap, &back);
    CHECK(back == r, "Cart_rank wraps periodic coordinates: %d", back);
    int nb[4];
    for (int k = 0; k < 2; k++) {
        int s, t;
        MPI_Cart_shift(cart, k, 1, &s, &t);
        int cs[2] = {co[0], co[1]}, ct[2] = {co[0], co[1]};
        cs[k] = (cs[k] - 1 + d[k]) % d[k];
        ct[k] = (ct[k] + 1) % d[k];
        CHECK(s == cs[0] * d[1] + cs[1] && t == ct[0] * d[1] + ct[1], "Cart_shift dim %d: %d %d", k,
              s, t);
        nb[2 * k] = s;
        nb[2 * k + 1] = t;
    }
    /* neighbor allgather: from each neighbor its rank */
    int got[4] = {-1, -1, -1, -1};
    MPI_Neighbor_allgather(&r, 1, MPI_INT, got, 1, MPI_INT, cart);
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == nb[i], "Neighbor_allgather [%d] = %d, expected %d", i, got[i], nb[i]);
    /* neighbor alltoall: block i goes to neighbor i; neighbor i sent me its block for the
     * opposite direction */
    int sb[4], rb[4];
    for (int i = 0; i < 4; i++)
        sb[i] = r * 10 + i;
    MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart);
    if (d[0] > 2 && d[1] > 2) /* no neighbor appears twice */
        for (int i = 0; i < 4; i++)
            CHECK(rb[i] == nb[i] * 10 + (i ^ 1), "Neighbor_alltoall [%d] = %d", i, rb[i]);
    /* sub-grids */
    MPI_Comm row, col;
    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    MPI_Cart_sub(cart, keep_row, &row);
    MPI_Cart_sub(cart, keep_col, &col);
    int rs, cs, rsum = -1, csum = -1;
    MPI_Comm_size(row, &rs);
    MPI_Comm_size(col, &cs);
    CHECK(rs == d[1] && cs == d[0], "sub sizes %d %d", rs, cs);
    MPI_Allreduce(&r, &rsum, 1, MPI_INT, MPI_SUM, row);
    MPI_Allreduce(&r, &csum, 1, MPI_INT, MPI_SUM, col);
    CHECK(rsum == co[0] * d[1] * d[1] + d[1] * (d[1] - 1) / 2, "row sum %d", rsum);
    CHECK(csum == d[1] * d[0] * (d[0] - 1) / 2 + d[0] * co[1], "column sum %d", csum);
    int sd;
    MPI_Cartdim_get(row, &sd);
    CHECK(sd == 1, "sub-grid dimensions %d", sd);
    MPI_Comm_dup(cart, &dup);
    MPI_Topo_test(dup, &st);
    CHECK(st == MPI_CART, "dup keeps the topology: %d", st);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Comm_free(&cart);
}

static void line(void)
{
    MPI_Comm c;
    int d = size, p = 0;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &d, &p, 0, &c);
    int got[2] = {-7, -7};
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, c);
    CHECK(got[0] == (rank > 0 ? rank - 1 : -7), "line left %d", got[0]);
    CHECK(got[1] == (rank < size - 1 ? rank + 1 : -7), "line right %d", got[1]);
    int s, t;
    MPI_Cart_shift(c, 0, 1, &s, &t);
    CHECK(s == (rank ? rank - 1 : MPI_PROC_NULL) && t == (rank < size - 1 ? rank + 1 : MPI_PROC_NULL),
          "non-periodic shift %d %d", s, t);
    MPI_Comm_free(&c);
}

static void graph(void)
{
    /* node i: i+1, i-1 (ring) and i+size/2, i-size/2 (chords) when distinct; symmetric,
     * as MPI requires of graphs used with neighborhood collectives */
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 4 * size), ne = 0;
    for (int i = 0; i < size; i++) {
        int cand[4] = {(i + 1) % size, (i - 1 + size) % size, (i + size / 2) % size,
                       (i - size / 2 + size) % size};
        for (int k = 0; k < 4; k++) {
            int dup = cand[k] == i;
            for (int j = (i ? index[i - 1] : 0); j < ne; j++)
                dup |= edges[j] == cand[k];
            if (!dup)
                edges[ne++] = cand[k];
        }
        index[i] = ne;
    }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
    int n, lo = rank ? index[rank - 1] : 0, nn = index[rank] - lo;
    MPI_Graph_neighbors_count(g, rank, &n);
    CHECK(n == nn, "Graph_neighbors_count %d", n);
    int nb[4];
    MPI_Graph_neighbors(g, rank, 4, nb);
    for (int i = 0; i < nn; i++)
        CHECK(nb[i] == edges[lo + i], "Graph_neighbors [%d]", i);
    int nodes, nedges;
    MPI_Graphdims_get(g, &nodes, &nedges);
    CHECK(nodes == size && nedges == ne, "Graphdims %d %d", nodes, nedges);
    /* allgatherv: 2 ints from each neighbor, placed with a gap */
    int mine[2] = {rank, -rank}, got[12], rc[4], dis[4];
    for (int i = 0; i < 12; i++)
        got[i] = -99;
    for (int i = 0; i < nn; i++) {
        rc[i] = 2;
        dis[i] = 3 * i;
    }
    MPI_Neighbor_allgatherv(mine, 2, MPI_INT, got, rc, dis, MPI_INT, g);
    for (int i = 0; i < nn; i++)
        CHECK(got[3 * i] == edges[lo + i] && got[3 * i + 1] == -edges[lo + i] && got[3 * i + 2] == -99,
              "Neighbor_allgatherv from %d", edges[lo + i]);
    MPI_Comm_free(&g);
    free(index);
    free(edges);
}

static void dist(void)
{
    /* adjacent: in from r-1 and r+2, out to r+1 and r-2 (consistent over all ranks) */
    int src[2] = {(rank - 1 + size) % size, (rank + 2) % size};
    int dst[2] = {(rank + 1) % size, (rank - 2 + 2 * size) % size};
    MPI_Comm a;
    /* GCC 12 reads MPI_UNWEIGHTED through Open MPI's array parameter declarations */
#if defined(__GNUC__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &a);
#if defined(__GNUC__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
    int in, out, w;
    MPI_Dist_graph_neighbors_count(a, &in, &out, &w);
    CHECK(in == 2 && out == 2 && !w, "adjacent counts %d %d %d", in, out, w);
    /* alltoallv: to dst[k] send k+1 ints of value rank*10+k */
    int sb[3] = {rank * 10, rank * 10 + 1, rank * 10 + 1}, sc[2] = {1, 2}, sd[2] = {0, 1};
    int rb[6] = {-1, -1, -1, -1, -1, -1}, rcn[2], rd[2] = {0, 3};
    /* src[0] = r-1 sent me its dst[0] block (1 int); src[1] = r+2 sent its dst[1] block (2) */
    rcn[0] = 1;
    rcn[1] = 2;
    MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rcn, rd, MPI_INT, a);
    CHECK(rb[0] == src[0] * 10, "dist alltoallv from %d: %d", src[0], rb[0]);
    CHECK(rb[3] == src[1] * 10 + 1 && rb[4] == src[1] * 10 + 1, "dist alltoallv from %d: %d %d",
          src[1], rb[3], rb[4]);
    /* alltoallw: doubles to dst[0], ints to dst[1] */
    struct {
        double d;
        int i;
    } sw = {rank + 0.5, rank * 3}, rw = {-1, -1};
    int wc[2] = {1, 1};
    MPI_Aint sdw[2] = {0, (MPI_Aint)((char *)&sw.i - (char *)&sw)};
    MPI_Aint rdw[2] = {0, (MPI_Aint)((char *)&rw.i - (char *)&rw)};
    MPI_Datatype wt[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Neighbor_alltoallw(&sw, wc, sdw, wt, &rw, wc, rdw, wt, a);
    CHECK(rw.d == src[0] + 0.5 && rw.i == src[1] * 3, "dist alltoallw %g %d", rw.d, rw.i);
    /* nonblocking allgather */
    int ig[2] = {-1, -1};
    MPI_Request rq;
    MPI_Ineighbor_allgather(&rank, 1, MPI_INT, ig, 1, MPI_INT, a, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(ig[0] == src[0] && ig[1] == src[1], "Ineighbor_allgather %d %d", ig[0], ig[1]);
    MPI_Comm_free(&a);

    /* general form: rank 0 names every edge r -> r+1 with weight r+100 */
    MPI_Comm gdist;
    int n = rank == 0 ? size : 0;
    int *s = malloc(sizeof(int) * (size + 1)), *deg = malloc(sizeof(int) * (size + 1));
    int *de = malloc(sizeof(int) * (size + 1)), *we = malloc(sizeof(int) * (size + 1));
    for (int i = 0; i < n; i++) {
        s[i] = i;
        deg[i] = 1;
        de[i] = (i + 1) % size;
        we[i] = i + 100;
    }
    MPI_Dist_graph_create(MPI_COMM_WORLD, n, s, deg, de, we, MPI_INFO_NULL, 0, &gdist);
    MPI_Dist_graph_neighbors_count(gdist, &in, &out, &w);
    CHECK(in == 1 && out == 1 && w, "general counts %d %d %d", in, out, w);
    int is, iw, os, ow;
    MPI_Dist_graph_neighbors(gdist, 1, &is, &iw, 1, &os, &ow);
    int left = (rank - 1 + size) % size;
    CHECK(is == left && iw == left + 100 && os == (rank + 1) % size && ow == rank + 100,
          "general neighbors %d(%d) %d(%d)", is, iw, os, ow);
    int g1 = -1;
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, &g1, 1, MPI_INT, gdist);
    CHECK(g1 == left, "general allgather %d", g1);
    MPI_Comm_free(&gdist);
    free(s);
    free(deg);
    free(de);
    free(we);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    dims();
    cart2d();
    line();
    graph();
    dist();
    int rc = check_finish("topo_neighbor");
    MPI_Finalize();
    return rc;
}
