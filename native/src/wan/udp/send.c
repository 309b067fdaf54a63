/* send.c: the sender half of a reliable-UDP connection.
 *
 * The stream is cut into chunks (at most one packet's payload each) in the order the
 * application wrote it; a chunk keeps its offset and length for life, so a
 * retransmission carries exactly the bytes of the original under a new packet number
 * (packet numbers are never reused, which makes every RTT sample and every ACK
 * unambiguous). Packets are tracked in a ring indexed by packet number, chunks in a ring
 * indexed by chunk number; the send buffer frees up to the oldest unacknowledged chunk.
 *
 * Loss is detected three ways: by gaps (a packet reo_thresh numbers below the largest
 * acknowledged, where reo_thresh grows when a "lost" packet turns out to have arrived),
 * by time (sent more than 9/8 of an RTT before an acknowledged one), and by the
 * retransmission timeout RTO = srtt + 4 rttvar + ACK delay, doubled on each expiry
 * (the first expiry only probes, see udp_send_timers()).
 * An explicit NACK from the receiver counts as a gap. Lost chunks go to the
 * retransmission queue, which is served before any new data.
 *
 * Delivery-rate samples for the congestion controller follow the BBR draft: every
 * packet remembers how much had been delivered when it was sent.
 *
 * Path-MTU probes (pmtu.c) are packets too, with numbers of their own, but they carry
 * no stream bytes and are not in flight: their loss, however detected, goes to pmtu.c
 * and never to the controller or the retransmission queue. When the packet size falls
 * back, udp_send_rewind() abandons every packet in flight and cuts the unacknowledged
 * stream into chunks of the new size again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>
#include <time.h>

#include "conn.h"

#define TIME_THRESH_NUM 9
#define TIME_THRESH_DEN 8
#define MIN_RTO_US 50000
#define MAX_RTO_US 60000000

int64_t udp_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void udp_send_init(ism_udp_conn *c, int64_t now)
{
    c->largest_acked = -1;
    c->srtt_us = c->latest_rtt_us = 0;
    c->rttvar_us = 0;
    c->min_rtt_us = -1;
    c->rto_base_us = now;
    c->delivered_us = c->first_sent_us = now;
    c->next_send_us = now;
    c->reo_thresh = 3;
    c->cc->init(c->cc_state, c->payload, c->o.ack_delay_us, now);
    if (c->o.start_rate && c->cc->start_at)
        c->cc->start_at(c->cc_state, c->o.start_rate);
}

int64_t udp_rto_us(const ism_udp_conn *c)
{
    int64_t rto;
    if (c->srtt_us == 0)
        rto = 1000000; /* no sample yet */
    else {
        int64_t var = 4 * c->rttvar_us > 1000 ? 4 * c->rttvar_us : 1000;
        rto = c->srtt_us + var + 2 * (int64_t)c->o.ack_delay_us;
    }
    if (rto < MIN_RTO_US)
        rto = MIN_RTO_US;
    /* Backoff doubles up to 4x: dead-peer detection, not an ever longer timer, ends a
     * hopeless connection, and a short timer keeps a lossy tail (a lone FIN) moving. */
    for (int i = 0; i < c->rto_backoff && i < 2 && rto < MAX_RTO_US; i++)
        rto *= 2;
    return rto < MAX_RTO_US ? rto : MAX_RTO_US;
}

static void ack_chunk(ism_udp_conn *c, uint64_t n)
{
    if (n == UDP_NO_CHUNK || n < c->chunk_head || n >= c->chunk_tail)
        return;
    udp_chunk *k = &c->chunks[n % UDP_CHUNK_RING];
    if (k->state != CK_ACKED) {
        k->state = CK_ACKED;
        c->st.bytes_acked += k->len;
    }
}

static void advance(ism_udp_conn *c)
{
    while (c->lua < c->next_pn && c->pkts[c->lua % UDP_PKT_RING].state != PK_INFLIGHT)
        c->lua++;
    while (c->chunk_head < c->chunk_tail) {
        udp_chunk *k = &c->chunks[c->chunk_head % UDP_CHUNK_RING];
        if (k->state != CK_ACKED)
            break;
        c->snd_una = k->offset + k->len;
        if (k->fin)
            c->fin_acked = 1;
        c->chunk_head++;
    }
}

