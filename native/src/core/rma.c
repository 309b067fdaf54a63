/* rma.c: Put, Get, Accumulate and the fetching operations on a window (win.h).
 *
 * A target at this site is the vendor's: the operation goes to the vendor window as is,
 * derived datatypes on both sides included. A target at another site gets ISM_F_RMA
 * frames of at most one chunk each, cut at element boundaries (so an accumulate is
 * atomic per element across the cut), carrying packed bytes and the target's basic
 * type; the target process applies them in arrival order when its progress engine runs.
 * Puts and gets move bytes; accumulates go through the vendor's accumulate on the
 * target's own window, so they are atomic with the accumulates of the target's site.
 * Replies come back as REPLY frames addressed by a request id.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "win.h"

/* An operation from here waiting for its reply bytes. */
typedef struct rma_wait {
    uint64_t id;
    ism_win *w;
    char *dst;        /* where the reply bytes go, in order: the user's buffer or tmp */
    size_t total, got;
    char *tmp;        /* packed bytes of a non-contiguous result type, unpacked at the end */
    ism_dt *dt;
    void *ubuf;
    int64_t count;
    ism_req *req;     /* R* forms */
    struct rma_wait *next;
} rma_wait;

static rma_wait *waits;
static uint64_t next_id = 1;
int ism_rma_waiting;

static void rma_hdr(ism_frame_hdr *h, ism_win *w, int target, int kind, uint64_t a, uint64_t b)
{
    ism_frame_init(h, ISM_F_RMA);
    h->ctx = w->c->ctx;
    h->src = ism.grank;
    h->dst = w->c->g_of[target];
    h->tag = kind;
    h->a = a;
    h->b = b;
}

int ism_rma_post(ism_win *w, int target, int kind, uint64_t a, uint64_t b, size_t len,
                 ism_gw_fill_fn fill, void *arg)
{
    ism_frame_hdr h;
    rma_hdr(&h, w, target, kind, a, b);
    int rc = ism_gw_post_with(&h, len, fill, arg);
    if (!rc)
        ism.stat_rma_frames++;
    return rc;
}

int ism_rma_send(ism_win *w, int target, int kind, uint64_t a, uint64_t b, const void *p,
                 size_t len)
{
    int rc = w->nbatched ? ism_rma_batch_flush(w, target) : 0;
    if (rc)
        return rc;
    ism_frame_hdr h;
    rma_hdr(&h, w, target, kind, a, b);
    rc = ism_gw_post(&h, p, len);
    if (!rc)
        ism.stat_rma_frames++;
    return rc;
}

/* The largest piece of data one frame carries: a chunk less the request words, whole
 * elements of the target's type. */
static size_t piece_bytes(int64_t elem)
{
    size_t p = ism.chunk - 16;
    return p - p % (size_t)elem;
}

/* The bytes [off + true lb, off + (tn - 1) * extent + true ub) of the target's window the
 * operation touches must lie inside it: checked here for every target, so that a local
 * one gets MPI_ERR_RMA_RANGE as a remote one does (the vendors differ). */
static int range_check(ism_win *w, int target, int64_t disp, int64_t tn, ism_dt *tdt)
{
    if (!tn)
        return 0;
    const ism_tmap *m = ism_dt_map(tdt);
    int64_t lo = m ? m->true_lb : 0, hi = m ? m->true_ub : tdt->true_extent;
    int64_t off = disp * w->units[target];
    int64_t a = off + lo, b = off + (tn - 1) * tdt->extent + hi;
    if (w->flavor == ISM_WIN_FLAVOR_DYNAMIC) {
        /* addresses in memory the target attached, which only the target knows: checked
         * here on myself, by the vendor at this site, by the target at another (bounds) */
        if (target != w->c->rank)
            return 0;
        if (b < a || !ism_win_mem(w, (uint64_t)a, (uint64_t)(b - a)))
            return ism_rma_fail(ISM_ERR_RMA_RANGE,
                                "addresses 0x%llx..0x%llx are not all in memory attached to "
                                "this rank's dynamic window (regions attached: %d)",
                                (unsigned long long)a, (unsigned long long)b, w->nregions);
        return 0;
    }
    if (a < 0 || b > w->sizes[target])
        return ism_rma_fail(ISM_ERR_RMA_RANGE,
                            "bytes %lld..%lld are outside rank %d's window of %lld bytes",
                            (long long)a, (long long)b, target,
                            (long long)w->sizes[target]);
    return 0;
}

/* The target's side of an operation must be a predefined type here (its bytes are
 * applied as that type); the origin may be anything with the same signature length. */
static int remote_check(ism_win *w, int target, int64_t disp, int64_t tn, ism_dt *tdt,
                        size_t obytes, int derived_ok)
{
    if (!tdt->abi && !derived_ok)
        return ism_rma_fail(ISM_ERR_UNSUPPORTED,
                            "rank %d is at another site and the target datatype is derived: not "
                            "implemented yet for this operation (use a predefined target type)",
                            target);
    size_t tbytes = (size_t)tn * (size_t)tdt->size;
    if (obytes != tbytes)
        return ism_rma_fail(ISM_ERR_TYPE, "the origin describes %zu bytes, the target %zu",
                            obytes, tbytes);
    return range_check(w, target, disp, tn, tdt);
}

/* Packed origin bytes: the buffer itself for a contiguous type, else a packed copy. */
static const char *origin_bytes(const void *o, int64_t on, ism_dt *odt, char **tmp)
{
    *tmp = NULL;
    if (odt->contig)
        return (const char *)o + odt->contig_off;
    *tmp = malloc((size_t)on * (size_t)odt->size + 1);
    if (*tmp)
        ism_dt_pack(odt, o, on, *tmp);
    return *tmp;
}

static int send_data(ism_win *w, int target, int kind, int64_t off, const char *data,
                     size_t bytes, ism_dt *tdt, int op)
{
    size_t piece = piece_bytes(tdt->size);
    int rc = 0;
    for (size_t at = 0; !rc && at < bytes; at += piece) {
        size_t n = bytes - at < piece ? bytes - at : piece;
        rc = ism_rma_send(w, target, kind, (uint64_t)(off + (int64_t)at),
                          ISM_RMA_B(tdt->abi - ISM_DT_BASE, op, w->fences), data + at, n);
    }
    return rc;
}

static ism_req *done_request(void)
{
    ism_req *r = ism_req_alloc(ISM_RQ_DONE);
    if (r) {
        r->done = 1;
        r->st.source = ISM_ANY_SOURCE;
        r->st.tag = ISM_ANY_TAG;
    }
    return r;
}

static int basic_kind(ism_dt *d);

static int is_loc(const ism_op *op)
{
    return op && (op->abi == ISM_OP_BASE + ISM_OPI_MINLOC || op->abi == ISM_OP_BASE + ISM_OPI_MAXLOC);
}

