/* conn.h: the state of one reliable-UDP connection, shared by the files that run it
 * (private to src/wan/udp; the public API is udp.h).
 *
 *   send.c     sender: packetizing, the packet and chunk records, retransmission queue,
 *              ACK processing, loss detection (gaps, NACKs, time, RTO), RTT, pacing
 *   recv.c     receiver: placement into a posted buffer or the receive ring, duplicate
 *              suppression, the packet-number map and the ACK frames built from it,
 *              the flow-control window
 *   io.c       batched datagram I/O (sendmmsg/recvmmsg) and the impairment shim
 *   seal.c     AEAD on every datagram; sealbatch.c: the same in batches on crypto workers
 *   pmtu.c     path-MTU discovery: probes, the search, black-hole detection
 *   engine.c   the progress loop, timers, keepalive and dead-peer detection, waiting
 *   setup.c    authenticated setup over TCP and token derivation
 *   api.c      the public calls
 *
 * Memory is allocated once per connection (rings and records sized from the options);
 * nothing is allocated per packet.
 */
#ifndef ISM_WAN_UDP_CONN_H
#define ISM_WAN_UDP_CONN_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cc.h"
#include "seal.h"
#include "udp.h"
#include "wire.h"

#define UDP_PKT_RING (1u << 16)   /* packet numbers tracked by the sender */
#define UDP_CHUNK_RING (1u << 16) /* stream chunks awaiting acknowledgement */
#define UDP_RCV_BITS (1u << 17)   /* packet numbers tracked by the receiver */
#define UDP_IVAL_MAX 8192         /* out-of-order byte ranges held by the receiver */
#define UDP_BATCH 64              /* datagrams per recvmmsg */
#define UDP_TX_SLOTS 128          /* datagrams queued per sendmmsg */
#define UDP_GSO_MAX 44            /* datagrams per GSO send (64 KiB of 1472-byte ones) */
#define UDP_RX_OPEN_MAX 64        /* received datagrams opened in one batch (sealbatch.c) */
#define UDP_HOLD 8                /* datagrams the reorder shim may hold back */
#define UDP_NO_CHUNK UINT64_MAX
#define UDP_NOTSENT_MIN (256u << 10) /* bytes written but not yet sent, at least (api.c) */
#define UDP_RX_HOLD_US 200        /* receive coalescing under dense traffic (engine.c) */

/* PK_GONE: abandoned when the packet size fell back (pmtu.c); its bytes are sent again */
enum { PK_FREE = 0, PK_INFLIGHT, PK_ACKED, PK_LOST, PK_GONE };
enum { CK_INFLIGHT = 0, CK_QUEUED, CK_ACKED };

typedef struct udp_pkt {
    uint64_t chunk;         /* stream chunk carried, or UDP_NO_CHUNK for a probe */
    int64_t sent_us;
    int64_t first_sent_us;  /* rate sampling (see send.c) */
    int64_t delivered_us;
    uint64_t delivered;
    uint32_t len;           /* payload bytes (counted in flight) */
    uint16_t probe;         /* a path-MTU probe of this datagram size (not in flight), or 0 */
    uint8_t state, app_limited, rtx;
    uint8_t confirm;        /* the probe tests a suspected black hole (pmtu.c) */
} udp_pkt;

typedef struct udp_chunk {
    uint64_t offset;
    uint64_t last_pn; /* newest transmission; a loss of an older one is stale news */
    uint32_t len;
    uint8_t state, fin;
} udp_chunk;

typedef struct udp_ival {
    uint64_t lo, hi; /* [lo, hi) received beyond rcv_nxt */
} udp_ival;

typedef struct udp_txslot {
    uint8_t buf[ISM_UDPW_MAX_DGRAM]; /* header (data) or the whole datagram */
    struct iovec iov[3];
    int niov;
    size_t len;            /* before sealing: the plaintext datagram's */
    uint64_t seq;          /* seal number, while pending */
    int pending;           /* numbered, to be sealed at the flush (crypto workers) */
} udp_txslot;

/* How often a client probes a server that has not answered over UDP yet (setup.c). */
#define UDP_PROBE_INTERVAL_US 200000

struct ism_udp_conn {
    int fd;
    ism_udp_opts o;
    const ism_udp_cc_ops *cc;
    _Alignas(16) unsigned char cc_state[ISM_UDP_CC_STATE];
    uint8_t tok_tx[ISM_UDPW_TOKEN_LEN], tok_rx[ISM_UDPW_TOKEN_LEN];
    udp_seal seal;                 /* AEAD on every datagram, when agreed (seal.h) */
    uint32_t dgram;   /* datagram size of a full data packet now (pmtu.c may change it) */
    uint32_t payload; /* stream bytes per full data packet: dgram - header */
    uint32_t ack_dgram; /* largest ACK: the base size, which every path carries (pmtu.c) */
    char peer[96];    /* "10.77.0.2:40123 (site 1, gateway 0)" for messages */
    ism_auth_id peer_id; /* as the handshake authenticated it */
    int err;          /* sticky error, 0 while healthy */
    char errmsg[256];

