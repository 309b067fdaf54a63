/* listing.c: the server's answer to a LIST (proto.h): the files below a directory of
 * the served one, for a many-file get.
 *
 * Every directory is opened by its path beneath the served directory (paths.h), so a
 * symbolic link on the way that leads out is refused by the kernel as for any request;
 * a link met in the walk is resolved the same way and listed as REFUSED when it leads
 * out, SKIPPED when it names a directory (never followed: no loops, and the put side
 * does the same). The walk keeps its directories to visit on the heap (no recursion a
 * deep tree could exhaust), and the listing is built whole in memory, bounded by
 * ICP_MAX_LIST_ENTRIES and ICP_MAX_LIST_BYTES, before a byte is sent: a listing over
 * the bounds is refused with ICP_S_LIMIT and the stream stays at a request boundary. */
#define _GNU_SOURCE
#include "listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "paths.h"
#include "tree.h"
#include "xfer.h"

typedef struct lbuf {
    uint8_t *p;
    size_t n, cap;
    uint64_t entries, max;
    int over; /* a bound was passed */
} lbuf;

typedef struct dstack {
    char **v;
    size_t n, cap;
} dstack;

static int add(lbuf *b, const icp_entry *e)
{
    if (b->entries + 1 > b->max ||
        b->n + ICP_ENTRY_HDR + strlen(e->path) > ICP_MAX_LIST_BYTES) {
        b->over = 1;
        return -1;
    }
    if (b->cap - b->n < ICP_ENTRY_HDR + ICP_MAX_PATH) {
        size_t cap = b->cap ? 2 * b->cap : 64u << 10;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    b->n += icp_entry_encode(e, b->p + b->n);
    b->entries++;
    return 0;
}

static int push_dir(dstack *d, const char *rel)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        char **v = realloc(d->v, cap * sizeof *v);
        if (!v)
            return -1;
        d->v = v;
        d->cap = cap;
    }
    if (!(d->v[d->n] = strdup(rel)))
        return -1;
    d->n++;
    return 0;
}

/* base/rel, or rel when base is the served directory itself. -1 when too long. */
static int join(char *out, size_t outlen, const char *a, const char *b)
{
    int k = snprintf(out, outlen, "%s%s%s", a, *a && *b ? "/" : "", b);
    return k < 0 || (size_t)k >= outlen ? -1 : 0;
}

static void set_file(icp_entry *e, const struct stat *st)
{
    e->kind = ICP_E_FILE;
    e->why = ICP_W_NONE;
    e->size = (uint64_t)st->st_size;
    e->mode = st->st_mode & 0777;
    e->mtime = st->st_mtim.tv_sec;
}

static void set_not(icp_entry *e, int kind, int why)
{
    e->kind = (uint8_t)kind;
    e->why = (uint8_t)why;
    e->size = 0;
    e->mode = 0;
    e->mtime = 0;
}

/* One name found in the directory rel (below the listed path base, open as dfd). */
static int one_name(lbuf *b, dstack *pending, int root, int dfd, const char *base, const char *rel,
                    const char *name)
{
    icp_entry e;
    memset(&e, 0, sizeof e);
    char sub[ICP_MAX_PATH + 1], full[ICP_MAX_PATH + 1];
    if (icp_name_problem(name) || !icp_utf8_ok(name)) {
        char esc[ICP_MAX_NAME * 4 + 1];
        icp_escape(name, esc, sizeof esc);
        if (join(e.path, sizeof e.path, rel, esc) != 0)
            snprintf(e.path, sizeof e.path, "%.200s", rel);
        set_not(&e, ICP_E_REFUSED, ICP_W_BAD_NAME);
        return add(b, &e);
    }
    if (join(sub, sizeof sub, rel, name) != 0 || join(full, sizeof full, base, sub) != 0) {
        snprintf(e.path, sizeof e.path, "%.*s", ICP_MAX_PATH - 2, sub[0] ? sub : rel);
        set_not(&e, ICP_E_REFUSED, ICP_W_TOO_LONG);
        return add(b, &e);
    }
    memcpy(e.path, sub, strlen(sub) + 1);
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        set_not(&e, ICP_E_SKIPPED, ICP_W_NOT_REGULAR); /* gone meanwhile */
        return add(b, &e);
    }
    if (S_ISDIR(st.st_mode))
        return push_dir(pending, sub);
    if (S_ISLNK(st.st_mode)) {
        int fd = icp_open_beneath(root, full, O_PATH);
        if (fd < 0) {
            int e2 = errno;
            set_not(&e, e2 == EXDEV || e2 == ELOOP ? ICP_E_REFUSED : ICP_E_SKIPPED,
                    e2 == EXDEV || e2 == ELOOP ? ICP_W_LINK_OUT : ICP_W_NOT_REGULAR);
            return add(b, &e);
        }
        int ok = fstat(fd, &st) == 0;
        close(fd);
        if (ok && S_ISDIR(st.st_mode)) {
            set_not(&e, ICP_E_SKIPPED, ICP_W_LINK_DIR);
            return add(b, &e);
        }
        if (!ok)
            st.st_mode = 0;
    }
    if (S_ISREG(st.st_mode))
        set_file(&e, &st);
    else
        set_not(&e, ICP_E_SKIPPED, ICP_W_NOT_REGULAR);
    return add(b, &e);
}

