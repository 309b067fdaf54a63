/* topo.c (abi): virtual topologies (Cartesian, graph, distributed graph) and the
 * neighborhood collectives, blocking and nonblocking.
 *
 * A topology is a description cached on a communicator made by splitting the old one
 * (ranks keep their order: isthmus does not reorder, which MPI allows). Every topology
 * communicator also gets a second vendor communicator for collective point-to-point
 * (ism_comm_add_vcoll), so neighborhood exchanges never meet the program's messages.
 * The neighbor order follows MPI: Cartesian by dimension, negative direction first;
 * graph in adjacency order; distributed graph as given (sources in, destinations out).
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "../coll/coll.h"

typedef struct topo {
    int kind; /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
    int ndims, *dims, *periods;
    int nnodes, *index, *edges;              /* graph */
    int indeg, outdeg, *srcs, *dsts, *sw, *dw, weighted; /* distributed graph */
} topo;

static int *dupi(const int *v, int n)
{
    int *c = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (c && n > 0 && v)
        memcpy(c, v, sizeof(int) * (size_t)n);
    return c;
}

void ism_abi_topo_free(ism_comm *c)
{
    topo *t = c->topo;
    if (!t)
        return;
    free(t->dims);
    free(t->periods);
    free(t->index);
    free(t->edges);
    free(t->srcs);
    free(t->dsts);
    free(t->sw);
    free(t->dw);
    free(t);
    c->topo = NULL;
}

static topo *topo_copy(const topo *t)
{
    topo *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    *n = *t;
    int nedges = t->kind == MPI_GRAPH && t->nnodes ? t->index[t->nnodes - 1] : 0;
    n->dims = dupi(t->dims, t->ndims);
    n->periods = dupi(t->periods, t->ndims);
    n->index = dupi(t->index, t->nnodes);
    n->edges = dupi(t->edges, nedges);
    n->srcs = dupi(t->srcs, t->indeg);
    n->dsts = dupi(t->dsts, t->outdeg);
    n->sw = dupi(t->sw, t->indeg);
    n->dw = dupi(t->dw, t->outdeg);
    return n;
}

int ism_abi_topo_copy(ism_comm *from, ism_comm *to)
{
    if (!from->topo)
        return MPI_SUCCESS;
    to->topo = topo_copy(from->topo);
    if (!to->topo || ism_comm_add_vcoll(to))
        return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

/* The first n ranks of old, in order, as a new communicator carrying t (or NULL). */
static int make(const char *fn, ism_comm *old, int n, topo *t, MPI_Comm *out)
{
    ism_comm *c = NULL;
    int rc = ism_comm_split(old, old->rank < n ? 0 : -1, old->rank, &c);
    if (!rc && c)
        rc = ism_comm_add_vcoll(c);
    if (rc) {
        if (c)
            ism_comm_free(c);
        ism_abi_topo_free(&(ism_comm){.topo = t});
        return ism_abi_error(old, rc, fn, "creating the topology communicator failed");
    }
    if (!c) {
        ism_abi_topo_free(&(ism_comm){.topo = t});
        *out = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    c->errh = old->errh;
    c->topo = t;
    *out = (MPI_Comm)c;
    return MPI_SUCCESS;
}

static int comm_of(const char *fn, MPI_Comm h, ism_comm **c)
{
    *c = NULL;
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(h);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if ((*c)->is_inter)
        return ism_abi_error(*c, MPI_ERR_COMM, fn, "topologies need an intracommunicator");
    return MPI_SUCCESS;
}

static int topo_of(const char *fn, MPI_Comm h, int kind, ism_comm **c, topo **t)
{
    int rc = comm_of(fn, h, c);
    if (rc)
        return rc;
    *t = (*c)->topo;
    if (!*t || (kind && (*t)->kind != kind))
        return ism_abi_error(*c, MPI_ERR_TOPOLOGY, fn, "the communicator has no %s topology",
                             kind == MPI_CART    ? "Cartesian"
                             : kind == MPI_GRAPH ? "graph"
                             : kind              ? "distributed graph"
                                                 : "");
    return MPI_SUCCESS;
}

int PMPI_Topo_test(MPI_Comm comm, int *status)
{
    ISM_CHECK_INIT("MPI_Topo_test");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Topo_test", "invalid communicator");
    *status = c->topo ? ((topo *)c->topo)->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}
ISM_PMPI(Topo_test)

/* ---------------------------------------------------------------- Cartesian */

static int cart_check(const char *fn, ism_comm *c, int ndims, const int *dims, long *n)
{
    *n = 1;
    if (ndims < 0)
        return ism_abi_error(c, MPI_ERR_DIMS, fn, "ndims %d is negative", ndims);
    for (int i = 0; i < ndims; i++) {
        if (dims[i] <= 0)
            return ism_abi_error(c, MPI_ERR_DIMS, fn, "dims[%d] = %d is not positive", i,
                                 dims[i]);
        *n *= dims[i];
        if (*n > c->size)
            return ism_abi_error(c, MPI_ERR_DIMS, fn,
                                 "the grid has more points than the communicator has ranks (%d)",
                                 c->size);
    }
    return MPI_SUCCESS;
}

int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                     int reorder, MPI_Comm *comm_cart)
{
    const char *fn = "MPI_Cart_create";
    ism_comm *c;
    long n;
    (void)reorder;
    int rc = comm_of(fn, comm_old, &c);
    if (rc || (rc = cart_check(fn, c, ndims, dims, &n)))
        return rc;
    ism_nbc_drain(c);
    topo *t = calloc(1, sizeof *t);
    if (!t)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    t->kind = MPI_CART;
    t->ndims = ndims;
    t->dims = dupi(dims, ndims);
    t->periods = dupi(periods, ndims);
    for (int i = 0; i < ndims; i++)
        t->periods[i] = t->periods[i] != 0;
    return make(fn, c, (int)n, t, comm_cart);
}
ISM_PMPI(Cart_create)

int PMPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Cartdim_get", comm, MPI_CART, &c, &t);
    if (!rc)
        *ndims = t->ndims;
    return rc;
}
ISM_PMPI(Cartdim_get)

