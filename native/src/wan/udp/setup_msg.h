/* setup_msg.h: the two messages of a reliable-UDP connection's set-up (setup.c), which
 * follow the authentication on the TCP control connection, as bytes and back.
 *
 *   client -> server  "ISUS" ver=1 0 0 0 | Nc[32] | rcvbuf u64 | mtu u32 | crc u32 |
 *                     ack_delay_us u32 | 0 u32                          (64 bytes)
 *   server -> client  "ISUS" ver=1 0 0 0 | conn_id[16] | Ns[32] | udp port u16 | 0 u16 |
 *                     mtu u32 | rcvbuf u64 | crc u32 | 0 u32            (80 bytes)
 *
 * Little-endian. A decoder accepts only what the other side can have meant: the magic and
 * version, reserved bytes zero, a datagram size the wire format carries (and for the
 * server's answer, no larger than the client offered), CRC 0 or 1, a receive buffer of
 * 64 KiB .. 2^50 bytes, a non-zero port. So an accepted message encodes back to itself.
 */
#ifndef ISM_WAN_UDP_SETUP_MSG_H
#define ISM_WAN_UDP_SETUP_MSG_H

#include <stdint.h>

#define UDP_CLI_MSG 64
#define UDP_SRV_MSG 80

typedef struct udp_cli_msg {
    uint8_t nonce[32];
    uint64_t rcvbuf;
    uint32_t mtu, crc, ack_delay_us;
} udp_cli_msg;

typedef struct udp_srv_msg {
    uint8_t conn_id[16];
    uint8_t nonce[32];
    uint16_t port;
    uint32_t mtu, crc;
    uint64_t rcvbuf;
} udp_srv_msg;

enum { UDP_MSG_OK = 0, UDP_MSG_EVERSION = -1, UDP_MSG_EPARAM = -2 };

void udp_cli_msg_encode(const udp_cli_msg *p, uint8_t m[UDP_CLI_MSG]);
int udp_cli_msg_decode(const uint8_t m[UDP_CLI_MSG], udp_cli_msg *p);
void udp_srv_msg_encode(const udp_srv_msg *p, uint8_t m[UDP_SRV_MSG]);
/* max_mtu: what the client offered; a larger answer is refused. */
int udp_srv_msg_decode(const uint8_t m[UDP_SRV_MSG], uint32_t max_mtu, udp_srv_msg *p);

#endif
