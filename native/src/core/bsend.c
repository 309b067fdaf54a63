/* bsend.c: buffered-mode sends in the user's attached buffer.
 *
 * MPI_Bsend copies the message into the buffer given to MPI_Buffer_attach and sends the
 * copy with an ordinary non-blocking send, local or remote alike. Space is taken first
 * fit from the attached buffer, each message charged its size plus a fixed overhead no
 * larger than MPI_BSEND_OVERHEAD, and given back when the send completes. Too little
 * space is MPI_ERR_BUFFER, as the standard asks; detach waits for every pending copy.
 * MPI 4.1 adds buffers per communicator and per session, automatic buffers and flushes.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define ISM_BSEND_CHARGE 64 /* per-message bookkeeping charge; <= MPI_BSEND_OVERHEAD (512) */

typedef struct bseg {
    size_t off, len;
    char *own; /* the copy, for an automatic buffer */
    ism_req *inner;
    struct bseg *next;
} bseg;

/* One attached buffer: the process's (MPI_Buffer_attach), a communicator's or a session's
 * (MPI 4.1). MPI_BUFFER_AUTOMATIC (automatic) takes each copy from the heap instead. */
struct ism_bbuf {
    char *buf;
    size_t size;
    int automatic;
    bseg *segs; /* sorted by offset */
    struct ism_bbuf *next_live;
};

static ism_bbuf process_buf;
static ism_bbuf *live; /* every buffer with a copy still in flight */

static void reap_one(ism_bbuf *b, int wait)
{
    bseg **pp = &b->segs;
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
            free(s->own);
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

/* Progress every buffer's copies; buffers with none left leave the live list. */
static void reap(void)
{
    for (ism_bbuf **pp = &live; *pp;) {
        reap_one(*pp, 0);
        if (!(*pp)->segs)
            *pp = (*pp)->next_live;
        else
            pp = &(*pp)->next_live;
    }
}

static void unlist(ism_bbuf *b)
{
    for (ism_bbuf **pp = &live; *pp; pp = &(*pp)->next_live)
        if (*pp == b) {
            *pp = b->next_live;
            return;
        }
}

ism_bbuf *ism_bbuf_process(void) { return &process_buf; }

int ism_bbuf_attach(ism_bbuf **slot, void *buf, size_t size, int automatic)
{
    if (*slot && ((*slot)->buf || (*slot)->automatic))
        return ISM_ERR_BUFFER;
    if (!*slot && !(*slot = calloc(1, sizeof **slot)))
        return ISM_ERR_NO_MEM;
    (*slot)->buf = automatic ? NULL : buf;
    (*slot)->size = automatic ? 0 : size;
    (*slot)->automatic = automatic;
    return 0;
}

int ism_bbuf_flush(ism_bbuf *b)
{
    if (b) {
        reap_one(b, 1);
        unlist(b);
    }
    return 0;
}

int ism_bbuf_detach(ism_bbuf *b, void **buf, size_t *size, int *automatic)
{
    ism_bbuf_flush(b);
    *buf = b ? b->buf : NULL;
    *size = b ? b->size : 0;
    *automatic = b ? b->automatic : 0;
    if (!b || (!b->buf && !b->automatic))
        return ISM_ERR_BUFFER;
    b->buf = NULL;
    b->size = 0;
    b->automatic = 0;
    return 0;
}

int ism_buffer_attach(void *buf, size_t size)
{
    ism_bbuf *p = &process_buf;
    return ism_bbuf_attach(&p, buf, size, 0);
}

int ism_buffer_detach(void *bufp, size_t *size)
{
    int automatic;
    void *b;
    ism_bbuf_detach(&process_buf, &b, size, &automatic);
    *(void **)bufp = b;
    return 0;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The buffer a buffered send on c uses (MPI 4.1 §3.6.1): the communicator's, else its
 * session's, else the process's. */
static ism_bbuf *buffer_of(ism_comm *c)
{
    if (c->bbuf && (c->bbuf->buf || c->bbuf->automatic))
        return c->bbuf;
    if (c->session_bbuf && *c->session_bbuf &&
        ((*c->session_bbuf)->buf || (*c->session_bbuf)->automatic))
        return *c->session_bbuf;
    return &process_buf;
}

int ism_bsend(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c,
              ism_req **out)
{
    /* predefined contiguous types are copied as they are; any other type is packed and
     * the copy sent as MPI_PACKED bytes, which every receive type of that signature
     * accepts */
    int packed = !dt->contig || dt->x;
    size_t bytes = (size_t)count * (size_t)(packed ? dt->size : dt->extent);
    size_t need = align16(bytes + ISM_BSEND_CHARGE);
    if (dst == ISM_PROC_NULL)
        return ism_isend(buf, count, dt, dst, tag, c, c->ctx, ISM_MODE_STD, out);
    reap();
    ism_bbuf *b = buffer_of(c);
    size_t at = 0;
    bseg **pp = &b->segs;
    while (!b->automatic && *pp && (*pp)->off < at + need) {
        at = (*pp)->off + (*pp)->len;
        pp = &(*pp)->next;
    }
    if (!b->automatic && (!b->buf || at + need > b->size))
        return ISM_ERR_BUFFER;
    bseg *s = calloc(1, sizeof *s);
    if (!s || (b->automatic && !(s->own = malloc(bytes + 1)))) {
        free(s);
        return ISM_ERR_NO_MEM;
    }
    char *copy = b->automatic ? s->own : b->buf + at;
    int rc;
    if (packed) {
        ism_dt_pack(dt, buf, count, copy);
        rc = ism_isend(copy, (int64_t)bytes, &ism_dt_table[ISM_KIND_PACKED], dst, tag, c, c->ctx,
                       ISM_MODE_STD, &s->inner);
    } else {
        if (bytes)
            memcpy(copy, buf, bytes);
        rc = ism_isend(copy, count, dt, dst, tag, c, c->ctx, ISM_MODE_STD, &s->inner);
    }
    if (rc) {
        free(s->own);
        free(s);
        return rc;
    }
    s->off = at;
    s->len = need;
    s->next = *pp;
    *pp = s;
    unlist(b);
    b->next_live = live;
    live = b;
    ism_req *r = ism_req_alloc(ISM_RQ_DONE);
    if (!r)
        return ISM_ERR_NO_MEM;
    r->done = 1;
    r->st.source = dst;
    r->st.tag = tag;
    *out = r;
    return 0;
}

int ism_bsend_pending(void)
{
    reap();
    return live != NULL;
}