/* Whether an accumulate-kind operation on a target at this site goes through local_pairs:
 * MPI_MINLOC/MAXLOC on a type that is not contiguous, and any operation on a type made of a
 * pair type with padding (MPI_REPLACE and MPI_NO_OP too: Open MPI's defect below is in
 * how osc/rdma moves such elements, whatever the operation). */
static int by_pairs(ism_dt *tdt, const ism_op *op)
{
    if (tdt->contig)
        return 0;
    if (is_loc(op))
        return 1;
    int pk = ism_tmap_pair(ism_dt_map(tdt), NULL);
    return pk >= 0 && !ism_dt_table[pk].contig;
}

/* What an accumulate combines element by element in the target type: the basic kind it is
 * made of, or for MPI_MINLOC/MPI_MAXLOC the value-index pair kind (index into
 * ism_dt_table); -1: neither, which no accumulate takes. */
static int acc_kind(ism_dt *tdt, const ism_op *op)
{
    if (is_loc(op))
        return ism_tmap_pair(ism_dt_map(tdt), NULL);
    return tdt->abi ? tdt->abi - ISM_DT_BASE : basic_kind(tdt);
}

/* op on n elements of bt, both sides packed (type-map order, no padding). Most pair types
 * have padding (a double and an int take 16 bytes, their data 12), and the operations take
 * them as laid out in memory: such elements are unpacked, combined and packed again. */
static int apply_packed(ism_op *op, const char *in, char *inout, int64_t n, ism_dt *bt)
{
    if (n > INT_MAX / 2) { /* the operation takes an int count: halves until it fits */
        int64_t h = n / 2;
        int rc = apply_packed(op, in, inout, h, bt);
        return rc ? rc : apply_packed(op, in + h * bt->size, inout + h * bt->size, n - h, bt);
    }
    if (bt->contig)
        return ism_op_apply(op, in, inout, (int)n, bt);
    char *a = malloc((size_t)n * (size_t)bt->extent + 1), *b = malloc((size_t)n * (size_t)bt->extent + 1);
    int rc = a && b ? 0 : ISM_ERR_NO_MEM;
    if (!rc) {
        ism_dt_unpack(bt, in, a, n);
        ism_dt_unpack(bt, inout, b, n);
        rc = ism_op_apply(op, a, b, (int)n, bt);
        if (!rc)
            ism_dt_pack(bt, b, n, inout);
    }
    free(a);
    free(b);
    return rc;
}

static const char *no_acc_kind(const ism_op *op)
{
    return is_loc(op) ? "an accumulate with MPI_MINLOC or MPI_MAXLOC needs a target datatype "
                        "made of one value-index pair type (such as MPI_DOUBLE_INT)"
                      : "an accumulate's target datatype must be made of one basic type";
}

/* A window whose site part is this process alone has no vendor window (Open MPI 4.1
 * creates none over one process: MPI_ERR_WIN); its operations on itself are done here, by
 * the one process that also applies the other sites' operations, so each is atomic. The
 * origin's bytes (o, on, odt; NULL: none) go into the target (off, tn, tdt), combined with
 * op (NULL: a put), after the old target bytes went to (res, rn, rdt) if res. */
int ism_rma_self(ism_win *w, const void *o, int64_t on, ism_dt *odt, void *res, int64_t rn,
                 ism_dt *rdt, int64_t off, int64_t tn, ism_dt *tdt, ism_op *op)
{
    size_t bytes = (size_t)tn * (size_t)tdt->size;
    const ism_tmap *m = ism_dt_map(tdt);
    int64_t lo = m ? m->true_lb : 0, hi = m ? m->true_ub : tdt->true_extent;
    int64_t a = off + lo, b = off + (tn - 1) * tdt->extent + hi;
    if (tn && (a < 0 || b < a || !ism_win_mem(w, (uint64_t)a, (uint64_t)(b - a))))
        return ism_rma_fail(ISM_ERR_RMA_RANGE, "an operation on this rank's own window reaches "
                                               "outside its memory (bytes %lld..%lld)",
                            (long long)a, (long long)b);
    /* the target's first byte: an address on a dynamic window, else an offset */
    char *t = w->flavor == ISM_WIN_FLAVOR_DYNAMIC ? (char *)(uintptr_t)off : (char *)w->base + off;
    if (!bytes) /* no element: the op is not applied (MPICH's rejects SUM on MPI_BYTE) */
        return 0;
    char *packed = malloc(bytes + 1);
    if (!packed)
        return ISM_ERR_NO_MEM;
    int rc = 0;
    if (res) {
        ism_dt_pack(tdt, t, tn, packed);
        ism_dt_unpack(rdt, packed, res, rn);
    }
    int replace = !op || op->abi == ISM_OP_BASE + ISM_OPI_REPLACE;
    if (o && replace) {
        ism_dt_pack(odt, o, on, packed);
        ism_dt_unpack(tdt, packed, t, tn);
    } else if (o && op->abi != ISM_OP_BASE + ISM_OPI_NO_OP) {
        /* element by element on the packed bytes, as the basic type: the vendors take
         * predefined operations on predefined types only */
        int k = acc_kind(tdt, op);
        char *cur = k >= 0 ? malloc(bytes + 1) : NULL;
        if (!cur) {
            free(packed);
            return k >= 0 ? ISM_ERR_NO_MEM : ism_rma_fail(ISM_ERR_TYPE, "%s", no_acc_kind(op));
        }
        ism_dt *bt = &ism_dt_table[k];
        ism_dt_pack(odt, o, on, packed);
        ism_dt_pack(tdt, t, tn, cur);
        rc = apply_packed(op, packed, cur, (int64_t)(bytes / (size_t)bt->size), bt);
        if (!rc)
            ism_dt_unpack(tdt, cur, t, tn);
        free(cur);
    }
    free(packed);
    return rc;
}

/* A local operation's R* request: the vendor has no request-based form in our table, so
 * the operation is completed locally now (flush_local) and the request is born done. */
static int local_done(ism_win *w, int l, ism_req **req, int rc)
{
    if (rc || !req)
        return rc;
    rc = ism_win_vflush_local(w, l);
    if (!rc && !(*req = done_request()))
        rc = ISM_ERR_NO_MEM;
    return rc;
}

/* The one basic type a derived type is made of (index into ism_dt_table), or -1. */
static int basic_kind(ism_dt *d)
{
    const ism_tmap *m = ism_dt_map(d);
    if (!m || m->nrun < 1)
        return -1;
    for (int64_t i = 1; i < m->nrun; i++)
        if (m->run[i].kind != m->run[0].kind)
            return -1;
    return m->run[0].kind;
}

/* A derived target type at another site: the target side cut into segments of its window
 * (element k's block j is at off + k * extent + blk[j].off), as many per frame as fit a
 * chunk with their data; a block is split only at whole basic elements. data: the packed
 * bytes in type-map order (NULL for GETV, whose reply carries them, and for GACCV with
 * MPI_NO_OP). */
