/* tree.h: the files of a many-file copy (batch.c): what the command line and a file list
 * name, directories walked, each file with the path it gets under the remote directory,
 * sorted largest first (the long transfers start at once, the small ones fill in
 * around them).
 *
 * A file or directory named on the command line lands under its own name ("runs"
 * gives runs/...), a directory written with a trailing slash ("runs/", as rsync reads
 * it) or "." gives its contents; a path from a file list keeps its relative path. Relative paths are checked here as the server would check
 * them (no "..", not absolute, no control characters), and must be UTF-8 (they go into
 * a JSON manifest). Symbolic links to files are followed; links to directories are not
 * (no loops) and, like sockets and devices, are listed as skipped.
 */
#ifndef ISM_COPY_TREE_H
#define ISM_COPY_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

enum { ICP_IT_PENDING, ICP_IT_OK, ICP_IT_UNCHANGED, ICP_IT_FAILED, ICP_IT_SKIPPED };

typedef struct icp_item {
    char *src;            /* the local path */
    char *rel;            /* its path under the remote directory */
    uint64_t size;
    uint32_t mode;
    int64_t mtime;
    int state;            /* ICP_IT_* */
    int has_sha;
    uint8_t sha[ICP_SHA]; /* the source's, as sent and verified by the receiver */
    uint64_t sent;        /* file bytes sent for it in this run */
    uint64_t resumed_at;  /* a partial copy at the server that was continued */
    int counted;          /* in the run's totals already (batch.c) */
    char *err;            /* why it failed or was skipped */
} icp_item;

typedef struct icp_list {
    icp_item *v;
    size_t n, cap;
} icp_list;

/* Add what arg names. keep_path: a file list's entry (relative, kept as given). Returns
 * 0, or -1 with err when arg itself cannot be used (missing, a bad path); problems with
 * single files below a directory become skipped or failed items instead. */
int icp_list_add(icp_list *l, const char *arg, int keep_path, char *err, size_t errlen);
/* The entries of a file list, one path a line ("-": stdin); blank lines are ignored. */
int icp_list_add_from(icp_list *l, const char *listfile, char *err, size_t errlen);
/* A new item (PENDING, the other fields zero); NULL when out of memory. */
icp_item *icp_list_push(icp_list *l, const char *src, const char *rel);
/* Largest first, then by path; two entries with the same path are an error. */
int icp_list_sort(icp_list *l, char *err, size_t errlen);
void icp_item_fail(icp_item *it, int state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void icp_list_free(icp_list *l);

/* 1 when s is well-formed UTF-8. */
int icp_utf8_ok(const char *s);

#endif