/* The directory rel below base: its names listed, its subdirectories queued. */
static int one_dir(lbuf *b, dstack *pending, int root, const char *base, const char *rel)
{
    char full[ICP_MAX_PATH + 1];
    icp_entry e;
    memset(&e, 0, sizeof e);
    int fd = join(full, sizeof full, base, rel) == 0
                 ? icp_open_beneath(root, full, O_RDONLY | O_DIRECTORY) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        snprintf(e.path, sizeof e.path, "%s", rel);
        set_not(&e, ICP_E_REFUSED, ICP_W_UNREADABLE);
        return add(b, &e);
    }
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rc = one_name(b, pending, root, dirfd(d), base, rel, de->d_name);
    closedir(d);
    return rc;
}

static int send_listing(icp_stream *s, const lbuf *b, const char *path)
{
    icp_rsp r;
    memset(&r, 0, sizeof r);
    r.size = b->entries;
    r.offset = b->n;
    snprintf(r.path, sizeof r.path, "%s", path);
    static _Thread_local uint8_t m[ICP_MAX_BODY];
    if (icp_msg_send(s, ICP_RSP, m, icp_rsp_encode(&r, m)) != 0)
        return -1;
    /* DATA messages of whole entries, each at most ICP_MAX_DATA bytes */
    for (size_t at = 0; at < b->n;) {
        size_t k = 0;
        while (at + k < b->n) {
            size_t len = ICP_ENTRY_HDR + (size_t)(b->p[at + k + 2] | b->p[at + k + 3] << 8);
            if (k + len > ICP_MAX_DATA)
                break;
            k += len;
        }
        if (icp_msg_send(s, ICP_DATA, b->p + at, k) != 0)
            return -1;
        at += k;
    }
    return 0;
}

int icp_serve_list(icp_stream *s, int root, const char *path, uint32_t max_entries,
                   uint64_t *files, char *msg, size_t msglen, uint32_t *status)
{
    lbuf b = {0};
    b.max = max_entries < ICP_MAX_LIST_ENTRIES ? max_entries : ICP_MAX_LIST_ENTRIES;
    dstack pending = {0};
    int rc = -1;
    *status = ICP_OK;
    *files = 0;
    int fd = icp_open_beneath(root, path, O_PATH);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        *status = e == EXDEV || e == ELOOP ? ICP_S_PATH : e == ENOENT ? ICP_S_NOENT : ICP_S_IO;
        snprintf(msg, msglen, "%.300s: %s", path[0] ? path : ".",
                 *status == ICP_S_PATH ? "leaves the served directory through a symbolic link"
                                       : strerror(e));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    if (S_ISREG(st.st_mode)) {
        icp_entry e;
        memset(&e, 0, sizeof e);
        set_file(&e, &st);
        add(&b, &e);
    } else if (S_ISDIR(st.st_mode)) {
        if (push_dir(&pending, "") != 0)
            goto nomem;
        while (pending.n && !b.over) {
            char *rel = pending.v[--pending.n];
            int r = one_dir(&b, &pending, root, path, rel);
            free(rel);
            if (r != 0 && !b.over)
                goto nomem;
        }
    } else {
        *status = ICP_S_TYPE;
        snprintf(msg, msglen, "%.300s: neither a directory nor a regular file", path);
        goto out;
    }
    if (b.over) {
        *status = ICP_S_LIMIT;
        snprintf(msg, msglen, "%.300s holds more than %u entries or %u MiB of names (the "
                 "bounds of one listing): get its subdirectories one by one", path[0] ? path : ".",
                 (unsigned)b.max, ICP_MAX_LIST_BYTES >> 20);
        goto out;
    }
    for (size_t at = 0; at < b.n;) { /* files, for the log */
        *files += b.p[at] == ICP_E_FILE;
        at += ICP_ENTRY_HDR + (size_t)(b.p[at + 2] | b.p[at + 3] << 8);
    }
    rc = send_listing(s, &b, path) == 0 ? 0 : -2;
    goto out;
nomem:
    *status = ICP_S_IO;
    snprintf(msg, msglen, "%.300s: no memory for its listing", path);
out:
    while (pending.n)
        free(pending.v[--pending.n]);
    free(pending.v);
    free(b.p);
    return rc;
}
