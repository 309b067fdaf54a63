/* stream.h: isthmus-copy's byte stream to its peer: one authenticated connection over
 * the reliable-UDP transport (wan/udp) or over kernel TCP, behind the same calls, so the
 * copy protocol (copy.c) never asks which one it runs on. Either way every byte after
 * the handshake is encrypted and authenticated (sealed datagrams, or AEAD records over
 * TCP: wan/aead.h) under keys of this connection, unless both ends were told --crypto
 * none.
 *
 * Every call that waits has an idle timeout (tmo_ms): it fails only when no byte moved
 * for that long, so a slow link is not mistaken for a dead one, and a dead one is never
 * waited on forever. Failures leave a message naming the peer in s->err.
 */
#ifndef ISM_COPY_STREAM_H
#define ISM_COPY_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "sstream.h"
#include "udp.h"

typedef struct icp_stream {
    ism_udp_conn *u; /* the UDP transport's connection, or NULL over TCP */
    int fd;          /* TCP: the connection; -1 when closed */
    ism_sstream *ss; /* TCP: its AEAD records (wan/sstream.h), NULL with --crypto none */
    int tmo_ms;
    uint64_t sent;   /* bytes handed to the transport, for progress */
    int eof;         /* the last icp_recv failed because the peer ended its side cleanly
                      * before a byte of what was asked arrived (a request boundary) */
    char peer[128];  /* "10.77.0.2:41990" for messages */
    char err[640];
} icp_stream;

/* Client: connect to hostport, send the preamble, authenticate (and set up UDP). udp: 1
 * reliable UDP with opts o, 0 TCP (window: socket buffers, 0 = the kernel's autotuning;
 * cc: TCP_CONGESTION or NULL). Returns 0, or -1 with s->err. */
int icp_stream_connect(icp_stream *s, const char *hostport, int udp, const ism_auth_key *key,
                       const ism_udp_opts *o, size_t window, const char *cc, int tmo_ms);
/* Server: on an accepted TCP connection, read the preamble and run the side the client
 * chose, all within preauth_ms (the limit for a connection that has not proven the job
 * secret; tmo_ms is the idle limit from then on). tcp is never closed here, so that
 * whoever may shut it down meanwhile (admit.h) can rely on it until the caller closes
 * it: on success over TCP it is s->fd (icp_close/icp_abort close it), over UDP no longer
 * needed; on failure unused. *auth_failed is set when the peer failed authentication or
 * ran out of time. */
int icp_stream_accept(icp_stream *s, int tcp, const ism_auth_key *key, const ism_udp_opts *o,
                      size_t window, int tmo_ms, int preauth_ms, int *auth_failed);

/* Send all n bytes (0), or fail (-1). */
int icp_send(icp_stream *s, const void *buf, size_t n);
/* Receive exactly n bytes (0); the stream ending first is an error (-1). */
int icp_recv(icp_stream *s, void *buf, size_t n);
/* After our last message: wait until the peer has it and ends its side too. 0 or -1. */
int icp_close(icp_stream *s);
/* Drop the connection at once (the peer's calls fail). */
void icp_abort(icp_stream *s);
const char *icp_transport(const icp_stream *s);
/* Bytes handed to icp_send() that the peer has not yet acknowledged (UDP: the
 * transport's acknowledgements; TCP: what is still in the kernel's send queue), so a
 * sender's progress shows what arrived rather than what was buffered. */
uint64_t icp_unacked(const icp_stream *s);
/* Wait up to ms for something to read, driving the transport meanwhile (UDP: its
 * acknowledgements and timers). 1 readable, 0 not yet, -1 the connection failed. */
int icp_wait_readable(icp_stream *s, int ms);

#endif
