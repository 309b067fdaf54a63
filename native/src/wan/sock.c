/* sock.c: TCP helpers behind sock.h for the gateways' WAN links.
 *
 * Owns turning "host:port" into sockets and every failure along the way into a message
 * that names the address and suggests a fix, plus the deadline-bounded I/O loops the
 * handshake relies on. IPv4 only, matching what site configurations use today.
 */
#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* platforms without it rely on SO_NOSIGPIPE or ignored SIGPIPE */
#endif

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int64_t ism_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline as a poll() timeout: -1 = none, 0 = expired. */
static int remaining_ms(int64_t deadline_ms)
{
    if (deadline_ms < 0)
        return -1;
    int64_t left = deadline_ms - ism_now_ms();
    if (left <= 0)
        return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

static int is_dotted_numeric(const char *h)
{
    for (; *h; h++)
        if (!((*h >= '0' && *h <= '9') || *h == '.'))
            return 0;
    return 1;
}

/* RFC 1123-ish name check (underscore tolerated: some site DNS uses it), done up front
 * so a typo in a config file is reported as such rather than as a DNS failure later. */
static int valid_hostname(const char *h)
{
    size_t total = strlen(h), label = 0;
    if (total == 0 || total > 253)
        return 0;
    char prev = '.';
    for (const char *p = h; *p; p++) {
        char c = *p;
        if (c == '.') {
            if (label == 0 || prev == '-')
                return 0;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '-') {
            if (c == '-' && label == 0)
                return 0;
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
        prev = c;
    }
    return prev != '-';
}

int ism_sock_parse_hostport(const char *s, char *host, size_t hostlen, int *port, char *err,
                            size_t errlen)
{
    if (s == NULL || *s == '\0') {
        set_err(err, errlen, "empty address (expected host:port)");
        return -1;
    }
    if (host == NULL || hostlen == 0 || port == NULL) {
        set_err(err, errlen, "internal error: no buffer for parsing '%.80s'", s);
        return -1;
    }
    const char *colon = strrchr(s, ':');
    if (strchr(s, '[') != NULL || (colon != NULL && strchr(s, ':') != colon)) {
        set_err(err, errlen, "'%.80s': IPv6 addresses are not supported (expected IPv4 host:port)",
                s);
        return -1;
    }
    if (colon == NULL) {
        set_err(err, errlen, "'%.80s' has no port (expected host:port, e.g. 10.0.0.5:41000)", s);
        return -1;
    }
    size_t hlen = (size_t)(colon - s);
    if (hlen == 0) {
        set_err(err, errlen, "'%.80s' has no host before the ':' (expected host:port)", s);
        return -1;
    }
    const char *ps = colon + 1;
    if (*ps == '\0') {
        set_err(err, errlen, "'%.80s' has no port after the ':' (expected host:port)", s);
        return -1;
    }
    long pv = 0;
    for (const char *p = ps; *p; p++) {
        if (*p < '0' || *p > '9') {
            set_err(err, errlen, "'%.80s': port '%.16s' is not a decimal number", s, ps);
            return -1;
        }
        pv = pv * 10 + (*p - '0');
        if (pv > 65535)
            break;
    }
    if (pv < 1 || pv > 65535) {
        set_err(err, errlen, "'%.80s': port %.16s is out of range 1..65535", s, ps);
        return -1;
    }
    if (hlen >= hostlen) {
        set_err(err, errlen, "'%.80s': host part is too long (%zu characters, at most %zu)", s,
                hlen, hostlen - 1);
        return -1;
    }
    char tmp[256];
    if (hlen >= sizeof tmp) {
        set_err(err, errlen, "'%.80s': host name is too long", s);
        return -1;
    }
    memcpy(tmp, s, hlen);
    tmp[hlen] = '\0';
    if (is_dotted_numeric(tmp)) {
        struct in_addr a;
        if (inet_pton(AF_INET, tmp, &a) != 1) {
            set_err(err, errlen, "'%.80s': '%s' is not a valid IPv4 address", s, tmp);
            return -1;
        }
    } else if (!valid_hostname(tmp)) {
        set_err(err, errlen,
                "'%.80s': '%.64s' is not a valid host name (letters, digits, '-', '.' only)", s,
                tmp);
        return -1;
    }
    memcpy(host, tmp, hlen + 1);
    *port = (int)pv;
    return 0;
}

static int is_any_host(const char *host)
{
    return host == NULL || *host == '\0' || strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0;
}

int ism_sock_resolve4(const char *host, int port, struct sockaddr_in *out, char *err,
                      size_t errlen)
{
    if (port < 0 || port > 65535) {
        set_err(err, errlen, "port %d is out of range 0..65535", port);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)port);
    if (is_any_host(host)) {
        out->sin_addr.s_addr = htonl(INADDR_ANY);
        return 0;
    }
    /* Numeric addresses skip the resolver so they never stall on an unreachable DNS. */
    if (inet_pton(AF_INET, host, &out->sin_addr) == 1)
        return 0;
    if (is_dotted_numeric(host)) {
        set_err(err, errlen, "'%.200s' is not a valid IPv4 address", host);
        return -1;
    }

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        set_err(err, errlen, "cannot resolve host '%.200s' to an IPv4 address: %s", host,
                rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -1;
    }
    if (res == NULL || res->ai_addr == NULL || res->ai_family != AF_INET) {
        if (res)
            freeaddrinfo(res);
        set_err(err, errlen, "cannot resolve host '%.200s': no IPv4 address", host);
        return -1;
    }
    out->sin_addr = ((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return 0;
}

static const char *host_label(const char *host)
{
    return is_any_host(host) ? "0.0.0.0" : host;
}

int ism_sock_listen(const char *host, int port, int backlog, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    char why[256];
    if (ism_sock_resolve4(host, port, &sa, why, sizeof why) != 0) {
        set_err(err, errlen, "cannot listen on %.200s:%d: %s", host_label(host), port, why);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        set_err(err, errlen, "cannot listen on %.200s:%d: socket: %s", host_label(host), port,
                strerror(errno));
        return -1;
    }
    /* Lets a restarted gateway rebind while old connections sit in TIME_WAIT; on Linux it
     * still refuses to share a port with a live listener, which is what we want. */
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
        set_err(err, errlen, "cannot listen on %.200s:%d: setsockopt(SO_REUSEADDR): %s",
                host_label(host), port, strerror(errno));
        close(fd);
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        const char *hint = "";
        if (e == EADDRINUSE)
            hint = " (another isthmus job or program holds this port; choose another with "
                   "--port or free it)";
        else if (e == EACCES)
            hint = " (ports below 1024 need privileges; choose a higher --port)";
        else if (e == EADDRNOTAVAIL)
            hint = " (that address does not belong to this host; check the gateway address)";
        set_err(err, errlen, "cannot listen on %.200s:%d: %s%s", host_label(host), port,
                e == EADDRINUSE ? "address already in use" : strerror(e), hint);
        close(fd);
        return -1;
    }
    if (listen(fd, backlog > 0 ? backlog : SOMAXCONN) != 0) {
        int e = errno;
        set_err(err, errlen, "cannot listen on %.200s:%d: %s%s", host_label(host), port,
                e == EADDRINUSE ? "address already in use" : strerror(e),
                e == EADDRINUSE ? " (another isthmus job or program holds this port; choose "
                                  "another with --port or free it)"
                                : "");
        close(fd);
        return -1;
    }
    return fd;
}

static int retryable_connect_error(int e)
{
    /* A peer gateway that has not started listening yet refuses; keep knocking. */
    return e == ECONNREFUSED || e == ECONNRESET || e == ECONNABORTED;
}

/* On loopback, a connect to an unused ephemeral port can "succeed" by connecting the
 * socket to itself (TCP simultaneous open) if the kernel picks that same port as the
 * source; treat it as a refusal or the retry loop would eventually hand back a bogus link. */
static int connected_to_self(int fd)
{
    struct sockaddr_in a, b;
    socklen_t la = sizeof a, lb = sizeof b;
    if (getsockname(fd, (struct sockaddr *)&a, &la) != 0 ||
        getpeername(fd, (struct sockaddr *)&b, &lb) != 0)
        return 0;
    return a.sin_family == AF_INET && b.sin_family == AF_INET && a.sin_port == b.sin_port &&
           a.sin_addr.s_addr == b.sin_addr.s_addr;
}

int ism_sock_connect_start(const struct sockaddr_in *sa, int (*prep)(int fd, void *arg), void *arg)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (prep && prep(fd, arg) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int rc;
    do
        rc = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
    while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int ism_sock_connect_result(int fd)
{
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
        return errno;
    if (soerr != 0)
        return soerr;
    struct sockaddr_in a;
    socklen_t la = sizeof a;
    if (getpeername(fd, (struct sockaddr *)&a, &la) != 0)
        return errno == ENOTCONN ? EINPROGRESS : errno;
    return connected_to_self(fd) ? ECONNREFUSED : 0;
}

/* One non-blocking attempt; returns the fd, -1 with *e set, or -2 on deadline. */
static int connect_once(const struct sockaddr_in *sa, int64_t deadline, int *e,
                        int (*prep)(int, void *), void *arg)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *e = errno;
        return -1;
    }
    if (prep && prep(fd, arg) != 0) {
        *e = errno;
        close(fd);
        return -1;
    }
    int rc;
    do
        rc = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
    while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno != EINPROGRESS) {
        *e = errno;
        close(fd);
        return -1;
    }
    if (rc != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        for (;;) {
            int t = remaining_ms(deadline);
            int pr = poll(&p, 1, t);
            if (pr > 0)
                break;
            if (pr == 0) {
                *e = ETIMEDOUT;
                close(fd);
                return -2;
            }
            if (errno != EINTR) {
                *e = errno;
                close(fd);
                return -1;
            }
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            soerr = errno;
        if (soerr != 0) {
            *e = soerr;
            close(fd);
            return -1;
        }
    }
    if (connected_to_self(fd)) {
        *e = ECONNREFUSED;
        close(fd);
        return -1;
    }
    if (ism_sock_set_nonblock(fd, 0) != 0) {
        *e = errno;
        close(fd);
        return -1;
    }
    return fd;
}

int ism_sock_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    return ism_sock_connect_prep(host, port, timeout_ms, NULL, NULL, err, errlen);
}

