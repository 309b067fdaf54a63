/* paths.c: request paths, the served directory's boundary and the temporary file
 * (paths.h). */
#include "paths.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* C0 controls and DEL: a name with one would be a trap in every listing and log. */
static int has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            return 1;
    return 0;
}

int icp_path_normalize(const char *in, char *out, size_t outlen, int *dir_hint, const char **why)
{
    size_t at = 0;
    *dir_hint = 1;
    if (has_control(in)) {
        *why = "paths with a control character (newline, escape, ...) are refused";
        return -1;
    }
    if (in[0] == '/') {
        *why = "absolute paths are refused: give a path inside the served directory";
        return -1;
    }
    for (const char *p = in; *p;) {
        const char *e = strchr(p, '/');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == 2 && p[0] == '.' && p[1] == '.') {
            *why = "paths with '..' are refused: they could leave the served directory";
            return -1;
        }
        if (k && !(k == 1 && p[0] == '.')) {
            if (at + (at ? 1 : 0) + k + 1 > outlen) {
                *why = "path too long";
                return -1;
            }
            if (at)
                out[at++] = '/';
            memcpy(out + at, p, k);
            at += k;
            *dir_hint = 0;
        } else if (k == 1) {
            *dir_hint = 1; /* a trailing "." names a directory */
        }
        p += k;
        if (*p == '/') {
            p++;
            *dir_hint = 1; /* until another component follows */
        }
    }
    out[at] = 0;
    return 0;
}

const char *icp_name_problem(const char *name)
{
    if (!name[0] || !strcmp(name, ".") || !strcmp(name, ".."))
        return "is empty, '.' or '..'";
    if (strchr(name, '/'))
        return "contains '/'";
    if (has_control(name))
        return "contains a control character (newline, escape, ...)";
    return NULL;
}

int icp_open_beneath(int root, const char *rel, int flags)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof how);
    return fd < 0 ? -1 : (int)fd;
}