int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Cart_get", comm, MPI_CART, &c, &t);
    if (rc)
        return rc;
    int r = c->rank;
    for (int i = t->ndims - 1; i >= 0; i--) {
        if (i < maxdims) {
            dims[i] = t->dims[i];
            periods[i] = t->periods[i];
            coords[i] = r % t->dims[i];
        }
        r /= t->dims[i];
    }
    return MPI_SUCCESS;
}
ISM_PMPI(Cart_get)

static void coords_of(const topo *t, int rank, int *coords)
{
    for (int i = t->ndims - 1; i >= 0; i--) {
        coords[i] = rank % t->dims[i];
        rank /= t->dims[i];
    }
}

int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Cart_coords", comm, MPI_CART, &c, &t);
    if (rc)
        return rc;
    if (rank < 0 || rank >= c->size)
        return ism_abi_error(c, MPI_ERR_RANK, "MPI_Cart_coords", "rank %d is not in the grid",
                             rank);
    if (maxdims < t->ndims)
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Cart_coords", "maxdims %d < ndims %d",
                             maxdims, t->ndims);
    coords_of(t, rank, coords);
    return MPI_SUCCESS;
}
ISM_PMPI(Cart_coords)

/* Rank at coords (periodic dimensions wrap); MPI_PROC_NULL outside a non-periodic one. */
static int rank_at(const topo *t, const int *coords)
{
    int r = 0;
    for (int i = 0; i < t->ndims; i++) {
        int x = coords[i], d = t->dims[i];
        if (x < 0 || x >= d) {
            if (!t->periods[i])
                return MPI_PROC_NULL;
            x = ((x % d) + d) % d;
        }
        r = r * d + x;
    }
    return r;
}

int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Cart_rank", comm, MPI_CART, &c, &t);
    if (rc)
        return rc;
    int r = rank_at(t, coords);
    if (r == MPI_PROC_NULL)
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Cart_rank",
                             "coordinates outside a non-periodic dimension");
    *rank = r;
    return MPI_SUCCESS;
}
ISM_PMPI(Cart_rank)

static void shift(const topo *t, int me, int dir, int disp, int *src, int *dst)
{
    int co[64];
    coords_of(t, me, co);
    co[dir] += disp;
    *dst = rank_at(t, co);
    co[dir] -= 2 * disp;
    *src = rank_at(t, co);
}

int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Cart_shift", comm, MPI_CART, &c, &t);
    if (rc)
        return rc;
    if (direction < 0 || direction >= t->ndims)
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Cart_shift",
                             "direction %d is not a dimension (0..%d)", direction, t->ndims - 1);
    if (t->ndims > 64)
        return ism_abi_error(c, MPI_ERR_DIMS, "MPI_Cart_shift", "more than 64 dimensions");
    shift(t, c->rank, direction, disp, rank_source, rank_dest);
    return MPI_SUCCESS;
}
ISM_PMPI(Cart_shift)

int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Cart_sub", comm, MPI_CART, &c, &t);
    if (rc)
        return rc;
    ism_nbc_drain(c);
    int co[64], color = 0, key = 0, nd = 0;
    if (t->ndims > 64)
        return ism_abi_error(c, MPI_ERR_DIMS, "MPI_Cart_sub", "more than 64 dimensions");
    coords_of(t, c->rank, co);
    topo *s = calloc(1, sizeof *s);
    if (!s)
        return ism_abi_error(c, MPI_ERR_NO_MEM, "MPI_Cart_sub", "out of memory");
    s->kind = MPI_CART;
    s->dims = dupi(NULL, t->ndims);
    s->periods = dupi(NULL, t->ndims);
    for (int i = 0; i < t->ndims; i++) {
        if (remain_dims[i]) {
            key = key * t->dims[i] + co[i];
            s->dims[nd] = t->dims[i];
            s->periods[nd++] = t->periods[i];
        } else {
            color = color * t->dims[i] + co[i];
        }
    }
    s->ndims = nd;
    ism_comm *n = NULL;
    rc = ism_comm_split(c, color, key, &n);
    if (!rc)
        rc = ism_comm_add_vcoll(n);
    if (rc) {
        ism_abi_topo_free(&(ism_comm){.topo = s});
        return ism_abi_error(c, rc, "MPI_Cart_sub", "creating the sub-grid failed");
    }
    n->errh = c->errh;
    n->topo = s;
    *newcomm = (MPI_Comm)n;
    return MPI_SUCCESS;
}
ISM_PMPI(Cart_sub)

