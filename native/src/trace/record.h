/* record.h: the trace file format, written by the tracer of app ranks (libisthmus-trace)
 * and by the gateways, read by isthmus-trace-otf2 and by the Python exporters
 * (python/isthmus/trace/records.py mirrors these layouts; a test compares the two).
 *
 * One file per process (DIR/rank-<global rank>.ismt, DIR/gw-<site>-<gateway>.ismt): a
 * 16-byte file header, then records. Every record starts with an 8-byte header and has
 * a length that is a multiple of 8; a reader skips kinds it does not know. Numbers are
 * in the writer's byte order (the file header's magic says which), times are the
 * writer's CLOCK_MONOTONIC in nanoseconds: the sites' clocks are mapped onto one time
 * base afterwards with DIR/clocks.json (tool.c, sync.c).
 *
 * A CALL record is written when an MPI call returns; the detail records that follow it
 * (SEND, RECV, COLL, DONE, START, COMM, ...) describe what that call did and carry no
 * time of their own.
 */
#ifndef ISM_TRACE_RECORD_H
#define ISM_TRACE_RECORD_H

#include <stdint.h>

#define ISM_TR_MAGIC 0x544d5349u /* "ISMT" little-endian */
#define ISM_TR_VERSION 1

typedef struct {
    uint32_t magic, version;
    uint32_t kind;  /* ISM_TR_PROC_RANK or ISM_TR_PROC_GATEWAY */
    int32_t id;     /* global rank, or site * 65536 + gateway index */
} ism_tr_file_hdr;

enum { ISM_TR_PROC_RANK = 1, ISM_TR_PROC_GATEWAY = 2 };

typedef struct {
    uint32_t len;   /* bytes of the record, header included; a multiple of 8 */
    uint8_t kind;
    uint8_t flags;
    uint16_t fn;    /* CALL: the function's index in the NAMES record; else kind-specific */
} ism_tr_hdr;

enum ism_tr_kind {
    ISM_TR_INFO = 1,    /* JSON text about the process (first record of every file) */
    ISM_TR_NAMES = 2,   /* the function names, '\0'-separated, in index order */
    ISM_TR_CALL = 3,
    ISM_TR_SEND = 4,    /* detail: a message sent or a send started */
    ISM_TR_RECV = 5,    /* detail: a message received or a receive posted */
    ISM_TR_COLL = 6,    /* detail: a collective */
    ISM_TR_DONE = 7,    /* detail: a request completed */
    ISM_TR_START = 8,   /* detail: a persistent request started */
    ISM_TR_COMM = 9,    /* detail: a communicator and its members */
    ISM_TR_COMMFREE = 10,
    ISM_TR_FREE = 11,   /* detail: a request freed (MPI_Request_free) or cancelled */
    ISM_TR_MARK = 12,   /* MPI_Pcontrol(level): the application's phase */
    ISM_TR_SYNC = 13,   /* one clock ping-pong this process started */
    ISM_TR_LOSS = 14,   /* records dropped because every buffer was full */
    ISM_TR_END = 15,    /* last record: totals */
    ISM_TR_EVENT = 16,  /* an MPI_T event of libisthmus seen by the tracer */
    ISM_TR_PAD = 17,    /* filler up to the file system's block (buffer.c); no body */
    ISM_TR_RMA = 18,    /* detail: a one-sided operation or synchronisation */
    ISM_TR_WIN = 19,    /* detail: a window created (its communicator) or freed */
    /* gateways */
    ISM_TR_GW_FRAME = 20,
    ISM_TR_GW_ACK = 21,
    ISM_TR_GW_SAMPLE = 22,
    ISM_TR_GW_LINK = 23,
    ISM_TR_GW_APP = 24, /* a frame taken from or delivered to a local app rank */
};

/* CALL flags */
#define ISM_TR_CALL_ERROR 0x01 /* rc is not MPI_SUCCESS */

typedef struct {
    ism_tr_hdr h;
    uint64_t t0, t1;   /* entry and exit */
    uint16_t thread;   /* the calling thread's index in this process (0: the first) */
    uint16_t depth;    /* calls this one is nested in (a callback calling MPI) */
    int32_t rc;
} ism_tr_call;

/* SEND/RECV flags */
#define ISM_TR_P2P_NB 0x01      /* nonblocking: completes with a DONE of the same req */
#define ISM_TR_P2P_INIT 0x02    /* persistent: each START begins one */
#define ISM_TR_P2P_STATUS 0x04  /* RECV: peer, tag and bytes are what arrived */
#define ISM_TR_P2P_PROBED 0x08  /* RECV: a matched message (MPI_Mrecv, MPI_Imrecv) */

