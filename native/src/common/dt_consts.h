/* dt_consts.h: the MPI standard ABI values of datatype combiners, array orders and
 * distributions, shared by the core (which stores envelopes in these terms) and the
 * backends (which translate them to the vendor's constants). No vendor names here. */
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

#endif
