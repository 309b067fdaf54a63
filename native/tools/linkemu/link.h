/* link.h: one direction of an emulated link (site i -> site j), composed of the models in
 * the order a packet meets them: MTU check, loss, duplication, the rate stage (token
 * bucket and bounded queue, tbucket.h), then propagation delay and jitter (delay.h).
 *
 * This is pure computation: given an arrival time and a size it says how many copies to
 * deliver and when. The forwarder (main.c) holds the packets until then. */
#ifndef ISM_LE_LINK_H
#define ISM_LE_LINK_H

#include <stdint.h>

#include "delay.h"
#include "loss.h"
#include "prng.h"
#include "tbucket.h"

/* The settings of one direction, as given on the command line. */
typedef struct {
    uint64_t delay_ns;
    uint64_t jitter_ns;
    int reorder;
    double reorder_p;  /* share of packets that skip the delay (reorderp=) */
    double rate_Bps;      /* 0 = unlimited */
    double queue_bytes;   /* queue limit of the rate stage */
    double burst_bytes;   /* token bucket depth */
    ism_le_loss_kind loss_kind;
    double loss_p, ge_r, ge_loss_bad, ge_loss_good;
    double dup;           /* duplication probability */
    double corrupt;       /* probability of one flipped payload bit (corrupt.h) */
    uint32_t mtu;         /* largest IP packet carried; larger ones are dropped */
} ism_le_link_conf;

typedef struct {
    uint64_t in, delivered, dup, reordered, drop_loss, drop_queue, drop_mtu, drop_pool, corrupted;
    uint64_t bytes_in, bytes_delivered;
    /* copies admitted and not yet written: in the delay line when the counters are read,
     * so that in + dup = delivered + drops + queued holds at any moment, not only once
     * the link has gone quiet (fwd.c keeps it) */
    uint64_t queued;
} ism_le_link_stats;

typedef struct {
    ism_le_link_conf conf;
    ism_le_loss loss;
    ism_le_tbucket tb;
    ism_le_delay delay;
    ism_le_prng rng;
    ism_le_link_stats st;
} ism_le_link;

/* Defaults: no delay, unlimited rate, no loss, MTU 1500. */
void ism_le_link_conf_default(ism_le_link_conf *c);

void ism_le_link_init(ism_le_link *l, const ism_le_link_conf *c, uint64_t seed, uint64_t now_ns);

/* New settings while the emulator runs (a route change): the models start afresh from
 * now_ns; the random stream and the counters go on, packets already admitted keep their
 * release times. */
void ism_le_link_reconf(ism_le_link *l, const ism_le_link_conf *c, uint64_t now_ns);

/* Whether to corrupt the packet just admitted (one draw, after ism_le_link_admit). */
int ism_le_link_corrupts(ism_le_link *l);

/* Admit one packet of `bytes` arriving at now_ns. Returns how many copies to deliver
 * (0, 1 or 2 with duplication) and their release times in release_ns[]. Updates stats,
 * except `delivered`, which the forwarder counts when it writes the packet. */
int ism_le_link_admit(ism_le_link *l, uint64_t now_ns, uint32_t bytes, uint64_t release_ns[2]);

#endif
