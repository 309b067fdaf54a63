/* getmany.c: the listing a many-file get starts from, and one file of it fetched into
 * the local destination (getmany.h). */
#define _GNU_SOURCE
#include "getmany.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "paths.h"

static int is_glob(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '*' || s[i] == '?' || s[i] == '[')
            return 1;
    return 0;
}

/* norm split into the directory to list and, for a glob, the pattern below it. */
static void split_glob(const char *norm, char *dir, char *pat)
{
    dir[0] = pat[0] = 0;
    for (const char *p = norm; *p;) {
        size_t k = strcspn(p, "/");
        if (is_glob(p, k)) {
            size_t d = (size_t)(p - norm);
            memcpy(dir, norm, d ? d - 1 : 0);
            dir[d ? d - 1 : 0] = 0;
            strcpy(pat, p);
            return;
        }
        p += k + (p[k] == '/');
    }
    strcpy(dir, norm);
}

/* The listing's DATA, r->offset bytes of r->size entries, into l. 0, or -1 with err. */
static int read_entries(icp_stream *s, const icp_rsp *r, const char *listed, const char *own,
                        const char *pat, icp_list *l, int *single, uint8_t *buf, char *err,
                        size_t errlen)
{
    uint64_t got = 0, n = 0;
    icp_entry e;
    const char *why = NULL;
    while (got < r->offset) {
        uint32_t len;
        int type = icp_msg_recv(s, buf, &len);
        if (type < 0) {
            snprintf(err, errlen, "%s", s->err);
            return -1;
        }
        if (type != ICP_DATA || len > r->offset - got) {
            snprintf(err, errlen, "%s sent a malformed listing: %s", s->peer,
                     type != ICP_DATA ? "another message" : "more bytes than announced");
            return -1;
        }
        for (size_t at = 0, used = 0; at < len; at += used) {
            if (icp_entry_decode(buf + at, len - at, &e, &used, &why) != 0 || ++n > r->size) {
                snprintf(err, errlen, "%s sent a malformed listing: %s", s->peer,
                         why ? why : "more entries than announced");
                return -1;
            }
            if (!e.path[0] && (r->size != 1 || e.kind != ICP_E_FILE)) {
                snprintf(err, errlen, "%s sent a malformed listing: an entry without a path "
                         "beside others", s->peer);
                return -1;
            }
            if (pat[0] && fnmatch(pat, e.path, FNM_PATHNAME | FNM_PERIOD | FNM_LEADING_DIR))
                continue;
            char rel[2 * ICP_MAX_PATH + 2];
            const char *slash = strrchr(listed, '/');
            if (!e.path[0]) /* the listed path is a file */
                snprintf(rel, sizeof rel, "%s", slash ? slash + 1 : listed);
            else
                snprintf(rel, sizeof rel, "%s%s%s", own, own[0] ? "/" : "", e.path);
            *single = !e.path[0];
            icp_item *it = icp_list_push(l, rel, rel);
            if (!it) {
                snprintf(err, errlen, "out of memory for the listing of %s", listed);
                return -1;
            }
            it->size = e.size;
            it->mode = e.mode;
            it->mtime = e.mtime;
            if (e.kind != ICP_E_FILE)
                icp_item_fail(it, e.kind == ICP_E_SKIPPED ? ICP_IT_SKIPPED : ICP_IT_FAILED,
                              "%s", icp_entry_why(e.why));
            else if (!icp_utf8_ok(rel))
                icp_item_fail(it, ICP_IT_FAILED, "its path is not UTF-8");
        }
        got += len;
    }
    if (n != r->size) {
        snprintf(err, errlen, "%s sent a malformed listing: %llu entries of %llu announced",
                 s->peer, (unsigned long long)n, (unsigned long long)r->size);
        return -1;
    }
    return 0;
}

/* LIST path on s: 0 with r accepted (its entries follow), 1 refused (r->status says why),
 * -1 the stream broke or the answer is out of bounds. */
static int list_request(icp_stream *s, const char *path, icp_rsp *r, uint8_t *buf, char *err,
                        size_t errlen)
{
    icp_req q;
    memset(&q, 0, sizeof q);
    q.op = ICP_LIST;
    q.flags = ICP_F_SESSION;
    snprintf(q.path, sizeof q.path, "%s", path);
    if (icp_msg_send(s, ICP_REQ, buf, icp_req_encode(&q, buf)) != 0) {
        snprintf(err, errlen, "%s", s->err);
        return -1;
    }
    char what[ICP_MAX_PATH + 40];
    snprintf(what, sizeof what, "list %s", path[0] ? path : ".");
    int rc = icp_rsp_check(s, buf, r, what, err, errlen);
    if (rc == 0 && (r->size > ICP_MAX_LIST_ENTRIES || r->offset > ICP_MAX_LIST_BYTES)) {
        snprintf(err, errlen, "%s announced a listing beyond the bounds (%llu entries, %llu bytes)",
                 s->peer, (unsigned long long)r->size, (unsigned long long)r->offset);
        return -1;
    }
    return rc;
}

