/* dtmap.h: flattened type maps, the engine behind derived datatypes.
 *
 * A type map is a datatype reduced to what moving its data needs: the byte blocks of
 * one element in type-map order (adjacent blocks merged), the runs of basic elements
 * (offset, predefined type, how many) for MPI_Get_elements and external32, and the
 * bounds. It is built from an envelope (combiner + integers + addresses + old types,
 * exactly the arrays MPI_Type_get_contents returns) so one description serves the
 * vendor, the envelope queries and packing. This header and typemap.c/pack.c depend on
 * neither MPI nor the vendor, so they are unit-tested on their own (tests/test_dtmap.c).
 */
#ifndef ISM_DTMAP_H
#define ISM_DTMAP_H

#include <stddef.h>
#include <stdint.h>

#include "../common/dt_consts.h"

/* Predefined kinds are indexed by their ABI handle value minus 0x200 (as ism_dt_table). */
#define ISM_KIND_COUNT 0x100

/* Errors of the builders (negative; the core maps them to MPI error classes). */
enum {
    ISM_TMAP_OK = 0,
    ISM_TMAP_ENOMEM = -1,  /* malloc failed */
    ISM_TMAP_ETOOBIG = -2, /* more than ISM_TMAP_MAX_ENTRIES blocks or runs */
    ISM_TMAP_EARG = -3,    /* arguments that describe no type (e.g. darray grid mismatch) */
    ISM_TMAP_EKIND = -4    /* a basic type without an external32 form */
};

/* Bounded memory: a flattened map holds at most this many blocks (and runs). */
#define ISM_TMAP_MAX_ENTRIES (1 << 22)

typedef struct ism_blk {
    int64_t off, len;
} ism_blk;

typedef struct ism_erun {
    int64_t off; /* first element */
    int64_t n;   /* elements, back to back (stride = the kind's native size) */
    int kind;    /* predefined kind (ABI handle - 0x200), never a pair type */
} ism_erun;

typedef struct ism_tmap {
    int64_t size;              /* bytes of data per element (MPI_Type_size) */
    int64_t lb, ub;            /* extent = ub - lb */
    int64_t true_lb, true_ub;  /* bounds of the data itself */
    int64_t nelem;             /* basic elements per element */
    int64_t nblk, nrun;
    ism_blk *blk;
    ism_erun *run;
    int64_t ext32;             /* external32 bytes per element, -1 if some kind has none */
    int align;                 /* largest alignment of a basic kind (struct padding) */
} ism_tmap;

/* The basic kinds: native size, external32 size and conversion class. */
typedef struct ism_kind {
    int size;   /* native bytes; 0: not a basic kind (pair or unknown) */
    int ext32;  /* external32 bytes (0: none) */
    int cls;    /* ISM_KC_* */
    int align;
} ism_kind;

enum {
    ISM_KC_RAW = 1, /* bytes as they are (char, byte, packed, bool) */
    ISM_KC_INT,     /* signed integer: big-endian, sign-extended when widened */
    ISM_KC_UINT,    /* unsigned integer */
    ISM_KC_FLOAT,   /* IEEE binary16/32/64/128: big-endian */
    ISM_KC_COMPLEX, /* two IEEE halves */
    ISM_KC_LDOUBLE, /* C long double -> IEEE binary128 */
    ISM_KC_LDCOMPLEX
};

const ism_kind *ism_kind_info(int kind);

/* The map of a predefined type (pair types get two runs). Returns ISM_TMAP_EARG for
 * an index that is no predefined type. */
int ism_tmap_predefined(int kind, ism_tmap *out);

/* The MINLOC/MAXLOC pair kind a map is made of, or -1: its basic elements, in type-map
 * order, are a pair's value and index at the pair's offsets, pair after pair. starts (NULL,
 * or room for nelem / 2) receives where each pair of one element begins. A map of ints is
 * taken as MPI_2INT (same layout as MPI_2INTEGER), of floats as MPI_2REAL. */
int ism_tmap_pair(const ism_tmap *m, int64_t *starts);

/* Builds the map of a derived type from its envelope; types[] are the old types' maps
 * (one for every combiner but STRUCT, which has ints[0] of them). ints/aints follow
 * MPI_Type_get_contents, the integers widened to 64 bits (so the large-count constructors'
 * values fit: the _c forms put them where the int forms have them). */
int ism_tmap_build(int combiner, const int64_t *ints, const int64_t *aints,
                   const ism_tmap *const *types, ism_tmap *out);
void ism_tmap_free(ism_tmap *m);
int ism_tmap_copy(const ism_tmap *src, ism_tmap *out);

/* Number of (ints, aints, types) a combiner's envelope holds, from its first ints. */
int ism_envelope_sizes(int combiner, const int64_t *ints, int *ni, int *na, int *nt);

/* pack.c: native layout. pack writes count*size bytes; unpack reads nbytes of packed
 * data (a partial last element is allowed: a truncated or short message). */
void ism_tmap_pack(const ism_tmap *m, const void *buf, int64_t count, void *out);
void ism_tmap_unpack(const ism_tmap *m, const void *in, int64_t nbytes, void *buf);
/* Packing a stream piece by piece (rendezvous chunks): a cursor is a position in the
 * packed stream of count elements; seek sets it to a byte offset, and the _at calls move
 * n bytes and advance it. Pieces in order cost no search. */
typedef struct ism_tcursor {
    int64_t elem, blk, in; /* element, block in the element, byte in the block */
} ism_tcursor;
void ism_tcursor_seek(const ism_tmap *m, int64_t off, ism_tcursor *c);
void ism_tmap_pack_at(const ism_tmap *m, const void *buf, ism_tcursor *c, int64_t n, void *out);
void ism_tmap_unpack_at(const ism_tmap *m, const void *in, int64_t n, void *buf, ism_tcursor *c);

/* Basic elements in the first nbytes of packed data; -1 if nbytes ends inside one. */
int64_t ism_tmap_elements(const ism_tmap *m, int64_t nbytes);

/* external32: big-endian, standard sizes. Both return ISM_TMAP_EKIND for a kind with
 * no external32 form (then nothing is written). */
int ism_tmap_pack_ext32(const ism_tmap *m, const void *buf, int64_t count, void *out);
int ism_tmap_unpack_ext32(const ism_tmap *m, const void *in, int64_t count, void *buf);

#endif