/* One segment frame: {id, data bytes already sent, nseg}, the segments, their data. */
static int send_segment_frame(ism_win *w, int target, int kind, uint64_t b, uint64_t id,
                              uint64_t sent, const uint64_t *segs, size_t nseg, const char *data,
                              size_t bytes, char *frame)
{
    uint64_t head[3] = {id, sent, nseg};
    memcpy(frame, head, 24);
    memcpy(frame + 24, segs, 16 * nseg);
    size_t len = 24 + 16 * nseg;
    if (data) {
        memcpy(frame + len, data + sent, bytes);
        len += bytes;
    }
    return ism_rma_send(w, target, kind, 0, b, frame, len);
}

/* MPI_MINLOC/MPI_MAXLOC on a target type made of value-index pairs (pair kind pk): the
 * target combines whole pairs as they lie in its memory, so a segment is m pairs one
 * pair's extent apart, at (addr, m * the pair's data size); pairs that follow each other
 * in memory and in type-map order share a segment. */
static int send_pair_segments(ism_win *w, int target, int kind, int64_t off, int64_t tn,
                              ism_dt *tdt, const char *data, int op, uint64_t id, int pk)
{
    const ism_tmap *m = ism_dt_map(tdt);
    ism_dt *pt = &ism_dt_table[pk];
    int64_t per = m->nelem / 2, psz = pt->size, pext = pt->extent;
    size_t room = ism.chunk - 24, maxseg = room / 16 + 1;
    int64_t *starts = malloc(sizeof *starts * (size_t)per);
    uint64_t *segs = malloc(sizeof *segs * 2 * maxseg);
    char *frame = malloc(ism.chunk);
    int rc = starts && segs && frame ? 0 : ISM_ERR_NO_MEM;
    if (!rc && ism_tmap_pair(m, starts) != pk)
        rc = ism_rma_fail(ISM_ERR_INTERN, "the pair type of a target datatype changed");
    uint64_t b = ISM_RMA_B(pk, op, w->fences), sent = 0;
    int64_t u = 0, nu = tn * per; /* the next pair, of all pairs of the tn elements */
    while (!rc && u < nu) {
        size_t nseg = 0, used = 0, bytes = 0;
        while (u < nu && used + 16 + (size_t)psz <= room) {
            int64_t at = off + (u / per) * tdt->extent + starts[u % per], n = 0;
            /* as many pairs as follow one another, and fit */
            while (u + n < nu && used + 16 + (size_t)((n + 1) * psz) <= room &&
                   off + ((u + n) / per) * tdt->extent + starts[(u + n) % per] == at + n * pext)
                n++;
            segs[2 * nseg] = (uint64_t)at;
            segs[2 * nseg + 1] = (uint64_t)(n * psz);
            nseg++;
            used += 16 + (size_t)(n * psz);
            bytes += (size_t)(n * psz);
            u += n;
        }
        rc = send_segment_frame(w, target, kind, b, id, sent, segs, nseg, data, bytes, frame);
        sent += bytes;
    }
    free(starts);
    free(segs);
    free(frame);
    return rc;
}

static int send_segments(ism_win *w, int target, int kind, int64_t off, int64_t tn, ism_dt *tdt,
                         const char *data, int op, uint64_t id)
{
    const ism_tmap *m = ism_dt_map(tdt);
    if (!m || m->nblk < 1 || tdt->size == 0)
        return 0; /* no data */
    if (kind == ISM_RMA_ACCV || kind == ISM_RMA_GACCV) {
        /* pairs for MPI_MINLOC/MAXLOC, and for the other operations (MPI_REPLACE, MPI_NO_OP)
         * on a type of pairs of two basic types */
        int loc = is_loc(&ism_op_table[op]);
        int pk = loc || basic_kind(tdt) < 0 ? ism_tmap_pair(m, NULL) : -1;
        if (pk >= 0)
            return send_pair_segments(w, target, kind, off, tn, tdt, data, op, id, pk);
        if (loc)
            return ism_rma_fail(ISM_ERR_TYPE, "%s", no_acc_kind(&ism_op_table[op]));
    }
    int k0 = basic_kind(tdt);
    if ((kind == ISM_RMA_ACCV || kind == ISM_RMA_GACCV) && k0 < 0)
        return ism_rma_fail(ISM_ERR_TYPE, "an accumulate's target datatype must be made of one "
                                          "basic type");
    int64_t elem = k0 >= 0 && ism_dt_table[k0].size > 0 ? ism_dt_table[k0].size : 1;
    size_t room = ism.chunk - 24, maxseg = room / 16 + 1;
    uint64_t *segs = malloc(sizeof *segs * 2 * maxseg);
    char *frame = malloc(ism.chunk);
    if (!segs || !frame) {
        free(segs);
        free(frame);
        return ISM_ERR_NO_MEM;
    }
    int rc = 0;
    uint64_t sent = 0; /* data bytes already in frames */
    int64_t k = 0, j = 0, done = 0; /* element, block, bytes of that block already cut */
    uint64_t b = ISM_RMA_B(k0 >= 0 ? k0 : 0x47, op, w->fences);
    while (!rc && k < tn) {
        size_t nseg = 0, used = 0, bytes = 0;
        while (k < tn && used + 16 + (size_t)elem <= room) {
            int64_t left = m->blk[j].len - done, fit = (int64_t)(room - used - 16);
            int64_t take = left <= fit ? left : fit - fit % elem;
            segs[2 * nseg] = (uint64_t)(off + k * tdt->extent + m->blk[j].off + done);
            segs[2 * nseg + 1] = (uint64_t)take;
            nseg++;
            used += 16 + (size_t)take;
            bytes += (size_t)take;
            done += take;
            if (done == m->blk[j].len) {
                done = 0;
                if (++j == m->nblk) {
                    j = 0;
                    k++;
                }
            }
        }
        rc = send_segment_frame(w, target, kind, b, id, sent, segs, nseg, data, bytes, frame);
        sent += bytes;
    }
    free(segs);
    free(frame);
    return rc;
}

static int local_pairs(ism_win *w, int l, const void *o, int64_t on, ism_dt *odt, void *r,
                       int64_t rn, ism_dt *rdt, int64_t off, int64_t tn, ism_dt *tdt, ism_op *op);

/* The vendor's one-sided calls take int counts: a count beyond INT_MAX goes to it as one
 * element of a type that covers the count (ism_vcount_make, as point-to-point does), or in
 * pieces (below).
 * kind: 'p' put, 'g' get (into o), 'a' accumulate, 'G' get-accumulate (result r). */
