/*
 * p2p_datatypes: every predefined C datatype travels intact.
 * For each of CHAR, SHORT, INT, LONG, LONG_LONG, SIGNED_CHAR,
 * UNSIGNED_CHAR, UNSIGNED_SHORT, UNSIGNED, UNSIGNED_LONG,
 * UNSIGNED_LONG_LONG, FLOAT, DOUBLE, LONG_DOUBLE, WCHAR, C_BOOL,
 * INT8_T..INT64_T, UINT8_T..UINT64_T, C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX,
 * C_LONG_DOUBLE_COMPLEX, BYTE, AINT, OFFSET, COUNT and the pair types
 * FLOAT_INT, DOUBLE_INT, LONG_INT, 2INT, SHORT_INT, LONG_DOUBLE_INT:
 *  - MPI_Type_size equals sizeof of the C type (for pair types: the sum of
 *    the two members) and the extent equals sizeof (pair types: sizeof the
 *    C struct, padding included);
 *  - count 7 and 1000 are sent to the near and the far peer with values
 *    that use the full width of the type (extremes, sign bits, 2^40 in
 *    AINT/OFFSET/COUNT, non-integral floats); values are compared
 *    member-wise, never with memcmp (long double has 6 padding bytes on
 *    x86-64, pair structs have padding);
 *  - Get_count gives the count, and Get_elements too for non-pair types.
 * Works for any size >= 1.
 */
#include "check.h"
#include <complex.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

static int rank, size;

typedef struct { float v; int i; } float_int;
typedef struct { double v; int i; } double_int;
typedef struct { long v; int i; } long_int;
typedef struct { int v; int i; } int_int;
typedef struct { short v; int i; } short_int;
typedef struct { long double v; int i; } ldouble_int;

/* value generators: s = sender, i = index; deterministic on both sides */
#define U64(s, i) ((uint64_t)0x9E3779B97F4A7C15ull * (uint64_t)((s) * 100003 + (i) + 1))

#define SCALAR(NAME, CT, MT, GEN)                                                              \
    static void fill_##NAME(void *b, int s, int n)                                             \
    {                                                                                          \
        CT *p = b;                                                                             \
        for (int i = 0; i < n; i++)                                                            \
            p[i] = GEN;                                                                        \
    }                                                                                          \
    static int bad_##NAME(const void *b, int s, int n)                                         \
    {                                                                                          \
        const CT *p = b;                                                                       \
        for (int i = 0; i < n; i++) {                                                          \
            CT want = GEN;                                                                     \
            if (!(p[i] == want))                                                               \
                return i;                                                                      \
        }                                                                                      \
        return -1;                                                                             \
    }

#define PAIR(NAME, ST, VT, GENV)                                                               \
    static void fill_##NAME(void *b, int s, int n)                                             \
    {                                                                                          \
        ST *p = b;                                                                             \
        for (int i = 0; i < n; i++) {                                                          \
            p[i].v = (VT)(GENV);                                                               \
            p[i].i = (int)(U64(s, i) >> 33) - (1 << 30);                                       \
        }                                                                                      \
    }                                                                                          \
    static int bad_##NAME(const void *b, int s, int n)                                         \
    {                                                                                          \
        const ST *p = b;                                                                       \
        for (int i = 0; i < n; i++)                                                            \
            if (!(p[i].v == (VT)(GENV)) || p[i].i != (int)(U64(s, i) >> 33) - (1 << 30))       \
                return i;                                                                      \
        return -1;                                                                             \
    }

