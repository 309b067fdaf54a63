/* request.h: what `isthmus-copy serve` does on one connection once it is authenticated
 * (server.c accepts and authenticates it): read the request, check it, answer it, move
 * the file. Kept apart from the sockets and threads so that it can be driven by a fuzzer
 * (tests/fuzz_copy_request.c) over a socket pair.
 */
#ifndef ISM_COPY_REQUEST_H
#define ISM_COPY_REQUEST_H

#include <stdint.h>
#include <sys/types.h>

#include "stream.h"

/* Serve one request on the authenticated stream s, inside the directory root (an
 * O_PATH fd), storing files with mode & ~umask. buf: ICP_MAX_DATA bytes of scratch.
 * 0: the exchange is complete (done, or refused with the stream intact: close it
 * politely); -1: it failed midway (abort the stream). */
int icp_serve_request(icp_stream *s, int root, mode_t umask, uint8_t *buf);

#endif