int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    ism_comm *c;
    long n;
    (void)periods;
    int rc = comm_of("MPI_Cart_map", comm, &c);
    if (rc || (rc = cart_check("MPI_Cart_map", c, ndims, dims, &n)))
        return rc;
    *newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}
ISM_PMPI(Cart_map)

/* MPI_Dims_create: the free dimensions get the most balanced factorization of nnodes /
 * (product of the fixed ones), in non-increasing order. Most balanced: the smallest
 * difference between the largest and the smallest dimension; among equals, the largest
 * smallest dimension, then the largest second smallest, and so on. This is MPICH's
 * result (Traeff and Luebbe, EuroMPI'15) on all 75,000 cases of its test suite
 * (topo/dims5); Open MPI 4.1 spreads prime factors instead (72 in 2: 12 x 6, not 9 x 8). */
typedef struct dims_search {
    int n;         /* dimensions */
    int64_t diff;  /* best max - min so far */
    int *cur, *best; /* ascending */
} dims_search;

/* Chooses cur[pos..n-1], ascending and each >= lo, with product rem. */
static void dims_try(dims_search *s, int64_t rem, int pos, int64_t lo)
{
    int k = s->n - pos;
    if (k == 1) {
        if (rem < lo)
            return;
        s->cur[pos] = (int)rem;
        /* a later find of an equal difference has a larger smallest dimension */
        if (rem - s->cur[0] <= s->diff) {
            s->diff = rem - s->cur[0];
            memcpy(s->best, s->cur, sizeof(int) * (size_t)s->n);
        }
        return;
    }
    for (int64_t v = lo;; v++) {
        int64_t p = 1;
        for (int i = 0; i < k && p <= rem; i++)
            p *= v; /* the k remaining dimensions are all >= v */
        if (p > rem)
            break;
        if (pos > 0 && v - s->cur[0] > s->diff)
            break; /* the largest dimension is at least v */
        if (rem % v)
            continue;
        s->cur[pos] = (int)v;
        dims_try(s, rem / v, pos + 1, v);
    }
}

int PMPI_Dims_create(int nnodes, int ndims, int dims[])
{
    const char *fn = "MPI_Dims_create";
    long fixed = 1;
    int nfree = 0;
    if (nnodes <= 0 || ndims < 0)
        return ism_abi_error(NULL, nnodes <= 0 ? MPI_ERR_ARG : MPI_ERR_DIMS, fn,
                             "nnodes %d, ndims %d: nnodes must be positive, ndims not negative",
                             nnodes, ndims);
    if (ndims > 0 && !dims)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "dims is NULL");
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0)
            return ism_abi_error(NULL, MPI_ERR_DIMS, fn, "dims[%d] = %d is negative", i, dims[i]);
        if (dims[i] > 0) {
            if (fixed * dims[i] > nnodes)
                return ism_abi_error(NULL, MPI_ERR_DIMS, fn,
                                     "the fixed dimensions multiply to more than %d", nnodes);
            fixed *= dims[i];
        } else {
            nfree++;
        }
    }
    if (nnodes % fixed)
        return ism_abi_error(NULL, MPI_ERR_DIMS, fn,
                             "%d nodes do not divide into the fixed dimensions (product %ld)",
                             nnodes, fixed);
    if (!nfree)
        return fixed == nnodes ? MPI_SUCCESS
                               : ism_abi_error(NULL, MPI_ERR_DIMS, fn,
                                               "the fixed dimensions do not multiply to %d",
                                               nnodes);
    int *cur = malloc(sizeof(int) * (size_t)nfree), *best = malloc(sizeof(int) * (size_t)nfree);
    if (!cur || !best) {
        free(cur);
        free(best);
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    dims_search s = {nfree, INT64_MAX, cur, best};
    dims_try(&s, nnodes / fixed, 0, 1);
    for (int i = 0, k = nfree - 1; i < ndims; i++)
        if (dims[i] == 0)
            dims[i] = best[k--]; /* non-increasing */
    free(cur);
    free(best);
    return MPI_SUCCESS;
}
ISM_PMPI(Dims_create)

/* ---------------------------------------------------------------- graph */

