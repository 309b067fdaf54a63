/* coll_large.c (abi): the collectives' large-count (_c) forms that move more than INT_MAX
 * elements. A count that fits an int goes to the int form unchanged (its fast path); a
 * larger one takes one of two routes:
 *
 * - Elementwise collectives (broadcast, the reductions, scans, reduce-scatter-block) are
 *   cut into pieces of at most 2^30 bytes (largecount_piece.h), each an ordinary call of
 *   the int form, so every algorithm, the WAN pipeline and MPI_IN_PLACE work as for any
 *   call. MPI requires the same count and type of every rank of a reduction, so every rank
 *   cuts alike; a broadcast's ranks cut alike when their counts all exceed an int (any
 *   types of the same signature: pieces are cut at the same bytes).
 * - Gather, scatter, allgather and alltoall move each rank's block as one point-to-point
 *   message of the core (64-bit counts; core/p2p.c hands the vendor a type that covers the
 *   count within a site), on the communicator's collective context with its own tag, so
 *   it never matches the program's messages. Such blocks are bandwidth-bound: the
 *   two-level algorithms would save nothing on them.
 *
 * A rank decides from its own count arguments; MPI makes them agree across ranks for the
 * same types (see docs/design.md, "Large counts"). The nonblocking and persistent _c forms
 * (largecount.c, generated) run these in a coroutine when a count does not fit.
 */
#include <limits.h>
#include <stdlib.h>

#include "abi.h"
#include "largecount_piece.h"

static int fits(MPI_Count n) { return n >= INT_MIN && n <= INT_MAX; }

static int large_args(const char *fn, MPI_Comm comm, MPI_Datatype dt, MPI_Count count,
                      ism_comm **c, ism_dt **d)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    ism_nbc_drain(*c); /* collectives start in order: finish the nonblocking ones first */
    *d = ism_abi_dt(dt);
    if (!*d)
        return ism_abi_error(*c, MPI_ERR_TYPE, fn, "%s", ism_abi_dt_problem(dt));
    if (count < 0)
        return ism_abi_error(*c, MPI_ERR_COUNT, fn, "count %lld is negative", (long long)count);
    return MPI_SUCCESS;
}

/* Element `i` of a buffer; MPI_IN_PLACE and a NULL (insignificant) buffer stay as they are. */
static void *at(const void *buf, int64_t i, const ism_dt *d)
{
    if (!buf || buf == MPI_IN_PLACE)
        return (void *)buf;
    return (char *)buf + i * (int64_t)d->extent;
}

/* ---- elementwise: pieces of the int form ---- */

typedef enum { LC_BCAST, LC_REDUCE, LC_ALLREDUCE, LC_SCAN, LC_EXSCAN } lc_kind;

typedef struct {
    lc_kind kind;
    const void *sendbuf;
    void *recvbuf;
    MPI_Datatype dt;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} lc_call;

static int one_piece(const lc_call *k, const ism_dt *d, int64_t off, int n)
{
    const void *sb = at(k->sendbuf, off, d);
    void *rb = at(k->recvbuf, off, d);
    switch (k->kind) {
    case LC_BCAST:
        return PMPI_Bcast(rb, n, k->dt, k->root, k->comm);
    case LC_REDUCE:
        return PMPI_Reduce(sb, rb, n, k->dt, k->op, k->root, k->comm);
    case LC_ALLREDUCE:
        return PMPI_Allreduce(sb, rb, n, k->dt, k->op, k->comm);
    case LC_SCAN:
        return PMPI_Scan(sb, rb, n, k->dt, k->op, k->comm);
    case LC_EXSCAN:
        return PMPI_Exscan(sb, rb, n, k->dt, k->op, k->comm);
    }
    return MPI_ERR_INTERN;
}

static int in_pieces(const char *fn, const lc_call *k, MPI_Count count)
{
    ism_comm *c;
    ism_dt *d;
    int rc = large_args(fn, k->comm, k->dt, count, &c, &d);
    for (int64_t off = 0; !rc && off < count; off += ism_lc_piece_elems(d->size))
        rc = one_piece(k, d, off, ism_lc_piece_len(count, off, d->size));
    return rc;
}

int PMPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    if (fits(count))
        return PMPI_Bcast(buffer, (int)count, datatype, root, comm);
    lc_call k = {LC_BCAST, NULL, buffer, datatype, MPI_OP_NULL, root, comm};
    return in_pieces("MPI_Bcast_c", &k, count);
}
ISM_PMPI(Bcast_c)

int PMPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm)
{
    if (fits(count))
        return PMPI_Reduce(sendbuf, recvbuf, (int)count, datatype, op, root, comm);
    lc_call k = {LC_REDUCE, sendbuf, recvbuf, datatype, op, root, comm};
    return in_pieces("MPI_Reduce_c", &k, count);
}
ISM_PMPI(Reduce_c)

/* the elementwise forms without a root */
#define ELEMENTWISE_C(NAME, KIND)                                                                  \
    int PMPI_##NAME##_c(const void *sendbuf, void *recvbuf, MPI_Count count,                       \
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)                           \
    {                                                                                              \
        if (fits(count))                                                                           \
            return PMPI_##NAME(sendbuf, recvbuf, (int)count, datatype, op, comm);                  \
        lc_call k = {KIND, sendbuf, recvbuf, datatype, op, 0, comm};                               \
        return in_pieces("MPI_" #NAME "_c", &k, count);                                            \
    }                                                                                              \
    ISM_PMPI(NAME##_c)

ELEMENTWISE_C(Allreduce, LC_ALLREDUCE)
ELEMENTWISE_C(Scan, LC_SCAN)
ELEMENTWISE_C(Exscan, LC_EXSCAN)

static int no_inter(const char *fn, ism_comm *c)
{
    return ism_abi_error(c, MPI_ERR_COUNT, fn,
                         "counts beyond INT_MAX are not supported on intercommunicators");
}

/* Block `root` of every rank's send buffer reduced to rank root, piece by piece, one root
 * after another. In place, the result's piece [off, off+n) at root r is written only after
 * the block it overwrites (root 0's) was reduced, and never overlaps r's own input block. */
int PMPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter_block_c";
    if (fits(recvcount))
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, (int)recvcount, datatype, op, comm);
    ism_comm *c;
    ism_dt *d;
    int rc = large_args(fn, comm, datatype, recvcount, &c, &d);
    if (!rc && c->is_inter)
        return no_inter(fn, c);
    const int in_place = sendbuf == MPI_IN_PLACE;
    const void *src = in_place ? recvbuf : sendbuf;
    for (int r = 0; !rc && r < c->size; r++)
        for (int64_t off = 0; !rc && off < recvcount; off += ism_lc_piece_elems(d->size)) {
            int n = ism_lc_piece_len(recvcount, off, d->size);
            const void *sb = at(src, (int64_t)r * recvcount + off, d);
            if (in_place && r == 0 && c->rank == 0)
                sb = MPI_IN_PLACE;
            /* a non-root's receive buffer means nothing: NULL, so no vendor sees it
             * aliased with the send piece */
            rc = PMPI_Reduce(sb, c->rank == r ? at(recvbuf, off, d) : NULL, n, datatype, op, r,
                             comm);
        }
    return rc;
}
ISM_PMPI(Reduce_scatter_block_c)

/* ---- data movement: one core message per block ---- */

/* The messages of one large collective: post, then wait for all. */
typedef struct {
    ism_comm *c;
    ism_req **r;
    int n, rc;
} lc_msgs;

static int msgs_open(const char *fn, lc_msgs *m, ism_comm *c, int most)
{
    *m = (lc_msgs){c, calloc((size_t)most, sizeof(ism_req *)), 0, 0};
    return m->r ? 0 : ism_abi_error(c, MPI_ERR_NO_MEM, fn, "no memory for %d requests", most);
}

static void msg_send(lc_msgs *m, const void *buf, int64_t count, ism_dt *d, int to)
{
    if (!m->rc)
        m->rc = ism_isend(buf, count, d, to, TAG_LARGE, m->c, m->c->ctx + 1, ISM_MODE_STD,
                          &m->r[m->n++]);
}

static void msg_recv(lc_msgs *m, void *buf, int64_t count, ism_dt *d, int from)
{
    if (!m->rc)
        m->rc = ism_irecv(buf, count, d, from, TAG_LARGE, m->c, m->c->ctx + 1, &m->r[m->n++]);
}

