/* tbucket.h: the rate stage of one link direction: a token bucket in front of a bounded
 * FIFO byte queue with drop-tail.
 *
 * Tokens (bytes) accrue at the link rate up to the bucket depth. A packet that finds
 * enough tokens leaves at once; otherwise it waits in the queue behind the packets
 * already there, and the bucket's debt (negative tokens) is exactly the queue's backlog.
 * So the departure time of each packet is known when it arrives, in O(1), with no
 * per-packet state: the caller holds the packet until then. A packet that would push the
 * backlog past the queue limit is dropped (drop-tail). Times are nanoseconds. */
#ifndef ISM_LE_TBUCKET_H
#define ISM_LE_TBUCKET_H

#include <stdint.h>

typedef struct {
    double rate_Bps;    /* bytes per second; 0 means unlimited (no queue, no waiting) */
    double depth;       /* bucket depth in bytes (largest burst sent at line speed) */
    double limit;       /* queue limit in bytes (backlog beyond the bucket) */
    double tokens;      /* current tokens; negative = bytes still queued */
    uint64_t last_ns;   /* time tokens were last brought up to date */
} ism_le_tbucket;

/* A full bucket. depth_bytes and limit_bytes are raised to at least one byte. */
void ism_le_tbucket_init(ism_le_tbucket *tb, double rate_Bps, double depth_bytes,
                         double limit_bytes, uint64_t now_ns);

/* Admit a packet of `bytes` arriving at now_ns (non-decreasing across calls). Returns 1
 * and sets *depart_ns to when its last byte has left the rate stage, or returns 0 if the
 * queue is full (the packet is dropped and the bucket is unchanged). */
int ism_le_tbucket_admit(ism_le_tbucket *tb, uint64_t now_ns, uint32_t bytes,
                         uint64_t *depart_ns);

/* Bytes queued at now_ns (waiting for tokens). */
double ism_le_tbucket_backlog(ism_le_tbucket *tb, uint64_t now_ns);

#endif
