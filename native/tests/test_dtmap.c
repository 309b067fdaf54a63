/* test_dtmap.c: unit tests of the type-map engine (core/typemap.c, core/pack.c), without
 * MPI. Builds maps for every combiner, checks bounds, blocks and element counts against
 * values worked out by hand, packs and unpacks with known data, and checks external32
 * byte for byte (big-endian, standard sizes) and by round trip. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/core/dtmap.h"
#include "check.h"


enum { K_INT = 0x09, K_DOUBLE = 0x14, K_CHAR = 0x43, K_SHORT = 0x08, K_LONG = 0x0a,
       K_FLOAT = 0x10, K_LDOUBLE = 0x20, K_DOUBLE_INT = 0x29, K_UNSIGNED_LONG = 0x0e,
       K_WCHAR = 0x3c };

static ism_tmap pre(int k)
{
    ism_tmap m;
    int rc = ism_tmap_predefined(k, &m);
    if (rc) {
        fprintf(stderr, "predefined kind 0x%x: error %d\n", k, rc);
        exit(2);
    }
    return m;
}

static ism_tmap build(int comb, const int64_t *ints, const int64_t *aints, const ism_tmap *const *t)
{
    ism_tmap m;
    int rc = ism_tmap_build(comb, ints, aints, t, &m);
    if (rc) {
        fprintf(stderr, "combiner %d: error %d\n", comb, rc);
        exit(2);
    }
    return m;
}

static void test_predefined(void)
{
    ism_tmap m = pre(K_INT);
    CHECK(m.size == 4 && m.lb == 0 && m.ub == 4 && m.nblk == 1 && m.nelem == 1, "int map");
    ism_tmap_free(&m);
    m = pre(K_DOUBLE_INT);
    CHECK(m.size == 12 && m.ub - m.lb == 16 && m.true_ub == 12, "double_int size %lld ext %lld",
          (long long)m.size, (long long)(m.ub - m.lb));
    CHECK(m.nblk == 1 && m.blk[0].len == 12 && m.nrun == 2 && m.nelem == 2, "double_int blocks");
    CHECK(m.ext32 == 12, "double_int external32 size %lld", (long long)m.ext32);
    ism_tmap_free(&m);
    CHECK(ism_tmap_predefined(0x00, &m) == ISM_TMAP_EARG, "DATATYPE_NULL is not a type");
}

static void test_vector_pack(void)
{
    ism_tmap i = pre(K_INT);
    const ism_tmap *t[] = {&i};
    int64_t v[] = {3, 2, 4};
    ism_tmap m = build(ISM_COMBINER_VECTOR, v, NULL, t);
    CHECK(m.size == 24 && m.lb == 0 && m.ub == 40 && m.nblk == 3,
          "vector size %lld ub %lld nblk %lld", (long long)m.size, (long long)m.ub,
          (long long)m.nblk);
    CHECK(m.nrun == 3 && m.nelem == 6, "vector runs");
    int buf[20], out[12], back[20];
    for (int k = 0; k < 20; k++)
        buf[k] = 100 + k;
    ism_tmap_pack(&m, buf, 2, out); /* two vectors: the second starts at extent 40 = int 10 */
    int want[] = {100, 101, 104, 105, 108, 109, 110, 111, 114, 115, 118, 119};
    CHECK(memcmp(out, want, sizeof want) == 0, "vector pack order");
    memset(back, 0, sizeof back);
    ism_tmap_unpack(&m, out, sizeof out, back);
    for (int k = 0; k < 20; k++) {
        int in = k % 10 == 0 || k % 10 == 1 || k % 10 == 4 || k % 10 == 5 || k % 10 == 8 ||
                 k % 10 == 9;
        CHECK(back[k] == (in ? 100 + k : 0), "unpacked int %d = %d", k, back[k]);
    }
    /* partial: 7 ints = one full vector and one block and a half */
    memset(back, 0, sizeof back);
    ism_tmap_unpack(&m, out, 7 * 4 + 2, back);
    CHECK(back[10] == 110 && back[14] == 0, "partial unpack stops inside the element");
    CHECK(ism_tmap_elements(&m, 28) == 7, "elements of 28 bytes: %lld",
          (long long)ism_tmap_elements(&m, 28));
    CHECK(ism_tmap_elements(&m, 30) == -1, "elements of 30 bytes must be undefined");
    CHECK(ism_tmap_elements(&m, 48) == 12, "elements of two vectors");
    /* nested: contiguous of two vectors = the same data as count 2 */
    const ism_tmap *tv[] = {&m};
    int64_t c2[] = {2};
    ism_tmap n = build(ISM_COMBINER_CONTIGUOUS, c2, NULL, tv);
    CHECK(n.size == 48 && n.ub == 80 && n.nblk == 5, "contiguous of vectors: nblk %lld (the "
          "blocks at 36 and 40 merge)", (long long)n.nblk);
    int out2[12];
    ism_tmap_pack(&n, buf, 1, out2);
    CHECK(memcmp(out2, want, sizeof want) == 0, "nested pack");
    ism_tmap_free(&n);
    ism_tmap_free(&m);
    ism_tmap_free(&i);
}

