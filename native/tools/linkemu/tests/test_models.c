/* test_models.c: deterministic tests of the link emulator's models against theory: the
 * token bucket's rate and queue bound, Bernoulli and Gilbert-Elliott loss, delay with
 * jitter (order kept or not), duplication, MTU, the packet store, the settings parser and
 * the forwarder's adaptive polling lead, corruption behind valid checksums, and new
 * settings while a link runs.
 * Fixed seeds; statistical checks use bounds of about 5 standard deviations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "corrupt.h"
#include "delay.h"
#include "lead.h"
#include "link.h"
#include "loss.h"
#include "pktq.h"
#include "prng.h"
#include "tbucket.h"
#include "../../../tests/check.h"



/* |count - n p| within k binomial standard deviations. */
static int binomial_ok(double count, double n, double p, double k)
{
    return fabs(count - n * p) <= k * sqrt(n * p * (1 - p));
}

static void test_tbucket_rate(void)
{
    /* 10000 packets of 1500 B offered back to back at 1 us spacing (12 Gbit/s) to a
     * 100 Mbit/s bucket with room for all: the last leaves at (total - depth) / rate. */
    ism_le_tbucket tb;
    double rate = 12.5e6, depth = 1500;
    ism_le_tbucket_init(&tb, rate, depth, 1e9, 0);
    uint64_t dep = 0, prev = 0;
    int ordered = 1;
    for (int i = 0; i < 10000; i++) {
        CHECK(ism_le_tbucket_admit(&tb, (uint64_t)i * 1000, 1500, &dep), "packet %d refused", i);
        ordered &= dep >= prev;
        prev = dep;
    }
    double expect_ns = (10000.0 * 1500 - depth) / rate * 1e9;
    CHECK(fabs((double)dep - expect_ns) < 1000, "last departure %llu ns, expected %.0f",
          (unsigned long long)dep, expect_ns);
    CHECK(ordered, "departures out of order");

    /* Offered below the rate: nothing waits. */
    ism_le_tbucket_init(&tb, rate, depth, 1e9, 0);
    int waited = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t at = (uint64_t)i * 200000; /* 1500 B every 200 us = 60 Mbit/s */
        ism_le_tbucket_admit(&tb, at, 1500, &dep);
        waited += dep != at;
    }
    CHECK(waited == 0, "%d packets waited below the rate", waited);

    /* Unlimited: no waiting ever. */
    ism_le_tbucket_init(&tb, 0, 1500, 1500, 0);
    CHECK(ism_le_tbucket_admit(&tb, 5, 60000, &dep) && dep == 5, "unlimited bucket delayed");
}

static void test_tbucket_queue_bound(void)
{
    /* Offered at 10x the rate into a 30 kB queue: the backlog never passes the limit, the
     * excess is dropped, and what passes leaves at the link rate. */
    ism_le_tbucket tb;
    double rate = 1e6, limit = 30000;
    ism_le_tbucket_init(&tb, rate, 1000, limit, 0);
    int accepted = 0, dropped = 0;
    uint64_t dep = 0, last = 0;
    double max_backlog = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t now = (uint64_t)i * 100000; /* 1000 B every 100 us = 10 MB/s */
        if (ism_le_tbucket_admit(&tb, now, 1000, &dep)) {
            accepted++;
            last = dep;
        } else {
            dropped++;
        }
        double b = ism_le_tbucket_backlog(&tb, now);
        if (b > max_backlog)
            max_backlog = b;
    }
    CHECK(max_backlog <= limit, "backlog %.0f above the limit %.0f", max_backlog, limit);
    CHECK(max_backlog >= limit - 1000, "queue never filled (max %.0f)", max_backlog);
    CHECK(dropped > 15000, "only %d drops at 10x overload", dropped);
    double achieved = (accepted * 1000.0 - 1000) / ((double)last * 1e-9);
    CHECK(fabs(achieved / rate - 1) < 0.001, "drained at %.0f B/s, set %.0f", achieved, rate);
}