typedef struct {
    ism_tr_hdr h;
    uint32_t comm;     /* the tracer's id of the communicator (COMM) */
    int32_t peer;      /* rank in comm (remote group of an intercommunicator); -1 any,
                          -3 MPI_PROC_NULL */
    int32_t tag;       /* -2: any */
    uint32_t pad;
    uint64_t bytes;    /* SEND: bytes sent; RECV: the buffer's size, or what arrived */
    uint64_t req;      /* the request (its handle's value), 0 for blocking calls */
} ism_tr_p2p;

/* COLL flags */
#define ISM_TR_COLL_NB 0x01
#define ISM_TR_COLL_INIT 0x02
#define ISM_TR_COLL_ROOT 0x04 /* this rank is the root */

typedef struct {
    ism_tr_hdr h;
    uint32_t comm;
    int32_t root;      /* the root argument, -1 when the collective has none */
    uint64_t sent, recvd; /* bytes of this rank's send and receive buffers (docs/trace.md) */
    uint64_t req;
} ism_tr_coll;

/* DONE flags */
#define ISM_TR_DONE_CANCELLED 0x01
#define ISM_TR_DONE_STATUS 0x02 /* source, tag and bytes come from the status */

typedef struct {
    ism_tr_hdr h;
    uint64_t req;
    int32_t source, tag; /* from the status (receives) */
    uint64_t bytes;
} ism_tr_done;

typedef struct {
    ism_tr_hdr h;
    uint64_t req;
} ism_tr_req; /* START, FREE (flags 1: cancelled rather than freed) */

/* COMM flags */
#define ISM_TR_COMM_INTER 0x01
#define ISM_TR_COMM_WORLD 0x02 /* MPI_COMM_WORLD: the members 0..size-1 are not listed */

typedef struct {
    ism_tr_hdr h;
    uint32_t comm;
    uint32_t size;     /* members (local group of an intercommunicator) */
    uint32_t rsize;    /* remote group, 0 for an intracommunicator */
    int32_t rank;      /* my rank in it */
    /* then size + rsize global ranks (int32), padded to 8 bytes */
} ism_tr_comm;

typedef struct {
    ism_tr_hdr h;
    uint32_t comm, pad;
} ism_tr_commfree;

typedef struct {
    ism_tr_hdr h;
    uint64_t t;
    int32_t level, pad;
} ism_tr_mark;

/* RMA: what a one-sided call did (op), to which target. Bytes are the origin's: `out`
 * goes to the target (a put's or accumulate's data, a compare-and-swap's two values),
 * `back` comes from it (a get's data, the result of a fetching accumulate). A call with a
 * group (MPI_Win_post, MPI_Win_start) writes one record per member. */
enum ism_tr_rma_op {
    ISM_TR_RMA_PUT = 1, ISM_TR_RMA_GET, ISM_TR_RMA_ACC, ISM_TR_RMA_GACC, ISM_TR_RMA_FOP,
    ISM_TR_RMA_CAS,
    ISM_TR_RMA_LOCK = 16, ISM_TR_RMA_UNLOCK, ISM_TR_RMA_LOCK_ALL, ISM_TR_RMA_UNLOCK_ALL,
    ISM_TR_RMA_FLUSH, ISM_TR_RMA_FLUSH_ALL, ISM_TR_RMA_FLUSH_LOCAL, ISM_TR_RMA_FLUSH_LOCAL_ALL,
    ISM_TR_RMA_FENCE, ISM_TR_RMA_POST, ISM_TR_RMA_START, ISM_TR_RMA_COMPLETE, ISM_TR_RMA_WAIT,
    ISM_TR_RMA_TEST, ISM_TR_RMA_SYNC,
};

/* RMA flags */
#define ISM_TR_RMA_REQ 0x01       /* a request form (MPI_Rput, ...): completes with a DONE */
#define ISM_TR_RMA_EXCL 0x02      /* MPI_Win_lock: MPI_LOCK_EXCLUSIVE */
#define ISM_TR_RMA_NOCHECK 0x04   /* assert has MPI_MODE_NOCHECK: no lock is taken */
#define ISM_TR_RMA_DONE 0x08      /* MPI_Win_test: the exposure epoch ended */

typedef struct {
    ism_tr_hdr h;
    uint32_t win;      /* the tracer's id of the window (WIN) */
    int32_t target;    /* global rank; -1: every member or none; -3: MPI_PROC_NULL */
    uint16_t op;       /* enum ism_tr_rma_op */
    uint16_t pad;
    int32_t assert_;   /* the assert argument (lock, lock_all, fence, post, start), else 0 */
    uint64_t out, back;
    uint64_t req;      /* the request of a request form, else 0 */
} ism_tr_rma;

