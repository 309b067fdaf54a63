/* sstream.h: a byte stream carried in AEAD records over a non-blocking socket (TCP), for
 * the gateways' TCP links, `isthmus copy` over TCP and the link probe's data.
 *
 * Record: len u32 (LE, 0..ISM_SSTREAM_MAX plaintext bytes) | ciphertext[len] | tag[16].
 * The length is the additional data; the sequence number is implicit (records are
 * counted per direction from 0, as TLS 1.3 does), so a record cannot be replayed,
 * dropped, reordered or moved to another connection without failing its tag. A record
 * that fails is never delivered: the stream fails (EBADMSG) and whoever owns it starts a
 * new connection (with new keys) and resends, as for a broken connection. An empty
 * record is the end mark (TLS's close_notify): the reader reports the end of the stream
 * only after it, so a stream cut at a record boundary is an error (EPIPE), not an end.
 *
 * Writing: bytes are sealed into a buffer of at most two records' worth (with workers:
 * four per thread, at most 16) and written from
 * there; what the buffer holds counts as written for the caller (as the kernel's send
 * buffer does), so the owner must flush before it closes (ism_sstream_pending). Reading:
 * whole records are opened, straight into the caller's buffer when it takes a whole
 * record, else into a one-record buffer it is served from; bytes can therefore be ready
 * with no socket event to come (ism_sstream_readable).
 *
 * Workers (ism_sstream_use_pool, sealpool.h): the records of one seal call, and the whole
 * records one read can open straight into the caller's buffer, are then sealed or opened
 * together on the pool's threads, each thread with its own cipher state. Sequence numbers
 * and the records' places are assigned in order before the batch starts, so the wire is
 * the same as without workers; a batch smaller than ISM_SSTREAM_PAR_MIN bytes or of one
 * record is done on the caller's thread (a handoff would cost more than it saves).
 */
#ifndef ISM_WAN_SSTREAM_H
#define ISM_WAN_SSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "aead.h"
#include "sealpool.h"

#define ISM_SSTREAM_MAX 16384 /* plaintext bytes per record */
#define ISM_SSTREAM_OVERHEAD (4 + ISM_AEAD_TAG_LEN)
#define ISM_SSTREAM_PAR_MIN (2 * ISM_SSTREAM_MAX) /* bytes: smaller batches stay inline */
#define ISM_SSTREAM_JOBS 64                       /* records per batch, at most */

/* One record of a batch: where it goes and under which number. */
typedef struct ism_sstream_job {
    struct iovec part[16]; /* sealing: the plaintext */
    int np;
    uint32_t len;
    uint64_t seq;
    uint8_t *rec;          /* the record (length, ciphertext, tag) */
    uint8_t *out;          /* opening: where the plaintext goes */
    int failed;
} ism_sstream_job;

typedef struct ism_sstream {
    ism_aead tx, rx;              /* the caller's thread (slot 0) */
    uint64_t tx_seq, rx_seq;
    uint8_t *txb;                 /* sealed records not yet written */
    size_t tx_off, tx_len, txb_cap;
    uint8_t *rxb;                 /* ciphertext read, not yet opened: [rx_off, rx_len) */
    size_t rx_off, rx_len, rxb_cap;
    ism_sealpool *pool;           /* NULL: everything on the caller's thread */
    int nslots;                   /* 1 + the pool's workers */
    ism_aead *txw, *rxw;          /* the workers' cipher states: slot k at [k - 1] */
    ism_sstream_job *jobs;        /* the batch being sealed or opened */
    uint64_t par_batches;         /* batches that went to the pool */
    uint8_t *pt;                  /* an opened record's plaintext not yet taken */
    size_t pt_off, pt_len;
    uint64_t sealed, opened, rejected; /* records */
    int eof;                      /* the peer closed (after the bytes in rxb) */
    int ended, end_sent;          /* the peer's end mark arrived / ours went into txb */
    int err;                      /* a failure found after bytes were delivered: next read */
} ism_sstream;

/* keys from ism_aead_derive; client: 1 on the side that dialed (it sends c2s). 0, or -1
 * (no memory, OpenSSL failure). */
int ism_sstream_init(ism_sstream *s, const ism_aead_keys *keys, int client);
void ism_sstream_free(ism_sstream *s);
/* Seal and open large batches on pool's workers as well (before the first record; the
 * pool must outlive the stream). 0, or -1 (no memory, OpenSSL failure: the stream then
 * stays as it was). A NULL or empty pool changes nothing. */
int ism_sstream_use_pool(ism_sstream *s, ism_sealpool *pool);
/* Key updates so far, both directions (each counted once, whichever thread stepped). */
uint64_t ism_sstream_rekeys(const ism_sstream *s);

/* Seal what fits of iov; returns the plaintext bytes taken (0: the buffer is full), or
 * -1 (OpenSSL failure). Writes nothing to the socket: call ism_sstream_flush. */
ssize_t ism_sstream_seal(ism_sstream *s, const struct iovec *iov, int n);
/* Write sealed bytes: 0 when all are out, 1 when some remain (the socket is full), -1
 * with errno on an error. */
int ism_sstream_flush(ism_sstream *s, int fd);
size_t ism_sstream_pending(const ism_sstream *s);
/* Seal the end mark (once); flush it like any record. 0, or -1 (the buffer is full: flush
 * and call again; or OpenSSL failure). */
int ism_sstream_seal_end(ism_sstream *s);

/* Up to n bytes of plaintext, reading the socket as needed: bytes, 0 when the peer
 * ended the stream with its end mark, or -1 with errno (EAGAIN: nothing yet; EBADMSG: a
 * record failed its tag or was malformed; EPIPE: the connection ended without the end
 * mark; the stream is then dead). Bytes opened before a failure are returned first. */
ssize_t ism_sstream_read(ism_sstream *s, int fd, void *buf, size_t n);
/* 1 when a read would return bytes without the socket (opened or whole records wait). */
int ism_sstream_readable(const ism_sstream *s);

/* Convenience for blocking users (the copy tool, the probe): write all n bytes, or read
 * exactly n, until deadline_ms (ism_now_ms time). 0, or an ISM_SOCK_E* code (EIO with
 * errno EBADMSG for an unauthentic record). */
int ism_sstream_write_full(ism_sstream *s, int fd, const void *buf, size_t n, int64_t deadline_ms);
int ism_sstream_read_full(ism_sstream *s, int fd, void *buf, size_t n, int64_t deadline_ms);

#endif
