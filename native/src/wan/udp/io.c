/* io.c: datagram I/O of a reliable-UDP connection: batched sends (sendmmsg, with the
 * payload taken straight from the send buffer through an iovec) and batched receives
 * (recvmmsg into buffers allocated once), plus the impairment shim.
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
#include <sys/socket.h>

#include "conn.h"

int udp_io_init(ism_udp_conn *c)
{
    c->tx = calloc(UDP_BATCH, sizeof *c->tx);
    c->rx = malloc((size_t)UDP_BATCH * ISM_UDPW_MAX_DGRAM);
    if (c->o.impair)
        c->hold = calloc(UDP_HOLD, sizeof *c->hold);
    if (!c->tx || !c->rx || (c->o.impair && !c->hold))
        return -1;
    for (int i = 0; i < UDP_BATCH; i++) {
        c->rxv[i] = (struct iovec){c->rx + (size_t)i * ISM_UDPW_MAX_DGRAM, ISM_UDPW_MAX_DGRAM};
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

int udp_tx_flush(ism_udp_conn *c)
{
    if (c->tx_sent == c->ntx) {
        c->ntx = c->tx_sent = 0;
        return 0;
    }
    if (c->o.impair) {
        impair_flush(c);
        return 0;
    }
    for (unsigned i = c->tx_sent; i < c->ntx; i++)
        c->txm[i].msg_hdr = (struct msghdr){.msg_iov = c->tx[i].iov,
                                            .msg_iovlen = (size_t)c->tx[i].niov};
    while (c->tx_sent < c->ntx) {
        int k = sendmmsg(c->fd, c->txm + c->tx_sent, c->ntx - c->tx_sent, MSG_DONTWAIT);
        if (k > 0) {
            c->tx_sent += (unsigned)k;
            continue;
        }
        if (errno == EINTR || errno == ECONNREFUSED)
            continue; /* a stale ICMP error is reported once; the datagram was not sent */
        if (errno == EAGAIN || errno == ENOBUFS)
            return 1;
        udp_fail(c, ISM_UDP_EIO, "sending to %s: %s", c->peer, strerror(errno));
        return 0;
    }
    c->ntx = c->tx_sent = 0;
    return 0;
}

udp_txslot *udp_tx_slot(ism_udp_conn *c)
{
    if (c->ntx == UDP_BATCH && udp_tx_flush(c) != 0)
        return NULL;
    if (c->ntx == UDP_BATCH)
        return NULL;
    return &c->tx[c->ntx++];
}

int udp_rx_batch(ism_udp_conn *c, int64_t now)
{
    for (int i = 0; i < UDP_BATCH; i++) {
        c->rxm[i].msg_hdr.msg_flags = 0;
        c->rxm[i].msg_len = 0;
    }
    int k = recvmmsg(c->fd, c->rxm, UDP_BATCH, MSG_DONTWAIT, NULL);
    if (k < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED)
            return 0;
        udp_fail(c, ISM_UDP_EIO, "receiving from %s: %s", c->peer, strerror(errno));
        return -1;
    }
    for (int i = 0; i < k && !c->err; i++) {
        if (c->rxm[i].msg_hdr.msg_flags & MSG_TRUNC) {
            c->st.pkts_bad++;
            continue;
        }
        udp_dispatch(c, c->rx + (size_t)i * ISM_UDPW_MAX_DGRAM, c->rxm[i].msg_len, now);
    }
    return k;
}
