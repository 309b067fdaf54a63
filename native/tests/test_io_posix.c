/* test_io_posix.c: the file operations at the file's site (io/posix.c), without MPI:
 * segment lists on the wire (round trip; every malformed list refused: short, a count
 * larger than the payload, negative or overflowing offsets and lengths), scattered
 * writes and reads (a read stops at the end of the file), sizes, the shared file
 * pointer from two open file descriptions, and byte-range locks: a second description
 * is refused a range another holds (what the file agent relies on to never block). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/io/posix.h"
#include "../src/common/le.h"
#include "check.h"

static void test_segments(void)
{
    ism_io_seg s[3] = {{0, 5}, {100, 0}, {(int64_t)1 << 40, 7}};
    unsigned char buf[4 + 16 * 3];
    size_t n = ism_io_segs_encode(s, 3, buf);
    CHECK(n == sizeof buf, "encoded %zu bytes", n);
    ism_io_seg *d = NULL;
    uint32_t k = 0;
    long used = ism_io_segs_decode(buf, n, &d, &k);
    CHECK(used == (long)n && k == 3 && d && d[2].off == (int64_t)1 << 40 && d[2].len == 7,
          "round trip: used %ld, %u segments", used, k);
    free(d);
    /* a read's list names more bytes than it carries (the bytes come back in the answer) */
    ism_io_seg big = {40, 1 << 20};
    n = ism_io_segs_encode(&big, 1, buf);
    d = NULL;
    used = ism_io_segs_decode(buf, n, &d, &k);
    CHECK(used == 20 && k == 1 && d && d[0].len == 1 << 20, "a read of 1 MiB in a 20-byte request "
          "was refused (%ld)", used);
    free(used > 0 ? d : NULL);
    n = ism_io_segs_encode(s, 3, buf);
    CHECK(ism_io_segs_decode(buf, 3, &d, &k) == -1, "a 3-byte list was accepted");
    CHECK(ism_io_segs_decode(buf, n - 1, &d, &k) == -1, "a truncated list was accepted");
    ism_put_le32(buf, 0xffffffffu);
    CHECK(ism_io_segs_decode(buf, n, &d, &k) == -1, "a count past the payload was accepted");
    ism_put_le32(buf, 1);
    ism_put_le64(buf + 4, (uint64_t)-5);
    CHECK(ism_io_segs_decode(buf, 20, &d, &k) == -1, "a negative offset was accepted");
    ism_put_le64(buf + 4, (uint64_t)INT64_MAX - 2);
    ism_put_le64(buf + 12, 10);
    CHECK(ism_io_segs_decode(buf, 20, &d, &k) == -1, "an offset + length overflow was accepted");
}

static void test_data(const char *path)
{
    char shfp[600];
    snprintf(shfp, sizeof shfp, "%s.shfp", path);
    int fd, sfd, fd2, sfd2;
    int xfd, xsfd;
    CHECK(ism_io_open(path, O_CREAT | O_RDWR, shfp, &fd, &sfd) == 0, "open %s", path);
    CHECK(ism_io_open(path, O_RDWR, shfp, &fd2, &sfd2) == 0, "second open");
    CHECK(ism_io_open("/nonexistent-dir/x", O_RDWR, NULL, &xfd, &xsfd) == -ENOENT,
          "opening a missing file did not give ENOENT");
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s.fifo", path);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(ism_io_open(fifo, O_RDONLY, NULL, &xfd, &xsfd) == -EINVAL,
          "a FIFO opened for reading (or blocked)");
    CHECK(ism_io_open(fifo, O_WRONLY, NULL, &xfd, &xsfd) == -EINVAL, "a FIFO opened for writing");
    unlink(fifo);
    CHECK(ism_io_open("/tmp", O_RDONLY, NULL, &xfd, &xsfd) == -EISDIR, "a directory opened");
    CHECK(ism_io_open("/dev/null", O_RDWR, NULL, &xfd, &xsfd) == 0, "/dev/null was refused");
    ism_io_close(xfd, xsfd);
    ism_io_seg w[2] = {{10, 4}, {0, 3}};
    CHECK(ism_io_write(fd, w, 2, "abcdxyz") == 7, "scattered write");
    CHECK(ism_io_size(fd) == 14, "size %lld", (long long)ism_io_size(fd));
    char in[16] = {0};
    ism_io_seg r[2] = {{0, 3}, {10, 8}};
    CHECK(ism_io_read(fd2, r, 2, in) == 7 && !memcmp(in, "xyzabcd", 7),
          "read across the end: '%s'", in);
    CHECK(ism_io_truncate(fd, 2) == 0 && ism_io_size(fd2) == 2, "truncate");
    CHECK(ism_io_prealloc(fd, 4096) == 0 && ism_io_size(fd) == 4096, "preallocate");
    CHECK(ism_io_prealloc(fd, 10) == 0 && ism_io_size(fd) == 4096, "preallocate shrank");
    CHECK(ism_io_fetch_add(sfd, 5) == 0 && ism_io_fetch_add(sfd2, 3) == 5 &&
              ism_io_fetch_add(sfd, 0) == 8, "shared pointer from two descriptions");
    CHECK(ism_io_set_shared(sfd2, 100) == 0 && ism_io_fetch_add(sfd, 1) == 100, "set shared");
    CHECK(ism_io_lock(fd, 0, 100, 1, 0) == 0, "first lock");
    CHECK(ism_io_lock(fd2, 50, 10, 1, 0) == -EAGAIN, "an overlapping write lock was granted");
    CHECK(ism_io_lock(fd2, 50, 10, 0, 0) == -EAGAIN, "an overlapping read lock was granted");
    CHECK(ism_io_lock(fd2, 200, 10, 1, 0) == 0, "a disjoint lock was refused");
    CHECK(ism_io_unlock(fd, 0, 100) == 0 && ism_io_lock(fd2, 50, 10, 1, 0) == 0,
          "the range stayed locked after the unlock");
    ism_io_close(fd, sfd);
    ism_io_close(fd2, sfd2);
    unlink(path);
    unlink(shfp);
}

int main(void)
{
    char path[512];
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/test_io_posix-%d.dat", dir, (int)getpid());
    test_segments();
    test_data(path);
    if (failures)
        fprintf(stderr, "test_io_posix: %d failures\n", failures);
    else
        printf("test_io_posix: OK\n");
    return failures != 0;
}