/* WIN flags */
#define ISM_TR_WIN_FREED 0x01

typedef struct {
    ism_tr_hdr h;
    uint32_t win;      /* ids are per process, in creation order (as communicators') */
    uint32_t comm;     /* the communicator it was created over (COMM); UINT32_MAX if freed */
} ism_tr_win;

/* SYNC flags: what the peer is */
#define ISM_TR_SYNC_RANK 0
#define ISM_TR_SYNC_GATEWAY 1

typedef struct {
    ism_tr_hdr h;      /* fn: the phase (0 at MPI_Init, 1 at MPI_Finalize) */
    int32_t peer;      /* global rank, or site * 65536 + gateway */
    uint32_t pad;
    uint64_t t0, t1;   /* this process: request sent, answer received */
    uint64_t tr;       /* the peer's clock when it answered */
} ism_tr_sync;

typedef struct {
    ism_tr_hdr h;
    uint64_t t;        /* when recording resumed */
    uint64_t records, bytes; /* dropped since the last LOSS */
} ism_tr_loss;

typedef struct {
    ism_tr_hdr h;
    uint64_t t;
    uint64_t records, bytes, lost_records, lost_bytes; /* over the whole file */
} ism_tr_end;

typedef struct {
    ism_tr_hdr h;      /* fn: the event's index (MPI_T_event_get_info) */
    uint64_t t;        /* the event's own time stamp, on the tracer's clock */
    uint64_t a, b, c;  /* the event's elements, as documented for each event */
} ism_tr_event;

/* ---- gateways ---- */

/* GW_FRAME flags: what happened to the frame on the link */
enum {
    ISM_TR_GW_SENT = 1,     /* written completely to a stream */
    ISM_TR_GW_RESENT = 2,   /* written again after a reconnection */
    ISM_TR_GW_RECEIVED = 3, /* read completely from a stream */
    ISM_TR_GW_DUPLICATE = 4 /* read and dropped: the peer sent it again, we had it */
};

typedef struct {
    ism_tr_hdr h;      /* fn: the frame type (contract/frame.h) */
    uint64_t t;
    uint64_t seq;      /* link sequence number (0: unnumbered control frame) */
    uint16_t link, stream;
    uint32_t len;      /* payload bytes */
    int32_t src, dst, tag; /* global ranks (-1: a gateway) */
    uint16_t fflags, pad;
    uint64_t a, b;     /* the frame's generic words (CREDIT: chunks granted, ...) */
} ism_tr_gw_frame;

typedef struct {
    ism_tr_hdr h;
    uint64_t t;
    uint64_t ack;      /* the peer has every frame below this */
    uint16_t link, pad16;
    uint32_t pad;
} ism_tr_gw_ack;

/* GW_APP flags */
enum { ISM_TR_GW_FROM_APP = 1, ISM_TR_GW_TO_APP = 2 };

typedef struct {
    ism_tr_hdr h;      /* fn: the frame type */
    uint64_t t;
    int32_t src, dst, tag;
    uint32_t len;
    uint64_t a;
    uint16_t link, pad16; /* the link it goes out on / came in from */
    uint32_t pad;
} ism_tr_gw_app;

typedef struct {
    ism_tr_hdr h;
    uint64_t t;
    uint16_t link, nstreams;
    uint32_t sendq;    /* numbered frames queued, not yet on a stream */
    uint32_t unacked;  /* on a stream, not yet acknowledged */
    uint32_t ooo;      /* received ahead of a missing one */
    uint64_t tx_bytes, rx_bytes; /* so far on the link */
    uint64_t held_bytes;         /* gateway-wide bytes in pool buffers */
    int64_t early_out;           /* early-data bytes sent on the link and not given back */
    uint64_t srtt_us, cwnd, pacing_Bps; /* the transport's view (0 where it has none) */
    uint32_t credits_granted;    /* CREDIT chunks that crossed the link since the last sample */
    uint32_t pad;
} ism_tr_gw_sample;

/* GW_LINK flags: the link's new state (gateway.h: 0 down, 1 resuming, 2 up) */
typedef struct {
    ism_tr_hdr h;
    uint64_t t;
    uint16_t link, pad16;
    int32_t peer_site, peer_gw;
    uint32_t pad;
    /* then the reason as text, '\0'-terminated, padded to 8 bytes */
} ism_tr_gw_link;

#endif
