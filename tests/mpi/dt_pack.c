/*
 * dt_pack: MPI_Pack/MPI_Unpack/MPI_Pack_size and the external32 calls, locally and with
 * packed data sent across sites.
 *  - Pack a vector, a struct and an MPI_DOUBLE_INT array one after the other into one
 *    buffer (positions advance by Pack_size), unpack them as contiguous arrays: the
 *    values come out in type-map order; unpack into the original types: the holes of the
 *    destination are left alone.
 *  - Packing into too small a buffer fails (and the position does not move).
 *  - The packed buffer goes to the far peer as MPI_PACKED, which unpacks it; a typed
 *    send of the vector is received as MPI_PACKED and unpacked with the vector type.
 *  - Pack_external("external32"): byte-exact big-endian encoding of known values (int,
 *    short, double, float, long long), sizes from Pack_external_size, a round trip of
 *    an array of structs, and external32 bytes sent to the far peer as MPI_BYTE and
 *    unpacked there.
 * Works for any size >= 1.
 */
#include "check.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static int rank, size;

typedef struct rec {
    char c;
    double d;
    int i;
} rec;

typedef struct { double v; int i; } di;

static MPI_Datatype vec, st;

static void make_types(void)
{
    MPI_Type_vector(4, 2, 3, MPI_INT, &vec); /* ints 0,1,3,4,6,7,9,10 */
    MPI_Type_commit(&vec);
    int bl[] = {1, 1, 1};
    MPI_Aint d[] = {offsetof(rec, c), offsetof(rec, d), offsetof(rec, i)};
    MPI_Datatype ts[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, bl, d, ts, &st);
    MPI_Type_commit(&st);
}

static const int vpos[8] = {0, 1, 3, 4, 6, 7, 9, 10};

static void fill(int who, int *v, rec *r, di *p)
{
    for (int i = 0; i < 11; i++)
        v[i] = who * 1000 + i;
    for (int k = 0; k < 3; k++) {
        r[k].c = (char)('A' + who + k);
        r[k].d = who + k * 0.5;
        r[k].i = -who * 10 - k;
    }
    for (int k = 0; k < 2; k++)
        p[k].v = who * 2.0 + k, p[k].i = who + 100 * k;
}

/* Pack vec x1, st x3, DOUBLE_INT x2 into buf; returns the position reached. */
static int pack_all(int who, char *buf, int cap)
{
    int v[11];
    rec r[3];
    di p[2];
    fill(who, v, r, p);
    int pos = 0, s1, s2, s3;
    MPI_Pack_size(1, vec, MPI_COMM_WORLD, &s1);
    MPI_Pack_size(3, st, MPI_COMM_WORLD, &s2);
    MPI_Pack_size(2, MPI_DOUBLE_INT, MPI_COMM_WORLD, &s3);
    CHECK_RC(MPI_Pack(v, 1, vec, buf, cap, &pos, MPI_COMM_WORLD), "pack vec");
    CHECK(pos <= s1, "pack vec: position %d beyond Pack_size %d", pos, s1);
    int p1 = pos;
    CHECK_RC(MPI_Pack(r, 3, st, buf, cap, &pos, MPI_COMM_WORLD), "pack struct");
    CHECK(pos - p1 <= s2, "pack struct: %d bytes beyond Pack_size %d", pos - p1, s2);
    int p2 = pos;
    CHECK_RC(MPI_Pack(p, 2, MPI_DOUBLE_INT, buf, cap, &pos, MPI_COMM_WORLD), "pack double_int");
    CHECK(pos - p2 <= s3, "pack double_int: %d bytes beyond Pack_size %d", pos - p2, s3);
    return pos;
}

