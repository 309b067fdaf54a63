/* clocksync.c: the clock-map fit (see clocksync.h). Exchanges whose round trip is long
 * were delayed on one leg by an unknown share, so only the fastest ones are trusted. */
#include "clocksync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_rtt(const void *a, const void *b)
{
    const ism_pingpong *x = a, *y = b;
    uint64_t rx = x->t1 - x->t0, ry = y->t1 - y->t0;
    return rx < ry ? -1 : rx > ry;
}

/* The bound on the line's error at x: it is sum_i w_i(x) e_i with |e_i| <= rtt_i / 2, and
 * w_i(x) = 1/n + (x - xbar)(x_i - xbar) / Sxx for a fitted slope (1/n for a fixed one). */
static double err_at(double x, const double *xm, const double *rtt, size_t n, double xbar, double sxx)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1.0 / (double)n + (sxx > 0 ? (x - xbar) * (xm[i] - xbar) / sxx : 0.0);
        e += fabs(w) * rtt[i] / 2;
    }
    return e;
}

ism_clockmap ism_clocksync_fit(const ism_pingpong *x, size_t n, size_t n_per_phase, double keep)
{
    ism_clockmap m = {0, 1, 0, 0, 0, 0, 0};
    if (!n || !n_per_phase)
        return m;
    ism_pingpong *s = malloc(n * sizeof *s);
    double *uxm = malloc(n * sizeof *uxm), *urtt = malloc(n * sizeof *urtt);
    if (!s || !uxm || !urtt) {
        free(s);
        free(uxm);
        free(urtt);
        return m;
    }
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
            uxm[used] = xm;
            urtt[used] = rtt;
            sx += xm;
            sy += yv;
            sxx += xm * xm;
            sxy += xm * yv;
            used++;
        }
    }
    free(s);
    double nn = (double)used, den = nn * sxx - sx * sx;
    int sloped = used > 1 && den > 0;
    double b = sloped ? (nn * sxy - sx * sy) / den : 1.0;
    double a_rel = (sy - b * sx) / nn;
    /* |error| is convex in x: its largest between the first and last exchange is at one
     * of them */
    double lo = uxm[0], hi = uxm[0], xbar = sx / nn, ssx = sloped ? den / nn : 0.0;
    for (size_t i = 1; i < used; i++) {
        lo = uxm[i] < lo ? uxm[i] : lo;
        hi = uxm[i] > hi ? uxm[i] : hi;
    }
    double e_lo = err_at(lo, uxm, urtt, used, xbar, ssx), e_hi = err_at(hi, uxm, urtt, used, xbar, ssx);
    m.err_max = e_lo > e_hi ? e_lo : e_hi;
    m.err_first = err_at(0.0, uxm, urtt, used, xbar, ssx); /* x[0].t0 is the origin here */
    free(uxm);
    free(urtt);
    /* back to absolute ticks: y - refr = a_rel + b (x - ref0) */
    m.a = a_rel + refr - b * ref0;
    m.b = b;
    m.used = used;
    return m;
}
