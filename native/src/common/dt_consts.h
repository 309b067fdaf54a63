/* dt_consts.h: the MPI standard ABI values of datatype combiners, array orders and
 * distributions, shared by the core (which stores envelopes in these terms) and the
 * backends (which translate them to the vendor's constants); and the table indices of the
 * predefined types and operations that the core and the gateway use by name. No vendor
 * names here. */
#ifndef ISM_DT_CONSTS_H
#define ISM_DT_CONSTS_H

enum {
    ISM_ORDER_C = 12,
    ISM_ORDER_FORTRAN = 15,
    ISM_DISTRIBUTE_NONE = 16,
    ISM_DISTRIBUTE_BLOCK = 17,
    ISM_DISTRIBUTE_CYCLIC = 18,
    ISM_DISTRIBUTE_DFLT_DARG = 19,
    ISM_COMBINER_NAMED = 101,
    ISM_COMBINER_DUP = 102,
    ISM_COMBINER_CONTIGUOUS = 103,
    ISM_COMBINER_VECTOR = 104,
    ISM_COMBINER_HVECTOR = 105,
    ISM_COMBINER_INDEXED = 106,
    ISM_COMBINER_HINDEXED = 107,
    ISM_COMBINER_INDEXED_BLOCK = 108,
    ISM_COMBINER_HINDEXED_BLOCK = 109,
    ISM_COMBINER_STRUCT = 110,
    ISM_COMBINER_SUBARRAY = 111,
    ISM_COMBINER_DARRAY = 112,
    ISM_COMBINER_RESIZED = 116
};

/* Indices into the predefined type tables (ism_dt_table, the backend's dt[]): the ABI
 * handle value minus 0x200 (ISM_DT_BASE). */
enum {
    ISM_KIND_PACKED = 0x07, /* MPI_PACKED */
    ISM_KIND_INT = 0x09,    /* MPI_INT */
    ISM_KIND_BYTE = 0x47,   /* MPI_BYTE */
    ISM_KIND_INT64 = 0x58   /* MPI_INT64_T */
};

/* Indices into the predefined operation tables (ism_op_table, the backend's op[]): the ABI
 * handle value minus 0x20 (ISM_OP_BASE). */
enum {
    ISM_OPI_MIN = 0x02,     /* MPI_MIN */
    ISM_OPI_MAX = 0x03,     /* MPI_MAX */
    ISM_OPI_MINLOC = 0x18,  /* MPI_MINLOC */
    ISM_OPI_MAXLOC = 0x19,  /* MPI_MAXLOC */
    ISM_OPI_REPLACE = 0x1c, /* MPI_REPLACE */
    ISM_OPI_NO_OP = 0x1d    /* MPI_NO_OP */
};

#endif