    /* ---- sender ---- */
    uint8_t *sbuf;
    size_t sbuf_size;
    uint64_t snd_una, snd_nxt, snd_end; /* stream offsets: acked | packetized | written */
    int fin_wanted, fin_queued, fin_acked;
    udp_pkt *pkts;                 /* [pn % UDP_PKT_RING] */
    uint64_t next_pn, lua;         /* lua: lowest pn still tracked */
    int64_t largest_acked;         /* -1 before the first ACK */
    udp_chunk *chunks;             /* [n % UDP_CHUNK_RING] */
    uint64_t chunk_head, chunk_tail;
    uint64_t *rtx;                 /* queue of chunk numbers to retransmit */
    uint64_t rtx_head, rtx_tail;
    uint64_t inflight, pkts_inflight;
    uint64_t peer_limit;           /* the peer's receive window edge (stream offset) */
    int64_t srtt_us, rttvar_us, min_rtt_us, latest_rtt_us;
    int64_t rto_base_us;           /* RTO runs from here (last forward progress) */
    int rto_backoff;
    uint64_t delivered;
    int64_t delivered_us, first_sent_us;
    uint64_t app_limited_until;
    int64_t next_send_us;          /* pacing */
    int64_t last_send_us, last_recv_us;
    int64_t last_rx_read_us;       /* the last progress step that read datagrams */
    int64_t last_rx_try_us;        /* the last progress step that tried to */
    int rx_last_got;               /* datagrams that step read */
    int64_t rx_hold_until;         /* do not poll for input before this (engine.c) */
    int ping_due;
    int64_t next_probe_us;         /* a client returned before the server answered
                                    * (confirm_later): probe again then; 0 once answered */
    uint64_t reo_thresh;           /* gap (in packet numbers) that means loss */

    /* ---- receiver ---- */
    uint8_t *rbuf;
    size_t rbuf_size;
    uint64_t rcv_read, rcv_nxt;    /* stream offsets: consumed by the app | contiguous */
    uint64_t fin_off;              /* UINT64_MAX until the peer's FIN */
    udp_ival *ivals;
    unsigned nivals;
    uint64_t *rbits;               /* received packet numbers, [pn % UDP_RCV_BITS] */
    uint64_t rbase;                /* pns below are forgotten */
    int64_t rlargest;              /* -1 before the first data packet */
    int64_t rlargest_us;
    unsigned ack_pending;          /* ack-eliciting packets since the last ACK */
    int64_t ack_first_us;
    int ack_now;
    uint64_t last_adv_limit;       /* window edge in the last ACK we sent */
    uint8_t peer_closed;           /* got CLOSE (abort) */
    uint8_t peer_done;             /* got CLOSE DONE: the peer holds our whole stream */
    /* A posted receive: stream bytes [post_off, post_off + post_len) are placed straight
     * into post_buf (NULL: none). While posted, rcv_read = min(rcv_nxt, post end). */
    uint8_t *post_buf;
    uint64_t post_off, post_len;
    int place;                     /* 0: blocking recv copies via the ring (ISTHMUS_UDP_PLACE=0) */
    ism_udpw_ackb ackb;            /* ACK builder scratch (holds the NACKs) */

    /* ---- io ---- */
    udp_txslot *tx;
    unsigned ntx, tx_sent;         /* slots filled, of which already sent */
    int gso;                       /* 1: UDP GSO asked for and works here (io.c) */
    struct mmsghdr txm[UDP_TX_SLOTS];
    unsigned txm_first[UDP_TX_SLOTS], txm_count[UDP_TX_SLOTS]; /* slots of each message */
    struct iovec txiov[UDP_TX_SLOTS * 3];
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } txcm[UDP_TX_SLOTS];
    uint8_t *rx;                   /* UDP_BATCH x rx_stride bytes */
    size_t rx_stride;              /* one receive buffer: 64 KiB with GRO, else a datagram */
    int gro;                       /* 1: UDP GRO asked for and on (io.c) */
    struct iovec rxv[UDP_BATCH];
    struct mmsghdr rxm[UDP_BATCH];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } rxcm[UDP_BATCH];
    udp_rxd rxd[UDP_RX_OPEN_MAX];  /* received, to be opened together (crypto workers) */
    int nrxd;
    uint64_t prng;
    int hold_n;
    struct {
        uint8_t buf[ISM_UDPW_MAX_DGRAM];
        size_t len;
        int after;
    } *hold;                       /* reorder shim */
    int burst_on;

    /* ---- path MTU (pmtu.c); sizes are datagram bytes ---- */
    struct {
        int on, searching;
        uint32_t base, ceil;   /* the search's floor (assumed to pass) and ceiling */
        uint32_t lo, hi;       /* largest confirmed; smallest known to fail (ceil + 1: none) */
        uint32_t probe;        /* size of the probe in flight, 0 = none */
        uint64_t probe_pn;
        int64_t probe_sent_us;
        int64_t next_probe_us; /* not before (a probe that found no room waits a bit) */
        int tries;             /* probes of this size lost in a row */
        unsigned bh;           /* large retransmissions lost since one as large arrived */
        uint32_t bh_min;       /* the smallest of them (datagram bytes) */
        int64_t large_acked_us; /* the last time a packet above the base was acknowledged */
        uint64_t lost_at_probe; /* pkts_lost when the probe left (congestion meanwhile?) */
        int unsure;            /* probe losses not counted (congestion) in this search */
        /* black-hole confirmation: pairs of probes, the current size then the base */
        int confirming, pair_out, pairs_ok, pairs_lost;
        uint64_t big_pn, small_pn;
        int big_st, small_st;  /* 0 in flight, 1 acknowledged, 2 lost */
        int64_t pair_sent_us;
        int64_t raise_at_us;   /* next search upward, when not searching */
        int64_t start_us;      /* connection setup (for pmtu_raised_us) */
    } pm;

    ism_udp_stats st;
};

