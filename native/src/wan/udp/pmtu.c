/* pmtu.c: path-MTU discovery of a reliable-UDP connection, done by the transport itself
 * (packetization-layer PMTUD in the manner of RFC 8899, DPLPMTUD), so it needs no ICMP:
 * paths that drop ICMP, tunnels, and the project's own link emulator (which drops a
 * packet above a link's MTU and says nothing) all get the same treatment.
 *
 * Owns the size of a full data packet (c->dgram, c->payload) and the probing state.
 * Each side discovers the MTU of the direction it sends in.
 *
 *   - Start at the base size, an IP MTU of 1280 (IPv6's minimum link MTU, which
 *     today's Internet paths, tunnels included, carry; RFC 8899 recommends a base of
 *     about 1200 bytes of UDP payload) or the ceiling if that is lower. The ceiling is
 *     the option `mtu` as agreed at setup, lowered to the route's MTU (IP_MTU): with DF
 *     set the kernel refuses a larger datagram outright, which is not a probe. The
 *     socket uses IP_PMTUDISC_PROBE (setup.c): DF on, and the kernel's own PMTU cache,
 *     fed by ICMP we do not trust, neither refuses nor splits what we send.
 *   - Search: one probe in flight at a time, a DATA packet with PING|PAD padded to the
 *     size being tried (authenticated, with CRC, like every packet), confirmed only by
 *     the peer's acknowledgement. The first probe of a search tries the ceiling (a path
 *     usually carries what its ends were configured for); after that, bisection between
 *     the largest size confirmed and the smallest that failed. A size has failed when
 *     MAX_PROBES = 3 probes of it in a row were lost (RFC 8899's MAX_PROBES). The search
 *     ends within PM_STEP bytes: at most 3 x (1 + log2((ceiling - base) / 16)) probes,
 *     30 from 1280 to 9000. A confirmed size is used at once for new packets.
 *   - Probes are not in flight (outside the congestion window, one at a time) and carry
 *     no stream bytes: their loss, by gap, time or our own timer (one RTO), is news for
 *     the search only, never for the congestion controller or the retransmission queue.
 *     A probe lost while data packets were lost too says nothing about its size
 *     (congestion drops large and small alike): it is sent again two RTTs later and not
 *     counted, at most PM_UNSURE_MAX times per search. Without this rule BBR's startup
 *     losses on a 1 Gbit/s link failed sizes that fit, and searches settled at 1438-2139
 *     on a 9000 link.
 *   - Black hole: full-size packets stop arriving while the connection lives (the path
 *     MTU fell mid-transfer). Counted as retransmissions of packets above the base size
 *     lost again, PM_BH_LOSSES of them with no packet as large acknowledged in between
 *     (one lost retransmission is ordinary bad luck; three in a row, all large, are
 *     not), and no packet above the base acknowledged for an RTO (heavy random loss
 *     can lose three retransmissions at once, found by one ACK, but it lets most large
 *     packets through: at 20% loss a rewind without this rule resent 500 packets the
 *     peer had). The suspicion is then tested by pairs of probes, one of the current
 *     size followed by one of the base size: twice the small one acknowledged while the
 *     large one is not confirms it; the large one acknowledged is a false alarm (seen in
 *     BBR's startup at 1 Gbit/s before this test existed); both lost three times is an
 *     outage, left to the dead-peer timeout. Then the size falls back to the base, everything in flight is abandoned and
 *     sent again in the smaller size (udp_send_rewind), and a search starts below the
 *     size that failed. A false alarm (heavy loss) costs a search, never data.
 *   - Raise: pmtu_raise_ms after a search ended below the ceiling, search again from
 *     the current size (RFC 8899's PMTU_RAISE_TIMER, 600 s by default), so a path whose
 *     MTU grew is found.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "conn.h"

#define PM_BASE_MTU 1280
#define PM_IP_UDP 28     /* IPv4 + UDP headers */
#define PM_MAX_PROBES 3
#define PM_STEP 16
#define PM_BH_LOSSES 3
#define PM_CONFIRM_PAIRS 2 /* pairs that must show "small passes, large does not" */
#define PM_PAIRS_LOST 3    /* pairs lost whole: an outage, not a size (give up) */
#define PM_UNSURE_MAX 12   /* probe losses per search excused by congestion, at most */

