/* sealbatch.c: the reliable-UDP connection's crypto workers (issue 25): the datagrams of
 * one flush, and those of one receive batch, sealed or opened together on the gateway's
 * sealpool (wan/sealpool.h) as well as on the loop thread.
 *
 * Sending: with a pool, udp_seal_slot only gives a datagram its seal number (on the loop
 * thread, in the order the datagrams are built, which is the order they leave); the
 * flush seals the unsent slots in batches of at most UDP_GSO_MAX (a GSO message's worth)
 * before grouping them into messages. Each thread seals with a cipher state of its own,
 * and claims slots in increasing index, so increasing numbers: a state never meets a
 * number of an epoch before its key (aead.h), and the bytes are those one thread would
 * seal. A batch of less than UDP_SEAL_PAR_MIN bytes is sealed on the loop thread.
 *
 * Receiving: the datagrams of a recvmmsg (GRO runs cut apart) are opened in batches of
 * at most UDP_RX_OPEN_MAX. The loop thread checks each number against the replay window
 * first (it only grows, so a datagram refused then is refused in order too), the
 * threads open in place, and the loop thread then checks the window again in order (two
 * copies of one datagram in one batch: the second is a replay) and marks it. So what is
 * delivered and what is counted as rejected is what udp_seal_open would give one by
 * one. An opening state that lags behind (a worker that saw no datagram of the latest
 * epoch) derives the key it needs, as after a long loss.
 */
#include <string.h>

#include <openssl/crypto.h>

#include "../../common/le.h"
#include "conn.h"
#include "seal.h"
#include "wire.h"

typedef struct batch {
    udp_seal *s;
    udp_txslot *t;
    udp_rxd *d;
} batch;

int udp_seal_use_pool(udp_seal *s, ism_sealpool *pool)
{
    int workers = ism_sealpool_workers(pool);
    if (!s->on || workers == 0 || s->pool)
        return 0;
    ism_aead *txw = ism_aead_clones(&s->tx, workers), *rxw = ism_aead_clones(&s->rx, workers);
    if (!txw || !rxw) {
        ism_aead_clones_free(txw, workers);
        ism_aead_clones_free(rxw, workers);
        return -1;
    }
    s->txw = txw;
    s->rxw = rxw;
    s->pool = pool;
    s->nslots = workers + 1;
    return 0;
}

uint64_t udp_seal_rekeys(const udp_seal *s)
{
    if (!s->on)
        return 0;
    int n = s->nslots > 1 ? s->nslots - 1 : 0;
    return ism_aead_clones_rekeys(&s->tx, s->txw, n) + ism_aead_clones_rekeys(&s->rx, s->rxw, n);
}

static ism_aead *slot_aead(ism_aead *a0, ism_aead *w, int slot) { return slot ? &w[slot - 1] : a0; }

/* The batch on the pool when it is worth a handoff, else on this thread (slot 0). */
static int run(udp_seal *s, int n, size_t bytes, ism_sealpool_fn fn, batch *b)
{
    ism_sealpool *p = bytes >= UDP_SEAL_PAR_MIN ? s->pool : NULL;
    if (p && n > 1)
        s->par_batches++;
    return ism_sealpool_run(p, n, fn, b);
}

static int seal_job(void *ctx, int i, int slot)
{
    batch *b = ctx;
    udp_txslot *t = &b->t[i];
    if (!t->pending)
        return 0; /* sealed at an earlier flush (never twice under its number) */
    size_t n = udp_seal_at(slot_aead(&b->s->tx, b->s->txw, slot), t->seq, t->buf,
                           t->iov[0].iov_len, t->iov + 1, t->niov - 1);
    if (n == 0)
        return -1;
    t->len = n;
    t->iov[0] = (struct iovec){t->buf, n};
    t->niov = 1;
    t->pending = 0;
    return 0;
}

unsigned udp_seal_slots(udp_seal *s, udp_txslot *t, unsigned n)
{
    unsigned i = 0;
    while (i < n && !t[i].pending)
        i++;
    while (i < n) {
        /* the pending slots are the newest ones: a batch runs to the end or UDP_GSO_MAX */
        unsigned k = n - i < UDP_GSO_MAX ? n - i : UDP_GSO_MAX;
        size_t bytes = 0;
        for (unsigned j = 0; j < k; j++)
            bytes += t[i + j].pending ? t[i + j].len : 0;
        batch b = {s, t + i, NULL};
        if (run(s, (int)k, bytes, seal_job, &b) != 0) {
            while (!t[i].pending) /* the first that failed: the rest must not leave */
                i++;
            return i;
        }
        i += k;
    }
    return n;
}

int udp_seal_pending(ism_udp_conn *c)
{
    if (!c->seal.pool || c->tx_sent == c->ntx)
        return 0;
    unsigned n = c->ntx - c->tx_sent;
    if (udp_seal_slots(&c->seal, c->tx + c->tx_sent, n) == n)
        return 0;
    c->ntx = c->tx_sent; /* nothing unsealed is ever sent */
    udp_fail(c, ISM_UDP_EIO, "sealing a datagram to %s failed (OpenSSL)", c->peer);
    return -1;
}

static int open_job(void *ctx, int i, int slot)
{
    batch *b = ctx;
    udp_rxd *d = &b->d[i];
    if (!d->opening)
        return 0;
    size_t clen = d->n - ISM_UDPW_COMMON - UDP_SEAL_OVERHEAD;
    uint8_t *end = d->p + ISM_UDPW_COMMON + clen;
    uint8_t aad[ISM_UDPW_COMMON + 8];
    memcpy(aad, d->p, ISM_UDPW_COMMON);
    memcpy(aad + ISM_UDPW_COMMON, end, 8);
    d->ok = ism_aead_open(slot_aead(&b->s->rx, b->s->rxw, slot), d->seq, aad, sizeof aad,
                          d->p + ISM_UDPW_COMMON, clen, end + 8, d->p + ISM_UDPW_COMMON) == 0;
    return d->ok ? 0 : -1;
}

void udp_seal_open_batch(udp_seal *s, udp_rxd *d, int n)
{
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        d[i].ok = d[i].type >= 0;
        d[i].opening = 0;
        if (!s->on || !d[i].ok)
            continue;
        d[i].ok = 0;
        if (d[i].n < ISM_UDPW_COMMON + UDP_SEAL_OVERHEAD) {
            s->rejected++;
            continue;
        }
        d[i].seq = ism_get_le64(d[i].p + d[i].n - UDP_SEAL_OVERHEAD);
        if (!ism_aead_window_check(&s->win, d[i].seq)) {
            s->rejected++; /* a replay or too late: refused in order as well */
            continue;
        }
        d[i].opening = 1;
        bytes += d[i].n;
    }
    if (!s->on)
        return;
    batch b = {s, NULL, d};
    run(s, n, bytes, open_job, &b);
    for (int i = 0; i < n; i++) {
        if (!d[i].opening)
            continue;
        d[i].opening = 0;
        if (d[i].ok && !ism_aead_window_check(&s->win, d[i].seq)) {
            d[i].ok = 0; /* the second copy of a datagram in this batch: a replay */
            OPENSSL_cleanse(d[i].p + ISM_UDPW_COMMON, d[i].n - ISM_UDPW_COMMON - UDP_SEAL_OVERHEAD);
        }
        if (!d[i].ok) {
            s->rejected++;
            continue;
        }
        ism_aead_window_mark(&s->win, d[i].seq);
        d[i].n -= UDP_SEAL_OVERHEAD;
    }
}