static int open_dir(int root, const char *rel, int beneath)
{
    if (beneath)
        return icp_open_beneath(root, rel, O_PATH | O_DIRECTORY);
    return openat(root, *rel ? rel : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int path_status(int e, const char *what, char *msg, size_t msglen)
{
    if (e == EXDEV || e == ELOOP) {
        snprintf(msg, msglen, "%s leaves the served directory through a symbolic link", what);
        return ICP_S_PATH;
    }
    snprintf(msg, msglen, "%s: %s", what, strerror(e));
    return e == ENOENT ? ICP_S_NOENT : e == ENOTDIR ? ICP_S_TYPE : ICP_S_IO;
}

int icp_mkdirs_beneath(int root, const char *dir, char *msg, size_t msglen)
{
    char pre[ICP_MAX_PATH + 1];
    size_t n = strlen(dir);
    if (n > ICP_MAX_PATH) {
        snprintf(msg, msglen, "directory path too long");
        return ICP_S_PATH;
    }
    for (size_t at = 1; at <= n; at++) {
        if (dir[at] != '/' && dir[at] != 0)
            continue;
        memcpy(pre, dir, at);
        pre[at] = 0;
        int fd = icp_open_beneath(root, pre, O_PATH | O_DIRECTORY);
        if (fd >= 0) {
            close(fd);
            continue;
        }
        if (errno != ENOENT)
            return path_status(errno, pre, msg, msglen);
        char *slash = strrchr(pre, '/');
        if (slash)
            *slash = 0;
        int parent = icp_open_beneath(root, slash ? pre : "", O_PATH | O_DIRECTORY);
        if (slash)
            *slash = '/';
        if (parent < 0)
            return path_status(errno, pre, msg, msglen);
        int r = mkdirat(parent, slash ? slash + 1 : pre, 0777);
        int e = errno;
        close(parent);
        if (r != 0 && e != EEXIST)
            return path_status(e, pre, msg, msglen);
        /* whatever the name holds now (made by us, or by someone else meanwhile) must be
         * a directory reached beneath root */
        fd = icp_open_beneath(root, pre, O_PATH | O_DIRECTORY);
        if (fd < 0)
            return path_status(errno, pre, msg, msglen);
        close(fd);
    }
    return ICP_OK;
}

int icp_target_resolve(int root, const char *path, int dir_hint, const char *srcname, int beneath,
                       icp_target *t, char *msg, size_t msglen)
{
    memset(t, 0, sizeof *t);
    t->dirfd = t->fd = -1;
    char dir[ICP_MAX_PATH + 1], name[ICP_MAX_PATH + 1];
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(name, sizeof name, "%s", srcname);
    /* a local path may end in '/' (the served side's is normalised already) */
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dir[--dl] = 0, dir_hint = 1;
    int d = open_dir(root, dir, beneath);
    if (d < 0) {
        int e = errno;
        if ((e != ENOENT && e != ENOTDIR) || dir_hint || !dir[0])
            return path_status(e, dir[0] ? dir : ".", msg, msglen);
        /* not a directory (yet): the last component names the file in its parent */
        char *slash = strrchr(dir, '/');
        snprintf(name, sizeof name, "%s", slash ? slash + 1 : dir);
        if (slash == dir)
            dir[1] = 0; /* "/name": the parent is "/" */
        else if (slash)
            *slash = 0;
        else
            dir[0] = 0;
        d = open_dir(root, dir, beneath);
        if (d < 0)
            return path_status(errno, dir[0] ? dir : ".", msg, msglen);
    }
    const char *bad = strlen(name) > ICP_MAX_NAME ? "is too long" : icp_name_problem(name);
    if (bad) {
        close(d);
        snprintf(msg, msglen, "'%.300s' is not a usable file name: it %s", name, bad);
        return ICP_S_PATH;
    }
    memcpy(t->name, name, strlen(name) + 1); /* length checked above */
    /* rel is only for messages: a path at the length limit may lose its end there */
    if (snprintf(t->rel, sizeof t->rel, "%s%s%s", dir, dir[0] && strcmp(dir, "/") ? "/" : "",
                 t->name) >= (int)sizeof t->rel)
        t->rel[sizeof t->rel - 2] = '~';
    t->dirfd = d;
    return ICP_OK;
}

/* An existing partial file may be used only if it is ours alone: a regular file with
 * one name, owned by us. A hard link planted under its name would otherwise have us
 * write (and chmod) a file outside the served directory. ICP_OK, or a status with msg. */
static int partial_is_ours(const icp_target *t, const struct stat *a, char *msg, size_t msglen)
{
    const char *why = NULL;
    char what[96];
    if (!S_ISREG(a->st_mode)) {
        why = "is not a regular file";
    } else if (a->st_nlink != 1) {
        snprintf(what, sizeof what, "has %ju hard links (one may lead out of the directory)",
                 (uintmax_t)a->st_nlink);
        why = what;
    } else if (a->st_uid != geteuid()) {
        snprintf(what, sizeof what, "belongs to uid %ju, not to ours (%ju)", (uintmax_t)a->st_uid,
                 (uintmax_t)geteuid());
        why = what;
    }
    if (!why)
        return ICP_OK;
    snprintf(msg, msglen, "the partial file %s next to %s %s: refusing to write through it "
             "(remove it to copy to this name)", t->tmp, t->rel, why);
    return ICP_S_PATH;
}

int icp_target_open_tmp(icp_target *t, int resume, uint64_t max, uint64_t *have, char *msg,
                        size_t msglen)
{
    snprintf(t->tmp, sizeof t->tmp, ".%.200s.icp-partial", t->name);
    *have = 0;
    errno = 0;
    for (int tries = 0; tries < 4; tries++) {
        /* created here, or else opened as found: never both in one call, so a file that
         * was there is always checked before a byte is written to it */
        int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
        t->fd = openat(t->dirfd, t->tmp, flags | O_CREAT | O_EXCL, 0600);
        if (t->fd < 0 && errno == EEXIST)
            t->fd = openat(t->dirfd, t->tmp, flags);
        if (t->fd < 0 && errno == ENOENT)
            continue; /* removed between the two opens */
        if (t->fd < 0)
            break;
        struct stat a, b;
        if (fstat(t->fd, &a) != 0)
            break;
        int st = partial_is_ours(t, &a, msg, msglen);
        if (st != ICP_OK) {
            close(t->fd);
            t->fd = -1;
            t->tmp[0] = 0; /* not ours: never removed by us either */
            return st;
        }
        if (flock(t->fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(t->fd);
            t->fd = -1;
            t->tmp[0] = 0;
            if (e == EWOULDBLOCK) {
                snprintf(msg, msglen, "another copy to %s is running", t->rel);
                return ICP_S_BUSY;
            }
            errno = e;
            break;
        }
        /* the holder before us may have removed or renamed it: lock the file the name has */
        if (fstatat(t->dirfd, t->tmp, &b, AT_SYMLINK_NOFOLLOW) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino) {
            close(t->fd);
            t->fd = -1;
            errno = 0;
            continue;
        }
        if (resume && (uint64_t)a.st_size <= max)
            *have = (uint64_t)a.st_size;
        else if (ftruncate(t->fd, 0) != 0)
            break;
        t->keep = resume;
        return ICP_OK;
    }
    snprintf(msg, msglen, "opening the partial file next to %s: %s", t->rel,
             t->fd < 0 && errno == 0 ? "it keeps changing" : strerror(errno));
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    t->tmp[0] = 0;
    return ICP_S_IO;
}

int icp_target_commit(icp_target *t, uint32_t mode, mode_t mask, int64_t mtime, char *msg,
                      size_t msglen)
{
    struct timespec tt[2] = {{0, UTIME_OMIT}, {(time_t)mtime, 0}};
    const char *step = NULL;
    if (fchmod(t->fd, (mode_t)(mode & 0777 & ~mask)) != 0)
        step = "setting the mode of";
    else if (futimens(t->fd, tt) != 0)
        step = "setting the time of";
    else if (fsync(t->fd) != 0) /* the name must not appear before the data are on disk */
        step = "flushing to disk";
    else if (renameat(t->dirfd, t->tmp, t->dirfd, t->name) != 0)
        step = "renaming into place";
    if (!step) {
        close(t->fd); /* after the rename: the lock covered it */
        t->fd = -1;
        t->tmp[0] = 0;
        return ICP_OK;
    }
    snprintf(msg, msglen, "%s %s: %s", step, t->rel, strerror(errno));
    t->keep = 0;
    icp_target_discard(t);
    return ICP_S_IO;
}

void icp_target_discard(icp_target *t)
{
    struct stat st;
    int keep = t->keep && t->fd >= 0 && fstat(t->fd, &st) == 0 && st.st_size > 0;
    /* removed while still locked, so no other copy starts on a file about to vanish */
    if (t->tmp[0] && t->dirfd >= 0 && !keep)
        unlinkat(t->dirfd, t->tmp, 0);
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    t->tmp[0] = 0;
}

void icp_target_close(icp_target *t)
{
    icp_target_discard(t);
    if (t->dirfd >= 0)
        close(t->dirfd);
    t->dirfd = -1;
}
