/* cc_reno.c: the conservative, loss-based controller: NewReno-style AIMD.
 *
 * Slow start doubles the window each round trip until the first loss; then the window
 * grows by one MSS per window acknowledged and halves on loss, at most once per round
 * trip (a loss of a packet sent before the last reduction is the same congestion event).
 * A retransmission timeout collapses the window to two packets. Paced at 2x (slow start)
 * or 1.25x (congestion avoidance) of cwnd/srtt so a window never leaves as one burst.
 */
#include <stddef.h>
#include <string.h>

#include "cc.h"

typedef struct reno {
    uint64_t cwnd, ssthresh, acc;
    uint32_t mss;
    int64_t recovery_start_us, srtt_us;
} reno;
_Static_assert(sizeof(reno) <= ISM_UDP_CC_STATE, "state too large");

static void reno_init(void *st, uint32_t mss, int64_t ack_delay_us, int64_t now_us)
{
    reno *r = st;
    memset(r, 0, sizeof *r);
    (void)ack_delay_us; /* AIMD grows through it */
    r->mss = mss;
    r->cwnd = 10ull * mss;
    r->ssthresh = UINT64_MAX;
    r->recovery_start_us = now_us - 1;
}

static void reno_on_ack(void *st, const ism_udp_ack_sample *s)
{
    reno *r = st;
    r->srtt_us = s->srtt_us;
    if (r->cwnd < r->ssthresh) {
        r->cwnd += s->acked_bytes;
        return;
    }
    r->acc += s->acked_bytes * r->mss;
    if (r->acc >= r->cwnd) {
        r->cwnd += r->acc / r->cwnd;
        r->acc %= r->cwnd;
    }
}

static void reno_on_loss(void *st, const ism_udp_loss_event *e)
{
    reno *r = st;
    if (e->timeout) {
        r->ssthresh = r->cwnd / 2 > 2ull * r->mss ? r->cwnd / 2 : 2ull * r->mss;
        r->cwnd = 2ull * r->mss;
        r->recovery_start_us = e->now_us;
        return;
    }
    if (e->sent_us <= r->recovery_start_us)
        return; /* same congestion event */
    r->recovery_start_us = e->now_us;
    r->cwnd = r->cwnd / 2 > 2ull * r->mss ? r->cwnd / 2 : 2ull * r->mss;
    r->ssthresh = r->cwnd;
}

static uint64_t reno_cwnd(const void *st)
{
    return ((const reno *)st)->cwnd;
}

static uint64_t reno_pacing(const void *st)
{
    const reno *r = st;
    if (r->srtt_us <= 0)
        return 0;
    uint64_t gain_x4 = r->cwnd < r->ssthresh ? 8 : 5;
    return r->cwnd * 1000000ull / (uint64_t)r->srtt_us * gain_x4 / 4;
}

static const char *reno_state(const void *st)
{
    const reno *r = st;
    return r->cwnd < r->ssthresh ? "slow-start" : "avoidance";
}

static void reno_set_mss(void *st, uint32_t mss)
{
    ((reno *)st)->mss = mss;
}

const ism_udp_cc_ops ism_udp_cc_reno = {"reno", reno_init, reno_on_ack, reno_on_loss,
                                        reno_cwnd, reno_pacing, reno_state, reno_set_mss, NULL};
