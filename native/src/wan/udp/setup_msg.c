/* setup_msg.c: the reliable-UDP set-up messages as bytes and back (setup_msg.h). */
#include "setup_msg.h"

#include <string.h>

#include "../../common/le.h"
#include "wire.h"

static void preamble(uint8_t *m)
{
    memcpy(m, "ISUS", 4);
    m[4] = 1;
    m[5] = m[6] = m[7] = 0;
}

static int check_preamble(const uint8_t *m)
{
    if (memcmp(m, "ISUS", 4) != 0 || m[4] != 1)
        return UDP_MSG_EVERSION;
    return m[5] || m[6] || m[7] ? UDP_MSG_EPARAM : UDP_MSG_OK;
}

static int sane_rcvbuf(uint64_t b) { return b >= 65536 && (b >> 50) == 0; }

static int sane_mtu(uint32_t mtu)
{
    return mtu >= ISM_UDPW_MIN_DGRAM + 28 && mtu <= ISM_UDPW_MAX_DGRAM + 28;
}

void udp_cli_msg_encode(const udp_cli_msg *p, uint8_t m[UDP_CLI_MSG])
{
    memset(m, 0, UDP_CLI_MSG);
    preamble(m);
    memcpy(m + 8, p->nonce, 32);
    ism_put_le64(m + 40, p->rcvbuf);
    ism_put_le32(m + 48, p->mtu);
    ism_put_le32(m + 52, p->crc);
    ism_put_le32(m + 56, p->ack_delay_us);
}

int udp_cli_msg_decode(const uint8_t m[UDP_CLI_MSG], udp_cli_msg *p)
{
    int rc = check_preamble(m);
    if (rc)
        return rc;
    memcpy(p->nonce, m + 8, 32);
    p->rcvbuf = ism_get_le64(m + 40);
    p->mtu = ism_get_le32(m + 48);
    p->crc = ism_get_le32(m + 52);
    p->ack_delay_us = ism_get_le32(m + 56);
    if (!sane_mtu(p->mtu) || p->crc > 1 || !sane_rcvbuf(p->rcvbuf) || ism_get_le32(m + 60))
        return UDP_MSG_EPARAM;
    return UDP_MSG_OK;
}

void udp_srv_msg_encode(const udp_srv_msg *p, uint8_t m[UDP_SRV_MSG])
{
    memset(m, 0, UDP_SRV_MSG);
    preamble(m);
    memcpy(m + 8, p->conn_id, 16);
    memcpy(m + 24, p->nonce, 32);
    m[56] = (uint8_t)p->port;
    m[57] = (uint8_t)(p->port >> 8);
    ism_put_le32(m + 60, p->mtu);
    ism_put_le64(m + 64, p->rcvbuf);
    ism_put_le32(m + 72, p->crc);
}

int udp_srv_msg_decode(const uint8_t m[UDP_SRV_MSG], uint32_t max_mtu, udp_srv_msg *p)
{
    int rc = check_preamble(m);
    if (rc)
        return rc;
    memcpy(p->conn_id, m + 8, 16);
    memcpy(p->nonce, m + 24, 32);
    p->port = (uint16_t)(m[56] | m[57] << 8);
    p->mtu = ism_get_le32(m + 60);
    p->rcvbuf = ism_get_le64(m + 64);
    p->crc = ism_get_le32(m + 72);
    if (p->port == 0 || !sane_mtu(p->mtu) || p->mtu > max_mtu || p->crc > 1 ||
        !sane_rcvbuf(p->rcvbuf) || m[58] || m[59] || ism_get_le32(m + 76))
        return UDP_MSG_EPARAM;
    return UDP_MSG_OK;
}
