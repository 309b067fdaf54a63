/* p2p.c: point-to-point messages within and across sites.
 *
 * Between ranks of one site a message goes straight to the vendor MPI. To another site
 * it becomes frames: EAGER (the whole message) up to the eager limit, else a
 * rendezvous: RTS, the receiver's CTS once a receive matches, then DATA chunks paced by
 * the receiver's credits, so no gateway or receiver ever buffers more than a window.
 * A rendezvous message's first bytes, up to what is left of ISTHMUS_EARLY towards its
 * destination, leave right behind the RTS instead of a round trip later ("early data",
 * below); the receiver gives those bytes back once they are in a receive's buffer.
 * Receives that can match a remote message are matched here, in posting order, against
 * arrivals in arrival order; ANY_SOURCE receives also wait at the vendor (a "shadow"
 * receive) and whichever side matches first wins, the other is cancelled.
 */
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "win.h"
#include "../common/le.h"

/* Where the packed bytes of a remote-capable receive go: straight into the user's buffer
 * for a contiguous type; any other type keeps a reference and unpacks each piece as it
 * arrives (the whole eager payload, or rendezvous chunks in order), so no temporary. */
static void recv_setup(ism_req *r, void *buf, int64_t count, ism_dt *dt)
{
    r->cap = (size_t)count * (size_t)dt->size;
    if (dt->contig) {
        r->buf = (char *)((uintptr_t)buf + (uintptr_t)dt->contig_off);
        return;
    }
    r->buf = NULL;
    r->pdt = dt;
    r->rbuf = buf;
    ism_dt_retain(dt);
}

static void st_set(ism_status *st, int src, int tag, size_t bytes, int err)
{
    st->source = src;
    st->tag = tag;
    st->bytes = bytes;
    st->error = err;
    st->cancelled = 0;
}

static ism_req *done_req(int src, int tag)
{
    ism_req *r = ism_req_alloc(ISM_RQ_DONE);
    if (!r)
        return NULL;
    st_set(&r->st, src, tag, 0, 0);
    r->done = 1;
    return r;
}

static void hdr_to(ism_frame_hdr *h, int type, uint32_t ctx, int dst_g, int tag, uint64_t a,
                   uint64_t b, uint16_t flags)
{
    ism_frame_init(h, type);
    h->ctx = ctx;
    h->src = ism.grank;
    h->dst = dst_g;
    h->tag = tag;
    h->a = a;
    h->b = b;
    h->flags = flags;
}

static int frame_to(int type, uint32_t ctx, int dst_g, int tag, uint64_t a, uint64_t b,
                    uint16_t flags, const void *payload, size_t len)
{
    ism_frame_hdr h;
    hdr_to(&h, type, ctx, dst_g, tag, a, b, flags);
    return ism_gw_post(&h, payload, len);
}

/* The vendor takes at most INT_MAX elements per call: a larger count (the _c forms) goes
 * to it as one element of a type that covers count elements of dt -- chunks of 2^30 and
 * the rest -- built for the call and freed once it is posted (MPI lets a pending
 * operation keep a freed type). Both sides of a local message build it alike. */
#define ISM_VCHUNK ((int64_t)1 << 30)

int ism_vcount_make(int64_t count, ism_dt *dt, ism_vcount *v)
{
    *v = (ism_vcount){(int)count, dt->v, 0};
    if (count <= INT_MAX)
        return 0;
    int64_t q = count / ISM_VCHUNK, rest = count % ISM_VCHUNK;
    ism_vh chunk, body, tail = 0;
    int in[3] = {(int)ISM_VCHUNK};
    int rc = ism.be->type_create(ISM_COMBINER_CONTIGUOUS, in, NULL, &dt->v, &chunk);
    if (rc)
        return rc;
    in[0] = (int)q;
    rc = ism.be->type_create(ISM_COMBINER_CONTIGUOUS, in, NULL, &chunk, &body);
    ism.be->type_free(&chunk);
    if (rc)
        return rc;
    if (rest) {
        in[0] = (int)rest;
        rc = ism.be->type_create(ISM_COMBINER_CONTIGUOUS, in, NULL, &dt->v, &tail);
        if (!rc) {
            int sin[3] = {2, 1, 1};
            ptrdiff_t at[2] = {0, (ptrdiff_t)(q * ISM_VCHUNK * (int64_t)dt->extent)};
            ism_vh parts[2] = {body, tail}, whole;
            rc = ism.be->type_create(ISM_COMBINER_STRUCT, sin, at, parts, &whole);
            ism.be->type_free(&tail);
            ism.be->type_free(&body);
            body = whole;
        } else {
            ism.be->type_free(&body);
        }
        if (rc)
            return rc;
    }
    if ((rc = ism.be->type_commit(&body))) {
        ism.be->type_free(&body);
        return rc;
    }
    *v = (ism_vcount){1, body, 1};
    return 0;
}

