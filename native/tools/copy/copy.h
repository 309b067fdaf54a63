/* copy.h: isthmus-copy's two roles. `serve` (server.c) keeps a directory: it stores
 * PUTs into it and answers GETs from it, never outside it (paths.h). `put` and `get`
 * (client.c) copy one file to or from such a server. Every connection is authenticated
 * with the job secret before any request is read, and every file is checked end to end
 * with SHA-256 before it is renamed into place. Failures exit 1 with a message naming
 * the peer; mistakes on the command line exit 2 (main.c).
 */
#ifndef ISM_COPY_COPY_H
#define ISM_COPY_COPY_H

#include <stddef.h>
#include <sys/types.h>

#include "auth.h"
#include "udp.h"

typedef struct icp_opts {
    int udp;        /* 1: reliable UDP (default); 0: TCP */
    const char *cc; /* the client's congestion control (udp: bbr, reno; tcp: the kernel's) */
    size_t window;  /* udp: send/receive buffers; tcp: socket buffers; 0: defaults */
    int tmo_ms;     /* idle limit of every wait, and the UDP transport's dead-peer time */
    int quiet;      /* no progress lines */
    int resume;     /* keep a failed copy's bytes, and continue from them next time */
    mode_t umask;   /* ours, applied to the mode of every file we store (as cp does) */
    unsigned suites; /* link protection accepted at the handshake (auth.h): aead unless
                      * --crypto none, which both ends must be given */
    ism_auth_key key;
} icp_opts;

/* The reliable-UDP options for o (the server passes cc NULL: it sends with bbr). */
void icp_udp_opts(const icp_opts *o, ism_udp_opts *u);

int icp_serve(const char *dir, const char *host, int port, const icp_opts *o);
int icp_put(const char *local, const char *hostport, const char *remote, const icp_opts *o);
int icp_get(const char *hostport, const char *remote, const char *local, const icp_opts *o);

#endif