static int vendor_op(int kind, const void *o, int64_t on, ism_dt *odt, void *r, int64_t rn,
                     ism_dt *rdt, int l, int64_t off, int64_t tn, ism_dt *tdt, ism_op *op,
                     ism_win *w)
{
    /* MPICH 4.0 fails an operation of more than 2 GiB within a node (an assertion in its
     * active-message path; with mpirun alone too). The same element-wise operation on
     * contiguous types goes in pieces of at most 2^30 bytes instead, in order: a put's or
     * get's bytes are not atomic as a whole, and an accumulate's atomicity and ordering are
     * per element. */
    const int64_t piece = (int64_t)1 << 30;
    if (on == tn && odt->contig && tdt->contig && odt->size == tdt->size && odt->size > 0 &&
        on * (int64_t)odt->size > piece && (kind != 'G' || (rn == on && rdt->contig))) {
        int64_t per = piece / odt->size > 0 ? piece / odt->size : 1;
        int rc = 0;
        for (int64_t i = 0; !rc && i < on; i += per) {
            int64_t n = on - i < per ? on - i : per;
            rc = vendor_op(kind, o ? (const char *)o + i * (int64_t)odt->extent : NULL, n, odt,
                           r ? (char *)r + i * (int64_t)rdt->extent : NULL, n, rdt, l,
                           off + i * (int64_t)tdt->extent, n, tdt, op, w);
        }
        return rc;
    }
    ism_vcount vo = {0, 0, 0}, vr = {0, 0, 0}, vt = {0, 0, 0};
    int rc = ism_vcount_make(on, odt, &vo);
    if (!rc && rdt)
        rc = ism_vcount_make(rn, rdt, &vr);
    if (!rc)
        rc = ism_vcount_make(tn, tdt, &vt);
    off = ism_win_voff(w, l, off);
    if (!rc) {
        ism_win_vpend(w, l);
        switch (kind) {
        case 'p':
            rc = ism.be->put(o, vo.n, vo.t, l, off, vt.n, vt.t, w->vwin);
            break;
        case 'g':
            rc = ism.be->get((void *)o, vo.n, vo.t, l, off, vt.n, vt.t, w->vwin);
            break;
        case 'a':
            rc = ism.be->accumulate(o, vo.n, vo.t, l, off, vt.n, vt.t, op->v, w->vwin);
            break;
        default:
            rc = ism.be->get_accumulate(o, vo.n, vo.t, r, vr.n, vr.t, l, off, vt.n, vt.t, op->v,
                                        w->vwin);
        }
    }
    ism_vcount_done(&vo);
    ism_vcount_done(&vr);
    ism_vcount_done(&vt);
    return rc;
}

/* A put (op NULL) or an accumulate. */
static int put_acc(ism_win *w, const void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                   int64_t tn, ism_dt *tdt, ism_op *op, ism_req **req)
{
    if (target == ISM_PROC_NULL)
        return req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0;
    int l = w->c->l_of[target];
    int64_t off = disp * w->units[target];
    if (l >= 0 && range_check(w, target, disp, tn, tdt))
        return ISM_ERR_RMA_RANGE;
    if (l >= 0 && !w->vwin)
        return local_done(w, l, req, ism_rma_self(w, o, on, odt, NULL, 0, NULL, off, tn, tdt, op));
    if (l >= 0 && !op && ism_rma_direct(w, l, on, odt, tn, tdt)) {
        ism_rma_direct_copy(w, l, 1, (void *)o, on, odt, off, tdt);
        return req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0;
    }
    if (l >= 0 && op && by_pairs(tdt, op))
        return local_done(w, l, req, local_pairs(w, l, o, on, odt, NULL, 0, NULL, off, tn, tdt, op));
    if (l >= 0)
        return local_done(w, l, req,
                          vendor_op(op ? 'a' : 'p', o, on, odt, NULL, 0, NULL, l, off, tn, tdt,
                                    op, w));
    size_t bytes = (size_t)on * (size_t)odt->size;
    int rc = remote_check(w, target, disp, tn, tdt, bytes, 1);
    if (rc || !bytes) /* nothing to move: the buffer may be NULL, no frame is due */
        return rc ? rc : (req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0);
    char *tmp;
    const char *data = origin_bytes(o, on, odt, &tmp);
    if (!data)
        return ISM_ERR_NO_MEM;
    int taken = 0;
    if (!op) /* a small put joins the target's batch (rma_batch.c) */
        rc = ism_rma_batch_put(w, target, off, tn, tdt, data, bytes, &taken);
    if (!rc && !taken && tdt->abi && tdt->contig) /* a pair type with padding takes segments */
        rc = send_data(w, target, op ? ISM_RMA_ACC : ISM_RMA_PUT, off, data, bytes, tdt,
                       op ? op->abi - ISM_OP_BASE : 0);
    else if (!rc && !taken)
        rc = send_segments(w, target, op ? ISM_RMA_ACCV : ISM_RMA_PUTV, off, tn, tdt, data,
                           op ? op->abi - ISM_OP_BASE : 0, 0);
    free(tmp);
    if (!rc && req && !(*req = done_request()))
        rc = ISM_ERR_NO_MEM;
    return rc;
}

int ism_rma_put(ism_win *w, const void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                int64_t tn, ism_dt *tdt, ism_req **req)
{
    return put_acc(w, o, on, odt, target, disp, tn, tdt, NULL, req);
}

int ism_rma_acc(ism_win *w, const void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                int64_t tn, ism_dt *tdt, ism_op *op, ism_req **req)
{
    if (!op->abi)
        return ism_rma_fail(ISM_ERR_OP, "MPI_Accumulate takes predefined operations only");
    return put_acc(w, o, on, odt, target, disp, tn, tdt, op, req);
}

/* Register a reply of `total` bytes for the result buffer (u, n, dt). */
static rma_wait *wait_new(ism_win *w, void *u, int64_t n, ism_dt *dt, size_t total,
                          ism_req **req)
{
    rma_wait *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->id = next_id++;
    x->w = w;
    x->total = total;
    if (dt->contig) {
        x->dst = (char *)u + dt->contig_off;
    } else {
        x->tmp = malloc(total + 1);
        if (!x->tmp) {
            free(x);
            return NULL;
        }
        x->dst = x->tmp;
        x->dt = dt;
        x->ubuf = u;
        x->count = n;
        ism_dt_retain(dt);
    }
    if (req) {
        x->req = ism_req_alloc(ISM_RQ_DONE);
        if (!x->req) {
            free(x->tmp);
            free(x);
            return NULL;
        }
        x->req->st.source = ISM_ANY_SOURCE;
        x->req->st.tag = ISM_ANY_TAG;
        *req = x->req;
    }
    x->next = waits;
    waits = x;
    w->gets++;
    return x;
}

static void wait_finish(rma_wait *x)
{
    for (rma_wait **p = &waits; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            break;
        }
    if (x->dt) {
        ism_dt_unpack(x->dt, x->tmp, x->ubuf, x->count);
        ism_dt_release(x->dt);
    }
    free(x->tmp);
    x->w->gets--;
    if (x->req)
        ism_req_complete(x->req, 0);
    free(x);
}

