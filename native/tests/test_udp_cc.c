/* test_udp_cc.c: the reliable-UDP transport's model-based controller (cc_bbr.c) fed
 * synthetic rounds of acknowledgements, so each rule is checked on its own and exactly:
 *  - random loss on a path without a queue never bounds what is in flight;
 *  - loss in a round whose fastest RTT shows a standing queue does, to 0.7 of that
 *    round's inflight, and once per recovery: more congested rounds before the bound has
 *    grown back to where congestion was met do not cut again; two lost packets are
 *    enough, one is not;
 *  - the bound grows back (CUBIC's curve) and is dropped far above the congestion level;
 *  - a bound that no longer binds (startup's overshoot) ends the epoch, and congestion
 *    below the last W_max remembers less of it (CUBIC's fast convergence);
 *  - a cut after which the queue stands again within a probing cycle (BBR v1 took the
 *    room) is undone; one after which it drains (CUBIC backed off too) is kept, and so
 *    is startup's;
 *  - a round whose slowest sample finds the queue as full as at a lossy overflow is
 *    congested without a lost packet of ours; a merely standing queue is not;
 *  - a sender that runs out of data keeps its bandwidth estimate through idle rounds;
 *  - a sender of small messages is never paced below 2.89 initial windows per RTT;
 *  - RTT samples within 1/64 of RTprop keep PROBE_RTT away, a standing queue brings it,
 *    and PROBE_RTT keeps half a BDP in flight, not 4 packets;
 *  - a start rate told (start_at) gives a full pipe from the first RTT sample on, where a
 *    fresh controller has an initial window; on a path slower than told the model
 *    follows the path within a few rounds; told too low, startup resumes and grows;
 *    reno offers no start rate.
 */
#include <stdio.h>
#include <string.h>

#include "cc.h"
#include "check.h"

#define MSS 1436u
#define BASE_US 20000
#define RATE 12500000ull /* bytes/s: 100 Mbit/s */

typedef struct sim {
    unsigned char st[ISM_UDP_CC_STATE];
    const ism_udp_cc_ops *cc;
    int64_t now;
    uint64_t delivered;
} sim;

/* One round trip: n packets acknowledged one by one, each RTT sample rtt_us, then
 * `lost` packets reported lost. app_limited marks the samples as taken without data. */
static void round_trip(sim *m, unsigned n, int64_t rtt_us, unsigned lost, int app_limited)
{
    uint64_t start = m->delivered;
    for (unsigned i = 0; i < n; i++) {
        m->now += rtt_us / n;
        m->delivered += MSS;
        ism_udp_ack_sample s;
        memset(&s, 0, sizeof s);
        s.now_us = m->now;
        s.acked_bytes = MSS;
        s.inflight = (uint64_t)(n - i - 1) * MSS;
        s.rtt_us = rtt_us;
        s.min_rtt_us = BASE_US;
        s.srtt_us = rtt_us;
        s.delivered = m->delivered;
        s.prior_delivered = start; /* sent one round ago: each call is one round */
        s.rate_delivered = (uint64_t)n * MSS;
        s.rate_interval_us = rtt_us;
        s.app_limited = app_limited;
        m->cc->on_ack(m->st, &s);
    }
    if (lost) {
        ism_udp_loss_event e = {m->now, (uint64_t)lost * MSS, m->now - rtt_us / 2, 0, 0};
        m->cc->on_loss(m->st, &e);
    }
}

static unsigned bdp_pkts(int64_t rtt_us)
{
    return (unsigned)(RATE * (uint64_t)rtt_us / 1000000u / MSS);
}

static void warm_up(sim *m)
{
    memset(m, 0, sizeof *m);
    m->cc = ism_udp_cc_find("bbr");
    m->now = 1000000;
    m->cc->init(m->st, MSS, 1000, m->now);
    for (int r = 0; r < 40; r++)
        round_trip(m, bdp_pkts(BASE_US), BASE_US, 0, 0);
}

