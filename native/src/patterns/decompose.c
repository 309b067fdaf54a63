/* decompose.c (patterns): a 1-D domain (or the rows of a 2-D one) split over the ranks
 * of several sites by measured speed and communication time (the DD_Filtre2 case of
 * seed 000, section 5: three clusters of different speed joined by 71-808 kB/s links).
 *
 * Ranks get contiguous ranges in rank order, so with ranks numbered site by site (as
 * isthmus numbers them) only the ranges at site boundaries exchange halos over the WAN.
 * A rebalance takes every rank's measured compute time for its cells and its time spent
 * communicating per step, and finds the step time T at which
 *     sum over ranks of speed_r * max(0, T - comm_r) = n   (speed_r = cells_r / compute_r),
 * so a rank that waits longer on its links (a site boundary on a slow link) gets fewer
 * cells, and a faster site more. It moves only when the predicted step time, at best the
 * longer of T and the longest link time, improves by more than the tolerance, since
 * moving cells across the WAN costs too, and then goes
 * half-way from the current split to the balanced one, so that one window of noisy
 * measurements cannot move everything; the cells move with one MPI_Alltoallv of the
 * overlaps of old and new ranges.
 */
#include "patterns.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ism_pat_decomp {
    MPI_Comm comm;
    int rank, size;
    long n;
    long *first;   /* [size + 1]: rank r holds [first[r], first[r + 1]) */
    double *speed; /* [size]: cells per second, last measured (or the initial weights) */
};

/* first[] from per-rank shares (>= 0, not all 0): each rank at least one cell, the rest
 * in proportion, rounded on the running sum so the ranges tile [0, n). */
static void lay_out(long *first, const double *share, int size, long n)
{
    double total = 0, run = 0;
    for (int r = 0; r < size; r++)
        total += share[r];
    long spare = n - size;
    first[0] = 0;
    for (int r = 0; r < size; r++) {
        run += share[r];
        long upto = total > 0 ? lround((double)spare * run / total) : spare * (r + 1) / size;
        first[r + 1] = upto + r + 1;
    }
    first[size] = n;
}

int ism_pat_decomp_create(MPI_Comm comm, long n, const double *weight, ism_pat_decomp **out)
{
    *out = NULL;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (n < size)
        return pat_fail(MPI_ERR_ARG, "rank %d: ism_pat_decomp_create of %ld cells over %d "
                        "ranks; every rank needs at least one cell", rank, n, size);
    for (int r = 0; weight && r < size; r++)
        if (!(weight[r] > 0) || !isfinite(weight[r]))
            return pat_fail(MPI_ERR_ARG, "rank %d: ism_pat_decomp_create: weight of rank %d is "
                            "%g; weights must be positive and finite", rank, r, weight[r]);
    ism_pat_decomp *d = calloc(1, sizeof(*d));
    long *first = malloc(sizeof(long) * ((size_t)size + 1));
    double *speed = malloc(sizeof(double) * (size_t)size);
    if (!d || !first || !speed) {
        free(d), free(first), free(speed);
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for a decomposition over %d ranks",
                        rank, size);
    }
    *d = (ism_pat_decomp){.comm = MPI_COMM_NULL, .rank = rank, .size = size, .n = n, .first = first, .speed = speed};
    for (int r = 0; r < size; r++)
        speed[r] = weight ? weight[r] : 1.0;
    /* the same weights everywhere, whatever a rank passed: rank 0's */
    int rc = MPI_Comm_dup(comm, &d->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(speed, size, MPI_DOUBLE, 0, d->comm);
    if (rc != MPI_SUCCESS) {
        ism_pat_decomp_free(&d);
        return pat_fail(rc, "rank %d: creating a decomposition failed", rank);
    }
    lay_out(first, speed, size, n);
    *out = d;
    return MPI_SUCCESS;
}

void ism_pat_decomp_range(const ism_pat_decomp *d, long *first, long *count)
{
    *first = d->first[d->rank];
    *count = d->first[d->rank + 1] - d->first[d->rank];
}

const long *ism_pat_decomp_firsts(const ism_pat_decomp *d)
{
    return d->first;
}

/* The step time T that the measured speeds and communication times allow: bisection on
 * the monotone sum of cells the ranks finish by T. */
