/* lc_piece.h (common): how a large-count elementwise collective is cut into calls of
 * the int form. Pieces are counted in bytes of the type's signature (its size, not its
 * extent), so ranks that describe the same data with different types (a broadcast may)
 * cut it at the same bytes; every piece's element count fits an int. Kept apart so the
 * arithmetic is checked without MPI (native/tests/test_lc_piece.c). */
#ifndef ISM_COMMON_LC_PIECE_H
#define ISM_COMMON_LC_PIECE_H

#include <stdint.h>

#define ISM_LC_PIECE_BYTES ((int64_t)1 << 30)

/* Elements per piece for a type of `size` bytes: at most 2^30 bytes, at least one element. */
static inline int64_t ism_lc_piece_elems(int64_t size)
{
    return size <= 0 || size >= ISM_LC_PIECE_BYTES ? 1 : ISM_LC_PIECE_BYTES / size;
}

/* The piece that starts at element `off` of `count`: its element count. */
static inline int ism_lc_piece_len(int64_t count, int64_t off, int64_t size)
{
    int64_t step = ism_lc_piece_elems(size), left = count - off;
    return (int)(left < step ? left : step);
}

#endif
