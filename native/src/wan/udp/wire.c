/* wire.c: encoding and validating the reliable-UDP packets described in wire.h. */
#include "wire.h"

#include <string.h>

#include "../crc32c.h"
#include "../../common/le.h"

static uint32_t crc_of(const uint8_t *p, size_t n)
{
    static const uint8_t zero[4];
    uint32_t c = ism_crc32c(0, p, 4);
    c = ism_crc32c(c, zero, 4);
    return ism_crc32c(c, p + 8, n - 8);
}

int ism_udpw_check(const uint8_t *p, size_t n, const uint8_t token[ISM_UDPW_TOKEN_LEN],
                   int crc_on)
{
    if (n < ISM_UDPW_COMMON)
        return ISM_UDPW_ESHORT;
    if (n > ISM_UDPW_MAX_DGRAM)
        return ISM_UDPW_ELEN;
    if (p[0] != ISM_UDPW_VERSION)
        return ISM_UDPW_EVERSION;
    int type = p[1];
    if (type < ISM_UDPW_DATA || type > ISM_UDPW_CLOSE)
        return ISM_UDPW_ETYPE;
    /* Branch-free compare: the time taken must not tell an attacker how many bytes matched. */
    uint8_t diff = 0;
    for (int i = 0; i < ISM_UDPW_TOKEN_LEN; i++)
        diff |= (uint8_t)(p[8 + i] ^ token[i]);
    if (diff)
        return ISM_UDPW_ETOKEN;
    uint16_t flags = (uint16_t)(p[2] | p[3] << 8);
    if (crc_on) {
        if (!(flags & ISM_UDPW_F_CRC) || crc_of(p, n) != ism_get_le32(p + 4))
            return ISM_UDPW_ECRC;
    } else if ((flags & ISM_UDPW_F_CRC) || ism_get_le32(p + 4) != 0) {
        return ISM_UDPW_ECRC; /* CRC mode is fixed per connection, never chosen per packet */
    }
    return type;
}

int ism_udpw_decode_data(const uint8_t *p, size_t n, ism_udpw_data *d)
{
    if (n < ISM_UDPW_DATA_HDR)
        return ISM_UDPW_ESHORT;
    if (n > ISM_UDPW_MAX_DGRAM)
        return ISM_UDPW_ELEN;
    if (p[0] != ISM_UDPW_VERSION)
        return ISM_UDPW_EVERSION;
    if (p[1] != ISM_UDPW_DATA)
        return ISM_UDPW_ETYPE;
    d->flags = (uint16_t)(p[2] | p[3] << 8);
    if (d->flags & ~(ISM_UDPW_F_FIN | ISM_UDPW_F_PING | ISM_UDPW_F_PAD | ISM_UDPW_F_CRC))
        return ISM_UDPW_EFLAGS;
    d->pn = ism_get_le64(p + 16);
    d->offset = ism_get_le64(p + 24);
    d->lua_delta = ism_get_le32(p + 32);
    d->payload = p + ISM_UDPW_DATA_HDR;
    d->len = (uint32_t)(n - ISM_UDPW_DATA_HDR);
    if ((d->flags & ISM_UDPW_F_PING) && (d->flags & ISM_UDPW_F_FIN))
        return ISM_UDPW_EFLAGS; /* a probe carries nothing */
    if (d->flags & ISM_UDPW_F_PAD) {
        if (!(d->flags & ISM_UDPW_F_PING))
            return ISM_UDPW_EFLAGS; /* padding only on a probe */
        /* Zero padding: nothing unchecked rides on a probe (probes are rare and their
         * CRC already read every byte, so this costs nothing that matters). */
        uint8_t any = 0;
        for (uint32_t i = 0; i < d->len; i++)
            any |= d->payload[i];
        if (any)
            return ISM_UDPW_EFIELD;
    } else if ((d->flags & ISM_UDPW_F_PING) && d->len) {
        return ISM_UDPW_EFLAGS; /* a keepalive probe carries nothing */
    }
    /* Offsets live in 62 bits so offset + len can never wrap; pn likewise. */
    if (d->offset >> 62 || d->pn >> 62 || d->lua_delta > d->pn)
        return ISM_UDPW_EFIELD;
    return 0;
}

