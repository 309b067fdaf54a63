/*
 * coll_basic: Barrier, Bcast, Reduce and Allreduce on MPI_COMM_WORLD.
 *  - Barrier: 50 barriers in a row; a message Isent before a barrier is
 *    received after it; and for every rank L in turn: the others send L a
 *    token right after the barrier, and L, before entering it, must find
 *    no token (MPI_Iprobe false) -- nobody may leave a barrier before
 *    everyone has entered it.  (That check can only miss bugs, never
 *    report a false failure.)
 *  - Bcast from every root: 1, 1000 and 1 MiB bytes as MPI_BYTE, MPI_INT
 *    and MPI_DOUBLE, root-dependent contents.
 *  - Reduce (from every root) and Allreduce with every predefined op:
 *    SUM PROD MAX MIN LAND LOR LXOR BAND BOR BXOR on MPI_INT (plus SUM on
 *    MPI_LONG_LONG with values above 2^32, BXOR on MPI_UNSIGNED), SUM MAX
 *    MIN on MPI_DOUBLE, MAXLOC/MINLOC on MPI_DOUBLE_INT and MPI_2INT with
 *    ties (the lowest rank must win); counts 1, 100, 100000 (Reduce with
 *    100000 from roots 0 and size-1 only); also MPI_IN_PLACE for Allreduce
 *    (counts 100, 100000) and for Reduce at the root (one root per op and
 *    count, rotating through all roots).  Values are
 *    small integers, so every result is exact whatever the reduction
 *    order; logical results are compared as true/false.
 * Non-root ranks pass NULL as Reduce recvbuf.  Works for any size >= 1.
 */
#include "check.h"
#include <string.h>

static int rank, size;

