/* server.c: `isthmus-copy serve DIR`: accepts connections and authenticates them, one
 * thread per connection, then hands each authenticated one to request.c. Nothing is
 * read from a connection but the preamble and the handshake before it has proven the
 * job secret.
 *
 * Strangers are kept apart from the copies: a connection that has not authenticated
 * yet counts in a budget of its own (ICP_MAX_PENDING, admit.h: a new connection always
 * gets in, displacing the oldest pending one of the address that holds the most), and
 * has ISM_ADMIT_PREAUTH_MS from accept for its preamble and handshake, whatever
 * --timeout says. Only authenticated connections count against ICP_MAX_XFERS; one
 * above it is told `busy`. One log line per connection, escaped (log.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admit.h"
#include "copy.h"
#include "log.h"
#include "request.h"
#include "sock.h"
#include "stream.h"
#include "xfer.h"

#define ICP_MAX_XFERS 16  /* authenticated connections at once */
#define ICP_MAX_PENDING 8 /* connections still authenticating at once */

#define say(...) icp_log("isthmus-copy serve: ", __VA_ARGS__)

typedef struct server {
    int root;
    const icp_opts *o;
    ism_admit pending;
    atomic_int xfers;
} server;

typedef struct conn {
    server *sv;
    int fd;
    ism_admit_entry adm;
} conn;

/* An authenticated connection: a copy, if a slot is free. */
static void transfer(server *sv, icp_stream *s)
{
    if (atomic_fetch_add(&sv->xfers, 1) >= ICP_MAX_XFERS) {
        icp_send_error(s, ICP_S_BUSY, "the server is running its limit of 16 copies; try again "
                                      "when one has ended");
        say("%s: refused: already %d copies running", s->peer, ICP_MAX_XFERS);
        icp_close(s);
    } else {
        uint8_t *buf = malloc(ICP_MAX_DATA);
        int rc = -1;
        if (buf)
            rc = icp_serve_request(s, sv->root, sv->o->umask, buf);
        else
            say("%s: no memory for the copy's buffer", s->peer);
        free(buf);
        if (rc == 0)
            icp_close(s);
        else
            icp_abort(s);
    }
    atomic_fetch_sub(&sv->xfers, 1);
}

static void *serve_one(void *arg)
{
    conn *c = arg;
    server *sv = c->sv;
    const icp_opts *o = sv->o;
    icp_stream s;
    ism_udp_opts uo;
    icp_udp_opts(o, &uo);
    int auth_failed = 0;
    int preauth = o->tmo_ms < ISM_ADMIT_PREAUTH_MS ? o->tmo_ms : ISM_ADMIT_PREAUTH_MS;
    int rc = icp_stream_accept(&s, c->fd, &o->key, &uo, o->window, o->tmo_ms, preauth,
                               &auth_failed);
    int dropped = ism_admit_leave(&sv->pending, &c->adm) != 0; /* before fd is closed */
    if (rc != 0 || s.u)
        close(c->fd); /* over UDP the set-up connection has done its part */
    if (dropped) {
        if (rc == 0)
            icp_abort(&s);
        say("%s: dropped before authenticating: %d connections were authenticating, and this "
            "was the oldest of the address with the most",
            s.peer, ICP_MAX_PENDING);
    } else if (rc != 0) {
        say("%s%s", auth_failed ? "refused a connection: " : "", s.err);
    } else {
        transfer(sv, &s);
    }
    free(c);
    return NULL;
}

int icp_serve(const char *dir, const char *host, int port, const icp_opts *o)
{
    static server sv;
    sv.root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    sv.o = o;
    if (sv.root < 0) {
        fprintf(stderr, "isthmus-copy serve: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    ism_admit_init(&sv.pending, ICP_MAX_PENDING);
    char err[512];
    int lfd = ism_sock_listen(host, port, 64, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "isthmus-copy serve: %s\n", err);
        close(sv.root);
        return 1;
    }
    printf("listening on %s:%d, serving %s over udp and tcp\n", host, ism_sock_local_port(lfd), dir);
    fflush(stdout);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    for (;;) {
        ism_admit_wait_room(&sv.pending);
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
                if (errno == EMFILE || errno == ENFILE)
                    usleep(100000);
                continue;
            }
            fprintf(stderr, "isthmus-copy serve: accept: %s\n", strerror(errno));
            return 1;
        }
        conn *c = malloc(sizeof *c);
        if (!c) {
            say("no memory for a connection");
            close(fd);
            continue;
        }
        c->sv = &sv;
        c->fd = fd;
        ism_admit_enter(&sv.pending, &c->adm, fd, (struct sockaddr *)&sa, sl);
        pthread_t th;
        int e = pthread_create(&th, &at, serve_one, c);
        if (e != 0) {
            say("no thread for a connection: %s", strerror(e));
            ism_admit_leave(&sv.pending, &c->adm);
            close(fd);
            free(c);
        }
    }
}
