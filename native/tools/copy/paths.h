/* paths.h: where a copy may read and write, and how a received file comes into place.
 *
 * Owns the rules that keep `isthmus-copy serve` inside its directory: a request path is
 * relative, has no ".." component (refused lexically, with a clear message), and is
 * opened with openat2(RESOLVE_BENEATH), so a symbolic link that leads out of the served
 * directory is refused by the kernel (EXDEV) while relative links that stay inside work
 * (absolute links are refused, wherever they point). And it
 * owns the partial file: data is written to ".NAME.icp-partial" next to the target,
 * locked (flock) so that a second copy to the same target is refused as busy, and
 * renamed to NAME only after the SHA-256 matched; on a failure it is removed, or kept
 * for a later --resume when the copy asked for that. A partial file is created with
 * O_EXCL, or, when one is there already, used only if it is a regular file of ours with
 * no other name (a hard link planted under its name is refused, never written
 * through). Names and paths with control characters are refused.
 */
#ifndef ISM_COPY_PATHS_H
#define ISM_COPY_PATHS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* A request path checked and normalised: "a/./b//c/" -> "a/b/c" with *dir_hint = 1
 * (the path named a directory: it ended in '/' or "." or was empty). Returns 0, or -1
 * with *why (absolute, contains "..", a control character, too long). */
int icp_path_normalize(const char *in, char *out, size_t outlen, int *dir_hint, const char **why);
/* NULL for a plain file name (not empty, no '/', not "." or "..", no control character),
 * else what is wrong with it ("contains '/'", ...). */
const char *icp_name_problem(const char *name);

/* openat2(root, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS); "" means root.
 * The fd, or -1 with errno (EXDEV: the path leaves root). */
int icp_open_beneath(int root, const char *rel, int flags);

/* Create what is missing of the directory path dir (normalised, relative) inside root,
 * one component at a time: each is made in its parent opened beneath root and then
 * opened beneath root itself, so a symbolic link on the way that leads out is refused
 * (as for any path) and nothing is ever created outside. New directories get 0777 less
 * the umask. ICP_OK, or a status with msg. */
int icp_mkdirs_beneath(int root, const char *dir, char *msg, size_t msglen);

typedef struct icp_target {
    int dirfd;                 /* the directory the file goes into */
    int fd;                    /* the partial file while it is written, else -1 */
    int keep;                  /* a failure keeps the partial file for --resume */
    char name[ICP_MAX_NAME + 1];
    char tmp[ICP_MAX_NAME + 32];
    char rel[ICP_MAX_PATH + 1]; /* for messages: the directory (as given) and the name */
} icp_target;

/* Resolve where a file named srcname goes for the destination path: into path when it is
 * a directory, else as path's last component inside its parent. beneath: root is the
 * served directory and path a normalised request path (icp_path_normalize); otherwise
 * root is AT_FDCWD and path the local user's own. Returns ICP_OK, or a status with msg. */
int icp_target_resolve(int root, const char *path, int dir_hint, const char *srcname, int beneath,
                       icp_target *t, char *msg, size_t msglen);
/* Open (or create) and lock the partial file. resume: keep what it holds (*have = its
 * size, at most max) and keep it on failure; else empty it. ICP_OK, ICP_S_BUSY (another
 * copy holds the lock), ICP_S_PATH (a partial file is there that is not ours alone: not
 * regular, another hard link, another owner) or ICP_S_IO, with msg. */
int icp_target_open_tmp(icp_target *t, int resume, uint64_t max, uint64_t *have, char *msg,
                        size_t msglen);
/* Set mode (& 0777 & ~mask: the receiver's umask, as cp applies it) and mtime, flush to
 * disk, rename over the name. ICP_OK, or ICP_S_IO with msg (the temporary file is then
 * removed). */
int icp_target_commit(icp_target *t, uint32_t mode, mode_t mask, int64_t mtime, char *msg,
                      size_t msglen);
/* Remove the partial file (keep it instead when t->keep and it holds data), close it. */
void icp_target_discard(icp_target *t);
void icp_target_close(icp_target *t);

#endif
