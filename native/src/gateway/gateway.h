/* gateway.h: the gateway's state, shared by its startup, link and event-loop files.
 *
 * A gateway is an extra rank of its site's vendor MPI job. It takes frames from the
 * site's app ranks over the vendor MPI and puts them on authenticated links to the
 * gateways of the other sites (TCP streams or reliable UDP, xport.h), and the other way
 * round. All payload memory comes from
 * one fixed pool of buffers; when the pool is empty the gateway stops taking new frames
 * (from apps and from links) until buffers come back, so its memory is bounded.
 */
#ifndef ISM_GATEWAY_H
#define ISM_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "../backend/backend.h"
#include "../wan/auth.h"
#include "../contract/channel.h"
#include "../contract/frame.h"
#include "../contract/layout.h"
#include "../contract/rxring.h"
#include "../wan/linkhdr.h"
#include "../wan/sealpool.h"
#include "xport.h"

#define GW_MAX_PATHS 4

typedef struct gw_path {
    char *host;
    int port;              /* of the site's gateway 0; gateway g listens on port + g */
} gw_path;

typedef struct gw_buf {
    struct gw_buf *next;
    size_t len;     /* bytes used: header + payload */
    int pooled;     /* 0: a small control frame allocated on its own; 1: tx pool; 2: rx pool;
                     * 3: a small app frame copied out of a tx pool buffer (loop.c) */
    uint64_t seq;   /* link sequence number once queued on a link (0: unnumbered) */
    int flow;       /* a CTS or CREDIT: it may pass queued data (gw_link_send) */
    char *data;
} gw_buf;

/* One connection of a link (a TCP stream, or the link's reliable-UDP connection). */
typedef struct gw_stream {
    int fd;               /* what the loop polls; -1 while not connected */
    void *conn;           /* the transport's connection object, if it has one */
    /* sending: the frame being written (link header in lhdr, then the buffer) */
    gw_buf *cur;
    uint8_t lhdr[ISM_LINK_HDR_SIZE];
    size_t tx_off;        /* bytes of lhdr + frame written so far */
    gw_buf *ctlq, *ctlq_tail; /* unnumbered control frames, sent before the next data frame */
    /* receiving */
    uint8_t rxhdr[ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE];
    size_t rx_have;       /* bytes of the current frame read so far */
    ism_link_hdr rxl;
    ism_frame_hdr rxh;
    gw_buf *rxbuf;        /* NULL with rx_have past the header: waiting for a buffer */
    int rx_discard;       /* the frame is a duplicate: read and drop its payload */
    /* a transport's posted receive (xport_udp.c): the buffer, its length, and how much
     * of it read() has already reported */
    unsigned char *rx_post;
    size_t rx_post_len, rx_post_seen;
    int64_t last_rx_ms, last_tx_ms;
    /* the transport's counters summed over this stream's connections that ended */
    _Alignas(8) unsigned char totals[GW_XP_TOTALS];
    int nclosed;
} gw_stream;

enum gw_link_state {
    GW_LINK_DOWN = 0,     /* not (fully) connected; the connecting side redials */
    GW_LINK_RESUMING = 1, /* all streams connected; waiting for the peer's RESUME */
    GW_LINK_UP = 2
};

typedef struct gw_link {
    int site, gw;         /* the peer */
    int connector;        /* 1: this gateway dials the peer (the smaller id dials) */
    int state;
    int ever_up;          /* 0 until the first connection: time-outs count from the start */
    int closed;           /* both sides finished and the peer closed: no reconnecting */
    int nstreams;
    gw_stream *st;
    uint32_t epoch;       /* connection attempt number, in HELLO */
    int nconnected;       /* streams of this epoch connected so far */
    int64_t down_since_ms, next_dial_ms, last_dial_log_ms;
    char dial_err[512];   /* why the last attempt to dial failed, for the final message */
    int auth_failures;    /* dials in a row the peer's authentication failed */
    int dialing;          /* an attempt's streams are being set up (setup.c) */
    int dial_backoff_ms;  /* wait before the next attempt after a failed one */
    int resume_recv;
    int fin_sent, fin_recv;
    /* sending */
    uint64_t tx_next;     /* seq of the next frame queued */
    gw_buf *sendq, *sendq_tail; /* numbered frames not yet given to a stream */
    gw_buf *unacked, *unacked_tail; /* given to a stream, not yet acknowledged */
    uint64_t peer_ack;    /* the peer has every frame below this */
    uint64_t resend_upto; /* frames up to this one may have been written before a reconnect */
    int rr;               /* next stream to try */
    /* receiving */
    uint64_t rx_next;     /* next frame to deliver in order */
    gw_buf *ooo;          /* frames that arrived ahead of rx_next, sorted by seq */
    int nooo;
    uint64_t ack_sent;    /* rx_next last told to the peer */
    int64_t last_ack_ms;
    /* link quality */
    double srtt_ms, rttvar_ms, min_rtt_ms;
    int64_t last_ping_ms;
    /* counters */
    uint64_t tx_frames, tx_bytes, tx_msgs, rx_frames, rx_bytes, rx_msgs;
    uint64_t tx_early; /* payload bytes of early data (DATA + EARLY) sent */
    uint64_t flow_passed; /* flow-control frames that passed queued data */
    uint64_t resent_frames, dup_frames, reconnects, crc_errors;
    /* the path it is dialed over (paths.c) */
    int path, path_fails, path_moves, probing;
    int64_t path_since_ms, probe_next_ms;
    uint64_t path_tx[GW_MAX_PATHS], path_rx[GW_MAX_PATHS], path_tx_mark, path_rx_mark;
    int auth_fails_in_row;  /* connections lost to records that failed authentication */
    uint64_t auth_fail_rx;  /* rx_frames at the last such loss (none good since: in a row) */
} gw_link;