int ism_sock_connect_prep(const char *host, int port, int timeout_ms,
                          int (*prep)(int fd, void *arg), void *arg, char *err, size_t errlen)
{
    const char *h = host ? host : "(null)";
    if (port < 1 || port > 65535) {
        set_err(err, errlen, "cannot connect to %.200s:%d: port out of range 1..65535", h, port);
        return -1;
    }
    if (timeout_ms <= 0) {
        set_err(err, errlen, "cannot connect to %.200s:%d: timeout must be positive (got %d ms)",
                h, port, timeout_ms);
        return -1;
    }
    if (is_any_host(host)) {
        set_err(err, errlen, "cannot connect to %.200s:%d: not a destination address", h, port);
        return -1;
    }
    struct sockaddr_in sa;
    char why[256];
    if (ism_sock_resolve4(host, port, &sa, why, sizeof why) != 0) {
        set_err(err, errlen, "cannot connect to %.200s:%d: %s", h, port, why);
        return -1;
    }
    int64_t deadline = ism_now_ms() + timeout_ms;
    int backoff = 20, attempts = 0, e = 0;
    for (;;) {
        attempts++;
        int fd = connect_once(&sa, deadline, &e, prep, arg);
        if (fd >= 0)
            return fd;
        if (fd == -2) {
            set_err(err, errlen,
                    "cannot connect to %.200s:%d: no answer within %d ms (host down, wrong "
                    "address, or a firewall dropping the packets?)",
                    h, port, timeout_ms);
            return -1;
        }
        if (!retryable_connect_error(e)) {
            set_err(err, errlen, "cannot connect to %.200s:%d: %s", h, port, strerror(e));
            return -1;
        }
        int left = remaining_ms(deadline);
        if (left <= 0) {
            set_err(err, errlen,
                    "cannot connect to %.200s:%d: %s; kept retrying for %d ms (%d attempts) - "
                    "is the peer gateway running and listening on that port?",
                    h, port, strerror(e), timeout_ms, attempts);
            return -1;
        }
        int nap = backoff < left ? backoff : left;
        struct timespec ts = {.tv_sec = nap / 1000, .tv_nsec = (long)(nap % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        if (backoff < 500)
            backoff *= 2;
    }
}

int ism_sock_set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    int nfl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    if (nfl != fl && fcntl(fd, F_SETFL, nfl) != 0)
        return -1;
    return 0;
}

int ism_sock_set_nodelay(int fd, int on)
{
    int v = on ? 1 : 0;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
}

int ism_sock_set_buffers(int fd, int sndbuf, int rcvbuf)
{
    if (sndbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0)
        return -1;
    if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0)
        return -1;
    return 0;
}