static void set_size(ism_udp_conn *c, uint32_t dgram)
{
    c->dgram = dgram;
    c->payload = dgram - ISM_UDPW_DATA_HDR - udp_seal_overhead(&c->seal);
    c->cc->set_mss(c->cc_state, c->payload);
}

void udp_pmtu_init(ism_udp_conn *c, int64_t now)
{
    c->pm.start_us = now;
    c->pm.large_acked_us = now;
    c->st.pmtu_raised_us = -1;
    uint32_t ceil = (uint32_t)c->o.mtu - PM_IP_UDP;
    c->pm.on = c->o.pmtud;
    if (c->pm.on) {
        int mtu = 0;
        socklen_t l = sizeof mtu;
        if (getsockopt(c->fd, IPPROTO_IP, IP_MTU, &mtu, &l) == 0 &&
            mtu >= ISM_UDPW_MIN_DGRAM + PM_IP_UDP && (uint32_t)mtu - PM_IP_UDP < ceil)
            ceil = (uint32_t)mtu - PM_IP_UDP;
    }
    uint32_t base = PM_BASE_MTU - PM_IP_UDP;
    if (!c->pm.on || base > ceil)
        base = ceil;
    c->pm.base = base;
    c->pm.ceil = ceil;
    c->pm.lo = base;
    c->pm.hi = ceil + 1;
    c->pm.searching = ceil > base;
    c->pm.bh_min = UINT32_MAX;
    c->pm.raise_at_us = INT64_MAX;
    c->dgram = base;
    c->payload = base - ISM_UDPW_DATA_HDR - udp_seal_overhead(&c->seal);
    /* ACKs stay within the base size: a receiver learns nothing of the reverse path's
     * MTU, and a lost large ACK (many SACK ranges, heavy loss) hurts most. */
    c->ack_dgram = base;
}

static void search(ism_udp_conn *c, uint32_t hi)
{
    c->pm.searching = 1;
    c->pm.lo = c->dgram;
    c->pm.hi = hi;
    c->pm.tries = 0;
}

/* The search is over when the bracket is narrower than a step. */
static void maybe_done(ism_udp_conn *c, int64_t now)
{
    if (!c->pm.searching || c->pm.probe || c->pm.hi - c->pm.lo > PM_STEP)
        return;
    c->pm.searching = 0;
    c->pm.raise_at_us = c->dgram < c->pm.ceil ? now + (int64_t)c->o.pmtu_raise_ms * 1000
                                              : INT64_MAX;
}

/* Emit a probe of size; its packet number, or UINT64_MAX when there was no room. */
static uint64_t probe(ism_udp_conn *c, uint32_t size, int confirm, int64_t now)
{
    if (udp_emit_probe(c, size, now) != 0)
        return UINT64_MAX;
    uint64_t pn = c->next_pn - 1;
    c->pkts[pn % UDP_PKT_RING].confirm = (uint8_t)confirm;
    c->st.pmtu_probes_sent++;
    return pn;
}

static void send_pair(ism_udp_conn *c, int64_t now)
{
    /* the large one first: on a path that keeps order, its fate is known by the time
     * the small one's acknowledgement arrives */
    uint64_t big = probe(c, c->dgram, 1, now);
    uint64_t small = big == UINT64_MAX ? UINT64_MAX : probe(c, c->pm.base, 1, now);
    if (small == UINT64_MAX) {
        if (big != UINT64_MAX)
            c->pkts[big % UDP_PKT_RING].confirm = 0; /* orphan: plain late news */
        c->pm.next_probe_us = now + 1000;
        return;
    }
    c->pm.pair_out = 1;
    c->pm.big_pn = big;
    c->pm.small_pn = small;
    c->pm.big_st = c->pm.small_st = 0;
    c->pm.pair_sent_us = now;
}

