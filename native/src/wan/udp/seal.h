/* seal.h: AEAD on every datagram of a reliable-UDP connection (wan/aead.h), when the
 * handshake agreed on a cipher.
 *
 * A sealed datagram is the 16-byte common header in the clear (version, type, flags, a
 * zero CRC field, the connection token: what lets a receiver drop strangers cheaply),
 * then everything after it encrypted, then the seal number (u64 LE) and the 16-byte tag:
 *     common[16] | ciphertext | seal u64 | tag[16]
 * The seal number is a per-direction counter of datagrams sealed (DATA, ACK and CLOSE
 * alike), never repeated under one key: a retransmitted chunk goes in a new datagram with
 * a new number, so nothing is ever sealed twice under one nonce. The additional data is
 * the common header and the seal number. A receiver checks the number against a replay
 * window (aead.h) before opening, opens in place, and only then parses the packet as
 * wire.h describes: a datagram that fails is dropped and counted, exactly like a lost one,
 * so the sender's loss recovery sends its data again. CRC32C is off under a cipher (the
 * tag covers every byte). Key update: every 2^rekey_log2 datagrams (the handshake agrees on
 * it), as aead.h says. The keys are the handshake's bound to this connection's id and
 * both set-up nonces (setup.c), and the set-up messages themselves travel sealed under
 * keys of their own.
 */
#ifndef ISM_WAN_UDP_SEAL_H
#define ISM_WAN_UDP_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "../aead.h"
#include "../sealpool.h"

#define UDP_SEAL_OVERHEAD (8 + ISM_AEAD_TAG_LEN)
#define UDP_SEAL_PAR_MIN (32u << 10) /* bytes: a smaller batch is sealed or opened inline */

struct ism_udp_conn;
struct udp_txslot;

typedef struct udp_seal {
    int on;               /* a cipher was agreed */
    int suite;
    ism_aead tx, rx;
    uint64_t next;        /* seal number of the next datagram sent */
    ism_aead_window win;
    uint64_t rejected;    /* datagrams that failed authentication or were replays */
    /* crypto workers (sealbatch.c; NULL pool: every datagram sealed and opened at once,
     * on the calling thread, as above) */
    ism_sealpool *pool;
    int nslots;           /* 1 + the pool's workers */
    ism_aead *txw, *rxw;  /* the workers' cipher states: slot k at [k - 1] */
    uint64_t par_batches; /* batches that went to the pool, both directions */
} udp_seal;

/* keys NULL or ISM_AEAD_NONE: no sealing. client: 1 on the side that dialed. */
int udp_seal_init(udp_seal *s, const ism_aead_keys *keys, int client);
void udp_seal_free(udp_seal *s);

/* Bytes a datagram grows by when sealed (0 without a cipher). */
static inline uint32_t udp_seal_overhead(const udp_seal *s) { return s->on ? UDP_SEAL_OVERHEAD : 0; }

/* A built datagram in the send slot taken last (header in buf, payload in iov[1..]) made
 * ready to send: sealed into buf as one piece, or with the CRC when that is on. If
 * sealing fails (OpenSSL) the slot is given back and the connection fails: nothing is
 * ever sent unsealed. With crypto workers the slot only gets its seal number here and
 * is sealed with the others at the flush (udp_seal_pending, sealbatch.c). */
void udp_seal_slot(struct ism_udp_conn *c, struct udp_txslot *t);
/* The same for a datagram built in p (n bytes, room for the overhead): its new length. */
size_t udp_seal_buf(struct ism_udp_conn *c, uint8_t *p, size_t n);
/* Seal a datagram under a's number seq into buf: buf[0..hlen) (header) then parts; its
 * sealed length, or 0 (OpenSSL failure, or seq before a's key). */
size_t udp_seal_at(ism_aead *a, uint64_t seq, uint8_t *buf, size_t hlen,
                   const struct iovec *parts, int nparts);
/* A datagram received into p (n bytes): 0 and *n reduced to the plaintext packet, or -1
 * (not authentic, a replay, too short): drop it. */
int udp_seal_open(udp_seal *s, uint8_t *p, size_t *n);

/* ---- crypto workers (sealbatch.c) ---- */

/* Seal and open batches on pool's workers as well (before the first datagram; the pool
 * must outlive the connection). 0, or -1 (no memory, OpenSSL: nothing changed). A NULL
 * or empty pool changes nothing: the connection stays on the inline path. */
int udp_seal_use_pool(udp_seal *s, ism_sealpool *pool);
/* Key updates so far, both directions (each counted once, whichever thread stepped). */
uint64_t udp_seal_rekeys(const udp_seal *s);

/* Seal the slots of t[0..n) that wait for it (numbers given in udp_seal_slot), in
 * batches of at most UDP_GSO_MAX: how many slots from the start are ready; fewer than n
 * only when sealing failed (OpenSSL): the slots from there on must never leave. */
unsigned udp_seal_slots(udp_seal *s, struct udp_txslot *t, unsigned n);
/* The connection's slots not yet sent, sealed (udp_seal_slots): 0, or -1 when sealing
 * failed: the connection has failed and the unsent slots are dropped. */
int udp_seal_pending(struct ism_udp_conn *c);

/* A received datagram of a batch: the caller sets p, n and type (ism_udpw_check, < 0:
 * refused already); udp_seal_open_batch sets ok and reduces n to the plaintext packet. */
typedef struct udp_rxd {
    uint8_t *p;
    size_t n;
    int type;
    int ok;
    int opening;  /* internal: a job of the batch */
    uint64_t seq;
} udp_rxd;
/* Open d[0..n) as udp_seal_open would one after the other, in place (workers open, the
 * calling thread checks the replay window before and after, in order): the rejected ones
 * are counted as udp_seal_open counts them. */
void udp_seal_open_batch(udp_seal *s, udp_rxd *d, int n);

#endif