void ism_vcount_done(ism_vcount *v)
{
    if (v->own)
        ism.be->type_free(&v->t);
}

/* A whole message of a non-contiguous type, packed straight into its EAGER frame. */
typedef struct pack_job {
    ism_dt *dt;
    const void *buf;
    int count; /* eager: count * size fits ISTHMUS_EAGER (a larger count has size 0) */
} pack_job;

static void fill_whole(void *dst, size_t len, void *arg)
{
    pack_job *j = arg;
    (void)len;
    ism_dt_pack(j->dt, j->buf, j->count, dst);
}

void ism_fill_packed(void *dst, size_t len, void *req)
{
    ism_req *r = req;
    ism_tmap_pack_at(ism_dt_map(r->pdt), r->sbuf, &r->cur, (int64_t)len, dst);
}

int ism_isend(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c, uint32_t ctx,
              int mode, ism_req **out)
{
    int rc;
    if (dst == ISM_PROC_NULL) {
        *out = done_req(ISM_PROC_NULL, ISM_ANY_TAG);
        return *out ? 0 : ISM_ERR_NO_MEM;
    }
    int l = c->l_of[dst];
    if (l >= 0) {
        ism_req *r = ism_req_alloc(ISM_RQ_VENDOR);
        if (!r)
            return ISM_ERR_NO_MEM;
        r->comm = c;
        ism_vh vc = ctx == c->ctx || !c->vcoll ? c->vcomm : c->vcoll;
        ism_vcount v;
        if ((rc = ism_vcount_make(count, dt, &v))) {
            ism_req_free(r);
            return rc;
        }
        if (mode == ISM_MODE_SYNC)
            rc = ism.be->issend(buf, v.n, v.t, l, tag, vc, &r->vreq);
        else if (mode == ISM_MODE_READY)
            rc = ism.be->irsend(buf, v.n, v.t, l, tag, vc, &r->vreq);
        else
            rc = ism.be->isend(buf, v.n, v.t, l, tag, vc, &r->vreq);
        ism_vcount_done(&v);
        if (rc) {
            ism_req_free(r);
            return rc;
        }
        *out = r;
        return 0;
    }
    /* The wire carries packed bytes, count * size in type-map order. A contiguous type
     * is sent from the user's buffer; any other is packed straight into the frames (the
     * eager one, or each rendezvous chunk as credits allow), so no temporary copy. */
    size_t bytes = (size_t)count * (size_t)dt->size;
    const void *data = (const char *)((uintptr_t)buf + (uintptr_t)dt->contig_off);
    int dst_g = c->g_of[dst];
    ism.stat_remote_msgs++;
    ism.stat_remote_bytes += bytes;
    if (mode != ISM_MODE_SYNC && bytes <= ism.eager_limit) {
        if (dt->contig) {
            rc = frame_to(ISM_F_EAGER, ctx, dst_g, tag, bytes, 0, 0, data, bytes);
        } else {
            ism_frame_hdr h;
            pack_job job = {dt, buf, count > INT_MAX ? 0 : (int)count};
            hdr_to(&h, ISM_F_EAGER, ctx, dst_g, tag, bytes, 0, 0);
            rc = ism_gw_post_with(&h, bytes, fill_whole, &job);
        }
        if (rc)
            return rc;
        *out = done_req(dst, tag);
        return *out ? 0 : ISM_ERR_NO_MEM;
    }
    ism_req *r = ism_req_alloc(ISM_RQ_RSEND);
    if (!r)
        return ISM_ERR_NO_MEM;
    r->comm = c;
    r->ctx = ctx;
    r->sbuf = dt->contig ? data : buf;
    if (!dt->contig) {
        r->pdt = dt; /* packed chunk by chunk from buf (gwlink.c push_rsends) */
        ism_dt_retain(dt);
    }
    r->total = bytes;
    r->dst_g = dst_g;
    r->sync = mode == ISM_MODE_SYNC;
    r->id = ++ism.next_id;
    st_set(&r->st, dst, tag, bytes, 0);
    ism_list_push(&ism.rsends, r);
    ism_remote_add(1);
    *out = r;
    uint16_t flags = r->sync ? ISM_FRAME_FLAG_SYNC : 0;
    size_t early = bytes < ism.early_left[dst_g] ? bytes : ism.early_left[dst_g];
    if (!early)
        return frame_to(ISM_F_RTS, ctx, dst_g, tag, bytes, r->id, flags, NULL, 0);
    /* Early data: the RTS says how much, then that much in chunks. Posting may turn
     * progress, and a CTS may come meanwhile: push_rsends (gwlink.c) sends nothing of a
     * message before r->off has reached r->early. */
    uint8_t n8[8];
    ism_put_le64(n8, early);
    r->early = early;
    ism.early_left[dst_g] -= early;
    rc = frame_to(ISM_F_RTS, ctx, dst_g, tag, bytes, r->id, flags | ISM_FRAME_FLAG_EARLY, n8, 8);
    while (!rc && r->off < early) {
        size_t n = early - r->off < ism.chunk ? early - r->off : ism.chunk;
        ism_frame_hdr h;
        hdr_to(&h, ISM_F_DATA, ctx, dst_g, 0, r->id, r->off, ISM_FRAME_FLAG_EARLY);
        rc = r->pdt ? ism_gw_post_with(&h, n, ism_fill_packed, r)
                    : ism_gw_post(&h, (const char *)r->sbuf + r->off, n);
        r->off += n;
    }
    return rc;
}