int main(void)
{
    sim m;
    warm_up(&m);
    uint64_t free_cwnd = m.cc->cwnd(m.st), rate = m.cc->pacing_rate(m.st);
    CHECK(strcmp(m.cc->state(m.st), "probe_bw") == 0, "state %s after warm-up",
          m.cc->state(m.st));
    CHECK(free_cwnd >= 2ull * bdp_pkts(BASE_US) * MSS, "cwnd %llu below 2 BDP",
          (unsigned long long)free_cwnd);

    /* 3% of every round lost at random, no queue: BBR's point is to ignore it */
    for (int r = 0; r < 20; r++)
        round_trip(&m, bdp_pkts(BASE_US), BASE_US, bdp_pkts(BASE_US) * 3 / 100, 0);
    CHECK(m.cc->cwnd(m.st) >= free_cwnd * 95 / 100, "random loss bounded cwnd %llu (was %llu)",
          (unsigned long long)m.cc->cwnd(m.st), (unsigned long long)free_cwnd);

    /* 3% lost while even the fastest RTT shows a queue of half the base RTT */
    unsigned n = bdp_pkts(BASE_US * 3 / 2);
    round_trip(&m, n, BASE_US * 3 / 2, n * 3 / 100, 0);
    round_trip(&m, n, BASE_US * 3 / 2, 0, 0); /* the next round closes the congested one */
    uint64_t cut = m.cc->cwnd(m.st);
    CHECK(cut <= (uint64_t)n * MSS * 70 / 100 + MSS && cut >= (uint64_t)n * MSS * 60 / 100,
          "after a congested round cwnd %llu, want 0.7 x %u packets",
          (unsigned long long)cut, n);

    /* still below the level congestion was met at: the same epoch, no second cut */
    round_trip(&m, n * 7 / 10, BASE_US * 3 / 2, n * 7 / 100, 0);
    round_trip(&m, n * 7 / 10, BASE_US * 3 / 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) >= cut, "cut again in the same epoch: %llu < %llu",
          (unsigned long long)m.cc->cwnd(m.st), (unsigned long long)cut);

    /* without congestion the bound grows back, and far above the old level goes away */
    uint64_t prev = m.cc->cwnd(m.st);
    for (int r = 0; r < 100; r++)
        round_trip(&m, bdp_pkts(BASE_US), BASE_US, 0, 0);
    CHECK(m.cc->cwnd(m.st) > prev, "the bound did not grow: %llu", (unsigned long long)prev);
    for (int r = 0; r < 2000 && m.cc->cwnd(m.st) < free_cwnd * 95 / 100; r++)
        round_trip(&m, bdp_pkts(BASE_US), BASE_US, 0, 0);
    CHECK(m.cc->cwnd(m.st) >= free_cwnd * 95 / 100, "bound never released: cwnd %llu of %llu",
          (unsigned long long)m.cc->cwnd(m.st), (unsigned long long)free_cwnd);

    /* CUBIC backs off at every overflow, however few packets it loses; so do we: two
     * packets lost in a queued round are congestion even when they are under 1% of it
     * (a 1% threshold left us 67-70% of a bottleneck shared with one CUBIC flow). One
     * lost packet alone is not: a single corrupted datagram must not halve the flow. */
    warm_up(&m);
    n = bdp_pkts(BASE_US * 3 / 2);
    CHECK(2 * 100 < n, "the round of %u packets is too small for this check", n);
    round_trip(&m, n, BASE_US * 3 / 2, 1, 0);
    round_trip(&m, n, BASE_US * 3 / 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) >= free_cwnd * 95 / 100, "one lost packet cut cwnd to %llu",
          (unsigned long long)m.cc->cwnd(m.st));
    round_trip(&m, n, BASE_US * 3 / 2, 2, 0);
    round_trip(&m, n, BASE_US * 3 / 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) <= (uint64_t)n * MSS * 70 / 100 + MSS,
          "two lost packets (%.2f%% of a queued round) left cwnd at %llu", 200.0 / n,
          (unsigned long long)m.cc->cwnd(m.st));

    /* Startup's overshoot: congestion met with 4 BDP in flight (a queue of 3), so the
     * bound, 0.7 of that, lies above what the model keeps in flight (2 BDP and a little).
     * A bound that does not bind ends the epoch: the next congested round, at 1.5 BDP,
     * cuts at once. (Before, the epoch lasted until the bound reached 4 BDP, 10 s on a
     * 100 Mbit/s, 50 ms path, and a UDP flow started with a CUBIC one kept 82% of the
     * bottleneck.) */
    memset(&m, 0, sizeof m);
    m.cc = ism_udp_cc_find("bbr");
    m.now = 1000000;
    m.cc->init(m.st, MSS, 1000, m.now);
    for (unsigned k = 10; k <= 160; k *= 2) /* startup: the rate doubles every round */
        round_trip(&m, k, BASE_US, 0, 0);
    unsigned big = 4 * bdp_pkts(BASE_US);
    round_trip(&m, big, BASE_US * 4, big * 3 / 100, 0);
    for (int r = 0; r < 3; r++) /* drained: probe_bw */
        round_trip(&m, bdp_pkts(BASE_US), BASE_US, 0, 0);
    CHECK(strcmp(m.cc->state(m.st), "probe_bw") == 0, "state %s after the overshoot",
          m.cc->state(m.st));
    CHECK(m.cc->cwnd(m.st) < (uint64_t)big * MSS * 70 / 100,
          "the overshoot's bound %llu binds (want it above the model's cwnd)",
          (unsigned long long)m.cc->cwnd(m.st));
    n = bdp_pkts(BASE_US * 3 / 2);
    round_trip(&m, n, BASE_US * 3 / 2, n * 3 / 100, 0);
    round_trip(&m, n, BASE_US * 3 / 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) <= (uint64_t)n * MSS * 70 / 100 + MSS,
          "congestion after the overshoot, under a bound that no longer binds, left cwnd %llu "
          "(want 0.7 x %u packets)", (unsigned long long)m.cc->cwnd(m.st), n);
    /* ... and that congestion came below the last W_max: a flow joined. CUBIC's fast
     * convergence remembers 0.85 of it, so the bound grows back towards less: one second
     * later (50 rounds) it is 0.40 (t - K)^3 + 0.85 x W packets (about 186 of these 261),
     * where without fast convergence it would be about 217. */
    int64_t t_cut = m.now;
    while (m.now - t_cut < 1000000)
        round_trip(&m, bdp_pkts(BASE_US), BASE_US, 0, 0);
    CHECK(m.cc->cwnd(m.st) <= (uint64_t)n * MSS * 77 / 100,
          "1 s after a cut below W_max cwnd is %.0f packets of %u: no fast convergence",
          (double)m.cc->cwnd(m.st) / MSS, n);
    printf("fast convergence: 1 s after the cut at %u packets cwnd %.0f\n", n,
           (double)m.cc->cwnd(m.st) / MSS);

    /* A cut that did not drain the queue is undone. Four rounds with a queue as long as
     * the base RTT, then a congested one; BBR v1 refills the room within its probing
     * cycle, so the queue stands through the next 15 rounds: the bound goes. */
    warm_up(&m);
    n = bdp_pkts(BASE_US * 2);
    for (int r = 0; r < 4; r++)
        round_trip(&m, n, BASE_US * 2, 0, 0);
    round_trip(&m, n, BASE_US * 2, n * 3 / 100, 0);
    round_trip(&m, n, BASE_US * 2, 0, 0);
    cut = m.cc->cwnd(m.st);
    CHECK(cut <= (uint64_t)n * MSS * 70 / 100 + MSS, "no cut to undo: cwnd %llu of %u packets",
          (unsigned long long)cut, n);
    for (int r = 0; r < 6; r++)
        round_trip(&m, n * 7 / 10, BASE_US * 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) < (uint64_t)n * MSS * 80 / 100,
          "undone before the competitor's probing cycle was seen: cwnd %llu",
          (unsigned long long)m.cc->cwnd(m.st));
    for (int r = 0; r < 10; r++)
        round_trip(&m, n * 7 / 10, BASE_US * 2, 0, 0);
    for (int r = 0; r < 12; r++) /* room taken back: the model's window, no bound */
        round_trip(&m, n, BASE_US * 3 / 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) >= free_cwnd * 95 / 100,
          "a cut the queue ignored was kept: cwnd %llu of %llu",
          (unsigned long long)m.cc->cwnd(m.st), (unsigned long long)free_cwnd);
    /* the same cut, and the queue drains to a fifth (both flows backed off): kept */
    warm_up(&m);
    for (int r = 0; r < 4; r++)
        round_trip(&m, n, BASE_US * 2, 0, 0);
    round_trip(&m, n, BASE_US * 2, n * 3 / 100, 0);
    for (int r = 0; r < 17; r++)
        round_trip(&m, n * 7 / 10, BASE_US * 6 / 5, 0, 0);
    CHECK(m.cc->cwnd(m.st) <= (uint64_t)n * MSS * 80 / 100,
          "a cut that drained the queue was undone: cwnd %.0f packets of %u",
          (double)m.cc->cwnd(m.st) / MSS, n);
    /* startup's own overshoot is not judged: the queue that stands after it is ours */
    memset(&m, 0, sizeof m);
    m.cc = ism_udp_cc_find("bbr");
    m.now = 1000000;
    m.cc->init(m.st, MSS, 1000, m.now);
    for (unsigned k = 10; k <= 160; k *= 2)
        round_trip(&m, k, BASE_US, 0, 0);
    CHECK(strcmp(m.cc->state(m.st), "startup") == 0, "left startup early: %s",
          m.cc->state(m.st));
    round_trip(&m, 320, BASE_US * 2, 30, 0);
    for (int r = 0; r < 17; r++)
        round_trip(&m, 224, BASE_US * 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) <= 320ull * MSS * 80 / 100,
          "startup's cut was undone: cwnd %.0f packets of 320", (double)m.cc->cwnd(m.st) / MSS);

    /* A full queue without a loss of ours. An overflow we lost packets in teaches how
     * long the full queue's delay is (one base RTT here); the queue then drains and the
     * bound regrows until it no longer binds. A round whose slowest sample shows half of
     * that is only a standing queue; one that shows all of it met an overflow. */
    warm_up(&m);
    n = bdp_pkts(BASE_US * 2);
    round_trip(&m, n, BASE_US * 2, n * 3 / 100, 0);
    for (int r = 0; r < 600; r++)
        round_trip(&m, bdp_pkts(BASE_US), BASE_US, 0, 0);
    uint64_t regrown = m.cc->cwnd(m.st);
    CHECK(regrown > (uint64_t)n * MSS, "the bound did not regrow past the cut: %llu",
          (unsigned long long)regrown);
    round_trip(&m, n, BASE_US * 3 / 2, 0, 0);
    round_trip(&m, n, BASE_US * 3 / 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) >= regrown, "a half-full queue cut cwnd %llu -> %llu",
          (unsigned long long)regrown, (unsigned long long)m.cc->cwnd(m.st));
    round_trip(&m, n, BASE_US * 2, 0, 0);
    round_trip(&m, n, BASE_US * 2, 0, 0);
    CHECK(m.cc->cwnd(m.st) <= (uint64_t)n * MSS * 70 / 100 + MSS,
          "a full queue without a loss of ours left cwnd at %.0f packets (want 0.7 x %u)",
          (double)m.cc->cwnd(m.st) / MSS, n);

    /* idle: 50 rounds of a few keepalive packets do not wear the bandwidth estimate down */
    warm_up(&m);
    rate = m.cc->pacing_rate(m.st);
    uint64_t bw_cwnd = m.cc->cwnd(m.st);
    for (int r = 0; r < 50; r++)
        round_trip(&m, 2, BASE_US, 0, 1);
    CHECK(m.cc->cwnd(m.st) >= bw_cwnd * 9 / 10, "idle rounds shrank cwnd %llu -> %llu",
          (unsigned long long)bw_cwnd, (unsigned long long)m.cc->cwnd(m.st));
    CHECK(m.cc->pacing_rate(m.st) >= rate / 2, "idle rounds shrank the pacing rate %llu -> %llu",
          (unsigned long long)rate, (unsigned long long)m.cc->pacing_rate(m.st));

    /* a trickle of small messages from the start (a ping-pong through a gateway): the
     * pacing rate is never below 2.89 initial windows per RTT in startup */
    memset(&m, 0, sizeof m);
    m.cc = ism_udp_cc_find("bbr");
    m.now = 1000000;
    m.cc->init(m.st, MSS, 1000, m.now);
    for (int r = 0; r < 20; r++)
        round_trip(&m, 1, BASE_US, 0, 1);
    uint64_t floor = 10ull * MSS * 1000000u / BASE_US * 2885 / 1000;
    CHECK(m.cc->pacing_rate(m.st) >= floor - 1, "a trickle paced at %llu bytes/s, want >= %llu",
          (unsigned long long)m.cc->pacing_rate(m.st), (unsigned long long)floor);

    /* 15 s of samples within 1/64 of RTprop (never equal to it): no PROBE_RTT */
    warm_up(&m);
    int probed = 0;
    for (int r = 0; r < 750; r++) {
        round_trip(&m, bdp_pkts(BASE_US), BASE_US + BASE_US / 100, 0, 0);
        probed |= strcmp(m.cc->state(m.st), "probe_rtt") == 0;
    }
    CHECK(!probed, "PROBE_RTT on a path whose RTT stayed within 1%% of RTprop");
    /* a standing queue (RTT 10% up) for more than 10 s: PROBE_RTT, at half a BDP */
    uint64_t probe_cwnd = 0;
    for (int r = 0; r < 600 && !probe_cwnd; r++) {
        round_trip(&m, bdp_pkts(BASE_US * 11 / 10), BASE_US * 11 / 10, 0, 0);
        if (strcmp(m.cc->state(m.st), "probe_rtt") == 0)
            probe_cwnd = m.cc->cwnd(m.st);
    }
    CHECK(probe_cwnd >= (uint64_t)bdp_pkts(BASE_US) * MSS * 4 / 10 &&
              probe_cwnd <= (uint64_t)bdp_pkts(BASE_US) * MSS * 6 / 10,
          "PROBE_RTT cwnd %llu, want half of %u packets", (unsigned long long)probe_cwnd,
          bdp_pkts(BASE_US));


    /* A start rate told: paced at it from the first packet, and a full pipe (2 BDP at
     * gain 1) as soon as one RTT sample gives the window its size. */
    sim f;
    memset(&f, 0, sizeof f);
    f.cc = ism_udp_cc_find("bbr");
    f.now = 1000000;
    f.cc->init(f.st, MSS, 1000, f.now);
    sim t = f;
    CHECK(t.cc->start_at != NULL, "bbr offers no start rate");
    t.cc->start_at(t.st, RATE);
    CHECK(t.cc->pacing_rate(t.st) == RATE, "told %llu, paced at %llu before any sample",
          (unsigned long long)RATE, (unsigned long long)t.cc->pacing_rate(t.st));
    round_trip(&f, 10, BASE_US, 0, 0); /* the first round trip: ten packets */
    round_trip(&t, 10, BASE_US, 0, 0);
    uint64_t bdp_b = (uint64_t)bdp_pkts(BASE_US) * MSS;
    CHECK(t.cc->cwnd(t.st) >= 2 * bdp_b, "told the rate: cwnd %llu after the first RTT, want "
          ">= 2 BDP (%llu)", (unsigned long long)t.cc->cwnd(t.st), (unsigned long long)2 * bdp_b);
    CHECK(t.cc->pacing_rate(t.st) == RATE, "told the rate: paced at %llu after the first RTT",
          (unsigned long long)t.cc->pacing_rate(t.st));
    CHECK(f.cc->cwnd(f.st) < bdp_b / 2, "a fresh controller's cwnd %llu is not an initial "
          "window's (the comparison above would prove nothing)", (unsigned long long)f.cc->cwnd(f.st));

    /* told twice the path's rate: after the told rounds the model follows the path */
    sim w;
    memset(&w, 0, sizeof w);
    w.cc = ism_udp_cc_find("bbr");
    w.now = 1000000;
    w.cc->init(w.st, MSS, 1000, w.now);
    w.cc->start_at(w.st, 2 * RATE);
    for (int r = 0; r < 12; r++)
        round_trip(&w, bdp_pkts(BASE_US), BASE_US, 0, 0);
    CHECK(w.cc->pacing_rate(w.st) <= RATE * 5 / 4 + RATE / 100,
          "told 2x the path: still paced at %llu after 12 rounds of %llu bytes/s",
          (unsigned long long)w.cc->pacing_rate(w.st), (unsigned long long)RATE);
    CHECK(w.cc->cwnd(w.st) <= 3 * bdp_b, "told 2x the path: cwnd %llu after 12 rounds, BDP %llu",
          (unsigned long long)w.cc->cwnd(w.st), (unsigned long long)bdp_b);

    /* told a quarter of the path's rate (one of four connections, now alone): startup
     * resumes after the told rounds and the estimate grows with what is delivered */
    memset(&w, 0, sizeof w);
    w.cc = ism_udp_cc_find("bbr");
    w.now = 1000000;
    w.cc->init(w.st, MSS, 1000, w.now);
    w.cc->start_at(w.st, RATE / 4);
    for (int r = 0; r < 4; r++)
        round_trip(&w, bdp_pkts(BASE_US) / 4, BASE_US, 0, 0);
    CHECK(strcmp(w.cc->state(w.st), "startup") == 0, "told too low: state %s after the told "
          "rounds, want startup", w.cc->state(w.st));
    for (int r = 0; r < 3; r++)
        round_trip(&w, bdp_pkts(BASE_US), BASE_US, 0, 0);
    CHECK(w.cc->pacing_rate(w.st) >= RATE, "told too low: paced at %llu after rounds of %llu "
          "bytes/s", (unsigned long long)w.cc->pacing_rate(w.st), (unsigned long long)RATE);
    CHECK(ism_udp_cc_find("reno")->start_at == NULL, "reno claims a start rate");

    if (failures)
        fprintf(stderr, "test_udp_cc: %d failures\n", failures);
    else
        printf("test_udp_cc: OK\n");
    return failures != 0;
}
