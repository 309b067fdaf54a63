/* bench/copy_skew.c: what a copy costs by the distance between destination and source
 * modulo 4 KiB, memmove against libisthmus's ism_coll_move (native/src/coll/move.c), for
 * issue 8: on this project's AMD Zen 3 machines glibc 2.36's `rep movsb` runs 15x slower
 * when the destination lies 1..31 bytes past the source modulo 4 KiB, the case malloc's
 * 16-byte block header made of every copy from a page-aligned buffer into the
 * collectives' temporaries. Warm buffers, the minimum and median of R repetitions.
 *
 *   cc -O2 -o /tmp/copy_skew bench/copy_skew.c native/src/coll/move.c && /tmp/copy_skew
 *   /tmp/copy_skew [R]    (R repetitions per point, default 200)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../native/src/coll/coll.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* min and median of r timed copies */
static void timed(int lib, char *d, const char *s, size_t n, int r, double *mn, double *md)
{
    double *t = malloc(sizeof *t * (size_t)r);
    if (!t)
        exit(2);
    for (int i = 0; i < r; i++) {
        double t0 = now_us();
        if (lib)
            ism_coll_move(d, s, n);
        else
            memmove(d, s, n);
        __asm__ volatile("" : : "r"(d) : "memory");
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)r, sizeof *t, cmp);
    *mn = t[0];
    *md = t[r / 2];
    free(t);
}

int main(int argc, char **argv)
{
    int r = argc > 1 ? atoi(argv[1]) : 200;
    if (r < 3)
        r = 3;
    const size_t sizes[] = {4096, 16384, 131072, 262144, 1048576};
    const int dist[] = {0, 8, 16, 24, 32, 64, 4080};
    size_t big = 1048576 + 8192;
    char *a = aligned_alloc(4096, big), *b = aligned_alloc(4096, big);
    if (!a || !b)
        return 2;
    memset(a, 1, big);
    memset(b, 2, big);
    printf("# bytes  dst-src%%4096  memmove_min_us  memmove_med_us  ism_coll_move_min_us  "
           "ism_coll_move_med_us\n");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t j = 0; j < sizeof dist / sizeof *dist; j++) {
            double m0, d0, m1, d1;
            timed(0, b + dist[j], a, sizes[i], r, &m0, &d0);
            timed(1, b + dist[j], a, sizes[i], r, &m1, &d1);
            printf("%8zu  %12d  %14.2f  %14.2f  %20.2f  %20.2f\n", sizes[i], dist[j], m0, d0, m1,
                   d1);
        }
    free(a);
    free(b);
    return 0;
}
