/*
 * data.c - buffers, byte patterns and reduction values.
 *
 * A buffer holds nelem elements of the combination's datatype plus SLACK
 * bytes on each side; every byte starts as a sentinel.  Data is written by
 * MPI_Unpack of a deterministic byte pattern (a hash of the seed and the
 * byte index), so only the type's data bytes change and its holes keep the
 * sentinel.  The expected receive buffer is built the same way, and whole
 * allocations are compared with memcmp: data, holes and the slack around
 * the buffer are all checked.
 *
 * Reductions write small values (1..11) into the elements of predefined
 * types, so sums over a few ranks are exact in every type and any order;
 * results are compared by value (long double padding bytes are undefined).
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLACK 64

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

uint32_t seed_of(const struct ctx *cx, int salt, int src_side, int src, int dst)
{
    uint32_t h = mix((uint32_t)cx->tid * 2654435761U + (uint32_t)cx->cid);
    h = mix(h ^ (uint32_t)salt * 40503U);
    h = mix(h ^ (uint32_t)src_side * 977U ^ (uint32_t)(src + 7) * 65599U);
    h = mix(h ^ (uint32_t)(dst + 11) * 2246822519U);
    return h;
}

char *buf_elem(struct ctx *cx, const struct buf *b, MPI_Aint i)
{
    return b->ptr + i * cx->extent;
}

void buf_init(struct ctx *cx, struct buf *b, MPI_Aint nelem, int sentinel)
{
    MPI_Aint lo = 0, hi = 0;
    if (nelem > 0) {
        lo = cx->true_lb < cx->lb ? cx->true_lb : cx->lb;
        hi = cx->lb + nelem * cx->extent;
        MPI_Aint th = (nelem - 1) * cx->extent + cx->true_lb + cx->true_extent;
        if (th > hi)
            hi = th;
        if (lo > 0)
            lo = 0;
    }
    b->len = (size_t)(hi - lo) + 2 * SLACK;
    b->mem = malloc(b->len);
    if (!b->mem) {
        fprintf(stderr, "conformance: out of memory (%zu bytes)\n", b->len);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(b->mem, sentinel, b->len);
    b->ptr = (char *)b->mem + SLACK - lo;
    b->nelem = nelem;
}

void buf_free(struct buf *b)
{
    free(b->mem);
    b->mem = NULL;
}

void buf_fill(struct ctx *cx, struct buf *b, MPI_Aint off, int n, uint32_t seed)
{
    if (n <= 0)
        return;
    int psize = 0, pos = 0;
    MPI_Pack_size(n, cx->ty->dt, MPI_COMM_SELF, &psize);
    unsigned char *pat = malloc((size_t)psize + 1);
    for (int i = 0; i < psize; i++)
        pat[i] = (unsigned char)mix(seed ^ (uint32_t)i * 0x9e3779b1U);
    int rc = MPI_Unpack(pat, psize, &pos, buf_elem(cx, b, off), n, cx->ty->dt, MPI_COMM_SELF);
    CX_RC(cx, rc, "MPI_Unpack (building a pattern)");
    free(pat);
}

int buf_same(struct ctx *cx, const struct buf *got, const struct buf *want, const char *what)
{
    if (got->len == want->len && memcmp(got->mem, want->mem, got->len) == 0)
        return 1;
    size_t i = 0;
    while (i < got->len && i < want->len && got->mem[i] == want->mem[i])
        i++;
    long off = (long)((const char *)got->mem + i - got->ptr);
    long el = cx->extent > 0 ? (off >= 0 ? off / (long)cx->extent : -1 - (-off - 1) / (long)cx->extent) : 0;
    size_t ndiff = 0;
    for (size_t j = i; j < got->len && j < want->len; j++)
        ndiff += got->mem[j] != want->mem[j];
    const char *where = (i < SLACK || i >= got->len - SLACK) ? " (slack outside the buffer)"
                                                              : "";
    cx_fail(cx, "%s: buffer differs at byte offset %ld (element %ld)%s: got 0x%02x want 0x%02x; "
                "%zu bytes differ",
            what, off, el, where, got->mem[i], want->mem[i], ndiff);
    return 0;
}

/* ---- reductions ---------------------------------------------------------- */

