/* xfer.h: the parts of a copy that both ends share: sending and receiving one message
 * of the copy protocol (proto.h) on a stream, moving a file's bytes as DATA and END with
 * its SHA-256, and the progress meter.
 *
 * The source and the sink hash the bytes independently (the source as it reads the
 * file, the sink as it receives them), so the digest compared at the end covers the
 * whole path: disk, both programs, and the transport.
 */
#ifndef ISM_COPY_XFER_H
#define ISM_COPY_XFER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "stream.h"

/* Bytes of file per DATA message. */
#define ICP_CHUNK (256u << 10)

/* Progress on stderr: bytes, rate and ETA, at most twice a second, after the first
 * second (short copies print nothing but their summary). */
typedef struct icp_meter {
    int quiet;
    uint64_t total;
    double t0, last;
    int printed;
    uint64_t base; /* bytes already there when the copy started (a resume) */
    _Atomic uint64_t done; /* the last count shown (or that would be): read by a many-file
                            * copy's progress thread while a worker updates it */
} icp_meter;

double icp_now_s(void);
void icp_meter_start(icp_meter *m, uint64_t total, int quiet);
void icp_meter_update(icp_meter *m, uint64_t done);
void icp_meter_end(icp_meter *m); /* ends the progress line, if one was printed */

/* One message. send: 0 or -1 (s->err). recv: the message's type and body (buf holds at
 * least ICP_MAX_DATA bytes), or -1 with s->err; an ERROR message is returned as such
 * for the caller to decode. */
int icp_msg_send(icp_stream *s, int type, const void *body, size_t n);
int icp_msg_recv(icp_stream *s, uint8_t *buf, uint32_t *len);

/* One message written into out (ICP_HDR + n bytes), for senders that gather several
 * into one icp_send (fewer, fuller packets and records). Returns ICP_HDR + n. */
size_t icp_msg_put(uint8_t *out, int type, const void *body, size_t n);

/* Send ERROR (best effort: the stream may already be broken). */
void icp_send_error(icp_stream *s, uint32_t status, const char *msg);

/* An ERROR body (or a malformed one) as "<status>: <message>" into out. */
void icp_describe_error(const uint8_t *body, uint32_t len, char *out, size_t outlen);

/* SHA-256 of n bytes in memory. 0, or -1 (OpenSSL failed). */
int icp_sha_buf(const void *p, size_t n, uint8_t out[ICP_SHA]);
/* SHA-256 of fd's first n bytes (buf: ICP_CHUNK bytes of scratch). 0, or -1 with errno. */
int icp_sha_prefix(int fd, uint64_t n, uint8_t *buf, uint8_t out[ICP_SHA]);

/* Resumed copies: offset bytes are already at the sink; the source sends the rest, and
 * both digests still cover the whole file (each side hashes its first offset bytes from
 * disk). */
/* Source: size bytes of fd as DATA messages (read through buf, at least ICP_CHUNK
 * bytes), then END; sha gets their digest. A file that turns out shorter or longer than
 * size is reported to the peer with ERROR. 0, or -1 with err (no RESULT follows). */
int icp_send_file(icp_stream *s, int fd, uint64_t size, uint64_t offset, icp_meter *m,
                  uint8_t *buf, uint8_t sha[ICP_SHA], char *err, size_t errlen);

/* Sink: DATA messages into fd until END; exactly size bytes are expected. Returns
 * ICP_OK with sha the digest of what arrived and matched END; a status > 0 when the
 * stream is intact but the copy must be discarded (checksum mismatch, write error: the
 * rest of the data is read and dropped so the peer gets a RESULT); -1 when the stream
 * broke or the peer sent ERROR (err says which; no RESULT is owed). */
int icp_recv_file(icp_stream *s, int fd, uint64_t size, uint64_t offset, icp_meter *m,
                  uint8_t *buf, uint8_t sha[ICP_SHA], char *err, size_t errlen);

/* Source, after END: until the sink's answer arrives, show what it acknowledged (a
 * transport's buffers can hold the whole file, so the send loop alone says nothing).
 * Returns when the answer is there, the connection failed, or nothing moved for the
 * idle limit (icp_result_recv then reports it). */
void icp_await_answer(icp_stream *s, icp_meter *m, uint64_t size);

/* RESULT: send ours, or wait for the peer's (the ERROR it may send instead is decoded
 * into err). recv returns 0 with r filled, or -1 with err. */
int icp_result_send(icp_stream *s, uint32_t status, const uint8_t sha[ICP_SHA], const char *msg);
int icp_result_recv(icp_stream *s, uint8_t *buf, icp_result *r, char *err, size_t errlen);

#endif
