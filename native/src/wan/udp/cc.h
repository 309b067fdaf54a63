/* cc.h: the congestion-control interface of the reliable-UDP transport.
 *
 * A controller is an ops table over its own state (at most ISM_UDP_CC_STATE bytes,
 * embedded in the connection: no allocation). The sender calls on_ack once per ACK
 * frame with one rate sample, on_loss for each loss event, and asks for the congestion
 * window and the pacing rate before sending. Two controllers exist: "bbr" (model-based:
 * bottleneck bandwidth and minimum RTT, cc_bbr.c) and "reno" (loss-based AIMD,
 * cc_reno.c). Adding one means one file and one line in ism_udp_cc_find().
 */
#ifndef ISM_WAN_UDP_CC_H
#define ISM_WAN_UDP_CC_H

#include <stdint.h>

#define ISM_UDP_CC_STATE 512

typedef struct ism_udp_ack_sample {
    int64_t now_us;
    uint64_t acked_bytes;    /* newly acknowledged by this ACK */
    uint64_t inflight;       /* bytes in flight after processing it */
    int64_t rtt_us;          /* latest RTT sample (ack delay removed), or -1 */
    int64_t min_rtt_us;      /* the sender's minimum RTT so far, or -1 */
    int64_t srtt_us;         /* smoothed RTT */
    /* delivery-rate sample (BBR-style): bytes delivered over interval, or interval 0 */
    uint64_t delivered;      /* total delivered so far */
    uint64_t rate_delivered; /* delivered during the sample interval */
    int64_t rate_interval_us;
    uint64_t prior_delivered; /* `delivered` when the sampled packet was sent (rounds) */
    int app_limited;          /* the sample was taken while the sender lacked data */
} ism_udp_ack_sample;

typedef struct ism_udp_loss_event {
    int64_t now_us;
    uint64_t lost_bytes;
    int64_t sent_us;  /* send time of the newest lost packet (one reaction per window) */
    uint64_t inflight;
    int timeout;      /* 1: declared by the retransmission timeout, not by gaps */
} ism_udp_loss_event;

typedef struct ism_udp_cc_ops {
    const char *name;
    /* ack_delay_us: how long the receiver may hold an ACK (the window must cover it) */
    void (*init)(void *st, uint32_t mss, int64_t ack_delay_us, int64_t now_us);
    void (*on_ack)(void *st, const ism_udp_ack_sample *s);
    void (*on_loss)(void *st, const ism_udp_loss_event *e);
    uint64_t (*cwnd)(const void *st);           /* bytes allowed in flight */
    uint64_t (*pacing_rate)(const void *st);    /* bytes per second; 0 = unpaced */
    const char *(*state)(const void *st);       /* for stats: e.g. "startup" */
    /* the packet size changed (path-MTU discovery): windows kept in bytes stay */
    void (*set_mss)(void *st, uint32_t mss);
    /* optional (NULL: not offered): start at this rate, bytes/s, told by the user (the
     * link's known rate), instead of ramping up from an initial window; called right
     * after init */
    void (*start_at)(void *st, uint64_t rate);
} ism_udp_cc_ops;

extern const ism_udp_cc_ops ism_udp_cc_bbr;
extern const ism_udp_cc_ops ism_udp_cc_reno;

/* The controller called name ("bbr", "reno"), or NULL. */
const ism_udp_cc_ops *ism_udp_cc_find(const char *name);

#endif