int ism_udpw_decode_ack(const uint8_t *p, size_t n, ism_udpw_ack *a)
{
    if (n < ISM_UDPW_ACK_HDR)
        return ISM_UDPW_ESHORT;
    if (n > ISM_UDPW_MAX_DGRAM)
        return ISM_UDPW_ELEN;
    if (p[0] != ISM_UDPW_VERSION)
        return ISM_UDPW_EVERSION;
    if (p[1] != ISM_UDPW_ACK)
        return ISM_UDPW_ETYPE;
    uint16_t flags = (uint16_t)(p[2] | p[3] << 8);
    if (flags & ~ISM_UDPW_F_CRC)
        return ISM_UDPW_EFLAGS;
    a->largest = ism_get_le64(p + 16);
    a->rcv_limit = ism_get_le64(p + 24);
    a->ack_delay_us = ism_get_le32(p + 32);
    a->nranges = (uint16_t)(p[36] | p[37] << 8);
    a->nnacks = (uint16_t)(p[38] | p[39] << 8);
    if ((size_t)ISM_UDPW_ACK_HDR + (size_t)a->nranges * ISM_UDPW_RANGE_LEN +
            (size_t)a->nnacks * ISM_UDPW_NACK_LEN != n)
        return ISM_UDPW_ELEN;
    if (a->largest >> 62 || a->rcv_limit >> 62)
        return ISM_UDPW_EFIELD;
    if (a->nranges == 0)
        return ISM_UDPW_ERANGE;
    a->ranges = p + ISM_UDPW_ACK_HDR;
    a->nacks = a->ranges + (size_t)a->nranges * ISM_UDPW_RANGE_LEN;
    /* Ranges: first ends at largest, descending, disjoint, gaps of >= 1, none below 0. */
    uint64_t floor_next = a->largest + 1; /* the next range's hi must be < floor_next - 1 */
    for (unsigned i = 0; i < a->nranges; i++) {
        ism_udpw_range r = ism_udpw_ack_range(a, i);
        if (r.count == 0 || r.count - 1 > r.hi)
            return ISM_UDPW_ERANGE;
        if (i == 0 ? r.hi != a->largest : r.hi + 1 >= floor_next)
            return ISM_UDPW_ERANGE;
        floor_next = r.hi - (r.count - 1); /* lowest in this range */
    }
    /* NACKs: increasing distance, within [0, largest], not inside any range. */
    uint64_t prev = 0;
    unsigned ri = 0;
    for (unsigned i = 0; i < a->nnacks; i++) {
        uint32_t dist = ism_get_le32(a->nacks + (size_t)i * ISM_UDPW_NACK_LEN);
        if ((i > 0 && dist <= prev) || dist == 0 || dist > a->largest)
            return ISM_UDPW_ERANGE;
        prev = dist;
        uint64_t pn = a->largest - dist;
        while (ri < a->nranges) {
            ism_udpw_range r = ism_udpw_ack_range(a, ri);
            if (pn > r.hi)
                break; /* in the gap above range ri */
            if (pn >= r.hi - (r.count - 1))
                return ISM_UDPW_ERANGE; /* a NACK for a packet also acknowledged */
            ri++;
        }
    }
    return 0;
}

int ism_udpw_decode_close(const uint8_t *p, size_t n, uint32_t *reason)
{
    if (n != ISM_UDPW_CLOSE_LEN)
        return n < ISM_UDPW_CLOSE_LEN ? ISM_UDPW_ESHORT : ISM_UDPW_ELEN;
    if (p[0] != ISM_UDPW_VERSION)
        return ISM_UDPW_EVERSION;
    if (p[1] != ISM_UDPW_CLOSE)
        return ISM_UDPW_ETYPE;
    uint16_t flags = (uint16_t)(p[2] | p[3] << 8);
    if (flags & ~ISM_UDPW_F_CRC)
        return ISM_UDPW_EFLAGS;
    *reason = ism_get_le32(p + 16);
    return 0;
}

void ism_udpw_encode_common(uint8_t *p, int type, uint16_t flags,
                            const uint8_t token[ISM_UDPW_TOKEN_LEN])
{
    p[0] = ISM_UDPW_VERSION;
    p[1] = (uint8_t)type;
    p[2] = (uint8_t)flags;
    p[3] = (uint8_t)(flags >> 8);
    ism_put_le32(p + 4, 0);
    memcpy(p + 8, token, ISM_UDPW_TOKEN_LEN);
}

void ism_udpw_encode_data(uint8_t *p, uint16_t flags, const uint8_t token[ISM_UDPW_TOKEN_LEN],
                          uint64_t pn, uint64_t offset, uint32_t lua_delta)
{
    ism_udpw_encode_common(p, ISM_UDPW_DATA, flags, token);
    ism_put_le64(p + 16, pn);
    ism_put_le64(p + 24, offset);
    ism_put_le32(p + 32, lua_delta);
}