static void test_bernoulli(void)
{
    ism_le_prng g;
    ism_le_prng_seed(&g, 42);
    ism_le_loss m;
    double ps[] = {0.001, 0.01, 0.2};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        ism_le_loss_bernoulli(&m, ps[k]);
        int n = 400000, lost = 0;
        for (int i = 0; i < n; i++)
            lost += ism_le_loss_drop(&m, &g);
        CHECK(binomial_ok(lost, n, ps[k], 5), "p=%g: %d of %d lost", ps[k], lost, n);
    }
    ism_le_loss_none(&m);
    int lost = 0;
    for (int i = 0; i < 10000; i++)
        lost += ism_le_loss_drop(&m, &g);
    CHECK(lost == 0, "no-loss model lost %d", lost);
}

static void test_gilbert_elliott(void)
{
    ism_le_prng g;
    ism_le_prng_seed(&g, 7);
    ism_le_loss m;
    /* Gilbert: lose everything in Bad. Mean loss p/(p+r), mean burst 1/r. */
    double p = 0.01, r = 0.25;
    ism_le_loss_ge(&m, p, r, 1.0, 0.0);
    long n = 2000000, lost = 0, bursts = 0, run = 0;
    for (long i = 0; i < n; i++) {
        if (ism_le_loss_drop(&m, &g)) {
            lost++;
            run++;
        } else if (run) {
            bursts++;
            run = 0;
        }
    }
    double mean = (double)lost / (double)n, theory = p / (p + r);
    double burst = (double)lost / (double)bursts;
    CHECK(fabs(mean / theory - 1) < 0.05, "mean loss %.5f, theory %.5f", mean, theory);
    CHECK(fabs(burst * r - 1) < 0.05, "mean burst %.3f, theory %.3f", burst, 1 / r);
    CHECK(fabs(ism_le_loss_mean(&m) - theory) < 1e-12, "ism_le_loss_mean disagrees");

    /* Elliott's general form: partial loss in both states. */
    ism_le_loss_ge(&m, 0.05, 0.2, 0.5, 0.01);
    lost = 0;
    for (long i = 0; i < n; i++)
        lost += ism_le_loss_drop(&m, &g);
    theory = (0.05 * 0.5 + 0.2 * 0.01) / 0.25;
    mean = (double)lost / (double)n;
    CHECK(fabs(mean / theory - 1) < 0.05, "GE mean loss %.5f, theory %.5f", mean, theory);
}

static void test_jitter(void)
{
    ism_le_prng g;
    ism_le_prng_seed(&g, 3);
    ism_le_delay d;
    uint64_t delay = 10000000, jit = 2000000; /* 10 ms +- 2 ms, a packet every 100 us */

    ism_le_delay_init(&d, delay, jit, 0, 0);
    uint64_t prev = 0, lo = UINT64_MAX, hi = 0;
    int inversions = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t sent = (uint64_t)i * 100000;
        uint64_t out = ism_le_delay_release(&d, &g, sent);
        inversions += out < prev;
        prev = out;
        uint64_t lat = out - sent;
        lo = lat < lo ? lat : lo;
        hi = lat > hi ? lat : hi;
    }
    CHECK(inversions == 0, "%d reorderings with reorder off", inversions);
    CHECK(lo >= delay - jit && hi > delay + jit / 2, "latency range [%llu, %llu] ns",
          (unsigned long long)lo, (unsigned long long)hi);

    ism_le_delay_init(&d, delay, jit, 1, 0);
    prev = 0;
    lo = UINT64_MAX;
    hi = 0;
    double sum = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t sent = (uint64_t)i * 100000;
        uint64_t out = ism_le_delay_release(&d, &g, sent);
        inversions += out < prev;
        prev = out > prev ? out : prev;
        uint64_t lat = out - sent;
        sum += (double)lat;
        lo = lat < lo ? lat : lo;
        hi = lat > hi ? lat : hi;
    }
    CHECK(inversions > 1000, "only %d reorderings with reorder on", inversions);
    CHECK(lo >= delay - jit && hi <= delay + jit, "latency range [%llu, %llu] ns outside +-jitter",
          (unsigned long long)lo, (unsigned long long)hi);
    CHECK(fabs(sum / 20000 - (double)delay) < 0.01 * (double)jit * 5, "mean latency %.0f ns", sum / 20000);

    /* Jitter larger than the delay never gives a negative latency. */
    ism_le_delay_init(&d, 1000, 5000, 1, 0);
    int negative = 0;
    for (int i = 0; i < 1000; i++)
        negative += ism_le_delay_release(&d, &g, 1000000) < 1000000;
    CHECK(negative == 0, "%d releases before sending", negative);
}