static int matches(const ism_req *r, const ism_frame_hdr *h, int src)
{
    return r->ctx == h->ctx && (r->src == ISM_ANY_SOURCE || r->src == src) &&
           (r->tag == ISM_ANY_TAG || r->tag == h->tag);
}

static void deliver_eager(ism_req *r, const ism_frame_hdr *h, int src, const void *payload)
{
    size_t n = h->len <= r->cap ? h->len : r->cap;
    if (n && r->pdt)
        ism_dt_unpack_bytes(r->pdt, payload, n, r->rbuf);
    else if (n)
        memcpy(r->buf, payload, n);
    st_set(&r->st, src, h->tag, n, h->len > r->cap ? ISM_ERR_TRUNCATE : 0);
    ism_req_complete(r, r->st.error);
}

/* ---- early data, receive side ----
 * An RTS that announces early data opens an entry, whether or not a receive matches it
 * yet. Its chunks go straight into the receive once one has matched, and are held until
 * then (at most what the RTS announced). When all of them are in the receive's buffer the
 * bytes are given back to the sender. Per sender, the entries open at a time announce no
 * more than ISTHMUS_EARLY in all: the sender spends only what it was given back. */
typedef struct ism_early {
    int src_g;
    uint64_t sid;    /* the sender's request id (the RTS's b) */
    size_t len, got; /* announced; arrived */
    char *held;      /* what arrived before a receive matched */
    ism_req *r;      /* the receive, once one has matched */
    struct ism_early *next;
} ism_early;

static ism_early *early_find(int src_g, uint64_t sid)
{
    for (ism_early *e = ism.early_head; e; e = e->next)
        if (e->src_g == src_g && e->sid == sid)
            return e;
    return NULL;
}

