/* request.c: the server's side of one authenticated connection (request.h). Nothing
 * from the request is used before it was decoded and checked (proto.c), and a path or
 * name before paths.c accepted it; a request that fails is answered with a refusal and
 * nothing is opened for writing. One log line per request (two for a resumed copy),
 * escaped (log.h). */
#define _GNU_SOURCE
#include "request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "paths.h"
#include "xfer.h"

#define say(...) icp_log("isthmus-copy serve: ", __VA_ARGS__)

static int refuse(icp_stream *s, uint32_t status, const char *path, const char *msg)
{
    icp_rsp r;
    memset(&r, 0, sizeof r);
    r.status = status;
    snprintf(r.path, sizeof r.path, "%s", path);
    snprintf(r.msg, sizeof r.msg, "%s", msg);
    static _Thread_local uint8_t b[ICP_MAX_BODY];
    icp_msg_send(s, ICP_RSP, b, icp_rsp_encode(&r, b));
    say("%s: refused %s: %s: %s", s->peer, path, icp_status_name(status), msg);
    return -1;
}

static int accept_rsp(icp_stream *s, const icp_rsp *r)
{
    static _Thread_local uint8_t b[ICP_MAX_BODY];
    return icp_msg_send(s, ICP_RSP, b, icp_rsp_encode(r, b));
}

static void done_line(icp_stream *s, const char *op, const char *rel, uint64_t n, double t0)
{
    double dt = icp_now_s() - t0;
    say("%s: %s %s: %llu bytes in %.2f s, %.1f Mbit/s over %s, sha256 verified", s->peer, op,
        rel, (unsigned long long)n, dt, dt > 0 ? n * 8 / dt / 1e6 : 0.0, icp_transport(s));
}

/* The client's START: where its data begin (0, or the offset we offered). -1 when the
 * exchange ended instead (logged). */
static int64_t await_start(icp_stream *s, uint8_t *buf, uint64_t offered, const char *rel)
{
    uint32_t len;
    uint64_t start;
    const char *why = NULL;
    int type = icp_msg_recv(s, buf, &len);
    if (type == ICP_START && icp_u64_decode(buf, len, &start, &why) == 0 &&
        (start == 0 || start == offered))
        return (int64_t)start;
    if (type < 0) {
        say("%s: put %s: %s", s->peer, rel, s->err);
    } else if (type == ICP_ERROR) {
        char d[ICP_MAX_MSG + 64];
        icp_describe_error(buf, len, d, sizeof d);
        say("%s: put %s: the client gave up: %s", s->peer, rel, d);
    } else {
        icp_send_error(s, ICP_S_PROTO, "expected START with 0 or the offered offset");
        say("%s: put %s: a malformed START", s->peer, rel);
    }
    return -1;
}

static int do_put(icp_stream *s, int root, mode_t umask, const icp_req *q, const char *path,
                  int dir_hint, uint8_t *buf)
{
    char msg[ICP_MAX_MSG], err[1400];
    icp_target t;
    const char *bad = icp_name_problem(q->name);
    if (bad) {
        snprintf(msg, sizeof msg, "the source's file name %s", bad);
        return refuse(s, ICP_S_PATH, q->path, msg);
    }
    uint64_t have = 0;
    int st = icp_target_resolve(root, path, dir_hint, q->name, 1, &t, msg, sizeof msg);
    if (st == ICP_OK)
        st = icp_target_open_tmp(&t, q->flags & ICP_F_RESUME, q->size, &have, msg, sizeof msg);
    if (st != ICP_OK) {
        icp_target_close(&t);
        return refuse(s, (uint32_t)st, q->path, msg);
    }
    icp_rsp r;
    memset(&r, 0, sizeof r);
    snprintf(r.path, sizeof r.path, "%s", t.rel);
    if (have && icp_sha_prefix(t.fd, have, buf, r.sha) == 0)
        r.offset = have; /* offered: the client decides by comparing digests */
    double t0 = icp_now_s();
    icp_meter m;
    icp_meter_start(&m, q->size, 1);
    uint8_t sha[ICP_SHA];
    int64_t start = -1;
    if (accept_rsp(s, &r) != 0)
        say("%s: put %s: %s", s->peer, t.rel, s->err);
    else
        start = await_start(s, buf, r.offset, t.rel);
    if (start < 0) {
        icp_target_close(&t);
        return -1;
    }
    st = icp_recv_file(s, t.fd, q->size, (uint64_t)start, &m, buf, sha, err, sizeof err);
    if (st < 0) {
        say("%s: put %s failed, %s: %s", s->peer, t.rel,
            t.keep ? "the partial file is kept for --resume" : "nothing stored", err);
        icp_target_close(&t);
        return -1;
    }
    if (st != ICP_OK)
        t.keep = 0; /* its bytes are wrong or incomplete: never resume from them */
    else
        st = icp_target_commit(&t, q->mode, umask, q->mtime, err, sizeof err);
    icp_target_close(&t);
    if (icp_result_send(s, (uint32_t)st, sha, st == ICP_OK ? "" : err) != 0) {
        say("%s: put %s: sending the result: %s", s->peer, t.rel, s->err);
        return -1;
    }
    if (st != ICP_OK) {
        say("%s: put %s failed, nothing stored: %s", s->peer, t.rel, err);
        return -1;
    }
    if (start > 0)
        say("%s: put %s resumed at byte %lld", s->peer, t.rel, (long long)start);
    done_line(s, "put", t.rel, q->size - (uint64_t)start, t0);
    return 0;
}