int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int indx[], const int edges[],
                      int reorder, MPI_Comm *comm_graph)
{
    const char *fn = "MPI_Graph_create";
    ism_comm *c;
    (void)reorder;
    int rc = comm_of(fn, comm_old, &c);
    if (rc)
        return rc;
    if (nnodes < 0 || nnodes > c->size)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "nnodes %d is outside 0..%d", nnodes, c->size);
    int ne = nnodes ? indx[nnodes - 1] : 0;
    for (int i = 0; i < nnodes; i++)
        if (indx[i] < (i ? indx[i - 1] : 0))
            return ism_abi_error(c, MPI_ERR_ARG, fn, "index is not non-decreasing at %d", i);
    for (int i = 0; i < ne; i++)
        if (edges[i] < 0 || edges[i] >= nnodes)
            return ism_abi_error(c, MPI_ERR_ARG, fn, "edge %d names node %d (of %d)", i, edges[i],
                                 nnodes);
    ism_nbc_drain(c);
    topo *t = calloc(1, sizeof *t);
    if (!t)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    t->kind = MPI_GRAPH;
    t->nnodes = nnodes;
    t->index = dupi(indx, nnodes);
    t->edges = dupi(edges, ne);
    return make(fn, c, nnodes, t, comm_graph);
}
ISM_PMPI(Graph_create)

int PMPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Graphdims_get", comm, MPI_GRAPH, &c, &t);
    if (rc)
        return rc;
    *nnodes = t->nnodes;
    *nedges = t->nnodes ? t->index[t->nnodes - 1] : 0;
    return MPI_SUCCESS;
}
ISM_PMPI(Graphdims_get)

int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int indx[], int edges[])
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Graph_get", comm, MPI_GRAPH, &c, &t);
    if (rc)
        return rc;
    int ne = t->nnodes ? t->index[t->nnodes - 1] : 0;
    for (int i = 0; i < t->nnodes && i < maxindex; i++)
        indx[i] = t->index[i];
    for (int i = 0; i < ne && i < maxedges; i++)
        edges[i] = t->edges[i];
    return MPI_SUCCESS;
}
ISM_PMPI(Graph_get)

static int graph_range(const topo *t, int rank, int *lo)
{
    *lo = rank ? t->index[rank - 1] : 0;
    return t->index[rank] - *lo;
}

int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    ism_comm *c;
    topo *t;
    int lo, rc = topo_of("MPI_Graph_neighbors_count", comm, MPI_GRAPH, &c, &t);
    if (rc)
        return rc;
    if (rank < 0 || rank >= t->nnodes)
        return ism_abi_error(c, MPI_ERR_RANK, "MPI_Graph_neighbors_count",
                             "rank %d is not a node", rank);
    *nneighbors = graph_range(t, rank, &lo);
    return MPI_SUCCESS;
}
ISM_PMPI(Graph_neighbors_count)

int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
    ism_comm *c;
    topo *t;
    int lo, rc = topo_of("MPI_Graph_neighbors", comm, MPI_GRAPH, &c, &t);
    if (rc)
        return rc;
    if (rank < 0 || rank >= t->nnodes)
        return ism_abi_error(c, MPI_ERR_RANK, "MPI_Graph_neighbors", "rank %d is not a node",
                             rank);
    int n = graph_range(t, rank, &lo);
    for (int i = 0; i < n && i < maxneighbors; i++)
        neighbors[i] = t->edges[lo + i];
    return MPI_SUCCESS;
}
ISM_PMPI(Graph_neighbors)

int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int indx[], const int edges[], int *newrank)
{
    ism_comm *c;
    (void)indx;
    (void)edges;
    int rc = comm_of("MPI_Graph_map", comm, &c);
    if (rc)
        return rc;
    if (nnodes < 0 || nnodes > c->size)
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Graph_map", "nnodes %d is outside 0..%d",
                             nnodes, c->size);
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}
ISM_PMPI(Graph_map)

/* ---------------------------------------------------------------- distributed graph */

static int weights_given(const int *w) { return w != MPI_UNWEIGHTED; }

static int dist_make(const char *fn, ism_comm *c, int indeg, const int *srcs, const int *sw,
                     int outdeg, const int *dsts, const int *dw, int weighted, MPI_Comm *out)
{
    topo *t = calloc(1, sizeof *t);
    if (!t)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    t->kind = MPI_DIST_GRAPH;
    t->indeg = indeg;
    t->outdeg = outdeg;
    t->srcs = dupi(srcs, indeg);
    t->dsts = dupi(dsts, outdeg);
    t->weighted = weighted;
    t->sw = dupi(weighted && sw != MPI_WEIGHTS_EMPTY ? sw : NULL, indeg);
    t->dw = dupi(weighted && dw != MPI_WEIGHTS_EMPTY ? dw : NULL, outdeg);
    if (!weighted || sw == MPI_WEIGHTS_EMPTY)
        for (int i = 0; i < indeg; i++)
            t->sw[i] = 1;
    if (!weighted || dw == MPI_WEIGHTS_EMPTY)
        for (int i = 0; i < outdeg; i++)
            t->dw[i] = 1;
    return make(fn, c, c->size, t, out);
}

