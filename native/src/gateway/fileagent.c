/* fileagent.c: the gateway acting for ranks at other sites on the files of its site
 * (MPI-IO; contract/fileio.h has the requests). Only gateway 0 of a site gets requests.
 *
 * A request is served at once, in the event loop, with the POSIX operations that the
 * site's own ranks use (io/posix.c), and answered on the link it came from, which leads
 * to the requester's gateway. Nothing here waits for another site: a lock in atomic mode
 * is only tried (the requester retries), so the loop never blocks on a remote holder.
 * Memory: the request's buffer is given back at once; a reply is allocated for its frame,
 * and a requester has at most a window of requests outstanding (core/fileio.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/posix.h"
#include "../contract/fileio.h"
#include "../common/le.h"
#include "gateway.h"

typedef struct agent_file {
    int fd, sfd; /* fd < 0: a free slot */
    char *path, *shfp;
} agent_file;

static agent_file *files;
static int nfiles;

static int64_t new_handle(int fd, int sfd, const char *path, const char *shfp)
{
    int i = 0;
    while (i < nfiles && files[i].fd >= 0)
        i++;
    if (i == nfiles) {
        agent_file *f = realloc(files, sizeof *f * (size_t)(nfiles + 16));
        if (!f)
            return -ENOMEM;
        files = f;
        for (int k = nfiles; k < nfiles + 16; k++)
            files[k].fd = -1;
        nfiles += 16;
    }
    files[i].fd = fd;
    files[i].sfd = sfd;
    files[i].path = strdup(path);
    files[i].shfp = strdup(shfp);
    return i;
}

static agent_file *file_of(uint32_t h)
{
    return h < (uint32_t)nfiles && files[h].fd >= 0 ? &files[h] : NULL;
}

static int64_t do_open(const unsigned char *p, size_t len, int flags)
{
    if (len < 4)
        return -EINVAL;
    uint32_t plen = ism_get_le32(p);
    if (plen == 0 || plen > len - 4 || plen > 4096)
        return -EINVAL;
    char *path = strndup((const char *)p + 4, plen);
    char *shfp = strndup((const char *)p + 4 + plen, len - 4 - plen);
    int fd, sfd;
    int64_t r = path && shfp ? ism_io_open(path, flags, shfp, &fd, &sfd) : -ENOMEM;
    if (r == 0) {
        r = new_handle(fd, sfd, path, shfp);
        if (r < 0)
            ism_io_close(fd, sfd);
    }
    free(path);
    free(shfp);
    return r;
}

/* Serves one request; *out gets the bytes read (READ), *outlen their number. */
static int64_t serve(const ism_frame_hdr *h, const unsigned char *p, char **out, size_t *outlen)
{
    if (h->tag == ISM_FIO_OPEN)
        return do_open(p, h->len, (int)h->b);
    if (h->tag == ISM_FIO_DELETE) {
        char *path = strndup((const char *)p, h->len);
        int r = !path ? -ENOMEM : unlink(path) ? -errno : 0;
        free(path);
        return r;
    }
    agent_file *f = file_of(h->ctx);
    if (!f)
        return -EBADF;
    ism_io_seg *seg = NULL;
    uint32_t n = 0;
    long used;
    int64_t r;
    switch (h->tag) {
    case ISM_FIO_CLOSE:
        r = 0;
        if ((h->b & 1) && f->path && unlink(f->path))
            r = -errno;
        if ((h->b & 2) && f->shfp && *f->shfp)
            unlink(f->shfp);
        ism_io_close(f->fd, f->sfd);
        f->fd = -1;
        free(f->path);
        free(f->shfp);
        f->path = f->shfp = NULL;
        return r;
    case ISM_FIO_WRITE:
    case ISM_FIO_READ: {
        used = ism_io_segs_decode(p, h->len, &seg, &n);
        if (used < 0)
            return -EPROTO;
        int64_t want = 0;
        for (uint32_t i = 0; i < n; i++)
            want += seg[i].len;
        if (h->tag == ISM_FIO_WRITE) {
            r = want == (int64_t)h->len - used ? ism_io_write(f->fd, seg, n, (const char *)p + used)
                                               : -EPROTO;
        } else if (want > (int64_t)(gw.bufsize - ISM_FRAME_HDR_SIZE)) {
            r = -EPROTO; /* the reply must fit a frame of the requester's site */
        } else {
            *out = malloc((size_t)want + 1);
            r = *out ? ism_io_read(f->fd, seg, n, *out) : -ENOMEM;
            *outlen = r > 0 ? (size_t)r : 0;
        }
        free(seg);
        return r;
    }
    case ISM_FIO_SIZE:
        return ism_io_size(f->fd);
    case ISM_FIO_TRUNCATE:
        return ism_io_truncate(f->fd, (int64_t)h->b);
    case ISM_FIO_PREALLOC:
        return ism_io_prealloc(f->fd, (int64_t)h->b);
    case ISM_FIO_SYNC:
        return ism_io_sync(f->fd);
    case ISM_FIO_FETCH_ADD:
        return ism_io_fetch_add(f->sfd, (int64_t)h->b);
    case ISM_FIO_SET_SHARED:
        return ism_io_set_shared(f->sfd, (int64_t)h->b);
    case ISM_FIO_LOCK:
        if (h->len != 16)
            return -EPROTO;
        return h->b ? ism_io_lock(f->fd, (int64_t)ism_get_le64(p), (int64_t)ism_get_le64(p + 8),
                                  h->b == 1, 0)
                    : ism_io_unlock(f->fd, (int64_t)ism_get_le64(p),
                                    (int64_t)ism_get_le64(p + 8));
    default:
        return -EPROTO;
    }
}

void gw_fileagent_frame(gw_link *l, gw_buf *b, const ism_frame_hdr *h)
{
    char *data = NULL;
    size_t dlen = 0;
    int64_t r = serve(h, (const unsigned char *)b->data + ISM_FRAME_HDR_SIZE, &data, &dlen);
    if (r == -EPROTO)
        gw_log("file request %d from rank %d (site %s) is malformed (%u payload bytes); "
               "answered with an error",
               h->tag, h->src, gw.lay.site_names[l->site], h->len);
    gw_buf *rep = gw_buf_small(ISM_FRAME_HDR_SIZE + dlen);
    ism_frame_hdr rh;
    ism_frame_init(&rh, ISM_F_IOREP);
    rh.src = h->dst;
    rh.dst = h->src;
    rh.a = h->a;
    rh.b = (uint64_t)r;
    rh.len = (uint32_t)dlen;
    ism_frame_encode(&rh, (uint8_t *)rep->data);
    if (dlen)
        memcpy(rep->data + ISM_FRAME_HDR_SIZE, data, dlen);
    free(data);
    if (b->pooled)
        gw.held_bytes -= b->len;
    gw_buf_put(b);
    gw_link_send(l, rep);
    gw_link_pump(l);
}
