/* fuzz_udp_setup.c: fuzz target for the reliable-UDP set-up messages (wan/udp/
 * setup_msg.c), the first bytes a UDP connection's peer sends after authenticating.
 * The first byte picks the client's message (even) or the server's answer (odd, with
 * the MTU the client offered from the next two bytes); the rest is the message, zero-
 * padded or cut to its size. Properties: a message accepted encodes back to exactly its
 * bytes (nothing ignored, reserved bytes zero), every accepted field is in the range the
 * connection can work with, and a refused one says why with a documented code.
 */
#include "fuzz.h"

#include "setup_msg.h"
#include "wire.h"

#include <string.h>

static void fail(const char *what, size_t n) { ism_fuzz_fail("fuzz_udp_setup", what, n); }

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 3)
        return 0;
    uint8_t m[UDP_SRV_MSG] = {0}, back[UDP_SRV_MSG];
    if (d[0] % 2 == 0) {
        memcpy(m, d + 1, n - 1 < UDP_CLI_MSG ? n - 1 : UDP_CLI_MSG);
        udp_cli_msg p;
        int rc = udp_cli_msg_decode(m, &p);
        if (rc != UDP_MSG_OK && rc != UDP_MSG_EVERSION && rc != UDP_MSG_EPARAM)
            fail("client message: undocumented code", n);
        if (rc != UDP_MSG_OK)
            return 0;
        if (p.mtu < ISM_UDPW_MIN_DGRAM + 28 || p.mtu > ISM_UDPW_MAX_DGRAM + 28 || p.crc > 1 ||
            p.rcvbuf < 65536)
            fail("client message: a field out of range accepted", n);
        udp_cli_msg_encode(&p, back);
        if (memcmp(back, m, UDP_CLI_MSG) != 0)
            fail("client message: accepted bytes do not encode back to themselves", n);
    } else {
        uint32_t max_mtu = (uint32_t)(d[1] | d[2] << 8);
        memcpy(m, d + 3, n - 3 < UDP_SRV_MSG ? n - 3 : UDP_SRV_MSG);
        udp_srv_msg p;
        int rc = udp_srv_msg_decode(m, max_mtu, &p);
        if (rc != UDP_MSG_OK && rc != UDP_MSG_EVERSION && rc != UDP_MSG_EPARAM)
            fail("server message: undocumented code", n);
        if (rc != UDP_MSG_OK)
            return 0;
        if (p.port == 0 || p.mtu > max_mtu || p.mtu < ISM_UDPW_MIN_DGRAM + 28 || p.crc > 1 ||
            p.rcvbuf < 65536)
            fail("server message: a field out of range accepted", n);
        udp_srv_msg_encode(&p, back);
        if (memcmp(back, m, UDP_SRV_MSG) != 0)
            fail("server message: accepted bytes do not encode back to themselves", n);
    }
    return 0;
}

size_t ism_fuzz_seeds(const ism_fuzz_seed **out)
{
    static uint8_t cli[1 + UDP_CLI_MSG], srv[3 + UDP_SRV_MSG];
    udp_cli_msg c = {.rcvbuf = 16u << 20, .mtu = 1500, .crc = 1, .ack_delay_us = 1000};
    memset(c.nonce, 0xab, sizeof c.nonce);
    cli[0] = 0;
    udp_cli_msg_encode(&c, cli + 1);
    udp_srv_msg s = {.port = 40000, .mtu = 1500, .crc = 0, .rcvbuf = 4u << 20};
    memset(s.conn_id, 0x11, sizeof s.conn_id);
    srv[0] = 1;
    srv[1] = 9000 & 0xff;
    srv[2] = 9000 >> 8;
    udp_srv_msg_encode(&s, srv + 3);
    static ism_fuzz_seed seeds[2];
    seeds[0] = (ism_fuzz_seed){cli, sizeof cli};
    seeds[1] = (ism_fuzz_seed){srv, sizeof srv};
    *out = seeds;
    return 2;
}
