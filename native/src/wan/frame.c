/* frame.c: wire encoding, validation and checksumming of isthmus frames.
 *
 * Owns the byte-exact (little-endian, padding-free) mapping between ism_frame_hdr and
 * the 48 bytes on the wire, the validation of untrusted headers read from peers, and
 * the CRC32C used by ISM_FRAME_FLAG_CRC (portable table, SSE4.2 when the CPU has it).
 */
#include "frame.h"

#include <string.h>

/* ISM_CRC32C_NO_HW forces the portable path, so tests can cover it on SSE4.2 hosts. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ISM_CRC32C_NO_HW)
#define ISM_CRC32C_HAVE_SSE42 1
#include <nmmintrin.h>
#endif

/* Packing by shifts rather than memcpy of the struct keeps the wire format independent
 * of host byte order and of any padding a future compiler might choose. */
static void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put_le64(uint8_t *p, uint64_t v)
{
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

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
    put_le32(out + OFF_MAGIC, h->magic);
    out[OFF_VERSION] = h->version;
    out[OFF_TYPE] = h->type;
    put_le16(out + OFF_FLAGS, h->flags);
    put_le32(out + OFF_CTX, h->ctx);
    put_le32(out + OFF_SRC, (uint32_t)h->src);
    put_le32(out + OFF_DST, (uint32_t)h->dst);
    put_le32(out + OFF_TAG, (uint32_t)h->tag);
    put_le32(out + OFF_LEN, h->len);
    put_le32(out + OFF_CRC, h->crc);
    put_le64(out + OFF_A, h->a);
    put_le64(out + OFF_B, h->b);
}

/* The header is decoded into a local and copied out only once it is valid, so a
 * caller that ignores the return code never sees half-trusted values. */
int ism_frame_decode(const uint8_t *in, size_t n, ism_frame_hdr *h)
{
    if (in == NULL || n < ISM_FRAME_HDR_SIZE)
        return ISM_FRAME_ESHORT;
    if (get_le32(in + OFF_MAGIC) != ISM_FRAME_MAGIC)
        return ISM_FRAME_EMAGIC;
    if (in[OFF_VERSION] != ISM_FRAME_VERSION)
        return ISM_FRAME_EVERSION;
    if (in[OFF_TYPE] < 1 || in[OFF_TYPE] > ISM_F_TYPE_MAX)
        return ISM_FRAME_ETYPE;
    if (get_le32(in + OFF_LEN) > ISM_FRAME_MAX_PAYLOAD)
        return ISM_FRAME_ELEN;

    ism_frame_hdr t;
    t.magic = get_le32(in + OFF_MAGIC);
    t.version = in[OFF_VERSION];
    t.type = in[OFF_TYPE];
    t.flags = get_le16(in + OFF_FLAGS);
    t.ctx = get_le32(in + OFF_CTX);
    t.src = u32_to_i32(get_le32(in + OFF_SRC));
    t.dst = u32_to_i32(get_le32(in + OFF_DST));
    t.tag = u32_to_i32(get_le32(in + OFF_TAG));
    t.len = get_le32(in + OFF_LEN);
    t.crc = get_le32(in + OFF_CRC);
    t.a = get_le64(in + OFF_A);
    t.b = get_le64(in + OFF_B);
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

/* Reflected CRC32C table (polynomial 0x82F63B78), written out so the portable path
 * needs no lazy initialisation and therefore no locking between threads. */
static const uint32_t crc32c_table[256] = {
    0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu,
    0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
    0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu,
    0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
    0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
    0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
    0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
    0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
    0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu,
    0x1642ae59u, 0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
    0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu,
    0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
    0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu,
    0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
    0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
    0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
    0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu,
    0x4767748au, 0xb50cf789u, 0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
    0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu,
    0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
    0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
    0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
    0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u,
    0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
    0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
    0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
    0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u, 0x502036a5u,
    0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
    0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u,
    0x0e330a81u, 0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
    0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u,
    0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
    0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u,
    0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
    0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
    0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
    0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u,
    0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
    0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u,
    0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
    0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u,
    0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
    0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n--)
        crc = crc32c_table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return crc;
}

#ifdef ISM_CRC32C_HAVE_SSE42
/* Only this function is compiled for SSE4.2, so the binary still runs on CPUs without
 * it; callers reach it only after the runtime CPU check. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
                                                           size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8); /* unaligned-safe; the instruction wants little-endian, as x86 is */
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

uint32_t ism_crc32c(uint32_t crc, const void *buf, size_t n)
{
    if (n == 0)
        return crc;
    const uint8_t *p = buf;
    /* Pre/post inversion lives here so callers can chain calls starting from 0, the
     * same convention as zlib's crc32(). */
    crc = ~crc;
#ifdef ISM_CRC32C_HAVE_SSE42
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc32c_hw(crc, p, n);
#endif
    return ~crc32c_sw(crc, p, n);
}
