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

#define UDP_SEAL_OVERHEAD (8 + ISM_AEAD_TAG_LEN)

struct ism_udp_conn;
struct udp_txslot;

typedef struct udp_seal {
    int on;               /* a cipher was agreed */
    int suite;
    ism_aead tx, rx;
    uint64_t next;        /* seal number of the next datagram sent */
    ism_aead_window win;
    uint64_t rejected;    /* datagrams that failed authentication or were replays */
} udp_seal;

/* keys NULL or ISM_AEAD_NONE: no sealing. client: 1 on the side that dialed. */
int udp_seal_init(udp_seal *s, const ism_aead_keys *keys, int client);
void udp_seal_free(udp_seal *s);

/* Bytes a datagram grows by when sealed (0 without a cipher). */
static inline uint32_t udp_seal_overhead(const udp_seal *s) { return s->on ? UDP_SEAL_OVERHEAD : 0; }

/* A built datagram in the send slot taken last (header in buf, payload in iov[1..]) made
 * ready to send: sealed into buf as one piece, or with the CRC when that is on. If
 * sealing fails (OpenSSL) the slot is given back and the connection fails: nothing is
 * ever sent unsealed. */
void udp_seal_slot(struct ism_udp_conn *c, struct udp_txslot *t);
/* The same for a datagram built in p (n bytes, room for the overhead): its new length. */
size_t udp_seal_buf(struct ism_udp_conn *c, uint8_t *p, size_t n);
/* A datagram received into p (n bytes): 0 and *n reduced to the plaintext packet, or -1
 * (not authentic, a replay, too short): drop it. */
int udp_seal_open(udp_seal *s, uint8_t *p, size_t *n);

#endif