/* Mark one in-flight packet lost and queue its chunk unless a newer copy is out. */
static void lose(ism_udp_conn *c, uint64_t pn, ism_udp_loss_event *ev)
{
    udp_pkt *p = &c->pkts[pn % UDP_PKT_RING];
    p->state = PK_LOST;
    if (p->probe) {
        udp_pmtu_probe_done(c, p, pn, 0);
        return;
    }
    udp_pmtu_data_lost(c, p);
    c->inflight -= p->len;
    c->pkts_inflight--;
    c->st.pkts_lost++;
    ev->lost_bytes += p->len;
    if (p->sent_us > ev->sent_us)
        ev->sent_us = p->sent_us;
    if (p->chunk == UDP_NO_CHUNK || p->chunk < c->chunk_head)
        return;
    udp_chunk *k = &c->chunks[p->chunk % UDP_CHUNK_RING];
    if (k->state == CK_INFLIGHT && k->last_pn == pn) {
        k->state = CK_QUEUED;
        c->rtx[c->rtx_tail++ % UDP_CHUNK_RING] = p->chunk;
    }
}

static void report_loss(ism_udp_conn *c, ism_udp_loss_event *ev, int64_t now)
{
    if (ev->lost_bytes == 0 && !ev->timeout)
        return;
    ev->now_us = now;
    ev->inflight = c->inflight;
    c->cc->on_loss(c->cc_state, ev);
}

static void detect_losses(ism_udp_conn *c, int64_t now, ism_udp_loss_event *ev)
{
    if (c->largest_acked < 0)
        return;
    int64_t rtt = c->srtt_us > c->latest_rtt_us ? c->srtt_us : c->latest_rtt_us;
    int64_t thresh = rtt * TIME_THRESH_NUM / TIME_THRESH_DEN;
    if (thresh < 1000)
        thresh = 1000;
    for (uint64_t pn = c->lua; pn < (uint64_t)c->largest_acked; pn++) {
        udp_pkt *p = &c->pkts[pn % UDP_PKT_RING];
        if (p->state != PK_INFLIGHT)
            continue;
        if ((uint64_t)c->largest_acked - pn >= c->reo_thresh || now - p->sent_us >= thresh)
            lose(c, pn, ev);
    }
}

static void rtt_sample(ism_udp_conn *c, int64_t latest, uint32_t ack_delay)
{
    if (latest <= 0)
        latest = 1;
    c->latest_rtt_us = latest;
    if (c->min_rtt_us < 0 || latest < c->min_rtt_us)
        c->min_rtt_us = latest;
    int64_t adj = latest;
    if (adj - (int64_t)ack_delay >= c->min_rtt_us)
        adj -= ack_delay;
    if (c->srtt_us == 0) {
        c->srtt_us = adj;
        c->rttvar_us = adj / 2;
    } else {
        int64_t d = c->srtt_us > adj ? c->srtt_us - adj : adj - c->srtt_us;
        c->rttvar_us = (3 * c->rttvar_us + d) / 4;
        c->srtt_us = (7 * c->srtt_us + adj) / 8;
    }
}

/* A round trip measured during set-up (the server: from sending its parameters over TCP
 * to the client's first UDP packet) seeds the RTO estimate, as TCP's handshake does. A
 * side that only receives has no other sample, and without one its FIN would be resent
 * after 1, 2, 4, 4 ... s: on a link with bursty loss every copy in the peer's patience can
 * fall into one burst (seen: the sender waited 30 s for a FIN the receiver had given up
 * on). Only the RTO uses it: min_rtt and the congestion controls wait for real samples. */
void udp_seed_rtt(ism_udp_conn *c, int64_t rtt_us)
{
    if (c->srtt_us == 0 && rtt_us > 0) {
        c->srtt_us = rtt_us;
        c->rttvar_us = rtt_us / 2;
    }
}