/* reorderp: that share of packets leaves at once and overtakes those in flight; the rest
 * keep the delay and their order. 10 ms, a packet every 100 us: each chosen packet
 * overtakes the ~100 still in flight, and the others never overtake each other. */
static void test_reorder_share(void)
{
    ism_le_prng g;
    ism_le_prng_seed(&g, 11);
    ism_le_delay d;
    ism_le_delay_init(&d, 10000000, 0, 0, 0.05);
    int early = 0, normal_inversions = 0;
    uint64_t last_normal = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t sent = (uint64_t)i * 100000;
        uint64_t out = ism_le_delay_release(&d, &g, sent);
        if (out == sent) {
            early++;
            continue;
        }
        CHECK(out == sent + 10000000, "packet %d delayed by %llu ns", i,
              (unsigned long long)(out - sent));
        normal_inversions += out < last_normal;
        last_normal = out;
    }
    CHECK(early > 800 && early < 1200, "%d of 20000 packets sent early with reorderp=0.05", early);
    CHECK(normal_inversions == 0, "%d reorderings among the delayed packets", normal_inversions);
    ism_le_link_conf c;
    ism_le_link_conf_default(&c);
    char err[256];
    CHECK(ism_le_conf_parse("reorderp=0.05", &c, err, sizeof err) == 0 && c.reorder_p == 0.05,
          "reorderp parse: %s", err);
    CHECK(ism_le_conf_parse("reorderp=1.5", &c, err, sizeof err) < 0, "reorderp=1.5 accepted");
}

static void test_link_dup_mtu(void)
{
    ism_le_link_conf c;
    ism_le_link_conf_default(&c);
    c.dup = 0.05;
    c.delay_ns = 1000;
    ism_le_link l;
    ism_le_link_init(&l, &c, 99, 0);
    uint64_t rel[2];
    int n = 200000, doubles = 0;
    for (int i = 0; i < n; i++) {
        int k = ism_le_link_admit(&l, (uint64_t)i * 10000, 1000, rel);
        doubles += k == 2;
        CHECK(k >= 1, "packet %d lost on a lossless link", i);
        if (k < 1)
            break;
    }
    CHECK(binomial_ok(doubles, n, 0.05, 5), "%d of %d duplicated", doubles, n);
    CHECK(l.st.dup == (uint64_t)doubles, "dup counter %llu", (unsigned long long)l.st.dup);

    c.dup = 0;
    c.mtu = 1500;
    ism_le_link_init(&l, &c, 1, 0);
    CHECK(ism_le_link_admit(&l, 0, 1500, rel) == 1, "1500 B refused at MTU 1500");
    CHECK(ism_le_link_admit(&l, 0, 1501, rel) == 0, "1501 B passed at MTU 1500");
    CHECK(l.st.drop_mtu == 1, "drop_mtu = %llu", (unsigned long long)l.st.drop_mtu);

    /* Loss on the composed link matches the model. */
    c.loss_kind = ISM_LE_LOSS_BERNOULLI;
    c.loss_p = 0.02;
    ism_le_link_init(&l, &c, 5, 0);
    for (int i = 0; i < n; i++)
        ism_le_link_admit(&l, (uint64_t)i * 10000, 100, rel);
    CHECK(binomial_ok((double)l.st.drop_loss, n, 0.02, 5), "%llu of %d lost",
          (unsigned long long)l.st.drop_loss, n);
}