struct p_float { float v; int i; };
struct p_double { double v; int i; };
struct p_long { long v; int i; };
struct p_2int { int v; int i; };
struct p_short { short v; int i; };
struct p_ldouble { long double v; int i; };

static void set_val(int ek, char *p, long double v, int idx)
{
    switch (ek) {
    case EK_SCHAR: *(signed char *)p = (signed char)v; break;
    case EK_UCHAR: *(unsigned char *)p = (unsigned char)v; break;
    case EK_SHORT: *(short *)p = (short)v; break;
    case EK_USHORT: *(unsigned short *)p = (unsigned short)v; break;
    case EK_INT: *(int *)p = (int)v; break;
    case EK_UINT: *(unsigned *)p = (unsigned)v; break;
    case EK_LONG: *(long *)p = (long)v; break;
    case EK_ULONG: *(unsigned long *)p = (unsigned long)v; break;
    case EK_LLONG: *(long long *)p = (long long)v; break;
    case EK_ULLONG: *(unsigned long long *)p = (unsigned long long)v; break;
    case EK_FLOAT: *(float *)p = (float)v; break;
    case EK_DOUBLE: *(double *)p = (double)v; break;
    case EK_LDOUBLE: *(long double *)p = v; break;
    case EK_I8: *(int8_t *)p = (int8_t)v; break;
    case EK_I16: *(int16_t *)p = (int16_t)v; break;
    case EK_I32: *(int32_t *)p = (int32_t)v; break;
    case EK_I64: *(int64_t *)p = (int64_t)v; break;
    case EK_U8: *(uint8_t *)p = (uint8_t)v; break;
    case EK_U16: *(uint16_t *)p = (uint16_t)v; break;
    case EK_U32: *(uint32_t *)p = (uint32_t)v; break;
    case EK_U64: *(uint64_t *)p = (uint64_t)v; break;
    case EK_FLOAT_INT: ((struct p_float *)p)->v = (float)v; ((struct p_float *)p)->i = idx; break;
    case EK_DOUBLE_INT: ((struct p_double *)p)->v = (double)v; ((struct p_double *)p)->i = idx; break;
    case EK_LONG_INT: ((struct p_long *)p)->v = (long)v; ((struct p_long *)p)->i = idx; break;
    case EK_2INT: ((struct p_2int *)p)->v = (int)v; ((struct p_2int *)p)->i = idx; break;
    case EK_SHORT_INT: ((struct p_short *)p)->v = (short)v; ((struct p_short *)p)->i = idx; break;
    case EK_LDOUBLE_INT: ((struct p_ldouble *)p)->v = v; ((struct p_ldouble *)p)->i = idx; break;
    default: break;
    }
}

static long double get_val(int ek, const char *p, int *idx)
{
    *idx = 0;
    switch (ek) {
    case EK_SCHAR: return *(const signed char *)p;
    case EK_UCHAR: return *(const unsigned char *)p;
    case EK_SHORT: return *(const short *)p;
    case EK_USHORT: return *(const unsigned short *)p;
    case EK_INT: return *(const int *)p;
    case EK_UINT: return *(const unsigned *)p;
    case EK_LONG: return (long double)*(const long *)p;
    case EK_ULONG: return (long double)*(const unsigned long *)p;
    case EK_LLONG: return (long double)*(const long long *)p;
    case EK_ULLONG: return (long double)*(const unsigned long long *)p;
    case EK_FLOAT: return *(const float *)p;
    case EK_DOUBLE: return *(const double *)p;
    case EK_LDOUBLE: return *(const long double *)p;
    case EK_I8: return *(const int8_t *)p;
    case EK_I16: return *(const int16_t *)p;
    case EK_I32: return *(const int32_t *)p;
    case EK_I64: return (long double)*(const int64_t *)p;
    case EK_U8: return *(const uint8_t *)p;
    case EK_U16: return *(const uint16_t *)p;
    case EK_U32: return *(const uint32_t *)p;
    case EK_U64: return (long double)*(const uint64_t *)p;
    case EK_FLOAT_INT: *idx = ((const struct p_float *)p)->i; return ((const struct p_float *)p)->v;
    case EK_DOUBLE_INT: *idx = ((const struct p_double *)p)->i; return ((const struct p_double *)p)->v;
    case EK_LONG_INT: *idx = ((const struct p_long *)p)->i; return (long double)((const struct p_long *)p)->v;
    case EK_2INT: *idx = ((const struct p_2int *)p)->i; return ((const struct p_2int *)p)->v;
    case EK_SHORT_INT: *idx = ((const struct p_short *)p)->i; return ((const struct p_short *)p)->v;
    case EK_LDOUBLE_INT: *idx = ((const struct p_ldouble *)p)->i; return ((const struct p_ldouble *)p)->v;
    default: return 0;
    }
}