static int ranks_ok(const char *fn, ism_comm *c, const int *v, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (v[i] < 0 || v[i] >= c->size)
            return ism_abi_error(c, MPI_ERR_RANK, fn, "%s %d is rank %d, not in the communicator",
                                 what, i, v[i]);
    return MPI_SUCCESS;
}

int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                    const int sourceweights[], int outdegree,
                                    const int destinations[], const int destweights[],
                                    MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    const char *fn = "MPI_Dist_graph_create_adjacent";
    ism_comm *c;
    (void)info;
    (void)reorder;
    int rc = comm_of(fn, comm_old, &c);
    if (rc)
        return rc;
    if (indegree < 0 || outdegree < 0)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "negative degree");
    if ((rc = ranks_ok(fn, c, sources, indegree, "source")) ||
        (rc = ranks_ok(fn, c, destinations, outdegree, "destination")))
        return rc;
    ism_nbc_drain(c);
    return dist_make(fn, c, indegree, sources, sourceweights, outdegree, destinations,
                     destweights, weights_given(sourceweights), comm_dist_graph);
}
ISM_PMPI(Dist_graph_create_adjacent)

/* Every rank may name edges of any rank: each sends every edge (u -> v, w) to both u (an
 * out-edge) and v (an in-edge) with an all-to-all, then keeps them in the order received
 * (by sender rank, then as listed), which MPI leaves to the implementation. */
int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                           const int destinations[], const int weights[], MPI_Info info,
                           int reorder, MPI_Comm *comm_dist_graph)
{
    const char *fn = "MPI_Dist_graph_create";
    ism_comm *c;
    (void)info;
    (void)reorder;
    int rc = comm_of(fn, comm_old, &c);
    if (rc)
        return rc;
    if (n < 0)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "n %d is negative", n);
    int size = c->size, ne = 0, weighted = weights_given(weights);
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return ism_abi_error(c, MPI_ERR_ARG, fn, "degree %d is negative", degrees[i]);
        ne += degrees[i];
    }
    if ((rc = ranks_ok(fn, c, sources, n, "source")) ||
        (rc = ranks_ok(fn, c, destinations, ne, "destination")))
        return rc;
    /* records of 3 ints: (kind 0 = out-edge of the receiver / 1 = in-edge, peer, weight) */
    int *scount = calloc((size_t)size, sizeof(int)), *rcount = calloc((size_t)size, sizeof(int));
    int *sdis = calloc((size_t)size, sizeof(int)), *rdis = calloc((size_t)size, sizeof(int));
    int *sbuf = malloc(sizeof(int) * 6 * (size_t)(ne + 1)), *fill = calloc((size_t)size, sizeof(int));
    int *rbuf = NULL, *in = NULL, *out = NULL, *iw = NULL, *ow = NULL;
    if (!scount || !rcount || !sdis || !rdis || !sbuf || !fill) {
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
        goto done;
    }
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, k++) {
            scount[sources[i]] += 3;
            scount[destinations[k]] += 3;
        }
    for (int r = 1; r < size; r++)
        sdis[r] = sdis[r - 1] + scount[r - 1];
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, k++) {
            int u = sources[i], v = destinations[k], w = weighted ? weights[k] : 1;
            int *p = sbuf + sdis[u] + fill[u];
            p[0] = 0, p[1] = v, p[2] = w;
            fill[u] += 3;
            p = sbuf + sdis[v] + fill[v];
            p[0] = 1, p[1] = u, p[2] = w;
            fill[v] += 3;
        }
    ism_nbc_drain(c);
    MPI_Comm h = ism_abi_comm_handle(c);
    if ((rc = PMPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, h)))
        goto done;
    int total = 0;
    for (int r = 0; r < size; r++) {
        rdis[r] = total;
        total += rcount[r];
    }
    rbuf = malloc(sizeof(int) * (size_t)(total + 1));
    if (!rbuf) {
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
        goto done;
    }
    if ((rc = PMPI_Alltoallv(sbuf, scount, sdis, MPI_INT, rbuf, rcount, rdis, MPI_INT, h)))
        goto done;
    int nin = 0, nout = 0;
    for (int i = 0; i < total; i += 3)
        rbuf[i] ? nin++ : nout++;
    in = malloc(sizeof(int) * (size_t)(nin + 1));
    out = malloc(sizeof(int) * (size_t)(nout + 1));
    iw = malloc(sizeof(int) * (size_t)(nin + 1));
    ow = malloc(sizeof(int) * (size_t)(nout + 1));
    if (!in || !out || !iw || !ow) {
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
        goto done;
    }
    nin = nout = 0;
    for (int i = 0; i < total; i += 3) {
        if (rbuf[i]) {
            in[nin] = rbuf[i + 1];
            iw[nin++] = rbuf[i + 2];
        } else {
            out[nout] = rbuf[i + 1];
            ow[nout++] = rbuf[i + 2];
        }
    }
    /* whether any rank gave weights is a property of the whole graph */
    int any = weighted, all = 0;
    if ((rc = PMPI_Allreduce(&any, &all, 1, MPI_INT, MPI_LOR, h)))
        goto done;
    rc = dist_make(fn, c, nin, in, iw, nout, out, ow, all, comm_dist_graph);