static void test_pktq(void)
{
    ism_le_pktq q;
    CHECK(ism_le_pktq_init(&q, 1000, 64) == 0, "init");
    ism_le_prng g;
    ism_le_prng_seed(&g, 11);
    for (int i = 0; i < 1000; i++) {
        int64_t s = ism_le_pktq_alloc(&q);
        CHECK(s >= 0, "alloc %d failed", i);
        q.meta[s].len = (uint32_t)i; /* arrival order, to check stable ties */
        ism_le_pktq_push(&q, (uint32_t)s, ism_le_prng_next(&g) % 50);
    }
    CHECK(ism_le_pktq_alloc(&q) == -1, "allocated past the pool");
    uint64_t prev_t = 0;
    uint32_t prev_len = 0;
    int bad_order = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t t = ism_le_pktq_peek(&q)->release_ns;
        uint32_t s = ism_le_pktq_pop(&q);
        if (t < prev_t || (t == prev_t && i > 0 && q.meta[s].len < prev_len))
            bad_order++;
        prev_t = t;
        prev_len = q.meta[s].len;
        ism_le_pktq_release(&q, s);
    }
    CHECK(bad_order == 0, "%d entries out of order", bad_order);
    CHECK(ism_le_pktq_peek(&q) == NULL && q.nfree == 1000, "store not empty after draining");
    ism_le_pktq_free(&q);
}

static void test_conf(void)
{
    char err[256];
    ism_le_link_conf c;
    ism_le_link_conf_default(&c);
    CHECK(ism_le_conf_parse("delay=5000000,jitter=100000,reorder=1,rate=1.25e7,queue=65536,"
                            "loss=0.01,dup=0.001,mtu=9000", &c, err, sizeof err) == 0, "%s", err);
    CHECK(c.delay_ns == 5000000 && c.jitter_ns == 100000 && c.reorder == 1, "delay fields");
    CHECK(c.rate_Bps == 1.25e7 && c.queue_bytes == 65536 && c.mtu == 9000, "rate fields");
    CHECK(c.loss_kind == ISM_LE_LOSS_BERNOULLI && c.loss_p == 0.01 && c.dup == 0.001, "loss fields");
    CHECK(ism_le_conf_parse("ge=0.01/0.25/1/0", &c, err, sizeof err) == 0, "%s", err);
    CHECK(c.loss_kind == ISM_LE_LOSS_GE && c.ge_r == 0.25 && c.ge_loss_bad == 1, "ge fields");
    const char *bad[] = {"delay=-1", "loss=1.5", "mtu=10", "colour=red", "delay", "ge=0.1/0.2",
                         "rate=fast", "ge=0.1/0.2/1/0/9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(ism_le_conf_parse(bad[i], &c, err, sizeof err) == -1 && err[0], "accepted %s", bad[i]);
    }
}

/* RFC 1071 the plain way, over a separate pseudo-header + segment buffer: the reference
 * the model's checksum code is checked against. A valid segment sums to 0xffff. */
static unsigned ref_sum(const unsigned char *pkt)
{
    size_t ihl = (size_t)(pkt[0] & 15) * 4, total = (size_t)pkt[2] << 8 | pkt[3];
    size_t l4len = total - ihl;
    unsigned char buf[2048];
    memcpy(buf, pkt + 12, 8);
    buf[8] = 0;
    buf[9] = pkt[9];
    buf[10] = (unsigned char)(l4len >> 8);
    buf[11] = (unsigned char)l4len;
    memcpy(buf + 12, pkt + ihl, l4len);
    size_t n = 12 + l4len;
    if (n & 1)
        buf[n++] = 0;
    unsigned long s = 0;
    for (size_t i = 0; i < n; i += 2)
        s += (unsigned long)buf[i] << 8 | buf[i + 1];
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (unsigned)s;
}