void ism_udpw_ack_begin(ism_udpw_ackb *b, uint8_t *p, size_t cap,
                        const uint8_t token[ISM_UDPW_TOKEN_LEN], uint64_t largest,
                        uint64_t rcv_limit, uint32_t ack_delay_us)
{
    b->p = p;
    b->cap = cap;
    b->nranges = b->nnacks = 0;
    ism_udpw_encode_common(p, ISM_UDPW_ACK, 0, token);
    ism_put_le64(p + 16, largest);
    ism_put_le64(p + 24, rcv_limit);
    ism_put_le32(p + 32, ack_delay_us);
}

static size_t ack_size(unsigned nr, unsigned nn)
{
    return ISM_UDPW_ACK_HDR + (size_t)nr * ISM_UDPW_RANGE_LEN + (size_t)nn * ISM_UDPW_NACK_LEN;
}

int ism_udpw_ack_add_range(ism_udpw_ackb *b, uint64_t hi, uint32_t count)
{
    if (b->nranges >= 0xffff || ack_size(b->nranges + 1, b->nnacks) > b->cap)
        return -1;
    uint8_t *q = b->p + ISM_UDPW_ACK_HDR + (size_t)b->nranges * ISM_UDPW_RANGE_LEN;
    ism_put_le64(q, hi);
    ism_put_le32(q + 8, count);
    b->nranges++;
    return 0;
}

int ism_udpw_ack_add_nack(ism_udpw_ackb *b, uint32_t dist)
{
    if (b->nnacks >= 0xffff || ack_size(b->nranges, b->nnacks + 1) > b->cap ||
        ((size_t)b->nnacks + 1) * ISM_UDPW_NACK_LEN > sizeof b->nack_buf)
        return -1;
    ism_put_le32(b->nack_buf + (size_t)b->nnacks * ISM_UDPW_NACK_LEN, dist);
    b->nnacks++;
    return 0;
}

size_t ism_udpw_ack_finish(ism_udpw_ackb *b)
{
    b->p[36] = (uint8_t)b->nranges;
    b->p[37] = (uint8_t)(b->nranges >> 8);
    b->p[38] = (uint8_t)b->nnacks;
    b->p[39] = (uint8_t)(b->nnacks >> 8);
    memcpy(b->p + ISM_UDPW_ACK_HDR + (size_t)b->nranges * ISM_UDPW_RANGE_LEN, b->nack_buf,
           (size_t)b->nnacks * ISM_UDPW_NACK_LEN);
    return ack_size(b->nranges, b->nnacks);
}

size_t ism_udpw_encode_close(uint8_t *p, const uint8_t token[ISM_UDPW_TOKEN_LEN],
                             uint32_t reason)
{
    ism_udpw_encode_common(p, ISM_UDPW_CLOSE, 0, token);
    ism_put_le32(p + 16, reason);
    return ISM_UDPW_CLOSE_LEN;
}

void ism_udpw_seal_parts(uint8_t *hdr, size_t hlen, const uint8_t *a, size_t alen,
                         const uint8_t *b, size_t blen)
{
    uint16_t flags = (uint16_t)(hdr[2] | hdr[3] << 8 | ISM_UDPW_F_CRC);
    hdr[2] = (uint8_t)flags;
    hdr[3] = (uint8_t)(flags >> 8);
    ism_put_le32(hdr + 4, 0);
    uint32_t c = ism_crc32c(0, hdr, hlen);
    if (alen)
        c = ism_crc32c(c, a, alen);
    if (blen)
        c = ism_crc32c(c, b, blen);
    ism_put_le32(hdr + 4, c);
}

void ism_udpw_seal(uint8_t *p, size_t n)
{
    ism_udpw_seal_parts(p, n, NULL, 0, NULL, 0);
}

const char *ism_udpw_strerror(int code)
{
    switch (code) {
    case 0: return "ok";
    case ISM_UDPW_ESHORT: return "datagram too short for its type";
    case ISM_UDPW_EVERSION: return "unknown protocol version";
    case ISM_UDPW_ETYPE: return "unknown packet type";
    case ISM_UDPW_EFLAGS: return "flags not valid for this packet type";
    case ISM_UDPW_ETOKEN: return "connection token mismatch (not from the authenticated peer)";
    case ISM_UDPW_ECRC: return "CRC32C mismatch or missing";
    case ISM_UDPW_ELEN: return "length inconsistent with the packet's counts";
    case ISM_UDPW_ERANGE: return "ACK ranges or NACKs malformed";
    case ISM_UDPW_EFIELD: return "field out of range";
    default: return "unknown error";
    }
}
