/* move.c: the byte copies of the collective layer (a schedule's staging copies, the
 * two-level and pipelined phases' copies), and where the executor places its
 * temporaries so that those copies and the vendor's run at full speed.
 *
 * Why this exists (issue 8): glibc (2.36 here) copies from ~2 KiB up to its
 * non-temporal threshold with `rep movsb`, and on AMD Zen 3 (this project's machines)
 * that runs at 3 GB/s instead of 45-50 when the destination lies 1..31 bytes past the
 * source modulo 4 KiB (page aliasing; glibc bug 30994, where glibc 2.39 avoids
 * `rep movsb` for that distance). malloc puts large blocks 16 bytes into a page, so a
 * copy from a page-aligned buffer into a malloc'd temporary is exactly that case: a
 * 128 KiB copy took 42 us instead of 2.6. Such a copy here goes backwards in 64-byte
 * blocks, whose loads never follow a store to the same page offset (5 us for 128 KiB on
 * the same machine, any distance); every other copy is memmove's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

/* glibc's `rep movsb` starts at 2112 bytes with FSRM (4096 with AVX2 alone); below that
 * its vector loop is not hurt */
#define SKEW_FROM 2048
#define SKEW_MAX 63 /* glibc 2.39's test; 1..31 measured slow here */

ism_coll_temp_counts ism_coll_temps;

int ism_coll_skewed(const void *dst, const void *src, size_t n)
{
    uintptr_t skew = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    return n >= SKEW_FROM && skew >= 1 && skew <= SKEW_MAX;
}

void ism_coll_move(void *dst, const void *src, size_t n)
{
    uintptr_t d0 = (uintptr_t)dst, s0 = (uintptr_t)src;
    /* backwards is wrong only where dst lies below src inside it */
    if (!ism_coll_skewed(dst, src, n) || (d0 < s0 && s0 - d0 < n)) {
        memmove(dst, src, n);
        return;
    }
    ism_coll_temps.skewed++;
    char *d = dst;
    const char *s = src;
    size_t o = n;
    while (o >= 64) {
        unsigned char t[64];
        o -= 64;
        memcpy(t, s + o, 64);
        memcpy(d + o, t, 64);
    }
    if (o)
        memmove(d, s, o);
}

/* The page offset the executor gives its temporaries: the buffer's own, kept to a
 * multiple of 16 (the alignment malloc guarantees, and any type's), so that copies
 * between it and the temporaries, and the vendor's between ranks that place theirs
 * alike, are at distances the schedule's block offsets set. */
size_t ism_coll_place(const void *ref)
{
    return ref ? (size_t)((uintptr_t)ref & 4095 & ~(uintptr_t)15) : 0;
}

char *ism_coll_page_alloc(int64_t need)
{
    ism_coll_temps.allocs++;
    return aligned_alloc(4096, (size_t)((need + 4095) & ~(int64_t)4095));
}