/* An IPv4 packet: proto 17 (UDP, 8-byte header) or 6 (TCP, hdr bytes of header). */
static size_t make_packet(unsigned char *pkt, int proto, size_t hdr, size_t payload, ism_le_prng *g)
{
    size_t total = 20 + hdr + payload;
    memset(pkt, 0, total);
    pkt[0] = 0x45;
    pkt[2] = (unsigned char)(total >> 8);
    pkt[3] = (unsigned char)total;
    pkt[6] = 0x40; /* DF */
    pkt[8] = 64;
    pkt[9] = (unsigned char)proto;
    unsigned char addr[8] = {10, 77, 0, 1, 10, 77, 0, 2};
    memcpy(pkt + 12, addr, 8);
    for (size_t i = 20; i < total; i++)
        pkt[i] = (unsigned char)ism_le_prng_next(g);
    if (proto == 17) {
        pkt[24] = (unsigned char)((8 + payload) >> 8);
        pkt[25] = (unsigned char)(8 + payload);
    } else {
        pkt[32] = (unsigned char)((hdr / 4) << 4);
    }
    size_t at = 20 + (proto == 17 ? 6 : 16);
    unsigned c = ism_le_l4_checksum(pkt, total);
    pkt[at] = (unsigned char)(c >> 8);
    pkt[at + 1] = (unsigned char)c;
    return total;
}

static void test_corrupt(void)
{
    ism_le_prng g;
    ism_le_prng_seed(&g, 3);
    unsigned char pkt[1600], orig[1600];
    struct { int proto; size_t hdr, payload; } cases[] = {{17, 8, 100}, {17, 8, 1}, {6, 32, 51}, {6, 20, 1400}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int rep = 0; rep < 50; rep++) {
            size_t n = make_packet(pkt, cases[k].proto, cases[k].hdr, cases[k].payload, &g);
            CHECK(ref_sum(pkt) == 0xffff, "case %zu: the model's checksum is wrong", k);
            memcpy(orig, pkt, n);
            CHECK(ism_le_corrupt(pkt, n, &g) == 1, "case %zu: not corrupted", k);
            CHECK(ref_sum(pkt) == 0xffff, "case %zu: checksum not fixed after the flip", k);
            int bits = 0;
            size_t where = 0;
            size_t csum = 20 + (cases[k].proto == 17 ? 6 : 16);
            for (size_t i = 0; i < n; i++) {
                if (i == csum || i == csum + 1)
                    continue;
                unsigned d = pkt[i] ^ orig[i];
                for (; d; d &= d - 1)
                    bits++;
                if (pkt[i] != orig[i])
                    where = i;
            }
            CHECK(bits == 1, "case %zu: %d bits changed outside the checksum", k, bits);
            CHECK(where >= 20 + cases[k].hdr, "case %zu: byte %zu of the headers changed", k, where);
        }
    }
    /* no payload (a pure ACK), a fragment, a UDP datagram without checksum */
    size_t n = make_packet(pkt, 6, 20, 0, &g);
    memcpy(orig, pkt, n);
    CHECK(ism_le_corrupt(pkt, n, &g) == 0 && memcmp(pkt, orig, n) == 0, "a pure ACK was changed");
    n = make_packet(pkt, 17, 8, 64, &g);
    pkt[6] = 0x20; /* more fragments */
    memcpy(orig, pkt, n);
    CHECK(ism_le_corrupt(pkt, n, &g) == 0 && memcmp(pkt, orig, n) == 0, "a fragment was changed");
    n = make_packet(pkt, 17, 8, 64, &g);
    pkt[26] = pkt[27] = 0;
    CHECK(ism_le_corrupt(pkt, n, &g) == 1 && pkt[26] == 0 && pkt[27] == 0,
          "a UDP datagram without checksum got one");
    /* the link's share of corrupted packets */
    ism_le_link_conf c;
    ism_le_link_conf_default(&c);
    c.corrupt = 0.01;
    ism_le_link l;
    ism_le_link_init(&l, &c, 8, 0);
    int hits = 0, total = 100000;
    for (int i = 0; i < total; i++)
        hits += ism_le_link_corrupts(&l);
    CHECK(binomial_ok(hits, total, 0.01, 5), "%d of %d chosen for corruption", hits, total);
}

