/*
 * dt_envelope: what a datatype says about itself, and its lifetime.
 *  - MPI_Type_get_envelope/get_contents for every constructor give back the combiner and
 *    exactly the integers, addresses and types passed in; a derived type inside the
 *    contents is a handle of its own that can be used and freed; predefined types are
 *    MPI_COMBINER_NAMED.
 *  - Extents: get_extent(_x), get_true_extent(_x), size(_x) of resized, subarray and
 *    struct types; the struct extent matches the C compiler's sizeof.
 *  - Names: MPI_Type_get_name of MPI_INT is "MPI_INT"; set_name/get_name on a derived type;
 *    the aliases MPI_C_COMPLEX and MPI_LONG_LONG_INT answer to their own names; a type
 *    the vendor lacks (MPI_INTEGER16) still has its name.
 *  - MPI_Type_match_size finds a predefined type of each C size in its class (REAL,
 *    INTEGER, COMPLEX) and fails for a size none has.
 *  - MPI_Get_address/MPI_Aint_add/MPI_Aint_diff, and a struct of absolute addresses
 *    sent from MPI_BOTTOM to the far peer.
 *  - Indexed and hindexed types whose first and last blocks are empty at INT_MAX and
 *    LLONG_MAX displacements: bounds from the data block only; a struct of them packs
 *    right. The handle of a freed type is the one the next constructor returns (as in
 *    MPICH and Open MPI; MPICH's datatype/indexed_misc relies on it).
 *  - Freeing a type while a non-blocking receive and send with it are pending, across
 *    sites: the data still arrive intact.
 *  - Communication with an uncommitted or a freed type fails with MPI_ERR_TYPE.
 * Works for any size >= 1.
 */
#include "check.h"
#include <limits.h>
#include <stddef.h>
#include <string.h>

static int rank, size;

