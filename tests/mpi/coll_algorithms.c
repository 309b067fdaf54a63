/*
 * coll_algorithms: every collective algorithm of isthmus's collective library, each
 * against a result computed locally, on several communicators at once.
 *
 * For each collective the program names each algorithm in turn with the communicator
 * hints isthmus_coll_<coll> (the phase inside a site, or the whole collective on a
 * communicator within one site) and isthmus_coll_wan_<coll> (the phase among the
 * sites' leaders), paired up, and checks:
 *   - a non-commutative op, the product of 2x2 matrices of unsigned (mod 2^32), on a
 *     contiguous derived type and on a non-contiguous one (each matrix padded to 8
 *     unsigned by MPI_Type_create_resized), so any combination out of rank order shows;
 *   - MPI_MAXLOC on MPI_DOUBLE_INT, a predefined type that is not contiguous (12 bytes
 *     of data in 16), and MPI_SUM on MPI_INT;
 *   - counts 0, 1, 3 and 6 (segment sizes of 32 bytes make several segments), roots 0
 *     and the last rank, MPI_IN_PLACE, unequal reduce-scatter counts with zeros,
 *     different send and receive types of the same signature.
 * usage: coll_algorithms [partitions]  e.g. "9;1,8;2,7": for each partition in turn
 * the world is split into groups of these sizes, which run concurrently (default: the
 * whole world, then the world in reversed rank order, then with the ranks interleaved,
 * so that sites' members are not consecutive ranks).
 * A vendor MPI ignores the hints and must pass too; under isthmus, ISTHMUS_COLL_STATS=1
 * shows which algorithms ran (python/tests/test_coll_algorithms.py checks that all did).
 */
#include "check.h"
#include <string.h>

#define MAXC 6
static MPI_Datatype T_MAT, T_MATX;
static MPI_Op OP_MAT;
static int seed;

/* inout = in x inout for each matrix; the stride comes from the type's extent */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*dt, &lb, &ext);
    int st = (int)(ext / sizeof(unsigned));
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += st, b += st) {
        unsigned c0 = a[0] * b[0] + a[1] * b[2], c1 = a[0] * b[1] + a[1] * b[3];
        unsigned c2 = a[2] * b[0] + a[3] * b[2], c3 = a[2] * b[1] + a[3] * b[3];
        b[0] = c0;
        b[1] = c1;
        b[2] = c2;
        b[3] = c3;
    }
}

static unsigned mval(int rank, int i, int k) { return (unsigned)((rank * 7 + i * 3 + k * 5 + seed) % 4); }
static int ival(int rank, int i, int j) { return rank * 100 + i * 10 + j + seed; }

/* element i's matrix for ranks lo..hi-1 multiplied in rank order */
static void prod(int lo, int hi, int i, unsigned out[4])
{
    unsigned m[4] = {1, 0, 0, 1};
    for (int r = lo; r < hi; r++) {
        unsigned a[4], c[4];
        for (int k = 0; k < 4; k++)
            a[k] = mval(r, i, k);
        c[0] = m[0] * a[0] + m[1] * a[2];
        c[1] = m[0] * a[1] + m[1] * a[3];
        c[2] = m[2] * a[0] + m[3] * a[2];
        c[3] = m[2] * a[1] + m[3] * a[3];
        memcpy(m, c, sizeof m);
    }
    memcpy(out, m, sizeof m);
}

/* matrices with stride st (4: T_MAT, 8: T_MATX); the padding gets a marker */
static void mfill(unsigned *b, int st, int n, int rank)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < st; k++)
            b[i * st + k] = k < 4 ? mval(rank, i, k) : 0xfeedu;
}

static void junk(void *b, size_t n) { memset(b, 0xa5, n); }

/* element i of buf (stride st, first = index of element 0 in the product range) */
static int mcheck(const unsigned *b, int st, int n, int lo, int hi, const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        unsigned w[4];
        prod(lo, hi, i, w);
        for (int k = 0; k < st; k++) {
            unsigned want = k < 4 ? w[k] : 0xfeedu;
            if (b[i * st + k] != want && !bad) {
                CHECK(0, "%s: element %d[%d] is %u, expected %u (ranks %d..%d)", what, i, k,
                      b[i * st + k], want, lo, hi - 1);
                bad = 1;
            }
        }
    }
    return bad;
}

