/* frame.h: the one message unit that crosses sites, and the protocol it carries: the MPI
 * envelope (context, global source and destination, tag) and the eager/RTS/CTS/DATA/CREDIT
 * exchange of core/p2p.c, the frames between an app rank and its gateway (abort, FIN,
 * queries, MPI-IO, RMA) and the gateways' own control frames. Part of the app-gateway
 * contract (contract/): wan/ carries frames as bytes and never looks inside.
 *
 * Every message between an app rank and its gateway, and between gateways over the
 * WAN, is a frame: a fixed 48-byte header followed by `len` payload bytes. The header
 * layout is the wire format (little-endian, no padding); ism_frame_decode() validates
 * every field read from the network before anyone acts on it. The meaning of the two
 * generic 64-bit words `a` and `b` depends on the frame type (see the table below).
 */
#ifndef ISM_CONTRACT_FRAME_H
#define ISM_CONTRACT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define ISM_FRAME_MAGIC 0x48545349u /* "ISTH" little-endian */
#define ISM_FRAME_VERSION 1
#define ISM_FRAME_HDR_SIZE 48
/* Largest payload a single frame may carry (rendezvous chunk size upper bound). */
#define ISM_FRAME_MAX_PAYLOAD (1u << 20)

enum ism_frame_type {
    /*            a                  b                 tag field         payload      */
    ISM_F_EAGER = 1,  /* total bytes  seq (per src->dst) user tag     whole message   */
    ISM_F_RTS = 2,    /* total bytes  sender request id  user tag     none            */
    ISM_F_CTS = 3,    /* sender req id receiver req id   window chunks none           */
    ISM_F_DATA = 4,   /* receiver req id byte offset     -            one chunk       */
    ISM_F_CREDIT = 5, /* sender req id chunks granted    -            none            */
    ISM_F_ABORT = 6,  /* exit code     -                 -            reason text     */
    ISM_F_FIN = 7,    /* -             -                 -            none            */
    ISM_F_HEARTBEAT = 8,
    ISM_F_ABORT_ACK = 9,
    /* between gateways only, unnumbered (link header seq 0; see linkhdr.h): */
    ISM_F_HELLO = 10,  /* stream index   nstreams | epoch << 16  -  none          */
    ISM_F_RESUME = 11, /* next seq the sender expects  -         -  none          */
    ISM_F_ACK = 12,    /* (the ack is in the link header)                         */
    ISM_F_PING = 13,   /* sender's clock, us  -                  -  none          */
    ISM_F_PONG = 14,   /* the PING's clock echoed                                 */
    /* between an app rank and its gateway only (dst -1 to the gateway; gwquery.h): */
    ISM_F_QUERY = 15,  /* request number -             -  none: the gateway's counters */
    ISM_F_ANSWER = 16, /* request number -             -  the counters (gwquery.h)     */
    ISM_F_WATCH = 17,  /* 1: tell me about links going down and up; 0: stop           */
    ISM_F_LINKEV = 18, /* link index  state  | gateway clock ns in the payload (8 bytes),
                          then the peer site and gateway (4 + 4), then the reason     */
    /* MPI-IO: a rank at another site to the file agent in gateway 0 of the file's site,
       and its answer (fileio.h has the fields) */
    ISM_F_IO = 19,
    ISM_F_IOREP = 20,
    /* one-sided communication between ranks (core/rma.c; the kind is in the tag field): */
    ISM_F_RMA = 21,    /* target disp or request id  kind-specific (rma.h)  kind  data */
    ISM_F_TYPE_MAX = 21
};

#define ISM_FRAME_FLAG_CRC 0x0001u /* crc holds CRC32C over header (crc=0) and payload */
#define ISM_FRAME_FLAG_SYNC 0x0002u /* RTS of a synchronous-mode send */
/* Early data: the sender sends a message's first bytes without waiting for the CTS.
 *   RTS    + EARLY: payload is 8 bytes, little-endian: how many bytes come early;
 *   DATA   + EARLY: a = the SENDER's request id (the RTS's b), b = byte offset;
 *   CREDIT + EARLY: b = early bytes the receiver has placed and gives back. */
#define ISM_FRAME_FLAG_EARLY 0x0004u

typedef struct ism_frame_hdr {
    uint32_t magic;
    uint8_t version;
    uint8_t type;
    uint16_t flags;
    uint32_t ctx;  /* communicator context id */
    int32_t src;   /* global source rank, or -1 for a gateway */
    int32_t dst;   /* global destination rank, or -1 for a gateway */
    int32_t tag;
    uint32_t len;  /* payload bytes following the header */
    uint32_t crc;
    uint64_t a;
    uint64_t b;
} ism_frame_hdr;

_Static_assert(sizeof(ism_frame_hdr) == ISM_FRAME_HDR_SIZE, "frame header must be 48 bytes");

/* Fill the fixed fields of a header. */
void ism_frame_init(ism_frame_hdr *h, enum ism_frame_type type);

/* Encode h into exactly ISM_FRAME_HDR_SIZE bytes (little-endian). */
void ism_frame_encode(const ism_frame_hdr *h, uint8_t out[ISM_FRAME_HDR_SIZE]);

/* Decode and validate `n` bytes. Returns 0 on success, or a negative ISM_FRAME_E*
 * code naming what was wrong. Never reads beyond `n`. */
int ism_frame_decode(const uint8_t *in, size_t n, ism_frame_hdr *h);

enum {
    ISM_FRAME_ESHORT = -1,   /* fewer than 48 bytes */
    ISM_FRAME_EMAGIC = -2,   /* wrong magic */
    ISM_FRAME_EVERSION = -3, /* unknown version */
    ISM_FRAME_ETYPE = -4,    /* unknown type */
    ISM_FRAME_ELEN = -5      /* payload length above ISM_FRAME_MAX_PAYLOAD */
};

const char *ism_frame_strerror(int code);
const char *ism_frame_type_name(int type);

#endif