static void reply_in(const ism_frame_hdr *h, const void *payload)
{
    rma_wait *x = waits;
    while (x && x->id != h->a)
        x = x->next;
    if (!x || h->b + h->len > x->total)
        ism_die("site %s rank %d: one-sided reply from rank %d for no operation of this rank "
                "(id %llu, %u bytes at %llu; protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->src, (unsigned long long)h->a, h->len,
                (unsigned long long)h->b);
    memcpy(x->dst + h->b, payload, h->len);
    x->got += h->len;
    if (x->got == x->total)
        wait_finish(x);
}

int ism_rma_get(ism_win *w, void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                int64_t tn, ism_dt *tdt, ism_req **req)
{
    if (target == ISM_PROC_NULL)
        return req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0;
    int l = w->c->l_of[target];
    if (l >= 0 && range_check(w, target, disp, tn, tdt))
        return ISM_ERR_RMA_RANGE;
    if (l >= 0 && !w->vwin)
        return local_done(w, l, req, ism_rma_self(w, NULL, 0, NULL, o, on, odt,
                                                  disp * w->units[target], tn, tdt, NULL));
    if (l >= 0 && ism_rma_direct(w, l, on, odt, tn, tdt)) {
        ism_rma_direct_copy(w, l, 0, o, on, odt, disp * w->units[target], tdt);
        return req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0;
    }
    if (l >= 0)
        return local_done(w, l, req,
                          vendor_op('g', o, on, odt, NULL, 0, NULL, l, disp * w->units[target],
                                    tn, tdt, NULL, w));
    size_t bytes = (size_t)on * (size_t)odt->size;
    int rc = remote_check(w, target, disp, tn, tdt, bytes, 1);
    if (rc)
        return rc;
    if (!bytes)
        return req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0;
    rma_wait *x = wait_new(w, o, on, odt, bytes, req);
    if (!x)
        return ISM_ERR_NO_MEM;
    if (!(tdt->abi && tdt->contig))
        return send_segments(w, target, ISM_RMA_GETV, disp * w->units[target], tn, tdt, NULL, 0,
                             x->id);
    uint64_t p[2] = {x->id, bytes};
    return ism_rma_send(w, target, ISM_RMA_GET, (uint64_t)(disp * w->units[target]),
                        ISM_RMA_B(tdt->abi - ISM_DT_BASE, 0, w->fences), p, sizeof p);
}

/* A get-accumulate on a target at this site whose target type is derived (of one basic
 * type), as one vendor call per block of that type with the basic type. Open MPI 4.1.4's
 * osc/rdma returns wrong fetched values for a derived target type (the window held in
 * MPI_Win_lock_all, as isthmus holds it; its osc/pt2pt is right: docs/design.md). MPI makes
 * an accumulate atomic per basic element only, so the blocks keep what MPI promises. The
 * fetched bytes land in a packed copy, unpacked into r after a flush. */
static int local_gacc_blocks(ism_win *w, int l, const void *o, int64_t on, ism_dt *odt, void *r,
                             int64_t rn, ism_dt *rdt, int64_t off, int64_t tn, ism_dt *tdt,
                             ism_op *op)
{
    const ism_tmap *m = ism_dt_map(tdt);
    ism_dt *bt = &ism_dt_table[basic_kind(tdt)];
    size_t bytes = (size_t)rn * (size_t)rdt->size;
    char *otmp = NULL, *res = malloc(bytes + 1);
    const char *data = o ? origin_bytes(o, on, odt, &otmp) : NULL;
    if (!res || (o && !data)) {
        free(res);
        free(otmp);
        return ISM_ERR_NO_MEM;
    }
    int rc = 0;
    size_t at = 0;
    ism_win_vpend(w, l);
    for (int64_t k = 0; !rc && k < tn; k++)
        for (int64_t j = 0; !rc && j < m->nblk; j++) {
            int cnt = (int)(m->blk[j].len / bt->size);
            rc = ism.be->get_accumulate(data ? data + at : NULL, data ? cnt : 0, bt->v, res + at,
                                        cnt, bt->v, l,
                                        ism_win_voff(w, l, off + k * tdt->extent + m->blk[j].off),
                                        cnt, bt->v, op->v, w->vwin);
            at += (size_t)m->blk[j].len;
        }
    if (!rc)
        rc = ism.be->win_sync(ISM_VWIN_FLUSH, l, w->vwin);
    if (!rc)
        ism_dt_unpack(rdt, res, r, rn);
    free(res);
    free(otmp);
    return rc;
}

/* MPI_MINLOC/MPI_MAXLOC (and their get-accumulate) on a target at this site whose target
 * type is derived from a value-index pair type, or is a pair type with padding: one vendor
 * call per run of pairs that follow each other in memory, with the predefined pair type
 * (an accumulate is atomic per pair only, so the runs keep what MPI promises). The origin's
 * and the result's pairs are in native layout in temporaries, in type-map order.
 * Open MPI 4.1.4's osc/rdma gets pair types with padding wrong on another rank's window
 * (reproduced with plain mpirun, MPI_Win_create and MPI_Win_lock_all): it moves count times
 * the data size, so the last pairs of a call are lost and the heap is corrupted, and of a
 * derived type of MPI_SHORT_INT nothing arrives; MPI_REPLACE and MPI_NO_OP (MPICH's
 * atomic_get_* fetch wrong pairs) as much as MPI_MINLOC/MAXLOC. One pair per call is right there when
 * the pair's data has no gap (MPI_DOUBLE_INT, MPI_LONG_INT, MPI_LONG_DOUBLE_INT); a pair
 * with a gap (MPI_SHORT_INT: the short, 2 bytes of padding, the int) would lose half its
 * index even so, and is refused rather than corrupted. */
