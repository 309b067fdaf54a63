/* setup.c: establishing a reliable-UDP connection.
 *
 * Authentication reuses the gateways' TCP handshake (auth.h) on a short TCP control
 * connection, so UDP needs no second key-exchange protocol of its own. On the
 * authenticated TCP stream both sides then send fresh 32-byte nonces and their
 * parameters; the server picks a random 128-bit connection id and a UDP port bound for
 * this connection only. Each direction's 64-bit token is
 *     HMAC-SHA256(job secret, "isthmus-udp-v1 c2s"|"... s2c" || job || conn id || Nc || Ns)
 * truncated. Only a holder of the job secret can compute it, and it is fresh per
 * connection. The client then probes the UDP port until the server answers over UDP:
 * the server connects its UDP socket to the address of the first packet that carries
 * the right token (so the kernel drops everything else), and both close the TCP
 * connection. A firewall that blocks UDP shows up here, as a timeout that says so.
 *
 * The two control messages after the auth handshake are in setup_msg.h.
 * The agreed MTU is the smaller one; CRC is on when either side asks for it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/le.h"
#include "setup.h"
#include "setup_msg.h"
#include "../aead.h"
#include "../sstream.h"
#include <openssl/crypto.h>
#include "sock.h"



static int derive(const ism_auth_key *k, const char *label, const uint8_t cid[16],
                  const uint8_t nc[32], const uint8_t ns[32], uint8_t out[ISM_UDPW_TOKEN_LEN])
{
    uint8_t msg[64 + ISM_AUTH_JOB_LEN + 16 + 64];
    size_t n = strlen(label);
    memcpy(msg, label, n);
    memcpy(msg + n, k->job, ISM_AUTH_JOB_LEN);
    n += ISM_AUTH_JOB_LEN;
    memcpy(msg + n, cid, 16);
    n += 16;
    memcpy(msg + n, nc, 32);
    memcpy(msg + n + 32, ns, 32);
    n += 64;
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!HMAC(EVP_sha256(), k->secret, (int)k->secret_len, msg, n, mac, &len) || len < 8)
        return -1;
    memcpy(out, mac, ISM_UDPW_TOKEN_LEN);
    return 0;
}

static int derive_tokens(const ism_auth_key *k, const uint8_t cid[16], const uint8_t nc[32],
                         const uint8_t ns[32], uint8_t c2s[ISM_UDPW_TOKEN_LEN],
                         uint8_t s2c[ISM_UDPW_TOKEN_LEN])
{
    if (derive(k, "isthmus-udp-v1 c2s", cid, nc, ns, c2s) != 0 ||
        derive(k, "isthmus-udp-v1 s2c", cid, nc, ns, s2c) != 0)
        return -1;
    /* Equal tokens would let one side's packets be reflected back as the other's. */
    return memcmp(c2s, s2c, ISM_UDPW_TOKEN_LEN) == 0 ? -1 : 0;
}

/* Under a cipher the first datagram must open before the server ties its socket to the
 * sender's address: the token alone, seen by anyone on the path, would let an attacker's
 * packet from elsewhere win the race. Opens a copy with keys of its own, so the
 * connection's replay window still sees the packet once. */
static int first_is_authentic(const ism_aead_keys *keys, const uint8_t *p, size_t n)
{
    if (!keys || keys->suite == ISM_AEAD_NONE)
        return 1;
    udp_seal s;
    uint8_t copy[ISM_UDPW_MAX_DGRAM];
    if (n > sizeof copy || udp_seal_init(&s, keys, 0) != 0)
        return 0;
    memcpy(copy, p, n);
    int ok = udp_seal_open(&s, copy, &n) == 0;
    udp_seal_free(&s);
    OPENSSL_cleanse(copy, sizeof copy);
    return ok;
}

