/* listing.h: the server's side of a LIST request (proto.h): the walk of a directory
 * beneath the served one and the listing sent back (listing.c). The client's side is
 * getmany.c. */
#ifndef ISM_COPY_LISTING_H
#define ISM_COPY_LISTING_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

/* List path (normalised, relative; "" the served directory) beneath root and send RSP and
 * the entries on s, at most max_entries of them (and never more than
 * ICP_MAX_LIST_ENTRIES; the server passes that). 0 sent (*files: the FILE entries); -1 refused before anything was
 * sent (*status and msg say why: the caller answers the refusal); -2 the stream broke
 * while sending (s->err). */
int icp_serve_list(icp_stream *s, int root, const char *path, uint32_t max_entries,
                   uint64_t *files, char *msg, size_t msglen, uint32_t *status);

#endif