void udp_pmtu_send(ism_udp_conn *c, int64_t now)
{
    maybe_done(c, now);
    if (c->err || now < c->pm.next_probe_us)
        return;
    if (c->pm.confirming) {
        if (!c->pm.pair_out)
            send_pair(c, now);
        return; /* the search waits until the suspicion is settled */
    }
    if (!c->pm.searching || c->pm.probe)
        return;
    uint32_t size = c->pm.hi > c->pm.ceil ? c->pm.ceil : c->pm.lo + (c->pm.hi - c->pm.lo) / 2;
    uint64_t pn = probe(c, size, 0, now);
    if (pn == UINT64_MAX) {
        c->pm.next_probe_us = now + 1000; /* no room on the socket: not a busy loop */
        return;
    }
    c->pm.probe = size;
    c->pm.probe_pn = pn;
    c->pm.probe_sent_us = now;
    c->pm.lost_at_probe = c->st.pkts_lost;
}

void udp_pmtu_probe_done(ism_udp_conn *c, const udp_pkt *p, uint64_t pn, int acked)
{
    uint32_t size = p->probe;
    if (acked)
        c->st.pmtu_probes_acked++;
    else
        c->st.pmtu_probes_lost++;
    if (p->confirm) {
        if (c->pm.pair_out && pn == c->pm.big_pn)
            c->pm.big_st = acked ? 1 : 2;
        else if (c->pm.pair_out && pn == c->pm.small_pn)
            c->pm.small_st = acked ? 1 : 2;
        return;
    }
    if (acked) {
        /* The path carries this size now (even if the probe was given up on before). */
        if (size > c->pm.lo)
            c->pm.lo = size;
        if (c->pm.hi <= c->pm.lo)
            c->pm.hi = c->pm.lo + 1;
        if (size > c->dgram) {
            set_size(c, size);
            c->st.pmtu_raised_us = udp_now_us() - c->pm.start_us;
        }
    }
    if (!c->pm.probe || pn != c->pm.probe_pn)
        return; /* an older probe's late news */
    c->pm.probe = 0;
    if (!acked && c->st.pkts_lost > c->pm.lost_at_probe && c->pm.unsure < PM_UNSURE_MAX) {
        /* Data was lost too while this probe was out: congestion, which drops a large
         * packet as readily as a small one, may have taken it. Not evidence about the
         * size; try again a round trip later (bounded per search). */
        c->pm.unsure++;
        c->pm.next_probe_us = c->pm.probe_sent_us + (c->srtt_us > 0 ? 2 * c->srtt_us : 100000);
        return;
    }
    if (acked || ++c->pm.tries >= PM_MAX_PROBES) {
        if (!acked && size < c->pm.hi)
            c->pm.hi = size;
        c->pm.tries = 0;
    }
}

void udp_pmtu_data_acked(ism_udp_conn *c, const udp_pkt *p, int64_t now)
{
    uint32_t size = p->len + ISM_UDPW_DATA_HDR + udp_seal_overhead(&c->seal);
    if (size > c->pm.base)
        c->pm.large_acked_us = now;
    if (c->pm.bh && size >= c->pm.bh_min) {
        c->pm.bh = 0;
        c->pm.bh_min = UINT32_MAX;
    }
}

void udp_pmtu_data_lost(ism_udp_conn *c, const udp_pkt *p)
{
    uint32_t size = p->len + ISM_UDPW_DATA_HDR + udp_seal_overhead(&c->seal);
    if (!c->pm.on || !p->rtx || size <= c->pm.base)
        return;
    c->pm.bh++;
    if (size < c->pm.bh_min)
        c->pm.bh_min = size;
}