/* scalars: extremes at i == 0/1, otherwise hashed values of full width */
SCALAR(char, char, MPI_CHAR, (char)(32 + (s * 7 + i) % 90))
SCALAR(short, short, MPI_SHORT, i == 0 ? SHRT_MIN : i == 1 ? SHRT_MAX : (short)U64(s, i))
SCALAR(int, int, MPI_INT, i == 0 ? INT_MIN : i == 1 ? INT_MAX : (int)U64(s, i))
SCALAR(long, long, MPI_LONG, i == 0 ? LONG_MIN : i == 1 ? LONG_MAX : (long)U64(s, i))
SCALAR(llong, long long, MPI_LONG_LONG, i == 0 ? LLONG_MIN : i == 1 ? LLONG_MAX : (long long)U64(s, i))
SCALAR(schar, signed char, MPI_SIGNED_CHAR, i == 0 ? SCHAR_MIN : (signed char)U64(s, i))
SCALAR(uchar, unsigned char, MPI_UNSIGNED_CHAR, i == 0 ? UCHAR_MAX : (unsigned char)U64(s, i))
SCALAR(ushort, unsigned short, MPI_UNSIGNED_SHORT, i == 0 ? USHRT_MAX : (unsigned short)U64(s, i))
SCALAR(uint, unsigned, MPI_UNSIGNED, i == 0 ? UINT_MAX : (unsigned)U64(s, i))
SCALAR(ulong, unsigned long, MPI_UNSIGNED_LONG, i == 0 ? ULONG_MAX : (unsigned long)U64(s, i))
SCALAR(ullong, unsigned long long, MPI_UNSIGNED_LONG_LONG, i == 0 ? ULLONG_MAX : (unsigned long long)U64(s, i))
SCALAR(float, float, MPI_FLOAT, (float)((s * 1000 + i) / 7.0) * (i % 2 ? -1.0f : 1.0f))
SCALAR(double, double, MPI_DOUBLE, (s * 1000 + i) / 7.0 * (i % 2 ? -1e300 : 1e-300))
SCALAR(ldouble, long double, MPI_LONG_DOUBLE, (long double)(s * 1000 + i) / 7.0L * (i % 2 ? -1e4000L : 1.0L))
SCALAR(wchar, wchar_t, MPI_WCHAR, (wchar_t)(L'A' + (s + i) % 26 + (i % 3 == 0 ? 0x1F600 - L'A' : 0)))
SCALAR(cbool, _Bool, MPI_C_BOOL, ((s + i) % 3) == 0)
SCALAR(i8, int8_t, MPI_INT8_T, i == 0 ? INT8_MIN : (int8_t)U64(s, i))
SCALAR(i16, int16_t, MPI_INT16_T, i == 0 ? INT16_MIN : (int16_t)U64(s, i))
SCALAR(i32, int32_t, MPI_INT32_T, i == 0 ? INT32_MIN : (int32_t)U64(s, i))
SCALAR(i64, int64_t, MPI_INT64_T, i == 0 ? INT64_MIN : (int64_t)U64(s, i))
SCALAR(u8, uint8_t, MPI_UINT8_T, i == 0 ? UINT8_MAX : (uint8_t)U64(s, i))
SCALAR(u16, uint16_t, MPI_UINT16_T, i == 0 ? UINT16_MAX : (uint16_t)U64(s, i))
SCALAR(u32, uint32_t, MPI_UINT32_T, i == 0 ? UINT32_MAX : (uint32_t)U64(s, i))
SCALAR(u64, uint64_t, MPI_UINT64_T, i == 0 ? UINT64_MAX : U64(s, i))
SCALAR(fcplx, float _Complex, MPI_C_FLOAT_COMPLEX, (float)(s + i) / 3.0f + (float)(i - s) / 5.0f * I)
SCALAR(dcplx, double _Complex, MPI_C_DOUBLE_COMPLEX, (double)(s + i) / 3.0 - (double)(i * s + 1) / 7.0 * I)
SCALAR(ldcplx, long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX, (long double)(s + i) / 3.0L + (long double)(i + 1) / 11.0L * I)
SCALAR(byte, unsigned char, MPI_BYTE, (unsigned char)(U64(s, i) >> 56))
SCALAR(aint, MPI_Aint, MPI_AINT, ((MPI_Aint)1 << 40) * (i % 2 ? -1 : 1) + (MPI_Aint)(s * 1000 + i))
SCALAR(offset, MPI_Offset, MPI_OFFSET, ((MPI_Offset)1 << 40) * (i % 2 ? -1 : 1) + (MPI_Offset)(s * 1000 + i))
SCALAR(count, MPI_Count, MPI_COUNT, ((MPI_Count)1 << 40) * (i % 2 ? -1 : 1) + (MPI_Count)(s * 1000 + i))
PAIR(float_int, float_int, float, (s * 100 + i) / 3.0f)
PAIR(double_int, double_int, double, (s * 100 + i) / 3.0 * 1e200)
PAIR(long_int, long_int, long, i == 0 ? LONG_MIN : (long)U64(s, i))
PAIR(int_int, int_int, int, (int)U64(s, i + 7))
PAIR(short_int, short_int, short, (short)U64(s, i + 9))
PAIR(ldouble_int, ldouble_int, long double, (long double)(s * 100 + i) / 3.0L * 1e-4000L)

struct tcase {
    const char *name;
    MPI_Datatype type;
    size_t csize;  /* sizeof the C type = expected extent */
    size_t msize;  /* expected MPI_Type_size */
    size_t tsize;  /* expected true extent: up to the last byte of data */
    int pair;
    void (*fill)(void *, int, int);
    int (*bad)(const void *, int, int);
};

