/* conn.c: the client side of a probe connection: TCP connect (with the window and the
 * congestion control set before the handshake), the job-secret handshake, the HELLO. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "sock.h"

int64_t lp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int prep(int fd, void *arg)
{
    const lp_opts *o = arg;
    if (o->window) {
        int w = (int)o->window;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &w, sizeof w) ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &w, sizeof w))
            return -1;
    }
    if (o->cc[0] && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->cc, (socklen_t)strlen(o->cc)))
        return -1;
    return 0;
}

int lp_connect(const lp_opts *o, const lp_hello *h, char *err, size_t errlen)
{
    int fd = ism_sock_connect_prep(o->host, o->port, 10000, prep, (void *)o, err, errlen);
    if (fd < 0)
        return -1;
    ism_auth_id self = {0, 0}, them;
    if (ism_auth_client(fd, &o->key, self, &them, 10000, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    uint8_t buf[LP_HELLO_SIZE];
    lp_hello_encode(h, buf);
    if (ism_sock_write_full(fd, buf, sizeof buf, ism_now_ms() + 10000, NULL) != 0) {
        snprintf(err, errlen, "%s:%d closed the connection after the handshake", o->host, o->port);
        close(fd);
        return -1;
    }
    ism_sock_set_nodelay(fd, 1);
    return fd;
}
