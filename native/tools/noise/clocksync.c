/* clocksync.c: the clock-map fit (see clocksync.h). Exchanges whose round trip is long
 * were delayed on one leg by an unknown share, so only the fastest ones are trusted. */
#include "clocksync.h"

#include <stdlib.h>
#include <string.h>

static int cmp_rtt(const void *a, const void *b)
{
    const ism_pingpong *x = a, *y = b;
    uint64_t rx = x->t1 - x->t0, ry = y->t1 - y->t0;
    return rx < ry ? -1 : rx > ry;
}

ism_clockmap ism_clocksync_fit(const ism_pingpong *x, size_t n, size_t n_per_phase, double keep)
{
    ism_clockmap m = {0, 1, 0, 0, 0};
    if (!n || !n_per_phase)
        return m;
    ism_pingpong *s = malloc(n * sizeof *s);
    if (!s)
        return m;
    memcpy(s, x, n * sizeof *s);
    /* sums are taken relative to the first exchange, so doubles keep full precision */
    double ref0 = (double)x[0].t0, refr = (double)x[0].tr;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    size_t used = 0;
    m.rtt_min = 1e300;
    for (size_t p = 0; p < n; p += n_per_phase) {
        size_t len = n - p < n_per_phase ? n - p : n_per_phase;
        qsort(s + p, len, sizeof *s, cmp_rtt);
        size_t k = (size_t)((double)len * keep);
        if (k < 1)
            k = 1;
        for (size_t i = p; i < p + k; i++) {
            double rtt = (double)(s[i].t1 - s[i].t0);
            if (rtt < m.rtt_min)
                m.rtt_min = rtt;
            if (rtt > m.rtt_max_used)
                m.rtt_max_used = rtt;
            double xm = ((double)s[i].t0 - ref0) + rtt / 2;
            double yv = (double)s[i].tr - refr;
            sx += xm;
            sy += yv;
            sxx += xm * xm;
            sxy += xm * yv;
            used++;
        }
    }
    free(s);
    double nn = (double)used, den = nn * sxx - sx * sx;
    double b = (used > 1 && den > 0) ? (nn * sxy - sx * sy) / den : 1.0;
    double a_rel = (sy - b * sx) / nn;
    /* back to absolute ticks: y - refr = a_rel + b (x - ref0) */
    m.a = a_rel + refr - b * ref0;
    m.b = b;
    m.used = used;
    return m;
}