void udp_on_ack(ism_udp_conn *c, const ism_udpw_ack *a, int64_t now)
{
    c->st.acks_received++;
    if (a->rcv_limit > c->peer_limit)
        c->peer_limit = a->rcv_limit;
    if (a->largest >= c->next_pn) {
        udp_fail(c, ISM_UDP_ECLOSED,
                 "peer %s acknowledged packet %llu that was never sent (protocol violation)",
                 c->peer, (unsigned long long)a->largest);
        return;
    }
    uint64_t acked = 0;
    udp_pkt *sample = NULL;
    int largest_new = 0;
    for (unsigned i = 0; i < a->nranges; i++) {
        ism_udpw_range r = ism_udpw_ack_range(a, i);
        uint64_t lo = r.hi - (r.count - 1);
        if (r.hi < c->lua)
            break;
        if (lo < c->lua)
            lo = c->lua;
        for (uint64_t pn = r.hi + 1; pn-- > lo;) {
            udp_pkt *p = &c->pkts[pn % UDP_PKT_RING];
            if (p->probe) {
                /* a probe passed (if it had been given up on, it passed late) */
                if (p->state == PK_INFLIGHT || p->state == PK_LOST)
                    udp_pmtu_probe_done(c, p, pn, 1);
                p->state = PK_ACKED;
                continue;
            }
            if (p->state == PK_INFLIGHT) {
                c->inflight -= p->len;
                c->pkts_inflight--;
                acked += p->len;
                udp_pmtu_data_acked(c, p, now);
            } else if (p->state == PK_LOST) {
                udp_pmtu_data_acked(c, p, now);
                /* It arrived after all: the path reorders more than we assumed. */
                if (c->reo_thresh < 256)
                    c->reo_thresh += c->reo_thresh / 2 + 1;
            } else {
                continue;
            }
            p->state = PK_ACKED;
            c->delivered += p->len;
            c->delivered_us = now;
            if (sample == NULL) {
                sample = p; /* the newest packet acknowledged by this ACK */
                largest_new = pn == a->largest;
            }
            ack_chunk(c, p->chunk);
        }
    }
    ism_udp_loss_event ev = {0};
    for (unsigned i = 0; i < a->nnacks; i++) {
        uint64_t pn = ism_udpw_ack_nack(a, i);
        if (pn >= c->lua && pn < c->next_pn && c->pkts[pn % UDP_PKT_RING].state == PK_INFLIGHT)
            lose(c, pn, &ev);
    }
    if (sample) {
        if ((int64_t)a->largest > c->largest_acked)
            c->largest_acked = (int64_t)a->largest;
        c->rto_base_us = now;
        c->rto_backoff = 0;
        if (largest_new)
            rtt_sample(c, now - sample->sent_us, a->ack_delay_us);
        c->first_sent_us = sample->sent_us;
    }
    detect_losses(c, now, &ev);
    advance(c);
    report_loss(c, &ev, now);
    if (sample) {
        ism_udp_ack_sample s = {0};
        s.now_us = now;
        s.acked_bytes = acked;
        s.inflight = c->inflight;
        s.rtt_us = largest_new ? c->latest_rtt_us : -1;
        s.min_rtt_us = c->min_rtt_us;
        s.srtt_us = c->srtt_us;
        s.delivered = c->delivered;
        s.prior_delivered = sample->delivered;
        s.rate_delivered = c->delivered - sample->delivered;
        int64_t snd = sample->sent_us - sample->first_sent_us;
        int64_t ack = now - sample->delivered_us;
        s.rate_interval_us = snd > ack ? snd : ack;
        s.app_limited = sample->app_limited;
        c->cc->on_ack(c->cc_state, &s);
    }
    udp_pmtu_timers(c, now); /* a black hole this ACK revealed */
}

/* Build and queue one data packet for chunk n, or a keepalive probe when n ==
 * UDP_NO_CHUNK, or a path-MTU probe padded to a datagram of `probe` bytes. */