/* MPI_DOUBLE_INT for MPI_MAXLOC: ties (the values repeat) go to the smaller index */
typedef struct {
    double v;
    int i;
} dint;

static void dfill(dint *b, int n, int rank)
{
    for (int i = 0; i < n; i++) {
        b[i].v = (double)((rank * 37 + i * 11 + seed) % 5);
        b[i].i = rank * 1000 + i;
    }
}

static void dcheck(const dint *b, int n, int lo, int hi, int first, const char *what)
{
    for (int i = 0; i < n; i++) {
        dint w = {-1, 0};
        for (int r = lo; r < hi; r++) {
            dint x;
            x.v = (double)((r * 37 + (first + i) * 11 + seed) % 5);
            x.i = r * 1000 + first + i;
            if (x.v > w.v || (x.v == w.v && x.i < w.i))
                w = x;
        }
        if (b[i].v != w.v || b[i].i != w.i) {
            CHECK(0, "%s: element %d is (%g, %d), expected (%g, %d)", what, i, b[i].v, b[i].i,
                  w.v, w.i);
            return;
        }
    }
}

static void vfill(int *b, int n, int rank)
{
    for (int i = 0; i < n; i++)
        b[i] = ival(rank, i, 0);
}

static void vcheck(const int *b, int n, int lo, int hi, int first, const char *what)
{
    for (int i = 0; i < n; i++) {
        int s0 = 0;
        for (int r = lo; r < hi; r++)
            s0 += ival(r, first + i, 0);
        if (b[i] != s0) {
            CHECK(0, "%s: element %d is %d, expected %d", what, i, b[i], s0);
            return;
        }
    }
}

static unsigned ub[9 * 64 * 8], ub2[9 * 64 * 8];
static int ib[9 * 64], ib2[9 * 64];
static dint db[9 * 64], db2[9 * 64];

static void t_bcast(MPI_Comm c, int p, int r, int n)
{
    for (int ri = 0; ri < 2; ri++) {
        int root = ri ? p - 1 : 0;
        for (int x = 0; x < 2; x++) {
            int st = x ? 8 : 4;
            mfill(ub, st, n, r == root ? root : 12345); /* padding marked everywhere */
            MPI_Bcast(ub, n, x ? T_MATX : T_MAT, root, c);
            mcheck(ub, st, n, root, root + 1, "bcast");
        }
    }
}

static void t_reduce(MPI_Comm c, int p, int r, int n)
{
    for (int ri = 0; ri < 2; ri++) {
        int root = ri ? p - 1 : 0;
        for (int x = 0; x < 2; x++) {
            int st = x ? 8 : 4;
            mfill(ub, st, n, r);
            junk(ub2, sizeof ub2);
            if (x)
                mfill(ub2, st, n, -100); /* the padding of the result must survive */
            MPI_Reduce(ub, ub2, n, x ? T_MATX : T_MAT, OP_MAT, root, c);
            if (r == root)
                mcheck(ub2, st, n, 0, p, "reduce matmul");
        }
        mfill(ub, 4, n, r); /* in place at the root */
        MPI_Reduce(r == root ? MPI_IN_PLACE : ub, r == root ? ub : NULL, n, T_MAT, OP_MAT, root, c);
        if (r == root)
            mcheck(ub, 4, n, 0, p, "reduce in place");
        dfill(db, n, r);
        MPI_Reduce(db, db2, n, MPI_DOUBLE_INT, MPI_MAXLOC, root, c);
        if (r == root)
            dcheck(db2, n, 0, p, 0, "reduce maxloc");
        vfill(ib, n, r);
        MPI_Reduce(ib, ib2, n, MPI_INT, MPI_SUM, root, c);
        if (r == root)
            vcheck(ib2, n, 0, p, 0, "reduce sum");
    }
}