static void early_open(const ism_frame_hdr *h, const void *payload)
{
    uint64_t n = h->len == 8 ? ism_get_le64(payload) : 0;
    if (n == 0 || n > h->a || early_find(h->src, h->b))
        ism_die("site %s rank %d: request to send from rank %d with a malformed early-data "
                "announcement (protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->src);
    if (n > ism.early_max - ism.early_in[h->src])
        ism_die("site %s rank %d: rank %d sent %llu bytes ahead of a match while %zu of its "
                "bytes are held here; ISTHMUS_EARLY allows %zu. Every site must run with the "
                "same ISTHMUS_EARLY",
                ism_site_name(ism.lay.site), ism.grank, h->src, (unsigned long long)n,
                ism.early_in[h->src], ism.early_max);
    ism_early *e = calloc(1, sizeof *e);
    if (!e)
        ism_die("site %s rank %d: out of memory receiving from rank %d", ism_site_name(ism.lay.site),
                ism.grank, h->src);
    e->src_g = h->src;
    e->sid = h->b;
    e->len = (size_t)n;
    e->next = ism.early_head;
    ism.early_head = e;
    ism.early_in[h->src] += e->len;
}

/* Put len bytes found at offset off of the message into r's buffer; bytes beyond its room
 * are counted but dropped (the receive ends truncated). */
static void place(ism_req *r, uint64_t off, const void *payload, size_t len)
{
    if (off < r->cap) {
        size_t n = r->cap - off < len ? r->cap - off : len;
        if (r->pdt) {
            const ism_tmap *m = ism_dt_map(r->pdt);
            if (off != r->got) /* pieces come in order; seek only if one did not */
                ism_tcursor_seek(m, (int64_t)off, &r->cur);
            ism_tmap_unpack_at(m, payload, (int64_t)n, r->rbuf, &r->cur);
        } else {
            memcpy((char *)r->buf + off, payload, n);
        }
    }
    r->got += len;
}

/* A matched rendezvous receive that has all its bytes is done. */
static void rndv_check_done(ism_req *r)
{
    if (r->got < r->total)
        return;
    ism_list_remove(&ism.rrecvs, r);
    r->st.bytes = r->total <= r->cap ? r->total : r->cap;
    r->st.error = r->total > r->cap ? ISM_ERR_TRUNCATE : 0;
    ism_req_complete(r, r->st.error);
}

/* Once every early byte is in the receive's buffer: give them back, close the entry. */
static void early_settle(ism_early *e)
{
    if (!e->r || e->got < e->len)
        return;
    if (frame_to(ISM_F_CREDIT, e->r->ctx, e->src_g, 0, 0, e->len, ISM_FRAME_FLAG_EARLY, NULL, 0))
        ism_die("site %s rank %d: out of memory answering rank %d", ism_site_name(ism.lay.site),
                ism.grank, e->src_g);
    ism.early_in[e->src_g] -= e->len;
    for (ism_early **p = &ism.early_head; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    free(e->held);
    free(e);
}

static void early_data(const ism_frame_hdr *h, const void *payload)
{
    ism_early *e = h->src >= 0 && h->src < ism.lay.gsize ? early_find(h->src, h->a) : NULL;
    if (!e || h->b != e->got || h->len > e->len - e->got)
        ism_die("site %s rank %d: early data from rank %d does not belong to any message "
                "(protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->src);
    e->got += h->len;
    if (!e->r) {
        if (!e->held && !(e->held = malloc(e->len)))
            ism_die("site %s rank %d: out of memory holding %zu bytes from rank %d",
                    ism_site_name(ism.lay.site), ism.grank, e->len, h->src);
        memcpy(e->held + h->b, payload, h->len);
        return;
    }
    ism_req *r = e->r;
    place(r, h->b, payload, h->len);
    early_settle(e);
    rndv_check_done(r);
}

static void start_rndv(ism_req *r, const ism_frame_hdr *h, int src)
{
    r->total = h->a;
    r->peer_id = h->b;
    r->id = ++ism.next_id;
    r->got = 0;
    r->started_rndv = 1;
    st_set(&r->st, src, h->tag, 0, 0);
    if (frame_to(ISM_F_CTS, h->ctx, h->src, ism.window, r->peer_id, r->id, 0, NULL, 0))
        ism_die("site %s rank %d: out of memory answering rank %d", ism_site_name(ism.lay.site),
                ism.grank, h->src);
    if (r->total == 0) {
        ism_req_complete(r, 0);
        return;
    }
    ism_list_push(&ism.rrecvs, r);
    if (h->flags & ISM_FRAME_FLAG_EARLY) {
        ism_early *e = early_find(h->src, h->b);
        if (!e)
            ism_die("site %s rank %d: early data from rank %d lost its entry (internal error)",
                    ism_site_name(ism.lay.site), ism.grank, h->src);
        e->r = r;
        r->early = e->len;
        if (e->got)
            place(r, 0, e->held, e->got);
        free(e->held);
        e->held = NULL;
        early_settle(e);
        rndv_check_done(r);
    }
}

/* Withdraw the vendor half of an ANY_SOURCE receive. Returns 1 if the remote side may
 * have the receive, 0 if a local message had already matched it (it is then complete). */
static int withdraw_shadow(ism_req *r)
{
    ism_vstatus vst;
    if (!r->has_shadow)
        return 1;
    r->has_shadow = 0;
    ism.be->cancel(&r->vreq);
    /* completes at once after the cancel: the vendor's own wait, which keeps the core lock
     * (this runs inside frame handlers, mid-way through the matching queues) */
    ism.vbe->wait(&r->vreq, &vst);
    if (vst.cancelled)
        return 1;
    ism_list_remove(&ism.posted, r);
    ism_status_from_vendor(r->comm, &vst, &r->st);
    ism_req_complete(r, vst.error);
    return 0;
}

/* An MPI_T event about a message from another site: source, tag, bytes, and the length
 * of the unexpected queue or the source's site. */
static void raise_message(int kind, const ism_frame_hdr *h, int64_t last)
{
    ism_tev e = {kind, 0, ism_tev_now(), {h->src, h->tag, (int64_t)h->a, last}, NULL};
    ism_tev_hook(&e);
}

static void unexpected_push(const ism_frame_hdr *h, const void *payload)
{
    ism_ux *u = calloc(1, sizeof *u);
    if (!u)
        ism_die("site %s rank %d: out of memory queueing a message from rank %d",
                ism_site_name(ism.lay.site), ism.grank, h->src);
    u->h = *h;
    if (h->type == ISM_F_EAGER && h->len) {
        u->payload = malloc(h->len);
        if (!u->payload)
            ism_die("site %s rank %d: out of memory queueing %u bytes from rank %d",
                    ism_site_name(ism.lay.site), ism.grank, h->len, h->src);
        memcpy(u->payload, payload, h->len);
    }
    if (ism.ux_tail)
        ism.ux_tail->next = u;
    else
        ism.ux_head = u;
    ism.ux_tail = u;
    ism.ux_count++;
    if (__builtin_expect(ism_tev_mask & (1u << ISM_TEV_UNEXPECTED), 0))
        raise_message(ISM_TEV_UNEXPECTED, h, ism.ux_count);
}

static ism_req *find_id(ism_reqlist *l, uint64_t id)
{
    for (ism_req *r = l->head; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

static void handle_message(const ism_frame_hdr *h, const void *payload)
{
    if (h->src < 0 || h->src >= ism.lay.gsize)
        ism_die("site %s rank %d: message from invalid rank %d (protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->src);
    if (__builtin_expect(ism_tev_mask & (1u << ISM_TEV_ARRIVED), 0))
        raise_message(ISM_TEV_ARRIVED, h, ism.site_of_g[h->src]);
    if (h->type == ISM_F_RTS && (h->flags & ISM_FRAME_FLAG_EARLY))
        early_open(h, payload);
    ism_comm *c = ism_comm_by_ctx(h->ctx);
    if (!c) {
        /* The sender has finished creating a communicator that we are still creating:
         * keep the message until a receive on that communicator asks for it. */
        unexpected_push(h, payload);
        return;
    }
    if (c->c_of_g[h->src] < 0)
        ism_die("site %s rank %d: message on context %u from rank %d, not a member "
                "(protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->ctx, h->src);
    int src = c->c_of_g[h->src];
    for (ism_req *r = ism.posted.head, *next; r; r = next) {
        next = r->next;
        if (!matches(r, h, src))
            continue;
        if (!withdraw_shadow(r))
            continue; /* a local message won that receive */
        ism_list_remove(&ism.posted, r);
        if (h->type == ISM_F_EAGER)
            deliver_eager(r, h, src, payload);
        else
            start_rndv(r, h, src);
        return;
    }
    unexpected_push(h, payload);
}

static void handle_data(const ism_frame_hdr *h, const void *payload)
{
    ism_req *r = find_id(&ism.rrecvs, h->a);
    if (!r || h->b > r->total || h->len > r->total - h->b)
        ism_die("site %s rank %d: data frame from rank %d does not belong to any receive "
                "(protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->src);
    place(r, h->b, payload, h->len);
    r->chunks_since_credit++;
    if (r->got >= r->total) {
        rndv_check_done(r);
    } else if (r->chunks_since_credit * 2 >= ism.window) {
        frame_to(ISM_F_CREDIT, h->ctx, h->src, 0, r->peer_id, (uint64_t)r->chunks_since_credit,
                 0, NULL, 0);
        r->chunks_since_credit = 0;
    }
}

void ism_handle_frame(const ism_frame_hdr *h, const void *payload)
{
    ism_req *r;
    switch (h->type) {
    case ISM_F_EAGER:
    case ISM_F_RTS:
        handle_message(h, payload);
        break;
    case ISM_F_CTS:
        r = find_id(&ism.rsends, h->a);
        if (!r)
            ism_die("site %s rank %d: clear-to-send from rank %d for no pending send",
                    ism_site_name(ism.lay.site), ism.grank, h->src);
        r->peer_id = h->b;
        r->credits = h->tag;
        r->cts = 1;
        break;
    case ISM_F_DATA:
        if (h->flags & ISM_FRAME_FLAG_EARLY)
            early_data(h, payload);
        else
            handle_data(h, payload);
        break;
    case ISM_F_CREDIT:
        if (h->flags & ISM_FRAME_FLAG_EARLY) {
            if (h->src < 0 || h->src >= ism.lay.gsize ||
                h->b > ism.early_max - ism.early_left[h->src])
                ism_die("site %s rank %d: rank %d gave back early data it was not sent "
                        "(protocol error)",
                        ism_site_name(ism.lay.site), ism.grank, h->src);
            ism.early_left[h->src] += h->b;
            break;
        }
        r = find_id(&ism.rsends, h->a);
        if (r)
            r->credits += (int)h->b;
        break;
    case ISM_F_ABORT_ACK:
        ism.abort_acked = 1;
        break;
    case ISM_F_ANSWER:
        ism_gw_answered(h, payload);
        break;
    case ISM_F_LINKEV:
        ism_tev_link(h, payload);
        break;
    case ISM_F_IOREP:
        ism_fio_reply(h, payload);
        break;
    case ISM_F_RMA:
        ism_rma_frame(h, payload);
        break;
    case ISM_F_ABORT:
        /* The gateway is stopping the job; it has printed why. */
        ism.be->abort(ism.vworld, (int)h->a ? (int)h->a : 1);
        break;
    default:
        ism_die("site %s rank %d: unexpected %s frame from the gateway", ism_site_name(ism.lay.site),
                ism.grank, ism_frame_type_name(h->type));
    }
}

/* Take u (whose predecessor is prev, or NULL at the head) out of the unexpected queue. */
static void ux_unlink(ism_ux *prev, ism_ux *u)
{
    if (prev)
        prev->next = u->next;
    else
        ism.ux_head = u->next;
    if (ism.ux_tail == u)
        ism.ux_tail = prev;
    ism.ux_count--;
}

/* Try to satisfy a new remote-capable receive from the unexpected queue. */
static int take_unexpected(ism_req *r)
{
    ism_ux *prev = NULL;
    for (ism_ux *u = ism.ux_head; u; prev = u, u = u->next) {
        if (u->h.ctx != r->ctx)
            continue;
        int src = r->comm->c_of_g[u->h.src];
        if (!matches(r, &u->h, src))
            continue;
        ux_unlink(prev, u);
        if (u->h.type == ISM_F_EAGER)
            deliver_eager(r, &u->h, src, u->payload);
        else
            start_rndv(r, &u->h, src);
        free(u->payload);
        free(u);
        return 1;
    }
    return 0;
}

int ism_irecv(void *buf, int64_t count, ism_dt *dt, int src, int tag, ism_comm *c, uint32_t ctx,
              ism_req **out)
{
    int rc;
    if (src == ISM_PROC_NULL) {
        *out = done_req(ISM_PROC_NULL, ISM_ANY_TAG);
        return *out ? 0 : ISM_ERR_NO_MEM;
    }
    if ((src >= 0 && c->l_of[src] >= 0) || (src == ISM_ANY_SOURCE && c->all_local)) {
        ism_req *r = ism_req_alloc(ISM_RQ_VENDOR);
        if (!r)
            return ISM_ERR_NO_MEM;
        r->comm = c;
        ism_vcount v;
        if ((rc = ism_vcount_make(count, dt, &v))) {
            ism_req_free(r);
            return rc;
        }
        rc = ism.be->irecv(buf, v.n, v.t, src >= 0 ? c->l_of[src] : ISM_VSRC_ANY, tag,
                           ctx == c->ctx || !c->vcoll ? c->vcomm : c->vcoll, &r->vreq);
        ism_vcount_done(&v);
        if (rc) {
            ism_req_free(r);
            return rc;
        }
        *out = r;
        return 0;
    }
    ism_req *r = ism_req_alloc(ISM_RQ_RRECV);
    if (!r)
        return ISM_ERR_NO_MEM;
    r->comm = c;
    r->ctx = ctx;
    r->is_recv = 1;
    recv_setup(r, buf, count, dt);
    r->src = src;
    r->tag = tag;
    *out = r;
    ism_remote_add(1);
    ism_progress();
    if (take_unexpected(r))
        return 0;
    if (src == ISM_ANY_SOURCE) {
        ism_vcount v;
        if ((rc = ism_vcount_make(count, dt, &v)))
            return rc;
        rc = ism.be->irecv(buf, v.n, v.t, ISM_VSRC_ANY, tag, c->vcomm, &r->vreq);
        ism_vcount_done(&v);
        if (rc)
            return rc;
        r->has_shadow = 1;
    }
    ism_list_push(&ism.posted, r);
    return 0;
}

int ism_send(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c, int mode)
{
    ism_req *r;
    if (dst >= 0 && c->l_of[dst] >= 0 && !ism.remote_active && count <= INT_MAX) {
        int l = c->l_of[dst];
        if (mode == ISM_MODE_SYNC)
            return ism.be->ssend(buf, count, dt->v, l, tag, c->vcomm);
        if (mode == ISM_MODE_READY)
            return ism.be->rsend(buf, count, dt->v, l, tag, c->vcomm);
        return ism.be->send(buf, count, dt->v, l, tag, c->vcomm);
    }
    int rc = ism_isend(buf, count, dt, dst, tag, c, c->ctx, mode, &r);
    if (rc)
        return rc;
    rc = ism_req_wait(r, NULL);
    ism_req_free(r);
    return rc;
}

int ism_recv(void *buf, int64_t count, ism_dt *dt, int src, int tag, ism_comm *c, ism_status *st)
{
    ism_req *r;
    if (!ism.remote_active && count <= INT_MAX &&
        ((src >= 0 && c->l_of[src] >= 0) || (src == ISM_ANY_SOURCE && c->all_local))) {
        ism_vstatus vst;
        int rc = ism.be->recv(buf, count, dt->v, src >= 0 ? c->l_of[src] : ISM_VSRC_ANY, tag,
                              c->vcomm, st ? &vst : NULL);
        if (st)
            ism_status_from_vendor(c, &vst, st);
        return rc;
    }
    int rc = ism_irecv(buf, count, dt, src, tag, c, c->ctx, &r);
    if (rc)
        return rc;
    rc = ism_req_wait(r, st);
    ism_req_free(r);
    return rc;
}

static int probe_remote(int src, int tag, ism_comm *c, ism_status *st)
{
    ism_req probe = {0};
    probe.ctx = c->ctx;
    probe.src = src;
    probe.tag = tag;
    for (ism_ux *u = ism.ux_head; u; u = u->next) {
        int s = c->c_of_g[u->h.src];
        if (u->h.src >= 0 && u->h.src < ism.lay.gsize && matches(&probe, &u->h, s)) {
            if (st)
                st_set(st, s, u->h.tag, u->h.type == ISM_F_EAGER ? u->h.len : u->h.a, 0);
            return 1;
        }
    }
    return 0;
}

int ism_iprobe(int src, int tag, ism_comm *c, int *flag, ism_status *st)
{
    ism_vstatus vst;
    int rc;
    *flag = 0;
    if (src == ISM_PROC_NULL) {
        *flag = 1;
        if (st)
            st_set(st, ISM_PROC_NULL, ISM_ANY_TAG, 0, 0);
        return 0;
    }
    if (src == ISM_ANY_SOURCE || c->l_of[src] < 0) {
        ism_progress();
        if (probe_remote(src, tag, c, st)) {
            *flag = 1;
            return 0;
        }
        if (src != ISM_ANY_SOURCE)
            return 0;
    }
    rc = ism.be->iprobe(src >= 0 ? c->l_of[src] : ISM_VSRC_ANY, tag, c->vcomm, flag, &vst);
    if (!rc && *flag && st)
        ism_status_from_vendor(c, &vst, st);
    return rc;
}

int ism_probe(int src, int tag, ism_comm *c, ism_status *st)
{
    unsigned spins = 0;
    if (!ism.remote_active && ((src >= 0 && c->l_of[src] >= 0) ||
                               (src == ISM_ANY_SOURCE && c->all_local))) {
        ism_vstatus vst;
        int rc = ism.be->probe(src >= 0 ? c->l_of[src] : ISM_VSRC_ANY, tag, c->vcomm, &vst);
        if (!rc && st)
            ism_status_from_vendor(c, &vst, st);
        return rc;
    }
    for (;;) {
        int flag = 0, rc = ism_iprobe(src, tag, c, &flag, st);
        if (rc || flag)
            return rc;
        if (!ism_progress())
            ism_idle(&spins);
    }
}

int ism_cancel(ism_req *r)
{
    if (r->kind == ISM_RQ_VENDOR) /* a completed one has given its vendor request back */
        return r->done ? 0 : ism.be->cancel(&r->vreq);
    if (r->kind == ISM_RQ_PERSIST)
        return r->inner ? ism_cancel(r->inner) : 0;
    if (r->kind == ISM_RQ_PAIR)
        return r->inner2 && !r->done ? ism_cancel(r->inner2) : 0;
    if (r->kind != ISM_RQ_RRECV || r->done || r->started_rndv)
        return 0; /* sends already handed to the gateway cannot be recalled */
    if (!withdraw_shadow(r))
        return 0;
    ism_list_remove(&ism.posted, r);
    st_set(&r->st, r->src, r->tag, 0, 0);
    r->st.cancelled = 1;
    ism_req_complete(r, 0);
    return 0;
}

/* Matched probe: the message found is removed from matching and handed to the caller. */
int ism_improbe(int src, int tag, ism_comm *c, int *flag, ism_msg **msg, ism_status *st)
{
    *flag = 0;
    if (src == ISM_ANY_SOURCE || c->l_of[src] < 0) {
        ism_req probe = {0};
        probe.ctx = c->ctx;
        probe.src = src;
        probe.tag = tag;
        ism_progress();
        ism_ux *prev = NULL;
        for (ism_ux *u = ism.ux_head; u; prev = u, u = u->next) {
            int s = c->c_of_g[u->h.src];
            if (!matches(&probe, &u->h, s))
                continue;
            ism_msg *m = calloc(1, sizeof *m);
            if (!m)
                return ISM_ERR_NO_MEM;
            ux_unlink(prev, u);
            m->remote = 1;
            m->comm = c;
            m->ux = u;
            if (st)
                st_set(st, s, u->h.tag, u->h.type == ISM_F_EAGER ? u->h.len : u->h.a, 0);
            *msg = m;
            *flag = 1;
            return 0;
        }
        if (src != ISM_ANY_SOURCE)
            return 0;
    }
    ism_vstatus vst;
    ism_vh vm = 0;
    int rc = ism.be->improbe(src >= 0 ? c->l_of[src] : ISM_VSRC_ANY, tag, c->vcomm, flag, &vm,
                             &vst);
    if (rc || !*flag)
        return rc;
    ism_msg *m = calloc(1, sizeof *m);
    if (!m)
        return ISM_ERR_NO_MEM;
    m->comm = c;
    m->vmsg = vm;
    if (st)
        ism_status_from_vendor(c, &vst, st);
    *msg = m;
    return 0;
}

int ism_imrecv(void *buf, int64_t count, ism_dt *dt, ism_msg *m, ism_req **out)
{
    ism_comm *c = m->comm;
    int rc = 0;
    if (!m->remote) {
        ism_req *r = ism_req_alloc(ISM_RQ_VENDOR);
        if (!r)
            return ISM_ERR_NO_MEM;
        r->comm = c;
        ism_vcount v;
        if (!(rc = ism_vcount_make(count, dt, &v))) {
            rc = ism.be->imrecv(buf, v.n, v.t, &m->vmsg, &r->vreq);
            ism_vcount_done(&v);
        }
        if (rc) {
            ism_req_free(r);
            return rc;
        }
        *out = r;
    } else {
        ism_req *r = ism_req_alloc(ISM_RQ_RRECV);
        if (!r)
            return ISM_ERR_NO_MEM;
        r->comm = c;
        r->ctx = m->ux->h.ctx;
        r->is_recv = 1;
        recv_setup(r, buf, count, dt);
        r->src = c->c_of_g[m->ux->h.src];
        r->tag = m->ux->h.tag;
        ism_remote_add(1);
        if (m->ux->h.type == ISM_F_EAGER)
            deliver_eager(r, &m->ux->h, r->src, m->ux->payload);
        else
            start_rndv(r, &m->ux->h, r->src);
        free(m->ux->payload);
        free(m->ux);
        *out = r;
    }
    free(m);
    return rc;
}