static int local_pairs(ism_win *w, int l, const void *o, int64_t on, ism_dt *odt, void *r,
                       int64_t rn, ism_dt *rdt, int64_t off, int64_t tn, ism_dt *tdt, ism_op *op)
{
    const ism_tmap *m = ism_dt_map(tdt);
    int pk = ism_tmap_pair(m, NULL);
    if (pk < 0)
        return ism_rma_fail(ISM_ERR_TYPE, "%s", no_acc_kind(op));
    ism_dt *pt = &ism_dt_table[pk];
    int one = !pt->contig && !strcmp(ism.be->vendor, "openmpi");
    if (one && pt->size != pt->true_extent)
        return ism_rma_fail(ISM_ERR_UNSUPPORTED,
                            "an accumulate or get-accumulate on %s between two ranks of one site "
                            "is not supported with Open MPI inside the site: its osc/rdma moves "
                            "only the first %lld bytes of each pair, half of the index (a pair "
                            "without a gap, such as MPI_DOUBLE_INT or MPI_2INT, works)",
                            ism_dt_predefined_name(pk), (long long)pt->size);
    int64_t per = m->nelem / 2, nu = tn * per;
    size_t nat = (size_t)nu * (size_t)pt->extent + 1;
    int64_t *starts = malloc(sizeof *starts * (size_t)(per ? per : 1));
    char *otmp = NULL, *onat = malloc(nat), *rnat = r ? malloc(nat) : NULL;
    const char *data = o ? origin_bytes(o, on, odt, &otmp) : NULL;
    int rc = starts && onat && (!r || rnat) && (!o || data) ? 0 : ISM_ERR_NO_MEM;
    if (!rc) {
        ism_tmap_pair(m, starts);
        if (data)
            ism_dt_unpack(pt, data, onat, nu);
    }
    ism_win_vpend(w, l);
    for (int64_t u = 0; !rc && u < nu;) {
        int64_t at = off + (u / per) * tdt->extent + starts[u % per], n = 1;
        while (!one && u + n < nu && n < INT_MAX &&
               off + ((u + n) / per) * tdt->extent + starts[(u + n) % per] == at + n * pt->extent)
            n++;
        char *src = data ? onat + u * pt->extent : NULL;
        at = ism_win_voff(w, l, at);
        rc = r ? ism.be->get_accumulate(src, src ? (int)n : 0, pt->v, rnat + u * pt->extent,
                                        (int)n, pt->v, l, at, (int)n, pt->v, op->v, w->vwin)
               : ism.be->accumulate(src, (int)n, pt->v, l, at, (int)n, pt->v, op->v, w->vwin);
        u += n;
    }
    if (!rc && r)
        rc = ism.be->win_sync(ISM_VWIN_FLUSH, l, w->vwin);
    if (!rc && r) {
        /* native pairs -> packed (type-map order) -> the result's own type */
        char *packed = malloc((size_t)nu * (size_t)pt->size + 1);
        if (!packed) {
            rc = ISM_ERR_NO_MEM;
        } else {
            ism_dt_pack(pt, rnat, nu, packed);
            ism_dt_unpack(rdt, packed, r, rn);
            free(packed);
        }
    }
    free(starts);
    free(onat);
    free(rnat);
    free(otmp);
    return rc;
}

int ism_rma_get_acc(ism_win *w, const void *o, int64_t on, ism_dt *odt, void *r, int64_t rn,
                    ism_dt *rdt, int target, int64_t disp, int64_t tn, ism_dt *tdt, ism_op *op,
                    ism_req **req)
{
    if (target == ISM_PROC_NULL)
        return req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0;
    if (!op->abi)
        return ism_rma_fail(ISM_ERR_OP, "MPI_Get_accumulate takes predefined operations only");
    /* an op other than MPI_NO_OP takes the origin's bytes, even from a NULL buffer of count
     * 0: then the sizes differ, an error for every target (the vendors read the NULL
     * buffer), not a silent MPI_NO_OP */
    int noop = op->abi == ISM_OP_BASE + ISM_OPI_NO_OP;
    size_t obytes = odt ? (size_t)on * (size_t)odt->size : 0;
    if (!noop && obytes != (size_t)rn * (size_t)rdt->size)
        return ism_rma_fail(ISM_ERR_TYPE, "the origin describes %zu bytes, the result %zu",
                            obytes, (size_t)rn * (size_t)rdt->size);
    int l = w->c->l_of[target];
    if (l >= 0 && range_check(w, target, disp, tn, tdt))
        return ISM_ERR_RMA_RANGE;
    if (l >= 0 && !w->vwin)
        return local_done(w, l, req, ism_rma_self(w, o, on, odt, r, rn, rdt,
                                                  disp * w->units[target], tn, tdt, op));
    if (l >= 0 && op && by_pairs(tdt, op))
        return local_done(w, l, req, local_pairs(w, l, o, on, odt, r, rn, rdt,
                                                 disp * w->units[target], tn, tdt, op));
    if (l >= 0 && !tdt->abi && basic_kind(tdt) >= 0)
        return local_done(w, l, req, local_gacc_blocks(w, l, o, on, odt, r, rn, rdt,
                                                       disp * w->units[target], tn, tdt, op));
    if (l >= 0)
        return local_done(w, l, req,
                          vendor_op('G', o, o ? on : 0, o ? odt : rdt, r, rn, rdt, l,
                                    disp * w->units[target], tn, tdt, op, w));
    size_t rbytes = (size_t)rn * (size_t)rdt->size;
    int rc = remote_check(w, target, disp, tn, tdt, rbytes, 1);
    if (!rc && (is_loc(op) ? acc_kind(tdt, op) < 0
                           : !tdt->abi && basic_kind(tdt) < 0 && ism_tmap_pair(ism_dt_map(tdt), NULL) < 0))
        rc = ism_rma_fail(ISM_ERR_TYPE, "rank %d is at another site: %s", target, no_acc_kind(op));

    if (rc || !rbytes)
        return rc ? rc : (req && !(*req = done_request()) ? ISM_ERR_NO_MEM : 0);
    char *tmp = NULL;
    const char *data = noop ? NULL : origin_bytes(o, on, odt, &tmp);
    if (!noop && !data)
        return ISM_ERR_NO_MEM;
    rma_wait *x = wait_new(w, r, rn, rdt, rbytes, req);
    int64_t off = disp * w->units[target];
    if (x && !(tdt->abi && tdt->contig)) { /* derived or padded: segments, one reply (GACCV) */
        rc = send_segments(w, target, ISM_RMA_GACCV, off, tn, tdt, data, op->abi - ISM_OP_BASE,
                           x->id);
        free(tmp);
        return rc;
    }
    size_t piece = piece_bytes(tdt->size);
    char *frame = x ? malloc(16 + piece) : NULL;
    if (!frame) {
        free(tmp);
        return ISM_ERR_NO_MEM;
    }
    for (size_t at = 0; !rc && at < rbytes; at += piece) {
        size_t n = rbytes - at < piece ? rbytes - at : piece;
        uint64_t words[2] = {x->id, at};
        memcpy(frame, words, 16);
        if (data)
            memcpy(frame + 16, data + at, n);
        /* without origin data (MPI_NO_OP) the target reads n bytes: say how many */
        else
            memcpy(frame + 16, &(uint64_t){n}, 8);
        rc = ism_rma_send(w, target, ISM_RMA_GACC, (uint64_t)(off + (int64_t)at),
                          ISM_RMA_B(tdt->abi - ISM_DT_BASE, op->abi - ISM_OP_BASE, w->fences),
                          frame, 16 + (data ? n : 8));
    }
    free(frame);
    free(tmp);
    return rc;
}