/* Unpack what pack_all(who) produced and check it. */
static void unpack_check(int who, const char *buf, int n, const char *what)
{
    int v[11], flat[8];
    rec r[3], rr[3];
    di p[2], pp[2];
    fill(who, v, r, p);
    int pos = 0;
    /* the vector unpacked as 8 contiguous ints: type-map order */
    CHECK_RC(MPI_Unpack(buf, n, &pos, flat, 8, MPI_INT, MPI_COMM_WORLD), "unpack ints");
    for (int j = 0; j < 8; j++)
        CHECK(flat[j] == v[vpos[j]], "%s: packed int %d is %d, expected %d", what, j, flat[j],
              v[vpos[j]]);
    /* the same bytes unpacked into the vector: holes untouched */
    int back[11];
    for (int i = 0; i < 11; i++)
        back[i] = -5;
    pos = 0;
    CHECK_RC(MPI_Unpack(buf, n, &pos, back, 1, vec, MPI_COMM_WORLD), "unpack vec");
    for (int i = 0; i < 11; i++) {
        int in = i % 3 != 2;
        CHECK(back[i] == (in ? v[i] : -5), "%s: vector int %d is %d", what, i, back[i]);
    }
    memset(rr, 0, sizeof rr);
    CHECK_RC(MPI_Unpack(buf, n, &pos, rr, 3, st, MPI_COMM_WORLD), "unpack struct");
    for (int k = 0; k < 3; k++)
        CHECK(rr[k].c == r[k].c && rr[k].d == r[k].d && rr[k].i == r[k].i,
              "%s: struct %d differs", what, k);
    memset(pp, 0, sizeof pp);
    CHECK_RC(MPI_Unpack(buf, n, &pos, pp, 2, MPI_DOUBLE_INT, MPI_COMM_WORLD), "unpack pairs");
    for (int k = 0; k < 2; k++)
        CHECK(pp[k].v == p[k].v && pp[k].i == p[k].i, "%s: double_int %d differs", what, k);
    CHECK(pos == n, "%s: unpacking used %d of %d bytes", what, pos, n);
}

static void native_pack(void)
{
    char buf[512];
    int n = pack_all(rank, buf, sizeof buf);
    unpack_check(rank, buf, n, "local");

    /* too small: an error, and the position stays (a buffer of its own: MPICH 4.0 writes
     * past outsize, see README.md) */
    int v[11], pos = 3;
    rec r[3];
    di p[2];
    char small[64];
    fill(rank, v, r, p);
    int rc = MPI_Pack(v, 1, vec, small, 20, &pos, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "packing 32 bytes into 17 succeeded");
    CHECK(pos == 3, "failed pack moved the position to %d", pos);

    /* packed data to the far peer as MPI_PACKED */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    char rbuf[512];
    MPI_Status s;
    MPI_Sendrecv(buf, n, MPI_PACKED, to, 1, rbuf, sizeof rbuf, MPI_PACKED, from, 1,
                 MPI_COMM_WORLD, &s);
    int got = 0;
    MPI_Get_count(&s, MPI_PACKED, &got);
    CHECK(got == n, "MPI_PACKED from %d: %d bytes, expected %d", from, got, n);
    unpack_check(from, rbuf, got, "from far peer");

    /* a typed send received as MPI_PACKED */
    MPI_Sendrecv(v, 1, vec, to, 2, rbuf, sizeof rbuf, MPI_PACKED, from, 2, MPI_COMM_WORLD, &s);
    MPI_Get_count(&s, MPI_PACKED, &got);
    int back[11], pv[11];
    rec pr[3];
    di ppp[2];
    fill(from, pv, pr, ppp);
    for (int i = 0; i < 11; i++)
        back[i] = -5;
    pos = 0;
    CHECK_RC(MPI_Unpack(rbuf, got, &pos, back, 1, vec, MPI_COMM_WORLD), "unpack received vec");
    for (int i = 0; i < 11; i++)
        CHECK(back[i] == (i % 3 != 2 ? pv[i] : -5), "vector received as MPI_PACKED: int %d is %d",
              i, back[i]);
}