static int do_get(icp_stream *s, int root, const icp_req *q, const char *path, uint8_t *buf)
{
    char err[1400];
    if (!path[0])
        return refuse(s, ICP_S_TYPE, q->path, "give the path of a file");
    int fd = icp_open_beneath(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        snprintf(err, sizeof err, "%.300s: %s", path,
                 e == EXDEV || e == ELOOP ? "leaves the served directory through a symbolic link"
                                          : strerror(e));
        return refuse(s, e == EXDEV || e == ELOOP ? ICP_S_PATH : e == ENOENT ? ICP_S_NOENT
                                                             : ICP_S_IO, q->path, err);
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(s, ICP_S_TYPE, q->path, "not a regular file");
    }
    icp_rsp r;
    memset(&r, 0, sizeof r);
    r.size = (uint64_t)st.st_size;
    r.mode = st.st_mode & 0777;
    r.mtime = st.st_mtim.tv_sec;
    snprintf(r.path, sizeof r.path, "%s", path);
    double t0 = icp_now_s();
    icp_meter m;
    icp_meter_start(&m, r.size, 1);
    uint8_t sha[ICP_SHA];
    icp_result res;
    uint8_t h[ICP_SHA];
    if ((q->flags & ICP_F_RESUME) && q->have && q->have <= r.size &&
        icp_sha_prefix(fd, q->have, buf, h) == 0 && memcmp(h, q->have_sha, ICP_SHA) == 0)
        r.offset = q->have;
    int rc = accept_rsp(s, &r);
    if (rc == 0)
        rc = icp_send_file(s, fd, r.size, r.offset, &m, buf, sha, err, sizeof err);
    else
        snprintf(err, sizeof err, "%s", s->err);
    close(fd);
    if (rc == 0)
        rc = icp_result_recv(s, buf, &res, err, sizeof err);
    if (rc == 0 && res.status != ICP_OK) {
        snprintf(err, sizeof err, "%s: %s", icp_status_name(res.status), res.msg);
        rc = -1;
    } else if (rc == 0 && memcmp(res.sha, sha, ICP_SHA) != 0) {
        snprintf(err, sizeof err, "the client's SHA-256 differs from ours");
        rc = -1;
    }
    if (rc != 0) {
        say("%s: get %s failed: %s", s->peer, path, err);
        return -1;
    }
    if (r.offset)
        say("%s: get %s resumed at byte %llu", s->peer, path, (unsigned long long)r.offset);
    done_line(s, "get", path, r.size - r.offset, t0);
    return 0;
}

int icp_serve_request(icp_stream *s, int root, mode_t umask, uint8_t *buf)
{
    uint32_t len;
    int type = icp_msg_recv(s, buf, &len);
    icp_req q;
    const char *why = NULL;
    char path[ICP_MAX_PATH + 1];
    int dir_hint = 0, rc = -1;
    if (type < 0) {
        say("%s", s->err);
    } else if (type != ICP_REQ || icp_req_decode(buf, len, &q, &why) != 0) {
        char m[300];
        snprintf(m, sizeof m, "expected a request: %s", type != ICP_REQ ? "another message" : why);
        icp_send_error(s, ICP_S_PROTO, m);
        say("%s: %s", s->peer, m);
    } else if (icp_path_normalize(q.path, path, sizeof path, &dir_hint, &why) != 0) {
        refuse(s, ICP_S_PATH, q.path, why);
        rc = 0; /* a refusal is a complete exchange: close politely */
    } else {
        rc = q.op == ICP_PUT ? do_put(s, root, umask, &q, path, dir_hint, buf)
                             : do_get(s, root, &q, path, buf);
        if (rc != 0 && !s->err[0])
            rc = 0; /* refused or failed with the stream intact: the peer has our answer */
    }
    return rc;
}
