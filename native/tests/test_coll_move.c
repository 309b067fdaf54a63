/* test_coll_move.c: the collective layer's byte copies (src/coll/move.c) without MPI:
 * every distance modulo 4 KiB that takes the backward path and its neighbours, sizes
 * around the 2 KiB threshold and the 64-byte block, overlapping ranges in both
 * directions, each against memmove into a second buffer (also past the size limit, so
 * the copy loop is exercised only where ism_coll_skew_limit() allows it: AMD x86); which copies count as skewed;
 * and the temporaries' page offset (ism_coll_place). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/coll/coll.h"
#include "check.h"

#define SPAN (3 * 4096 + 70000)

static unsigned char *a, *b; /* the buffer under test, the reference */

static void fill(void)
{
    for (size_t i = 0; i < SPAN; i++)
        a[i] = b[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
}

/* copy n bytes from offset s to offset d of the buffer, both ways, and compare all */
static void one(size_t d, size_t s, size_t n)
{
    fill();
    uint64_t before = ism_coll_temps.skewed;
    ism_coll_move(a + d, a + s, n);
    memmove(b + d, b + s, n);
    CHECK(!memcmp(a, b, SPAN), "copy of %zu bytes from %zu to %zu differs from memmove", n, s,
          d);
    /* the backward path is taken exactly where it should be, overlapping or not, except
     * where dst lies below src inside it (memmove's forward copy is the right one) */
    int skewed = ism_coll_skewed(a + d, a + s, n) && !(d < s && s - d < n);
    CHECK(ism_coll_temps.skewed - before == (uint64_t)skewed,
          "copy of %zu bytes from %zu to %zu: counted %llu skewed, expected %d", n, s, d,
          (unsigned long long)(ism_coll_temps.skewed - before), skewed);
}

/* the backward path itself, at every size and distance, on any CPU */
static void backward(size_t d, size_t s, size_t n)
{
    fill();
    ism_coll_move_backward(a + d, a + s, n);
    memmove(b + d, b + s, n);
    CHECK(!memcmp(a, b, SPAN), "backward copy of %zu bytes from %zu to %zu differs", n, s, d);
}

static void copies(void)
{
    const size_t sizes[] = {0, 1, 63, 64, 65, 2047, 2048, 2049, 4095, 4096, 4160, 65536 + 17};
    const size_t dist[] = {0, 1, 8, 15, 16, 17, 31, 32, 63, 64, 65, 4032, 4080, 4095, 4096,
                           4097, 4096 + 16, 8192 + 40};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t j = 0; j < sizeof dist / sizeof *dist; j++) {
            size_t n = sizes[i], k = dist[j];
            one(100 + k, 100, n); /* dst above src by k: overlapping when n > k */
            one(100, 100 + k, n); /* dst below src by k */
            backward(100 + k, 100, n);
            if (k >= n)
                backward(100, 100 + k, n); /* below and apart: backwards is right too */
        }
    /* the distances that matter, apart (on AMD x86 only: elsewhere nothing is skewed) */
    size_t lim = ism_coll_skew_limit();
    int amd = lim > 0;
    CHECK(!amd || lim >= 4096, "the limit %zu is below the sizes that matter", lim);
    CHECK(ism_coll_skewed(a + 16, a, 4096) == amd, "16 bytes past the source is skewed");
    CHECK(ism_coll_skewed(a + 4096 + 16, a, 4096) == amd, "modulo 4 KiB");
    CHECK(ism_coll_skewed(a + 1, a, 4096) == amd && ism_coll_skewed(a + 31, a, 4096) == amd,
          "1 and 31 bytes past are");
    CHECK(!ism_coll_skewed(a + 32, a, 4096), "32 bytes past is not (full speed measured)");
    CHECK(!ism_coll_skewed(a, a + 16, 4096), "16 bytes before the source is not");
    CHECK(!ism_coll_skewed(a + 4096, a, 4096), "a whole page is not");
    CHECK(!ism_coll_skewed(a + 16, a, 2047), "below 2 KiB nothing is");
    CHECK(!amd || !ism_coll_skewed(a + 16, a, lim), "from the limit on nothing is");
}

static void place(void)
{
    CHECK(ism_coll_place(NULL) == 0, "no buffer: page-aligned");
    CHECK(ism_coll_place((void *)(uintptr_t)0x7f0000001010) == 16, "malloc's offset kept");
    CHECK(ism_coll_place((void *)(uintptr_t)0x7f0000002000) == 0, "page-aligned kept");
    CHECK(ism_coll_place((void *)(uintptr_t)0x7f0000003ff8) == 4080, "rounded down to 16");
    char *p = ism_coll_page_alloc(5000);
    CHECK(p && ((uintptr_t)p & 4095) == 0, "page_alloc: page-aligned");
    if (p)
        memset(p, 1, 8192); /* rounded up to whole pages: ASan checks the length */
    free(p);
}

int main(void)
{
    a = malloc(SPAN);
    b = malloc(SPAN);
    if (!a || !b)
        return 2;
    copies();
    place();
    free(a);
    free(b);
    printf("test_coll_move: %d failures\n", failures);
    return failures ? 1 : 0;
}