static void external32(void)
{
    unsigned char b[64];
    MPI_Aint pos = 0, sz = 0;
    int iv = 0x01020304;
    short sv = -2;
    double dv = -2.0;
    float fv = 1.5f;
    long long lv = -0x0102030405060708LL;
    CHECK_RC(MPI_Pack_external("external32", &iv, 1, MPI_INT, b, sizeof b, &pos), "ext int");
    CHECK_RC(MPI_Pack_external("external32", &sv, 1, MPI_SHORT, b, sizeof b, &pos), "ext short");
    CHECK_RC(MPI_Pack_external("external32", &dv, 1, MPI_DOUBLE, b, sizeof b, &pos), "ext double");
    CHECK_RC(MPI_Pack_external("external32", &fv, 1, MPI_FLOAT, b, sizeof b, &pos), "ext float");
    CHECK_RC(MPI_Pack_external("external32", &lv, 1, MPI_LONG_LONG, b, sizeof b, &pos), "ext ll");
    const unsigned char want[] = {1, 2, 3, 4, 0xff, 0xfe, 0xc0, 0, 0, 0, 0, 0, 0, 0,
                                  0x3f, 0xc0, 0, 0, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8,
                                  0xf8};
    CHECK(pos == (MPI_Aint)sizeof want, "external32 of int,short,double,float,long long: %ld "
          "bytes, expected %zu", (long)pos, sizeof want);
    for (size_t i = 0; i < sizeof want && i < (size_t)pos; i++)
        CHECK(b[i] == want[i], "external32 byte %zu is 0x%02x, expected 0x%02x", i, b[i], want[i]);
    int back = 0;
    MPI_Aint p2 = 0;
    unsigned char be[] = {0, 0, 1, 0};
    CHECK_RC(MPI_Unpack_external("external32", be, 4, &p2, &back, 1, MPI_INT), "unext int");
    CHECK(back == 256 && p2 == 4, "external32 00 00 01 00 unpacked to %d", back);

    MPI_Pack_external_size("external32", 1, MPI_INT, &sz);
    CHECK(sz == 4, "external32 size of MPI_INT: %ld", (long)sz);
    MPI_Pack_external_size("external32", 3, vec, &sz);
    CHECK(sz == 96, "external32 size of 3 vectors: %ld", (long)sz);
    MPI_Pack_external_size("external32", 2, st, &sz);
    CHECK(sz == 26, "external32 size of 2 structs {char,double,int}: %ld", (long)sz);

    /* round trip of structs, and the bytes to the far peer */
    rec r[5], rr[5];
    for (int k = 0; k < 5; k++) {
        r[k].c = (char)('a' + k + rank);
        r[k].d = rank - k * 0.125;
        r[k].i = rank * 31 + k;
    }
    unsigned char eb[5 * 13];
    pos = 0;
    CHECK_RC(MPI_Pack_external("external32", r, 5, st, eb, sizeof eb, &pos), "ext structs");
    CHECK(pos == 65, "5 structs took %ld external32 bytes", (long)pos);
    CHECK(eb[0] == (unsigned char)r[0].c && eb[9] == 0 && eb[12] == (unsigned char)(rank * 31),
          "struct 0 in external32: char first, then the big-endian double and int");
    pos = 0;
    memset(rr, 0, sizeof rr);
    CHECK_RC(MPI_Unpack_external("external32", eb, sizeof eb, &pos, rr, 5, st), "unext structs");
    for (int k = 0; k < 5; k++)
        CHECK(rr[k].c == r[k].c && rr[k].d == r[k].d && rr[k].i == r[k].i,
              "external32 round trip: struct %d differs", k);
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    unsigned char rb[sizeof eb];
    MPI_Sendrecv(eb, sizeof eb, MPI_BYTE, to, 3, rb, sizeof rb, MPI_BYTE, from, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    pos = 0;
    CHECK_RC(MPI_Unpack_external("external32", rb, sizeof rb, &pos, rr, 5, st), "unext far");
    for (int k = 0; k < 5; k++)
        CHECK(rr[k].c == (char)('a' + k + from) && rr[k].d == from - k * 0.125 &&
                  rr[k].i == from * 31 + k,
              "external32 from %d: struct %d differs", from, k);
    /* too small an output buffer */
    pos = 0;
    unsigned char small[80];
    int rc = MPI_Pack_external("external32", r, 5, st, small, 60, &pos);
    CHECK(rc != MPI_SUCCESS && pos == 0, "Pack_external of 65 bytes into 60 succeeded");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    make_types();
    native_pack();
    external32();
    MPI_Type_free(&vec);
    MPI_Type_free(&st);
    int rc = check_finish("dt_pack");
    MPI_Finalize();
    return rc;
}
