/* frame.c: wire encoding and validation of isthmus frames (frame.h).
 *
 * Owns the byte-exact (little-endian, padding-free) mapping between ism_frame_hdr and
 * the 48 bytes on the wire (by shifts, common/le.h, so it depends on neither the host's
 * byte order nor any padding a compiler might choose), and the validation of untrusted
 * headers read from peers.
 * The checksum of ISM_FRAME_FLAG_CRC is wan/crc32c.c's: a checksum is bytes, not protocol.
 */
#include "frame.h"

#include <string.h>

#include "../common/le.h"

/* Signed fields travel as their two's-complement bit pattern; converting back through
 * uint32_t -> int32_t is implementation-defined in C11 for values above INT32_MAX, so
 * do it arithmetically instead. */
static int32_t u32_to_i32(uint32_t v)
{
    return v <= 0x7fffffffu ? (int32_t)v : (int32_t)(v - 0x80000000u) - 0x7fffffff - 1;
}

/* Wire offsets; they match the struct layout but are spelled out so that the format
 * is defined here rather than by the compiler. */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_TYPE = 5,
    OFF_FLAGS = 6,
    OFF_CTX = 8,
    OFF_SRC = 12,
    OFF_DST = 16,
    OFF_TAG = 20,
    OFF_LEN = 24,
    OFF_CRC = 28,
    OFF_A = 32,
    OFF_B = 40
};

void ism_frame_init(ism_frame_hdr *h, enum ism_frame_type type)
{
    memset(h, 0, sizeof *h);
    h->magic = ISM_FRAME_MAGIC;
    h->version = ISM_FRAME_VERSION;
    h->type = (uint8_t)type;
}

void ism_frame_encode(const ism_frame_hdr *h, uint8_t out[ISM_FRAME_HDR_SIZE])
{
    ism_put_le32(out + OFF_MAGIC, h->magic);
    out[OFF_VERSION] = h->version;
    out[OFF_TYPE] = h->type;
    ism_put_le16(out + OFF_FLAGS, h->flags);
    ism_put_le32(out + OFF_CTX, h->ctx);
    ism_put_le32(out + OFF_SRC, (uint32_t)h->src);
    ism_put_le32(out + OFF_DST, (uint32_t)h->dst);
    ism_put_le32(out + OFF_TAG, (uint32_t)h->tag);
    ism_put_le32(out + OFF_LEN, h->len);
    ism_put_le32(out + OFF_CRC, h->crc);
    ism_put_le64(out + OFF_A, h->a);
    ism_put_le64(out + OFF_B, h->b);
}

/* The header is decoded into a local and copied out only once it is valid, so a
 * caller that ignores the return code never sees half-trusted values. */
int ism_frame_decode(const uint8_t *in, size_t n, ism_frame_hdr *h)
{
    if (in == NULL || n < ISM_FRAME_HDR_SIZE)
        return ISM_FRAME_ESHORT;
    if (ism_get_le32(in + OFF_MAGIC) != ISM_FRAME_MAGIC)
        return ISM_FRAME_EMAGIC;
    if (in[OFF_VERSION] != ISM_FRAME_VERSION)
        return ISM_FRAME_EVERSION;
    if (in[OFF_TYPE] < 1 || in[OFF_TYPE] > ISM_F_TYPE_MAX)
        return ISM_FRAME_ETYPE;
    if (ism_get_le32(in + OFF_LEN) > ISM_FRAME_MAX_PAYLOAD)
        return ISM_FRAME_ELEN;

    ism_frame_hdr t;
    t.magic = ism_get_le32(in + OFF_MAGIC);
    t.version = in[OFF_VERSION];
    t.type = in[OFF_TYPE];
    t.flags = ism_get_le16(in + OFF_FLAGS);
    t.ctx = ism_get_le32(in + OFF_CTX);
    t.src = u32_to_i32(ism_get_le32(in + OFF_SRC));
    t.dst = u32_to_i32(ism_get_le32(in + OFF_DST));
    t.tag = u32_to_i32(ism_get_le32(in + OFF_TAG));
    t.len = ism_get_le32(in + OFF_LEN);
    t.crc = ism_get_le32(in + OFF_CRC);
    t.a = ism_get_le64(in + OFF_A);
    t.b = ism_get_le64(in + OFF_B);
    *h = t;
    return 0;
}

const char *ism_frame_strerror(int code)
{
    switch (code) {
    case 0:
        return "ok";
    case ISM_FRAME_ESHORT:
        return "truncated frame header (fewer than 48 bytes)";
    case ISM_FRAME_EMAGIC:
        return "bad frame magic (peer is not speaking the isthmus frame protocol)";
    case ISM_FRAME_EVERSION:
        return "unsupported frame version (peer runs an incompatible isthmus release)";
    case ISM_FRAME_ETYPE:
        return "unknown frame type";
    case ISM_FRAME_ELEN:
        return "frame payload length exceeds the 1 MiB limit";
    default:
        return "unknown frame error";
    }
}

const char *ism_frame_type_name(int type)
{
    switch (type) {
    case ISM_F_EAGER:
        return "EAGER";
    case ISM_F_RTS:
        return "RTS";
    case ISM_F_CTS:
        return "CTS";
    case ISM_F_DATA:
        return "DATA";
    case ISM_F_CREDIT:
        return "CREDIT";
    case ISM_F_ABORT:
        return "ABORT";
    case ISM_F_FIN:
        return "FIN";
    case ISM_F_HEARTBEAT:
        return "HEARTBEAT";
    case ISM_F_ABORT_ACK:
        return "ABORT_ACK";
    case ISM_F_HELLO:
        return "HELLO";
    case ISM_F_RESUME:
        return "RESUME";
    case ISM_F_ACK:
        return "ACK";
    case ISM_F_PING:
        return "PING";
    case ISM_F_PONG:
        return "PONG";
    case ISM_F_QUERY:
        return "QUERY";
    case ISM_F_ANSWER:
        return "ANSWER";
    case ISM_F_WATCH:
        return "WATCH";
    case ISM_F_LINKEV:
        return "LINKEV";
    case ISM_F_IO:
        return "IO";
    case ISM_F_IOREP:
        return "IOREP";
    case ISM_F_RMA:
        return "RMA";
    default:
        return "UNKNOWN";
    }
}