static int emit(ism_udp_conn *c, uint64_t n, uint32_t probe, int64_t now)
{
    if (c->next_pn - c->lua >= UDP_PKT_RING)
        return -1; /* the oldest packet is still unresolved; the RTO will settle it */
    udp_txslot *s = udp_tx_slot(c);
    if (s == NULL)
        return -1;
    uint64_t pn = c->next_pn++;
    udp_pkt *p = &c->pkts[pn % UDP_PKT_RING];
    uint16_t flags = 0;
    uint64_t off = c->snd_nxt;
    uint32_t len = 0;
    p->rtx = p->confirm = 0;
    if (n != UDP_NO_CHUNK) {
        udp_chunk *k = &c->chunks[n % UDP_CHUNK_RING];
        if (k->state == CK_QUEUED) {
            c->st.pkts_retransmitted++;
            p->rtx = 1;
        }
        k->state = CK_INFLIGHT;
        k->last_pn = pn;
        off = k->offset;
        len = k->len;
        if (k->fin)
            flags |= ISM_UDPW_F_FIN;
    } else {
        flags |= ISM_UDPW_F_PING;
    }
    if (probe) {
        ism_udpw_encode_data(s->buf, flags | ISM_UDPW_F_PAD, c->tok_tx, pn, off,
                             (uint32_t)(pn - c->lua));
        /* padded so that the datagram, sealed or not, is `probe` bytes */
        size_t plain = probe - udp_seal_overhead(&c->seal);
        memset(s->buf + ISM_UDPW_DATA_HDR, 0, plain - ISM_UDPW_DATA_HDR);
        s->len = plain;
        s->iov[0] = (struct iovec){s->buf, s->len};
        s->niov = 1;
        udp_seal_slot(c, s);
        p->chunk = UDP_NO_CHUNK;
        p->sent_us = now;
        p->first_sent_us = c->first_sent_us;
        p->delivered_us = c->delivered_us;
        p->delivered = c->delivered;
        p->len = 0;
        p->probe = (uint16_t)probe;
        p->state = PK_INFLIGHT;
        p->app_limited = 1; /* not a rate sample of the data path */
        c->st.pkts_sent++;
        c->last_send_us = now;
        return 0;
    }
    ism_udpw_encode_data(s->buf, flags, c->tok_tx, pn, off, (uint32_t)(pn - c->lua));
    size_t at = off % c->sbuf_size;
    size_t first = len < c->sbuf_size - at ? len : c->sbuf_size - at;
    const uint8_t *a = c->sbuf + at, *b = c->sbuf;
    size_t blen = len - first;
    if (c->o.impair) {
        /* The shim may flip bits: it must work on a copy, never on the send buffer. */
        memcpy(s->buf + ISM_UDPW_DATA_HDR, a, first);
        memcpy(s->buf + ISM_UDPW_DATA_HDR + first, b, blen);
        s->len = ISM_UDPW_DATA_HDR + len;
        s->iov[0] = (struct iovec){s->buf, s->len};
        s->niov = 1;
        udp_seal_slot(c, s);
    } else {
        s->iov[0] = (struct iovec){s->buf, ISM_UDPW_DATA_HDR};
        s->iov[1] = (struct iovec){(void *)a, first};
        s->iov[2] = (struct iovec){(void *)b, blen};
        s->niov = blen ? 3 : first ? 2 : 1;
        s->len = ISM_UDPW_DATA_HDR + len;
        udp_seal_slot(c, s); /* a sealed one becomes one piece in buf */
    }
    if (c->pkts_inflight == 0)
        c->rto_base_us = now;
    if (c->inflight == 0)
        c->first_sent_us = c->delivered_us = now;
    p->chunk = n;
    p->probe = 0;
    p->sent_us = now;
    p->first_sent_us = c->first_sent_us;
    p->delivered_us = c->delivered_us;
    p->delivered = c->delivered;
    p->len = len;
    p->state = PK_INFLIGHT;
    p->app_limited = c->app_limited_until > c->delivered;
    c->inflight += len;
    c->pkts_inflight++;
    c->st.pkts_sent++;
    c->st.bytes_sent += len;
    c->last_send_us = now;
    return 0;
}

/* The next new chunk, cut from the unsent stream, or UDP_NO_CHUNK. */
static uint64_t new_chunk(ism_udp_conn *c)
{
    if (c->chunk_tail - c->chunk_head >= UDP_CHUNK_RING || c->fin_queued)
        return UDP_NO_CHUNK;
    uint64_t avail = c->snd_end - c->snd_nxt;
    uint64_t room = c->peer_limit > c->snd_nxt ? c->peer_limit - c->snd_nxt : 0;
    uint64_t len = avail < c->payload ? avail : c->payload;
    if (len > room)
        len = room;
    int fin = c->fin_wanted && c->snd_nxt + len == c->snd_end;
    if (len == 0 && !fin)
        return UDP_NO_CHUNK;
    uint64_t n = c->chunk_tail++;
    udp_chunk *k = &c->chunks[n % UDP_CHUNK_RING];
    k->offset = c->snd_nxt;
    k->len = (uint32_t)len;
    k->fin = (uint8_t)fin;
    k->state = CK_INFLIGHT;
    k->last_pn = UINT64_MAX;
    c->snd_nxt += len;
    if (fin)
        c->fin_queued = 1;
    return n;
}

