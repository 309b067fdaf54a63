/* seal.c: AEAD on every datagram (seal.h). */
#include "seal.h"

#include <string.h>

#include "conn.h"
#include "../../common/le.h"
#include "wire.h"

int udp_seal_init(udp_seal *s, const ism_aead_keys *keys, int client)
{
    memset(s, 0, sizeof *s);
    if (!keys || keys->suite == ISM_AEAD_NONE)
        return 0;
    const ism_aead_dir_keys *out = client ? &keys->c2s : &keys->s2c;
    const ism_aead_dir_keys *in = client ? &keys->s2c : &keys->c2s;
    if (ism_aead_init(&s->tx, keys->suite, out, 1, keys->rekey_log2) != 0) {
        ism_aead_free(&s->tx);
        return -1;
    }
    if (ism_aead_init(&s->rx, keys->suite, in, 0, keys->rekey_log2) != 0) {
        ism_aead_free(&s->tx);
        ism_aead_free(&s->rx);
        return -1;
    }
    s->on = 1;
    s->suite = keys->suite;
    return 0;
}

void udp_seal_free(udp_seal *s)
{
    if (s->on) {
        ism_aead_free(&s->tx);
        ism_aead_free(&s->rx);
    }
    if (s->nslots > 1) {
        ism_aead_clones_free(s->txw, s->nslots - 1);
        ism_aead_clones_free(s->rxw, s->nslots - 1);
    }
    memset(s, 0, sizeof *s);
}

size_t udp_seal_at(ism_aead *a, uint64_t seq, uint8_t *buf, size_t hlen,
                   const struct iovec *parts, int nparts)
{
    struct iovec v[4];
    int n = 0;
    size_t len = hlen - ISM_UDPW_COMMON;
    v[n++] = (struct iovec){buf + ISM_UDPW_COMMON, hlen - ISM_UDPW_COMMON};
    for (int i = 0; i < nparts; i++)
        if (parts[i].iov_len) {
            v[n++] = parts[i];
            len += parts[i].iov_len;
        }
    uint8_t aad[ISM_UDPW_COMMON + 8];
    memcpy(aad, buf, ISM_UDPW_COMMON);
    ism_put_le64(aad + ISM_UDPW_COMMON, seq);
    uint8_t *end = buf + ISM_UDPW_COMMON + len;
    if (ism_aead_seal(a, seq, aad, sizeof aad, v, n, buf + ISM_UDPW_COMMON, end + 8) != 0)
        return 0;
    ism_put_le64(end, seq);
    return ISM_UDPW_COMMON + len + UDP_SEAL_OVERHEAD;
}

/* Seal under the next number (the common header stays in the clear): the new length, or 0. */
static size_t seal_parts(udp_seal *s, uint8_t *buf, size_t hlen, const struct iovec *parts,
                         int nparts)
{
    size_t n = udp_seal_at(&s->tx, s->next, buf, hlen, parts, nparts);
    if (n)
        s->next++;
    return n;
}

void udp_seal_slot(ism_udp_conn *c, udp_txslot *t)
{
    if (!c->seal.on) {
        if (c->o.crc) {
            if (t->niov == 1)
                ism_udpw_seal(t->buf, t->len);
            else
                ism_udpw_seal_parts(t->buf, t->iov[0].iov_len, t->iov[1].iov_base,
                                    t->iov[1].iov_len, t->niov > 2 ? t->iov[2].iov_base : NULL,
                                    t->niov > 2 ? t->iov[2].iov_len : 0);
        }
        return;
    }
    if (c->seal.pool) { /* numbered now, sealed with the rest of its batch at the flush */
        t->seq = c->seal.next++;
        t->pending = 1;
        return;
    }
    size_t hlen = t->iov[0].iov_len;
    size_t n = seal_parts(&c->seal, t->buf, hlen, t->iov + 1, t->niov - 1);
    if (n == 0) {
        c->ntx--;
        udp_fail(c, ISM_UDP_EIO, "sealing a datagram to %s failed (OpenSSL)", c->peer);
        return;
    }
    t->len = n;
    t->iov[0] = (struct iovec){t->buf, n};
    t->niov = 1;
}

size_t udp_seal_buf(ism_udp_conn *c, uint8_t *p, size_t n)
{
    if (!c->seal.on) {
        if (c->o.crc)
            ism_udpw_seal(p, n);
        return n;
    }
    /* slots numbered before stay below this number on every cipher state */
    if (udp_seal_pending(c) != 0)
        return 0;
    return seal_parts(&c->seal, p, n, NULL, 0);
}

int udp_seal_open(udp_seal *s, uint8_t *p, size_t *n)
{
    if (!s->on)
        return 0;
    if (*n < ISM_UDPW_COMMON + UDP_SEAL_OVERHEAD) {
        s->rejected++;
        return -1;
    }
    size_t clen = *n - ISM_UDPW_COMMON - UDP_SEAL_OVERHEAD;
    uint8_t *end = p + ISM_UDPW_COMMON + clen;
    uint64_t seq = ism_get_le64(end);
    uint8_t aad[ISM_UDPW_COMMON + 8];
    memcpy(aad, p, ISM_UDPW_COMMON);
    memcpy(aad + ISM_UDPW_COMMON, end, 8);
    if (!ism_aead_window_check(&s->win, seq) ||
        ism_aead_open(&s->rx, seq, aad, sizeof aad, p + ISM_UDPW_COMMON, clen, end + 8,
                      p + ISM_UDPW_COMMON) != 0) {
        s->rejected++;
        return -1;
    }
    ism_aead_window_mark(&s->win, seq);
    *n = ISM_UDPW_COMMON + clen;
    return 0;
}
