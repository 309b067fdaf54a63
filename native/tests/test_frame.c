/* test_frame.c: checks for the frame wire format (src/contract/frame.c) and CRC32C
 * (src/wan/crc32c.c).
 *
 * Owns the guarantees other code relies on: every type round-trips, every malformed
 * header is rejected with the right code and without touching the output, the byte
 * layout matches hand-written little-endian bytes, and CRC32C matches the standard
 * vector and a bit-by-bit reference on every length and alignment.
 */
#include "../src/contract/frame.h"
#include "../src/wan/crc32c.h"
#include "../src/wan/linkhdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"



static int hdr_equal(const ism_frame_hdr *x, const ism_frame_hdr *y)
{
    return x->magic == y->magic && x->version == y->version && x->type == y->type &&
           x->flags == y->flags && x->ctx == y->ctx && x->src == y->src && x->dst == y->dst &&
           x->tag == y->tag && x->len == y->len && x->crc == y->crc && x->a == y->a &&
           x->b == y->b;
}

static void test_init(void)
{
    ism_frame_hdr h;
    memset(&h, 0xA5, sizeof h);
    ism_frame_init(&h, ISM_F_CTS);
    CHECK(h.magic == ISM_FRAME_MAGIC, "magic %#x", h.magic);
    CHECK(h.version == ISM_FRAME_VERSION, "version %u", h.version);
    CHECK(h.type == ISM_F_CTS, "type %u", h.type);
    CHECK(h.flags == 0 && h.ctx == 0 && h.src == 0 && h.dst == 0 && h.tag == 0 && h.len == 0 &&
              h.crc == 0 && h.a == 0 && h.b == 0,
          "init left stale fields");
}

static void test_roundtrip(void)
{
    for (int t = 1; t <= ISM_F_TYPE_MAX; t++) {
        ism_frame_hdr h, d;
        ism_frame_init(&h, (enum ism_frame_type)t);
        h.flags = (uint16_t)(ISM_FRAME_FLAG_CRC | (t << 8));
        h.ctx = 0x01020304u * (uint32_t)t;
        h.src = t % 2 ? -1 : 123456 * t;
        h.dst = t % 3 ? -2147483647 - 1 : 2147483647;
        h.tag = -t;
        h.len = t == ISM_F_TYPE_MAX ? ISM_FRAME_MAX_PAYLOAD : (uint32_t)t * 1000u;
        h.crc = 0xDEADBEEFu ^ (uint32_t)t;
        h.a = 0x0123456789ABCDEFull * (uint64_t)t;
        h.b = ~(uint64_t)t;
        uint8_t wire[ISM_FRAME_HDR_SIZE];
        ism_frame_encode(&h, wire);
        memset(&d, 0, sizeof d);
        int rc = ism_frame_decode(wire, sizeof wire, &d);
        CHECK(rc == 0, "type %s: decode returned %d (%s)", ism_frame_type_name(t), rc,
              ism_frame_strerror(rc));
        CHECK(hdr_equal(&h, &d), "type %s: decoded header differs", ism_frame_type_name(t));
        /* Extra trailing bytes (the payload) must not matter. */
        uint8_t longer[ISM_FRAME_HDR_SIZE + 7];
        memcpy(longer, wire, sizeof wire);
        memset(longer + sizeof wire, 0xFF, 7);
        CHECK(ism_frame_decode(longer, sizeof longer, &d) == 0 && hdr_equal(&h, &d),
              "type %s: decode with trailing payload failed", ism_frame_type_name(t));
        CHECK(strcmp(ism_frame_type_name(t), "UNKNOWN") != 0, "type %d has no name", t);
    }
    CHECK(strcmp(ism_frame_type_name(0), "UNKNOWN") == 0, "type 0 named %s",
          ism_frame_type_name(0));
    CHECK(strcmp(ism_frame_type_name(ISM_F_TYPE_MAX + 1), "UNKNOWN") == 0, "type %d named %s",
          ISM_F_TYPE_MAX + 1,
          ism_frame_type_name(10));
    CHECK(strcmp(ism_frame_type_name(ISM_F_EAGER), "EAGER") == 0, "EAGER name");
    CHECK(strcmp(ism_frame_type_name(ISM_F_ABORT_ACK), "ABORT_ACK") == 0, "ABORT_ACK name");
}

