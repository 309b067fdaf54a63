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

#include "listing.h"
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

/* A session's tally: its copies are logged once, at its end, and only failures one by
 * one (a session of 10 000 small files would otherwise write 10 000 lines). */
typedef struct tally {
    int session;
    uint64_t files, bytes, unchanged;
    double t0;
} tally;

static _Thread_local tally *g_tally;

static void done_line(icp_stream *s, const char *op, const char *rel, uint64_t n, double t0)
{
    if (g_tally && g_tally->session) {
        g_tally->files++;
        g_tally->bytes += n;
        return;
    }
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

/* An inline put we refused: its data follow anyway; read them (at most the announced
 * size) up to END so that the session can go on. -1 when the stream is not at a request
 * boundary afterwards (s->err says why, or the data were malformed). */
static int drain_inline(icp_stream *s, uint64_t size, uint8_t *buf)
{
    uint64_t got = 0;
    for (;;) {
        uint32_t len;
        int type = icp_msg_recv(s, buf, &len);
        if (type == ICP_END || type == ICP_ERROR)
            return 0; /* ERROR: the client gave up on this file itself */
        if (type != ICP_DATA || len > size - got) {
            if (type >= 0 && !s->err[0])
                snprintf(s->err, sizeof s->err, "%s sent malformed data after a refused request",
                         s->peer);
            return -1;
        }
        got += len;
    }
}

/* The file a put names: with MKDIRS the path is the file itself (its last component
 * the source's name) and missing directories are made; else as cp (paths.h). */
static int put_target(int root, const icp_req *q, const char *path, int dir_hint, icp_target *t,
                      char *msg, size_t msglen)
{
    if (!(q->flags & ICP_F_MKDIRS))
        return icp_target_resolve(root, path, dir_hint, q->name, 1, t, msg, msglen);
    char dir[ICP_MAX_PATH + 1];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *last = slash ? slash + 1 : dir;
    memset(t, 0, sizeof *t);
    t->dirfd = t->fd = -1;
    if (dir_hint || strcmp(last, q->name) != 0) {
        snprintf(msg, msglen, "with directories made on the way, the path must end in the "
                 "file's name ('%.300s')", q->name);
        return ICP_S_PATH;
    }
    if (slash)
        *slash = 0;
    else
        dir[0] = 0;
    int st = icp_mkdirs_beneath(root, dir, msg, msglen);
    return st == ICP_OK ? icp_target_resolve(root, dir, 1, q->name, 1, t, msg, msglen) : st;
}

static int do_put(icp_stream *s, int root, mode_t umask, const icp_req *q, const char *path,
                  int dir_hint, uint8_t *buf)
{
    char msg[ICP_MAX_MSG], err[1400];
    icp_target t;
    int inl = (q->flags & ICP_F_INLINE) != 0;
    const char *bad = icp_name_problem(q->name);
    int st = ICP_S_PATH;
    uint64_t have = 0;
    if (bad) {
        snprintf(msg, sizeof msg, "the source's file name %s", bad);
        memset(&t, 0, sizeof t);
        t.dirfd = t.fd = -1;
    } else {
        st = put_target(root, q, path, dir_hint, &t, msg, sizeof msg);
        if (st == ICP_OK)
            st = icp_target_open_tmp(&t, q->flags & ICP_F_RESUME, q->size, &have, msg, sizeof msg);
    }
    if (st != ICP_OK) {
        icp_target_close(&t);
        refuse(s, (uint32_t)st, q->path, msg);
        if (inl && !s->err[0] && drain_inline(s, q->size, buf) != 0)
            say("%s: put %s: %s", s->peer, q->path, s->err);
        return -1;
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
        start = inl ? 0 : await_start(s, buf, r.offset, t.rel);
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

/* CHECK: is the target already this very file? Answered, never written. */
static int do_check(icp_stream *s, int root, const icp_req *q, const char *path, uint8_t *buf)
{
    icp_rsp r;
    memset(&r, 0, sizeof r);
    snprintf(r.path, sizeof r.path, "%s", path);
    int fd = path[0] ? icp_open_beneath(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY) : -1;
    if (fd < 0 && (errno == EXDEV || errno == ELOOP))
        return refuse(s, ICP_S_PATH, q->path, "leaves the served directory through a symbolic link");
    struct stat st;
    uint8_t h[ICP_SHA];
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == q->size &&
        icp_sha_prefix(fd, q->size, buf, h) == 0 && memcmp(h, q->have_sha, ICP_SHA) == 0)
        r.size = 1;
    if (fd >= 0)
        close(fd);
    if (r.size && g_tally)
        g_tally->unchanged++;
    if (accept_rsp(s, &r) != 0) {
        say("%s: check %s: %s", s->peer, path, s->err);
        return -1;
    }
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
        if (S_ISDIR(st.st_mode))
            return refuse(s, ICP_S_ISDIR, q->path, "a directory: get it as many files");
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
    int inl = (q->flags & ICP_F_INLINE) != 0; /* the client checks END's digest: no RESULT */
    if (rc == 0 && !inl)
        rc = icp_result_recv(s, buf, &res, err, sizeof err);
    if (rc == 0 && inl) {
        res.status = ICP_OK;
        memcpy(res.sha, sha, ICP_SHA);
    }
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

static int do_list(icp_stream *s, int root, const icp_req *q, const char *path)
{
    char msg[ICP_MAX_MSG];
    uint32_t st;
    uint64_t files;
    double t0 = icp_now_s();
    int rc = icp_serve_list(s, root, path, ICP_MAX_LIST_ENTRIES, &files, msg, sizeof msg, &st);
    if (rc == -1)
        return refuse(s, st, q->path, msg);
    if (rc != 0) {
        say("%s: list %s: %s", s->peer, path[0] ? path : ".", s->err);
        return -1;
    }
    say("%s: list %s: %llu files in %.2f s", s->peer, path[0] ? path : ".",
        (unsigned long long)files, icp_now_s() - t0);
    return 0;
}

/* One request on the stream: 0 answered, -1 refused or failed (s->err set when the
 * stream itself broke); *more when the client said more requests follow. */
static int one_request(icp_stream *s, int root, mode_t umask, uint8_t *buf, int first, int *more)
{
    uint32_t len;
    icp_req q;
    const char *why = NULL;
    char path[ICP_MAX_PATH + 1];
    int dir_hint = 0;
    *more = 0;
    s->err[0] = 0;
    int type = icp_msg_recv(s, buf, &len);
    if (type < 0) {
        if (!first && s->eof) {
            s->err[0] = 0; /* the session's end */
            return 1;
        }
        say("%s", s->err);
        return -1;
    }
    if (type != ICP_REQ || icp_req_decode(buf, len, &q, &why) != 0) {
        char m[300];
        snprintf(m, sizeof m, "expected a request: %s", type != ICP_REQ ? "another message" : why);
        icp_send_error(s, ICP_S_PROTO, m);
        say("%s: %s", s->peer, m);
        snprintf(s->err, sizeof s->err, "%s", m); /* not at a request boundary any more */
        return -1;
    }
    *more = (q.flags & ICP_F_SESSION) != 0;
    if (first && g_tally)
        g_tally->session = *more;
    if (icp_path_normalize(q.path, path, sizeof path, &dir_hint, &why) != 0) {
        refuse(s, ICP_S_PATH, q.path, why);
        if ((q.flags & ICP_F_INLINE) && !s->err[0] && drain_inline(s, q.size, buf) != 0)
            say("%s: put %s: %s", s->peer, q.path, s->err);
        return -1;
    }
    if (q.flags & ICP_F_CHECK)
        return do_check(s, root, &q, path, buf);
    if (q.op == ICP_LIST)
        return do_list(s, root, &q, path);
    return q.op == ICP_PUT ? do_put(s, root, umask, &q, path, dir_hint, buf)
                           : do_get(s, root, &q, path, buf);
}

int icp_serve_request(icp_stream *s, int root, mode_t umask, uint8_t *buf)
{
    tally t = {0, 0, 0, 0, icp_now_s()};
    g_tally = &t;
    int rc = 0, more = 1, failed = 0;
    for (int n = 0; more; n++) {
        rc = one_request(s, root, umask, buf, n == 0, &more);
        if (rc == 1) { /* the client closed the session at a request boundary */
            rc = 0;
            break;
        }
        if (rc != 0 && s->err[0])
            break; /* the stream broke or lost its place: abort it */
        failed += rc != 0;
        rc = 0; /* refused or failed with the stream intact: the peer has our answer */
    }
    if (t.session) {
        double dt = icp_now_s() - t.t0;
        say("%s: session of %llu copies (%llu bytes, %.1f Mbit/s over %s), %llu already in place, "
            "%d refused or failed%s", s->peer, (unsigned long long)t.files,
            (unsigned long long)t.bytes, dt > 0 ? t.bytes * 8 / dt / 1e6 : 0.0, icp_transport(s),
            (unsigned long long)t.unchanged, failed, rc ? ", cut short" : "");
    }
    g_tally = NULL;
    return rc ? -1 : 0;
}