static void expect(MPI_Datatype t, const char *what, int comb, int ni, const int *ints, int na,
                   const MPI_Aint *aints, int nt, const MPI_Datatype *types)
{
    int gi = -1, ga = -1, gt = -1, gc = -1;
    CHECK_RC(MPI_Type_get_envelope(t, &gi, &ga, &gt, &gc), what);
    CHECK(gc == comb && gi == ni && ga == na && gt == nt,
          "%s: envelope (%d ints, %d addresses, %d types, combiner %d), expected (%d, %d, %d, %d)",
          what, gi, ga, gt, gc, ni, na, nt, comb);
    if (gc != comb || gi != ni || ga != na || gt != nt)
        return;
    int ri[64];
    MPI_Aint ra[64];
    MPI_Datatype rt[64];
    CHECK_RC(MPI_Type_get_contents(t, ni, na, nt, ri, ra, rt), what);
    for (int i = 0; i < ni; i++)
        CHECK(ri[i] == ints[i], "%s: integer %d is %d, expected %d", what, i, ri[i], ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(ra[i] == aints[i], "%s: address %d is %ld, expected %ld", what, i, (long)ra[i],
              (long)aints[i]);
    for (int i = 0; i < nt; i++) {
        int a, b, c, cb;
        MPI_Type_get_envelope(rt[i], &a, &b, &c, &cb);
        if (types[i] == MPI_INT || types[i] == MPI_DOUBLE || types[i] == MPI_CHAR) {
            CHECK(rt[i] == types[i], "%s: type %d is not the predefined type passed in", what, i);
        } else {
            int a2, b2, c2, cb2;
            MPI_Type_get_envelope(types[i], &a2, &b2, &c2, &cb2);
            CHECK(cb == cb2 && a == a2, "%s: type %d has combiner %d, expected %d", what, i, cb,
                  cb2);
            MPI_Type_free(&rt[i]); /* a derived type in the contents is the caller's to free */
        }
    }
}

static void envelopes(void)
{
    MPI_Datatype t, v;
    int nn, na, nt, comb;
    MPI_Type_get_envelope(MPI_INT, &nn, &na, &nt, &comb);
    CHECK(comb == MPI_COMBINER_NAMED && nn == 0 && na == 0 && nt == 0, "MPI_INT is not NAMED");

    MPI_Datatype ti[] = {MPI_INT};
    MPI_Type_contiguous(7, MPI_INT, &t);
    expect(t, "contiguous", MPI_COMBINER_CONTIGUOUS, 1, (int[]){7}, 0, NULL, 1, ti);
    MPI_Type_free(&t);

    MPI_Type_vector(3, 2, 5, MPI_INT, &v);
    expect(v, "vector", MPI_COMBINER_VECTOR, 3, (int[]){3, 2, 5}, 0, NULL, 1, ti);

    MPI_Type_create_hvector(4, 1, 24, MPI_INT, &t);
    expect(t, "hvector", MPI_COMBINER_HVECTOR, 2, (int[]){4, 1}, 1, (MPI_Aint[]){24}, 1, ti);
    MPI_Type_free(&t);

    int bl[] = {2, 1, 3}, di[] = {5, 0, 9};
    MPI_Type_indexed(3, bl, di, MPI_INT, &t);
    expect(t, "indexed", MPI_COMBINER_INDEXED, 7, (int[]){3, 2, 1, 3, 5, 0, 9}, 0, NULL, 1, ti);
    MPI_Type_free(&t);

    MPI_Aint ad[] = {40, 0, 16};
    MPI_Type_create_hindexed(3, bl, ad, MPI_INT, &t);
    expect(t, "hindexed", MPI_COMBINER_HINDEXED, 4, (int[]){3, 2, 1, 3}, 3, ad, 1, ti);
    MPI_Type_free(&t);

    MPI_Type_create_indexed_block(3, 2, di, MPI_INT, &t);
    expect(t, "indexed_block", MPI_COMBINER_INDEXED_BLOCK, 5, (int[]){3, 2, 5, 0, 9}, 0, NULL, 1,
           ti);
    MPI_Type_free(&t);

    MPI_Type_create_hindexed_block(3, 2, ad, MPI_INT, &t);
    expect(t, "hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, 2, (int[]){3, 2}, 3, ad, 1, ti);
    MPI_Type_free(&t);

    /* struct with a derived member: the contents give a handle to it */
    int sbl[] = {1, 2, 1};
    MPI_Aint sd[] = {0, 8, 100};
    MPI_Datatype sts[] = {MPI_CHAR, MPI_DOUBLE, v};
    MPI_Type_create_struct(3, sbl, sd, sts, &t);
    expect(t, "struct", MPI_COMBINER_STRUCT, 4, (int[]){3, 1, 2, 1}, 3, sd, 3, sts);
    MPI_Type_free(&t);

    int sz[] = {6, 7, 8}, sub[] = {2, 3, 4}, st[] = {1, 2, 3};
    MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t);
    expect(t, "subarray", MPI_COMBINER_SUBARRAY, 11,
           (int[]){3, 6, 7, 8, 2, 3, 4, 1, 2, 3, MPI_ORDER_FORTRAN}, 0, NULL, 1, ti);
    MPI_Type_free(&t);

    int gs[] = {8, 9}, dist[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK},
        darg[] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[] = {2, 3};
    MPI_Type_create_darray(6, 4, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
    expect(t, "darray", MPI_COMBINER_DARRAY, 12,
           (int[]){6, 4, 2, 8, 9, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK, 2,
                   MPI_DISTRIBUTE_DFLT_DARG, 2, 3, MPI_ORDER_C},
           0, NULL, 1, ti);
    MPI_Type_free(&t);

    MPI_Datatype tv[] = {v};
    MPI_Type_create_resized(v, -8, 100, &t);
    expect(t, "resized", MPI_COMBINER_RESIZED, 0, NULL, 2, (MPI_Aint[]){-8, 100}, 1, tv);
    MPI_Aint lb, ext, tlb, text;
    MPI_Count lbx, extx, tlbx, textx, szx;
    int s;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    CHECK(lb == -8 && ext == 100, "resized: lb %ld extent %ld", (long)lb, (long)ext);
    CHECK(tlb == 0 && text == 48, "resized vector(3,2,5): true lb %ld extent %ld (expected 0 48)",
          (long)tlb, (long)text);
    MPI_Type_get_extent_x(t, &lbx, &extx);
    MPI_Type_get_true_extent_x(t, &tlbx, &textx);
    MPI_Type_size_x(t, &szx);
    MPI_Type_size(t, &s);
    CHECK(lbx == -8 && extx == 100 && tlbx == 0 && textx == 48 && szx == 24 && s == 24,
          "resized: _x queries (%lld %lld %lld %lld %lld)", (long long)lbx, (long long)extx,
          (long long)tlbx, (long long)textx, (long long)szx);
    MPI_Type_free(&t);

    MPI_Type_dup(v, &t);
    expect(t, "dup", MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, tv);
    MPI_Type_free(&t);
    MPI_Type_free(&v);

    /* subarray: extent is the whole array, true extent the part */
    int a2[] = {4, 5}, s2[] = {2, 2}, o2[] = {1, 1};
    MPI_Type_create_subarray(2, a2, s2, o2, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    CHECK(lb == 0 && ext == 160 && tlb == 48 && text == 56,
          "subarray 2x2 of 4x5 doubles at (1,1): lb %ld extent %ld true lb %ld extent %ld",
          (long)lb, (long)ext, (long)tlb, (long)text);
    MPI_Type_free(&t);

    struct padded { double d; char c; };
    int pbl[] = {1, 1};
    MPI_Aint pd[] = {offsetof(struct padded, d), offsetof(struct padded, c)};
    MPI_Datatype pts[] = {MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(2, pbl, pd, pts, &t);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    CHECK(ext == (MPI_Aint)sizeof(struct padded) && text == 9,
          "struct {double; char}: extent %ld (sizeof %zu), true extent %ld", (long)ext,
          sizeof(struct padded), (long)text);
    MPI_Type_free(&t);
}

static void names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Type_get_name(MPI_INT, name, &len);
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7, "name of MPI_INT is \"%s\"", name);
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_DOUBLE, &t);
    MPI_Type_get_name(t, name, &len);
    CHECK(len == 0, "a new type has the name \"%s\"", name);
    MPI_Type_set_name(t, "two doubles");
    MPI_Type_get_name(t, name, &len);
    CHECK(strcmp(name, "two doubles") == 0 && len == 11, "name set, got \"%s\"", name);
    MPI_Type_free(&t);

    /* Aliases (one handle in the standard ABI and in MPICH): each answers to its older
     * name, and the newer one may give it too (MPICH's datatype/typename). */
    static const struct { MPI_Datatype t; const char *name, *alias; } named[] = {
        {MPI_C_COMPLEX, "MPI_C_COMPLEX", NULL},
        {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", "MPI_C_COMPLEX"},
        {MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", NULL},
        {MPI_LONG_LONG, "MPI_LONG_LONG", "MPI_LONG_LONG_INT"},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", NULL},
        {MPI_COMPLEX32, "MPI_COMPLEX32", NULL},
#ifdef MPI_INTEGER16 /* Open MPI 4.1 lacks it; isthmus has it in no vendor table */
        {MPI_INTEGER16, "MPI_INTEGER16", NULL},
#endif
#ifdef MPI_LOGICAL1
        {MPI_LOGICAL1, "MPI_LOGICAL1", NULL},
#endif
#ifdef MPI_REAL2
        {MPI_REAL2, "MPI_REAL2", NULL},
#endif
    };
    /* a type the site's vendor lacks must not make the name query fail */
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (named[i].t == MPI_DATATYPE_NULL)
            continue;
        name[0] = 0;
        int rc = MPI_Type_get_name(named[i].t, name, &len);
        CHECK(rc == MPI_SUCCESS &&
                  (!strcmp(name, named[i].name) ||
                   (named[i].alias && !strcmp(name, named[i].alias))) &&
                  len == (int)strlen(name),
              "MPI_Type_get_name(%s): rc %d, \"%s\"", named[i].name, rc, name);
    }
#ifdef MPI_INTEGER16
    if (MPI_INTEGER16 != MPI_DATATYPE_NULL) {
        MPI_Type_set_name(MPI_INTEGER16, "sixteen bytes");
        MPI_Type_get_name(MPI_INTEGER16, name, &len);
        CHECK(strcmp(name, "sixteen bytes") == 0, "MPI_INTEGER16 renamed, got \"%s\"", name);
    }
#endif
}

/* Packs one element of t from ints 1..10 and unpacks it into zeros. */
static void pack_roundtrip(MPI_Datatype t, int *out)
{
    int in[10], pos = 0;
    char packed[64];
    for (int i = 0; i < 10; i++)
        in[i] = i + 1, out[i] = 0;
    CHECK_RC(MPI_Pack(in, 1, t, packed, (int)sizeof packed, &pos, MPI_COMM_WORLD), "pack");
    int n = pos;
    pos = 0;
    CHECK_RC(MPI_Unpack(packed, n, &pos, out, 1, t, MPI_COMM_WORLD), "unpack");
}

/* Zero-length blocks place nothing and do not move the bounds, even at displacements
 * far out of range; and a freed type's handle is the next one a constructor returns
 * (MPI does not promise it, MPICH and Open MPI both do it, and MPICH's
 * datatype/indexed_misc builds a struct from a copy of a handle freed and reused so). */
static void zero_blocks_and_reuse(void)
{
    int len[3] = {0, 4, 0}, disp[3] = {INT_MAX, 2, INT_MAX}, out[10];
    MPI_Aint lb, ext, adisp[3] = {(MPI_Aint)LLONG_MAX, 2 * sizeof(int), (MPI_Aint)LLONG_MAX};
    MPI_Datatype t, st, types[2];
    CHECK_RC(MPI_Type_indexed(3, len, disp, MPI_INT, &t), "indexed with empty blocks");
    CHECK_RC(MPI_Type_commit(&t), "commit indexed with empty blocks");
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 2 * sizeof(int) && ext == 4 * sizeof(int), "indexed {0,4,0}: lb %ld extent %ld",
          (long)lb, (long)ext);
    int sl[2] = {1, 1};
    MPI_Aint sd[2] = {0, 8 * sizeof(int)};
    types[0] = t;
    types[1] = MPI_INT;
    CHECK_RC(MPI_Type_create_struct(2, sl, sd, types, &st), "struct of the indexed type");
    CHECK_RC(MPI_Type_commit(&st), "commit the struct");
    pack_roundtrip(st, out);
    for (int i = 0; i < 10; i++)
        CHECK(out[i] == ((i >= 2 && i < 6) || i == 8 ? i + 1 : 0), "struct: int %d is %d", i,
              out[i]);
    MPI_Type_free(&st);
    MPI_Type_free(&t);

    CHECK_RC(MPI_Type_create_hindexed(3, len, adisp, MPI_INT, &t), "hindexed, empty blocks");
    CHECK_RC(MPI_Type_commit(&t), "commit hindexed with empty blocks");
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 2 * sizeof(int) && ext == 4 * sizeof(int), "hindexed {0,4,0}: lb %ld extent %ld",
          (long)lb, (long)ext);
    CHECK(t == types[0], "the freed handle was not reused by the next constructor");
    if (t == types[0]) {
        CHECK_RC(MPI_Type_create_struct(2, sl, sd, types, &st), "struct of the reused handle");
        CHECK_RC(MPI_Type_commit(&st), "commit the second struct");
        pack_roundtrip(st, out);
        for (int i = 0; i < 10; i++)
            CHECK(out[i] == ((i >= 2 && i < 6) || i == 8 ? i + 1 : 0), "struct 2: int %d is %d",
                  i, out[i]);
        MPI_Type_free(&st);
    }
    MPI_Type_free(&t);
}

