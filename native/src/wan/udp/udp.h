/* udp.h: the reliable-UDP transport's public API (issue 7).
 *
 * A connection is a reliable, ordered, flow- and congestion-controlled byte stream in
 * each direction over one UDP flow, for long, fat, lossy WAN links where a single TCP
 * stream with the system's default congestion control (usually CUBIC) stalls. It needs
 * no privileges and no kernel support beyond UDP.
 *
 *   listener:  l = ism_udp_open("0.0.0.0:7000", &key, self, &opts, err, sizeof err);
 *              c = ism_udp_accept(l, 30000, err, sizeof err);
 *   client:    c = ism_udp_connect("10.77.0.2:7000", &key, self, &opts, 30000, err, sizeof err);
 *   both:      ism_udp_send(c, buf, n, timeout_ms); ism_udp_recv(c, buf, n, timeout_ms);
 *              ism_udp_close(c, timeout_ms);
 *
 * Connection setup: the client opens a short TCP control connection to the listener's
 * host:port and runs the gateways' authenticated handshake (auth.h) on it. Both sides
 * then exchange fresh nonces and parameters, the server binds a UDP socket for this
 * connection and sends its port, and each side derives two 64-bit per-direction
 * tokens = HMAC-SHA256(job secret, label, job, random 128-bit connection id, nonces).
 * Every UDP packet carries its direction's token; packets without it are dropped
 * unread, and both UDP sockets are connected to the authenticated peer's address. The
 * TCP connection closes once the UDP path answered (see docs/design.md for the choice).
 *
 * Packet size: path-MTU discovery by probing (pmtu.c, RFC 8899 style, no ICMP needed)
 * from 1280 up to opts.mtu; a path MTU that falls mid-transfer is detected and the data
 * is resent in the smaller size. opts.pmtud = 0 sends every full packet at opts.mtu.
 *
 * Threading: a connection is single-threaded (no locks); use it from one thread at a
 * time. Different connections are independent.
 *
 * Blocking calls drive the protocol themselves. Non-blocking use: poll ism_udp_fd() for
 * POLLIN with a timeout of ism_udp_next_timer_us(), then call ism_udp_progress(), and
 * use ism_udp_send_nb()/ism_udp_recv_nb(), which never wait.
 *
 * Errors: functions return negative ISM_UDP_E* codes; ism_udp_error(c) gives a message
 * naming the peer (address, site and gateway id) and what happened. Once a connection
 * has failed every call returns the same error.
 */
#ifndef ISM_WAN_UDP_H
#define ISM_WAN_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "auth.h"

enum {
    ISM_UDP_EAGAIN = -11,   /* non-blocking call could not make progress now */
    ISM_UDP_ETIMEDOUT = -12, /* the caller's timeout passed (the connection stays usable) */
    ISM_UDP_EDEAD = -13,    /* nothing heard from the peer for dead_ms: peer or path gone */
    ISM_UDP_ECLOSED = -14,  /* the peer aborted the connection */
    ISM_UDP_ESETUP = -15,   /* connection setup failed (message says why) */
    ISM_UDP_EIO = -16,      /* socket error */
    ISM_UDP_EINVAL = -17,   /* bad argument or options */
    ISM_UDP_ESHUT = -18     /* send after shutdown/close */
};

/* Impairments applied to our own outgoing datagrams, for tests and experiments
 * (deterministic for a given seed and send sequence). All probabilities in [0, 1]. */
typedef struct ism_udp_impair {
    double loss;      /* each datagram dropped with this probability ... */
    double burst;     /* ... and, once dropped, the next one too with this probability */
    double dup;       /* sent twice */
    double reorder;   /* held back and sent after the next 1..8 datagrams */
    double corrupt;   /* one random bit flipped anywhere in the datagram */
    uint64_t seed;
    /* Datagrams (UDP payload) larger than this are dropped silently, as a path with a
     * smaller MTU does (no ICMP); 0 = no limit. Read at every send, so a test may change
     * it mid-transfer from the sending thread (path MTU changes). */
    uint32_t max_dgram;
} ism_udp_impair;

