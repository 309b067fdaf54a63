/* io.c: datagram I/O of a reliable-UDP connection: batched sends (sendmmsg, with the
 * payload taken straight from the send buffer through an iovec) and batched receives
 * (recvmmsg into buffers allocated once), plus the impairment shim.
 *
 * Receive offload: where the kernel has UDP_GRO (Linux >= 5.0) it is turned on, and a
 * read may then return several datagrams of the flow coalesced into one buffer, with
 * their size in a UDP_GRO control message; they are cut apart here. Over loopback the
 * sender's GSO message then reaches us whole (one pass through the stack for up to 44
 * datagrams each way); from a NIC, the driver's GRO does the coalescing. Each receive
 * buffer is 64 KiB for that; pages are touched only as far as data arrives. A path that
 * does not coalesce (a TUN device, as in the link emulator) just delivers one datagram
 * per buffer.
 *
 * Runs of full-size datagrams leave as one UDP GSO message (UDP_SEGMENT, Linux >= 4.18):
 * the kernel cuts the concatenated iovecs into datagrams of exactly that size, so one
 * pass through the stack carries up to 44 packets, as TSO/GSO does for TCP. Where the
 * kernel refuses it, the first failure switches the connection to one datagram per
 * message for good.
 *
 * The shim (ism_udp_opts.impair) drops, duplicates, reorders and corrupts our own
 * outgoing datagrams from a seeded PRNG, so a test can put any mix of faults between
 * sender and receiver in one process, reproducibly. It sends datagram by datagram; the
 * production path never enters it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "conn.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#define RX_BUF 65536 /* one receive buffer: a coalesced GRO message fits */