int icp_list_remote(icp_stream *s, const char *remote, icp_list *l, char **base, int *single,
                    uint8_t *buf, char *err, size_t errlen)
{
    char norm[ICP_MAX_PATH + 1], listed[ICP_MAX_PATH + 1], pat[ICP_MAX_PATH + 1];
    const char *why = NULL;
    int hint;
    *base = NULL;
    *single = 0;
    if (icp_path_normalize(remote, norm, sizeof norm, &hint, &why) != 0) {
        snprintf(err, errlen, "%s: %s: %s", remote, icp_status_name(ICP_S_PATH), why);
        return 1;
    }
    split_glob(norm, listed, pat);
    icp_rsp r;
    int rc;
    if (pat[0]) {
        /* a name with '*', '?' or '[' in it is itself first: a glob only when it is not
         * there (as a shell keeps a pattern that matches nothing) */
        rc = list_request(s, norm, &r, buf, err, errlen);
        if (rc == 0 || rc < 0 || r.status != ICP_S_NOENT) {
            strcpy(listed, norm);
            pat[0] = 0;
            if (rc != 0)
                return rc;
        } else {
            rc = list_request(s, listed, &r, buf, err, errlen);
            if (rc != 0)
                return rc;
        }
    } else if ((rc = list_request(s, listed, &r, buf, err, errlen)) != 0) {
        return rc;
    }
    /* "dir" lands under its own name, "dir/" (or a glob, or the whole served directory)
     * gives what is in it */
    const char *slash = strrchr(listed, '/');
    int own = !pat[0] && !hint && listed[0];
    char ownname[ICP_MAX_PATH + 1], b[ICP_MAX_PATH + 1];
    snprintf(ownname, sizeof ownname, "%s", own ? (slash ? slash + 1 : listed) : "");
    snprintf(b, sizeof b, "%s", listed);
    if (own)
        b[slash ? (size_t)(slash - listed) : 0] = 0;
    if (read_entries(s, &r, listed, ownname, pat, l, single, buf, err, errlen) != 0)
        return -1;
    if (*single) { /* the file's own directory is the base */
        slash = strrchr(listed, '/');
        b[slash ? (size_t)(slash - listed) : 0] = 0;
    }
    if (pat[0] && !l->n) {
        snprintf(err, errlen, "%s: no file matches %s under %s", s->peer, pat,
                 listed[0] ? listed : "the served directory");
        return 1;
    }
    if (!(*base = strdup(b))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int icp_get_open_local(int lroot, const icp_item *it, int resume, icp_target *t, uint64_t *have,
                       char *msg, size_t msglen)
{
    char dir[ICP_MAX_PATH + 1];
    snprintf(dir, sizeof dir, "%s", it->rel);
    char *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : dir;
    char nm[ICP_MAX_NAME + 1];
    memset(t, 0, sizeof *t);
    t->dirfd = t->fd = -1;
    if (strlen(name) > ICP_MAX_NAME) {
        snprintf(msg, msglen, "its name is too long");
        return ICP_S_PATH;
    }
    strcpy(nm, name);
    if (slash)
        *slash = 0;
    else
        dir[0] = 0;
    int st = dir[0] ? icp_mkdirs_beneath(lroot, dir, msg, msglen) : ICP_OK;
    if (st == ICP_OK)
        st = icp_target_resolve(lroot, dir, 1, nm, 1, t, msg, msglen);
    if (st == ICP_OK)
        st = icp_target_open_tmp(t, resume, it->size, have, msg, msglen);
    if (st != ICP_OK)
        icp_target_close(t);
    return st;
}

int icp_get_receive(icp_stream *s, const icp_rsp *r, icp_target *t, mode_t umask, int inline_,
                    icp_meter *m, uint8_t *buf, uint8_t sha[ICP_SHA], char *err, size_t errlen)
{
    s->err[0] = 0;
    int st = icp_recv_file(s, t->fd, r->size, r->offset, m, buf, sha, err, errlen);
    if (st < 0)
        return s->err[0] ? -1 : 1; /* the server's ERROR: the session goes on */
    if (st != ICP_OK)
        t->keep = 0; /* wrong or incomplete bytes: never resume from them */
    else
        st = icp_target_commit(t, r->mode, umask, r->mtime, err, errlen);
    /* a RESULT that does not arrive changes nothing here: the file is in place (or
     * not), and the next request finds the connection broken */
    if (!inline_)
        icp_result_send(s, (uint32_t)st, sha, st == ICP_OK ? "" : err);
    return st == ICP_OK ? 0 : 1;
}