typedef struct ism_udp_opts {
    int mtu;              /* IP MTU ceiling (datagram = mtu - 28); default 1500. With pmtud
                           * the path MTU is probed up to this (and the interface's MTU);
                           * without, every full packet is this size */
    int pmtud;            /* 1 (default): path-MTU discovery (pmtu.c); 0: fixed mtu */
    int pmtu_raise_ms;    /* search above the current size again this long after a search
                           * ended (default 600000, RFC 8899's PMTU_RAISE_TIMER) */
    size_t sndbuf;        /* send buffer bytes (bounds data awaiting ACK); default 64 MiB */
    size_t rcvbuf;        /* receive window bytes (flow control); default 64 MiB */
    const char *cc;       /* "bbr" (default) or "reno" */
    int crc;              /* 1 (default): CRC32C on every packet; 0: rely on UDP's checksum */
    int ack_every;        /* ACK after this many data packets (default 16) ... */
    int ack_delay_us;     /* ... or this long after the first unacknowledged one (1000) */
    int dead_ms;          /* declare the peer dead after this silence (default 10000) */
    int keepalive_ms;     /* probe when idle this long (default dead_ms / 4) */
    int sock_buf;         /* SO_SNDBUF/SO_RCVBUF of the UDP socket (default 8 MiB) */
    uint64_t max_rate;    /* cap on the pacing rate, payload bytes/s; 0 = none */
    uint64_t start_rate;  /* the link's rate if the user knows it, payload bytes/s: bbr
                           * starts there instead of ramping up (cc.h start_at); 0 = ramp.
                           * Refused with a controller that does not offer it */
    const ism_udp_impair *impair; /* NULL in production */
    unsigned suites;      /* link encryption accepted at the handshake (auth.h; default
                           * ISM_AUTH_SUITES_AEAD: every datagram sealed, seal.h) */
    const char *purpose;  /* what the connection carries, in its keys (aead.h; "udp") */
    int rekey_log2;       /* key-update interval asked for at the handshake: log2 of the
                           * datagrams per key (0: the default, auth.h) */
    int confirm_later;    /* client: connect returns once the first probe has gone, not
                           * after the server's answer (a round trip sooner); what is
                           * written meanwhile follows the probe, probes repeat until the
                           * answer, and none within dead_ms fails the connection */
} ism_udp_opts;

typedef struct ism_udp_stats {
    uint64_t bytes_sent, bytes_acked, bytes_received;
    uint64_t pkts_sent, pkts_retransmitted, pkts_received, pkts_dup, pkts_bad;
    uint64_t pkts_unauth;    /* of pkts_bad: sealed datagrams that failed authentication
                              * or were replays (seal.h) */
    uint64_t rekeys;         /* key updates, both directions */
    uint64_t seal_batches;   /* batches sealed or opened on crypto workers (sealbatch.c) */
    int suite;               /* ISM_AEAD_* of the connection */
    uint64_t pkts_lost, rto_count, acks_sent, acks_received;
    uint64_t pkts_reordered; /* arrived after a higher packet number */
    uint64_t pkts_coalesced; /* arrived coalesced with others in one read (UDP GRO) */
    uint64_t impair_dropped, impair_dup, impair_reordered, impair_corrupted;
    uint64_t impair_mtu_dropped; /* above ism_udp_impair.max_dgram */
    int64_t srtt_us, min_rtt_us, rttvar_us;
    uint64_t cwnd, pacing_rate, inflight;
    const char *cc, *cc_state;
    uint32_t payload; /* bytes of stream data per full packet (now) */
    /* path MTU (IP bytes): in use now, the search's floor and ceiling; probes and black
     * holes (full-size packets lost while small ones passed: fell back to the base) */
    uint32_t plpmtu, pmtu_base, pmtu_ceiling;
    uint64_t pmtu_probes_sent, pmtu_probes_acked, pmtu_probes_lost, pmtu_black_holes;
    int64_t pmtu_raised_us; /* from connection setup to the last size increase; -1: none */
    /* Where received bytes went on their way to the application: straight from the
     * packet into a posted buffer; out of the receive ring; and back from a posted
     * buffer into the ring when its receive ended before they were contiguous (they are
     * then counted again when read). Delivered = direct - back + via_ring. */
    uint64_t bytes_placed_direct, bytes_via_ring, bytes_placed_back;
} ism_udp_stats;

