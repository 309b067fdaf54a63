/* sock.h: TCP plumbing shared by the gateways' WAN links and their handshake.
 *
 * Owns address parsing and resolution (IPv4 only), listening and connecting with
 * actionable error messages, socket options, and deadline-bounded full reads/writes.
 * Deadlines are absolute times on the monotonic clock of ism_now_ms(), so one budget
 * can span several calls (e.g. a whole handshake).
 */
#ifndef ISM_WAN_SOCK_H
#define ISM_WAN_SOCK_H

#include <stddef.h>
#include <stdint.h>

struct sockaddr_in;

/* Return codes of ism_sock_read_full() / ism_sock_write_full(). */
enum {
    ISM_SOCK_EIO = -1,      /* system error; errno says which */
    ISM_SOCK_ECLOSED = -2,  /* peer closed (EOF or reset) before all bytes moved */
    ISM_SOCK_ETIMEDOUT = -3 /* deadline passed */
};

/* Milliseconds on CLOCK_MONOTONIC (not wall time, so immune to clock steps). */
int64_t ism_now_ms(void);

/* Split "host:port". The host must be non-empty, a dotted-quad IPv4 address or a
 * plausible host name (letters, digits, '-', '_', '.'); IPv6 literals are refused.
 * Port must be decimal 1..65535. Does not touch DNS: names are resolved by
 * ism_sock_resolve4() when used. Returns 0, or -1 with a reason in err. */
int ism_sock_parse_hostport(const char *s, char *host, size_t hostlen, int *port, char *err,
                            size_t errlen);

/* Resolve host (name or IPv4 address) with getaddrinfo() to the first IPv4 address.
 * host NULL, "", "*" or "0.0.0.0" means INADDR_ANY. Returns 0, or -1 with err. */
int ism_sock_resolve4(const char *host, int port, struct sockaddr_in *out, char *err,
                      size_t errlen);

/* Bound, listening, close-on-exec TCP socket with SO_REUSEADDR (blocking mode).
 * port 0 picks an ephemeral port (see ism_sock_local_port()). Returns the fd, or -1
 * with err naming the address and what to do about it. */
int ism_sock_listen(const char *host, int port, int backlog, char *err, size_t errlen);

/* Connect to host:port, retrying while the peer refuses (it may not be listening yet)
 * until timeout_ms (> 0) has passed. Returns a connected, close-on-exec fd in
 * blocking mode, or -1 with err naming the address and the last failure. */
int ism_sock_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen);

/* Like ism_sock_connect(), calling prep(fd, arg) on each new socket before connect() (to
 * set options that must precede the handshake, such as buffer sizes); a non-zero return
 * from prep fails the attempt with errno as prep left it. prep may be NULL. */
int ism_sock_connect_prep(const char *host, int port, int timeout_ms,
                          int (*prep)(int fd, void *arg), void *arg, char *err, size_t errlen);

/* Non-blocking connect, for event loops: one attempt on a non-blocking close-on-exec
 * socket (prep as above). Returns the fd, connecting or connected, or -1 with errno.
 * Once the fd polls writable, ism_sock_connect_result() says 0 (connected), EINPROGRESS
 * (not yet), or the errno of the failure; a connection to itself (loopback simultaneous
 * open) counts as ECONNREFUSED. */
int ism_sock_connect_start(const struct sockaddr_in *sa, int (*prep)(int fd, void *arg), void *arg);
int ism_sock_connect_result(int fd);

/* Socket options. Return 0, or -1 with errno set. For set_buffers a size <= 0 leaves
 * that direction alone; the kernel may round or cap the sizes. */
int ism_sock_set_nonblock(int fd, int on);
int ism_sock_set_nodelay(int fd, int on);
int ism_sock_set_buffers(int fd, int sndbuf, int rcvbuf);

/* Move exactly n bytes, looping over partial transfers and EINTR, waiting with poll()
 * until deadline_ms (ism_now_ms() time; negative = no deadline). Work on blocking and
 * non-blocking sockets alike and never raise SIGPIPE. Return 0 or an ISM_SOCK_E* code;
 * *done (may be NULL) receives the bytes moved either way. */
int ism_sock_read_full(int fd, void *buf, size_t n, int64_t deadline_ms, size_t *done);
int ism_sock_write_full(int fd, const void *buf, size_t n, int64_t deadline_ms, size_t *done);

/* Local port of a bound socket, or -1 with errno set. */
int ism_sock_local_port(int fd);

/* "a.b.c.d:port" of the connected peer for messages; "(local socket)" for non-IP ones
 * and "unknown peer" when it cannot be determined. Always NUL-terminates buf. */
void ism_sock_peer_name(int fd, char *buf, size_t len);

#endif