/* MPI_Type_match_size: a predefined type of the class and size asked for, or an error. */
static void match_size(void)
{
    static const struct { int cls, size; const char *what; } want[] = {
        {MPI_TYPECLASS_REAL, sizeof(float), "float"},
        {MPI_TYPECLASS_REAL, sizeof(double), "double"},
        {MPI_TYPECLASS_INTEGER, sizeof(short), "short"},
        {MPI_TYPECLASS_INTEGER, sizeof(int), "int"},
        {MPI_TYPECLASS_INTEGER, sizeof(long long), "long long"},
        {MPI_TYPECLASS_COMPLEX, 2 * sizeof(float), "float complex"},
        {MPI_TYPECLASS_COMPLEX, 2 * sizeof(double), "double complex"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        int rc = MPI_Type_match_size(want[i].cls, want[i].size, &t), sz = -1, ni, na, nt, comb;
        CHECK(rc == MPI_SUCCESS && t != MPI_DATATYPE_NULL, "match_size(%s): rc %d", want[i].what,
              rc);
        if (rc != MPI_SUCCESS)
            continue;
        MPI_Type_size(t, &sz);
        MPI_Type_get_envelope(t, &ni, &na, &nt, &comb);
        CHECK(sz == want[i].size && comb == MPI_COMBINER_NAMED,
              "match_size(%s): size %d, combiner %d", want[i].what, sz, comb);
    }
    /* a size no type of the class has */
    MPI_Datatype t;
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t) != MPI_SUCCESS,
          "match_size(REAL, 3 bytes) succeeded");
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 1000, &t) != MPI_SUCCESS,
          "match_size(INTEGER, 1000 bytes) succeeded");
}