typedef struct ism_udp_listener ism_udp_listener;
typedef struct ism_udp_conn ism_udp_conn;

void ism_udp_opts_default(ism_udp_opts *o);
/* 0 if the options are usable, else -1 with the reason in err (as open/connect check). */
int ism_udp_opts_check(const ism_udp_opts *o, char *err, size_t errlen);

/* Listen for connections on host:port (TCP for setup; each connection's UDP socket is
 * bound to the same local address with an ephemeral port). Returns NULL with err. */
ism_udp_listener *ism_udp_open(const char *hostport, const ism_auth_key *key, ism_auth_id self,
                               const ism_udp_opts *o, char *err, size_t errlen);
int ism_udp_listener_port(const ism_udp_listener *l);
int ism_udp_listener_fd(const ism_udp_listener *l); /* readable when a client waits */
void ism_udp_listener_close(ism_udp_listener *l);

/* Accept one authenticated connection (timeout_ms > 0 bounds the wait and the setup). */
ism_udp_conn *ism_udp_accept(ism_udp_listener *l, int timeout_ms, char *err, size_t errlen);
ism_udp_conn *ism_udp_connect(const char *hostport, const ism_auth_key *key, ism_auth_id self,
                              const ism_udp_opts *o, int timeout_ms, char *err, size_t errlen);

/* Setup over a TCP connection the caller made or accepted itself (a program whose
 * listener also serves other protocols, as the gateway's does). tcp is a connected
 * stream socket, blocking or not; it is neither closed here nor needed afterwards. On
 * failure: NULL, a message in err, and *auth_rc (may be NULL) the ism_auth_* code when
 * the authentication itself failed (wrong secret, wrong job, ...), else 0. */
ism_udp_conn *ism_udp_connect_fd(int tcp, const ism_auth_key *key, ism_auth_id self,
                                 const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                                 size_t errlen);
ism_udp_conn *ism_udp_accept_fd(int tcp, const ism_auth_key *key, ism_auth_id self,
                                const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                                size_t errlen);
/* The rest of the setup after the caller ran the authentication on tcp itself
 * (ism_auth_hs from its own event loop, as the gateway does): client 1 for the side
 * that dialed; peer is who the handshake authenticated. Blocking up to timeout_ms: only
 * an authenticated peer gets here. */
struct ism_aead_keys;
ism_udp_conn *ism_udp_setup_authed(int client, int tcp, const ism_auth_key *key,
                                   ism_auth_id peer, const struct ism_aead_keys *keys,
                                   const ism_udp_opts *o, int timeout_ms, char *err,
                                   size_t errlen);
/* "a.b.c.d:port (site S, gateway G)" of the peer, for messages. */
const char *ism_udp_peer_name(const ism_udp_conn *c);
/* Who the handshake authenticated at the other end. */
ism_auth_id ism_udp_peer_id(const ism_udp_conn *c);

/* Blocking: move all n bytes into the send buffer (returns n), or fail. timeout_ms < 0
 * waits without a caller deadline (dead-peer detection still applies). */
ssize_t ism_udp_send(ism_udp_conn *c, const void *buf, size_t n, int timeout_ms);
/* Blocking: wait for at least one byte; returns bytes read, 0 at the end of the peer's
 * stream, or a negative code. While it waits, buf is posted (ism_udp_recv_post): payload
 * arriving for it is copied from the packet straight into it. */
ssize_t ism_udp_recv(ism_udp_conn *c, void *buf, size_t n, int timeout_ms);
/* Blocking, like MSG_WAITALL: wait for all n bytes, posted the same way. Returns n; fewer
 * when the stream ended (0: ended before any), the timeout passed or the connection
 * failed after some bytes arrived (the next call reports why); or a negative code. */
ssize_t ism_udp_recv_all(ism_udp_conn *c, void *buf, size_t n, int timeout_ms);
/* Non-blocking variants: bytes moved (may be fewer than n), ISM_UDP_EAGAIN when none
 * can move now, 0 from recv at the end of the stream. */
