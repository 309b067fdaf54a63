/* client.c: `isthmus-copy put` and `get`: one file to or from a server, checked end to
 * end with SHA-256. A get writes a temporary file next to the target and renames it only
 * after the digest matched; an error, SIGINT, SIGTERM or SIGHUP removes it. The summary
 * (bytes, seconds, Mbit/s, transport) is one line on stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copy.h"
#include "log.h"
#include "paths.h"
#include "stream.h"
#include "xfer.h"

void icp_udp_opts(const icp_opts *o, ism_udp_opts *u)
{
    ism_udp_opts_default(u);
    if (o->cc && o->udp)
        u->cc = o->cc;
    if (o->window)
        u->sndbuf = u->rcvbuf = o->window;
    u->dead_ms = o->tmo_ms;
    u->start_rate = o->start_rate;
    u->confirm_later = 1; /* the request follows the first probe: a round trip sooner */
    u->suites = o->suites;
    u->purpose = "copy-udp";
}

/* Messages quote the server's words and names: escaped like the server's log (log.h). */
__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    icp_vlog("isthmus-copy: ", fmt, ap);
    va_end(ap);
    return 1;
}

int icp_connect(icp_stream *s, const char *hostport, const icp_opts *o)
{
    ism_udp_opts uo;
    icp_udp_opts(o, &uo);
    return icp_stream_connect(s, hostport, o->udp, &o->key, &uo, o->window, o->udp ? NULL : o->cc,
                              o->tmo_ms);
}

static int connect_to(icp_stream *s, const char *hostport, const icp_opts *o)
{
    if (icp_connect(s, hostport, o) != 0)
        return fail("connecting to %s: %s", hostport, s->err);
    return 0;
}

/* The server's answer to our request: 0 with r filled and accepted; 1 refused with the
 * stream intact; -1 the stream broke or the answer was malformed. err says why. */
int icp_rsp_check(icp_stream *s, uint8_t *buf, icp_rsp *r, const char *what, char *err,
                  size_t errlen)
{
    uint32_t len;
    const char *why = NULL;
    char m[ICP_MAX_MSG + 100];
    int type = icp_msg_recv(s, buf, &len);
    if (type < 0) {
        snprintf(err, errlen, "%s", s->err);
        return -1;
    }
    if (type == ICP_ERROR) {
        icp_describe_error(buf, len, m, sizeof m);
        snprintf(err, errlen, "%s: %s", s->peer, m);
        return -1;
    }
    if (type != ICP_RSP || icp_rsp_decode(buf, len, r, &why) != 0) {
        snprintf(err, errlen, "%s sent a malformed response: %s", s->peer,
                 why ? why : "another message");
        return -1;
    }
    if (r->status != ICP_OK) {
        snprintf(err, errlen, "%s refused to %s: %s: %s", s->peer, what,
                 icp_status_name(r->status), r->msg);
        return 1;
    }
    return 0;
}

/* The summary line, after the connection closed (dt: from the request's acceptance to
 * the verified result). */
static void summary(const char *op, const char *from, const char *to, uint64_t n,
                    uint64_t resumed, double dt, const char *transport)
{
    uint64_t moved = n - resumed;
    printf("%s %s -> %s: %llu bytes in %.2f s, %.1f Mbit/s over %s", op, from, to,
           (unsigned long long)moved, dt, dt > 0 ? moved * 8 / dt / 1e6 : 0.0, transport);
    if (resumed)
        printf(", resumed at byte %llu of %llu", (unsigned long long)resumed, (unsigned long long)n);
    printf(", sha256 verified\n");
    fflush(stdout);
}