static void addresses(void)
{
    int a = 0;
    double b[4];
    MPI_Aint pa, pb;
    MPI_Get_address(&a, &pa);
    MPI_Get_address(&b[3], &pb);
    CHECK(MPI_Aint_diff(pb, pa) == (MPI_Aint)((char *)&b[3] - (char *)&a), "Aint_diff");
    CHECK(MPI_Aint_add(pa, 8) == pa + 8, "Aint_add");

    /* a struct of absolute addresses, sent from MPI_BOTTOM */
    int x = 1000 + rank;
    double y = rank + 0.5;
    MPI_Aint ad[2];
    MPI_Get_address(&x, &ad[0]);
    MPI_Get_address(&y, &ad[1]);
    int bl[] = {1, 1};
    MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE}, t;
    MPI_Type_create_struct(2, bl, ad, ts, &t);
    MPI_Type_commit(&t);
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    struct idpair { int i; double d; } r = {0, 0};
    int rbl[] = {1, 1};
    MPI_Aint rd[] = {offsetof(struct idpair, i), offsetof(struct idpair, d)};
    MPI_Datatype rt;
    MPI_Type_create_struct(2, rbl, rd, ts, &rt);
    MPI_Type_commit(&rt);
    MPI_Sendrecv(MPI_BOTTOM, 1, t, to, 1, &r, 1, rt, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(r.i == 1000 + from && r.d == from + 0.5, "MPI_BOTTOM struct from %d: (%d, %g)", from,
          r.i, r.d);
    MPI_Type_free(&t);
    MPI_Type_free(&rt);
}