int ism_rma_cas(ism_win *w, const void *o, const void *cmp, void *r, ism_dt *dt, int target,
                int64_t disp)
{
    if (target == ISM_PROC_NULL)
        return 0;
    int l = w->c->l_of[target];
    if (l >= 0 && range_check(w, target, disp, 1, dt))
        return ISM_ERR_RMA_RANGE;
    if (l >= 0 && !w->vwin) {
        char *t = ism_win_mem(w, (uint64_t)(disp * w->units[target]), (uint64_t)dt->size);
        memcpy(r, t, (size_t)dt->size);
        if (!memcmp(t, cmp, (size_t)dt->size))
            memcpy(t, o, (size_t)dt->size);
        return 0;
    }
    if (l >= 0)
        ism_win_vpend(w, l);
    if (l >= 0)
        return ism.be->compare_and_swap(o, cmp, r, dt->v, l,
                                        ism_win_voff(w, l, disp * w->units[target]), w->vwin);
    int rc = remote_check(w, target, disp, 1, dt, (size_t)dt->size, 0);
    if (rc)
        return rc;
    rma_wait *x = wait_new(w, r, 1, dt, (size_t)dt->size, NULL);
    char frame[16 + 2 * 16];
    if (!x || dt->size > 16)
        return ISM_ERR_NO_MEM;
    uint64_t words[2] = {x->id, 0};
    memcpy(frame, words, 16);
    memcpy(frame + 16, o, (size_t)dt->size);
    memcpy(frame + 16 + dt->size, cmp, (size_t)dt->size);
    return ism_rma_send(w, target, ISM_RMA_CAS, (uint64_t)(disp * w->units[target]),
                        ISM_RMA_B(dt->abi - ISM_DT_BASE, 0, w->fences), frame,
                        16 + 2 * (size_t)dt->size);
}

/* ---- the target's side ---- */

void ism_rma_grant(ism_win *w, int src_g)
{
    if (ism_rma_send(w, w->c->c_of_g[src_g], ISM_RMA_GRANT, 0, 0, NULL, 0))
        ism_die("site %s rank %d: cannot grant a lock to rank %d", ism_site_name(ism.lay.site),
                ism.grank, src_g);
}

static void reply(ism_win *w, int src_g, uint64_t id, uint64_t off, const void *p, size_t n)
{
    int src = w->c->c_of_g[src_g];
    if (ism_rma_send(w, src, ISM_RMA_REPLY, id, off, p, n))
        ism_die("site %s rank %d: cannot send a one-sided reply to rank %d",
                ism_site_name(ism.lay.site), ism.grank, src);
}

/* The window memory a frame names. The origin checked the range of a window with a known
 * size, so a miss there is a protocol error; on a dynamic window only this process knows
 * what it attached, and a miss is the origin program's error (MPI 4.1 12.2.4: accessing
 * memory not attached is erroneous): it stops the job, naming both ranks. */
static char *bounds(ism_win *w, const ism_frame_hdr *h, uint64_t off, uint64_t n)
{
    char *t = ism_win_mem(w, off, n);
    if (t)
        return t;
    if (w->flavor == ISM_WIN_FLAVOR_DYNAMIC)
        ism_die("site %s rank %d: rank %d at site %s accessed addresses 0x%llx..0x%llx of "
                "this rank's dynamic window, which are not all in memory attached to it "
                "(MPI_Win_attach; regions attached: %d)",
                ism_site_name(ism.lay.site), ism.grank, h->src,
                ism_site_name(ism.site_of_g[h->src]), (unsigned long long)off,
                (unsigned long long)(off + n), w->nregions);
    ism_die("site %s rank %d: one-sided operation from rank %d on bytes %llu..%llu of a "
            "window of %lld bytes (protocol error)",
            ism_site_name(ism.lay.site), ism.grank, h->src, (unsigned long long)off,
            (unsigned long long)(off + n), (long long)w->size);
    return NULL;
}

static ism_dt *kind_dt(const ism_frame_hdr *h)
{
    ism_dt *d = &ism_dt_table[ISM_RMA_B_DT(h->b)];
    if (!d->v || d->size <= 0)
        ism_die("site %s rank %d: one-sided operation from rank %d with a datatype this "
                "site's MPI lacks (ABI handle 0x%x)",
                ism_site_name(ism.lay.site), ism.grank, h->src, ISM_RMA_B_DT(h->b) + ISM_DT_BASE);
    return d;
}

static void vendor_ok(int rc, const ism_frame_hdr *h, const char *what)
{
    if (rc)
        ism_die("site %s rank %d: the vendor failed to apply %s from rank %d (error class %d)",
                ism_site_name(ism.lay.site), ism.grank, what, h->src, rc);
}

/* The window bytes that n packed bytes of elements of d cover: more than n for a pair type
 * with padding. A count that is no whole number of elements is a protocol error. */
static uint64_t acc_span(const ism_frame_hdr *h, ism_dt *d, uint64_t n)
{
    if (d->contig)
        return n;
    if (n % (uint64_t)d->size)
        ism_die("site %s rank %d: one-sided accumulate from rank %d of %llu bytes, no whole "
                "number of %lld-byte elements (protocol error)", ism_site_name(ism.lay.site),
                ism.grank, h->src, (unsigned long long)n, (long long)d->size);
    return n ? (n / (uint64_t)d->size - 1) * (uint64_t)d->extent + (uint64_t)d->true_extent : 0;
}

/* The vendor's atomic accumulate on my own window (completed before the frame is done). in
 * and out are packed (n bytes); the elements lie in the window as in memory. */
static void self_acc(ism_win *w, const ism_frame_hdr *h, uint64_t off, const void *in, void *out,
                     size_t n)
{
    ism_dt *d = kind_dt(h);
    int cnt = (int)(n / (size_t)d->size), me = w->c->lrank;
    /* a pair type with padding: the vendor takes its elements as laid out in memory */
    char *nin = NULL, *nout = NULL;
    if (!d->contig) {
        size_t nat = (size_t)cnt * (size_t)d->extent + 1;
        nin = in ? malloc(nat) : NULL;
        nout = out ? malloc(nat) : NULL;
        if ((in && !nin) || (out && !nout))
            ism_die("site %s rank %d: out of memory for an accumulate from rank %d",
                    ism_site_name(ism.lay.site), ism.grank, h->src);
        if (in)
            ism_dt_unpack(d, in, nin, cnt);
    }
    const void *vin = nin ? nin : in;
    void *vout = nout ? nout : out;
    int rc;
    if (!w->vwin) {
        ism_op *op = &ism_op_table[ISM_RMA_B_OP(h->b)];
        rc = ism_rma_self(w, vin, vin ? cnt : 0, d, vout, vout ? cnt : 0, d, (int64_t)off, cnt, d,
                          op);
    } else {
        ism_vh op = ism.be->op[ISM_RMA_B_OP(h->b)];
        int64_t voff = ism_win_voff(w, me, (int64_t)off);
        rc = vout ? ism.be->get_accumulate(vin, vin ? cnt : 0, d->v, vout, cnt, d->v, me, voff,
                                           cnt, d->v, op, w->vwin)
                  : ism.be->accumulate(vin, cnt, d->v, me, voff, cnt, d->v, op, w->vwin);
        if (!rc)
            rc = ism.be->win_sync(ISM_VWIN_FLUSH, me, w->vwin);
    }
    vendor_ok(rc, h, "an accumulate");
    if (nout)
        ism_dt_pack(d, nout, cnt, out);
    free(nin);
    free(nout);
}

/* PUTV, ACCV, GETV, GACCV: the segments are checked against the window and the frame before
 * any byte moves. */