static int udp_socket(const struct sockaddr_in *bind_to, int bufsize, char *err, size_t errlen)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        udp_errf(err, errlen, "UDP socket: %s", strerror(errno));
        return -1;
    }
    /* Try the privileged FORCE variant first (root may exceed net.core.*mem_max). */
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsize, sizeof bufsize) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsize, sizeof bufsize) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof bufsize);
    /* Never fragment: a datagram that does not fit the path must be lost, not split.
     * PROBE, not DO: DF is set, but the kernel's PMTU cache (fed by ICMP, which nothing
     * authenticates) neither refuses nor shrinks what we send; pmtu.c finds the size. */
    int pmtu = IP_PMTUDISC_PROBE;
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
    if (bind_to && bind(fd, (const struct sockaddr *)bind_to, sizeof *bind_to) != 0) {
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &bind_to->sin_addr, a, sizeof a);
        udp_errf(err, errlen, "binding a UDP socket to %s: %s", a, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static void name_peer(char *buf, size_t len, const struct sockaddr_in *a, ism_auth_id id)
{
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%u (site %u, gateway %u)", ip, ntohs(a->sin_port), id.site, id.gw);
}

static int64_t deadline_of(int timeout_ms)
{
    return ism_now_ms() + timeout_ms;
}

/* The set-up messages travel sealed under keys of their own (a sub-key of the
 * handshake's), so nobody on the path can change the window, MTU or port they carry;
 * with crypto none (both ends told so) in the clear. */
typedef struct setup_chan {
    int tcp;
    ism_sstream *ss;
} setup_chan;

static int chan_open(setup_chan *ch, int tcp, const ism_aead_keys *keys, int client)
{
    ch->tcp = tcp;
    ch->ss = NULL;
    if (!keys || keys->suite == ISM_AEAD_NONE)
        return 0;
    ism_aead_keys sk;
    ch->ss = malloc(sizeof *ch->ss);
    int rc = !ch->ss || ism_aead_keys_sub(keys, "udp-setup", &sk) != 0 ||
             ism_sstream_init(ch->ss, &sk, client) != 0;
    ism_aead_keys_wipe(&sk);
    if (rc) {
        free(ch->ss);
        ch->ss = NULL;
        return -1;
    }
    return 0;
}

static void chan_close(setup_chan *ch)
{
    if (ch->ss) {
        ism_sstream_free(ch->ss);
        free(ch->ss);
    }
    ch->ss = NULL;
}

static int chan_send(setup_chan *ch, const uint8_t *m, size_t n, int64_t dl)
{
    return ch->ss ? ism_sstream_write_full(ch->ss, ch->tcp, m, n, dl)
                  : ism_sock_write_full(ch->tcp, m, n, dl, NULL);
}

static int chan_recv(setup_chan *ch, uint8_t *m, size_t n, int64_t dl)
{
    return ch->ss ? ism_sstream_read_full(ch->ss, ch->tcp, m, n, dl)
                  : ism_sock_read_full(ch->tcp, m, n, dl, NULL);
}

static const char *chan_error(int rc)
{
    return rc == ISM_SOCK_ETIMEDOUT ? "timed out"
           : rc == ISM_SOCK_ECLOSED ? "peer closed the connection (does it speak the UDP transport?)"
           : errno == EBADMSG       ? "a set-up message failed authentication (changed on the path?)"
                                    : strerror(errno);
}

/* The UDP connection's keys: the handshake's bound to its id and both set-up nonces. */
static int conn_keys(const ism_aead_keys *keys, const uint8_t cid[16], const uint8_t nc[32],
                     const uint8_t ns[32], ism_aead_keys *out)
{
    *out = *keys;
    if (keys->suite == ISM_AEAD_NONE)
        return 0;
    uint8_t ctx[16 + 32 + 32];
    memcpy(ctx, cid, 16);
    memcpy(ctx + 16, nc, 32);
    memcpy(ctx + 48, ns, 32);
    return ism_aead_keys_bind(out, "udp-conn", ctx, sizeof ctx);
}

/* The client's half of the set-up exchange: its parameters, sealed, and the channel
 * (kept open: the server's answer comes back on it). */
typedef struct client_params {
    setup_chan ch;
    int open;
    udp_cli_msg cm;
    const ism_udp_opts *o;
    const char *tcpname;
    int rc;         /* the channel's error, for the message */
} client_params;

static int send_params(client_params *p, int tcp, const ism_aead_keys *keys, int64_t dl,
                       char *err, size_t errlen)
{
    const ism_udp_opts *o = p->o;
    p->cm = (udp_cli_msg){.rcvbuf = o->rcvbuf, .mtu = (uint32_t)o->mtu, .crc = (uint32_t)o->crc,
                          .ack_delay_us = (uint32_t)o->ack_delay_us};
    if (RAND_bytes(p->cm.nonce, sizeof p->cm.nonce) != 1) {
        udp_errf(err, errlen, "UDP setup with %s: no random bytes from OpenSSL", p->tcpname);
        return -1;
    }
    uint8_t m[UDP_CLI_MSG];
    udp_cli_msg_encode(&p->cm, m);
    if (chan_open(&p->ch, tcp, keys, 1) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: no keys for the set-up (OpenSSL)", p->tcpname);
        return -1;
    }
    p->open = 1;
    if ((p->rc = chan_send(&p->ch, m, UDP_CLI_MSG, dl)) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: %s", p->tcpname, chan_error(p->rc));
        return -1;
    }
    return 0;
}

static ism_udp_conn *client_finish(client_params *p, int tcp, const ism_auth_key *k,
                                   ism_auth_id peer, const ism_aead_keys *keys,
                                   int timeout_ms, int64_t dl, char *err, size_t errlen);

/* The early-data hook of the handshake (auth.h ism_auth_run_early): our parameters leave
 * right behind our RESPONSE instead of after the server's verdict, a round trip sooner. */
typedef struct early_arg {
    client_params *p;
    int tcp;
    char err[300];
} early_arg;

static int early_params(void *arg, const ism_aead_keys *keys, int64_t deadline_ms)
{
    early_arg *a = arg;
    if (send_params(a->p, a->tcp, keys, deadline_ms, a->err, sizeof a->err) == 0)
        return 0;
    return a->p->rc ? a->p->rc : ISM_SOCK_EIO;
}

ism_udp_conn *udp_setup_client(int tcp, const ism_auth_key *k, ism_auth_id self,
                               const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                               size_t errlen)
{
    int64_t dl = deadline_of(timeout_ms);
    char tcpname[64];
    ism_sock_peer_name(tcp, tcpname, sizeof tcpname);
    client_params p = {.o = o, .tcpname = tcpname};
    early_arg ea = {.p = &p, .tcp = tcp};
    ism_auth_id peer;
    ism_aead_keys keys;
    int rc = ism_auth_run_early(tcp, k, self, o->suites, o->rekey_log2, o->purpose, &peer, &keys,
                                timeout_ms, err, errlen, early_params, &ea);
    if (auth_rc)
        *auth_rc = rc;
    if (rc != 0) {
        if (ea.err[0]) /* our parameters failed, not the handshake */
            udp_errf(err, errlen, "%s", ea.err);
        if (p.open)
            chan_close(&p.ch);
        return NULL;
    }
    ism_udp_conn *c = client_finish(&p, tcp, k, peer, &keys, timeout_ms, dl, err, errlen);
    ism_aead_keys_wipe(&keys);
    return c;
}

ism_udp_conn *udp_setup_client_authed(int tcp, const ism_auth_key *k, ism_auth_id peer,
                                      const ism_aead_keys *keys, const ism_udp_opts *o,
                                      int timeout_ms, char *err, size_t errlen)
{
    int64_t dl = deadline_of(timeout_ms);
    char tcpname[64];
    ism_sock_peer_name(tcp, tcpname, sizeof tcpname);
    client_params p = {.o = o, .tcpname = tcpname};
    if (send_params(&p, tcp, keys, dl, err, errlen) != 0) {
        if (p.open)
            chan_close(&p.ch);
        return NULL;
    }
    return client_finish(&p, tcp, k, peer, keys, timeout_ms, dl, err, errlen);
}

static ism_udp_conn *client_finish(client_params *p, int tcp, const ism_auth_key *k,
                                   ism_auth_id peer, const ism_aead_keys *keys,
                                   int timeout_ms, int64_t dl, char *err, size_t errlen)
{
    const ism_udp_opts *o = p->o;
    const char *tcpname = p->tcpname;
    setup_chan ch = p->ch;
    udp_cli_msg cm = p->cm;
    uint8_t m[UDP_SRV_MSG];
    int rc;
    if ((rc = chan_recv(&ch, m, UDP_SRV_MSG, dl)) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname, chan_error(rc));
        chan_close(&ch);
        return NULL;
    }
    chan_close(&ch);
    udp_srv_msg sm;
    rc = udp_srv_msg_decode(m, (uint32_t)o->mtu, &sm);
    if (rc != UDP_MSG_OK) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname,
                 rc == UDP_MSG_EVERSION ? "the peer does not speak this protocol version"
                                        : "the peer sent invalid parameters");
        return NULL;
    }
    uint8_t *cid = sm.conn_id, *nc = cm.nonce, *ns = sm.nonce;
    int port = sm.port;
    uint32_t mtu = sm.mtu, crc = sm.crc;
    uint64_t peer_rcv = sm.rcvbuf;
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getpeername(tcp, (struct sockaddr *)&sa, &sl) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname, strerror(errno));
        return NULL;
    }
    sa.sin_port = htons((uint16_t)port);
    int fd = udp_socket(NULL, o->sock_buf, err, errlen);
    if (fd < 0)
        return NULL;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: connect: %s", tcpname, strerror(errno));
        close(fd);
        return NULL;
    }
    ism_udp_opts agreed = *o;
    agreed.mtu = (int)mtu;
    agreed.crc = (int)crc;
    uint8_t c2s[ISM_UDPW_TOKEN_LEN], s2c[ISM_UDPW_TOKEN_LEN];
    if (derive_tokens(k, cid, nc, ns, c2s, s2c) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: deriving the connection tokens failed", tcpname);
        close(fd);
        return NULL;
    }
    char pname[96];
    name_peer(pname, sizeof pname, &sa, peer);
    ism_aead_keys ck;
    if (conn_keys(keys, cid, nc, ns, &ck) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: deriving the connection keys failed", tcpname);
        close(fd);
        return NULL;
    }
    ism_udp_conn *c = udp_conn_new(fd, &agreed, c2s, s2c, peer_rcv, &ck, 1, pname, err, errlen);
    ism_aead_keys_wipe(&ck);
    if (!c)
        return NULL;
    c->peer_id = peer;
    /* Probe until the server answers over UDP: proves the path and our address to it.
     * With confirm_later the first probe goes now and the connection is the caller's at
     * once: what it writes follows the probe, and the engine keeps probing (engine.c). */
    if (o->confirm_later) {
        int64_t now = udp_now_us();
        c->ping_due = 1;
        c->next_probe_us = now + UDP_PROBE_INTERVAL_US;
        c->last_recv_us = now; /* the dead-peer clock: no answer within dead_ms fails */
        if (udp_progress(c, now) != 0) {
            udp_errf(err, errlen, "UDP setup with %s: %s", tcpname, c->errmsg);
            udp_conn_free(c);
            return NULL;
        }
        return c;
    }
    int64_t next_probe = 0;
    while (c->st.acks_received == 0) {
        int64_t now = udp_now_us();
        if (ism_now_ms() >= dl) {
            udp_errf(err, errlen,
                     "UDP setup with %s: no UDP answer from %s within %d ms (TCP works; is UDP "
                     "blocked by a firewall?)",
                     tcpname, pname, timeout_ms);
            udp_conn_free(c);
            return NULL;
        }
        if (now >= next_probe) {
            c->ping_due = 1;
            next_probe = now + UDP_PROBE_INTERVAL_US;
        }
        c->last_recv_us = now; /* the dead-peer clock starts once the path is up */
        if (udp_wait(c, next_probe) != 0) {
            udp_errf(err, errlen, "UDP setup with %s: %s", tcpname, c->errmsg);
            udp_conn_free(c);
            return NULL;
        }
    }
    return c;
}