ssize_t ism_udp_send_nb(ism_udp_conn *c, const void *buf, size_t n);
ssize_t ism_udp_recv_nb(ism_udp_conn *c, void *buf, size_t n);
/* A posted receive, for event loops (the non-blocking form of the placement the blocking
 * calls do): buf receives the next n bytes of the stream. What the receive ring holds of
 * them is copied now; from then on every progress step copies payload for that range
 * straight from the packet into buf, in order or not (bytes outside it go to the ring).
 * One post at a time; while it is posted, recv/recv_nb/recv_all return ISM_UDP_EINVAL.
 *   post:   0, or ISM_UDP_EINVAL (buf NULL, n 0 or over 1 TiB, or one already posted).
 *   filled: bytes at the start of buf that are final (contiguous): the caller may use
 *           them while the rest is still posted.
 *   test:   runs a progress step unless the post is over; when it is over (all n bytes
 *           there, or the stream ended inside it) ends it and returns the bytes filled
 *           (n, or fewer, maybe 0, at the end of the stream); else ISM_UDP_EAGAIN, or the
 *           connection's error (the post stays: cancel it).
 *   cancel: ends the post at once; returns the bytes filled (they are consumed, as by a
 *           recv); bytes that arrived beyond a hole go back to the ring, to be read again.
 * After test or cancel ended it, nothing more is written to buf. close and abort end a
 * post too. ism_udp_readable() says whether test would not return EAGAIN. */
int ism_udp_recv_post(ism_udp_conn *c, void *buf, size_t n);
size_t ism_udp_recv_filled(const ism_udp_conn *c);
ssize_t ism_udp_recv_test(ism_udp_conn *c);
ssize_t ism_udp_recv_cancel(ism_udp_conn *c);
/* send_nb of the iovecs in order, then one progress step (a header and its payload
 * cost one pass through the protocol, not two). */
ssize_t ism_udp_sendv_nb(ism_udp_conn *c, const struct iovec *iov, int iovcnt);

/* Event-loop integration. progress() reads what arrived, sends what is due and runs
 * timers without blocking; returns 0 or the connection's error. Poll ism_udp_fd() for
 * ism_udp_events() with a timeout of ism_udp_next_timer_us(). Any call that runs a
 * progress step (send_nb, recv_nb on an empty buffer, progress) may read every packet
 * waiting on the socket, so the socket alone does not say whether there is more to do:
 * a loop asks readable() and writable() before it sleeps. */
int ism_udp_fd(const ism_udp_conn *c);
short ism_udp_events(const ism_udp_conn *c);           /* POLLIN, and POLLOUT when blocked */
int64_t ism_udp_next_timer_us(const ism_udp_conn *c); /* from now; 0 = due */
int ism_udp_progress(ism_udp_conn *c);
int ism_udp_readable(const ism_udp_conn *c);    /* recv_nb (or recv_test) would not say EAGAIN */
size_t ism_udp_writable(const ism_udp_conn *c); /* bytes send_nb would take now */
int ism_udp_settled(const ism_udp_conn *c);     /* all we sent (and our end) acknowledged */
int ism_udp_status(const ism_udp_conn *c);      /* 0, or the error that ended the connection */

/* End our stream (the peer's recv returns 0 after the last byte); receiving goes on. */
int ism_udp_shutdown(ism_udp_conn *c);
/* Shut down, wait (up to timeout_ms) until the peer acknowledged every byte and ended
 * its own stream, then free everything. Returns 0, or a negative code when data may not
 * have arrived (the connection is freed either way). */
int ism_udp_close(ism_udp_conn *c, int timeout_ms);
/* Free at once, telling the peer with a CLOSE packet (for errors). */
void ism_udp_abort(ism_udp_conn *c);

/* Seal and open large batches of datagrams on the pool's crypto workers as well
 * (wan/sealpool.h; sealbatch.c), before the connection carries data; the pool must
 * outlive it and have one caller at a time. 0, or -1 (no memory, OpenSSL: the connection
 * stays as it was). A NULL or empty pool, or no cipher, changes nothing. */
struct ism_sealpool;
int ism_udp_use_pool(ism_udp_conn *c, struct ism_sealpool *pool);

const char *ism_udp_error(const ism_udp_conn *c);
void ism_udp_get_stats(const ism_udp_conn *c, ism_udp_stats *s);
const char *ism_udp_strerror(int code);

#endif