static void t_allreduce(MPI_Comm c, int p, int r, int n)
{
    for (int x = 0; x < 2; x++) {
        int st = x ? 8 : 4;
        mfill(ub, st, n, r);
        mfill(ub2, st, n, -100);
        MPI_Allreduce(ub, ub2, n, x ? T_MATX : T_MAT, OP_MAT, c);
        mcheck(ub2, st, n, 0, p, "allreduce matmul");
    }
    mfill(ub, 8, n, r);
    MPI_Allreduce(MPI_IN_PLACE, ub, n, T_MATX, OP_MAT, c);
    mcheck(ub, 8, n, 0, p, "allreduce in place");
    dfill(db, n, r);
    MPI_Allreduce(db, db2, n, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    dcheck(db2, n, 0, p, 0, "allreduce maxloc");
    dfill(db, n, r);
    MPI_Allreduce(MPI_IN_PLACE, db, n, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    dcheck(db, n, 0, p, 0, "allreduce maxloc in place");
    vfill(ib, n, r);
    MPI_Allreduce(ib, ib2, n, MPI_INT, MPI_SUM, c);
    vcheck(ib2, n, 0, p, 0, "allreduce sum");
}

static void t_reduce_scatter(MPI_Comm c, int p, int r, int n)
{
    int counts[64], total = 0, at = 0;
    for (int i = 0; i < p; i++) {
        counts[i] = (i + n) % 3;
        total += counts[i];
        if (i < r)
            at += counts[i];
    }
    /* element i of the whole vector is element at+i of mine: fill whole vectors */
    mfill(ub, 4, total, r);
    junk(ub2, sizeof ub2);
    MPI_Reduce_scatter(ub, ub2, counts, T_MAT, OP_MAT, c);
    for (int i = 0; i < counts[r]; i++) {
        unsigned w[4];
        prod(0, p, at + i, w);
        CHECK(!memcmp(ub2 + 4 * i, w, sizeof w), "reduce_scatter matmul element %d", i);
    }
    mfill(ub, 8, total, r);
    MPI_Reduce_scatter(MPI_IN_PLACE, ub, counts, T_MATX, OP_MAT, c);
    for (int i = 0; i < counts[r]; i++) {
        unsigned w[4];
        prod(0, p, at + i, w);
        CHECK(!memcmp(ub + 8 * i, w, sizeof w) && ub[8 * i + 5] == 0xfeedu,
              "reduce_scatter in place element %d", i);
    }
    dfill(db, n * p, r);
    MPI_Reduce_scatter_block(db, db2, n, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    dcheck(db2, n, 0, p, r * n, "reduce_scatter_block maxloc");
    vfill(ib, total, r);
    MPI_Reduce_scatter(ib, ib2, counts, MPI_INT, MPI_SUM, c);
    vcheck(ib2, counts[r], 0, p, at, "reduce_scatter sum");
    vfill(ib, total, r);
    MPI_Reduce_scatter(MPI_IN_PLACE, ib, counts, MPI_INT, MPI_SUM, c);
    vcheck(ib, counts[r], 0, p, at, "reduce_scatter sum in place");
}

static void t_scan(MPI_Comm c, int p, int r, int n, int ex)
{
    for (int x = 0; x < 2; x++) {
        int st = x ? 8 : 4;
        mfill(ub, st, n, r);
        mfill(ub2, st, n, -100);
        if (ex)
            MPI_Exscan(ub, ub2, n, x ? T_MATX : T_MAT, OP_MAT, c);
        else
            MPI_Scan(ub, ub2, n, x ? T_MATX : T_MAT, OP_MAT, c);
        if (!ex || r > 0)
            mcheck(ub2, st, n, 0, ex ? r : r + 1, ex ? "exscan matmul" : "scan matmul");
    }
    mfill(ub, 4, n, r);
    if (ex)
        MPI_Exscan(MPI_IN_PLACE, ub, n, T_MAT, OP_MAT, c);
    else
        MPI_Scan(MPI_IN_PLACE, ub, n, T_MAT, OP_MAT, c);
    if (!ex || r > 0)
        mcheck(ub, 4, n, 0, ex ? r : r + 1, "scan in place");
    dfill(db, n, r);
    if (ex)
        MPI_Exscan(db, db2, n, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    else
        MPI_Scan(db, db2, n, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    if (!ex || r > 0)
        dcheck(db2, n, 0, ex ? r : r + 1, 0, "scan maxloc");
    for (int inplace = 0; inplace < 2; inplace++) { /* the vendor's scan takes both */
        int *out = inplace ? ib : ib2;
        vfill(ib, n, r);
        if (ex)
            MPI_Exscan(inplace ? MPI_IN_PLACE : ib, out, n, MPI_INT, MPI_SUM, c);
        else
            MPI_Scan(inplace ? MPI_IN_PLACE : ib, out, n, MPI_INT, MPI_SUM, c);
        if (!ex || r > 0)
            vcheck(out, n, 0, ex ? r : r + 1, 0, inplace ? "scan sum in place" : "scan sum");
    }
}

static void t_allgather(MPI_Comm c, int p, int r, int n)
{
    /* send T_MAT, receive T_MATX: one signature, two layouts */
    mfill(ub, 4, n, r);
    junk(ub2, sizeof ub2);
    MPI_Allgather(ub, n, T_MAT, ub2, n, T_MATX, c);
    for (int q = 0; q < p; q++)
        for (int i = 0; i < n; i++) {
            unsigned *e = ub2 + 8 * (q * n + i);
            CHECK(e[0] == mval(q, i, 0) && e[3] == mval(q, i, 3), "allgather block %d elt %d",
                  q, i);
        }
    junk(ub2, sizeof ub2);
    mfill(ub2 + 8 * r * n, 8, n, r);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ub2, n, T_MATX, c);
    for (int q = 0; q < p; q++)
        for (int i = 0; i < n; i++) {
            unsigned *e = ub2 + 8 * (q * n + i);
            CHECK(e[1] == mval(q, i, 1) && e[2] == mval(q, i, 2) && (q != r || e[6] == 0xfeedu),
                  "allgather in place block %d elt %d", q, i);
        }
}

static void t_alltoall(MPI_Comm c, int p, int r, int n)
{
    /* block for rank q: matrices with values of (r * 16 + q) */
    for (int q = 0; q < p; q++)
        mfill(ub + 4 * q * n, 4, n, r * 16 + q);
    junk(ub2, sizeof ub2);
    MPI_Alltoall(ub, n, T_MAT, ub2, n, T_MATX, c);
    for (int q = 0; q < p; q++)
        for (int i = 0; i < n; i++) {
            unsigned *e = ub2 + 8 * (q * n + i);
            CHECK(e[0] == mval(q * 16 + r, i, 0) && e[3] == mval(q * 16 + r, i, 3),
                  "alltoall from %d elt %d", q, i);
        }
    for (int q = 0; q < p; q++)
        mfill(ub + 4 * q * n, 4, n, r * 16 + q);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ub, n, T_MAT, c);
    for (int q = 0; q < p; q++)
        for (int i = 0; i < n; i++) {
            unsigned *e = ub + 4 * (q * n + i);
            CHECK(e[1] == mval(q * 16 + r, i, 1), "alltoall in place from %d elt %d", q, i);
        }
}

typedef struct {
    const char *coll;
    const char *intra[8];
    const char *wan[8];
} plan;

static const plan plans[] = {
    {"bcast", {"binomial", "knomial:3", "scatter_allgather", "chain::32", "linear", "vendor"},
     {"linear", "binomial", "knomial:3", "scatter_allgather", "chain::32"}},
    {"reduce", {"binomial", "knomial:3", "rabenseifner", "chain::32", "linear", "vendor"},
     {"linear", "binomial", "knomial:3", "rabenseifner", "chain::32"}},
    {"allreduce",
     {"recursive_doubling", "rabenseifner", "ring::32", "knomial:3", "linear", "exchange",
      "vendor"},
     {"exchange", "recursive_doubling", "rabenseifner", "ring::32", "knomial:3", "linear",
      "pipeline::8"}},
    {"reduce_scatter", {"ring::32", "recursive_halving", "pairwise", "vendor"},
     {"pairwise", "ring::32", "recursive_halving"}},
    {"scan", {"recursive_doubling", "chain::32", "vendor"}, {"chain::32", "recursive_doubling"}},
    {"exscan", {"recursive_doubling", "chain::32", "vendor"}, {"chain::32", "recursive_doubling"}},
    {"allgather", {"ring", "recursive_doubling", "bruck", "exchange", "vendor"},
     {"exchange", "ring", "recursive_doubling", "bruck"}},
    {"alltoall", {"pairwise", "bruck", "vendor"}, {NULL}},
    {"barrier", {"dissemination", "linear", "vendor"}, {"linear", "dissemination"}},
};

static int len_of(const char *const *l)
{
    int n = 0;
    while (n < 8 && l[n])
        n++;
    return n;
}

static void run_plan(MPI_Comm c, const plan *pl)
{
    int p, r;
    MPI_Comm_size(c, &p);
    MPI_Comm_rank(c, &r);
    int ni = len_of(pl->intra), nw = len_of(pl->wan), rounds = ni > nw ? ni : nw;
    static const int counts[] = {0, 1, 3, 6};
    for (int k = 0; k < rounds; k++) {
        MPI_Info info;
        char key[64];
        MPI_Info_create(&info);
        snprintf(key, sizeof key, "isthmus_coll_%s", pl->coll);
        MPI_Info_set(info, key, pl->intra[k % ni]);
        if (nw) {
            snprintf(key, sizeof key, "isthmus_coll_wan_%s", pl->coll);
            MPI_Info_set(info, key, pl->wan[k % nw]);
        }
        MPI_Comm_set_info(c, info);
        MPI_Info_free(&info);
        for (unsigned ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
            int n = counts[ci];
            seed = k * 13 + n;
            if (!strcmp(pl->coll, "bcast"))
                t_bcast(c, p, r, n);
            else if (!strcmp(pl->coll, "reduce"))
                t_reduce(c, p, r, n);
            else if (!strcmp(pl->coll, "allreduce"))
                t_allreduce(c, p, r, n);
            else if (!strcmp(pl->coll, "reduce_scatter"))
                t_reduce_scatter(c, p, r, n);
            else if (!strcmp(pl->coll, "scan"))
                t_scan(c, p, r, n, 0);
            else if (!strcmp(pl->coll, "exscan"))
                t_scan(c, p, r, n, 1);
            else if (!strcmp(pl->coll, "allgather"))
                t_allgather(c, p, r, n);
            else if (!strcmp(pl->coll, "alltoall"))
                t_alltoall(c, p, r, n);
            else if (ci == 0) {
                MPI_Barrier(c);
                MPI_Barrier(c);
            }
        }
    }
    /* and nonblocking: the same schedules run as coroutines */
    if (!strcmp(pl->coll, "allreduce")) {
        MPI_Request rq;
        seed = 99;
        mfill(ub, 4, 3, r);
        MPI_Iallreduce(ub, ub2, 3, T_MAT, OP_MAT, c, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        mcheck(ub2, 4, 3, 0, p, "iallreduce");
    }
}

static void run_all(MPI_Comm c)
{
    for (unsigned i = 0; i < sizeof plans / sizeof *plans; i++)
        run_plan(c, &plans[i]);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 9, "at most 9 ranks (buffers), got %d", size);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &T_MAT);
    MPI_Type_commit(&T_MAT);
    MPI_Type_create_resized(T_MAT, 0, 8 * sizeof(unsigned), &T_MATX);
    MPI_Type_commit(&T_MATX);
    MPI_Op_create(matmul, 0, &OP_MAT);
    if (argc > 1) {
        for (char *part = argv[1]; part && *part;) {
            /* concurrent groups of the given sizes */
            int at = 0, color = -1, g = 0;
            for (char *s = part; *s && *s != ';'; g++) {
                int k = atoi(s);
                if (rank >= at && rank < at + k)
                    color = g;
                at += k;
                s += strcspn(s, ",;");
                if (*s == ',')
                    s++;
            }
            CHECK(at == size, "groups %s do not add up to %d ranks", part, size);
            MPI_Comm c;
            MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, rank, &c);
            if (c != MPI_COMM_NULL) {
                run_all(c);
                MPI_Comm_free(&c);
            }
            part = strchr(part, ';');
            if (part)
                part++;
        }
    } else {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        run_all(c);
        MPI_Comm_free(&c);
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c); /* sites in reverse order */
        run_all(c);
        MPI_Comm_free(&c);
        MPI_Comm_split(MPI_COMM_WORLD, 0, (rank % 2) * size + rank, &c); /* interleaved */
        run_all(c);
        MPI_Comm_free(&c);
    }
    MPI_Op_free(&OP_MAT);
    MPI_Type_free(&T_MAT);
    MPI_Type_free(&T_MATX);
    int rc = check_finish("coll_algorithms");
    MPI_Finalize();
    return rc;
}
