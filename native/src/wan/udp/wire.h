/* wire.h: the reliable-UDP transport's packet formats (encode, decode, validation).
 *
 * Owns the bytes on the wire and nothing else: no I/O, no state. Every field read from
 * the network is checked here before any other code sees it (the parsers are fuzzed by
 * tests/fuzz_udp_wire.c). Integers are little-endian.
 *
 * Every packet starts with the 16-byte common header:
 *   0  u8  version (1)
 *   1  u8  type (ISM_UDPW_DATA, _ACK, _CLOSE)
 *   2  u16 flags (ISM_UDPW_F_*)
 *   4  u32 crc: CRC32C over the whole datagram with this field zero; 0 when the
 *          connection runs without CRC (negotiated at setup, never trusted per packet)
 *   8  u8  token[8]: the sender direction's connection token (see setup.c); a packet
 *          whose token does not match is dropped before anything else is looked at
 *
 * DATA (header 36 bytes, payload = rest of the datagram, may be empty):
 *   16 u64 packet number (never reused; a retransmission gets a new one)
 *   24 u64 stream offset of the first payload byte
 *   32 u32 lua_delta: packet number - lowest packet number the sender still tracks
 *          (the receiver forgets everything below; bounds its state)
 *   flags: FIN (this packet ends the stream at offset+len), PING (ack-eliciting probe
 *          without payload, never retransmitted), PAD (with PING only: a path-MTU probe,
 *          pmtu.c; the payload is padding, all zero, carries no stream data, and only
 *          its size matters)
 *
 * ACK (header 40 bytes + 12 bytes per range + 4 bytes per NACK, at most one MTU):
 *   16 u64 largest packet number received
 *   24 u64 receive limit: the sender may send stream bytes below this offset (flow control)
 *   32 u32 ack delay in microseconds (time the largest waited before this ACK)
 *   36 u16 number of SACK ranges, u16 number of NACKs
 *   then ranges: u64 highest packet number in the range, u32 count (>= 1), in strictly
 *   descending order, disjoint and separated by at least one missing number, the first
 *   one starting at `largest`;
 *   then NACKs: u32 distance below `largest` of a packet declared missing (not inside
 *   any range), strictly increasing.
 *
 * CLOSE (header 20 bytes): u32 reason code (ISM_UDPW_CLOSE_*), sent once when a side
 * aborts; orderly ends use FIN, and the side that leaves last says DONE.
 */
#ifndef ISM_WAN_UDP_WIRE_H
#define ISM_WAN_UDP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define ISM_UDPW_VERSION 1
#define ISM_UDPW_TOKEN_LEN 8
#define ISM_UDPW_COMMON 16
#define ISM_UDPW_DATA_HDR 36
#define ISM_UDPW_ACK_HDR 40
#define ISM_UDPW_CLOSE_LEN 20
#define ISM_UDPW_RANGE_LEN 12
#define ISM_UDPW_NACK_LEN 4
/* Largest datagram either side ever sends or accepts (jumbo frames: 9000-byte IP MTU). */
#define ISM_UDPW_MAX_DGRAM 8972
#define ISM_UDPW_MIN_DGRAM 576 /* smallest MTU-sized datagram we configure (IPv4 minimum) */

enum { ISM_UDPW_DATA = 1, ISM_UDPW_ACK = 2, ISM_UDPW_CLOSE = 3 };
enum { ISM_UDPW_F_FIN = 0x1, ISM_UDPW_F_PING = 0x2, ISM_UDPW_F_PAD = 0x4, ISM_UDPW_F_CRC = 0x8000 };
/* DONE: an orderly close finished: we hold the peer's whole stream through its FIN, and
 * the peer acknowledged all of ours; we are leaving. The peer, whose last ACKs from us
 * may have been lost, then knows its stream arrived (it ended in a FIN we received). */
enum { ISM_UDPW_CLOSE_ABORT = 1, ISM_UDPW_CLOSE_PROTOCOL = 2, ISM_UDPW_CLOSE_DONE = 3 };

/* Decode results (0 = valid). */
enum {
    ISM_UDPW_ESHORT = -1,   /* shorter than the type's header */
    ISM_UDPW_EVERSION = -2, /* unknown version */
    ISM_UDPW_ETYPE = -3,    /* unknown type */
    ISM_UDPW_EFLAGS = -4,   /* flag not defined for this type */
    ISM_UDPW_ETOKEN = -5,   /* token mismatch: not from our authenticated peer */
    ISM_UDPW_ECRC = -6,     /* CRC missing or wrong */
    ISM_UDPW_ELEN = -7,     /* size inconsistent with the counts or limits */
    ISM_UDPW_ERANGE = -8,   /* ACK ranges/NACKs out of order, overlapping or out of bounds */
    ISM_UDPW_EFIELD = -9    /* a field outside its domain (e.g. offset overflow) */
};