static void expect_error(const uint8_t *wire, size_t n, int want, const char *what)
{
    ism_frame_hdr d, sentinel;
    memset(&d, 0x5A, sizeof d);
    memcpy(&sentinel, &d, sizeof d);
    int rc = ism_frame_decode(wire, n, &d);
    CHECK(rc == want, "%s: got %d (%s), want %d (%s)", what, rc, ism_frame_strerror(rc), want,
          ism_frame_strerror(want));
    CHECK(memcmp(&d, &sentinel, sizeof d) == 0, "%s: failed decode modified the output", what);
}

static void test_decode_errors(void)
{
    ism_frame_hdr h;
    ism_frame_init(&h, ISM_F_DATA);
    h.len = 100;
    uint8_t good[ISM_FRAME_HDR_SIZE], w[ISM_FRAME_HDR_SIZE];
    ism_frame_encode(&h, good);

    expect_error(good, 0, ISM_FRAME_ESHORT, "0 bytes");
    expect_error(NULL, 0, ISM_FRAME_ESHORT, "NULL input");
    expect_error(good, ISM_FRAME_HDR_SIZE - 1, ISM_FRAME_ESHORT, "47 bytes");

    /* A short buffer on the heap lets ASan prove decode never reads past n. */
    for (size_t n = 0; n < ISM_FRAME_HDR_SIZE; n++) {
        uint8_t *p = malloc(n ? n : 1);
        memcpy(p, good, n);
        expect_error(p, n, ISM_FRAME_ESHORT, "heap short buffer");
        free(p);
    }

    memcpy(w, good, sizeof w);
    w[0] ^= 0x01;
    expect_error(w, sizeof w, ISM_FRAME_EMAGIC, "bad magic byte 0");
    memcpy(w, good, sizeof w);
    w[3] = 'X';
    expect_error(w, sizeof w, ISM_FRAME_EMAGIC, "bad magic byte 3");
    memcpy(w, good, sizeof w);
    memcpy(w, "HTSI", 4); /* magic in the wrong byte order */
    expect_error(w, sizeof w, ISM_FRAME_EMAGIC, "byte-swapped magic");

    memcpy(w, good, sizeof w);
    w[4] = 0;
    expect_error(w, sizeof w, ISM_FRAME_EVERSION, "version 0");
    w[4] = 2;
    expect_error(w, sizeof w, ISM_FRAME_EVERSION, "version 2");

    memcpy(w, good, sizeof w);
    w[5] = 0;
    expect_error(w, sizeof w, ISM_FRAME_ETYPE, "type 0");
    w[5] = ISM_F_TYPE_MAX + 1;
    expect_error(w, sizeof w, ISM_FRAME_ETYPE, "type past the last");
    w[5] = 255;
    expect_error(w, sizeof w, ISM_FRAME_ETYPE, "type 255");

    h.len = ISM_FRAME_MAX_PAYLOAD + 1;
    ism_frame_encode(&h, w);
    expect_error(w, sizeof w, ISM_FRAME_ELEN, "len max+1");
    h.len = 0xFFFFFFFFu;
    ism_frame_encode(&h, w);
    expect_error(w, sizeof w, ISM_FRAME_ELEN, "len 0xffffffff");
    h.len = ISM_FRAME_MAX_PAYLOAD;
    ism_frame_encode(&h, w);
    ism_frame_hdr d;
    CHECK(ism_frame_decode(w, sizeof w, &d) == 0 && d.len == ISM_FRAME_MAX_PAYLOAD,
          "len == max must be accepted");

    /* Each failure has its own message, and unknown codes still get one. */
    const int codes[] = {0,
                         ISM_FRAME_ESHORT,
                         ISM_FRAME_EMAGIC,
                         ISM_FRAME_EVERSION,
                         ISM_FRAME_ETYPE,
                         ISM_FRAME_ELEN};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        for (size_t j = i + 1; j < sizeof codes / sizeof codes[0]; j++)
            CHECK(strcmp(ism_frame_strerror(codes[i]), ism_frame_strerror(codes[j])) != 0,
                  "codes %d and %d share a message", codes[i], codes[j]);
    CHECK(ism_frame_strerror(-99) != NULL && *ism_frame_strerror(-99), "unknown code message");
}

