/* getmany.h: the client's side of a many-file get (copy.h: icp_get_many; the scheduling
 * of the files over connections is batch.c's, shared with the many-file put): the
 * server's listing turned into the list of files to fetch, and one file fetched into
 * the local destination.
 *
 * Local files are written beneath the destination directory as the server writes
 * beneath its own (paths.h): directories made one component at a time, every path
 * opened with RESOLVE_BENEATH, so neither a listing nor a link already in the
 * destination can put a byte outside it; each file arrives under a hidden partial name
 * and is renamed only after its SHA-256 matched the server's.
 */
#ifndef ISM_COPY_GETMANY_H
#define ISM_COPY_GETMANY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "copy.h"
#include "paths.h"
#include "tree.h"

/* LIST remote on s (a session: the connection can go on with gets) and fill l: each
 * file's rel is the path it gets under the local destination (a directory named
 * without a trailing '/' lands under its own name, as a put does), and its remote path
 * is *base/rel. A glob (a '*', '?' or '[' in remote's last
 * components) lists the directory before its first such component and keeps the paths
 * that match it or lie below a match. *base gets the remote directory the rels are
 * under (to be freed). A listing of a single file gives one item named as the file,
 * and *single = 1. 0; 1 refused or nothing matched (err says why, the stream intact);
 * -1 the stream broke or the listing was malformed. */
int icp_list_remote(icp_stream *s, const char *remote, icp_list *l, char **base, int *single,
                    uint8_t *buf, char *err, size_t errlen);

/* The file it->rel beneath lroot: directories made, the partial file opened and locked
 * (resume: what it holds kept, *have its size). ICP_OK or a status with msg. */
int icp_get_open_local(int lroot, const icp_item *it, int resume, icp_target *t, uint64_t *have,
                       char *msg, size_t msglen);

/* The data of an answered get (r accepted) into t, then committed. 0 stored and
 * verified (sha: its digest); 1 the file failed with the stream intact; -1 the stream
 * broke. inline_: no RESULT is sent (an INLINE get). err says why. */
int icp_get_receive(icp_stream *s, const icp_rsp *r, icp_target *t, mode_t umask, int inline_,
                    icp_meter *m, uint8_t *buf, uint8_t sha[ICP_SHA], char *err, size_t errlen);

#endif
