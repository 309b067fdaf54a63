/* corrupt.c: the corruption model of corrupt.h. */
#include "corrupt.h"

#include <stdint.h>

enum { PROTO_TCP = 6, PROTO_UDP = 17 };

/* Where the transport header and its payload are; -1 if not a corruptible packet. */
static int locate(const unsigned char *pkt, size_t len, size_t *l4, size_t *l4len, size_t *payload)
{
    if (len < 20 || (pkt[0] >> 4) != 4)
        return -1;
    size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
    size_t total = (size_t)pkt[2] << 8 | pkt[3];
    if (ihl < 20 || total < ihl || total > len)
        return -1;
    if ((pkt[6] & 0x3f) || pkt[7]) /* MF set or a fragment offset: not a whole segment */
        return -1;
    *l4 = ihl;
    *l4len = total - ihl;
    size_t hdr;
    if (pkt[9] == PROTO_UDP) {
        hdr = 8;
    } else if (pkt[9] == PROTO_TCP) {
        if (*l4len < 20)
            return -1;
        hdr = (size_t)(pkt[ihl + 12] >> 4) * 4;
        if (hdr < 20)
            return -1;
    } else {
        return -1;
    }
    if (*l4len < hdr)
        return -1;
    *payload = ihl + hdr;
    return 0;
}

static uint32_t sum16(const unsigned char *p, size_t n, uint32_t acc)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        acc += (uint32_t)p[i] << 8 | p[i + 1];
    if (n & 1)
        acc += (uint32_t)p[n - 1] << 8;
    return acc;
}

static size_t csum_offset(const unsigned char *pkt, size_t l4)
{
    return l4 + (pkt[9] == PROTO_UDP ? 6 : 16);
}

unsigned ism_le_l4_checksum(const unsigned char *pkt, size_t len)
{
    size_t l4, l4len, payload;
    if (locate(pkt, len, &l4, &l4len, &payload) < 0)
        return 0;
    size_t at = csum_offset(pkt, l4);
    uint32_t acc = sum16(pkt + 12, 8, 0); /* source and destination addresses */
    acc += pkt[9];
    acc += (uint32_t)l4len;
    acc = sum16(pkt + l4, at - l4, acc);                   /* header before the checksum */
    acc = sum16(pkt + at + 2, l4len - (at + 2 - l4), acc); /* the rest, checksum as zero */
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    unsigned c = ~acc & 0xffff;
    return pkt[9] == PROTO_UDP && c == 0 ? 0xffff : c;
}

int ism_le_corrupt(unsigned char *pkt, size_t len, ism_le_prng *g)
{
    size_t l4, l4len, payload;
    if (locate(pkt, len, &l4, &l4len, &payload) < 0 || l4 + l4len == payload)
        return 0;
    size_t nbits = (l4 + l4len - payload) * 8;
    size_t bit = (size_t)(ism_le_prng_next(g) % nbits);
    pkt[payload + bit / 8] ^= (unsigned char)(1u << (bit % 8));
    size_t at = csum_offset(pkt, l4);
    int udp_unchecked = pkt[9] == PROTO_UDP && pkt[at] == 0 && pkt[at + 1] == 0;
    if (!udp_unchecked) { /* a UDP checksum of 0 means none; it stays none */
        unsigned c = ism_le_l4_checksum(pkt, len);
        pkt[at] = (unsigned char)(c >> 8);
        pkt[at + 1] = (unsigned char)c;
    }
    return 1;
}