done:
    free(scount);
    free(rcount);
    free(sdis);
    free(rdis);
    free(sbuf);
    free(fill);
    free(rbuf);
    free(in);
    free(out);
    free(iw);
    free(ow);
    return rc;
}
ISM_PMPI(Dist_graph_create)

int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Dist_graph_neighbors_count", comm, MPI_DIST_GRAPH, &c, &t);
    if (rc)
        return rc;
    *indegree = t->indeg;
    *outdegree = t->outdeg;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}
ISM_PMPI(Dist_graph_neighbors_count)

int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                              int maxoutdegree, int destinations[], int destweights[])
{
    ism_comm *c;
    topo *t;
    int rc = topo_of("MPI_Dist_graph_neighbors", comm, MPI_DIST_GRAPH, &c, &t);
    if (rc)
        return rc;
    for (int i = 0; i < t->indeg && i < maxindegree; i++) {
        sources[i] = t->srcs[i];
        if (t->weighted && sourceweights != MPI_UNWEIGHTED)
            sourceweights[i] = t->sw[i];
    }
    for (int i = 0; i < t->outdeg && i < maxoutdegree; i++) {
        destinations[i] = t->dsts[i];
        if (t->weighted && destweights != MPI_UNWEIGHTED)
            destweights[i] = t->dw[i];
    }
    return MPI_SUCCESS;
}
ISM_PMPI(Dist_graph_neighbors)

/* ---------------------------------------------------------------- neighborhood collectives */