static void test_indexed_struct_resized(void)
{
    ism_tmap i = pre(K_INT), d = pre(K_DOUBLE), c = pre(K_CHAR);
    const ism_tmap *t[] = {&i};
    int64_t ix[] = {2, 1, 2, 5, 0}; /* blocks {1 at 5, 2 at 0}: not in address order */
    ism_tmap m = build(ISM_COMBINER_INDEXED, ix, NULL, t);
    CHECK(m.size == 12 && m.lb == 0 && m.ub == 24 && m.nblk == 2, "indexed bounds");
    int buf[6] = {10, 11, 12, 13, 14, 15}, out[3];
    ism_tmap_pack(&m, buf, 1, out);
    CHECK(out[0] == 15 && out[1] == 10 && out[2] == 11, "indexed pack follows the type map");
    ism_tmap_free(&m);

    /* struct {int at 0; double at 8; char at 16}: ub 17, rounded to 24 */
    const ism_tmap *ts[] = {&i, &d, &c};
    int64_t si[] = {3, 1, 1, 1};
    int64_t sa[] = {0, 8, 16};
    m = build(ISM_COMBINER_STRUCT, si, sa, ts);
    CHECK(m.size == 13 && m.lb == 0 && m.ub == 24 && m.true_ub == 17, "struct: size %lld ub %lld",
          (long long)m.size, (long long)m.ub);
    CHECK(m.nblk == 2 && m.nrun == 3 && m.nelem == 3 && m.ext32 == 13, "struct blocks (double "
          "and char are adjacent)");
    ism_tmap_free(&m);

    /* resized int: lb -4, extent 12 */
    int64_t ra[] = {-4, 12};
    m = build(ISM_COMBINER_RESIZED, NULL, ra, t);
    CHECK(m.lb == -4 && m.ub == 8 && m.true_lb == 0 && m.true_ub == 4, "resized bounds");
    int rb[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ro[3];
    ism_tmap_pack(&m, rb, 3, ro);
    CHECK(ro[0] == 1 && ro[1] == 4 && ro[2] == 7, "resized stride is the new extent");
    ism_tmap_free(&m);

    /* hindexed_block and hvector with byte displacements */
    int64_t hb[] = {2, 2};
    int64_t ha[] = {12, 0};
    m = build(ISM_COMBINER_HINDEXED_BLOCK, hb, ha, t);
    CHECK(m.size == 16 && m.lb == 0 && m.ub == 20 && m.nblk == 2, "hindexed_block");
    ism_tmap_free(&m);
    int64_t hv[] = {2, 1};
    int64_t hva[] = {-8};
    m = build(ISM_COMBINER_HVECTOR, hv, hva, t);
    CHECK(m.lb == -8 && m.ub == 4 && m.true_lb == -8, "hvector with negative stride");
    ism_tmap_free(&m);
    int64_t ib[] = {2, 3, 4, 0};
    m = build(ISM_COMBINER_INDEXED_BLOCK, ib, NULL, t);
    CHECK(m.size == 24 && m.lb == 0 && m.ub == 28 && m.nblk == 2 && m.nrun == 2,
          "indexed_block: nblk %lld", (long long)m.nblk);
    ism_tmap_free(&m);
    int64_t zero[] = {0};
    m = build(ISM_COMBINER_CONTIGUOUS, zero, NULL, t);
    CHECK(m.size == 0 && m.lb == 0 && m.ub == 0 && m.nblk == 0, "empty type");
    ism_tmap_free(&m);
    ism_tmap_free(&i);
    ism_tmap_free(&d);
    ism_tmap_free(&c);
}

static void test_subarray_darray(void)
{
    ism_tmap i = pre(K_INT);
    const ism_tmap *t[] = {&i};
    /* 4x5 C array, 2x3 block at (1,2) */
    int64_t sa[] = {2, 4, 5, 2, 3, 1, 2, ISM_ORDER_C};
    ism_tmap m = build(ISM_COMBINER_SUBARRAY, sa, NULL, t);
    CHECK(m.size == 24 && m.lb == 0 && m.ub == 80 && m.nblk == 2, "subarray C");
    CHECK(m.blk[0].off == 28 && m.blk[0].len == 12 && m.blk[1].off == 48, "subarray C blocks");
    ism_tmap_free(&m);
    /* the same in Fortran order: dimension 0 is contiguous */
    int64_t sf[] = {2, 4, 5, 2, 3, 1, 2, ISM_ORDER_FORTRAN};
    m = build(ISM_COMBINER_SUBARRAY, sf, NULL, t);
    CHECK(m.size == 24 && m.ub == 80 && m.nblk == 3 && m.blk[0].off == (2 * 4 + 1) * 4 &&
              m.blk[0].len == 8,
          "subarray Fortran");
    ism_tmap_free(&m);
    /* darray 4x4 block/block on 2x2 processes, rank 3 = coords (1,1): rows 2-3, cols 2-3 */
    int64_t da[] = {4, 3, 2, 4, 4, ISM_DISTRIBUTE_BLOCK, ISM_DISTRIBUTE_BLOCK,
                ISM_DISTRIBUTE_DFLT_DARG, ISM_DISTRIBUTE_DFLT_DARG, 2, 2, ISM_ORDER_C};
    m = build(ISM_COMBINER_DARRAY, da, NULL, t);
    CHECK(m.size == 16 && m.ub == 64 && m.nblk == 2 && m.blk[0].off == 40 && m.blk[1].off == 56,
          "darray block");
    ism_tmap_free(&m);
    /* 1-D cyclic(2) of 10 on 3 processes, rank 1: indices 2,3,8,9 */
    int64_t dc[] = {3, 1, 1, 10, ISM_DISTRIBUTE_CYCLIC, 2, 3, ISM_ORDER_C};
    m = build(ISM_COMBINER_DARRAY, dc, NULL, t);
    CHECK(m.size == 16 && m.ub == 40 && m.nblk == 2 && m.blk[0].off == 8 && m.blk[1].off == 32,
          "darray cyclic: nblk %lld", (long long)m.nblk);
    ism_tmap_free(&m);
    int64_t bad[] = {3, 1, 1, 10, ISM_DISTRIBUTE_CYCLIC, 2, 2, ISM_ORDER_C}; /* 2 procs != 3 */
    CHECK(ism_tmap_build(ISM_COMBINER_DARRAY, bad, NULL, t, &m) == ISM_TMAP_EARG,
          "darray with a wrong process grid");
    ism_tmap_free(&i);
}

static void test_external32(void)
{
    ism_tmap i = pre(K_INT), d = pre(K_DOUBLE), l = pre(K_LONG), s = pre(K_SHORT),
             f = pre(K_FLOAT), ld = pre(K_LDOUBLE), ul = pre(K_UNSIGNED_LONG);
    unsigned char o[32];
    int iv = 0x01020304;
    CHECK(ism_tmap_pack_ext32(&i, &iv, 1, o) == 0 && o[0] == 1 && o[1] == 2 && o[2] == 3 &&
              o[3] == 4,
          "int is big-endian");
    double dv = 1.0;
    ism_tmap_pack_ext32(&d, &dv, 1, o);
    CHECK(o[0] == 0x3f && o[1] == 0xf0 && o[2] == 0 && o[7] == 0, "double 1.0");
    long lv = -2;
    CHECK(l.ext32 == 4, "long is 4 bytes in external32");
    ism_tmap_pack_ext32(&l, &lv, 1, o);
    CHECK(o[0] == 0xff && o[1] == 0xff && o[2] == 0xff && o[3] == 0xfe, "long -2");
    long lb = 0;
    ism_tmap_unpack_ext32(&l, o, 1, &lb);
    CHECK(lb == -2, "long -2 round trip gives %ld", lb);
    unsigned long uv = 0xfffffffful, ub = 0;
    ism_tmap_pack_ext32(&ul, &uv, 1, o);
    ism_tmap_unpack_ext32(&ul, o, 1, &ub);
    CHECK(ub == 0xfffffffful, "unsigned long is zero-extended");
    short sv = -300;
    ism_tmap_pack_ext32(&s, &sv, 1, o);
    CHECK(o[0] == 0xfe && o[1] == 0xd4, "short -300");
    float fv = -2.5f;
    ism_tmap_pack_ext32(&f, &fv, 1, o);
    CHECK(o[0] == 0xc0 && o[1] == 0x20 && o[2] == 0 && o[3] == 0, "float -2.5");
    long double lv1 = 1.0L, lv2 = -3.0L, lback = 0;
    CHECK(ld.ext32 == 16, "long double is binary128");
    if (ism_tmap_pack_ext32(&ld, &lv1, 1, o) == 0) {
        CHECK(o[0] == 0x3f && o[1] == 0xff && o[2] == 0 && o[15] == 0, "long double 1.0");
        ism_tmap_pack_ext32(&ld, &lv2, 1, o);
        /* -3 = -1.5 * 2^1: sign, exponent 0x4000, fraction .1 */
        CHECK(o[0] == 0xc0 && o[1] == 0x00 && o[2] == 0x80 && o[3] == 0, "long double -3.0");
        ism_tmap_unpack_ext32(&ld, o, 1, &lback);
        CHECK(lback == -3.0L, "long double round trip");
    }

    /* round trip of a struct with holes, three elements */
    struct rec { char c; int i; double d; short s; long l; };
    const ism_tmap *ts[] = {&i, &d, &s, &l};
    int64_t si[] = {4, 1, 1, 1, 1};
    int64_t sa[] = {offsetof(struct rec, i), offsetof(struct rec, d), offsetof(struct rec, s),
                    offsetof(struct rec, l)};
    ism_tmap m;
    CHECK(ism_tmap_build(ISM_COMBINER_STRUCT, si, sa, ts, &m) == 0, "struct builds");
    CHECK(m.ub - m.lb == (int64_t)sizeof(struct rec), "struct extent %lld vs sizeof %zu",
          (long long)(m.ub - m.lb), sizeof(struct rec));
    CHECK(m.ext32 == 4 + 8 + 2 + 4, "struct external32 size %lld", (long long)m.ext32);
    struct rec in[3], back[3];
    memset(in, 0x5a, sizeof in);
    memset(back, 0x5a, sizeof back);
    for (int k = 0; k < 3; k++) {
        in[k].i = -k * 1000;
        in[k].d = k * 0.25;
        in[k].s = (short)(k - 7);
        in[k].l = -k;
    }
    unsigned char wire[64];
    CHECK(ism_tmap_pack_ext32(&m, in, 3, wire) == 0, "struct pack_external");
    CHECK(wire[0] == 0 && wire[4] == 0 && wire[12] == 0xff && wire[13] == 0xf9,
          "struct element 0 on the wire");
    CHECK(ism_tmap_unpack_ext32(&m, wire, 3, back) == 0, "struct unpack_external");
    CHECK(memcmp(in, back, sizeof in) == 0, "struct round trip through external32");
    ism_tmap_free(&m);
    /* a native round trip of the same leaves the holes alone */
    unsigned char nat[96];
    CHECK(ism_tmap_build(ISM_COMBINER_STRUCT, si, sa, ts, &m) == 0, "struct builds again");
    ism_tmap_pack(&m, in, 3, nat);
    memset(back, 0x5a, sizeof back);
    ism_tmap_unpack(&m, nat, 3 * m.size, back);
    CHECK(memcmp(in, back, sizeof in) == 0, "struct native round trip");
    CHECK(ism_tmap_elements(&m, 3 * m.size) == 12, "struct elements");
    ism_tmap_free(&m);
    ism_tmap_free(&i);
    ism_tmap_free(&d);
    ism_tmap_free(&l);
    ism_tmap_free(&s);
    ism_tmap_free(&f);
    ism_tmap_free(&ld);
    ism_tmap_free(&ul);
}

/* Packing in pieces of every size from 1 to 23 bytes gives the same stream as packing
 * at once, and unpacking in pieces restores the same memory. */
static void test_cursor(void)
{
    ism_tmap i = pre(K_INT), d = pre(K_DOUBLE), c = pre(K_CHAR);
    const ism_tmap *ts[] = {&i, &d, &c};
    int64_t si[] = {3, 2, 1, 3};
    int64_t sa[] = {0, 8, 24};
    ism_tmap m = build(ISM_COMBINER_STRUCT, si, sa, ts);
    enum { COUNT = 7 };
    int64_t ext = m.ub - m.lb, total = COUNT * m.size;
    unsigned char src[COUNT * 32], whole[COUNT * 32], piece[COUNT * 32], back[COUNT * 32];
    for (size_t k = 0; k < sizeof src; k++)
        src[k] = (unsigned char)(k * 7 + 3);
    ism_tmap_pack(&m, src, COUNT, whole);
    for (int step = 1; step <= 23; step++) {
        ism_tcursor cur;
        ism_tcursor_seek(&m, 0, &cur);
        for (int64_t off = 0; off < total; off += step)
            ism_tmap_pack_at(&m, src, &cur, off + step <= total ? step : total - off, piece + off);
        CHECK(memcmp(whole, piece, (size_t)total) == 0, "packing in pieces of %d bytes", step);
        memset(back, 0, sizeof back);
        for (int64_t off = 0; off < total; off += step) {
            ism_tcursor_seek(&m, off, &cur); /* a seek to every piece: the same as in order */
            ism_tmap_unpack_at(&m, whole + off, off + step <= total ? step : total - off, back,
                               &cur);
        }
        unsigned char ref[COUNT * 32];
        memset(ref, 0, sizeof ref);
        ism_tmap_unpack(&m, whole, total, ref);
        CHECK(memcmp(ref, back, (size_t)(COUNT * ext)) == 0, "unpacking in pieces of %d", step);
    }
    ism_tmap_free(&m);
    ism_tmap_free(&i);
    ism_tmap_free(&d);
    ism_tmap_free(&c);
}

static void test_limits(void)
{
    ism_tmap i = pre(K_INT), m;
    const ism_tmap *t[] = {&i};
    int64_t v[] = {ISM_TMAP_MAX_ENTRIES + 1, 1, 2};
    CHECK(ism_tmap_build(ISM_COMBINER_VECTOR, v, NULL, t, &m) == ISM_TMAP_ETOOBIG,
          "a map with too many blocks is refused");
    int64_t c[] = {ISM_TMAP_MAX_ENTRIES + 1}; /* contiguous merges: one block whatever the count */
    CHECK(ism_tmap_build(ISM_COMBINER_CONTIGUOUS, c, NULL, t, &m) == 0 && m.nblk == 1,
          "a long contiguous type is one block");
    ism_tmap_free(&m);
    /* MPI_Type_contiguous(INT_MAX, MPI_INT) is built in constant time (not 2^31 appends):
     * one block, one run, exact size and bounds */
    clock_t t0 = clock();
    int64_t big[] = {2147483647};
    CHECK(ism_tmap_build(ISM_COMBINER_CONTIGUOUS, big, NULL, t, &m) == 0 && m.nblk == 1 &&
              m.nrun == 1 && m.size == 4 * 2147483647LL && m.ub == 4 * 2147483647LL &&
              m.nelem == 2147483647LL && m.run[0].n == 2147483647LL,
          "contiguous of INT_MAX ints: nblk %lld size %lld", (long long)m.nblk,
          (long long)m.size);
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0, "building it took %.1f s",
          (double)(clock() - t0) / CLOCKS_PER_SEC);
    ism_tmap_free(&m);
    /* the large-count constructors' values pass INT_MAX (MPI_Type_vector_c and friends) */
    const int64_t G = 3000000000LL;
    int64_t vd[] = {G, 1, 1}; /* blocks back to back: one block, no loop of 3e9 */
    CHECK(ism_tmap_build(ISM_COMBINER_VECTOR, vd, NULL, t, &m) == 0 && m.nblk == 1 &&
              m.size == 4 * G && m.ub == 4 * G && m.run[0].n == G,
          "vector_c(3e9, 1, 1) of ints: nblk %lld size %lld", (long long)m.nblk,
          (long long)m.size);
    ism_tmap_free(&m);
    int64_t vs[] = {2, G, G + 5}; /* two blocks of 3e9 ints, 3e9 + 5 ints apart */
    CHECK(ism_tmap_build(ISM_COMBINER_VECTOR, vs, NULL, t, &m) == 0 && m.nblk == 2 &&
              m.blk[1].off == 4 * (G + 5) && m.blk[1].len == 4 * G && m.ub == 4 * (2 * G + 5),
          "vector_c(2, 3e9, 3e9 + 5): second block at %lld", (long long)m.blk[1].off);
    ism_tmap_free(&m);
    int64_t sub[] = {1, G, G - 10, 7, ISM_ORDER_C}; /* subarray: one run, no index array */
    CHECK(ism_tmap_build(ISM_COMBINER_SUBARRAY, sub, NULL, t, &m) == 0 && m.nblk == 1 &&
              m.blk[0].off == 28 && m.blk[0].len == 4 * (G - 10) && m.ub == 4 * G,
          "subarray_c of 3e9: block at %lld of %lld", (long long)m.blk[0].off,
          (long long)m.blk[0].len);
    ism_tmap_free(&m);
    int64_t dab[] = {2, 1, 1, G, ISM_DISTRIBUTE_BLOCK, ISM_DISTRIBUTE_DFLT_DARG, 2, ISM_ORDER_C};
    CHECK(ism_tmap_build(ISM_COMBINER_DARRAY, dab, NULL, t, &m) == 0 && m.nblk == 1 &&
              m.blk[0].off == 4 * (G / 2) && m.size == 4 * (G / 2) && m.ub == 4 * G,
          "darray_c block of 3e9 over 2: rank 1's half at %lld", (long long)m.blk[0].off);
    ism_tmap_free(&m);
    /* no loop of 2^40 rounds: a refused map stops at its limit, a type without data
     * costs its two end copies */
    int64_t huge[] = {1LL << 40, 1, 2}, hugec[] = {1LL << 40};
    clock_t t1 = clock();
    CHECK(ism_tmap_build(ISM_COMBINER_VECTOR, huge, NULL, t, &m) == ISM_TMAP_ETOOBIG,
          "vector_c(2^40, 1, 2) is refused");
    ism_tmap e, r;
    const ism_tmap *et[] = {&e};
    int64_t zero[] = {0}, rs[] = {-3, 10};
    CHECK(ism_tmap_build(ISM_COMBINER_CONTIGUOUS, zero, NULL, t, &e) == 0, "empty type");
    const ism_tmap *ets[] = {&e};
    CHECK(ism_tmap_build(ISM_COMBINER_RESIZED, NULL, rs, ets, &r) == 0, "resized empty type");
    et[0] = &r;
    CHECK(ism_tmap_build(ISM_COMBINER_CONTIGUOUS, hugec, NULL, et, &m) == 0 && m.size == 0 &&
              m.lb == -3 && m.ub == -3 + 10 * (1LL << 40),
          "contiguous_c(2^40) of an empty type of extent 10: lb %lld ub %lld", (long long)m.lb,
          (long long)m.ub);
    ism_tmap_free(&m);
    CHECK(ism_tmap_build(ISM_COMBINER_VECTOR, huge, NULL, et, &m) == 0 && m.size == 0 &&
              m.ub == -3 + 20 * ((1LL << 40) - 1) + 10,
          "vector_c(2^40, 1, 2) of it: ub %lld", (long long)m.ub);
    ism_tmap_free(&m);
    ism_tmap_free(&r);
    ism_tmap_free(&e);
    CHECK((double)(clock() - t1) / CLOCKS_PER_SEC < 10.0, "the huge counts took %.1f s",
          (double)(clock() - t1) / CLOCKS_PER_SEC);
    int64_t dac[] = {2, 0, 1, G, ISM_DISTRIBUTE_CYCLIC, 1, 2, ISM_ORDER_C};
    CHECK(ism_tmap_build(ISM_COMBINER_DARRAY, dac, NULL, t, &m) == ISM_TMAP_ETOOBIG,
          "darray_c cyclic of 3e9 (1.5e9 blocks) is refused before any allocation");
    ism_tmap_free(&i);
}

int main(void)
{
    test_predefined();
    test_vector_pack();
    test_indexed_struct_resized();
    test_subarray_darray();
    test_external32();
    test_cursor();
    test_limits();
    if (failures) {
        fprintf(stderr, "test_dtmap: %d failures\n", failures);
        return 1;
    }
    printf("test_dtmap: OK\n");
    return 0;
}