/* send.c */
int64_t udp_now_us(void);
void udp_send_init(ism_udp_conn *c, int64_t now);
void udp_on_ack(ism_udp_conn *c, const ism_udpw_ack *a, int64_t now);
void udp_seed_rtt(ism_udp_conn *c, int64_t rtt_us); /* a set-up round trip, until a real sample */
void udp_send_data(ism_udp_conn *c, int64_t now);
int64_t udp_send_timer_us(const ism_udp_conn *c, int64_t now); /* absolute, or INT64_MAX */
void udp_send_timers(ism_udp_conn *c, int64_t now);
int64_t udp_rto_us(const ism_udp_conn *c);
int udp_send_idle(const ism_udp_conn *c); /* everything sent and acknowledged */

void udp_send_rewind(ism_udp_conn *c, int64_t now); /* resend all unacknowledged bytes anew */
int udp_emit_probe(ism_udp_conn *c, uint32_t size, int64_t now); /* 0, or -1: no room now */

/* pmtu.c */
void udp_pmtu_init(ism_udp_conn *c, int64_t now);
void udp_pmtu_send(ism_udp_conn *c, int64_t now);      /* a probe, if one is due */
void udp_pmtu_timers(ism_udp_conn *c, int64_t now);
int64_t udp_pmtu_timer_us(const ism_udp_conn *c);     /* absolute, or INT64_MAX */
void udp_pmtu_probe_done(ism_udp_conn *c, const udp_pkt *p, uint64_t pn, int acked);
void udp_pmtu_data_acked(ism_udp_conn *c, const udp_pkt *p, int64_t now);
void udp_pmtu_data_lost(ism_udp_conn *c, const udp_pkt *p);

/* recv.c */
void udp_recv_init(ism_udp_conn *c);
void udp_on_data(ism_udp_conn *c, const ism_udpw_data *d, int64_t now);
void udp_maybe_ack(ism_udp_conn *c, int64_t now);
int64_t udp_ack_timer_us(const ism_udp_conn *c); /* absolute, or INT64_MAX */
size_t udp_recv_copy(ism_udp_conn *c, uint8_t *buf, size_t n);
void udp_recv_post(ism_udp_conn *c, uint8_t *buf, size_t n); /* none may be posted */
size_t udp_recv_filled(const ism_udp_conn *c);  /* contiguous bytes at the post's start */
size_t udp_recv_unpost(ism_udp_conn *c);        /* ends the post; returns the filled bytes */

/* io.c */
int udp_io_init(ism_udp_conn *c);
void udp_io_free(ism_udp_conn *c);
udp_txslot *udp_tx_slot(ism_udp_conn *c); /* flushes when full; NULL when the socket is full */
int udp_tx_flush(ism_udp_conn *c);        /* 0, or 1 when datagrams still wait for room */
int udp_rx_batch(ism_udp_conn *c, int64_t now); /* datagrams processed, or < 0 */

/* engine.c */
/* Format a message into a caller's (err, errlen) buffer; NULL/0 is allowed. */
void udp_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void udp_fail(ism_udp_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int udp_progress(ism_udp_conn *c, int64_t now);
int udp_progress_tx(ism_udp_conn *c, int64_t now); /* after a write: reads less eagerly */
int udp_wait(ism_udp_conn *c, int64_t deadline_us); /* one poll round; 0, or error */
int64_t udp_next_timer_abs(const ism_udp_conn *c, int64_t now);
short udp_events(const ism_udp_conn *c, int64_t now);
void udp_dispatch(ism_udp_conn *c, uint8_t *p, size_t n, int64_t now);
/* A datagram of `type` that passed its checks and was opened (plaintext packet in p). */
void udp_dispatch_open(ism_udp_conn *c, int type, uint8_t *p, size_t n, int64_t now);

#endif