typedef struct gw_pending {
    gw_buf *buf;
    ism_vh vreq;
} gw_pending;

typedef struct gw_state {
    const ism_backend *be;
    const gw_xport *xp;    /* the transport of every link (ISTHMUS_TRANSPORT) */
    ism_layout lay; /* the job layout (contract/layout.h), as the site's ranks hold it */
    int gwidx, ngw_here;
    gw_path (*site_paths)[GW_MAX_PATHS]; /* each site's addresses, the primary first (paths.c) */
    int *site_npaths;
    int *site_dialout;     /* 1: that site only dials out (its gateways accept nothing) */
    int64_t path_return_ms; /* on a backup path, check the primary this often (0: never) */
    ism_vh vworld, vgw, vown;
    int napps, *app_vrank; /* local app rank -> vendor world rank */
    int apps_mine;         /* apps that send through this gateway */
    int apps_fin;
    ism_auth_key key;
    int listen_fd;
    int nlinks;
    gw_link *links;        /* one per gateway of every other site */
    /* pools: frames going out (from apps to links, kept until acknowledged) and frames
     * coming in (from links to apps) have separate budgets, so that frames waiting for
     * an acknowledgement can never starve the receiving side of the link that would
     * bring it */
    size_t bufsize;
    gw_buf *pool_tx, *pool_rx;
    int pool_total, free_tx, free_rx;
    int copies;            /* GW_POOL_COPY buffers held */
    size_t held_bytes, peak_bytes;
    /* WAN transport settings */
    int streams;           /* streams per link (0: automatic) */
    int sockbuf;           /* socket buffer bytes per stream (0: kernel autotuning) */
    char cc[32];           /* congestion control ("" = system default) */
    int crc;               /* CRC32C on every frame */
    unsigned suites;       /* link encryption this gateway accepts (ISTHMUS_WAN_CRYPTO/CIPHER) */
    int rekey_log2;        /* key-update interval asked for (ISTHMUS_WAN_REKEY; 0: default) */
    int nsealers;          /* ISTHMUS_WAN_SEAL_WORKERS, or its automatic value */
    ism_sealpool *sealers; /* crypto workers of the TCP links (ISTHMUS_WAN_SEAL_WORKERS; NULL:
                              every record sealed and opened on the loop thread) */
    int flow_first;        /* CTS and CREDIT frames pass queued data (session.c) */
    int mtu;               /* IP MTU of the path (the udp transport's datagram size) */
    double hint_rate_bps, hint_rtt_ms, hint_loss; /* the link as described (0: unknown) */
    double pace;           /* streams together paced at this multiple of the described rate
                              (ISTHMUS_WAN_PACE, default 1; 0: not paced) */
    unsigned long long pace_Bps; /* each stream's pacing cap in bytes/s (0: none), tune.c */
    int notsent;           /* bytes a stream's socket may hold not yet sent (0: no limit) */
    int64_t dead_ms;       /* a stream silent this long is reconnected */
    int64_t outage_ms;     /* a link down this long ends the job */
    int64_t fault_after;   /* testing: drop every link once after this many frames */
    /* vendor side */
    int nslots;
    ism_rxring from_apps;  /* posted receives from the apps, pool buffers (contract/rxring.h) */
    gw_pending *pend;      /* sends to apps in flight */
    int npend, pendcap;
    int64_t connect_timeout_ms;
    int idle_max_us, idle_deep_us;
    int stats;
} gw_state;

extern gw_state gw;

void gw_die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void gw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pools (main.c) */
gw_buf *gw_buf_get(int pool);
gw_buf *gw_buf_small(size_t len);
void gw_buf_put(gw_buf *b);
enum { GW_POOL_TX = 1, GW_POOL_RX = 2, GW_POOL_COPY = 3 };
/* A frame from an app of at most GW_COPY_MAX bytes waits for its acknowledgement in a
 * copy of its own, not in a pool buffer of a whole chunk: the pool's 32 tx buffers let
 * only 32 small frames per round trip cross a link (1000 8-byte sends took 650 ms over a
 * 20 ms round trip). At most GW_COPIES such copies at once (about 16 MiB); past that the
 * frame keeps its pool buffer, as before. */