/* Wait for `events`, honouring the deadline across EINTR. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int t = remaining_ms(deadline_ms);
        if (t == 0)
            return ISM_SOCK_ETIMEDOUT;
        int pr = poll(&p, 1, t);
        if (pr > 0)
            return 0; /* includes POLLHUP/POLLERR: the next recv/send reports them */
        if (pr == 0)
            return ISM_SOCK_ETIMEDOUT;
        if (errno != EINTR)
            return ISM_SOCK_EIO;
    }
}

/* MSG_DONTWAIT makes every call non-blocking whatever the fd's mode, so a blocking
 * socket cannot sleep past the deadline inside recv()/send(). */
int ism_sock_read_full(int fd, void *buf, size_t n, int64_t deadline_ms, size_t *done)
{
    uint8_t *p = buf;
    size_t got = 0;
    int rc = 0;
    while (got < n) {
        ssize_t r = recv(fd, p + got, n - got, MSG_DONTWAIT);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0) {
            rc = ISM_SOCK_ECLOSED;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            rc = wait_fd(fd, POLLIN, deadline_ms);
            if (rc != 0)
                break;
            continue;
        }
        rc = (errno == ECONNRESET) ? ISM_SOCK_ECLOSED : ISM_SOCK_EIO;
        break;
    }
    if (done)
        *done = got;
    return rc;
}

int ism_sock_write_full(int fd, const void *buf, size_t n, int64_t deadline_ms, size_t *done)
{
    const uint8_t *p = buf;
    size_t put = 0;
    int rc = 0;
    while (put < n) {
        ssize_t r = send(fd, p + put, n - put, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r >= 0) {
            put += (size_t)r;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            rc = wait_fd(fd, POLLOUT, deadline_ms);
            if (rc != 0)
                break;
            continue;
        }
        rc = (errno == EPIPE || errno == ECONNRESET) ? ISM_SOCK_ECLOSED : ISM_SOCK_EIO;
        break;
    }
    if (done)
        *done = put;
    return rc;
}

int ism_sock_local_port(int fd)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    if (sa.sin_family != AF_INET) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    return ntohs(sa.sin_port);
}

void ism_sock_peer_name(int fd, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(buf, len, "unknown peer");
        return;
    }
    char a[INET6_ADDRSTRLEN];
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a);
        snprintf(buf, len, "%s:%u", a, (unsigned)ntohs(s4->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a);
        snprintf(buf, len, "[%s]:%u", a, (unsigned)ntohs(s6->sin6_port));
    } else {
        snprintf(buf, len, "(local socket)");
    }
}