static int has_new(const ism_udp_conn *c)
{
    if (c->fin_queued || c->chunk_tail - c->chunk_head >= UDP_CHUNK_RING)
        return 0;
    if (c->fin_wanted && c->snd_nxt == c->snd_end)
        return 1;
    return c->snd_nxt < c->snd_end && c->snd_nxt < c->peer_limit;
}

static uint64_t pacing_rate(const ism_udp_conn *c)
{
    uint64_t r = c->cc->pacing_rate(c->cc_state);
    if (c->o.max_rate && (r == 0 || r > c->o.max_rate))
        r = c->o.max_rate;
    return r;
}

void udp_send_data(ism_udp_conn *c, int64_t now)
{
    uint64_t cwnd = c->cc->cwnd(c->cc_state);
    uint64_t rate = pacing_rate(c);
    /* Pacing credit: a sender woken late (timer slack, a busy CPU) may catch up on what
     * it missed within this window, else every late wake-up would lower the rate it
     * achieves, and a model-based controller, which paces at the rate it measures,
     * would follow it down. Half an RTT (2..50 ms): a burst that a queue of one BDP,
     * the usual bottleneck buffer, absorbs. */
    int64_t credit = c->srtt_us / 2;
    if (credit < 2000)
        credit = 2000;
    if (credit > 50000)
        credit = 50000;
    if (c->next_send_us < now - credit)
        c->next_send_us = now - credit;
    /* Pacing quantum: once a packet is due, a wake-up sends what is due within the next
     * min(1 ms, 64 KiB at the pacing rate), then sleeps until that has passed, as Linux
     * paces TCP in TSO-sized bursts. A wake-up per packet (every 12 us at 1 Gbit/s) cost more CPU than the packet,
     * and one GSO message can carry the whole burst. A bottleneck queue of any useful size
     * absorbs 64 KiB. */
    int64_t quantum = rate ? (int64_t)(65536ull * 1000000u / rate) : 0;
    if (quantum > 1000)
        quantum = 1000;
    for (int burst = 0;; burst = 1) {
        /* a burst starts only when a packet is due, then runs a quantum ahead */
        if (rate && c->next_send_us > now + (burst ? quantum : 0))
            break;
        if (c->inflight + c->payload > cwnd && c->inflight > 0)
            break;
        uint64_t n = UDP_NO_CHUNK;
        while (c->rtx_head < c->rtx_tail) {
            uint64_t k = c->rtx[c->rtx_head % UDP_CHUNK_RING];
            if (k >= c->chunk_head && c->chunks[k % UDP_CHUNK_RING].state == CK_QUEUED) {
                n = k;
                break;
            }
            c->rtx_head++; /* acknowledged meanwhile (the loss was spurious) */
        }
        int is_rtx = n != UDP_NO_CHUNK;
        if (!is_rtx) {
            if (!has_new(c)) {
                /* Application-limited: rate samples from now on understate the path. */
                c->app_limited_until = c->delivered + c->inflight + 1;
                break;
            }
            if (c->next_pn - c->lua >= UDP_PKT_RING)
                break;
            n = new_chunk(c);
            if (n == UDP_NO_CHUNK)
                break;
        }
        if (emit(c, n, 0, now) != 0) {
            if (!is_rtx) {
                /* keep the chunk: queue it as if lost so the next round sends it first */
                c->chunks[n % UDP_CHUNK_RING].state = CK_QUEUED;
                c->rtx[c->rtx_tail++ % UDP_CHUNK_RING] = n;
            }
            break;
        }
        if (is_rtx)
            c->rtx_head++;
        if (rate) {
            /* The controller's rates are payload rates (delivered counts payload bytes),
             * so the payload is what is paced: pacing the whole datagram (+ 64 bytes of
             * headers) at a payload rate sent 4.3% below the rate measured, at MTU 1500,
             * and BBR at gain 1 then never filled the link it had measured (92% of a
             * link whose payload ceiling is 95.7%). */
            uint64_t len = c->chunks[n % UDP_CHUNK_RING].len;
            c->next_send_us += (int64_t)(len * 1000000u / rate);
            if (c->next_send_us == now)
                c->next_send_us++;
        }
    }
    if (c->ping_due && emit(c, UDP_NO_CHUNK, 0, now) == 0)
        c->ping_due = 0;
    udp_pmtu_send(c, now);
}

