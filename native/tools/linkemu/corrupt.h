/* corrupt.h: corruption that only an end-to-end check can see.
 *
 * A link with `corrupt=P` flips one random bit in the transport payload of a fraction P
 * of its packets and then recomputes the UDP or TCP checksum, as a middlebox that
 * rewrites packets (or a memory error before the checksum is computed) would: the
 * kernel's checksums pass, and only an application-level check (the gateways' CRC32C,
 * the UDP transport's CRC32C, a checksum of the data) finds it. Flipping a bit anywhere
 * else would make the receiving kernel drop the packet as a checksum error, which is
 * loss, and `loss=` models that already. So only unfragmented IPv4 UDP and TCP packets
 * with a payload are corrupted; others (pure ACKs, ICMP, fragments) pass untouched. */
#ifndef ISM_LE_CORRUPT_H
#define ISM_LE_CORRUPT_H

#include <stddef.h>

#include "prng.h"

/* Flip one bit of pkt's transport payload, chosen with g, and fix the transport
 * checksum. Returns 1 if the packet was changed, 0 if it has no payload to corrupt. */
int ism_le_corrupt(unsigned char *pkt, size_t len, ism_le_prng *g);

/* The Internet checksum of a UDP or TCP segment over IPv4 (pseudo-header included),
 * as it should stand in the header; 0 if pkt is no such packet. For tests, too. */
unsigned ism_le_l4_checksum(const unsigned char *pkt, size_t len);

#endif