typedef struct ism_udpw_data {
    uint16_t flags;
    uint64_t pn;
    uint64_t offset;
    uint32_t lua_delta;
    const uint8_t *payload; /* points into the decoded buffer */
    uint32_t len;           /* payload bytes (padding, not stream data, under PING) */
} ism_udpw_data;

typedef struct ism_udpw_range {
    uint64_t hi;
    uint32_t count;
} ism_udpw_range;

typedef struct ism_udpw_ack {
    uint64_t largest;
    uint64_t rcv_limit;
    uint32_t ack_delay_us;
    uint16_t nranges, nnacks;
    const uint8_t *ranges; /* raw, validated; read with ism_udpw_ack_range()/_nack() */
    const uint8_t *nacks;
} ism_udpw_ack;

/* Check the common header of a datagram: version, type, token (with our peer's token)
 * and, if crc_on, the CRC. Returns the type (> 0) or a negative ISM_UDPW_E* code. The
 * buffer is not modified. */
int ism_udpw_check(const uint8_t *p, size_t n, const uint8_t token[ISM_UDPW_TOKEN_LEN],
                   int crc_on);

/* Decode a checked datagram of the given type; all fields validated. */
int ism_udpw_decode_data(const uint8_t *p, size_t n, ism_udpw_data *d);
int ism_udpw_decode_ack(const uint8_t *p, size_t n, ism_udpw_ack *a);
int ism_udpw_decode_close(const uint8_t *p, size_t n, uint32_t *reason);

static inline ism_udpw_range ism_udpw_ack_range(const ism_udpw_ack *a, unsigned i);
static inline uint64_t ism_udpw_ack_nack(const ism_udpw_ack *a, unsigned i);

/* Encoders write the header into p (which must hold it); the CRC is added separately
 * by ism_udpw_seal() once the payload is in place (or over an iovec by the caller). */
void ism_udpw_encode_common(uint8_t *p, int type, uint16_t flags,
                            const uint8_t token[ISM_UDPW_TOKEN_LEN]);
void ism_udpw_encode_data(uint8_t *p, uint16_t flags, const uint8_t token[ISM_UDPW_TOKEN_LEN],
                          uint64_t pn, uint64_t offset, uint32_t lua_delta);
/* ACK builder: start, then add ranges (descending) and NACKs (increasing distance);
 * adders return -1 when the packet (cap bytes) is full. finish returns the length. */
typedef struct ism_udpw_ackb {
    uint8_t *p;
    size_t cap;
    unsigned nranges, nnacks;
    uint8_t nack_buf[ISM_UDPW_MAX_DGRAM];
} ism_udpw_ackb;
void ism_udpw_ack_begin(ism_udpw_ackb *b, uint8_t *p, size_t cap,
                        const uint8_t token[ISM_UDPW_TOKEN_LEN], uint64_t largest,
                        uint64_t rcv_limit, uint32_t ack_delay_us);
int ism_udpw_ack_add_range(ism_udpw_ackb *b, uint64_t hi, uint32_t count);
int ism_udpw_ack_add_nack(ism_udpw_ackb *b, uint32_t dist);
size_t ism_udpw_ack_finish(ism_udpw_ackb *b);
size_t ism_udpw_encode_close(uint8_t *p, const uint8_t token[ISM_UDPW_TOKEN_LEN],
                             uint32_t reason);
/* Set the CRC of a complete datagram in p (flag ISM_UDPW_F_CRC and the crc field). */
void ism_udpw_seal(uint8_t *p, size_t n);
/* The same for a datagram given as header + payload pieces (payload may wrap a ring). */
void ism_udpw_seal_parts(uint8_t *hdr, size_t hlen, const uint8_t *a, size_t alen,
                         const uint8_t *b, size_t blen);

const char *ism_udpw_strerror(int code);

#include "../../common/le.h"
static inline ism_udpw_range ism_udpw_ack_range(const ism_udpw_ack *a, unsigned i)
{
    ism_udpw_range r;
    r.hi = ism_get_le64(a->ranges + (size_t)i * ISM_UDPW_RANGE_LEN);
    r.count = ism_get_le32(a->ranges + (size_t)i * ISM_UDPW_RANGE_LEN + 8);
    return r;
}
static inline uint64_t ism_udpw_ack_nack(const ism_udpw_ack *a, unsigned i)
{
    return a->largest - ism_get_le32(a->nacks + (size_t)i * ISM_UDPW_NACK_LEN);
}

#endif