/* In- and out-neighbors of the calling rank, in MPI's order (malloc'ed). */
static int neighbors(const char *fn, MPI_Comm comm, ism_comm **c, int **in, int *nin, int **out,
                     int *nout)
{
    topo *t;
    int rc = topo_of(fn, comm, 0, c, &t);
    if (rc)
        return rc;
    *in = *out = NULL;
    if (t->kind == MPI_CART) {
        *nin = *nout = 2 * t->ndims;
        *in = malloc(sizeof(int) * (size_t)(*nin + 1));
        *out = malloc(sizeof(int) * (size_t)(*nout + 1));
        for (int d = 0; *in && *out && d < t->ndims; d++) {
            int s, r;
            shift(t, (*c)->rank, d, 1, &s, &r);
            (*in)[2 * d] = s;      /* the -1 neighbor ... */
            (*in)[2 * d + 1] = r;  /* ... then the +1 neighbor */
            (*out)[2 * d] = s;
            (*out)[2 * d + 1] = r;
        }
    } else if (t->kind == MPI_GRAPH) {
        int lo;
        *nin = *nout = graph_range(t, (*c)->rank, &lo);
        *in = dupi(t->edges + lo, *nin);
        *out = dupi(t->edges + lo, *nout);
    } else {
        *nin = t->indeg;
        *nout = t->outdeg;
        *in = dupi(t->srcs, *nin);
        *out = dupi(t->dsts, *nout);
    }
    if (!*in || !*out) {
        free(*in);
        free(*out);
        return ism_abi_error(*c, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    return MPI_SUCCESS;
}

void ism_abi_neighbor_degrees(MPI_Comm comm, int *nin, int *nout)
{
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    topo *t = c ? c->topo : NULL;
    int lo;
    *nin = *nout = 0;
    if (!t)
        return;
    if (t->kind == MPI_CART)
        *nin = *nout = 2 * t->ndims;
    else if (t->kind == MPI_GRAPH)
        *nin = *nout = graph_range(t, c->rank, &lo);
    else {
        *nin = t->indeg;
        *nout = t->outdeg;
    }
}

/* The general form: per-neighbor counts, byte displacements and types; counts are
 * 64-bit for the int and the _c entry points (abi/coll_large.c) alike. */
int ism_abi_nbr_w(const char *fn, const void *sendbuf, const MPI_Count *scounts,
                  const MPI_Aint *sdispls, const MPI_Datatype *stypes, MPI_Datatype stype,
                  void *recvbuf, const MPI_Count *rcounts, const MPI_Aint *rdispls,
                  const MPI_Datatype *rtypes, MPI_Datatype rtype, MPI_Comm comm,
                  MPI_Request *request)
{
    ism_comm *c;
    int *in, *out, nin, nout;
    int rc = neighbors(fn, comm, &c, &in, &nin, &out, &nout);
    if (rc)
        return rc;
    /* across sites a collective in flight (coll/nb_move.c): started, or started and
     * waited for; else the exchange below, in the order of the collectives before it */
    int engine = request || ism_abi_coll_in_flight(c);
    if (!engine)
        ism_nbc_drain(c);
    ism_dt **st = malloc(sizeof *st * (size_t)(nout + 1)), **rt = malloc(sizeof *rt * (size_t)(nin + 1));
    ptrdiff_t *sd = malloc(sizeof *sd * (size_t)(nout + 1)), *rd = malloc(sizeof *rd * (size_t)(nin + 1));
    int64_t *cn = malloc(sizeof *cn * (size_t)(nout + nin + 1));
    if (!st || !rt || !sd || !rd || !cn)
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; !rc && i < nout; i++) {
        st[i] = ism_abi_dt(stypes ? stypes[i] : stype);
        sd[i] = sdispls[i];
        cn[i] = scounts[i];
        if (!st[i] || scounts[i] < 0)
            rc = ism_abi_error(c, st[i] ? MPI_ERR_COUNT : MPI_ERR_TYPE, fn,
                               "bad send count or type for neighbor %d", i);
    }
    for (int i = 0; !rc && i < nin; i++) {
        rt[i] = ism_abi_dt(rtypes ? rtypes[i] : rtype);
        rd[i] = rdispls[i];
        cn[nout + i] = rcounts[i];
        if (!rt[i] || rcounts[i] < 0)
            rc = ism_abi_error(c, rt[i] ? MPI_ERR_COUNT : MPI_ERR_TYPE, fn,
                               "bad receive count or type for neighbor %d", i);
    }
    int cart = ((topo *)c->topo)->kind == MPI_CART;
    if (!rc && engine) {
        ism_req *r = NULL;
        int e = ism_coll_ineighbor64(sendbuf, nout, out, cn, sd, st, recvbuf, nin, in, cn + nout,
                                     rd, rt, cart, c, &r);
        if (e == ISM_COLL_PASS && request) {
            rc = ISM_ABI_NB_PASS; /* the coroutine runs the blocking form */
        } else if (e == ISM_COLL_PASS) {
            engine = 0;
            ism_nbc_drain(c);
        } else if (e) {
            rc = ism_abi_nbc_error(c, e, fn);
        } else if (request) {
            *request = (MPI_Request)r;
        } else {
            if ((e = ism_coll_nb_wait(r)))
                rc = ism_abi_error(c, e, fn, "the neighborhood exchange failed");
        }
    }
    /* Cartesian: tag = direction slot; the -1 slot receives what the neighbor sent to +1 */
    int *stag = NULL, *rtag = NULL;
    if (!rc && !engine && cart) {
        stag = malloc(sizeof(int) * (size_t)(nout + 1));
        rtag = malloc(sizeof(int) * (size_t)(nin + 1));
        if (!stag || !rtag)
            rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
        for (int i = 0; !rc && i < nout; i++)
            stag[i] = 100 + i;
        for (int i = 0; !rc && i < nin; i++)
            rtag[i] = 100 + (i ^ 1);
    }
    if (!rc && !engine) {
        rc = ism_neighbor_exchange64(sendbuf, nout, out, cn, sd, st, recvbuf, nin, in, cn + nout,
                                     rd, rt, stag, rtag, c);
        if (rc)
            rc = ism_abi_error(c, rc, fn, "the neighborhood exchange failed");
    }
    free(stag);
    free(rtag);
    free(st);
    free(rt);
    free(sd);
    free(rd);
    free(cn);
    free(in);
    free(out);
    return rc;
}

/* Element counts and displacements -> the general form. allgather: every out-neighbor
 * gets the same block (sdispls all 0). The arrays are read as ints (wide == 0) or as
 * MPI_Count (the _c forms). */
int ism_abi_nbr_v(const char *fn, int wide, const void *sendbuf, const void *scounts,
                  const void *sdispls, MPI_Count scount1, MPI_Datatype stype, void *recvbuf,
                  const void *rcounts, const void *rdispls, MPI_Count rcount1,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *request)
{
    ism_comm *c;
    int *in, *out, nin, nout;
    int rc = neighbors(fn, comm, &c, &in, &nin, &out, &nout);
    if (rc)
        return rc;
    free(in);
    free(out);
    ism_dt *sd = ism_abi_dt(stype), *rd = ism_abi_dt(rtype);
    if (!sd || !rd)
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "invalid datatype");
#define NTH(v, i) (wide ? (MPI_Count)((const MPI_Count *)(v))[i] : (MPI_Count)((const int *)(v))[i])
    MPI_Count *sc = malloc(sizeof(MPI_Count) * (size_t)(nout + 1));
    MPI_Count *rc2 = malloc(sizeof(MPI_Count) * (size_t)(nin + 1));
    MPI_Aint *sdi = malloc(sizeof(MPI_Aint) * (size_t)(nout + 1));
    MPI_Aint *rdi = malloc(sizeof(MPI_Aint) * (size_t)(nin + 1));
    if (!sc || !rc2 || !sdi || !rdi) {
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
        goto done;
    }
    for (int i = 0; i < nout; i++) {
        sc[i] = scounts ? NTH(scounts, i) : scount1;
        sdi[i] = (MPI_Aint)(scounts ? NTH(sdispls, i) : (sdispls ? i * scount1 : 0)) * sd->extent;
    }
    for (int i = 0; i < nin; i++) {
        rc2[i] = rcounts ? NTH(rcounts, i) : rcount1;
        rdi[i] = (MPI_Aint)(rcounts ? NTH(rdispls, i) : i * rcount1) * rd->extent;
    }
#undef NTH
    rc = ism_abi_nbr_w(fn, sendbuf, sc, sdi, NULL, stype, recvbuf, rc2, rdi, NULL, rtype, comm,
                       request);
done:
    free(sc);
    free(rc2);
    free(sdi);
    free(rdi);
    return rc;
}

