/* test_lc_piece.c: the cutting of large-count collectives into int-sized pieces
 * (common/lc_piece.h), at the boundaries that matter: INT_MAX + 1 elements, types of
 * odd and zero size, and types larger than one piece. */
#include <limits.h>
#include <stdio.h>

#include "../src/common/lc_piece.h"
#include "check.h"

/* Walk the pieces as the collectives do; return how many, and check each one. */
static int64_t walk(int64_t count, int64_t size, int64_t *covered)
{
    int64_t n = 0, off = 0;
    while (off < count) {
        int len = ism_lc_piece_len(count, off, size);
        CHECK(len >= 1, "count %lld size %lld: empty piece at %lld", (long long)count,
              (long long)size, (long long)off);
        CHECK(len == 1 || (int64_t)len * size <= ISM_LC_PIECE_BYTES,
              "count %lld size %lld: piece of %d elements is over 2^30 bytes", (long long)count,
              (long long)size, len);
        off += len;
        n++;
    }
    *covered = off;
    return n;
}

int main(void)
{
    int64_t covered, n;
    int64_t big = (int64_t)INT_MAX + 1;
    n = walk(big, 1, &covered);
    CHECK(n == 2 && covered == big, "INT_MAX+1 bytes: %lld pieces, %lld covered", (long long)n,
          (long long)covered);
    CHECK(ism_lc_piece_len(big, 0, 1) == 1 << 30, "first piece %d",
          ism_lc_piece_len(big, 0, 1));
    n = walk(big + 4099, 1, &covered);
    CHECK(n == 3 && covered == big + 4099, "2^31+4099 bytes: %lld pieces, %lld covered",
          (long long)n, (long long)covered);
    CHECK(ism_lc_piece_len(big + 4099, big, 1) == 4099, "last piece %d",
          ism_lc_piece_len(big + 4099, big, 1));
    /* 3-byte elements: a piece is the largest whole number of elements in 2^30 bytes */
    CHECK(ism_lc_piece_elems(3) == ((int64_t)1 << 30) / 3, "3-byte piece %lld",
          (long long)ism_lc_piece_elems(3));
    n = walk(big, 3, &covered);
    CHECK(n == 7 && covered == big, "INT_MAX+1 3-byte elements: %lld pieces", (long long)n);
    /* size 0 (an empty type) and types larger than a piece: one element at a time */
    CHECK(ism_lc_piece_elems(0) == 1, "size 0: %lld", (long long)ism_lc_piece_elems(0));
    CHECK(ism_lc_piece_elems((int64_t)3 << 30) == 1, "3 GiB type: %lld",
          (long long)ism_lc_piece_elems((int64_t)3 << 30));
    /* same bytes, different types: pieces end at the same byte offsets */
    CHECK(ism_lc_piece_elems(1) == 4 * ism_lc_piece_elems(4), "1-byte %lld vs 4-byte %lld",
          (long long)ism_lc_piece_elems(1), (long long)ism_lc_piece_elems(4));
    if (!failures)
        printf("test_lc_piece: ok\n");
    return failures != 0;
}