#define T(NAME, MT, CT) {#MT, MT, sizeof(CT), sizeof(CT), sizeof(CT), 0, fill_##NAME, bad_##NAME}
#define P(NAME, MT, ST, VT)                                                                        \
    {#MT, MT, sizeof(ST), sizeof(VT) + sizeof(int), offsetof(ST, i) + sizeof(int), 1,             \
     fill_##NAME, bad_##NAME}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const struct tcase cases[] = {
        T(char, MPI_CHAR, char),
        T(short, MPI_SHORT, short),
        T(int, MPI_INT, int),
        T(long, MPI_LONG, long),
        T(llong, MPI_LONG_LONG, long long),
        T(llong, MPI_LONG_LONG_INT, long long),
        T(schar, MPI_SIGNED_CHAR, signed char),
        T(uchar, MPI_UNSIGNED_CHAR, unsigned char),
        T(ushort, MPI_UNSIGNED_SHORT, unsigned short),
        T(uint, MPI_UNSIGNED, unsigned),
        T(ulong, MPI_UNSIGNED_LONG, unsigned long),
        T(ullong, MPI_UNSIGNED_LONG_LONG, unsigned long long),
        T(float, MPI_FLOAT, float),
        T(double, MPI_DOUBLE, double),
        T(ldouble, MPI_LONG_DOUBLE, long double),
        T(wchar, MPI_WCHAR, wchar_t),
        T(cbool, MPI_C_BOOL, _Bool),
        T(i8, MPI_INT8_T, int8_t),
        T(i16, MPI_INT16_T, int16_t),
        T(i32, MPI_INT32_T, int32_t),
        T(i64, MPI_INT64_T, int64_t),
        T(u8, MPI_UINT8_T, uint8_t),
        T(u16, MPI_UINT16_T, uint16_t),
        T(u32, MPI_UINT32_T, uint32_t),
        T(u64, MPI_UINT64_T, uint64_t),
        T(fcplx, MPI_C_FLOAT_COMPLEX, float _Complex),
        T(fcplx, MPI_C_COMPLEX, float _Complex),
        T(dcplx, MPI_C_DOUBLE_COMPLEX, double _Complex),
        T(ldcplx, MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex),
        T(byte, MPI_BYTE, unsigned char),
        T(aint, MPI_AINT, MPI_Aint),
        T(offset, MPI_OFFSET, MPI_Offset),
        T(count, MPI_COUNT, MPI_Count),
        P(float_int, MPI_FLOAT_INT, float_int, float),
        P(double_int, MPI_DOUBLE_INT, double_int, double),
        P(long_int, MPI_LONG_INT, long_int, long),
        P(int_int, MPI_2INT, int_int, int),
        P(short_int, MPI_SHORT_INT, short_int, short),
        P(ldouble_int, MPI_LONG_DOUBLE_INT, ldouble_int, long double),
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    const int counts[2] = {7, 1000};
    int to[2] = {peer_near(rank, size), peer_far_to(rank, size)};
    int from[2] = {peer_near(rank, size), peer_far_from(rank, size)};
    const char *pname[2] = {"near", "far"};

    for (int c = 0; c < ncases; c++) {
        const struct tcase *tc = &cases[c];
        int tsize = -1;
        MPI_Aint lb = -1, extent = -1;
        MPI_Type_size(tc->type, &tsize);
        MPI_Type_get_extent(tc->type, &lb, &extent);
        CHECK(tsize == (int)tc->msize, "%s: MPI_Type_size %d, expected %zu", tc->name, tsize,
              tc->msize);
        CHECK(lb == 0 && extent == (MPI_Aint)tc->csize, "%s: lb %ld extent %ld, expected 0 %zu",
              tc->name, (long)lb, (long)extent, tc->csize);
        MPI_Aint tlb = -1, textent = -1;
        MPI_Type_get_true_extent(tc->type, &tlb, &textent);
        CHECK(tlb == 0 && textent == (MPI_Aint)tc->tsize,
              "%s: true lb %ld true extent %ld, expected 0 %zu", tc->name, (long)tlb,
              (long)textent, tc->tsize);

        for (int p = 0; p < 2; p++)
            for (int k = 0; k < 2; k++) {
                int n = counts[k], tag = c * 4 + p * 2 + k;
                size_t bytes = tc->csize * (size_t)n;
                void *sb = malloc(bytes), *rb = malloc(bytes);
                memset(sb, 0, bytes); /* padding bytes defined (valgrind-clean) */
                memset(rb, 0xA5, bytes);
                tc->fill(sb, rank, n);
                MPI_Request req;
                MPI_Status st;
                MPI_Isend(sb, n, tc->type, to[p], tag, MPI_COMM_WORLD, &req);
                MPI_Recv(rb, n, tc->type, from[p], tag, MPI_COMM_WORLD, &st);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                int bad = tc->bad(rb, from[p], n);
                CHECK(bad < 0, "%s %s count %d: value mismatch at element %d", tc->name,
                      pname[p], n, bad);
                int cnt = -1, el = -1;
                MPI_Get_count(&st, tc->type, &cnt);
                CHECK(cnt == n, "%s %s: Get_count %d, expected %d", tc->name, pname[p], cnt, n);
                /* Get_elements only for scalar types: whether a pair type
                 * counts as 1 or 2 basic elements is not settled (Open MPI
                 * 4.1 says 1), and MPICH 4.0.2 dies with SIGFPE on it. */
                if (!tc->pair) {
                    MPI_Get_elements(&st, tc->type, &el);
                    CHECK(el == n, "%s %s: Get_elements %d, expected %d", tc->name, pname[p],
                          el, n);
                }
                free(sb);
                free(rb);
            }
    }

    int rc = check_finish("p2p_datatypes");
    MPI_Finalize();
    return rc;
}