static long double value(int side, int rank, MPI_Aint i, int salt)
{
    return (long double)(((long)rank * 3 + side * 5 + (long)i * 7 + salt * 11) % 11 + 1);
}

static int index_of(int side, int rank) { return rank + 100 * side; }

void red_set(struct ctx *cx, struct buf *b, MPI_Aint off, int n, MPI_Aint vbase, int side,
             int rank, int salt)
{
    for (int j = 0; j < n; j++)
        set_val(cx->ty->ek, buf_elem(cx, b, off + j), value(side, rank, vbase + j, salt),
                index_of(side, rank));
}

void red_acc(struct ctx *cx, long double *accv, long *acci, int n, MPI_Aint vbase, int first,
             int side, int rank, int salt, MPI_Op op)
{
    (void)cx;
    long idx = index_of(side, rank);
    for (int j = 0; j < n; j++) {
        long double v = value(side, rank, vbase + j, salt);
        if (first) {
            accv[j] = v;
            acci[j] = idx;
        } else if (op == MPI_SUM) {
            accv[j] += v;
        } else if (op == MPI_MAX) {
            if (v > accv[j])
                accv[j] = v;
        } else if (op == MPI_MINLOC) {
            if (v < accv[j] || (v == accv[j] && idx < acci[j]))
                accv[j] = v, acci[j] = idx;
        } else if (op == MPI_MAXLOC) {
            if (v > accv[j] || (v == accv[j] && idx < acci[j]))
                accv[j] = v, acci[j] = idx;
        }
    }
}

int red_check(struct ctx *cx, const struct buf *b, MPI_Aint off, int n, const long double *accv,
              const long *acci, const char *what)
{
    int pair = cx->ty->red == RED_PAIR;
    for (int j = 0; j < n; j++) {
        int idx;
        long double v = get_val(cx->ty->ek, buf_elem(cx, b, off + j), &idx);
        if (v != accv[j] || (pair && idx != acci[j])) {
            cx_fail(cx, "%s: element %d is %Lg (index %d), expected %Lg (index %ld)", what,
                    (int)(off + j), v, idx, accv[j], pair ? acci[j] : 0L);
            return 0;
        }
    }
    for (size_t k = 0; k < SLACK; k++)
        if (b->mem[k] != SENT_RECV || b->mem[b->len - 1 - k] != SENT_RECV) {
            cx_fail(cx, "%s: bytes written outside the buffer", what);
            return 0;
        }
    return 1;
}

MPI_Op red_op(const struct ctx *cx, int salt)
{
    int alt = (cx->tid + cx->cid + cx->count + salt) % 2;
    if (cx->ty->red == RED_PAIR)
        return alt ? MPI_MINLOC : MPI_MAXLOC;
    return alt ? MPI_SUM : MPI_MAX;
}

const char *op_name(MPI_Op op)
{
    if (op == MPI_SUM) return "MPI_SUM";
    if (op == MPI_MAX) return "MPI_MAX";
    if (op == MPI_MINLOC) return "MPI_MINLOC";
    if (op == MPI_MAXLOC) return "MPI_MAXLOC";
    return "?";
}