int udp_io_init(ism_udp_conn *c)
{
    c->tx = calloc(UDP_TX_SLOTS, sizeof *c->tx);
    int one = 1;
    c->gro = c->gro && setsockopt(c->fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
    c->rx_stride = c->gro ? RX_BUF : ISM_UDPW_MAX_DGRAM;
    c->rx = malloc((size_t)UDP_BATCH * c->rx_stride);
    if (c->o.impair)
        c->hold = calloc(UDP_HOLD, sizeof *c->hold);
    if (!c->tx || !c->rx || (c->o.impair && !c->hold))
        return -1;
    for (int i = 0; i < UDP_BATCH; i++) {
        c->rxv[i] = (struct iovec){c->rx + (size_t)i * c->rx_stride, c->rx_stride};
        c->rxm[i].msg_hdr = (struct msghdr){.msg_iov = &c->rxv[i], .msg_iovlen = 1};
    }
    c->prng = c->o.impair ? c->o.impair->seed * 0x9E3779B97F4A7C15ull + 1 : 1;
    return 0;
}

void udp_io_free(ism_udp_conn *c)
{
    free(c->tx);
    free(c->rx);
    free(c->hold);
    c->tx = NULL;
    c->rx = NULL;
    c->hold = NULL;
}

static double rnd(ism_udp_conn *c)
{
    /* xorshift64*: fast, seeded, good enough to place faults */
    uint64_t x = c->prng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->prng = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* The path is gone for now (interface down, no route, an ICMP error from a router, a
 * firewall): what we send is lost, as on a broken link, and the connection goes on;
 * retransmission and, if it lasts, the dead-peer timeout decide, not one error. */
static int path_error(int e)
{
    return e == ENETUNREACH || e == EHOSTUNREACH || e == ENETDOWN || e == EHOSTDOWN ||
           e == EPERM || e == EACCES;
}

static void send_one(ism_udp_conn *c, const uint8_t *p, size_t n)
{
    for (int tries = 0; tries < 100; tries++) {
        if (send(c->fd, p, n, MSG_DONTWAIT) >= 0 || (errno != EAGAIN && errno != ENOBUFS &&
                                                    errno != EINTR && errno != ECONNREFUSED))
            return;
        struct pollfd pfd = {c->fd, POLLOUT, 0};
        poll(&pfd, 1, 1);
    }
}

static void impair_flush(ism_udp_conn *c)
{
    const ism_udp_impair *im = c->o.impair;
    for (unsigned i = c->tx_sent; i < c->ntx; i++) {
        udp_txslot *s = &c->tx[i];
        /* a held datagram leaves after its count of later ones */
        for (int h = 0; h < c->hold_n;) {
            if (--c->hold[h].after <= 0) {
                send_one(c, c->hold[h].buf, c->hold[h].len);
                c->hold[h] = c->hold[--c->hold_n];
            } else {
                h++;
            }
        }
        int drop = c->burst_on ? rnd(c) < im->burst : rnd(c) < im->loss;
        c->burst_on = drop;
        /* a smaller path MTU: no random draw, so the other faults stay reproducible */
        uint32_t maxd = __atomic_load_n(&im->max_dgram, __ATOMIC_RELAXED);
        if (!drop && maxd && s->len > maxd) {
            c->st.impair_mtu_dropped++;
            continue;
        }
        if (drop) {
            c->st.impair_dropped++;
            continue;
        }
        if (im->corrupt > 0 && rnd(c) < im->corrupt) {
            size_t bit = (size_t)(rnd(c) * (double)(s->len * 8));
            s->buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            c->st.impair_corrupted++;
        }
        int copies = im->dup > 0 && rnd(c) < im->dup ? 2 : 1;
        c->st.impair_dup += (uint64_t)(copies - 1);
        if (im->reorder > 0 && c->hold_n < UDP_HOLD && rnd(c) < im->reorder) {
            memcpy(c->hold[c->hold_n].buf, s->buf, s->len);
            c->hold[c->hold_n].len = s->len;
            c->hold[c->hold_n].after = 1 + (int)(rnd(c) * 8);
            c->hold_n++;
            c->st.impair_reordered++;
            copies--;
        }
        while (copies-- > 0)
            send_one(c, s->buf, s->len);
    }
    c->ntx = c->tx_sent = 0;
}

/* Group slots [tx_sent, ntx) into messages: runs of full-size datagrams as GSO messages. */
static unsigned build_msgs(ism_udp_conn *c)
{
    unsigned m = 0, v = 0;
    for (unsigned i = c->tx_sent; i < c->ntx; m++) {
        unsigned run = 1;
        if (c->gso && c->tx[i].len == c->dgram)
            while (i + run < c->ntx && run < UDP_GSO_MAX && (run + 1) * c->dgram <= 65000 &&
                   c->tx[i + run].len == c->dgram)
                run++;
        struct msghdr *h = &c->txm[m].msg_hdr;
        memset(h, 0, sizeof *h);
        h->msg_iov = &c->txiov[v];
        for (unsigned k = 0; k < run; k++)
            for (int j = 0; j < c->tx[i + k].niov; j++)
                c->txiov[v++] = c->tx[i + k].iov[j];
        h->msg_iovlen = (size_t)(&c->txiov[v] - h->msg_iov);
        if (run > 1) {
            h->msg_control = c->txcm[m].buf;
            h->msg_controllen = sizeof c->txcm[m].buf;
            struct cmsghdr *cm = CMSG_FIRSTHDR(h);
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t seg = (uint16_t)c->dgram;
            memcpy(CMSG_DATA(cm), &seg, sizeof seg);
        }
        c->txm_first[m] = i;
        c->txm_count[m] = run;
        i += run;
    }
    return m;
}

int udp_tx_flush(ism_udp_conn *c)
{
    if (c->tx_sent == c->ntx) {
        c->ntx = c->tx_sent = 0;
        return 0;
    }
    if (udp_seal_pending(c) != 0) /* crypto workers: the batch is sealed now */
        return 0;
    if (c->o.impair) {
        impair_flush(c);
        return 0;
    }
    while (c->tx_sent < c->ntx) {
        unsigned nm = build_msgs(c);
        int k = sendmmsg(c->fd, c->txm, nm, MSG_DONTWAIT);
        if (k > 0) {
            c->tx_sent = c->txm_first[k - 1] + c->txm_count[k - 1];
            continue;
        }
        if (errno == EINTR || errno == ECONNREFUSED)
            continue; /* a stale ICMP error is reported once; the datagram was not sent */
        if (errno == EAGAIN || errno == ENOBUFS)
            return 1;
        if (path_error(errno) || errno == EMSGSIZE)
            break; /* the rest of this batch is lost on the way (EMSGSIZE: the interface's
                    * MTU fell below our packets; pmtu.c sees a black hole) */
        if (c->gso && (errno == EIO || errno == EINVAL || errno == ENOPROTOOPT ||
                       errno == EOPNOTSUPP)) {
            c->gso = 0; /* no UDP GSO here: one datagram per message from now on */
            continue;
        }
        udp_fail(c, ISM_UDP_EIO, "sending to %s: %s", c->peer, strerror(errno));
        return 0;
    }
    c->ntx = c->tx_sent = 0;
    return 0;
}

udp_txslot *udp_tx_slot(ism_udp_conn *c)
{
    if (c->ntx == UDP_TX_SLOTS && udp_tx_flush(c) != 0)
        return NULL;
    if (c->ntx == UDP_TX_SLOTS)
        return NULL;
    return &c->tx[c->ntx++];
}

/* The size of the datagrams coalesced into one read (UDP_GRO), or len if it was one. */
static size_t gro_segment(struct msghdr *h, size_t len)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO &&
            cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int seg;
            memcpy(&seg, CMSG_DATA(cm), sizeof seg);
            return seg > 0 && (size_t)seg < len ? (size_t)seg : len;
        }
    }
    return len;
}