static const int one_block = 1; /* a non-NULL marker: per-neighbor send blocks */
const void *const ism_abi_nbr_one_block = &one_block;

int PMPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_allgather", 0, sendbuf, NULL, NULL, sendcount, sendtype,
                         recvbuf, NULL, NULL, recvcount, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_allgather)

int PMPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_allgatherv", 0, sendbuf, NULL, NULL, sendcount, sendtype,
                         recvbuf, recvcounts, displs, 0, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_allgatherv)

int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_alltoall", 0, sendbuf, NULL, &one_block, sendcount,
                         sendtype, recvbuf, NULL, NULL, recvcount, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_alltoall)

int PMPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_alltoallv", 0, sendbuf, sendcounts, sdispls, 0, sendtype,
                         recvbuf, recvcounts, rdispls, 0, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_alltoallv)

/* The int form of the alltoallw: counts widened (request NULL: the blocking call). */
static int nbr_w_int(const char *fn, const void *sendbuf, const int *sendcounts,
                     const MPI_Aint *sdispls, const MPI_Datatype *sendtypes, void *recvbuf,
                     const int *recvcounts, const MPI_Aint *rdispls,
                     const MPI_Datatype *recvtypes, MPI_Comm comm, MPI_Request *request)
{
    int nin, nout;
    ism_abi_neighbor_degrees(comm, &nin, &nout);
    MPI_Count *w = malloc(sizeof(MPI_Count) * (size_t)(nin + nout + 1));
    if (!w)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < nout; i++)
        w[i] = sendcounts[i];
    for (int i = 0; i < nin; i++)
        w[nout + i] = recvcounts[i];
    int rc = ism_abi_nbr_w(fn, sendbuf, w, sdispls, sendtypes, MPI_DATATYPE_NULL, recvbuf,
                           w + nout, rdispls, recvtypes, MPI_DATATYPE_NULL, comm, request);
    free(w);
    return rc;
}

int PMPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                            MPI_Comm comm)
{
    return nbr_w_int("MPI_Neighbor_alltoallw", sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                     recvcounts, rdispls, recvtypes, comm, NULL);
}
ISM_PMPI(Neighbor_alltoallw)

/* ---- the nonblocking forms (coll_nb_gen.c): started as collectives in flight across
 * sites, else ISM_ABI_NB_PASS (the coroutine runs the blocking form) ---- */

static int nbr_request(const char *fn, MPI_Comm comm, MPI_Request *request)
{
    ism_comm *c;
    return ism_abi_nbc_comm(fn, comm, request, &c);
}

int ism_abi_isched_neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_allgather";
    int rc = nbr_request(fn, comm, request);
    return rc ? rc
              : ism_abi_nbr_v(fn, 0, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL,
                              NULL, recvcount, recvtype, comm, request);
}

int ism_abi_isched_neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, const int *recvcounts, const int *displs,
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_allgatherv";
    int rc = nbr_request(fn, comm, request);
    return rc ? rc
              : ism_abi_nbr_v(fn, 0, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf,
                              recvcounts, displs, 0, recvtype, comm, request);
}

int ism_abi_isched_neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_alltoall";
    int rc = nbr_request(fn, comm, request);
    return rc ? rc
              : ism_abi_nbr_v(fn, 0, sendbuf, NULL, &one_block, sendcount, sendtype, recvbuf,
                              NULL, NULL, recvcount, recvtype, comm, request);
}

int ism_abi_isched_neighbor_alltoallv(const void *sendbuf, const int *sendcounts,
                                      const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                                      const int *recvcounts, const int *rdispls,
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_alltoallv";
    int rc = nbr_request(fn, comm, request);
    return rc ? rc
              : ism_abi_nbr_v(fn, 0, sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf,
                              recvcounts, rdispls, 0, recvtype, comm, request);
}

int ism_abi_isched_neighbor_alltoallw(const void *sendbuf, const int *sendcounts,
                                      const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                                      void *recvbuf, const int *recvcounts,
                                      const MPI_Aint *rdispls, const MPI_Datatype *recvtypes,
                                      MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ineighbor_alltoallw";
    int rc = nbr_request(fn, comm, request);
    return rc ? rc
              : nbr_w_int(fn, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                          rdispls, recvtypes, comm, request);
}