static void end_confirm(ism_udp_conn *c)
{
    c->pm.confirming = c->pm.pair_out = 0;
    c->pm.pairs_ok = c->pm.pairs_lost = 0;
    c->pm.bh = 0;
    c->pm.bh_min = UINT32_MAX;
}

static void black_hole(ism_udp_conn *c, int64_t now)
{
    uint32_t failed = c->pm.bh_min < c->dgram ? c->pm.bh_min : c->dgram;
    c->st.pmtu_black_holes++;
    end_confirm(c);
    c->pm.probe = 0; /* abandoned with the rest */
    set_size(c, c->pm.base);
    udp_send_rewind(c, now);
    search(c, failed);
    c->pm.unsure = 0;
    c->pm.next_probe_us = now;
}

/* A suspected black hole is settled by pairs of probes: the current size, then the
 * base. The small one passing while the large one does not, PM_CONFIRM_PAIRS times in
 * a row, confirms it; the large one passing is a false alarm (congestion took the
 * retransmissions); both lost again and again is an outage, which the dead-peer timeout
 * handles, not the packet size. */
static void confirm_step(ism_udp_conn *c, int64_t now)
{
    if (!c->pm.pair_out)
        return;
    if (now - c->pm.pair_sent_us >= udp_rto_us(c)) {
        /* given up on: mark what is still out as lost */
        if (c->pm.big_st == 0)
            c->pm.big_st = 2;
        if (c->pm.small_st == 0)
            c->pm.small_st = 2;
    }
    if (c->pm.big_st == 1) {
        end_confirm(c);
    } else if (c->pm.small_st == 1) {
        c->pm.pair_out = 0;
        c->pm.pairs_lost = 0;
        if (++c->pm.pairs_ok >= PM_CONFIRM_PAIRS)
            black_hole(c, now);
        else
            c->pm.next_probe_us = now;
    } else if (c->pm.small_st == 2 && c->pm.big_st == 2) {
        c->pm.pair_out = 0;
        if (++c->pm.pairs_lost >= PM_PAIRS_LOST)
            end_confirm(c);
        else
            c->pm.next_probe_us = now;
    }
}

void udp_pmtu_timers(ism_udp_conn *c, int64_t now)
{
    if (!c->pm.on)
        return;
    if (!c->pm.confirming && c->pm.bh >= PM_BH_LOSSES && c->dgram > c->pm.base &&
        now - c->pm.large_acked_us >= udp_rto_us(c)) {
        c->pm.confirming = 1;
        c->pm.pairs_ok = c->pm.pairs_lost = 0;
        c->pm.next_probe_us = now;
    }
    confirm_step(c, now);
    if (c->pm.probe && now - c->pm.probe_sent_us >= udp_rto_us(c)) {
        udp_pkt *p = &c->pkts[c->pm.probe_pn % UDP_PKT_RING];
        if (p->state == PK_INFLIGHT && p->probe)
            p->state = PK_LOST;
        udp_pmtu_probe_done(c, p, c->pm.probe_pn, 0);
    }
    if (!c->pm.searching && now >= c->pm.raise_at_us) {
        c->pm.raise_at_us = INT64_MAX;
        if (c->dgram < c->pm.ceil) {
            search(c, c->pm.ceil + 1);
            c->pm.unsure = 0;
            c->pm.next_probe_us = now;
        }
    }
    maybe_done(c, now);
}

int64_t udp_pmtu_timer_us(const ism_udp_conn *c)
{
    if (!c->pm.on)
        return INT64_MAX;
    int64_t t = INT64_MAX;
    if (c->pm.confirming) /* the search waits meanwhile */
        t = c->pm.pair_out ? c->pm.pair_sent_us + udp_rto_us(c) : c->pm.next_probe_us;
    else if (!c->pm.searching)
        t = c->pm.raise_at_us;
    else if (!c->pm.probe)
        t = c->pm.next_probe_us;
    if (c->pm.probe && c->pm.probe_sent_us + udp_rto_us(c) < t)
        t = c->pm.probe_sent_us + udp_rto_us(c);
    return t;
}