static void apply_segments(ism_win *w, const ism_frame_hdr *h, const char *p)
{
    uint64_t head[3];
    if (h->len < 24)
        ism_die("site %s rank %d: short one-sided segment frame from rank %d (protocol error)",
                ism_site_name(ism.lay.site), ism.grank, h->src);
    memcpy(head, p, 24);
    uint64_t nseg = head[2], total = 0;
    if (nseg > (h->len - 24) / 16)
        ism_die("site %s rank %d: one-sided frame from rank %d names %llu segments in %u bytes "
                "(protocol error)", ism_site_name(ism.lay.site), ism.grank, h->src,
                (unsigned long long)nseg, h->len);
    const char *sp = p + 24, *data = sp + 16 * nseg;
    int acc = h->tag == ISM_RMA_ACCV || h->tag == ISM_RMA_GACCV;
    ism_dt *d = acc ? kind_dt(h) : NULL;
    for (uint64_t i = 0; i < nseg; i++) {
        uint64_t so, sl;
        memcpy(&so, sp + 16 * i, 8);
        memcpy(&sl, sp + 16 * i + 8, 8);
        bounds(w, h, so, acc ? acc_span(h, d, sl) : sl);
        total += sl;
    }
    size_t have = h->len - 24 - 16 * nseg;
    int fetch = h->tag == ISM_RMA_GETV || h->tag == ISM_RMA_GACCV;
    /* no data: a get, or a get-accumulate with MPI_NO_OP */
    int nodata = h->tag == ISM_RMA_GETV ||
                 (h->tag == ISM_RMA_GACCV && ISM_RMA_B_OP(h->b) == ISM_OPI_NO_OP);
    if (nodata ? have != 0 : total != have)
        ism_die("site %s rank %d: one-sided frame from rank %d carries %zu bytes for segments of "
                "%llu (protocol error)", ism_site_name(ism.lay.site), ism.grank, h->src, have,
                (unsigned long long)total);
    char *out = fetch ? malloc(total + 1) : NULL;
    if (fetch && !out)
        ism_die("site %s rank %d: out of memory for a get's reply", ism_site_name(ism.lay.site),
                ism.grank);
    size_t at = 0;
    for (uint64_t i = 0; i < nseg; i++) {
        uint64_t so, sl;
        memcpy(&so, sp + 16 * i, 8);
        memcpy(&sl, sp + 16 * i + 8, 8);
        if (h->tag == ISM_RMA_PUTV)
            memcpy(bounds(w, h, so, sl), data + at, sl);
        else if (h->tag == ISM_RMA_ACCV)
            self_acc(w, h, so, data + at, NULL, sl);
        else if (h->tag == ISM_RMA_GACCV)
            self_acc(w, h, so, nodata ? NULL : data + at, out + at, sl);
        else
            memcpy(out + at, bounds(w, h, so, sl), sl);
        at += sl;
    }
    if (out) {
        reply(w, h->src, head[0], head[1], out, total);
        free(out);
    }
}

void ism_rma_apply(ism_win *w, const ism_frame_hdr *h, const void *payload)
{
    const char *p = payload;
    switch (h->tag) {
    case ISM_RMA_PUT:
        memcpy(bounds(w, h, h->a, h->len), p, h->len);
        break;
    case ISM_RMA_ACC:
        bounds(w, h, h->a, acc_span(h, kind_dt(h), h->len));
        self_acc(w, h, h->a, p, NULL, h->len);
        break;
    case ISM_RMA_GET: {
        uint64_t id, want;
        if (h->len != 16)
            break;
        memcpy(&id, p, 8);
        memcpy(&want, p + 8, 8);
        const char *src = bounds(w, h, h->a, want);
        size_t piece = piece_bytes(1);
        for (uint64_t at = 0; at < want; at += piece)
            reply(w, h->src, id, at, src + at, want - at < piece ? want - at : piece);
        break;
    }
    case ISM_RMA_GACC: {
        uint64_t words[2], n;
        memcpy(words, p, 16);
        int noop = ISM_RMA_B_OP(h->b) == ISM_OPI_NO_OP;
        if (noop)
            memcpy(&n, p + 16, 8);
        else
            n = h->len - 16;
        bounds(w, h, h->a, acc_span(h, kind_dt(h), n));
        char *out = malloc(n + 1);
        if (!out)
            ism_die("site %s rank %d: out of memory for a get-accumulate's reply",
                    ism_site_name(ism.lay.site), ism.grank);
        self_acc(w, h, h->a, noop ? NULL : p + 16, out, n);
        reply(w, h->src, words[0], words[1], out, n);
        free(out);
        break;
    }
    case ISM_RMA_CAS: {
        ism_dt *d = kind_dt(h);
        uint64_t id;
        char out[16];
        memcpy(&id, p, 8);
        char *t = bounds(w, h, h->a, (uint64_t)d->size);
        int me = w->c->lrank, rc = 0;
        if (!w->vwin) {
            memcpy(out, t, (size_t)d->size);
            if (!memcmp(t, p + 16 + d->size, (size_t)d->size))
                memcpy(t, p + 16, (size_t)d->size);
        } else {
            rc = ism.be->compare_and_swap(p + 16, p + 16 + d->size, out, d->v, me,
                                          ism_win_voff(w, me, (int64_t)h->a), w->vwin);
            if (!rc)
                rc = ism.be->win_sync(ISM_VWIN_FLUSH, me, w->vwin);
        }
        vendor_ok(rc, h, "a compare-and-swap");
        reply(w, h->src, id, 0, out, (size_t)d->size);
        break;
    }
    case ISM_RMA_PUTV:
    case ISM_RMA_ACCV:
    case ISM_RMA_GETV:
    case ISM_RMA_GACCV:
        apply_segments(w, h, p);
        break;
    case ISM_RMA_REPLY:
        reply_in(h, payload);
        break;
    case ISM_RMA_LOCK:
        ism_rma_lock_request(w, h);
        break;
    case ISM_RMA_GRANT:
        w->grants++;
        break;
    case ISM_RMA_UNLOCK:
        vendor_ok(ism_rma_lock_release(w, w->c->lrank, (int)h->a), h, "an unlock");
        /* the ACK says everything before it is applied */
        __attribute__((fallthrough));
    case ISM_RMA_FLUSH:
        if (ism_rma_send(w, w->c->c_of_g[h->src], ISM_RMA_ACK, 0, 0, NULL, 0))
            ism_die("site %s rank %d: cannot acknowledge to rank %d", ism_site_name(ism.lay.site),
                    ism.grank, h->src);
        break;
    case ISM_RMA_ACK:
        w->acks++;
        break;
    case ISM_RMA_FENCE:
        w->marks++;
        break;
    default:
        ism_die("site %s rank %d: one-sided frame of unknown kind %d from rank %d",
                ism_site_name(ism.lay.site), ism.grank, h->tag, h->src);
    }
}