static void free_while_pending(void)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    enum { N = 20000 }; /* 20000 vectors of 2 ints: 160 KB, rendezvous across sites */
    int *s = malloc(sizeof(int) * 3 * N), *r = malloc(sizeof(int) * 3 * N);
    for (int i = 0; i < 3 * N; i++)
        s[i] = rank * 7 + i, r[i] = -1;
    for (int round = 0; round < 2; round++) {
        int count = round ? N : 4; /* eager, then rendezvous */
        MPI_Datatype v;
        MPI_Type_vector(1, 2, 3, MPI_INT, &v);
        MPI_Datatype vr;
        MPI_Type_create_resized(v, 0, 12, &vr);
        MPI_Type_free(&v);
        MPI_Type_commit(&vr);
        MPI_Request rq[2];
        MPI_Irecv(r, count, vr, from, 2, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(s, count, vr, to, 2, MPI_COMM_WORLD, &rq[1]);
        MPI_Type_free(&vr);
        CHECK(vr == MPI_DATATYPE_NULL, "MPI_Type_free did not reset the handle");
        CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), "waitall after free");
        int bad = 0;
        for (int i = 0; i < 3 * count && bad < 3; i++) {
            int want = i % 3 == 2 ? -1 : from * 7 + i;
            if (r[i] != want) {
                CHECK(0, "freed type, count %d: int %d is %d, expected %d", count, i, r[i], want);
                bad++;
            }
        }
    }
    free(s);
    free(r);
}

static void invalid_types(void)
{
    int to = peer_far_to(rank, size), cls = 0, buf[8] = {0};
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    int rc = MPI_Send(buf, 1, t, to, 3, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "send with an uncommitted type: class %d", cls);
    MPI_Type_free(&t);
    rc = MPI_Send(buf, 1, MPI_DATATYPE_NULL, to, 3, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "send with MPI_DATATYPE_NULL: class %d", cls);
    rc = MPI_Type_free(&t); /* t is MPI_DATATYPE_NULL now */
    CHECK(rc != MPI_SUCCESS, "freeing MPI_DATATYPE_NULL succeeded");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    envelopes();
    names();
    zero_blocks_and_reuse();
    match_size();
    addresses();
    free_while_pending();
    invalid_types();
    int rc = check_finish("dt_envelope");
    MPI_Finalize();
    return rc;
}
