/*
 * types.c - the datatypes of the conformance suite.
 *
 * Predefined C types (each basic type, the fixed-width types, C_BOOL,
 * WCHAR), the pair types of MINLOC/MAXLOC, and derived types from every
 * constructor: contiguous, vector, hvector, indexed (with holes), hindexed,
 * indexed_block, struct mixing char/double/int with holes, the same struct
 * resized to a larger extent, a resized type with a negative lower bound,
 * subarray, a vector of structs (nested) and a dup.  Each entry says
 * whether predefined reductions apply (integer/floating types: SUM and MAX;
 * pair types: MINLOC and MAXLOC) and how to read its elements' values.
 */
#include "conf.h"

#define P(n, t, r, k) {n, t, r, k, 0}
#define D(n) {n, MPI_DATATYPE_NULL, RED_NONE, EK_NONE, 1}

struct type_def type_defs[] = {
    P("char", MPI_CHAR, RED_NONE, EK_NONE),
    P("signed_char", MPI_SIGNED_CHAR, RED_ARITH, EK_SCHAR),
    P("unsigned_char", MPI_UNSIGNED_CHAR, RED_ARITH, EK_UCHAR),
    P("byte", MPI_BYTE, RED_NONE, EK_NONE),
    P("short", MPI_SHORT, RED_ARITH, EK_SHORT),
    P("unsigned_short", MPI_UNSIGNED_SHORT, RED_ARITH, EK_USHORT),
    P("int", MPI_INT, RED_ARITH, EK_INT),
    P("unsigned", MPI_UNSIGNED, RED_ARITH, EK_UINT),
    P("long", MPI_LONG, RED_ARITH, EK_LONG),
    P("unsigned_long", MPI_UNSIGNED_LONG, RED_ARITH, EK_ULONG),
    P("long_long", MPI_LONG_LONG, RED_ARITH, EK_LLONG),
    P("unsigned_long_long", MPI_UNSIGNED_LONG_LONG, RED_ARITH, EK_ULLONG),
    P("float", MPI_FLOAT, RED_ARITH, EK_FLOAT),
    P("double", MPI_DOUBLE, RED_ARITH, EK_DOUBLE),
    P("long_double", MPI_LONG_DOUBLE, RED_ARITH, EK_LDOUBLE),
    P("int8", MPI_INT8_T, RED_ARITH, EK_I8),
    P("int16", MPI_INT16_T, RED_ARITH, EK_I16),
    P("int32", MPI_INT32_T, RED_ARITH, EK_I32),
    P("int64", MPI_INT64_T, RED_ARITH, EK_I64),
    P("uint8", MPI_UINT8_T, RED_ARITH, EK_U8),
    P("uint16", MPI_UINT16_T, RED_ARITH, EK_U16),
    P("uint32", MPI_UINT32_T, RED_ARITH, EK_U32),
    P("uint64", MPI_UINT64_T, RED_ARITH, EK_U64),
    P("c_bool", MPI_C_BOOL, RED_NONE, EK_NONE),
    P("wchar", MPI_WCHAR, RED_NONE, EK_NONE),
    P("float_int", MPI_FLOAT_INT, RED_PAIR, EK_FLOAT_INT),
    P("double_int", MPI_DOUBLE_INT, RED_PAIR, EK_DOUBLE_INT),
    P("long_int", MPI_LONG_INT, RED_PAIR, EK_LONG_INT),
    P("2int", MPI_2INT, RED_PAIR, EK_2INT),
    P("short_int", MPI_SHORT_INT, RED_PAIR, EK_SHORT_INT),
    P("long_double_int", MPI_LONG_DOUBLE_INT, RED_PAIR, EK_LDOUBLE_INT),
    D("contig3_int"),       /* 3 contiguous ints */
    D("vector_double"),     /* 3 blocks of 2 doubles, stride 3 */
    D("hvector_short"),     /* 2 blocks of 3 shorts, stride 10 bytes */
    D("indexed_int"),       /* blocks {1,2} at {0,3}: holes */
    D("hindexed_float"),    /* blocks {2,1} at bytes {0,20} */
    D("indexed_block_long"),/* blocks of 2 longs at {1,4,7} */
    D("struct_cdi"),        /* char@0 double@8 int@20: holes */
    D("struct_resized"),    /* struct_cdi with extent 40 */
    D("resized_neg_lb"),    /* int with lb -8, extent 16 */
    D("subarray_int"),      /* 2x2 of a 3x4 int array at (1,1) */
    D("vector_of_struct"),  /* 2 blocks of 1 struct_cdi, stride 2 (nested) */
    D("dup_struct"),        /* MPI_Type_dup(struct_cdi) */
    D("contig2_double_int"),/* 2 contiguous MPI_DOUBLE_INT */
};
const int n_type_defs = (int)(sizeof type_defs / sizeof type_defs[0]);

static MPI_Datatype *slot(const char *name)
{
    for (int i = 0; i < n_type_defs; i++) {
        const char *a = type_defs[i].name, *b = name;
        while (*a && *a == *b)
            a++, b++;
        if (*a == *b)
            return &type_defs[i].dt;
    }
    return NULL;
}

static void commit(const char *name, MPI_Datatype t)
{
    MPI_Type_commit(&t);
    MPI_Type_set_name(t, (char *)name);
    *slot(name) = t;
}

void types_build(void)
{
    MPI_Datatype t, st;
    MPI_Type_contiguous(3, MPI_INT, &t);
    commit("contig3_int", t);
    MPI_Type_vector(3, 2, 3, MPI_DOUBLE, &t);
    commit("vector_double", t);
    MPI_Type_create_hvector(2, 3, 10, MPI_SHORT, &t);
    commit("hvector_short", t);
    {
        int bl[2] = {1, 2}, dp[2] = {0, 3};
        MPI_Type_indexed(2, bl, dp, MPI_INT, &t);
        commit("indexed_int", t);
    }
    {
        int bl[2] = {2, 1};
        MPI_Aint dp[2] = {0, 20};
        MPI_Type_create_hindexed(2, bl, dp, MPI_FLOAT, &t);
        commit("hindexed_float", t);
    }
    {
        int dp[3] = {1, 4, 7};
        MPI_Type_create_indexed_block(3, 2, dp, MPI_LONG, &t);
        commit("indexed_block_long", t);
    }
    {
        int bl[3] = {1, 1, 1};
        MPI_Aint dp[3] = {0, 8, 20};
        MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
        MPI_Type_create_struct(3, bl, dp, ty, &st);
        MPI_Datatype c;
        MPI_Type_dup(st, &c);
        commit("struct_cdi", c);
        MPI_Type_create_resized(st, 0, 40, &t);
        commit("struct_resized", t);
        MPI_Type_vector(2, 1, 2, st, &t);
        commit("vector_of_struct", t);
        MPI_Type_dup(st, &t);
        commit("dup_struct", t);
        MPI_Type_free(&st);
    }
    MPI_Type_create_resized(MPI_INT, -8, 16, &t);
    commit("resized_neg_lb", t);
    {
        int sizes[2] = {3, 4}, sub[2] = {2, 2}, start[2] = {1, 1};
        MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t);
        commit("subarray_int", t);
    }
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &t);
    commit("contig2_double_int", t);
}

void types_free(void)
{
    for (int i = 0; i < n_type_defs; i++)
        if (type_defs[i].derived && type_defs[i].dt != MPI_DATATYPE_NULL)
            MPI_Type_free(&type_defs[i].dt);
}
