/* linkhdr.h: the 32-byte header in front of every frame on a gateway-to-gateway stream.
 *
 * A link between two gateways is one or more TCP streams. Frames are numbered per link
 * direction (seq 1, 2, ...), striped over the streams, and put back in order by the
 * receiver; every header also carries the sender's cumulative acknowledgement (all
 * frames below `ack` arrived), so that after a reconnect exactly the unacknowledged
 * frames are sent again. seq 0 marks an unnumbered control frame (heartbeat, ack, hello,
 * resume, ping), handled as soon as it is read. With ISM_LINK_FLAG_CRC, `hcrc` is the
 * CRC32C of this header (crc and hcrc fields zero) followed by the frame header, and
 * `crc` the CRC32C of this header (crc field zero) followed by the frame header and
 * payload. The receiver checks hcrc as soon as the headers are in, before it acts on
 * any field (the acknowledgement, the sequence number, the payload length): a damaged
 * length would put the stream out of step, and a damaged acknowledgement would free
 * frames the peer does not have.
 *
 * Wire layout (little-endian): magic u32 "ISLK" | flags u32 | crc u32 | hcrc u32 (zero
 * without ISM_LINK_FLAG_CRC) | seq u64 | ack u64.
 */
#ifndef ISM_WAN_LINKHDR_H
#define ISM_WAN_LINKHDR_H

#include <stddef.h>
#include <stdint.h>

#define ISM_LINK_MAGIC 0x4b4c5349u /* "ISLK" little-endian */
#define ISM_LINK_HDR_SIZE 32
#define ISM_LINK_FLAG_CRC 0x1u
#define ISM_LINK_FLAGS_KNOWN ISM_LINK_FLAG_CRC

typedef struct ism_link_hdr {
    uint32_t flags;
    uint32_t crc;
    uint32_t hcrc;
    uint64_t seq; /* 0: unnumbered control frame */
    uint64_t ack; /* every frame below this one arrived */
} ism_link_hdr;

void ism_link_hdr_encode(const ism_link_hdr *h, uint8_t out[ISM_LINK_HDR_SIZE]);

/* Decode and validate n bytes. Returns 0, or a negative ISM_LINK_E* code. */
int ism_link_hdr_decode(const uint8_t *in, size_t n, ism_link_hdr *h);

/* CRC32C over the link header (its crc field taken as zero), the frame header and the
 * payload, as carried with ISM_LINK_FLAG_CRC. */
uint32_t ism_link_crc(const uint8_t lhdr[ISM_LINK_HDR_SIZE], const void *frame, size_t n);

/* CRC32C over the link header (crc and hcrc taken as zero) and the frame header that
 * follows it (n bytes), as carried in hcrc. */
uint32_t ism_link_hdr_crc(const uint8_t lhdr[ISM_LINK_HDR_SIZE], const void *frame_hdr, size_t n);

enum {
    ISM_LINK_ESHORT = -1,  /* fewer than 32 bytes */
    ISM_LINK_EMAGIC = -2,  /* not a link header: the stream is out of step */
    ISM_LINK_EFLAGS = -3,  /* unknown flag bits, or an hcrc without ISM_LINK_FLAG_CRC */
    ISM_LINK_EACK = -4     /* ack 0 (acks start at 1) */
};

const char *ism_link_strerror(int code);

#endif