#define GW_COPY_MAX (ISM_FRAME_HDR_SIZE + 4096)
#define GW_COPIES 4096

/* links.c: the links' connections (dialing, reconnection, attaching streams) */
void gw_links_connect(void);
void gw_link_down(gw_link *l, const char *why);
void gw_links_redial(int64_t now);
gw_link *gw_link_of_peer(ism_auth_id peer); /* the link to that gateway, or NULL */
/* what setup.c found: a dialed stream is up or the attempt failed; a peer dialed us */
void gw_link_dial_done(gw_link *l, int idx, uint32_t epoch, gw_stream *st);
void gw_link_dial_failed(gw_link *l, uint32_t epoch, int auth, const char *why);
int gw_link_accepted(ism_auth_id peer, const ism_frame_hdr *hello, gw_stream *st,
                     const char *from); /* 0: the link took the stream */
void gw_stream_close(gw_stream *s);
void gw_stream_close_fd(gw_stream *s); /* closes the connection only, keeping its totals */
void gw_streams_wait(int64_t max_us);  /* one ppoll over every connected stream, serviced */
void gw_links_finish(int64_t deadline_ms); /* end every stream in order (at the job's end) */

/* paths.c: the addresses of each site, which one a link dials, failover and return */
void gw_paths_parse(const char *addrs, const char *dialout);
int gw_paths_dials(int s1, int g1, int s2, int g2); /* 1: gateway (s1,g1) dials (s2,g2) */
const gw_path *gw_path_of(const gw_link *l);
void gw_path_failed(gw_link *l, int64_t now);  /* an attempt over l's path failed */
void gw_path_up(gw_link *l, int64_t now);      /* l is up over its path */
void gw_paths_tick(gw_link *l, int64_t now);   /* on a backup path: probe the primary */
void gw_path_probed(gw_link *l, int reachable);
void gw_path_report(gw_link *l, char *buf, size_t n); /* --stats: bytes per path */

/* setup.c: connections not yet part of a link, run from the event loop without blocking */
struct sockaddr_in;
struct pollfd;
void gw_setup_dial(gw_link *l, int idx, const struct sockaddr_in *sa, int64_t now);
void gw_setup_cancel(const gw_link *l);          /* drop a link's dials in progress */
void gw_setup_probe(gw_link *l, const struct sockaddr_in *sa, int64_t now); /* connect only */
void gw_setup_accept(int listen_fd, int64_t now); /* take what the listener's backlog holds */
int gw_setup_count(void);                         /* poll slots gw_setup_poll may fill */
int gw_setup_poll(struct pollfd *pf, int64_t now, int64_t *timer_us);
void gw_setup_service(const struct pollfd *pf, int n, int64_t now);
void gw_setup_report(char *buf, size_t n);        /* strangers refused, for --stats */

/* session.c: numbering, striping, acknowledgement, re-sending and re-ordering */
gw_link *gw_link_for(int dst_global);
void gw_link_send(gw_link *l, gw_buf *b);                /* numbered: data and FIN */
void gw_link_control(gw_link *l, int stream, int type, uint64_t a, uint64_t b, const char *text);
void gw_link_started(gw_link *l);                         /* all streams connected */
int gw_link_pump(gw_link *l);                             /* write what the sockets take */
int gw_stream_read(gw_link *l, gw_stream *s);             /* >0 progress, 0 none, -1 failed */
void gw_link_tick(gw_link *l, int64_t now);               /* acks, heartbeats, pings, silence */
void gw_link_reset_tx(gw_link *l);                        /* on link down */
int gw_link_idle(const gw_link *l);                       /* nothing queued or unacknowledged */
int gw_flush_links(int64_t deadline_ms);

/* tune.c: socket options for TCP streams (used by xport_tcp.c) */
void gw_tune_init(void);
int gw_tune_socket(int fd, int listening, char *err, size_t errlen);
int gw_tune_socket_prep(int fd, void *arg); /* before connect(): for ism_sock_connect_prep */
void gw_tune_describe(const gw_link *l, char *buf, size_t n);

/* fileagent.c: an MPI-IO request (ISM_F_IO) from a rank at another site, answered on l */
void gw_fileagent_frame(gw_link *l, gw_buf *b, const ism_frame_hdr *h);

/* loop.c */
void gw_deliver_local(gw_buf *b, const ism_frame_hdr *h);
void gw_route_from_link(gw_link *l, gw_buf *b);
void gw_loop(void);
void gw_cancel_receives(void);
void gw_abort_job(int code, const char *reason) __attribute__((noreturn));

#endif