static void test_manual_bytes(void)
{
    /* Hand-written wire bytes: each multi-byte field written least significant byte
     * first, so this holds on big-endian hosts too. */
    static const uint8_t wire[ISM_FRAME_HDR_SIZE] = {
        'I',  'S',  'T',  'H',                          /* magic */
        0x01,                                           /* version */
        0x04,                                           /* type DATA */
        0x03, 0x00,                                     /* flags CRC|SYNC */
        0x44, 0x33, 0x22, 0x11,                         /* ctx 0x11223344 */
        0xFF, 0xFF, 0xFF, 0xFF,                         /* src -1 */
        0x02, 0x01, 0x00, 0x00,                         /* dst 258 */
        0xFE, 0xFF, 0xFF, 0xFF,                         /* tag -2 */
        0x00, 0x00, 0x01, 0x00,                         /* len 65536 */
        0xEF, 0xBE, 0xAD, 0xDE,                         /* crc 0xDEADBEEF */
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* a */
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* b */
    };
    ism_frame_hdr h;
    int rc = ism_frame_decode(wire, sizeof wire, &h);
    CHECK(rc == 0, "manual decode: %s", ism_frame_strerror(rc));
    CHECK(h.magic == ISM_FRAME_MAGIC, "magic %#x", h.magic);
    CHECK(h.version == 1, "version %u", h.version);
    CHECK(h.type == ISM_F_DATA, "type %u", h.type);
    CHECK(h.flags == (ISM_FRAME_FLAG_CRC | ISM_FRAME_FLAG_SYNC), "flags %#x", h.flags);
    CHECK(h.ctx == 0x11223344u, "ctx %#x", h.ctx);
    CHECK(h.src == -1, "src %d", h.src);
    CHECK(h.dst == 258, "dst %d", h.dst);
    CHECK(h.tag == -2, "tag %d", h.tag);
    CHECK(h.len == 65536u, "len %u", h.len);
    CHECK(h.crc == 0xDEADBEEFu, "crc %#x", h.crc);
    CHECK(h.a == 0x0102030405060708ull, "a %#llx", (unsigned long long)h.a);
    CHECK(h.b == 0x8000000000000001ull, "b %#llx", (unsigned long long)h.b);

    uint8_t again[ISM_FRAME_HDR_SIZE];
    ism_frame_encode(&h, again);
    CHECK(memcmp(again, wire, sizeof wire) == 0, "re-encoding does not reproduce the bytes");
}

