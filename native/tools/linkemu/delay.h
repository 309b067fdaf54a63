/* delay.h: the propagation stage of one link direction: a fixed one-way delay plus
 * jitter drawn uniformly from [-jitter, +jitter], never below zero in total.
 *
 * Without reordering, a packet never leaves before the one admitted ahead of it (its
 * release is pushed back to the previous one's), as on a real path whose queueing
 * varies. With reordering, each packet keeps its own draw, so packets overtake each
 * other when the jitter exceeds their spacing. Apart from that, a share `reorder_p` of
 * the packets, chosen at random, skips the delay and leaves at once, overtaking those
 * still in flight (netem's `reorder`: it needs a delay to have an effect); the others
 * keep their order among themselves. Times are nanoseconds. */
#ifndef ISM_LE_DELAY_H
#define ISM_LE_DELAY_H

#include <stdint.h>

#include "prng.h"

typedef struct {
    uint64_t delay_ns;
    uint64_t jitter_ns;
    int reorder;           /* 1: packets may overtake each other */
    double reorder_p;      /* share of packets that skip the delay */
    uint64_t last_out_ns;  /* release time of the previous packet (order keeping) */
} ism_le_delay;

void ism_le_delay_init(ism_le_delay *d, uint64_t delay_ns, uint64_t jitter_ns, int reorder,
                       double reorder_p);

/* Release time of a packet that leaves the rate stage at sent_ns. */
uint64_t ism_le_delay_release(ism_le_delay *d, ism_le_prng *g, uint64_t sent_ns);

#endif