static double balanced_time(const double *speed, const double *comm, int size, long n)
{
    double lo = 0, hi = 1;
    for (;;) {
        double cells = 0;
        for (int r = 0; r < size; r++)
            cells += speed[r] * fmax(0, hi - comm[r]);
        if (cells >= (double)n || hi > 1e12)
            break;
        hi *= 2;
    }
    for (int i = 0; i < 100; i++) {
        double mid = (lo + hi) / 2, cells = 0;
        for (int r = 0; r < size; r++)
            cells += speed[r] * fmax(0, mid - comm[r]);
        if (cells >= (double)n)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* Moves the cells from the old ranges to the new ones (cell_bytes each). */
static int move_cells(ism_pat_decomp *d, const long *old, void **data, size_t cell_bytes)
{
    int size = d->size, me = d->rank;
    int *sc = calloc((size_t)size * 4, sizeof(int)), *sd = sc + size, *rc_ = sc + 2 * size,
        *rd = sc + 3 * size;
    long nf = d->first[me], nl = d->first[me + 1], of = old[me], ol = old[me + 1];
    char *in = malloc((size_t)(nl - nf) * cell_bytes + 1);
    if (!sc || !in) {
        free(sc), free(in);
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory to move %ld cells", me, nl - nf);
    }
    for (int q = 0; q < size; q++) {
        long a = of > d->first[q] ? of : d->first[q], b = ol < d->first[q + 1] ? ol : d->first[q + 1];
        long c = nf > old[q] ? nf : old[q], e = nl < old[q + 1] ? nl : old[q + 1];
        double sbytes = b > a ? (double)(b - a) * (double)cell_bytes : 0;
        double rbytes = e > c ? (double)(e - c) * (double)cell_bytes : 0;
        if (sbytes > INT_MAX || rbytes > INT_MAX || (double)(ol - of) * cell_bytes > INT_MAX ||
            (double)(nl - nf) * cell_bytes > INT_MAX) {
            free(sc), free(in);
            return pat_fail(MPI_ERR_COUNT, "rank %d: moving cells to or from rank %d needs "
                            "more than %d bytes in one piece", me, q, INT_MAX);
        }
        sc[q] = (int)sbytes;
        sd[q] = b > a ? (int)((a - of) * (long)cell_bytes) : 0;
        rc_[q] = (int)rbytes;
        rd[q] = e > c ? (int)((c - nf) * (long)cell_bytes) : 0;
    }
    int rc = MPI_Alltoallv(*data, sc, sd, MPI_BYTE, in, rc_, rd, MPI_BYTE, d->comm);
    free(sc);
    if (rc != MPI_SUCCESS) {
        free(in);
        return pat_fail(rc, "rank %d: moving cells to their new ranks failed", me);
    }
    free(*data);
    *data = in;
    return MPI_SUCCESS;
}

int ism_pat_decomp_rebalance(ism_pat_decomp *d, double compute_s, double comm_s,
                             double tolerance, void **data, size_t cell_bytes, int *changed)
{
    *changed = 0;
    int size = d->size;
    double mine[2] = {compute_s, comm_s};
    double *all = malloc(sizeof(double) * 2 * (size_t)size);
    double *comm = malloc(sizeof(double) * (size_t)size);
    long *old = malloc(sizeof(long) * ((size_t)size + 1));
    if (!all || !comm || !old) {
        free(all), free(comm), free(old);
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory to rebalance", d->rank);
    }
    int rc = MPI_Allgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, d->comm);
    if (rc != MPI_SUCCESS) {
        free(all), free(comm), free(old);
        return pat_fail(rc, "rank %d: exchanging step times failed", d->rank);
    }
    double now = 0;
    for (int r = 0; r < size; r++) {
        long cells = d->first[r + 1] - d->first[r];
        if (all[2 * r] > 0 && isfinite(all[2 * r])) /* else keep the last speed */
            d->speed[r] = (double)cells / all[2 * r];
        comm[r] = all[2 * r + 1] > 0 && isfinite(all[2 * r + 1]) ? all[2 * r + 1] : 0;
        now = fmax(now, (double)cells / d->speed[r] + comm[r]);
    }
    /* No split makes a step shorter than the longest link time (a rank keeps exchanging
     * its halos whatever its cells), so the split is judged against that floor too: with
     * little compute, T falls below it and every split is about as good as the current
     * one, and moving cells towards the cheapest links would cost their transfer and gain
     * nothing (measured over the seed's links: BENCHMARKS.md). */
    double t = balanced_time(d->speed, comm, size, d->n), floor_s = 0;
    for (int r = 0; r < size; r++)
        floor_s = fmax(floor_s, comm[r]);
    if (now > fmax(t, floor_s) * (1 + tolerance)) {
        /* half-way to the balanced split: one noisy window of measurements (a rank
         * descheduled, a retransmission on the link) must not move everything */
        for (int r = 0; r < size; r++)
            all[r] = 0.5 * (d->speed[r] * fmax(0, t - comm[r]) +
                            (double)(d->first[r + 1] - d->first[r]));
        memcpy(old, d->first, sizeof(long) * ((size_t)size + 1));
        lay_out(d->first, all, size, d->n);
        *changed = memcmp(old, d->first, sizeof(long) * ((size_t)size + 1)) != 0;
        if (*changed && data)
            rc = move_cells(d, old, data, cell_bytes);
    }
    free(all), free(comm), free(old);
    return rc;
}

void ism_pat_decomp_free(ism_pat_decomp **dp)
{
    ism_pat_decomp *d = *dp;
    if (!d)
        return;
    if (d->comm != MPI_COMM_NULL)
        MPI_Comm_free(&d->comm);
    free(d->first);
    free(d->speed);
    free(d);
    *dp = NULL;
}