/* Bit-at-a-time reference, independent of the table and the SSE4.2 path. */
static uint32_t crc32c_ref(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void test_crc32c(void)
{
    uint32_t c = ism_crc32c(0, "123456789", 9);
    CHECK(c == 0xE3069283u, "CRC32C(\"123456789\") = %#010x, want 0xe3069283", c);
    CHECK(ism_crc32c(0, NULL, 0) == 0, "empty CRC must be 0");
    CHECK(ism_crc32c(0x12345678u, "", 0) == 0x12345678u, "zero-length must not change crc");

    /* RFC 3720 B.4 vector: 32 bytes of zeros. */
    uint8_t zeros[32] = {0};
    c = ism_crc32c(0, zeros, sizeof zeros);
    CHECK(c == 0x8A9136AAu, "CRC32C(32 zero bytes) = %#010x, want 0x8a9136aa", c);

    enum { N = 4096 + 37 };
    static uint8_t buf[N + 16];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    /* Every short length at every alignment against the reference. */
    for (size_t off = 0; off < 16; off++)
        for (size_t n = 0; n <= 70; n++)
            CHECK(ism_crc32c(0, buf + off, n) == crc32c_ref(0, buf + off, n),
                  "mismatch vs reference at offset %zu length %zu", off, n);
    uint32_t whole = ism_crc32c(0, buf + 3, N);
    CHECK(whole == crc32c_ref(0, buf + 3, N), "long buffer mismatch vs reference");
    /* Incremental must equal one-shot for any split, including uneven ones. */
    for (size_t split = 0; split <= N; split += 97) {
        uint32_t inc = ism_crc32c(ism_crc32c(0, buf + 3, split), buf + 3 + split, N - split);
        CHECK(inc == whole, "split at %zu: %#010x != %#010x", split, inc, whole);
    }
    uint32_t three = ism_crc32c(0, buf, 1);
    three = ism_crc32c(three, buf + 1, 8);
    three = ism_crc32c(three, buf + 9, 1000);
    CHECK(three == ism_crc32c(0, buf, 1009), "three-part incremental mismatch");
}

/* The link header in front of frames between gateways (linkhdr.h). */
static void test_link_header(void)
{
    ism_link_hdr h = {.flags = ISM_LINK_FLAG_CRC, .crc = 0xdeadbeefu,
                      .seq = 0x0102030405060708ull, .ack = 0x1112131415161718ull}, d;
    uint8_t w[ISM_LINK_HDR_SIZE];
    ism_link_hdr_encode(&h, w);
    CHECK(w[0] == 'I' && w[1] == 'S' && w[2] == 'L' && w[3] == 'K', "link magic bytes");
    CHECK(w[16] == 0x08 && w[23] == 0x01 && w[24] == 0x18, "seq/ack are little-endian");
    CHECK(ism_link_hdr_decode(w, sizeof w, &d) == 0 && d.flags == h.flags && d.crc == h.crc &&
              d.seq == h.seq && d.ack == h.ack,
          "link header round trip");
    CHECK(ism_link_hdr_decode(w, sizeof w - 1, &d) == ISM_LINK_ESHORT, "short link header");
    uint8_t bad[ISM_LINK_HDR_SIZE];
    memcpy(bad, w, sizeof bad);
    bad[0] ^= 1;
    CHECK(ism_link_hdr_decode(bad, sizeof bad, &d) == ISM_LINK_EMAGIC, "bad link magic");
    memcpy(bad, w, sizeof bad);
    bad[4] |= 0x80;
    CHECK(ism_link_hdr_decode(bad, sizeof bad, &d) == ISM_LINK_EFLAGS, "unknown link flag");
    /* hcrc travels only with the CRC flag */
    h.hcrc = 0xa1b2c3d4u;
    ism_link_hdr_encode(&h, w);
    CHECK(ism_link_hdr_decode(w, sizeof w, &d) == 0 && d.hcrc == 0xa1b2c3d4u, "hcrc round trip");
    memcpy(bad, w, sizeof bad);
    bad[4] = 0;
    CHECK(ism_link_hdr_decode(bad, sizeof bad, &d) == ISM_LINK_EFLAGS, "hcrc without the flag");
    ism_link_hdr plain = {.flags = 0, .hcrc = 0x55u, .seq = 3, .ack = 4};
    ism_link_hdr_encode(&plain, bad);
    CHECK(bad[12] == 0 && bad[13] == 0 && bad[14] == 0 && bad[15] == 0,
          "no hcrc on the wire without the flag");
    /* hcrc covers both headers, its own and the crc field excepted */
    uint8_t fh[ISM_FRAME_HDR_SIZE];
    for (size_t i = 0; i < sizeof fh; i++)
        fh[i] = (uint8_t)(i * 13 + 1);
    uint32_t hc = ism_link_hdr_crc(w, fh, sizeof fh);
    memcpy(bad, w, sizeof bad);
    bad[8] ^= 0x5a;
    bad[12] ^= 0xa5;
    CHECK(ism_link_hdr_crc(bad, fh, sizeof fh) == hc, "hcrc covers the crc fields");
    for (size_t k = 0; k < ISM_LINK_HDR_SIZE + sizeof fh; k++) {
        if (k >= 8 && k < 16)
            continue;
        memcpy(bad, w, sizeof bad);
        uint8_t f2[ISM_FRAME_HDR_SIZE];
        memcpy(f2, fh, sizeof f2);
        if (k < ISM_LINK_HDR_SIZE)
            bad[k] ^= 0x10;
        else
            f2[k - ISM_LINK_HDR_SIZE] ^= 0x10;
        CHECK(ism_link_hdr_crc(bad, f2, sizeof f2) != hc, "a flipped bit in byte %zu of the "
              "headers leaves hcrc as it was", k);
    }
    memcpy(bad, w, sizeof bad);
    memset(bad + 24, 0, 8);
    CHECK(ism_link_hdr_decode(bad, sizeof bad, &d) == ISM_LINK_EACK, "ack 0");
    /* the CRC ignores its own field and covers every byte after the header */
    uint8_t frame[100];
    for (size_t i = 0; i < sizeof frame; i++)
        frame[i] = (uint8_t)(i * 7);
    uint32_t c1 = ism_link_crc(w, frame, sizeof frame);
    memcpy(bad, w, sizeof bad);
    bad[8] ^= 0xff;
    CHECK(ism_link_crc(bad, frame, sizeof frame) == c1, "the crc field is not covered");
    frame[99] ^= 1;
    CHECK(ism_link_crc(w, frame, sizeof frame) != c1, "a flipped payload bit changes the crc");
    bad[8] ^= 0xff;
    bad[20] ^= 1;
    frame[99] ^= 1;
    CHECK(ism_link_crc(bad, frame, sizeof frame) != c1, "a flipped seq bit changes the crc");
    for (int c = 0; c >= ISM_LINK_EACK; c--)
        CHECK(strlen(ism_link_strerror(c)) > 0, "message for %d", c);
}

int main(void)
{
    test_link_header();
    test_init();
    test_roundtrip();
    test_decode_errors();
    test_manual_bytes();
    test_crc32c();
    if (failures) {
        fprintf(stderr, "test_frame: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_frame: all checks passed\n");
    return 0;
}
