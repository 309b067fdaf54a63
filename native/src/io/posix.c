/* posix.c: file operations at the file's site (see posix.h). */
#define _GNU_SOURCE
#include "posix.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/le.h"

int ism_io_open(const char *path, int flags, const char *shfp, int *fd, int *sfd)
{
    /* O_NONBLOCK, then no FIFO, socket or directory: opening or reading a FIFO would
     * block, and the file agent runs in the gateway's event loop (devices such as
     * /dev/null are fine) */
    *fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, 0666);
    if (*fd < 0)
        return errno == ENXIO ? -EINVAL : -errno;
    struct stat st;
    if (fstat(*fd, &st) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
        S_ISDIR(st.st_mode) || fcntl(*fd, F_SETFL, 0)) {
        int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(*fd);
        *fd = -1;
        return -e;
    }
    *sfd = -1;
    if (shfp && *shfp) {
        *sfd = open(shfp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (*sfd < 0) {
            int e = errno;
            close(*fd);
            *fd = -1;
            return -e;
        }
    }
    return 0;
}

void ism_io_close(int fd, int sfd)
{
    if (fd >= 0)
        close(fd);
    if (sfd >= 0)
        close(sfd);
}

int64_t ism_io_write(int fd, const ism_io_seg *seg, uint32_t n, const char *data)
{
    int64_t done = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int64_t k = 0; k < seg[i].len;) {
            ssize_t w = pwrite(fd, data + done, (size_t)(seg[i].len - k), seg[i].off + k);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return -errno;
            }
            k += w;
            done += w;
        }
    return done;
}

int64_t ism_io_read(int fd, const ism_io_seg *seg, uint32_t n, char *data)
{
    int64_t done = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int64_t k = 0; k < seg[i].len;) {
            ssize_t r = pread(fd, data + done, (size_t)(seg[i].len - k), seg[i].off + k);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return -errno;
            }
            if (r == 0)
                return done;
            k += r;
            done += r;
        }
    return done;
}

int64_t ism_io_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) ? -errno : (int64_t)st.st_size;
}

int ism_io_truncate(int fd, int64_t size) { return ftruncate(fd, size) ? -errno : 0; }

int ism_io_prealloc(int fd, int64_t size)
{
    int64_t have = ism_io_size(fd);
    if (have < 0 || have >= size)
        return have < 0 ? (int)have : 0;
    int e = posix_fallocate(fd, 0, size);
    if (e == EOPNOTSUPP || e == EINVAL) /* a file system without it: extend instead */
        return ism_io_truncate(fd, size);
    return -e;
}

int ism_io_sync(int fd) { return fsync(fd) ? -errno : 0; }

static int lock_op(int fd, int type, int64_t off, int64_t len, int cmd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = (short)type;
    fl.l_whence = SEEK_SET;
    fl.l_start = off;
    fl.l_len = len;
    while (fcntl(fd, cmd, &fl))
        if (errno != EINTR)
            return errno == EACCES ? -EAGAIN : -errno;
    return 0;
}

int ism_io_lock(int fd, int64_t off, int64_t len, int write, int wait)
{
    return lock_op(fd, write ? F_WRLCK : F_RDLCK, off, len, wait ? F_OFD_SETLKW : F_OFD_SETLK);
}

int ism_io_unlock(int fd, int64_t off, int64_t len)
{
    return lock_op(fd, F_UNLCK, off, len, F_OFD_SETLK);
}

static int64_t shared_rw(int sfd, int64_t arg, int add)
{
    if (sfd < 0)
        return -EBADF;
    int rc = ism_io_lock(sfd, 0, 8, 1, 1);
    if (rc)
        return rc;
    unsigned char b[8] = {0};
    ssize_t r = pread(sfd, b, 8, 0);
    int64_t old = r == 8 ? (int64_t)ism_get_le64(b) : 0;
    int64_t res = r < 0 ? -errno : old;
    if (r >= 0) {
        ism_put_le64(b, (uint64_t)(add ? old + arg : arg));
        if (pwrite(sfd, b, 8, 0) != 8)
            res = -EIO;
    }
    ism_io_unlock(sfd, 0, 8);
    return res;
}

int64_t ism_io_fetch_add(int sfd, int64_t inc) { return shared_rw(sfd, inc, 1); }

int ism_io_set_shared(int sfd, int64_t val)
{
    int64_t r = shared_rw(sfd, val, 0);
    return r < 0 ? (int)r : 0;
}

size_t ism_io_segs_encode(const ism_io_seg *seg, uint32_t n, unsigned char *out)
{
    ism_put_le32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        ism_put_le64(out + 4 + 16 * (size_t)i, (uint64_t)seg[i].off);
        ism_put_le64(out + 12 + 16 * (size_t)i, (uint64_t)seg[i].len);
    }
    return 4 + 16 * (size_t)n;
}

long ism_io_segs_decode(const unsigned char *in, size_t len, ism_io_seg **seg, uint32_t *n)
{
    if (len < 4)
        return -1;
    uint32_t k = ism_get_le32(in);
    if ((len - 4) / 16 < k)
        return -1;
    ism_io_seg *s = malloc(sizeof *s * (k ? k : 1));
    if (!s)
        return -1;
    for (uint32_t i = 0; i < k; i++) {
        s[i].off = (int64_t)ism_get_le64(in + 4 + 16 * (size_t)i);
        s[i].len = (int64_t)ism_get_le64(in + 12 + 16 * (size_t)i);
        if (s[i].off < 0 || s[i].len < 0 || s[i].off > INT64_MAX - s[i].len) {
            free(s);
            return -1;
        }
    }
    *seg = s;
    *n = k;
    return (long)(4 + 16 * (size_t)k);
}
