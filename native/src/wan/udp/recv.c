/* recv.c: the receiver half of a reliable-UDP connection.
 *
 * Payload goes straight to its place, in order or not: into the caller's buffer when its
 * stream offset falls inside a posted receive (ism_udp_recv_post, and the blocking recv
 * calls, which post their buffer while they wait), else into the receive ring (stream
 * offset modulo the ring size). The ring is the flow-control window either way, so the
 * sender can never send more than we can hold, and a post that ends before its bytes
 * are contiguous can always put what it holds back in the ring: every held byte keeps
 * a slot there. Byte ranges received beyond the contiguous prefix are kept as a sorted
 * list of intervals, wherever the bytes live, so a retransmitted or duplicated packet is
 * recognised and never copied twice, and nothing already held is ever requested again.
 *
 * Received packet numbers are kept in a bitmap sliding with the sender's "lowest tracked
 * packet number"; ACK frames are built from it: SACK ranges from the largest number down,
 * and explicit NACKs for holes at least 3 numbers below the largest, as many as fit in
 * one datagram. An ACK leaves after ack_every packets, ack_delay_us after the first
 * unacknowledged one, or at once when a gap opens or closes (so the sender learns of
 * loss within one RTT) and when the application's reading opened the window by a quarter.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>

#include "conn.h"

#define NACK_DIST 3

void udp_recv_init(ism_udp_conn *c)
{
    c->fin_off = UINT64_MAX;
    c->rlargest = -1;
    c->last_adv_limit = c->rbuf_size;
}

static int bit_get(const ism_udp_conn *c, uint64_t pn)
{
    uint64_t i = pn % UDP_RCV_BITS;
    return (int)(c->rbits[i / 64] >> (i % 64) & 1);
}

static void bit_set(ism_udp_conn *c, uint64_t pn)
{
    uint64_t i = pn % UDP_RCV_BITS;
    c->rbits[i / 64] |= 1ull << (i % 64);
}

static void forget_below(ism_udp_conn *c, uint64_t base)
{
    if (base <= c->rbase)
        return;
    if (base - c->rbase >= UDP_RCV_BITS) {
        memset(c->rbits, 0, UDP_RCV_BITS / 8);
    } else {
        for (uint64_t pn = c->rbase; pn < base; pn++) {
            uint64_t i = pn % UDP_RCV_BITS;
            if (i % 64 == 0 && base - pn >= 64) {
                c->rbits[i / 64] = 0;
                pn += 63;
            } else {
                c->rbits[i / 64] &= ~(1ull << (i % 64));
            }
        }
    }
    c->rbase = base;
}

/* The first interval whose hi >= x (touching or overlapping from x on). */
static unsigned ival_find(const ism_udp_conn *c, uint64_t x)
{
    unsigned a = 0, b = c->nivals;
    while (a < b) {
        unsigned m = (a + b) / 2;
        if (c->ivals[m].hi < x)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* ival_add of [lo, hi) would succeed: the list has room, or the range joins one. */
static int ival_fits(const ism_udp_conn *c, uint64_t lo, uint64_t hi)
{
    unsigned a = ival_find(c, lo);
    return c->nivals < UDP_IVAL_MAX || (a < c->nivals && c->ivals[a].lo <= hi);
}

/* Record [lo, hi) as held; 0, or -1 when the interval list is full (data not kept). */
static int ival_add(ism_udp_conn *c, uint64_t lo, uint64_t hi)
{
    unsigned a = ival_find(c, lo);
    unsigned j = a;
    while (j < c->nivals && c->ivals[j].lo <= hi)
        j++; /* [a, j) merge with the new one */
    if (j == a) {
        if (c->nivals == UDP_IVAL_MAX)
            return -1;
        memmove(&c->ivals[a + 1], &c->ivals[a], (c->nivals - a) * sizeof *c->ivals);
        c->ivals[a] = (udp_ival){lo, hi};
        c->nivals++;
        return 0;
    }
    if (c->ivals[a].lo < lo)
        lo = c->ivals[a].lo;
    if (c->ivals[j - 1].hi > hi)
        hi = c->ivals[j - 1].hi;
    c->ivals[a] = (udp_ival){lo, hi};
    memmove(&c->ivals[a + 1], &c->ivals[j], (c->nivals - j) * sizeof *c->ivals);
    c->nivals -= j - a - 1;
    return 0;
}

static int ival_covers(const ism_udp_conn *c, uint64_t lo, uint64_t hi)
{
    unsigned a = 0, b = c->nivals;
    while (a < b) {
        unsigned m = (a + b) / 2;
        if (c->ivals[m].hi < hi)
            a = m + 1;
        else
            b = m;
    }
    return a < c->nivals && c->ivals[a].lo <= lo;
}

/* The ring: stream offset x lives at x % rbuf_size. */
static void ring_write(ism_udp_conn *c, uint64_t off, const uint8_t *p, size_t n)
{
    size_t at = off % c->rbuf_size;
    size_t first = n < c->rbuf_size - at ? n : c->rbuf_size - at;
    memcpy(c->rbuf + at, p, first);
    memcpy(c->rbuf, p + first, n - first);
}

static void ring_read(const ism_udp_conn *c, uint64_t off, uint8_t *buf, size_t n)
{
    size_t at = off % c->rbuf_size;
    size_t first = n < c->rbuf_size - at ? n : c->rbuf_size - at;
    memcpy(buf, c->rbuf + at, first);
    memcpy(buf + first, c->rbuf, n - first);
}

/* Stream bytes [lo, lo + n) to where they live: the posted buffer inside its range, the
 * ring outside it. While a receive is posted, lo >= rcv_nxt >= post_off, so at most two
 * pieces: the posted part, then the rest. */
static void store(ism_udp_conn *c, uint64_t lo, const uint8_t *p, size_t n)
{
    if (c->post_buf) {
        uint64_t pend = c->post_off + c->post_len;
        if (lo >= c->post_off && lo < pend) {
            size_t k = pend - lo < n ? (size_t)(pend - lo) : n;
            memcpy(c->post_buf + (lo - c->post_off), p, k);
            c->st.bytes_placed_direct += k;
            lo += k;
            p += k;
            n -= k;
        }
    }
    if (n)
        ring_write(c, lo, p, n);
}

/* Store the bytes of [lo, end) (payload p) that are not held yet, skipping the held
 * intervals inside it, so no byte is copied twice; returns how many were new. */
static uint64_t store_new(ism_udp_conn *c, uint64_t lo, uint64_t end, const uint8_t *p)
{
    uint64_t cur = lo, n = 0;
    for (unsigned i = ival_find(c, lo + 1); i < c->nivals && c->ivals[i].lo < end; i++) {
        if (c->ivals[i].lo > cur) {
            store(c, cur, p + (cur - lo), (size_t)(c->ivals[i].lo - cur));
            n += c->ivals[i].lo - cur;
        }
        if (c->ivals[i].hi > cur)
            cur = c->ivals[i].hi;
    }
    if (cur < end) {
        store(c, cur, p + (cur - lo), (size_t)(end - cur));
        n += end - cur;
    }
    return n;
}

/* Reading opened the window by a quarter: tell a sender that may be blocked on it. */
static void window_opened(ism_udp_conn *c)
{
    if (c->rlargest >= 0 && c->rcv_read + c->rbuf_size - c->last_adv_limit >= c->rbuf_size / 4)
        c->ack_now = 1;
}

/* Bytes contiguous from the start of the posted range are the caller's: they are
 * consumed, and their room in the window is given back at once. */
static void post_advance(ism_udp_conn *c)
{
    uint64_t pend = c->post_off + c->post_len;
    uint64_t r = c->rcv_nxt < pend ? c->rcv_nxt : pend;
    if (r > c->rcv_read) {
        c->rcv_read = r;
        window_opened(c);
    }
}

/* Place a payload; 1 = new bytes kept, 0 = nothing new, -1 = dropped (no room to track
 * or outside the window: the sender must send it again). */
static int place(ism_udp_conn *c, uint64_t off, const uint8_t *p, uint32_t len, int fin)
{
    uint64_t end = off + len;
    if (fin) {
        if (c->fin_off != UINT64_MAX && c->fin_off != end)
            goto violation;
        c->fin_off = end;
    }
    if (end > c->fin_off)
        goto violation;
    if (end > c->rcv_read + c->rbuf_size)
        goto violation; /* beyond the window we advertised */
    if (end <= c->rcv_nxt || len == 0)
        return 0;
    uint64_t lo = off > c->rcv_nxt ? off : c->rcv_nxt;
    p += lo - off;
    if (lo > c->rcv_nxt && ival_covers(c, lo, end))
        return 0;
    if (lo > c->rcv_nxt && !ival_fits(c, lo, end))
        return -1;
    uint64_t n = store_new(c, lo, end, p);
    if (lo > c->rcv_nxt) {
        ival_add(c, lo, end); /* cannot fail: it fits */
    } else {
        c->rcv_nxt = end;
        while (c->nivals && c->ivals[0].lo <= c->rcv_nxt) {
            if (c->ivals[0].hi > c->rcv_nxt)
                c->rcv_nxt = c->ivals[0].hi;
            memmove(&c->ivals[0], &c->ivals[1], (c->nivals - 1) * sizeof *c->ivals);
            c->nivals--;
        }
        if (c->post_buf)
            post_advance(c);
    }
    c->st.bytes_received += n; /* new bytes only */
    return 1;
violation:
    udp_fail(c, ISM_UDP_ECLOSED,
             "peer %s sent stream bytes %llu..%llu outside the stream or window "
             "(end of stream %lld; protocol violation)",
             c->peer, (unsigned long long)off, (unsigned long long)end,
             c->fin_off == UINT64_MAX ? -1ll : (long long)c->fin_off);
    return -1;
}

void udp_on_data(ism_udp_conn *c, const ism_udpw_data *d, int64_t now)
{
    forget_below(c, d->pn - d->lua_delta);
    int track = d->pn >= c->rbase;
    if (d->pn >= c->rbase + UDP_RCV_BITS) {
        c->st.pkts_bad++; /* further ahead than the sender may be: cannot track it */
        return;
    }
    if (track && bit_get(c, d->pn)) {
        c->st.pkts_dup++;
        c->ack_now = 1; /* our ACK may have been lost */
        return;
    }
    int r = 0;
    if (!(d->flags & ISM_UDPW_F_PING)) {
        r = place(c, d->offset, d->payload, d->len, d->flags & ISM_UDPW_F_FIN);
        if (r < 0)
            return;
        if (r == 0 && d->len)
            c->st.pkts_dup++; /* a bare FIN is not a duplicate */
    }
    c->st.pkts_received++;
    if (!track)
        return; /* the sender forgot it; an ACK would be ignored */
    bit_set(c, d->pn);
    if ((int64_t)d->pn > c->rlargest) {
        if (c->rlargest >= 0 && d->pn > (uint64_t)c->rlargest + 1)
            c->ack_now = 1; /* a gap opened */
        c->rlargest = (int64_t)d->pn;
        c->rlargest_us = now;
    } else {
        c->ack_now = 1; /* a gap closed (reordering or a retransmission) */
        c->st.pkts_reordered++;
    }
    if (d->flags & (ISM_UDPW_F_PING | ISM_UDPW_F_FIN))
        c->ack_now = 1;
    if (c->ack_pending++ == 0)
        c->ack_first_us = now;
    if (c->ack_pending >= (unsigned)c->o.ack_every)
        udp_maybe_ack(c, now); /* even in the middle of a received batch */
}

/* Lowest packet number p >= floor such that all of [p, pn] have bit value v. */
static uint64_t run_low(const ism_udp_conn *c, uint64_t pn, int v, uint64_t floor)
{
    for (;;) {
        uint64_t i = pn % UDP_RCV_BITS;
        uint64_t w = c->rbits[i / 64];
        if (!v)
            w = ~w;
        unsigned bit = (unsigned)(i % 64);
        uint64_t mask = bit == 63 ? ~0ull : (1ull << (bit + 1)) - 1;
        if ((w & mask) == mask) { /* the run covers this word down to its bit 0 */
            if (pn - bit <= floor)
                return floor;
            pn -= bit + 1;
            continue;
        }
        /* the highest bit at or below `bit` with the other value ends the run */
        unsigned hz = 63 - (unsigned)__builtin_clzll(~w & mask);
        uint64_t low = pn - (bit - hz) + 1;
        return low > floor ? low : floor;
    }
}

int64_t udp_ack_timer_us(const ism_udp_conn *c)
{
    if (c->ack_now)
        return 0;
    if (c->ack_pending == 0)
        return INT64_MAX;
    return c->ack_first_us + c->o.ack_delay_us;
}

void udp_maybe_ack(ism_udp_conn *c, int64_t now)
{
    if (c->rlargest < 0 || (c->ack_pending == 0 && !c->ack_now))
        return;
    if ((uint64_t)c->rlargest < c->rbase) {
        c->ack_pending = 0; /* everything we hold the sender has already given up on */
        c->ack_now = 0;
        return;
    }
    if (!c->ack_now && c->ack_pending < (unsigned)c->o.ack_every &&
        now - c->ack_first_us < c->o.ack_delay_us)
        return;
    udp_txslot *s = udp_tx_slot(c);
    if (s == NULL)
        return;
    ism_udpw_ackb *b = &c->ackb;
    uint64_t limit = c->rcv_read + c->rbuf_size;
    int64_t delay = now - c->rlargest_us;
    ism_udpw_ack_begin(b, s->buf, c->ack_dgram - udp_seal_overhead(&c->seal), c->tok_tx, (uint64_t)c->rlargest, limit,
                       (uint32_t)(delay < 0 ? 0 : delay > 0xffffffff ? 0xffffffff : delay));
    uint64_t pn = (uint64_t)c->rlargest;
    for (;;) {
        uint64_t low = run_low(c, pn, 1, c->rbase);
        if (ism_udpw_ack_add_range(b, pn, (uint32_t)(pn - low + 1 > 0xffffffffu ? 0xffffffffu : pn - low + 1)) != 0)
            break;
        if (low <= c->rbase)
            break;
        uint64_t gap_hi = low - 1;
        uint64_t gap_lo = run_low(c, gap_hi, 0, c->rbase);
        int full = 0;
        for (uint64_t g = gap_hi + 1; g-- > gap_lo;) {
            uint64_t dist = (uint64_t)c->rlargest - g;
            if (dist < NACK_DIST)
                continue;
            if (dist > 0xffffffffu || ism_udpw_ack_add_nack(b, (uint32_t)dist) != 0) {
                full = 1;
                break;
            }
        }
        if (full || gap_lo <= c->rbase)
            break;
        pn = gap_lo - 1;
    }
    size_t n = ism_udpw_ack_finish(b);
    s->len = n;
    s->iov[0] = (struct iovec){s->buf, n};
    s->niov = 1;
    udp_seal_slot(c, s);
    c->last_adv_limit = limit;
    c->ack_pending = 0;
    c->ack_now = 0;
    c->st.acks_sent++;
    c->last_send_us = now;
}

size_t udp_recv_copy(ism_udp_conn *c, uint8_t *buf, size_t n)
{
    uint64_t avail = c->rcv_nxt - c->rcv_read;
    if (n > avail)
        n = (size_t)avail;
    ring_read(c, c->rcv_read, buf, n);
    c->rcv_read += n;
    c->st.bytes_via_ring += n;
    window_opened(c);
    return n;
}

void udp_recv_post(ism_udp_conn *c, uint8_t *buf, size_t n)
{
    c->post_buf = buf;
    c->post_off = c->rcv_read;
    c->post_len = n;
    uint64_t pend = c->post_off + n;
    /* what the ring already holds of the range moves to the buffer now, contiguous or not,
     * so that from here on every held byte of the range lives in the buffer */
    uint64_t k = c->rcv_nxt - c->rcv_read < n ? c->rcv_nxt - c->rcv_read : n;
    ring_read(c, c->rcv_read, buf, (size_t)k);
    c->st.bytes_via_ring += k;
    for (unsigned i = 0; i < c->nivals && c->ivals[i].lo < pend; i++) {
        uint64_t hi = c->ivals[i].hi < pend ? c->ivals[i].hi : pend;
        ring_read(c, c->ivals[i].lo, buf + (c->ivals[i].lo - c->post_off),
                  (size_t)(hi - c->ivals[i].lo));
        c->st.bytes_via_ring += hi - c->ivals[i].lo;
    }
    post_advance(c);
}

size_t udp_recv_filled(const ism_udp_conn *c)
{
    return c->post_buf ? (size_t)(c->rcv_read - c->post_off) : 0;
}

size_t udp_recv_unpost(ism_udp_conn *c)
{
    if (!c->post_buf)
        return 0;
    size_t k = udp_recv_filled(c);
    uint64_t pend = c->post_off + c->post_len;
    /* held bytes beyond the contiguous prefix go back to their slots in the ring (held
     * bytes lie inside the window, so their slots are theirs alone) */
    for (unsigned i = 0; i < c->nivals && c->ivals[i].lo < pend; i++) {
        uint64_t hi = c->ivals[i].hi < pend ? c->ivals[i].hi : pend;
        ring_write(c, c->ivals[i].lo, c->post_buf + (c->ivals[i].lo - c->post_off),
                   (size_t)(hi - c->ivals[i].lo));
        c->st.bytes_placed_back += hi - c->ivals[i].lo;
    }
    c->post_buf = NULL;
    c->post_len = 0;
    return k;
}
