/* xport.h: the transport under the gateway's links, as one ops table.
 *
 * A link to a peer gateway is one or more streams; a stream is an authenticated,
 * reliable, ordered byte stream in each direction. What carries it is the transport:
 *   xport_tcp.c  a kernel TCP connection (N of them per link, striped by session.c);
 *   xport_udp.c  a reliable-UDP connection (wan/udp: its own pacing, SACK/NACK and
 *                congestion control in user space), one per link.
 * Framing, link sequence numbers, acknowledgements, RESUME after a reconnection and FIN
 * (session.c, links.c) sit on top and are the same for both, so an outage longer than
 * the transport's own patience is survived the same way. The gateway picks the table
 * once at start (ISTHMUS_TRANSPORT, gw_xport_find) and calls only through it, as
 * Redis's ae.c does with its multiplexers and UCX with uct_iface_ops.
 *
 * A stream's `fd` is what the event loop polls (-1: not connected); `conn` is the
 * transport's own object, if it has one. The loop asks each stream, before it sleeps,
 * which events to poll for and how long it may sleep (a user-space transport has timers
 * of its own, and may have bytes ready that no socket will announce again); after
 * ppoll it calls service(), which says whether to try reading and writing.
 */
#ifndef ISM_GW_XPORT_H
#define ISM_GW_XPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "../wan/auth.h"

struct gw_stream;
struct gw_link;
struct ism_aead_keys;

enum { GW_XP_READ = 1, GW_XP_WRITE = 2 }; /* what service() says to try */

#define GW_CONNECT_TIMEOUT_MS 1000 /* one attempt to reach the peer's listener */
#define GW_SETUP_TIMEOUT_MS 5000   /* authentication (and the transport's set-up) */

/* Room in a stream for the transport's totals over the connections that ended. */
#define GW_XP_TOTALS 192

typedef struct gw_xport {
    const char *name;
    int max_streams;
    /* At start: check the settings (gw_die with the reason if they cannot work), and
     * prepare the gateway's listening TCP socket (both transports set up over it). */
    void (*init)(void);
    int (*listener)(int fd, char *err, size_t errlen);
    /* Every stream starts as a TCP connection to the peer's listener, authenticated by
     * the gateway's own event loop (setup.c, wan/auth.h) so that no peer can hold it up.
     * prep (may be NULL) sets options on a socket before it dials. authed() then turns
     * the authenticated connection tcp into the stream s (dialed: 1 on the side that
     * connected), taking it over (closing it on failure too): 0, or -1 with err. keys
     * (wan/aead.h) say how to protect the traffic: the suite the handshake agreed on
     * (ISM_AEAD_NONE only when both sides were told so) and this connection's keys. Only
     * an authenticated peer gets this far, so it may block up to GW_SETUP_TIMEOUT_MS. */
    int (*prep)(int fd, void *arg);
    int (*authed)(struct gw_stream *s, int tcp, int dialed, ism_auth_id peer,
                  const struct ism_aead_keys *keys, char *err, size_t errlen);
    /* The stream joins the event loop (non-blocking from now on; may be called again). */
    void (*started)(struct gw_stream *s);
    /* Non-blocking I/O: bytes moved, or -1 with errno (EAGAIN: nothing can move now).
     * read returns 0 when the peer ended its stream. */
    ssize_t (*writev)(struct gw_stream *s, const struct iovec *iov, int n);
    ssize_t (*read)(struct gw_stream *s, void *buf, size_t n);
    /* Before sleeping: events to poll fd for, and how long the stream lets the loop
     * sleep (microseconds; 0 = service it now, -1 = as long as the loop likes). */
    short (*events)(const struct gw_stream *s, int want_read, int want_write);
    int64_t (*timer_us)(const struct gw_stream *s, int want_read, int want_write);
    /* After ppoll (revents may be 0): GW_XP_READ and/or GW_XP_WRITE to try. */
    int (*service)(struct gw_stream *s, short revents);
    /* 1 while bytes we wrote may still need this process (the peer's transport does
     * not have them yet): an exit must wait. */
    int (*unsent)(const struct gw_stream *s);
    /* The job is over: end our side in order. 1 once nothing of ours is in flight. */
    int (*finish)(struct gw_stream *s);
    /* Drop the connection, adding its counters to the stream's totals. */
    void (*close)(struct gw_stream *s);
    /* Why the last call failed (errno e), naming what the transport knows. */
    const char *(*error)(const struct gw_stream *s, int e, char *buf, size_t n);
    /* --stats: the link as set up, and one line per stream over all its connections
     * ("" when there is nothing to say). */
    void (*describe)(const struct gw_link *l, char *buf, size_t n);
    void (*report)(const struct gw_stream *s, char *buf, size_t n);
} gw_xport;

extern const gw_xport gw_xport_tcp, gw_xport_udp;

/* The transport called name ("tcp", "udp"), or NULL. */
const gw_xport *gw_xport_find(const char *name);

#endif