/* ------------------------------------------------------------------ */
static void barriers(void)
{
    for (int i = 0; i < 50; i++)
        MPI_Barrier(MPI_COMM_WORLD);

    /* message sent before a barrier is receivable after it */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int out = rank + 1000, in = -1;
    MPI_Request r;
    MPI_Isend(&out, 1, MPI_INT, to, 1, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Recv(&in, 1, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(in == from + 1000, "message across barrier: %d", in);

    /* nobody leaves before the last one enters */
    for (int late = 0; late < size; late++) {
        if (rank == late) {
            int early = 0;
            for (int k = 0; k < 200 && !early; k++) /* bounded: detection only */
                MPI_Iprobe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &early, MPI_STATUS_IGNORE);
            CHECK(!early, "barrier %d: a token arrived before rank %d entered", late, late);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int s = 0; s < size - 1; s++) {
                int tok;
                MPI_Recv(&tok, 1, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(&rank, 1, MPI_INT, late, 2, MPI_COMM_WORLD);
        }
    }
}

/* ------------------------------------------------------------------ */
static void bcasts(void)
{
    const MPI_Datatype types[3] = {MPI_BYTE, MPI_INT, MPI_DOUBLE};
    const char *tn[3] = {"BYTE", "INT", "DOUBLE"};
    const size_t tsz[3] = {1, sizeof(int), sizeof(double)};
    const size_t bytes[3] = {1, 1000, 1 << 20};
    void *buf = malloc(1 << 20);
    for (int root = 0; root < size; root++)
        for (int t = 0; t < 3; t++)
            for (int b = 0; b < 3; b++) {
                int n = (int)(bytes[b] / tsz[t]);
                if (n < 1)
                    n = 1;
                int bad = -1;
                for (int pass = 0; pass < 2; pass++) {
                    for (int i = 0; i < n; i++) {
                        int v = (root * 131 + i * 7 + t) % 251;
                        if (pass == 0) {
                            if (rank == root) {
                                if (t == 0) ((unsigned char *)buf)[i] = (unsigned char)v;
                                else if (t == 1) ((int *)buf)[i] = v - 100000 * root;
                                else ((double *)buf)[i] = v * 0.25 + root;
                            } else {
                                if (t == 0) ((unsigned char *)buf)[i] = 0;
                                else if (t == 1) ((int *)buf)[i] = -1;
                                else ((double *)buf)[i] = -1.0;
                            }
                        } else if (bad < 0) {
                            if ((t == 0 && ((unsigned char *)buf)[i] != (unsigned char)v) ||
                                (t == 1 && ((int *)buf)[i] != v - 100000 * root) ||
                                (t == 2 && ((double *)buf)[i] != v * 0.25 + root))
                                bad = i;
                        }
                    }
                    if (pass == 0)
                        MPI_Bcast(buf, n, types[t], root, MPI_COMM_WORLD);
                }
                CHECK(bad < 0, "Bcast root %d %s x %d: mismatch at %d", root, tn[t], n, bad);
            }
    free(buf);
}

/* ------------------------------------------------------------------ */
enum tk { TK_INT, TK_UINT, TK_LL, TK_DBL, TK_DI, TK_II };
typedef struct { double v; int i; } dbl_int;
typedef struct { int v; int i; } int_int;

struct opcase {
    const char *name;
    MPI_Op op;
    enum tk tk;
    MPI_Datatype type;
    int logical;
};

static size_t tk_size(enum tk t)
{
    switch (t) {
    case TK_INT: return sizeof(int);
    case TK_UINT: return sizeof(unsigned);
    case TK_LL: return sizeof(long long);
    case TK_DBL: return sizeof(double);
    case TK_DI: return sizeof(dbl_int);
    case TK_II: return sizeof(int_int);
    }
    return 0;
}

static unsigned hash(int r, int i)
{
    unsigned x = (unsigned)r * 2654435761u ^ (unsigned)i * 40503u;
    x ^= x >> 13;
    return x * 0x5bd1e995u;
}

/* contribution of rank r at element i, written to p */
static void gen(const struct opcase *oc, int r, int i, void *p)
{
    MPI_Op op = oc->op;
    switch (oc->tk) {
    case TK_INT: {
        int v;
        if (op == MPI_SUM) v = r + i % 7 - 3;
        else if (op == MPI_PROD) v = (i + r) % 3 == 0 ? 2 : ((i + r) % 3 == 1 ? -1 : 1);
        else if (op == MPI_MAX || op == MPI_MIN) v = (int)((r * 7919u + i * 31u) % 1000) - 500;
        else if (op == MPI_LAND) v = (r == i % (size + 1)) ? 0 : (r + 1) * (i % 3 + 1);
        else if (op == MPI_LOR) v = (r == i % (size + 1)) ? (r + 2) : 0;
        else if (op == MPI_LXOR) v = ((i >> (r % 16)) & 1) ? r + 2 : 0;
        else v = (int)hash(r, i); /* bitwise ops */
        *(int *)p = v;
        break;
    }
    case TK_UINT: *(unsigned *)p = hash(r, i); break;
    case TK_LL: *(long long *)p = (1LL << 40) * (r + 1) + i; break;
    case TK_DBL:
        *(double *)p = op == MPI_SUM ? (double)(r + i % 5) : (double)((r * 37 + i * 11) % 101) - 50.0;
        break;
    case TK_DI: ((dbl_int *)p)->v = (double)((r + i) % 3); ((dbl_int *)p)->i = r; break;
    case TK_II: ((int_int *)p)->v = (r * 5 + i) % 4 - 2; ((int_int *)p)->i = r; break;
    }
}

/* acc = acc (op) x, for the expected result */
static void comb(const struct opcase *oc, void *acc, const void *x)
{
    MPI_Op op = oc->op;
    switch (oc->tk) {
    case TK_INT: {
        int a = *(int *)acc, b = *(const int *)x, c = 0;
        if (op == MPI_SUM) c = a + b;
        else if (op == MPI_PROD) c = a * b;
        else if (op == MPI_MAX) c = a > b ? a : b;
        else if (op == MPI_MIN) c = a < b ? a : b;
        else if (op == MPI_LAND) c = a && b;
        else if (op == MPI_LOR) c = a || b;
        else if (op == MPI_LXOR) c = !a != !b;
        else if (op == MPI_BAND) c = a & b;
        else if (op == MPI_BOR) c = a | b;
        else if (op == MPI_BXOR) c = a ^ b;
        *(int *)acc = c;
        break;
    }
    case TK_UINT: *(unsigned *)acc ^= *(const unsigned *)x; break; /* BXOR only */
    case TK_LL: *(long long *)acc += *(const long long *)x; break; /* SUM only */
    case TK_DBL: {
        double a = *(double *)acc, b = *(const double *)x;
        *(double *)acc = op == MPI_SUM ? a + b : op == MPI_MAX ? (a > b ? a : b) : (a < b ? a : b);
        break;
    }
    case TK_DI: {
        dbl_int *a = acc;
        const dbl_int *b = x;
        int better = op == MPI_MAXLOC ? b->v > a->v : b->v < a->v;
        if (better || (b->v == a->v && b->i < a->i))
            *a = *b;
        break;
    }
    case TK_II: {
        int_int *a = acc;
        const int_int *b = x;
        int better = op == MPI_MAXLOC ? b->v > a->v : b->v < a->v;
        if (better || (b->v == a->v && b->i < a->i))
            *a = *b;
        break;
    }
    }
}

static int equal(const struct opcase *oc, const void *a, const void *b, int strict)
{
    switch (oc->tk) {
    case TK_INT:
        if (oc->logical && !strict)
            return !*(const int *)a == !*(const int *)b;
        return *(const int *)a == *(const int *)b;
    case TK_UINT: return *(const unsigned *)a == *(const unsigned *)b;
    case TK_LL: return *(const long long *)a == *(const long long *)b;
    case TK_DBL: return *(const double *)a == *(const double *)b;
    case TK_DI:
        return ((const dbl_int *)a)->v == ((const dbl_int *)b)->v &&
               ((const dbl_int *)a)->i == ((const dbl_int *)b)->i;
    case TK_II:
        return ((const int_int *)a)->v == ((const int_int *)b)->v &&
               ((const int_int *)a)->i == ((const int_int *)b)->i;
    }
    return 0;
}

/* first element of res that differs from the expected reduction, or -1 */
static int verify(const struct opcase *oc, const void *res, int n)
{
    size_t es = tk_size(oc->tk);
    unsigned char acc[32], x[32];
    for (int i = 0; i < n; i++) {
        gen(oc, 0, i, acc);
        for (int r = 1; r < size; r++) {
            gen(oc, r, i, x);
            comb(oc, acc, x);
        }
        if (!equal(oc, (const unsigned char *)res + es * (size_t)i, acc, 0))
            return i;
    }
    return -1;
}

static void reductions(void)
{
    const struct opcase ops[] = {
        {"SUM int", MPI_SUM, TK_INT, MPI_INT, 0},
        {"PROD int", MPI_PROD, TK_INT, MPI_INT, 0},
        {"MAX int", MPI_MAX, TK_INT, MPI_INT, 0},
        {"MIN int", MPI_MIN, TK_INT, MPI_INT, 0},
        {"LAND int", MPI_LAND, TK_INT, MPI_INT, 1},
        {"LOR int", MPI_LOR, TK_INT, MPI_INT, 1},
        {"LXOR int", MPI_LXOR, TK_INT, MPI_INT, 1},
        {"BAND int", MPI_BAND, TK_INT, MPI_INT, 0},
        {"BOR int", MPI_BOR, TK_INT, MPI_INT, 0},
        {"BXOR int", MPI_BXOR, TK_INT, MPI_INT, 0},
        {"BXOR unsigned", MPI_BXOR, TK_UINT, MPI_UNSIGNED, 0},
        {"SUM long long", MPI_SUM, TK_LL, MPI_LONG_LONG, 0},
        {"SUM double", MPI_SUM, TK_DBL, MPI_DOUBLE, 0},
        {"MAX double", MPI_MAX, TK_DBL, MPI_DOUBLE, 0},
        {"MIN double", MPI_MIN, TK_DBL, MPI_DOUBLE, 0},
        {"MAXLOC double_int", MPI_MAXLOC, TK_DI, MPI_DOUBLE_INT, 0},
        {"MINLOC double_int", MPI_MINLOC, TK_DI, MPI_DOUBLE_INT, 0},
        {"MAXLOC 2int", MPI_MAXLOC, TK_II, MPI_2INT, 0},
        {"MINLOC 2int", MPI_MINLOC, TK_II, MPI_2INT, 0},
    };
    const int nops = (int)(sizeof ops / sizeof ops[0]);
    const int counts[3] = {1, 100, 100000};
    const size_t maxbytes = 100000 * sizeof(dbl_int);
    unsigned char *sb = malloc(maxbytes), *rb = malloc(maxbytes);

    for (int o = 0; o < nops; o++) {
        const struct opcase *oc = &ops[o];
        size_t es = tk_size(oc->tk);
        for (int c = 0; c < 3; c++) {
            int n = counts[c];
            for (int i = 0; i < n; i++)
                gen(oc, rank, i, sb + es * (size_t)i);

            /* Allreduce */
            memset(rb, 0xA5, es * (size_t)n);
            MPI_Allreduce(sb, rb, n, oc->type, oc->op, MPI_COMM_WORLD);
            int bad = verify(oc, rb, n);
            CHECK(bad < 0, "Allreduce %s count %d: wrong at %d", oc->name, n, bad);

            /* Allreduce in place (counts 100 and 100000) */
            if (n > 1) {
                memcpy(rb, sb, es * (size_t)n);
                MPI_Allreduce(MPI_IN_PLACE, rb, n, oc->type, oc->op, MPI_COMM_WORLD);
                bad = verify(oc, rb, n);
                CHECK(bad < 0, "Allreduce(IN_PLACE) %s count %d: wrong at %d", oc->name, n,
                      bad);
            }

            /* Reduce from every root (count 100000: roots 0 and size-1 only,
             * to bound the number of collectives); in place at one root per
             * (op, count), rotating so that every root is used */
            for (int root = 0; root < size; root++) {
                if (n == 100000 && root != 0 && root != size - 1)
                    continue;
                int inplace = root == (o + c) % size;
                if (rank == root) {
                    memset(rb, 0xA5, es * (size_t)n);
                    MPI_Reduce(sb, rb, n, oc->type, oc->op, root, MPI_COMM_WORLD);
                    bad = verify(oc, rb, n);
                    CHECK(bad < 0, "Reduce %s root %d count %d: wrong at %d", oc->name, root, n,
                          bad);
                    if (inplace) {
                        memcpy(rb, sb, es * (size_t)n);
                        MPI_Reduce(MPI_IN_PLACE, rb, n, oc->type, oc->op, root, MPI_COMM_WORLD);
                        bad = verify(oc, rb, n);
                        CHECK(bad < 0, "Reduce(IN_PLACE) %s root %d count %d: wrong at %d",
                              oc->name, root, n, bad);
                    }
                } else {
                    MPI_Reduce(sb, NULL, n, oc->type, oc->op, root, MPI_COMM_WORLD);
                    if (inplace)
                        MPI_Reduce(sb, NULL, n, oc->type, oc->op, root, MPI_COMM_WORLD);
                }
            }
            /* the contribution buffer is input only (compared member-wise:
             * pair structs have padding bytes) */
            int changed = -1;
            unsigned char x[32];
            for (int i = 0; i < n && changed < 0; i++) {
                gen(oc, rank, i, x);
                if (!equal(oc, x, sb + es * (size_t)i, 1))
                    changed = i;
            }
            CHECK(changed < 0, "Reduce/Allreduce %s modified the send buffer at %d", oc->name,
                  changed);
        }
    }
    free(sb);
    free(rb);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    double t0 = MPI_Wtime();
    barriers();
    double t1 = MPI_Wtime();
    bcasts();
    double t2 = MPI_Wtime();
    reductions();
    double t3 = MPI_Wtime();
    if (rank == 0)
        printf("coll_basic: info: barrier %.2f s, bcast %.2f s, reduce %.2f s\n", t1 - t0,
               t2 - t1, t3 - t2);

    int rc = check_finish("coll_basic");
    MPI_Finalize();
    return rc;
}
