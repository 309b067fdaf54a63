/* clocksync.h: one time base for ranks on different nodes. World rank 0 and each node
 * leader exchange ping-pongs; from the exchanges with the shortest round trips a least-
 * squares line maps the leader's clock onto rank 0's: t_leader = a + b * t_rank0. Done
 * before and after a run, the line captures offset and drift (and different TSC rates). */
#ifndef ISM_NOISE_CLOCKSYNC_H
#define ISM_NOISE_CLOCKSYNC_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    double a, b;          /* t_leader = a + b * t_rank0, in ticks of each side's clock */
    double rtt_min;       /* shortest round trip, rank 0 ticks */
    double rtt_max_used;  /* longest round trip among the exchanges in the fit: each one
                           * bounds the offset at its time to +-rtt/2, so the map is
                           * uncertain by about half of this (rank 0 ticks) */
    double err_max;       /* the most the line can be off, anywhere from the first exchange
                           * in the fit to the last, if the clocks' relation is linear: each
                           * exchange's error is within +-rtt/2, and the line weighs them
                           * (least squares) by weights whose size can add up to more than
                           * one (leader ticks) */
    double err_first;     /* the same bound at the first exchange's send time, x[0].t0, where
                           * an offset is usually read off (leader ticks) */
    size_t used;          /* exchanges in the fit */
} ism_clockmap;

typedef struct {
    uint64_t t0, t1;  /* rank 0: send and receive */
    uint64_t tr;      /* leader: reply */
} ism_pingpong;

/* Fit from the recorded exchanges (any number of phases concatenated). The fastest
 * `keep` fraction of each phase of n_per_phase samples is used. Pure, for tests. */
ism_clockmap ism_clocksync_fit(const ism_pingpong *x, size_t n, size_t n_per_phase, double keep);

#endif