static int msgs_close(const char *fn, lc_msgs *m)
{
    int rc = m->rc;
    for (int i = 0; i < m->n; i++)
        if (m->r[i]) {
            int w = ism_req_wait(m->r[i], NULL);
            rc = rc ? rc : w;
            ism_req_free(m->r[i]);
        }
    free(m->r);
    return rc ? ism_abi_error(m->c, rc, fn, "moving a block of more than INT_MAX elements "
                                            "failed (rank %d of %d)", m->c->rank, m->c->size)
              : MPI_SUCCESS;
}

/* The checks shared by the data-movement forms: both types when significant. */
static int move_args(const char *fn, MPI_Comm comm, MPI_Datatype st, MPI_Count sc, int use_s,
                     MPI_Datatype rt, MPI_Count rcount, int use_r, ism_comm **c, ism_dt **sd,
                     ism_dt **rd)
{
    *sd = *rd = NULL;
    int rc = large_args(fn, comm, use_r ? rt : st, use_r ? rcount : sc, c, use_r ? rd : sd);
    if (!rc && use_s && use_r)
        rc = large_args(fn, comm, st, sc, c, sd);
    if (!rc && (*c)->is_inter)
        rc = no_inter(fn, *c);
    return rc;
}

static int root_ok(const char *fn, ism_comm *c, int root)
{
    if (root < 0 || root >= c->size)
        return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the communicator (size %d)",
                             root, c->size);
    return MPI_SUCCESS;
}

int PMPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Gather_c";
    ism_comm *c = ism_abi_comm(comm);
    int is_root = c && !c->is_inter && c->rank == root;
    int use_s = !(is_root && sendbuf == MPI_IN_PLACE);
    if ((!use_s || fits(sendcount)) && (!is_root || fits(recvcount)))
        return PMPI_Gather(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount, recvtype,
                           root, comm);
    ism_dt *sd, *rd;
    lc_msgs m;
    int rc = move_args(fn, comm, sendtype, sendcount, use_s, recvtype, recvcount, is_root, &c,
                       &sd, &rd);
    if (rc || (rc = root_ok(fn, c, root)) || (rc = msgs_open(fn, &m, c, is_root ? c->size + 1 : 1)))
        return rc;
    if (is_root) {
        for (int i = 0; i < c->size; i++)
            if (i != root || use_s)
                msg_recv(&m, at(recvbuf, (int64_t)i * recvcount, rd), recvcount, rd, i);
    }
    if (use_s)
        msg_send(&m, sendbuf, sendcount, sd, root);
    return msgs_close(fn, &m);
}
ISM_PMPI(Gather_c)

int PMPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Scatter_c";
    ism_comm *c = ism_abi_comm(comm);
    int is_root = c && !c->is_inter && c->rank == root;
    int use_r = !(is_root && recvbuf == MPI_IN_PLACE);
    if ((!is_root || fits(sendcount)) && (!use_r || fits(recvcount)))
        return PMPI_Scatter(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount, recvtype,
                            root, comm);
    ism_dt *sd, *rd;
    lc_msgs m;
    int rc = move_args(fn, comm, sendtype, sendcount, is_root, recvtype, recvcount, use_r, &c,
                       &sd, &rd);
    if (rc || (rc = root_ok(fn, c, root)) || (rc = msgs_open(fn, &m, c, is_root ? c->size + 1 : 1)))
        return rc;
    if (use_r)
        msg_recv(&m, recvbuf, recvcount, rd, root);
    if (is_root)
        for (int i = 0; i < c->size; i++)
            if (i != root || use_r)
                msg_send(&m, at(sendbuf, (int64_t)i * sendcount, sd), sendcount, sd, i);
    return msgs_close(fn, &m);
}
ISM_PMPI(Scatter_c)

int PMPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                     void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Allgather_c";
    int use_s = sendbuf != MPI_IN_PLACE;
    if ((!use_s || fits(sendcount)) && fits(recvcount))
        return PMPI_Allgather(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                              recvtype, comm);
    ism_comm *c;
    ism_dt *sd, *rd;
    lc_msgs m;
    int rc = move_args(fn, comm, sendtype, sendcount, use_s, recvtype, recvcount, 1, &c, &sd,
                       &rd);
    if (rc || (rc = msgs_open(fn, &m, c, 2 * c->size)))
        return rc;
    const void *mine = use_s ? sendbuf : at(recvbuf, (int64_t)c->rank * recvcount, rd);
    ism_dt *md = use_s ? sd : rd;
    int64_t mc = use_s ? sendcount : recvcount;
    for (int i = 0; i < c->size; i++)
        if (i != c->rank || use_s)
            msg_recv(&m, at(recvbuf, (int64_t)i * recvcount, rd), recvcount, rd, i);
    for (int i = 0; i < c->size; i++)
        if (i != c->rank || use_s)
            msg_send(&m, mine, mc, md, i);
    return msgs_close(fn, &m);
}
ISM_PMPI(Allgather_c)

/* MPI_IN_PLACE with blocks beyond INT_MAX elements: each pair of ranks swaps its two
 * blocks. The pairs go in one order on every rank ((i, j) with i < j, by i then j), so the
 * first pair not yet done always has both its ranks ready for it and no swap waits on
 * another (MPICH's in-place alltoall does the same). A block moves in pieces of at most
 * LC_SWAP_PIECE bytes through two packed buffers: twice that of memory, not a copy of the
 * block (more than 2 GiB) behind the program's back. */
#define LC_SWAP_PIECE ((int64_t)1 << 28)

static int inplace_alltoall(const char *fn, ism_comm *c, void *buf, MPI_Count count, ism_dt *d)
{
    if (count == 0 || d->size == 0 || c->size < 2)
        return MPI_SUCCESS;
    int64_t per = LC_SWAP_PIECE / d->size > 0 ? LC_SWAP_PIECE / d->size : 1;
    if (per > count)
        per = count;
    char *out = malloc((size_t)(per * d->size)), *in = malloc((size_t)(per * d->size));
    int rc = out && in ? MPI_SUCCESS
                       : ism_abi_error(c, MPI_ERR_NO_MEM, fn, "no memory for two pieces of "
                                                         "%lld bytes", (long long)(per * d->size));
    for (int i = 0; !rc && i < c->size; i++)
        for (int j = i + 1; !rc && j < c->size; j++) {
            int peer = c->rank == i ? j : c->rank == j ? i : -1;
            if (peer < 0)
                continue;
            char *blk = at(buf, (int64_t)peer * count, d);
            for (int64_t e = 0; !rc && e < count; e += per) {
                int64_t k = count - e < per ? count - e : per;
                lc_msgs m;
                ism_dt_pack(d, at(blk, e, d), (int)k, out);
                if ((rc = msgs_open(fn, &m, c, 2)))
                    break;
                msg_recv(&m, in, k * d->size, ISM_DT_BYTE, peer);
                msg_send(&m, out, k * d->size, ISM_DT_BYTE, peer);
                if (!(rc = msgs_close(fn, &m)))
                    ism_dt_unpack(d, in, at(blk, e, d), (int)k);
            }
        }
    free(out);
    free(in);
    return rc;
}

int PMPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoall_c";
    int use_s = sendbuf != MPI_IN_PLACE;
    if ((!use_s || fits(sendcount)) && fits(recvcount))
        return PMPI_Alltoall(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                             recvtype, comm);
    ism_comm *c;
    ism_dt *sd, *rd;
    lc_msgs m;
    int rc = move_args(fn, comm, sendtype, sendcount, use_s, recvtype, recvcount, 1, &c, &sd,
                       &rd);
    if (!rc && !use_s)
        return inplace_alltoall(fn, c, recvbuf, recvcount, rd);
    if (rc || (rc = msgs_open(fn, &m, c, 2 * c->size)))
        return rc;
    for (int i = 0; i < c->size; i++)
        msg_recv(&m, at(recvbuf, (int64_t)i * recvcount, rd), recvcount, rd, i);
    for (int i = 0; i < c->size; i++)
        msg_send(&m, at(sendbuf, (int64_t)i * sendcount, sd), sendcount, sd, i);
    return msgs_close(fn, &m);
}
ISM_PMPI(Alltoall_c)