/* The datagrams queued in rxd opened together, then handled in order. */
static void rx_open_queued(ism_udp_conn *c, int64_t now)
{
    int n = c->nrxd;
    c->nrxd = 0;
    for (int i = 0; i < n; i++)
        c->rxd[i].type = ism_udpw_check(c->rxd[i].p, c->rxd[i].n, c->tok_rx, c->o.crc);
    udp_seal_open_batch(&c->seal, c->rxd, n);
    for (int i = 0; i < n && !c->err; i++) {
        if (c->rxd[i].ok)
            udp_dispatch_open(c, c->rxd[i].type, c->rxd[i].p, c->rxd[i].n, now);
        else
            c->st.pkts_bad++; /* as udp_dispatch counts it */
    }
}

/* One datagram received: handled now, or queued for a batch (crypto workers). */
static void rx_one(ism_udp_conn *c, uint8_t *p, size_t n, int64_t now)
{
    if (!c->seal.pool) {
        udp_dispatch(c, p, n, now);
        return;
    }
    c->rxd[c->nrxd++] = (udp_rxd){.p = p, .n = n};
    if (c->nrxd == UDP_RX_OPEN_MAX)
        rx_open_queued(c, now);
}

int udp_rx_batch(ism_udp_conn *c, int64_t now)
{
    for (int i = 0; i < UDP_BATCH; i++) {
        c->rxm[i].msg_hdr.msg_flags = 0;
        c->rxm[i].msg_len = 0;
        if (c->gro) {
            c->rxm[i].msg_hdr.msg_control = c->rxcm[i].buf;
            c->rxm[i].msg_hdr.msg_controllen = sizeof c->rxcm[i].buf;
        }
    }
    int k = recvmmsg(c->fd, c->rxm, UDP_BATCH, MSG_DONTWAIT, NULL);
    /* Read the clock after the call: on a busy host the process may have been descheduled
     * since the caller read it, and a stale time would shorten every RTT sample. */
    now = udp_now_us();
    if (k < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED || path_error(errno))
            return 0;
        udp_fail(c, ISM_UDP_EIO, "receiving from %s: %s", c->peer, strerror(errno));
        return -1;
    }
    for (int i = 0; i < k && !c->err; i++) {
        if (c->rxm[i].msg_hdr.msg_flags & MSG_TRUNC) {
            c->st.pkts_bad++;
            continue;
        }
        uint8_t *p = c->rx + (size_t)i * c->rx_stride;
        size_t len = c->rxm[i].msg_len, seg = len;
        if (c->gro)
            seg = gro_segment(&c->rxm[i].msg_hdr, len);
        if (seg < len)
            c->st.pkts_coalesced += (len + seg - 1) / seg;
        /* datagrams of seg bytes, the last one possibly shorter; stop if one failed */
        for (size_t off = 0; off < len && !c->err; off += seg)
            rx_one(c, p + off, len - off < seg ? len - off : seg, now);
    }
    if (c->nrxd)
        rx_open_queued(c, now);
    return k;
}
