/* move.c: the byte copies of the collective layer (a schedule's staging copies, the
 * two-level and pipelined phases' copies), and where the executor places its
 * temporaries so that those copies and the vendor's run at full speed.
 *
 * Why this exists (issue 8): glibc 2.36 copies from 2112 bytes up to, on AMD, the L2's
 * size with `rep movsb` (Zen 3 announces FSRM), and on this project's Zen 3 machines that
 * runs at 3 GB/s instead of 45-50 when the destination lies 1..31 bytes past the source
 * modulo 4 KiB (measured by bench/copy_skew.c; a known weakness of Zen 3's `rep movsb`
 * with misaligned data, which newer glibc releases are said to avoid: not checked here).
 * malloc puts large blocks 16 bytes into a page, so a copy from a page-aligned buffer
 * into the executor's malloc'd temporaries was exactly that case: a 128 KiB copy took
 * 43 us instead of 2.6. Such a copy here goes backwards in 64-byte blocks (5 us for
 * 128 KiB at any distance); every other copy is memmove's.
 */
#define _DEFAULT_SOURCE /* sysconf's cache sizes (glibc) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"

/* glibc's `rep movsb` starts at 2112 bytes with FSRM (4096 with AVX2 alone) and, on
 * AMD, stops at the L2's size (512 KiB here, measured: 504 KiB at a distance of 16 took
 * 173 us, 512 KiB 18); below and above it memmove is not hurt, and above it the
 * backward path would cost 1.45x memmove's (41 us against 28 for 1 MiB). Distances
 * 1..31 are the slow ones measured (32 and up run at full speed). Only AMD's x86 is
 * known to need it (measured on Zen 3; glibc's fix names Zen 3 and 4). */
#define SKEW_FROM 2048
#define SKEW_MAX 31

static long skew_upto = -1; /* sizes below which the skewed path applies; 0: never */

size_t ism_coll_skew_limit(void)
{
    /* computed once; threads that race here compute the same value (atomics keep the
     * race defined under MPI_THREAD_MULTIPLE) */
    long upto = __atomic_load_n(&skew_upto, __ATOMIC_RELAXED);
    if (upto < 0) {
        long l2 = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        if (__builtin_cpu_is("amd")) {
#ifdef _SC_LEVEL2_CACHE_SIZE
            l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
            if (l2 <= 0)
                l2 = 512 << 10;
        }
#endif
        upto = l2;
        __atomic_store_n(&skew_upto, upto, __ATOMIC_RELAXED);
    }
    return (size_t)upto;
}

ism_coll_temp_counts ism_coll_temps;

int ism_coll_skewed(const void *dst, const void *src, size_t n)
{
    uintptr_t skew = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    return n >= SKEW_FROM && n < ism_coll_skew_limit() && skew >= 1 && skew <= SKEW_MAX;
}

void ism_coll_move(void *dst, const void *src, size_t n)
{
    uintptr_t d0 = (uintptr_t)dst, s0 = (uintptr_t)src;
    /* backwards is wrong only where dst lies below src inside it */
    if (!ism_coll_skewed(dst, src, n) || (d0 < s0 && s0 - d0 < n)) {
        memmove(dst, src, n);
        return;
    }
    __atomic_fetch_add(&ism_coll_temps.skewed, 1, __ATOMIC_RELAXED); /* MPI_THREAD_MULTIPLE */
    ism_coll_move_backward(dst, src, n);
}

void ism_coll_move_backward(void *dst, const void *src, size_t n)
{
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
    __atomic_fetch_add(&ism_coll_temps.allocs, 1, __ATOMIC_RELAXED);
    return aligned_alloc(4096, (size_t)((need + 4095) & ~(int64_t)4095));
}