/* New settings while running: later packets take them; counters go on. */
static void test_reconf(void)
{
    ism_le_link_conf c;
    ism_le_link_conf_default(&c);
    c.delay_ns = 1000000;
    ism_le_link l;
    ism_le_link_init(&l, &c, 4, 0);
    uint64_t rel[2];
    CHECK(ism_le_link_admit(&l, 0, 1000, rel) == 1 && rel[0] == 1000000, "before: %llu",
          (unsigned long long)rel[0]);
    c.delay_ns = 5000000;
    c.mtu = 1200;
    ism_le_link_reconf(&l, &c, 10000000);
    CHECK(ism_le_link_admit(&l, 10000000, 1000, rel) == 1 && rel[0] == 15000000, "after: %llu",
          (unsigned long long)rel[0]);
    CHECK(ism_le_link_admit(&l, 10000000, 1300, rel) == 0 && l.st.drop_mtu == 1,
          "the new MTU does not hold");
    CHECK(l.st.in == 3, "counters restarted: in = %llu", (unsigned long long)l.st.in);
    char err[256];
    CHECK(ism_le_conf_parse("corrupt=0.25", &c, err, sizeof err) == 0 && c.corrupt == 0.25, "%s", err);
    CHECK(ism_le_conf_parse("corrupt=1.5", &c, err, sizeof err) == -1, "corrupt=1.5 accepted");
}

/* The polling lead: the maximum until 8 wakeups are known and in fixed mode; then the
 * wakeups' mean + 2 deviations + 2 us, capped at the maximum; it follows a change. */
static void test_lead(void)
{
    ism_le_lead fixed, a;
    ism_le_lead_init(&fixed, 50000, 0);
    ism_le_lead_init(&a, 50000, 1);
    CHECK(ism_le_lead_ns(&a) == 50000, "before any wakeup: %llu", (unsigned long long)ism_le_lead_ns(&a));
    for (int i = 0; i < 7; i++)
        ism_le_lead_sample(&a, 10000);
    CHECK(ism_le_lead_ns(&a) == 50000, "7 wakeups are not enough to trust: %llu",
          (unsigned long long)ism_le_lead_ns(&a));
    /* wakeups alternating 9 and 11 us late: mean 10, deviation -> 1 */
    for (int i = 0; i < 200; i++) {
        ism_le_lead_sample(&a, i % 2 ? 9000 : 11000);
        ism_le_lead_sample(&fixed, i % 2 ? 9000 : 11000);
    }
    uint64_t l = ism_le_lead_ns(&a);
    CHECK(l >= 13500 && l <= 14500, "steady 10 +- 1 us wakeups: lead %llu ns, want ~14000",
          (unsigned long long)l);
    CHECK(ism_le_lead_ns(&fixed) == 50000, "fixed mode moved: %llu",
          (unsigned long long)ism_le_lead_ns(&fixed));
    /* the machine gets busy: 100 us wakeups drive the lead to the cap */
    for (int i = 0; i < 40; i++)
        ism_le_lead_sample(&a, 100000);
    CHECK(ism_le_lead_ns(&a) == 50000, "late wakeups must raise the lead to the cap: %llu",
          (unsigned long long)ism_le_lead_ns(&a));
    /* and quiet again: back down */
    for (int i = 0; i < 200; i++)
        ism_le_lead_sample(&a, 5000);
    l = ism_le_lead_ns(&a);
    CHECK(l >= 6500 && l <= 7500, "5 us wakeups again: lead %llu ns, want ~7000",
          (unsigned long long)l);
}

int main(void)
{
    test_tbucket_rate();
    test_tbucket_queue_bound();
    test_bernoulli();
    test_gilbert_elliott();
    test_jitter();
    test_reorder_share();
    test_link_dup_mtu();
    test_pktq();
    test_conf();
    test_lead();
    test_corrupt();
    test_reconf();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("linkemu models: all checks passed\n");
    return 0;
}
