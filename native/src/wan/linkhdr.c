/* linkhdr.c: wire encoding and validation of the per-stream link header (linkhdr.h). */
#include "linkhdr.h"

#include "../common/le.h"

#include <string.h>

#include "crc32c.h"

void ism_link_hdr_encode(const ism_link_hdr *h, uint8_t out[ISM_LINK_HDR_SIZE])
{
    ism_put_le32(out, ISM_LINK_MAGIC);
    ism_put_le32(out + 4, h->flags);
    ism_put_le32(out + 8, h->crc);
    ism_put_le32(out + 12, (h->flags & ISM_LINK_FLAG_CRC) ? h->hcrc : 0);
    ism_put_le64(out + 16, h->seq);
    ism_put_le64(out + 24, h->ack);
}

int ism_link_hdr_decode(const uint8_t *in, size_t n, ism_link_hdr *h)
{
    if (!in || n < ISM_LINK_HDR_SIZE)
        return ISM_LINK_ESHORT;
    if (ism_get_le32(in) != ISM_LINK_MAGIC)
        return ISM_LINK_EMAGIC;
    uint32_t flags = ism_get_le32(in + 4);
    uint32_t hcrc = ism_get_le32(in + 12);
    if ((flags & ~ISM_LINK_FLAGS_KNOWN) || (!(flags & ISM_LINK_FLAG_CRC) && hcrc != 0))
        return ISM_LINK_EFLAGS;
    uint64_t ack = ism_get_le64(in + 24);
    if (ack == 0)
        return ISM_LINK_EACK;
    h->flags = flags;
    h->crc = ism_get_le32(in + 8);
    h->hcrc = hcrc;
    h->seq = ism_get_le64(in + 16);
    h->ack = ack;
    return 0;
}

uint32_t ism_link_crc(const uint8_t lhdr[ISM_LINK_HDR_SIZE], const void *frame, size_t n)
{
    uint8_t tmp[ISM_LINK_HDR_SIZE];
    memcpy(tmp, lhdr, sizeof tmp);
    ism_put_le32(tmp + 8, 0);
    return ism_crc32c(ism_crc32c(0, tmp, sizeof tmp), frame, n);
}

uint32_t ism_link_hdr_crc(const uint8_t lhdr[ISM_LINK_HDR_SIZE], const void *frame_hdr, size_t n)
{
    uint8_t tmp[ISM_LINK_HDR_SIZE];
    memcpy(tmp, lhdr, sizeof tmp);
    ism_put_le32(tmp + 8, 0);
    ism_put_le32(tmp + 12, 0);
    return ism_crc32c(ism_crc32c(0, tmp, sizeof tmp), frame_hdr, n);
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
        return "unknown link header flags (or a header CRC without the CRC flag)";
    case ISM_LINK_EACK:
        return "link header acknowledges frame 0";
    default:
        return "unknown link header error";
    }
}
