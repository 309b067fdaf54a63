/* test_op_local.c: the local reductions isthmus does without the vendor (src/core/
 * op_local.c), without MPI: every op on every integer type against a reference computed
 * element by element in wider arithmetic, wrapping as the type does (sums and products
 * that overflow, the extremes of each type); SUM and PROD on float and double; buffers
 * at odd addresses; and what stays with the vendor (MIN and MAX on floating point, an
 * unknown type, a vector over the size limit, bitwise ops on floats). */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../src/core/core.h"
#include "check.h"

enum { SUM = 0x21, MIN = 0x22, MAX = 0x23, PROD = 0x24, BAND = 0x28, BOR = 0x29, BXOR = 0x2a,
       LAND = 0x30, LOR = 0x31, LXOR = 0x32 };
static const int ops[] = {SUM, MIN, MAX, PROD, BAND, BOR, BXOR, LAND, LOR, LXOR};
#define N 37

/* reference in 64-bit unsigned arithmetic, truncated to `bytes` and sign-extended */
static int64_t ref_int(int op, int64_t a, int64_t b, int bytes, int sign)
{
    uint64_t mask = bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1, r;
    switch (op) {
    case SUM: r = (uint64_t)a + (uint64_t)b; break;
    case PROD: r = (uint64_t)a * (uint64_t)b; break;
    case MIN: r = (uint64_t)(sign ? (b < a ? b : a) : ((uint64_t)b & mask) < ((uint64_t)a & mask) ? b : a); break;
    case MAX: r = (uint64_t)(sign ? (b > a ? b : a) : ((uint64_t)b & mask) > ((uint64_t)a & mask) ? b : a); break;
    case BAND: r = (uint64_t)(a & b); break;
    case BOR: r = (uint64_t)(a | b); break;
    case BXOR: r = (uint64_t)(a ^ b); break;
    case LAND: r = (a & (int64_t)mask) && (b & (int64_t)mask); break;
    case LOR: r = (a & (int64_t)mask) || (b & (int64_t)mask); break;
    default: r = !(a & (int64_t)mask) != !(b & (int64_t)mask); break;
    }
    r &= mask;
    if (sign && bytes < 8 && (r >> (8 * bytes - 1)) & 1)
        r |= ~mask;
    return (int64_t)r;
}

static int64_t load(const unsigned char *p, int bytes, int sign)
{
    uint64_t v = 0;
    memcpy(&v, p, (size_t)bytes); /* little-endian */
    if (sign && bytes < 8 && (v >> (8 * bytes - 1)) & 1)
        v |= ~((1ull << (8 * bytes)) - 1);
    return (int64_t)v;
}

static void ints(int dt, int bytes, int sign)
{
    static const int64_t special[] = {0, 1, -1, 2, 127, 128, 255, 32767, 65535, 2147483647,
                                      4294967295ll, INT64_MAX, INT64_MIN};
    unsigned char in[N * 8 + 3], io[N * 8 + 3], before[N * 8 + 3];
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        for (int k = 0; k < N; k++) { /* at an odd address: +1 */
            int64_t a = k < 13 ? special[k] : (int64_t)(k * 2654435761ull),
                    b = k < 13 ? special[12 - k] : (int64_t)(k * 40503ull - 7);
            memcpy(in + 1 + k * bytes, &a, (size_t)bytes);
            memcpy(io + 1 + k * bytes, &b, (size_t)bytes);
        }
        memcpy(before, io, sizeof io);
        int done = ism_op_local(ops[o], dt, in + 1, io + 1, N);
        CHECK(done == 1, "type 0x%x op 0x%x done here", dt, ops[o]);
        int bad = 0;
        for (int k = 0; k < N && done; k++) {
            int64_t a = load(in + 1 + k * bytes, bytes, sign), b = load(before + 1 + k * bytes, bytes, sign);
            int64_t want = ref_int(ops[o], a, b, bytes, sign), got = load(io + 1 + k * bytes, bytes, sign);
            bad += want != got;
        }
        CHECK(bad == 0, "type 0x%x op 0x%x: %d of %d elements wrong", dt, ops[o], bad, N);
        CHECK(io[0] == before[0] && io[1 + N * bytes] == before[1 + N * bytes],
              "type 0x%x op 0x%x wrote outside the vector", dt, ops[o]);
    }
}

static void floats(void)
{
    double din[N], dio[N], dref[N];
    float fin[N], fio[N], fref[N];
    for (int k = 0; k < N; k++) {
        din[k] = k * 0.1 - 1.7;
        dio[k] = k == 3 ? DBL_MAX : 1.0 / (k + 1);
        fin[k] = (float)din[k];
        fio[k] = (float)dio[k];
    }
    for (int pass = 0; pass < 2; pass++) {
        int op = pass ? PROD : SUM;
        double d2[N];
        float f2[N];
        memcpy(d2, dio, sizeof d2);
        memcpy(f2, fio, sizeof f2);
        for (int k = 0; k < N; k++) {
            volatile double x = pass ? dio[k] * din[k] : dio[k] + din[k];
            volatile float y = pass ? fio[k] * fin[k] : fio[k] + fin[k];
            dref[k] = x;
            fref[k] = y;
        }
        CHECK(ism_op_local(op, 0x214, din, d2, N) == 1 && !memcmp(d2, dref, sizeof d2),
              "double op 0x%x bit for bit", op);
        CHECK(ism_op_local(op, 0x210, fin, f2, N) == 1 && !memcmp(f2, fref, sizeof f2),
              "float op 0x%x bit for bit", op);
    }
    CHECK(ism_op_local(MIN, 0x214, din, dio, N) == 0, "double MIN stays with the vendor");
    CHECK(ism_op_local(MAX, 0x210, fin, fio, N) == 0, "float MAX stays with the vendor");
    CHECK(ism_op_local(BAND, 0x214, din, dio, N) == 0, "BAND on double is the vendor's error");
}

int main(void)
{
    ints(0x209, 4, 1);  /* INT */
    ints(0x20a, 8, 1);  /* LONG */
    ints(0x20b, 8, 1);  /* LONG_LONG */
    ints(0x20d, 4, 0);  /* UNSIGNED */
    ints(0x20f, 8, 0);  /* UNSIGNED_LONG_LONG */
    ints(0x208, 2, 1);  /* SHORT */
    ints(0x20c, 2, 0);  /* UNSIGNED_SHORT */
    ints(0x240, 1, 1);  /* INT8_T */
    ints(0x245, 1, 0);  /* UNSIGNED_CHAR */
    ints(0x248, 2, 1);  /* INT16_T */
    ints(0x251, 4, 0);  /* UINT32_T */
    ints(0x258, 8, 1);  /* INT64_T */
    ints(0x259, 8, 0);  /* UINT64_T */
    floats();
    static int big[4096 / 4 + 1], big2[4096 / 4 + 1];
    CHECK(ism_op_local(SUM, 0x209, big, big2, 4096 / 4) == 1, "4096 bytes: here");
    CHECK(ism_op_local(SUM, 0x209, big, big2, 4096 / 4 + 1) == 0, "over 4096 bytes: the vendor");
    CHECK(ism_op_local(SUM, 0x247, big, big2, 8) == 0, "BYTE: the vendor");
    CHECK(ism_op_local(SUM, 0x220, big, big2, 2) == 0, "LONG_DOUBLE: the vendor");
    CHECK(ism_op_local(0x37, 0x209, big, big2, 2) == 0, "an unknown op: the vendor");
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("test_op_local: ok\n");
    return failures != 0;
}
