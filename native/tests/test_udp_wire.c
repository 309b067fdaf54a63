/* test_udp_wire.c: checks for the reliable-UDP packet formats (src/wan/udp/wire.c).
 *
 * Owns the guarantees the protocol code relies on: DATA, ACK and CLOSE round-trip; the
 * byte layout matches hand-written little-endian bytes; a wrong token, a flipped bit
 * anywhere under CRC, a per-packet attempt to switch CRC off, and every malformed ACK
 * (unordered, overlapping or out-of-bounds ranges; NACKs inside ranges or unordered;
 * counts inconsistent with the size) are rejected with the documented code; and the
 * ACK builder packs ranges and NACKs up to exactly the datagram size it is given.
 */
#include "wire.h"
#include "../src/common/le.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const uint8_t TOK[ISM_UDPW_TOKEN_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t OTHER[ISM_UDPW_TOKEN_LEN] = {1, 2, 3, 4, 5, 6, 7, 9};

static void test_data(void)
{
    uint8_t p[ISM_UDPW_DATA_HDR + 100];
    for (int i = 0; i < 100; i++)
        p[ISM_UDPW_DATA_HDR + i] = (uint8_t)(i * 7);
    ism_udpw_encode_data(p, ISM_UDPW_F_FIN, TOK, 0x0102030405060708ull, 0x1122334455ull, 17);
    /* layout */
    CHECK(p[0] == 1 && p[1] == ISM_UDPW_DATA && p[2] == ISM_UDPW_F_FIN && p[3] == 0, "common");
    CHECK(memcmp(p + 8, TOK, 8) == 0, "token at 8");
    CHECK(p[16] == 0x08 && p[23] == 0x01, "pn little-endian at 16");
    CHECK(p[24] == 0x55 && p[28] == 0x11, "offset at 24");
    CHECK(ism_get_le32(p + 32) == 17, "lua delta at 32");
    ism_udpw_seal(p, sizeof p);
    CHECK(ism_udpw_check(p, sizeof p, TOK, 1) == ISM_UDPW_DATA, "sealed packet accepted");
    ism_udpw_data d;
    CHECK(ism_udpw_decode_data(p, sizeof p, &d) == 0, "decode");
    CHECK(d.pn == 0x0102030405060708ull && d.offset == 0x1122334455ull && d.lua_delta == 17 &&
              d.len == 100 && d.payload == p + ISM_UDPW_DATA_HDR &&
              (d.flags & ISM_UDPW_F_FIN),
          "fields");
    /* token, CRC, every bit */
    CHECK(ism_udpw_check(p, sizeof p, OTHER, 1) == ISM_UDPW_ETOKEN, "foreign token");
    int missed = 0;
    for (size_t bit = 0; bit < sizeof p * 8; bit++) {
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (ism_udpw_check(p, sizeof p, TOK, 1) > 0)
            missed++;
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK(missed == 0, "%d single-bit flips passed the check", missed);
    /* CRC mode is per connection: a packet may not switch it off, nor add one uninvited */
    uint8_t q[sizeof p];
    memcpy(q, p, sizeof q);
    q[3] &= (uint8_t)~(ISM_UDPW_F_CRC >> 8);
    CHECK(ism_udpw_check(q, sizeof q, TOK, 1) == ISM_UDPW_ECRC, "CRC flag cleared");
    CHECK(ism_udpw_check(p, sizeof p, TOK, 0) == ISM_UDPW_ECRC, "CRC on a no-CRC connection");
    ism_udpw_encode_data(q, 0, TOK, 5, 0, 0);
    CHECK(ism_udpw_check(q, ISM_UDPW_DATA_HDR, TOK, 0) == ISM_UDPW_DATA, "no-CRC packet");
    CHECK(ism_udpw_check(q, ISM_UDPW_DATA_HDR, TOK, 1) == ISM_UDPW_ECRC, "missing CRC");
    /* field checks */
    CHECK(ism_udpw_check(p, 15, TOK, 0) == ISM_UDPW_ESHORT, "short");
    CHECK(ism_udpw_decode_data(p, ISM_UDPW_DATA_HDR - 1, &d) == ISM_UDPW_ESHORT, "short data");
    memcpy(q, p, sizeof q);
    q[0] = 2;
    CHECK(ism_udpw_check(q, sizeof q, TOK, 1) == ISM_UDPW_EVERSION, "version");
    q[0] = 1;
    q[1] = 9;
    CHECK(ism_udpw_check(q, sizeof q, TOK, 1) == ISM_UDPW_ETYPE, "type");
    ism_udpw_encode_data(q, 0x40, TOK, 5, 0, 0);
    CHECK(ism_udpw_decode_data(q, ISM_UDPW_DATA_HDR, &d) == ISM_UDPW_EFLAGS, "unknown flag");
    ism_udpw_encode_data(q, ISM_UDPW_F_PING, TOK, 5, 0, 0);
    CHECK(ism_udpw_decode_data(q, ISM_UDPW_DATA_HDR, &d) == 0 && d.len == 0, "ping");
    CHECK(ism_udpw_decode_data(q, ISM_UDPW_DATA_HDR + 1, &d) == ISM_UDPW_EFLAGS, "ping w/ data");
    {
        /* path-MTU probes: PING|PAD, zero padding of any length, never FIN, never alone */
        static uint8_t pr[ISM_UDPW_MAX_DGRAM];
        memset(pr, 0, sizeof pr);
        ism_udpw_encode_data(pr, ISM_UDPW_F_PING | ISM_UDPW_F_PAD, TOK, 5, 0, 0);
        CHECK(ism_udpw_decode_data(pr, sizeof pr, &d) == 0 &&
                  d.len == sizeof pr - ISM_UDPW_DATA_HDR && (d.flags & ISM_UDPW_F_PAD),
              "probe of the largest size");
        CHECK(ism_udpw_decode_data(pr, ISM_UDPW_DATA_HDR, &d) == 0, "probe without padding");
        pr[sizeof pr - 1] = 1;
        CHECK(ism_udpw_decode_data(pr, sizeof pr, &d) == ISM_UDPW_EFIELD, "probe padding not zero");
        pr[sizeof pr - 1] = 0;
        ism_udpw_encode_data(pr, ISM_UDPW_F_PAD, TOK, 5, 0, 0);
        CHECK(ism_udpw_decode_data(pr, 1300, &d) == ISM_UDPW_EFLAGS, "padding without PING");
        ism_udpw_encode_data(pr, ISM_UDPW_F_PING | ISM_UDPW_F_PAD | ISM_UDPW_F_FIN, TOK, 5, 0, 0);
        CHECK(ism_udpw_decode_data(pr, 1300, &d) == ISM_UDPW_EFLAGS, "probe with FIN");
        ism_udpw_encode_data(pr, ISM_UDPW_F_PING | ISM_UDPW_F_PAD, TOK, 5, 0, 0);
        ism_udpw_seal(pr, 1300);
        CHECK(ism_udpw_check(pr, 1300, TOK, 1) == ISM_UDPW_DATA, "sealed probe passes the CRC");
        pr[700] = 0x10; /* padding changed in flight */
        CHECK(ism_udpw_check(pr, 1300, TOK, 1) == ISM_UDPW_ECRC, "probe padding under the CRC");
    }
    ism_udpw_encode_data(q, 0, TOK, 5, 1ull << 62, 0);
    CHECK(ism_udpw_decode_data(q, ISM_UDPW_DATA_HDR, &d) == ISM_UDPW_EFIELD, "offset range");
    ism_udpw_encode_data(q, 0, TOK, 5, 0, 6);
    CHECK(ism_udpw_decode_data(q, ISM_UDPW_DATA_HDR, &d) == ISM_UDPW_EFIELD, "lua above pn");
    CHECK(ism_udpw_check(q, ISM_UDPW_MAX_DGRAM + 1, TOK, 0) == ISM_UDPW_ELEN, "oversize");
}

/* Build an ACK by hand: ranges (hi,count) then NACK distances. */
static size_t raw_ack(uint8_t *p, uint64_t largest, const uint64_t (*r)[2], int nr,
                      const uint32_t *nk, int nn)
{
    ism_udpw_encode_common(p, ISM_UDPW_ACK, 0, TOK);
    ism_put_le64(p + 16, largest);
    ism_put_le64(p + 24, 1 << 20);
    ism_put_le32(p + 32, 250);
    p[36] = (uint8_t)nr;
    p[37] = 0;
    p[38] = (uint8_t)nn;
    p[39] = 0;
    size_t n = ISM_UDPW_ACK_HDR;
    for (int i = 0; i < nr; i++, n += 12) {
        ism_put_le64(p + n, r[i][0]);
        ism_put_le32(p + n + 8, (uint32_t)r[i][1]);
    }
    for (int i = 0; i < nn; i++, n += 4)
        ism_put_le32(p + n, nk[i]);
    return n;
}

static void test_ack(void)
{
    uint8_t p[2048];
    ism_udpw_ack a;
    /* 100..91 received, 90..88 lost, 87..80 received */
    const uint64_t good[][2] = {{100, 10}, {87, 8}};
    const uint32_t nk[] = {10, 11, 12};
    size_t n = raw_ack(p, 100, good, 2, nk, 3);
    CHECK(ism_udpw_decode_ack(p, n, &a) == 0, "valid ack");
    CHECK(a.largest == 100 && a.rcv_limit == 1 << 20 && a.ack_delay_us == 250 &&
              a.nranges == 2 && a.nnacks == 3,
          "ack fields");
    CHECK(ism_udpw_ack_range(&a, 1).hi == 87 && ism_udpw_ack_range(&a, 1).count == 8, "range");
    CHECK(ism_udpw_ack_nack(&a, 2) == 88, "nack pn");
    CHECK(ism_udpw_decode_ack(p, n - 1, &a) == ISM_UDPW_ELEN, "size vs counts");
    struct {
        const char *what;
        uint64_t largest;
        uint64_t r[3][2];
        int nr;
        uint32_t nk[3];
        int nn;
    } bad[] = {
        {"no ranges", 100, {{0}}, 0, {0}, 0},
        {"first not at largest", 100, {{99, 5}}, 1, {0}, 0},
        {"zero count", 100, {{100, 0}}, 1, {0}, 0},
        {"below zero", 100, {{100, 102}}, 1, {0}, 0},
        {"ascending", 100, {{100, 2}, {100, 1}}, 2, {0}, 0},
        {"touching", 100, {{100, 2}, {98, 1}}, 2, {0}, 0},
        {"overlapping", 100, {{100, 5}, {97, 1}}, 2, {0}, 0},
        {"nack inside range", 100, {{100, 10}}, 1, {5}, 1},
        {"nack of largest", 100, {{100, 1}}, 1, {0}, 1},
        {"nacks unordered", 100, {{100, 1}}, 1, {5, 3}, 2},
        {"nack below zero", 100, {{100, 1}}, 1, {101}, 1},
        {"largest out of range", 1ull << 62, {{1ull << 62, 1}}, 1, {0}, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = raw_ack(p, bad[i].largest, bad[i].r, bad[i].nr, bad[i].nk, bad[i].nn);
        int rc = ism_udpw_decode_ack(p, n, &a);
        CHECK(rc == ISM_UDPW_ERANGE || rc == ISM_UDPW_EFIELD, "%s: got %d", bad[i].what, rc);
    }
    /* builder: packs to the cap and the result parses back identically */
    static ism_udpw_ackb b;
    size_t cap = 1472;
    ism_udpw_ack_begin(&b, p, cap, TOK, 1000000, 5000, 42);
    uint64_t hi = 1000000;
    int nr = 0, nn = 0;
    for (;;) {
        if (ism_udpw_ack_add_range(&b, hi, 3) != 0)
            break;
        nr++;
        if (ism_udpw_ack_add_nack(&b, (uint32_t)(1000000 - (hi - 3))) != 0)
            break;
        nn++;
        hi -= 5;
    }
    n = ism_udpw_ack_finish(&b);
    CHECK(n <= cap && n + 12 > cap, "packed to %zu of %zu bytes", n, cap);
    CHECK(ism_udpw_check(p, n, TOK, 0) == ISM_UDPW_ACK, "built ack checks");
    CHECK(ism_udpw_decode_ack(p, n, &a) == 0, "built ack decodes");
    CHECK(a.nranges == nr && a.nnacks == nn && a.ack_delay_us == 42 && a.rcv_limit == 5000,
          "built ack: %u/%d ranges, %u/%d nacks", a.nranges, nr, a.nnacks, nn);
    uint32_t reason = 0;
    n = ism_udpw_encode_close(p, TOK, ISM_UDPW_CLOSE_PROTOCOL);
    ism_udpw_seal(p, n);
    CHECK(ism_udpw_check(p, n, TOK, 1) == ISM_UDPW_CLOSE && ism_udpw_decode_close(p, n, &reason) == 0 &&
              reason == ISM_UDPW_CLOSE_PROTOCOL,
          "close");
    CHECK(ism_udpw_decode_close(p, n + 1, &reason) == ISM_UDPW_ELEN, "close length");
    for (int c = 0; c >= -9; c--)
        CHECK(strcmp(ism_udpw_strerror(c), "unknown error") != 0, "strerror(%d)", c);
}

int main(void)
{
    test_data();
    test_ack();
    if (failures) {
        fprintf(stderr, "test_udp_wire: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_udp_wire: all checks passed\n");
    return 0;
}
