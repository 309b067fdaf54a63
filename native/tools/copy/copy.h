/* copy.h: isthmus-copy's two roles. `serve` (server.c) keeps a directory: it stores
 * PUTs into it and answers GETs from it, never outside it (paths.h). `put` and `get`
 * (client.c) copy one file to or from such a server; many files go by batch.c. Every connection is authenticated
 * with the job secret before any request is read, and every file is checked end to end
 * with SHA-256 before it is renamed into place. Failures exit 1 with a message naming
 * the peer; mistakes on the command line exit 2 (main.c).
 */
#ifndef ISM_COPY_COPY_H
#define ISM_COPY_COPY_H

#include <stddef.h>
#include <sys/types.h>

#include "auth.h"
#include "stream.h"
#include "udp.h"
#include "xfer.h"

typedef struct icp_opts {
    int udp;        /* 1: reliable UDP (default); 0: TCP */
    const char *cc; /* the client's congestion control (udp: bbr, reno; tcp: the kernel's) */
    size_t window;  /* udp: send/receive buffers; tcp: socket buffers; 0: defaults */
    uint64_t start_rate; /* udp: this end's sends start at this rate, bytes/s (--rate) */
    int tmo_ms;     /* idle limit of every wait, and the UDP transport's dead-peer time */
    int quiet;      /* no progress lines */
    int resume;     /* keep a failed copy's bytes, and continue from them next time */
    mode_t umask;   /* ours, applied to the mode of every file we store (as cp does) */
    unsigned suites; /* link protection accepted at the handshake (auth.h): aead unless
                      * --crypto none, which both ends must be given */
    int parallel;    /* many files: connections at once (--parallel, default 4) */
    const char *files_from; /* many files: a list of paths, one a line ("-": stdin) */
    const char *manifest;   /* many files: where the JSON manifest goes (NULL: nowhere) */
    int progress_json;      /* many files: progress as JSON lines on stdout */
    ism_auth_key key;
} icp_opts;

/* The reliable-UDP options for o (the server passes cc NULL: it sends with bbr). */
void icp_udp_opts(const icp_opts *o, ism_udp_opts *u);

int icp_serve(const char *dir, const char *host, int port, const icp_opts *o);
/* Many files (batch.c): directories (recursively) and files given or listed, put under
 * remote, several connections at once, largest files first, small files pipelined. */
int icp_put_many(char **locals, int n, const char *hostport, const char *remote,
                 const icp_opts *o);
/* Many files from the server (batch.c, getmany.h): the directory (or the files matching
 * the glob) remote, listed by the server and fetched into local, as a put does it. */
int icp_get_many(const char *hostport, const char *remote, const char *local, const icp_opts *o);
int icp_put(const char *local, const char *hostport, const char *remote, const icp_opts *o);
/* One file; ICP_GET_ISDIR (nothing written, nothing said) when remote is a directory,
 * which icp_get_many fetches instead. */
#define ICP_GET_ISDIR 3
int icp_get(const char *hostport, const char *remote, const char *local, const icp_opts *o);

/* Shared by the one-file and the many-file clients (client.c). */
/* The server's answer to a request: 0 accepted (r filled); 1 refused with the stream
 * intact; -1 the stream broke or the answer was malformed; err says why. */
int icp_rsp_check(icp_stream *s, uint8_t *buf, icp_rsp *r, const char *what, char *err,
                  size_t errlen);
/* One put of fd on an open stream: REQ q, RSP, START (from the server's partial copy when
 * its digest matches the same prefix of ours), the data, RESULT. to gets
 * "hostport:path as the server resolved it". 0 stored and verified (*start: where the
 * data began, sha: the file's digest); 1 refused or failed with the stream intact; -1
 * the stream broke. *moved: the file's bytes handed to the stream (0 when refused).
 * err says why. src names the local file in messages. */
int icp_put_on(icp_stream *s, int fd, const char *src, const char *hostport, const icp_req *q,
               icp_meter *m, uint8_t *buf, char *to, size_t tolen, uint64_t *start,
               uint64_t *moved, uint8_t sha[ICP_SHA], char *err, size_t errlen);
/* Connect to hostport with o's transport and options: 0, or -1 with s->err. */
int icp_connect(icp_stream *s, const char *hostport, const icp_opts *o);

#endif