ism_udp_conn *udp_setup_server(int tcp, const ism_auth_key *k, ism_auth_id self,
                               const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                               size_t errlen)
{
    ism_auth_id peer;
    ism_aead_keys keys;
    int rc = ism_auth_run(tcp, 1, k, self, o->suites, o->rekey_log2, o->purpose, &peer, &keys,
                          timeout_ms, err, errlen);
    if (auth_rc)
        *auth_rc = rc;
    if (rc != 0)
        return NULL;
    ism_udp_conn *c = udp_setup_server_authed(tcp, k, peer, &keys, o, timeout_ms, err, errlen);
    ism_aead_keys_wipe(&keys);
    return c;
}

ism_udp_conn *udp_setup_server_authed(int tcp, const ism_auth_key *k, ism_auth_id peer,
                                      const ism_aead_keys *keys, const ism_udp_opts *o,
                                      int timeout_ms, char *err, size_t errlen)
{
    int64_t dl = deadline_of(timeout_ms);
    char tcpname[64];
    ism_sock_peer_name(tcp, tcpname, sizeof tcpname);
    uint8_t m[UDP_SRV_MSG];
    setup_chan ch;
    if (chan_open(&ch, tcp, keys, 0) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: no keys for the set-up (OpenSSL)", tcpname);
        return NULL;
    }
    int rc = chan_recv(&ch, m, UDP_CLI_MSG, dl);
    if (rc != 0) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname,
                 rc == ISM_SOCK_ETIMEDOUT ? "timed out waiting for its parameters" : chan_error(rc));
        chan_close(&ch);
        return NULL;
    }
    udp_cli_msg cm;
    rc = udp_cli_msg_decode(m, &cm);
    if (rc != UDP_MSG_OK) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname,
                 rc == UDP_MSG_EVERSION ? "the peer does not speak this protocol version"
                                        : "the peer sent invalid parameters");
        chan_close(&ch);
        return NULL;
    }
    udp_srv_msg sm = {.mtu = cm.mtu < (uint32_t)o->mtu ? cm.mtu : (uint32_t)o->mtu,
                      .crc = cm.crc || o->crc, .rcvbuf = o->rcvbuf};
    uint8_t *nc = cm.nonce, *ns = sm.nonce, *cid = sm.conn_id;
    uint64_t peer_rcv = cm.rcvbuf;
    uint32_t mtu = sm.mtu, crc = sm.crc;
    struct sockaddr_in local, tcp_peer;
    socklen_t sl = sizeof local, pl = sizeof tcp_peer;
    if (RAND_bytes(ns, 32) != 1 || RAND_bytes(cid, 16) != 1) {
        udp_errf(err, errlen, "UDP setup with %s: no random bytes from OpenSSL", tcpname);
        chan_close(&ch);
        return NULL;
    }
    if (getsockname(tcp, (struct sockaddr *)&local, &sl) != 0 ||
        getpeername(tcp, (struct sockaddr *)&tcp_peer, &pl) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname, strerror(errno));
        chan_close(&ch);
        return NULL;
    }
    local.sin_port = 0;
    int fd = udp_socket(&local, o->sock_buf, err, errlen);
    if (fd < 0) {
        chan_close(&ch);
        return NULL;
    }
    sm.port = (uint16_t)ism_sock_local_port(fd);
    udp_srv_msg_encode(&sm, m);
    uint8_t c2s[ISM_UDPW_TOKEN_LEN], s2c[ISM_UDPW_TOKEN_LEN];
    ism_aead_keys ck;
    if (derive_tokens(k, cid, nc, ns, c2s, s2c) != 0 || conn_keys(keys, cid, nc, ns, &ck) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: deriving the connection tokens failed", tcpname);
        chan_close(&ch);
        close(fd);
        return NULL;
    }
    rc = chan_send(&ch, m, UDP_SRV_MSG, dl);
    chan_close(&ch);
    if (rc != 0) {
        udp_errf(err, errlen, "UDP setup with %s: sending parameters failed", tcpname);
        ism_aead_keys_wipe(&ck);
        close(fd);
        return NULL;
    }
    int64_t params_sent_us = udp_now_us(); /* the client answers over UDP: one round trip */
    int sealed = ck.suite != ISM_AEAD_NONE;
    /* Wait for the first UDP packet with the client's token; anything else is ignored. */
    uint8_t *buf = malloc(ISM_UDPW_MAX_DGRAM);
    if (!buf) {
        close(fd);
        udp_errf(err, errlen, "out of memory");
        return NULL;
    }
    struct sockaddr_in from;
    ssize_t n = -1;
    for (;;) {
        int64_t left = dl - ism_now_ms();
        if (left <= 0) {
            udp_errf(err, errlen,
                     "UDP setup with %s: no authenticated UDP packet arrived within %d ms (TCP "
                     "works; is UDP blocked by a firewall?)",
                     tcpname, timeout_ms);
            ism_aead_keys_wipe(&ck);
            free(buf);
            close(fd);
            return NULL;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        poll(&pfd, 1, (int)(left > 100 ? 100 : left));
        socklen_t fl = sizeof from;
        n = recvfrom(fd, buf, ISM_UDPW_MAX_DGRAM, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        /* from the address the authenticated TCP connection came from (a NAT maps both
         * flows of one host to one address), with the token, and opening */
        if (n > 0 && from.sin_addr.s_addr == tcp_peer.sin_addr.s_addr &&
            ism_udpw_check(buf, (size_t)n, c2s, sealed ? 0 : (int)crc) == ISM_UDPW_DATA &&
            first_is_authentic(&ck, buf, (size_t)n))
            break;
    }
    /* The RTO's seed (the server sends nothing timed before its first ACK is back): from
     * our parameters to the client's first UDP packet, one round trip, or more when the
     * client's first probe was lost (200 ms more each). The kernel's RTT of the TCP
     * connection, measured on the same path during the handshake, bounds it: a seed of
     * 200 ms on loopback gave an RTO of 0.7 s, and a lost FIN then took 2 s to resend. */
    int64_t handshake_rtt_us = udp_now_us() - params_sent_us;
    struct tcp_info ti;
    socklen_t til = sizeof ti;
    if (getsockopt(tcp, IPPROTO_TCP, TCP_INFO, &ti, &til) == 0 && ti.tcpi_rtt > 0 &&
        (int64_t)ti.tcpi_rtt < handshake_rtt_us)
        handshake_rtt_us = ti.tcpi_rtt;
    if (connect(fd, (struct sockaddr *)&from, sizeof from) != 0) {
        udp_errf(err, errlen, "UDP setup with %s: connect: %s", tcpname, strerror(errno));
        ism_aead_keys_wipe(&ck);
        free(buf);
        close(fd);
        return NULL;
    }
    ism_udp_opts agreed = *o;
    agreed.mtu = (int)mtu;
    agreed.crc = (int)crc;
    char pname[96];
    name_peer(pname, sizeof pname, &from, peer);
    ism_udp_conn *c = udp_conn_new(fd, &agreed, s2c, c2s, peer_rcv, &ck, 0, pname, err, errlen);
    ism_aead_keys_wipe(&ck);
    if (!c) {
        free(buf);
        return NULL;
    }
    c->peer_id = peer;
    int64_t now = udp_now_us();
    udp_seed_rtt(c, handshake_rtt_us);
    udp_dispatch(c, buf, (size_t)n, now);
    free(buf);
    udp_progress(c, now); /* the ACK that completes the client's setup */
    if (c->err) {
        udp_errf(err, errlen, "UDP setup with %s: %s", tcpname, c->errmsg);
        udp_conn_free(c);
        return NULL;
    }
    return c;
}
