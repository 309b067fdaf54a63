/* posix.h: the file operations at the file's site, in POSIX terms. The same code serves
 * the ranks that are at the file's site (abi/file_access.c) and the file agent in that
 * site's gateway, which acts for ranks elsewhere (gateway/fileagent.c): one
 * implementation, so a byte written either way lands the same way.
 *
 * The shared file pointer is 8 bytes in a side file, changed under an open-file-
 * description lock (F_OFD_SETLKW), ROMIO's method: any process at the site can move it
 * without asking another. Atomic mode locks the byte range of an access the same way.
 * Functions return >= 0 on success and -errno on failure. */
#ifndef ISM_IO_POSIX_H
#define ISM_IO_POSIX_H

#include <stddef.h>
#include <stdint.h>

typedef struct ism_io_seg {
    int64_t off, len;
} ism_io_seg;

/* Open path with open(2) flags (mode 0666 before the umask when created); shfp, when not
 * NULL or empty, is the shared file pointer's side file, opened (created) as well. A FIFO or
 * a socket is refused (-EINVAL), a directory too (-EISDIR); opening never blocks. */
int ism_io_open(const char *path, int flags, const char *shfp, int *fd, int *sfd);
void ism_io_close(int fd, int sfd);
/* Write the segments in order from data; returns the bytes written. */
int64_t ism_io_write(int fd, const ism_io_seg *seg, uint32_t n, const char *data);
/* Read the segments in order into data; stops at the end of the file: returns the bytes
 * read. */
int64_t ism_io_read(int fd, const ism_io_seg *seg, uint32_t n, char *data);
int64_t ism_io_size(int fd);
int ism_io_truncate(int fd, int64_t size);
int ism_io_prealloc(int fd, int64_t size); /* never shrinks */
int ism_io_sync(int fd);
/* The shared file pointer: returns its value before adding inc (set: store val). */
int64_t ism_io_fetch_add(int sfd, int64_t inc);
int ism_io_set_shared(int sfd, int64_t val);
/* Lock (write = 1: exclusive, 0: shared; wait = 1: block, 0: -EAGAIN when another holds
 * it) or unlock a byte range. */
int ism_io_lock(int fd, int64_t off, int64_t len, int write, int wait);
int ism_io_unlock(int fd, int64_t off, int64_t len);

/* A segment list on the wire (contract/fileio.h): encode into out (4 + 16 n bytes);
 * decode checks every length against the payload and returns the bytes it used, or -1. */
size_t ism_io_segs_encode(const ism_io_seg *seg, uint32_t n, unsigned char *out);
long ism_io_segs_decode(const unsigned char *in, size_t len, ism_io_seg **seg, uint32_t *n);

#endif