int icp_put_on(icp_stream *s, int fd, const char *src, const char *hostport, const icp_req *q,
               icp_meter *m, uint8_t *buf, char *to, size_t tolen, uint64_t *start,
               uint64_t *moved, uint8_t sha[ICP_SHA], char *err, size_t errlen)
{
    *moved = 0;
    icp_rsp r;
    icp_result res;
    char e2[ICP_MAX_MSG + ICP_MAX_PATH + 300];
    int resume = (q->flags & ICP_F_RESUME) != 0;
    s->err[0] = 0;
    if (icp_msg_send(s, ICP_REQ, buf, icp_req_encode(q, buf)) != 0) {
        snprintf(err, errlen, "%s", s->err);
        return -1;
    }
    int rc = icp_rsp_check(s, buf, &r, "store the file", err, errlen);
    if (rc != 0)
        return rc;
    snprintf(to, tolen, "%s:%s", hostport, r.path);
    /* the server's partial copy is used only if it is the start of this very file */
    uint8_t h[ICP_SHA];
    *start = 0;
    if (r.offset && r.offset <= q->size && icp_sha_prefix(fd, r.offset, buf, h) == 0 &&
        memcmp(h, r.sha, ICP_SHA) == 0)
        *start = r.offset;
    else if (r.offset && !m->quiet)
        fprintf(stderr, "isthmus-copy: %s holds %llu bytes that differ from %s: starting over\n",
                to, (unsigned long long)r.offset, src);
    uint8_t sb[8];
    if (icp_msg_send(s, ICP_START, sb, icp_u64_encode(*start, sb)) != 0) {
        snprintf(err, errlen, "%s", s->err);
        return -1;
    }
    uint64_t s0 = s->sent, most = q->size - *start;
    int sf = icp_send_file(s, fd, q->size, *start, m, buf, sha, e2, sizeof e2);
    *moved = s->sent - s0 < most ? s->sent - s0 : most; /* the messages' headers aside */
    if (sf != 0) {
        snprintf(err, errlen, "%s: %s (nothing was stored%s)", to, e2,
                 resume ? "; the server keeps what arrived for --resume" : "");
        return s->err[0] ? -1 : 1;
    }
    icp_await_answer(s, m, q->size);
    if (icp_result_recv(s, buf, &res, e2, sizeof e2) != 0) {
        snprintf(err, errlen, "%s: %s", to, e2);
        return -1;
    }
    if (res.status != ICP_OK) {
        snprintf(err, errlen, "%s: %s: %s (nothing was stored)", to, icp_status_name(res.status),
                 res.msg);
        return 1;
    }
    if (memcmp(res.sha, sha, ICP_SHA) != 0) {
        snprintf(err, errlen, "%s: the server's SHA-256 differs from ours", to);
        return -1;
    }
    return 0;
}

static const char *base_name(const char *p, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", p);
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = 0;
    const char *s = strrchr(out, '/');
    return s ? s + 1 : out;
}

