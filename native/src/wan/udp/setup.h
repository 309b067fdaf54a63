/* setup.h: connection setup and lifetime of reliable-UDP connections (setup.c, api.c). */
#ifndef ISM_WAN_UDP_SETUP_H
#define ISM_WAN_UDP_SETUP_H

#include "conn.h"

/* Run the client/server side of setup on a connected TCP socket (not closed here).
 * *auth_rc (may be NULL) gets the handshake's ISM_AUTH_E* code, 0 once it passed. */
ism_udp_conn *udp_setup_client(int tcp, const ism_auth_key *k, ism_auth_id self,
                               const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                               size_t errlen);
ism_udp_conn *udp_setup_server(int tcp, const ism_auth_key *k, ism_auth_id self,
                               const ism_udp_opts *o, int timeout_ms, int *auth_rc, char *err,
                               size_t errlen);

/* The same, after the caller authenticated the TCP connection itself (the gateway runs
 * the handshake from its event loop): peer is who it authenticated. */
ism_udp_conn *udp_setup_client_authed(int tcp, const ism_auth_key *k, ism_auth_id peer,
                                      const ism_aead_keys *keys, const ism_udp_opts *o,
                                      int timeout_ms, char *err, size_t errlen);
ism_udp_conn *udp_setup_server_authed(int tcp, const ism_auth_key *k, ism_auth_id peer,
                                      const ism_aead_keys *keys, const ism_udp_opts *o,
                                      int timeout_ms, char *err, size_t errlen);

/* A connection over the connected UDP socket fd (owned from now on, closed on failure). */
ism_udp_conn *udp_conn_new(int fd, const ism_udp_opts *o, const uint8_t tok_tx[ISM_UDPW_TOKEN_LEN],
                           const uint8_t tok_rx[ISM_UDPW_TOKEN_LEN], uint64_t peer_rcvbuf,
                           const ism_aead_keys *keys, int client, const char *peer, char *err,
                           size_t errlen);
void udp_conn_free(ism_udp_conn *c);

#endif
