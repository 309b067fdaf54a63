/* linkhdr.c: wire encoding and validation of the per-stream link header (linkhdr.h). */
#include "linkhdr.h"

#include <string.h>

#include "frame.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

void ism_link_hdr_encode(const ism_link_hdr *h, uint8_t out[ISM_LINK_HDR_SIZE])
{
    put32(out, ISM_LINK_MAGIC);
    put32(out + 4, h->flags);
    put32(out + 8, h->crc);
    put32(out + 12, 0);
    put64(out + 16, h->seq);
    put64(out + 24, h->ack);
}

int ism_link_hdr_decode(const uint8_t *in, size_t n, ism_link_hdr *h)
{
    if (!in || n < ISM_LINK_HDR_SIZE)
        return ISM_LINK_ESHORT;
    if (get32(in) != ISM_LINK_MAGIC)
        return ISM_LINK_EMAGIC;
    uint32_t flags = get32(in + 4);
    if ((flags & ~ISM_LINK_FLAGS_KNOWN) || get32(in + 12) != 0)
        return ISM_LINK_EFLAGS;
    uint64_t ack = get64(in + 24);
    if (ack == 0)
        return ISM_LINK_EACK;
    h->flags = flags;
    h->crc = get32(in + 8);
    h->seq = get64(in + 16);
    h->ack = ack;
    return 0;
}

uint32_t ism_link_crc(const uint8_t lhdr[ISM_LINK_HDR_SIZE], const void *frame, size_t n)
{
    uint8_t tmp[ISM_LINK_HDR_SIZE];
    memcpy(tmp, lhdr, sizeof tmp);
    put32(tmp + 8, 0);
    return ism_crc32c(ism_crc32c(0, tmp, sizeof tmp), frame, n);
}

const char *ism_link_strerror(int code)
{
    switch (code) {
    case 0:
        return "ok";
    case ISM_LINK_ESHORT:
        return "truncated link header (fewer than 32 bytes)";
    case ISM_LINK_EMAGIC:
        return "bad link header magic (the stream is out of step)";
    case ISM_LINK_EFLAGS:
        return "unknown link header flags";
    case ISM_LINK_EACK:
        return "link header acknowledges frame 0";
    default:
        return "unknown link header error";
    }
}