int icp_put(const char *local, const char *hostport, const char *remote, const icp_opts *o)
{
    int fd = open(local, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return fail("%s: %s", local, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail("%s: %s", local, "not a regular file");
    }
    char nb[ICP_MAX_PATH + 1];
    icp_req q;
    memset(&q, 0, sizeof q);
    q.op = ICP_PUT;
    q.flags = o->resume ? ICP_F_RESUME : 0;
    q.size = (uint64_t)st.st_size;
    q.mode = st.st_mode & 0777;
    q.mtime = st.st_mtim.tv_sec;
    const char *name = base_name(local, nb, sizeof nb);
    if (strlen(name) > ICP_MAX_NAME || strlen(remote) > ICP_MAX_PATH) {
        close(fd);
        return fail("%s: %s", local, "file name or remote path too long");
    }
    snprintf(q.name, sizeof q.name, "%s", name);
    snprintf(q.path, sizeof q.path, "%s", remote);
    uint8_t *buf = malloc(ICP_MAX_DATA);
    icp_stream s;
    if (!buf || connect_to(&s, hostport, o) != 0) {
        free(buf);
        close(fd);
        return 1;
    }
    int rc = 1;
    char err[ICP_MAX_MSG + ICP_MAX_PATH + 400], to[ICP_MAX_PATH + 300];
    uint8_t sha[ICP_SHA];
    uint64_t start = 0;
    icp_meter m;
    icp_meter_start(&m, q.size, o->quiet);
    snprintf(to, sizeof to, "%s:%s", hostport, remote);
    double t0 = icp_now_s();
    uint64_t moved;
    if (icp_put_on(&s, fd, local, hostport, &q, &m, buf, to, sizeof to, &start, &moved, sha, err,
                   sizeof err) != 0) {
        fail("%s%s", err, "");
        goto out;
    }
    icp_meter_end(&m);
    rc = 0;
    double dt = icp_now_s() - t0;
    const char *tr = icp_transport(&s);
    icp_close(&s); /* the file is in place: a close that fails changes nothing */
    summary("put", local, to, q.size, start, dt, tr);
out:
    if (rc)
        icp_abort(&s);
    free(buf);
    close(fd);
    return rc;
}

/* A get's temporary file, removed if a signal ends the program. */
static icp_target *volatile g_tmp;

static void on_signal(int sig)
{
    icp_target *t = g_tmp;
    if (t && t->tmp[0] && !t->keep)
        unlinkat(t->dirfd, t->tmp, 0);
    signal(sig, SIG_DFL);
    raise(sig);
}

int icp_get(const char *hostport, const char *remote, const char *local, const icp_opts *o)
{
    char nb[ICP_MAX_PATH + 1], msg[ICP_MAX_MSG];
    const char *srcname = base_name(remote, nb, sizeof nb);
    const char *bad = icp_name_problem(srcname);
    if (bad)
        return fail("%s: give the path of a file on the server (its name %s)", remote, bad);
    size_t ll = strlen(local);
    int dir_hint = ll == 0 || local[ll - 1] == '/';
    icp_target t;
    if (icp_target_resolve(AT_FDCWD, local, dir_hint, srcname, 0, &t, msg, sizeof msg) != ICP_OK)
        return fail("%s%s", msg, "");
    uint8_t *buf = malloc(ICP_MAX_DATA);
    icp_req q;
    memset(&q, 0, sizeof q);
    q.op = ICP_GET;
    q.flags = o->resume ? ICP_F_RESUME : 0;
    if (!buf) {
        icp_target_close(&t);
        return fail("%s%s", "out of memory", "");
    }
    if (icp_target_open_tmp(&t, o->resume, ~0ull >> 2, &q.have, msg, sizeof msg) != ICP_OK) {
        free(buf);
        icp_target_close(&t);
        return fail("%s%s", msg, "");
    }
    g_tmp = &t;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (q.have && icp_sha_prefix(t.fd, q.have, buf, q.have_sha) != 0)
        q.have = 0;
    icp_stream s;
    if (connect_to(&s, hostport, o) != 0) {
        g_tmp = NULL;
        free(buf);
        icp_target_close(&t);
        return 1;
    }
    int rc = 1;
    icp_rsp r;
    snprintf(q.path, sizeof q.path, "%s", remote);
    char err[1400], from[ICP_MAX_PATH + 300];
    snprintf(from, sizeof from, "%s:%s", hostport, remote);
    uint8_t sha[ICP_SHA];
    if (strlen(remote) > ICP_MAX_PATH) {
        fail("%s: %s", remote, "path too long");
        goto out;
    }
    if (icp_msg_send(&s, ICP_REQ, buf, icp_req_encode(&q, buf)) != 0) {
        fail("%s%s", s.err, "");
        goto out;
    }
    char e2[ICP_MAX_MSG + ICP_MAX_PATH + 300];
    int rr = icp_rsp_check(&s, buf, &r, "send the file", e2, sizeof e2);
    if (rr > 0 && r.status == ICP_S_ISDIR) {
        rc = ICP_GET_ISDIR; /* the caller lists it instead */
        if (icp_close(&s) != 0)
            icp_abort(&s);
        goto done;
    }
    if (rr != 0) {
        fail("%s%s", e2, "");
        goto out;
    }
    if (r.offset && r.offset != q.have) {
        fail("%s sent a response that resumes at a byte we did not offer", s.peer);
        goto out;
    }
    double t0 = icp_now_s();
    icp_meter m;
    icp_meter_start(&m, r.size, o->quiet);
    int st = icp_recv_file(&s, t.fd, r.size, r.offset, &m, buf, sha, err, sizeof err);
    icp_meter_end(&m);
    if (st < 0) {
        fail("%s: %s (nothing was written%s)", from, err,
             t.keep ? "; what arrived is kept for --resume" : "");
        goto out;
    }
    if (st != ICP_OK)
        t.keep = 0; /* wrong or incomplete bytes: never resume from them */
    else
        st = icp_target_commit(&t, r.mode, o->umask, r.mtime, err, sizeof err);
    if (icp_result_send(&s, (uint32_t)st, sha, st == ICP_OK ? "" : err) != 0 && st == ICP_OK) {
        /* the file is complete and verified; the server just does not hear it */
        fprintf(stderr, "isthmus-copy: warning: %s\n", s.err);
    }
    if (st != ICP_OK) {
        fail("%s: %s (nothing was written)", from, err);
        goto out;
    }
    rc = 0;
    double dt = icp_now_s() - t0;
    const char *tr = icp_transport(&s);
    icp_close(&s);
    summary("get", from, t.rel, r.size, r.offset, dt, tr);
out:
    if (rc)
        icp_abort(&s);
done:
    g_tmp = NULL;
    icp_target_close(&t);
    free(buf);
    return rc;
}
