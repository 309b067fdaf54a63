/* bsend.c: buffered-mode sends in the user's attached buffer.
 *
 * MPI_Bsend copies the message into the buffer given to MPI_Buffer_attach and sends the
 * copy with an ordinary non-blocking send, local or remote alike. Space is taken first
 * fit from the attached buffer, each message charged its size plus a fixed overhead no
 * larger than MPI_BSEND_OVERHEAD, and given back when the send completes. Too little
 * space is MPI_ERR_BUFFER, as the standard asks; detach waits for every pending copy.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define ISM_BSEND_CHARGE 64 /* per-message bookkeeping charge; <= MPI_BSEND_OVERHEAD (512) */

typedef struct bseg {
    size_t off, len;
    ism_req *inner;
    struct bseg *next;
} bseg;

static bseg *segs; /* sorted by offset */

static void reap(int wait)
{
    bseg **pp = &segs;
    while (*pp) {
        bseg *s = *pp;
        int flag = 0;
        if (wait)
            ism_req_wait(s->inner, NULL), flag = 1;
        else
            ism_req_test(s->inner, &flag, NULL);
        if (flag) {
            ism_req_free(s->inner);
            *pp = s->next;
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

int ism_buffer_attach(void *buf, size_t size)
{
    if (ism.bbuf)
        return ISM_ERR_BUFFER;
    ism.bbuf = buf;
    ism.bsize = size;
    return 0;
}

int ism_buffer_detach(void *bufp, size_t *size)
{
    reap(1);
    *(void **)bufp = ism.bbuf;
    *size = ism.bsize;
    ism.bbuf = NULL;
    ism.bsize = 0;
    return 0;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

int ism_bsend(const void *buf, int count, ism_dt *dt, int dst, int tag, ism_comm *c, ism_req **out)
{
    /* predefined contiguous types are copied as they are; any other type is packed and
     * the copy sent as MPI_PACKED bytes, which every receive type of that signature
     * accepts */
    int packed = !dt->contig || dt->x;
    size_t bytes = (size_t)count * (size_t)(packed ? dt->size : dt->extent);
    size_t need = align16(bytes + ISM_BSEND_CHARGE);
    if (dst == ISM_PROC_NULL)
        return ism_isend(buf, count, dt, dst, tag, c, c->ctx, ISM_MODE_STD, out);
    reap(0);
    size_t at = 0;
    bseg **pp = &segs;
    while (*pp && (*pp)->off < at + need) {
        at = (*pp)->off + (*pp)->len;
        pp = &(*pp)->next;
    }
    if (!ism.bbuf || at + need > ism.bsize)
        return ISM_ERR_BUFFER;
    bseg *s = calloc(1, sizeof *s);
    if (!s)
        return ISM_ERR_NO_MEM;
    char *copy = ism.bbuf + at;
    int rc;
    if (packed) {
        ism_dt_pack(dt, buf, count, copy);
        rc = ism_isend(copy, (int)bytes, &ism_dt_table[0x07], dst, tag, c, c->ctx, ISM_MODE_STD,
                       &s->inner);
    } else {
        if (bytes)
            memcpy(copy, buf, bytes);
        rc = ism_isend(copy, count, dt, dst, tag, c, c->ctx, ISM_MODE_STD, &s->inner);
    }
    if (rc) {
        free(s);
        return rc;
    }
    s->off = at;
    s->len = need;
    s->next = *pp;
    *pp = s;
    ism_req *r = ism_req_alloc(ISM_RQ_DONE);
    if (!r)
        return ISM_ERR_NO_MEM;
    r->done = 1;
    r->st.source = dst;
    r->st.tag = tag;
    *out = r;
    return 0;
}

int ism_bsend_pending(void) { return segs != NULL; }
