/* op_local.c: the local reduction (MPI_Reduce_local's work) of short vectors for the
 * common predefined ops and types, done here instead of by the vendor: one call across
 * the backend into the vendor's MPI_Reduce_local costs about 200 instructions, more than
 * reducing a few hundred bytes (callgrind of a 2-rank 8-byte allreduce, issue 8).
 *
 * What is done here gives the vendor's result bit for bit: integers wrap (arithmetic in
 * the unsigned type, as the vendors' compiled loops do on every machine we run on); of
 * the floating-point ops only SUM and PROD, whose IEEE results do not depend on who
 * computes them. MIN and MAX on floating point stay with the vendor: Open MPI and MPICH
 * disagree on NaN and signed zeros, and the result must be the one the site's vendor
 * gives. Longer vectors also stay with the vendor, whose loops are vectorised.
 */
#include <stdint.h>
#include <string.h>

#include "core.h"

_Static_assert(sizeof(long) == 8 && sizeof(short) == 2 && sizeof(int) == 4,
               "LP64: LONG is 64 bits");

#define LOCAL_MAX 4096 /* bytes: above, the vendor's vectorised loops */

enum { OP_SUM = 0x21, OP_MIN = 0x22, OP_MAX = 0x23, OP_PROD = 0x24, OP_BAND = 0x28,
       OP_BOR = 0x29, OP_BXOR = 0x2a, OP_LAND = 0x30, OP_LOR = 0x31, OP_LXOR = 0x32 };

/* Element k of in and of inout through memcpy: packed buffers need not be aligned. */
#define LOOP(T, EXPR)                                                                   \
    for (int k = 0; k < n; k++) {                                                      \
        T a, b;                                                                        \
        memcpy(&a, pi + (size_t)k * sizeof(T), sizeof(T));                             \
        memcpy(&b, po + (size_t)k * sizeof(T), sizeof(T));                             \
        T r = (EXPR);                                                                  \
        memcpy(po + (size_t)k * sizeof(T), &r, sizeof(T));                             \
    }                                                                                  \
    return 1

#define INT_KERNEL(NAME, T, U)                                                          \
    static int NAME(int op, const char *pi, char *po, int n)                           \
    {                                                                                  \
        switch (op) {                                                                  \
        case OP_SUM: LOOP(T, (T)((U)b + (U)a));                                         \
        case OP_PROD: LOOP(T, (T)((U)b * (U)a));                                        \
        case OP_MIN: LOOP(T, b < a ? b : a);                                           \
        case OP_MAX: LOOP(T, b > a ? b : a);                                           \
        case OP_BAND: LOOP(T, (T)(b & a));                                             \
        case OP_BOR: LOOP(T, (T)(b | a));                                              \
        case OP_BXOR: LOOP(T, (T)(b ^ a));                                             \
        case OP_LAND: LOOP(T, (T)(b && a));                                            \
        case OP_LOR: LOOP(T, (T)(b || a));                                             \
        case OP_LXOR: LOOP(T, (T)(!b != !a));                                          \
        }                                                                              \
        return 0;                                                                      \
    }

#define FLOAT_KERNEL(NAME, T)                                                           \
    static int NAME(int op, const char *pi, char *po, int n)                           \
    {                                                                                  \
        switch (op) {                                                                  \
        case OP_SUM: LOOP(T, b + a);                                                    \
        case OP_PROD: LOOP(T, b * a);                                                   \
        }                                                                              \
        return 0;                                                                      \
    }

INT_KERNEL(k_i8, int8_t, uint8_t)
INT_KERNEL(k_u8, uint8_t, uint8_t)
INT_KERNEL(k_i16, int16_t, uint16_t)
INT_KERNEL(k_u16, uint16_t, uint16_t)
INT_KERNEL(k_i32, int32_t, uint32_t)
INT_KERNEL(k_u32, uint32_t, uint32_t)
INT_KERNEL(k_i64, int64_t, uint64_t)
INT_KERNEL(k_u64, uint64_t, uint64_t)
FLOAT_KERNEL(k_f32, float)
FLOAT_KERNEL(k_f64, double)

int ism_op_local(int op, int dt, const void *in, void *inout, int count)
{
    int (*k)(int, const char *, char *, int) = NULL;
    size_t size = 0;
    switch (dt) { /* ABI handle values (include/mpi.h) */
    case 0x208: k = k_i16; size = sizeof(short); break;                 /* SHORT */
    case 0x209: k = k_i32; size = sizeof(int); break;                   /* INT */
    case 0x20a: case 0x20b: k = k_i64; size = 8; break;                 /* LONG, LONG_LONG */
    case 0x20c: k = k_u16; size = 2; break;                             /* UNSIGNED_SHORT */
    case 0x20d: k = k_u32; size = 4; break;                             /* UNSIGNED */
    case 0x20e: case 0x20f: k = k_u64; size = 8; break;                 /* UNSIGNED_LONG(_LONG) */
    case 0x210: k = k_f32; size = sizeof(float); break;                 /* FLOAT */
    case 0x214: k = k_f64; size = sizeof(double); break;                /* DOUBLE */
    case 0x240: case 0x244: k = k_i8; size = 1; break;                  /* INT8_T, SIGNED_CHAR */
    case 0x241: case 0x245: k = k_u8; size = 1; break;                  /* UINT8_T, UNSIGNED_CHAR */
    case 0x248: k = k_i16; size = 2; break;                             /* INT16_T */
    case 0x249: k = k_u16; size = 2; break;                             /* UINT16_T */
    case 0x250: k = k_i32; size = 4; break;                             /* INT32_T */
    case 0x251: k = k_u32; size = 4; break;                             /* UINT32_T */
    case 0x258: k = k_i64; size = 8; break;                             /* INT64_T */
    case 0x259: k = k_u64; size = 8; break;                             /* UINT64_T */
    default: return 0;
    }
    if (count < 0 || (size_t)count * size > LOCAL_MAX)
        return 0;
    return k(op, in, inout, count);
}