int udp_emit_probe(ism_udp_conn *c, uint32_t size, int64_t now)
{
    if (size <= ISM_UDPW_DATA_HDR + udp_seal_overhead(&c->seal) || size > ISM_UDPW_MAX_DGRAM)
        return -1;
    return emit(c, UDP_NO_CHUNK, size, now);
}

/* The packet size fell back (a black hole, pmtu.c): whatever is in flight is as good as
 * lost, and its chunks are too large to send again. Abandon every packet in flight
 * (their loss is not news for the controller: the losses that revealed the black hole
 * have been reported already), forget the chunks, and cut the stream again from the
 * first unacknowledged byte in the new size. Bytes the peer holds beyond that (SACKed)
 * go again too; the receiver drops what it has. A black hole is rare, and a rewind is
 * simple to get right where splitting chunks in place would not be. */
void udp_send_rewind(ism_udp_conn *c, int64_t now)
{
    for (uint64_t pn = c->lua; pn < c->next_pn; pn++) {
        udp_pkt *p = &c->pkts[pn % UDP_PKT_RING];
        if (p->state != PK_INFLIGHT)
            continue;
        if (!p->probe) {
            c->inflight -= p->len;
            c->pkts_inflight--;
        }
        p->state = PK_GONE;
    }
    for (uint64_t n = c->chunk_head; n < c->chunk_tail; n++) {
        udp_chunk *k = &c->chunks[n % UDP_CHUNK_RING];
        if (k->state == CK_ACKED)
            c->st.bytes_acked -= k->len; /* counted again when acknowledged again */
    }
    c->chunk_head = c->chunk_tail;
    c->rtx_head = c->rtx_tail;
    c->snd_nxt = c->snd_una;
    if (!c->fin_acked)
        c->fin_queued = 0;
    c->rto_backoff = 0;
    c->rto_base_us = now;
    c->next_send_us = now;
    advance(c);
}

int udp_send_idle(const ism_udp_conn *c)
{
    return c->snd_una == c->snd_end && (!c->fin_wanted || c->fin_acked);
}

static int sendable(const ism_udp_conn *c)
{
    if (c->rtx_head < c->rtx_tail)
        return 1;
    return has_new(c);
}

int64_t udp_send_timer_us(const ism_udp_conn *c, int64_t now)
{
    int64_t t = INT64_MAX;
    if (c->pkts_inflight > 0)
        t = c->rto_base_us + udp_rto_us(c);
    if (sendable(c) && (c->inflight + c->payload <= c->cc->cwnd(c->cc_state) || c->inflight == 0)) {
        int64_t p = pacing_rate(c) ? c->next_send_us : now;
        if (p < t)
            t = p;
    }
    int64_t m = udp_pmtu_timer_us(c);
    return m < t ? m : t;
}

void udp_send_timers(ism_udp_conn *c, int64_t now)
{
    udp_pmtu_timers(c, now);
    if (c->pkts_inflight == 0 || now < c->rto_base_us + udp_rto_us(c))
        return;
    /* The timer fired: nothing was acknowledged for an RTO. On a busy host this is more
     * often a late ACK than a loss, so only the oldest packet is declared lost; its
     * retransmission probes the path, and the ACK it brings back reveals (by gaps) what
     * else is missing. Only a second expiry in a row is reported to the controller as a
     * timeout, and then everything in flight is given up as lost. */
    ism_udp_loss_event ev = {0};
    c->st.rto_count++;
    if (c->rto_backoff >= 1) {
        ev.timeout = 1;
        for (uint64_t pn = c->lua; pn < c->next_pn; pn++)
            if (c->pkts[pn % UDP_PKT_RING].state == PK_INFLIGHT)
                lose(c, pn, &ev);
    } else {
        for (uint64_t pn = c->lua; pn < c->next_pn; pn++)
            if (c->pkts[pn % UDP_PKT_RING].state == PK_INFLIGHT &&
                !c->pkts[pn % UDP_PKT_RING].probe) {
                lose(c, pn, &ev);
                break;
            }
    }
    c->rto_backoff++;
    c->rto_base_us = now;
    advance(c);
    report_loss(c, &ev, now);
    udp_pmtu_timers(c, now); /* a black hole these losses revealed */
}
