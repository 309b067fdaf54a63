/* coll_large.c (abi): the collectives' large-count (_c) forms that move more than INT_MAX
 * elements. A count that fits an int goes to the int form unchanged (its fast path); a
 * larger one takes one of two routes:
 *
 * - Elementwise collectives (broadcast, the reductions, scans, reduce-scatter-block) are
 *   cut into pieces of at most 2^30 bytes (common/lc_piece.h), each an ordinary call of
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
#include "../coll/coll.h"
#include "../common/lc_piece.h"

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

/* A local reduction beyond INT_MAX: pieces of the int form, element by element. */
int PMPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op)
{
    if (fits(count))
        return PMPI_Reduce_local(inbuf, inoutbuf, (int)count, datatype, op);
    static const char fn[] = "MPI_Reduce_local_c";
    ISM_CHECK_INIT(fn);
    ism_dt *d = ism_abi_dt(datatype);
    if (!d)
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn, "%s", ism_abi_dt_problem(datatype));
    if (count < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, fn, "count %lld is negative",
                             (long long)count);
    int rc = MPI_SUCCESS;
    for (int64_t off = 0; !rc && off < count; off += ism_lc_piece_elems(d->size))
        rc = PMPI_Reduce_local(at(inbuf, off, d), at(inoutbuf, off, d),
                               ism_lc_piece_len(count, off, d->size), datatype, op);
    return rc;
}
ISM_PMPI(Reduce_local_c)

/* ---- intercommunicators: the non-v forms are their v forms with uniform vectors. On an
 * intercommunicator those are 64-bit point-to-point whatever the counts (coll_inter.c), and
 * the int forms take the same road, so the two groups never need to agree on one. ---- */

static ism_comm *inter_comm(MPI_Comm comm)
{
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    if (!c || !c->is_inter)
        return NULL;
    ism_nbc_drain(c);
    return c;
}

/* count per remote process at displacements r * count: cv[0..n), dv[0..n) */
static int uniform64(const char *fn, ism_comm *c, MPI_Count count, MPI_Count **cv,
                     MPI_Aint **dv)
{
    int n = c->size;
    *cv = malloc(sizeof(MPI_Count) * (size_t)(n + 1));
    *dv = malloc(sizeof(MPI_Aint) * (size_t)(n + 1));
    if (!*cv || !*dv) {
        free(*cv);
        free(*dv);
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int r = 0; r < n; r++)
        (*cv)[r] = count, (*dv)[r] = (MPI_Aint)(r * count);
    return MPI_SUCCESS;
}

/* Gather_c (scatter 0) and Scatter_c (1): the root's side gets the uniform vectors. */
static int inter_rooted_c(const char *fn, ism_comm *c, const void *one_buf, MPI_Count one_count,
                          MPI_Datatype one_type, void *many_buf, MPI_Count many_count,
                          MPI_Datatype many_type, int root, int scatter, MPI_Request *request)
{
    MPI_Count *cv;
    MPI_Aint *dv;
    int rc = uniform64(fn, c, many_count, &cv, &dv);
    if (!rc)
        rc = ism_abi_inter_rooted(fn, c, one_buf, one_count, one_type, many_buf, cv, dv,
                                  many_type, root, scatter, 1, request);
    free(cv);
    free(dv);
    return rc;
}

/* Allgather_c (all 0: one send block for everyone) and Alltoall_c (1). */
static int inter_exchange_c(const char *fn, ism_comm *c, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                            MPI_Datatype recvtype, int all, MPI_Request *request)
{
    MPI_Count *sc, *rcv;
    MPI_Aint *sd, *rd;
    int rc = uniform64(fn, c, sendcount, &sc, &sd);
    if (rc)
        return rc;
    if (!(rc = uniform64(fn, c, recvcount, &rcv, &rd))) {
        rc = ism_abi_inter_exchange(fn, c, sendbuf, sc, all ? sd : NULL, sendtype, NULL, recvbuf,
                                    rcv, rd, recvtype, NULL, 0, 1, request);
        free(rcv);
        free(rd);
    }
    free(sc);
    free(sd);
    return rc;
}

/* Reduce_scatter_c (counts) and Reduce_scatter_block_c (counts NULL, one each) on an
 * intercommunicator: the local group's counts, 64-bit in the core. */
static int inter_reduce_scatter_c(const char *fn, ism_comm *c, const void *sendbuf,
                                  void *recvbuf, const MPI_Count *counts, MPI_Count one,
                                  MPI_Datatype datatype, MPI_Op op)
{
    int n = c->local_size, rc = MPI_SUCCESS;
    ism_dt *d = ism_abi_dt(datatype);
    ism_op *o = ism_abi_op(op);
    if (!d)
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "%s", ism_abi_dt_problem(datatype));
    if (!o)
        return ism_abi_error(c, MPI_ERR_OP, fn, "invalid op");
    if (sendbuf == MPI_IN_PLACE)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn,
                             "MPI_IN_PLACE is not allowed on an intercommunicator");
    int64_t *cnt = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!cnt)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; r < n && !rc; r++) {
        cnt[r] = counts ? counts[r] : one;
        if (cnt[r] < 0)
            rc = ism_abi_error(c, MPI_ERR_COUNT, fn, "receive count for rank %d is negative "
                               "(%lld)", r, (long long)cnt[r]);
    }
    if (!rc) { /* started in flight and waited for */
        ism_req *q = NULL;
        int e = ism_coll_inter_ireduce_scatter(sendbuf, recvbuf, cnt, d, o, c, &q);
        e = e ? e : ism_coll_nb_wait(q);
        rc = e ? ism_abi_error(c, e, fn, "the collective failed") : MPI_SUCCESS;
    }
    free(cnt);
    return rc;
}

/* Block `root` of every rank's send buffer reduced to rank root, piece by piece, one root
 * after another. In place, the result's piece [off, off+n) at root r is written only after
 * the block it overwrites (root 0's) was reduced, and never overlaps r's own input block. */
int PMPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter_block_c";
    ism_comm *ic = inter_comm(comm);
    if (ic)
        return inter_reduce_scatter_c(fn, ic, sendbuf, recvbuf, NULL, recvcount, datatype, op);
    if (fits(recvcount))
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, (int)recvcount, datatype, op, comm);
    ism_comm *c;
    ism_dt *d;
    int rc = large_args(fn, comm, datatype, recvcount, &c, &d);
    if (rc)
        return rc;
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
    return rc;
}

static int root_ok(const char *fn, ism_comm *c, int root)
{
    if (root < 0 || root >= c->size)
        return ism_abi_error(c, MPI_ERR_ROOT, fn, "root %d is not in the communicator (size %d)",
                             root, c->size);
    return MPI_SUCCESS;
}

static int core_done(const char *fn, ism_comm *c, int rc)
{
    return rc ? ism_abi_error(c, rc, fn, "the collective failed (rank %d of %d)", c->rank, c->size)
              : MPI_SUCCESS;
}

/* The wait of start + wait, across sites (the int forms' road, so that ranks may mix
 * them): rc the start's answer, ISM_ABI_NB_PASS when the engine did not take it; *q read
 * after the start has set it (C evaluates arguments in no fixed order). */
static int engine_wait(const char *fn, ism_comm *c, int rc, const MPI_Request *q)
{
    return rc ? rc : core_done(fn, c, ism_coll_nb_wait((ism_req *)*q));
}

int PMPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Gather_c";
    ism_comm *c = inter_comm(comm);
    if (c)
        return inter_rooted_c(fn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              root, 0, NULL);
    c = ism.initialized ? ism_abi_comm(comm) : NULL;
    int is_root = c && !c->is_inter && c->rank == root;
    int use_s = !(is_root && sendbuf == MPI_IN_PLACE);
    if ((!use_s || fits(sendcount)) && (!is_root || fits(recvcount)))
        return PMPI_Gather(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount, recvtype,
                           root, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    int e = c && ism_abi_coll_movers_in_flight(c)
                ? engine_wait(fn, c, ism_abi_wide_igather_c(sendbuf, sendcount, sendtype, recvbuf,
                                                            recvcount, recvtype, root, comm, &q),
                              &q)
                : ISM_ABI_NB_PASS;
    if (e != ISM_ABI_NB_PASS) /* across sites: the int form's collective, started and waited for */
        return e;
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
    ism_comm *c = inter_comm(comm);
    if (c)
        return inter_rooted_c(fn, c, recvbuf, recvcount, recvtype, (void *)sendbuf, sendcount,
                              sendtype, root, 1, NULL);
    c = ism.initialized ? ism_abi_comm(comm) : NULL;
    int is_root = c && !c->is_inter && c->rank == root;
    int use_r = !(is_root && recvbuf == MPI_IN_PLACE);
    if ((!is_root || fits(sendcount)) && (!use_r || fits(recvcount)))
        return PMPI_Scatter(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount, recvtype,
                            root, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    int e = c && ism_abi_coll_movers_in_flight(c)
                ? engine_wait(fn, c, ism_abi_wide_iscatter_c(sendbuf, sendcount, sendtype, recvbuf,
                                                             recvcount, recvtype, root, comm, &q),
                              &q)
                : ISM_ABI_NB_PASS;
    if (e != ISM_ABI_NB_PASS)
        return e;
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
    ism_comm *ic = inter_comm(comm);
    if (ic)
        return inter_exchange_c(fn, ic, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                recvtype, 0, NULL);
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
    ism_comm *ic = inter_comm(comm);
    if (ic)
        return inter_exchange_c(fn, ic, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                recvtype, 1, NULL);
    int use_s = sendbuf != MPI_IN_PLACE;
    if ((!use_s || fits(sendcount)) && fits(recvcount))
        return PMPI_Alltoall(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                             recvtype, comm);
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    MPI_Request q = MPI_REQUEST_NULL;
    /* across sites the int form's collective, started and waited for; in place, the pairs'
     * swap below (no copy of the buffer) */
    int e = use_s && c && ism_abi_coll_movers_in_flight(c)
                ? engine_wait(fn, c, ism_abi_wide_ialltoall_c(sendbuf, sendcount, sendtype, recvbuf,
                                                              recvcount, recvtype, comm, &q),
                              &q)
                : ISM_ABI_NB_PASS;
    if (e != ISM_ABI_NB_PASS)
        return e;
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

/* ---- the v/w forms: 64-bit counts through the core's general algorithms ---- */

/* Every count and displacement of n fits an int (NULL: nothing to fit). */
static int all_fit(const MPI_Count *v, int n)
{
    for (int i = 0; v && i < n; i++)
        if (!fits(v[i]))
            return 0;
    return 1;
}

static int all_fit_aint(const MPI_Aint *v, int n)
{
    for (int i = 0; v && i < n; i++)
        if (v[i] < INT_MIN || v[i] > INT_MAX)
            return 0;
    return 1;
}

/* Copies for the other form: MPI_Count or MPI_Aint as int (all fit), or as int64_t. */
static int *ints_of(const void *v, int aint, int n)
{
    int *o = malloc(sizeof(int) * (size_t)n + 1);
    for (int i = 0; o && v && i < n; i++)
        o[i] = (int)(aint ? ((const MPI_Aint *)v)[i] : ((const MPI_Count *)v)[i]);
    return o;
}

static int64_t *i64_of(const void *v, int aint, int n)
{
    int64_t *o = malloc(sizeof(int64_t) * (size_t)n + 1);
    for (int i = 0; o && v && i < n; i++)
        o[i] = aint ? (int64_t)((const MPI_Aint *)v)[i] : (int64_t)((const MPI_Count *)v)[i];
    return o;
}

/* Whether a v/w collective's _c form takes its int form (*wide = 0) or the 64-bit core
 * (*wide = 1). mine: whether this rank's own arguments fit an int. Across sites both
 * forms run the same 64-bit algorithm, so each rank chooses alone. A communicator held at
 * this site goes to the vendor whole in the int form, so there its ranks first learn
 * whether all of them fit (one vendor allgather of an int). Intercommunicators do not
 * come here: their v/w forms are point-to-point, 64-bit (coll_inter.c). */
static int v_route(const char *fn, MPI_Comm comm, int mine, ism_comm **c, int *wide)
{
    *wide = 0;
    *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    if (!*c || (*c)->is_inter)
        return MPI_SUCCESS; /* the int form reports what is wrong, or handles it */
    ism_nbc_drain(*c);
    if (!(*c)->all_local) {
        *wide = !mine;
        return MPI_SUCCESS;
    }
    int n = (*c)->lsize, *all = malloc(sizeof(int) * (size_t)n + 1);
    if (!all)
        return ism_abi_error(*c, MPI_ERR_NO_MEM, fn, "out of memory");
    ism_vh q = 0;
    int rc = ism.be->iallgather(&mine, 1, ISM_DT_INT->v, all, 1, ISM_DT_INT->v, (*c)->vcomm, &q);
    if ((rc = ism_vwait(rc, &q)))
        rc = ism_abi_error(*c, rc, fn, "agreeing on the counts' width failed");
    for (int i = 0; !rc && i < n; i++)
        if (!all[i])
            *wide = 1;
    free(all);
    return rc;
}

/* The core reads a NULL send buffer (receive buffer, for scatter) as MPI_IN_PLACE; a NULL
 * that carries nothing must not read so (abi/coll.c, core_buf). */
static const void *core_buf(const void *b, int empty)
{
    static const char nothing;
    return b == MPI_IN_PLACE ? NULL : !b && empty ? &nothing : b;
}

static int counts_ok(const char *fn, ism_comm *c, const MPI_Count *v, int n, const char *what)
{
    if (!v)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "%s counts are NULL", what);
    for (int i = 0; i < n; i++)
        if (v[i] < 0)
            return ism_abi_error(c, MPI_ERR_COUNT, fn, "%s count for rank %d is negative (%lld)",
                                 what, i, (long long)v[i]);
    return MPI_SUCCESS;
}

static int type_ok(const char *fn, ism_comm *c, MPI_Datatype h, const char *what, ism_dt **d)
{
    if (!(*d = ism_abi_dt(h)))
        return ism_abi_error(c, MPI_ERR_TYPE, fn, "invalid or uncommitted %s datatype", what);
    return MPI_SUCCESS;
}

/* The checks of a rooted v-collective's _c form: the single block (send for gather,
 * receive for scatter; MPI_IN_PLACE at the root only) on every rank, the vectors and their
 * type at the root. */
static int rooted_wide_args(const char *fn, ism_comm *c, int root, int in_place, MPI_Count n1,
                            MPI_Datatype t1, const char *what1, ism_dt **d1,
                            const MPI_Count *counts, const MPI_Aint *displs, MPI_Datatype tn,
                            const char *whatn, ism_dt **dn)
{
    int rc = root_ok(fn, c, root), is_root = c->rank == root;
    if (rc)
        return rc;
    if (in_place && !is_root)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is only allowed at the root");
    if (!in_place && n1 < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "%s count %lld is negative", what1,
                             (long long)n1);
    if ((!in_place && (rc = type_ok(fn, c, t1, what1, d1))) ||
        (is_root && ((rc = counts_ok(fn, c, counts, c->size, whatn)) ||
                     (rc = type_ok(fn, c, tn, whatn, dn)))))
        return rc;
    if (is_root && !displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements are NULL");
    return MPI_SUCCESS;
}

int PMPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                   int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Gatherv_c";
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    if (c && c->is_inter) {
        ism_nbc_drain(c);
        return ism_abi_inter_rooted(fn, c, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                    displs, recvtype, root, 0, 1, NULL);
    }
    int n = c && !c->is_inter ? c->size : 0, is_root = c && !c->is_inter && c->rank == root;
    int in_place = sendbuf == MPI_IN_PLACE, wide;
    int mine = (in_place || fits(sendcount)) &&
               (!is_root || (all_fit(recvcounts, n) && all_fit_aint(displs, n)));
    int rc = v_route(fn, comm, mine, &c, &wide);
    if (rc)
        return rc;
    if (!wide) {
        int *rc_ = is_root ? ints_of(recvcounts, 0, n) : NULL;
        int *di_ = is_root ? ints_of(displs, 1, n) : NULL;
        rc = is_root && (!rc_ || !di_)
                 ? ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory")
                 : PMPI_Gatherv(sendbuf, (int)sendcount, sendtype, recvbuf, rc_, di_, recvtype,
                                root, comm);
        free(rc_);
        free(di_);
        return rc;
    }
    ism_dt *sd = NULL, *rd = NULL;
    if ((rc = rooted_wide_args(fn, c, root, in_place, sendcount, sendtype, "send", &sd,
                               recvcounts, displs, recvtype, "receive", &rd)))
        return rc;
    int64_t *rc64 = is_root ? i64_of(recvcounts, 0, n) : NULL;
    int64_t *di64 = is_root ? i64_of(displs, 1, n) : NULL;
    MPI_Request q = MPI_REQUEST_NULL;
    if (is_root && (!rc64 || !di64))
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    else if (ism_abi_coll_movers_in_flight(c) &&
             (rc = engine_wait(fn, c, ism_abi_isched_rooted64(fn, 0, sendbuf, sendcount, sd,
                                                              recvbuf, rc64, di64, rd, root, c,
                                                              &q), &q)) != ISM_ABI_NB_PASS)
        ; /* started and waited for */
    else
        rc = core_done(fn, c, ism_gatherv64(core_buf(sendbuf, sendcount == 0), sendcount, sd,
                                            recvbuf, rc64, di64, rd, root, c));
    free(rc64);
    free(di64);
    return rc;
}
ISM_PMPI(Gatherv_c)

int PMPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Scatterv_c";
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    if (c && c->is_inter) {
        ism_nbc_drain(c);
        return ism_abi_inter_rooted(fn, c, recvbuf, recvcount, recvtype, (void *)sendbuf,
                                    sendcounts, displs, sendtype, root, 1, 1, NULL);
    }
    int n = c && !c->is_inter ? c->size : 0, is_root = c && !c->is_inter && c->rank == root;
    int in_place = recvbuf == MPI_IN_PLACE, wide;
    int mine = (in_place || fits(recvcount)) &&
               (!is_root || (all_fit(sendcounts, n) && all_fit_aint(displs, n)));
    int rc = v_route(fn, comm, mine, &c, &wide);
    if (rc)
        return rc;
    if (!wide) {
        int *sc_ = is_root ? ints_of(sendcounts, 0, n) : NULL;
        int *di_ = is_root ? ints_of(displs, 1, n) : NULL;
        rc = is_root && (!sc_ || !di_)
                 ? ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory")
                 : PMPI_Scatterv(sendbuf, sc_, di_, sendtype, recvbuf, (int)recvcount, recvtype,
                                 root, comm);
        free(sc_);
        free(di_);
        return rc;
    }
    ism_dt *sd = NULL, *rd = NULL;
    if ((rc = rooted_wide_args(fn, c, root, in_place, recvcount, recvtype, "receive", &rd,
                               sendcounts, displs, sendtype, "send", &sd)))
        return rc;
    int64_t *sc64 = is_root ? i64_of(sendcounts, 0, n) : NULL;
    int64_t *di64 = is_root ? i64_of(displs, 1, n) : NULL;
    MPI_Request q = MPI_REQUEST_NULL;
    if (is_root && (!sc64 || !di64))
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    else if (ism_abi_coll_movers_in_flight(c) &&
             (rc = engine_wait(fn, c, ism_abi_isched_rooted64(fn, 1, recvbuf, recvcount, rd,
                                                              sendbuf, sc64, di64, sd, root, c,
                                                              &q), &q)) != ISM_ABI_NB_PASS)
        ; /* started and waited for */
    else
        rc = core_done(fn, c, ism_scatterv64(sendbuf, sc64, di64, sd,
                                             (void *)core_buf(recvbuf, recvcount == 0), recvcount,
                                             rd, root, c));
    free(sc64);
    free(di64);
    return rc;
}
ISM_PMPI(Scatterv_c)

/* MPI_Allgatherv_c in flight: displacements to bytes, then started; ISM_ABI_NB_PASS where
 * the engine does not take c. */
static int allgatherv_start(const char *fn, ism_comm *c, const void *sendbuf, int64_t sendcount,
                            ism_dt *sd, void *recvbuf, const int64_t *counts,
                            const int64_t *displs, ism_dt *rd, ism_req **q)
{
    int n = c->size;
    int64_t *b = malloc(sizeof *b * (size_t)n + 1);
    if (!b)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; r < n; r++)
        b[r] = displs[r] * rd->extent;
    int rc = ism_coll_iallgatherv64(sendbuf == MPI_IN_PLACE ? ISM_IN_PLACE : sendbuf, sendcount,
                                    sd, recvbuf, counts, b, rd, c, q);
    free(b);
    return rc == ISM_COLL_PASS ? ISM_ABI_NB_PASS : core_done(fn, c, rc);
}

static int allgatherv_engine(const char *fn, ism_comm *c, const void *sendbuf, int64_t sendcount,
                             ism_dt *sd, void *recvbuf, const int64_t *counts,
                             const int64_t *displs, ism_dt *rd)
{
    ism_req *q = NULL;
    int rc = allgatherv_start(fn, c, sendbuf, sendcount, sd, recvbuf, counts, displs, rd, &q);
    return rc ? rc : core_done(fn, c, ism_coll_nb_wait(q));
}

/* The checks of MPI_Allgatherv_c beyond int. */
static int allgatherv_wide_args(const char *fn, ism_comm *c, int in_place, MPI_Count sendcount,
                                MPI_Datatype sendtype, ism_dt **sd, const MPI_Count *recvcounts,
                                const MPI_Aint *displs, MPI_Datatype recvtype, ism_dt **rd)
{
    int rc;
    if ((rc = counts_ok(fn, c, recvcounts, c->size, "receive")))
        return rc;
    if (!displs)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements are NULL");
    if (!in_place && sendcount < 0)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "send count %lld is negative",
                             (long long)sendcount);
    if ((!in_place && (rc = type_ok(fn, c, sendtype, "send", sd))) ||
        (rc = type_ok(fn, c, recvtype, "receive", rd)))
        return rc;
    return MPI_SUCCESS;
}

int PMPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Allgatherv_c";
    ism_comm *c = ism.initialized ? ism_abi_comm(comm) : NULL;
    if (c && c->is_inter) { /* my one block to every remote process */
        ism_nbc_drain(c);
        MPI_Count *sc = malloc(sizeof(MPI_Count) * (size_t)(c->size + 1));
        if (!sc)
            return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
        for (int r = 0; r < c->size; r++)
            sc[r] = sendcount;
        int rc = ism_abi_inter_exchange(fn, c, sendbuf, sc, NULL, sendtype, NULL, recvbuf,
                                        recvcounts, displs, recvtype, NULL, 0, 1, NULL);
        free(sc);
        return rc;
    }
    int n = c ? (c->size) : 0;
    int in_place = sendbuf == MPI_IN_PLACE, wide;
    int mine = (in_place || fits(sendcount)) && all_fit(recvcounts, n) && all_fit_aint(displs, n);
    int rc = v_route(fn, comm, mine, &c, &wide);
    if (rc)
        return rc;
    if (!wide) {
        int *rc_ = ints_of(recvcounts, 0, n), *di_ = ints_of(displs, 1, n);
        rc = !rc_ || !di_ ? ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory")
                          : PMPI_Allgatherv(sendbuf, (int)sendcount, sendtype, recvbuf,
                                            recvcounts ? rc_ : NULL, displs ? di_ : NULL,
                                            recvtype, comm);
        free(rc_);
        free(di_);
        return rc;
    }
    ism_dt *sd = NULL, *rd = NULL;
    if ((rc = allgatherv_wide_args(fn, c, in_place, sendcount, sendtype, &sd, recvcounts, displs,
                                   recvtype, &rd)))
        return rc;
    int64_t *rc64 = i64_of(recvcounts, 0, n), *di64 = i64_of(displs, 1, n);
    if (!rc64 || !di64)
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    else if (ism_abi_coll_movers_in_flight(c) &&
             (rc = allgatherv_engine(fn, c, sendbuf, sendcount, sd, recvbuf, rc64, di64, rd)) !=
                 ISM_ABI_NB_PASS)
        ; /* started and waited for */
    else
        rc = core_done(fn, c, ism_allgatherv64(core_buf(sendbuf, sendcount == 0), sendcount, sd,
                                               recvbuf, rc64, di64, rd, c));
    free(rc64);
    free(di64);
    return rc;
}
ISM_PMPI(Allgatherv_c)

/* The 64-bit vectors of Alltoallw_c, and of Alltoallv_c with its one type per side: counts
 * and byte displacements in *w (4n: send counts, displacements, receive counts,
 * displacements), types in *t (2n); checked. */
static int alltoall_vectors(const char *fn, const void *sendbuf, const MPI_Count *sendcounts,
                            const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                            MPI_Datatype sendtype, const MPI_Count *recvcounts,
                            const MPI_Aint *rdispls, const MPI_Datatype *recvtypes,
                            MPI_Datatype recvtype, int per_peer, ism_comm *c, int64_t **wp,
                            ism_dt ***tp)
{
    int n = c->size, in_place = sendbuf == MPI_IN_PLACE, rc;
    *wp = NULL;
    *tp = NULL;
    if ((rc = counts_ok(fn, c, recvcounts, n, "receive")) ||
        (!in_place && (rc = counts_ok(fn, c, sendcounts, n, "send"))))
        return rc;
    if (!rdispls || (per_peer && !recvtypes) ||
        (!in_place && (!sdispls || (per_peer && !sendtypes))))
        return ism_abi_error(c, MPI_ERR_ARG, fn, "displacements or types are NULL");
    ism_dt **t = calloc((size_t)n * 2 + 1, sizeof *t);
    int64_t *w = malloc(sizeof(int64_t) * 4 * (size_t)n + 1);
    if (!t || !w)
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int r = 0; r < n && !rc; r++) {
        if (!(t[n + r] = ism_abi_dt(per_peer ? recvtypes[r] : recvtype)))
            rc = ism_abi_error(c, MPI_ERR_TYPE, fn, "receive type for rank %d is invalid", r);
        else if (!in_place && !(t[r] = ism_abi_dt(per_peer ? sendtypes[r] : sendtype)))
            rc = ism_abi_error(c, MPI_ERR_TYPE, fn, "send type for rank %d is invalid", r);
        else {
            /* Alltoallv's displacements are in elements of its one type */
            w[r] = in_place ? 0 : sendcounts[r];
            w[n + r] = in_place ? 0 : sdispls[r] * (per_peer ? 1 : (int64_t)t[r]->extent);
            w[2 * n + r] = recvcounts[r];
            w[3 * n + r] = rdispls[r] * (per_peer ? 1 : (int64_t)t[n + r]->extent);
        }
    }
    if (rc) {
        free(t);
        free(w);
        return rc;
    }
    *wp = w;
    *tp = t;
    return MPI_SUCCESS;
}

static int req_of(const char *fn, ism_comm *c, int rc, ism_req *r, MPI_Request *request);

/* request NULL: the blocking form (across sites the collective in flight the int forms
 * start, started and waited for; else the older exchange); else started in flight, or
 * ISM_ABI_NB_PASS where the engine does not take c. */
static int alltoall_wide(const char *fn, const void *sendbuf, const MPI_Count *sendcounts,
                         const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                         MPI_Datatype sendtype, void *recvbuf, const MPI_Count *recvcounts,
                         const MPI_Aint *rdispls, const MPI_Datatype *recvtypes,
                         MPI_Datatype recvtype, int per_peer, ism_comm *c, MPI_Request *request)
{
    int n = c->size, in_place = sendbuf == MPI_IN_PLACE;
    const void *src = in_place ? ISM_IN_PLACE : sendbuf;
    int64_t *w;
    ism_dt **t;
    int rc = alltoall_vectors(fn, sendbuf, sendcounts, sdispls, sendtypes, sendtype, recvcounts,
                              rdispls, recvtypes, recvtype, per_peer, c, &w, &t);
    if (rc)
        return rc;
    if (request) {
        ism_req *r = NULL; /* (set by the start, read after it: not in one call) */
        rc = ism_coll_ialltoallw64(src, w, w + n, t, recvbuf, w + 2 * n, w + 3 * n, t + n, c,
                                   -1, &r);
        rc = req_of(fn, c, rc, r, request);
    } else {
        int e = !ism_abi_coll_movers_in_flight(c)
                    ? ISM_COLL_PASS
                    : ism_coll_ialltoallw64_wait(src, w, w + n, t, recvbuf, w + 2 * n, w + 3 * n,
                                                 t + n, c);
        rc = core_done(fn, c,
                       e != ISM_COLL_PASS ? e
                                          : ism_alltoallw64(src, w, w + n, t, recvbuf, w + 2 * n,
                                                            w + 3 * n, t + n, c));
    }
    free(t);
    free(w);
    return rc;
}

int PMPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoallw_c";
    ISM_CHECK_INIT(fn);
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (c->is_inter) {
        ism_nbc_drain(c);
        return ism_abi_inter_exchange(fn, c, sendbuf, sendcounts, sdispls, MPI_DATATYPE_NULL,
                                      sendtypes, recvbuf, recvcounts, rdispls,
                                      MPI_DATATYPE_NULL, recvtypes, 1, 1, NULL);
    }
    ism_nbc_drain(c);
    return alltoall_wide(fn, sendbuf, sendcounts, sdispls, sendtypes, MPI_DATATYPE_NULL, recvbuf,
                         recvcounts, rdispls, recvtypes, MPI_DATATYPE_NULL, 1, c, NULL);
}
ISM_PMPI(Alltoallw_c)

int PMPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Alltoallv_c";
    ISM_CHECK_INIT(fn);
    ism_comm *c = ism_abi_comm(comm);
    int in_place = sendbuf == MPI_IN_PLACE;
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (c->is_inter) {
        ism_nbc_drain(c);
        return ism_abi_inter_exchange(fn, c, sendbuf, sendcounts, sdispls, sendtype, NULL,
                                      recvbuf, recvcounts, rdispls, recvtype, NULL, 0, 1, NULL);
    }
    ism_nbc_drain(c);
    ism_dt *sd = NULL, *rd = NULL;
    int rc;
    if ((rc = type_ok(fn, c, recvtype, "receive", &rd)) ||
        (!in_place && (rc = type_ok(fn, c, sendtype, "send", &sd))))
        return rc;
    return alltoall_wide(fn, sendbuf, sendcounts, sdispls, NULL, sendtype, recvbuf, recvcounts,
                         rdispls, NULL, recvtype, 0, c, NULL);
}
ISM_PMPI(Alltoallv_c)

/* Reduce_scatter_c beyond INT_MAX: the whole vector reduced at rank 0 (Reduce_c, in
 * pieces), then scattered by the 64-bit core. Every rank holds every count, so all take
 * the same road. */
int PMPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce_scatter_c";
    ISM_CHECK_INIT(fn);
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (c->is_inter) {
        ism_nbc_drain(c);
        if (!recvcounts)
            return ism_abi_error(c, MPI_ERR_ARG, fn, "receive counts are NULL");
        return inter_reduce_scatter_c(fn, c, sendbuf, recvbuf, recvcounts, 0, datatype, op);
    }
    int n = c->size, rc;
    int64_t total = 0;
    for (int i = 0; recvcounts && i < n; i++)
        total += recvcounts[i] > 0 ? recvcounts[i] : 0;
    if (!recvcounts || (all_fit(recvcounts, n) && total <= INT_MAX)) {
        int *rc_ = ints_of(recvcounts, 0, n);
        rc = !rc_ ? ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory")
                  : PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts ? rc_ : NULL, datatype, op,
                                        comm);
        free(rc_);
        return rc;
    }
    ism_dt *d;
    if ((rc = large_args(fn, comm, datatype, 0, &c, &d)) ||
        (rc = counts_ok(fn, c, recvcounts, n, "receive")))
        return rc;
    int in_place = sendbuf == MPI_IN_PLACE;
    int64_t *cnt = i64_of(recvcounts, 0, n), *dis = malloc(sizeof(int64_t) * (size_t)n + 1);
    void *full = NULL;
    if (!cnt || !dis)
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int64_t i = 0, o = 0; !rc && i < n; o += cnt[i], i++)
        dis[i] = o;
    /* rank 0 reduces into a buffer of its own (its recvbuf holds only its block) */
    if (!rc && c->rank == 0 && !(full = malloc((size_t)(total * (int64_t)d->extent) + 1)))
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "no memory for the %lld-element vector",
                           (long long)total);
    if (!rc)
        rc = PMPI_Reduce_c(in_place ? recvbuf : sendbuf,
                           c->rank == 0 ? full : NULL, total, datatype, op, 0, comm);
    if (!rc)
        rc = core_done(fn, c, ism_scatterv64(full, cnt, dis, d,
                                             (void *)core_buf(recvbuf, cnt[c->rank] == 0),
                                             cnt[c->rank], d, 0, c));
    free(full);
    free(cnt);
    free(dis);
    return rc;
}
ISM_PMPI(Reduce_scatter_c)

/* ---- the neighborhood collectives: their exchange is point-to-point, 64-bit already ---- */

int PMPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_allgather_c", 1, sendbuf, NULL, NULL, sendcount, sendtype,
                         recvbuf, NULL, NULL, recvcount, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_allgather_c)

int PMPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[],
                               const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    /* element displacements as MPI_Aint: the same width as MPI_Count here */
    _Static_assert(sizeof(MPI_Aint) == sizeof(MPI_Count), "MPI_Aint and MPI_Count differ");
    return ism_abi_nbr_v("MPI_Neighbor_allgatherv_c", 1, sendbuf, NULL, NULL, sendcount,
                         sendtype, recvbuf, recvcounts, displs, 0, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_allgatherv_c)

int PMPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_alltoall_c", 1, sendbuf, NULL, ism_abi_nbr_one_block,
                         sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_alltoall_c)

int PMPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm)
{
    return ism_abi_nbr_v("MPI_Neighbor_alltoallv_c", 1, sendbuf, sendcounts, sdispls, 0,
                         sendtype, recvbuf, recvcounts, rdispls, 0, recvtype, comm, NULL);
}
ISM_PMPI(Neighbor_alltoallv_c)

int PMPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void *recvbuf, const MPI_Count recvcounts[],
                              const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                              MPI_Comm comm)
{
    return ism_abi_nbr_w("MPI_Neighbor_alltoallw_c", sendbuf, sendcounts, sdispls, sendtypes,
                         MPI_DATATYPE_NULL, recvbuf, recvcounts, rdispls, recvtypes,
                         MPI_DATATYPE_NULL, comm, NULL);
}
ISM_PMPI(Neighbor_alltoallw_c)

/* ---- The nonblocking data movers' _c forms beyond int (largecount.c calls these where a
 * count or displacement does not fit an int): started on the engine of collectives in
 * flight, the collective their int forms start, so that ranks may mix the forms;
 * ISM_ABI_NB_PASS where the engine does not take the communicator (the coroutine then
 * runs the blocking _c form). ---- */

/* An intercommunicator's nonblocking _c collectives start in flight like its int forms
 * (whichever a member's counts fit, every member runs the same collective): the one
 * named, or NULL. */
static ism_comm *inter_of(MPI_Comm comm, const MPI_Request *request)
{
    ism_comm *c = ism.initialized && request ? ism_abi_comm(comm) : NULL;
    return c && c->is_inter ? c : NULL;
}

static ism_comm *wide_comm(MPI_Comm comm, const MPI_Request *request)
{
    ism_comm *c = ism.initialized && request ? ism_abi_comm(comm) : NULL;
    return c && ism_abi_coll_in_flight(c) ? c : NULL;
}

static int req_of(const char *fn, ism_comm *c, int rc, ism_req *r, MPI_Request *request)
{
    if (rc == ISM_COLL_PASS)
        return ISM_ABI_NB_PASS;
    if (rc)
        return core_done(fn, c, rc);
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

/* Gather(v) (scatter 0) or scatter(v) (1); counts NULL: the non-v form, count each. */
static int iwide_rooted(const char *fn, int scatter, const void *one_buf, MPI_Count one_n,
                        MPI_Datatype one_t, const void *many_buf, const MPI_Count *counts,
                        const MPI_Aint *displs, MPI_Count count, MPI_Datatype many_t, int root,
                        MPI_Comm comm, MPI_Request *request)
{
    ism_comm *ic = inter_of(comm, request);
    if (ic) /* in flight (coll/nb_inter.c) */
        return counts ? ism_abi_inter_rooted(fn, ic, one_buf, one_n, one_t, (void *)many_buf,
                                             counts, displs, many_t, root, scatter, 1, request)
                      : inter_rooted_c(fn, ic, one_buf, one_n, one_t, (void *)many_buf, count,
                                       many_t, root, scatter, request);
    ism_comm *c = wide_comm(comm, request);
    if (!c)
        return ISM_ABI_NB_PASS;
    int n = c->size, is_root = c->rank == root, rc = root_ok(fn, c, root);
    MPI_Count *u = NULL;
    MPI_Aint *ud = NULL;
    if (!rc && !counts && is_root && !(rc = uniform64(fn, c, count, &u, &ud))) {
        counts = u;
        displs = ud;
    }
    ism_dt *one = NULL, *many = NULL;
    if (!rc)
        rc = rooted_wide_args(fn, c, root, one_buf == MPI_IN_PLACE, one_n, one_t,
                              scatter ? "receive" : "send", &one, counts, displs, many_t,
                              scatter ? "send" : "receive", &many);
    int64_t *c64 = NULL, *d64 = NULL;
    if (!rc && is_root && (!(c64 = i64_of(counts, 0, n)) || !(d64 = i64_of(displs, 1, n))))
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    if (!rc)
        rc = ism_abi_isched_rooted64(fn, scatter, one_buf, one_n, one, many_buf, c64, d64, many,
                                     root, c, request);
    free(u);
    free(ud);
    free(c64);
    free(d64);
    return rc;
}

int ism_abi_wide_igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                           MPI_Comm comm, MPI_Request *request)
{
    return iwide_rooted("MPI_Igather_c", 0, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL,
                        recvcount, recvtype, root, comm, request);
}

int ism_abi_wide_igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return iwide_rooted("MPI_Igatherv_c", 0, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                        displs, 0, recvtype, root, comm, request);
}

int ism_abi_wide_iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, MPI_Request *request)
{
    return iwide_rooted("MPI_Iscatter_c", 1, recvbuf, recvcount, recvtype, sendbuf, NULL, NULL,
                        sendcount, sendtype, root, comm, request);
}

int ism_abi_wide_iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                             MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             MPI_Request *request)
{
    return iwide_rooted("MPI_Iscatterv_c", 1, recvbuf, recvcount, recvtype, sendbuf, sendcounts,
                        displs, 0, sendtype, root, comm, request);
}

int ism_abi_wide_iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[],
                               const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Request *request)
{
    static const char fn[] = "MPI_Iallgatherv_c";
    ism_comm *ic = inter_of(comm, request);
    if (ic) { /* my one block to every remote rank, in flight (coll/nb_inter.c) */
        MPI_Count *sc;
        MPI_Aint *sd;
        int rc = uniform64(fn, ic, sendcount, &sc, &sd);
        if (!rc)
            rc = ism_abi_inter_exchange(fn, ic, sendbuf, sc, NULL, sendtype, NULL, recvbuf,
                                        recvcounts, displs, recvtype, NULL, 0, 1, request);
        free(sc);
        free(sd);
        return rc;
    }
    ism_comm *c = wide_comm(comm, request);
    if (!c)
        return ISM_ABI_NB_PASS;
    ism_dt *sd = NULL, *rd = NULL;
    int rc = allgatherv_wide_args(fn, c, sendbuf == MPI_IN_PLACE, sendcount, sendtype, &sd,
                                  recvcounts, displs, recvtype, &rd);
    int64_t *c64 = NULL, *d64 = NULL;
    if (!rc && (!(c64 = i64_of(recvcounts, 0, c->size)) || !(d64 = i64_of(displs, 1, c->size))))
        rc = ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    ism_req *q = NULL;
    if (!rc && !(rc = allgatherv_start(fn, c, sendbuf, sendcount, sd, recvbuf, c64, d64, rd, &q)))
        *request = (MPI_Request)q;
    free(c64);
    free(d64);
    return rc;
}

static int iwide_alltoall(const char *fn, const void *sendbuf, const MPI_Count *sendcounts,
                          const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                          MPI_Datatype sendtype, void *recvbuf, const MPI_Count *recvcounts,
                          const MPI_Aint *rdispls, const MPI_Datatype *recvtypes,
                          MPI_Datatype recvtype, int per_peer, MPI_Comm comm,
                          MPI_Request *request)
{
    ism_comm *ic = inter_of(comm, request);
    if (ic) /* in flight (coll/nb_inter.c) */
        return ism_abi_inter_exchange(fn, ic, sendbuf, sendcounts, sdispls, sendtype, sendtypes,
                                      recvbuf, recvcounts, rdispls, recvtype, recvtypes,
                                      per_peer, 1, request);
    ism_comm *c = wide_comm(comm, request);
    if (!c)
        return ISM_ABI_NB_PASS;
    return alltoall_wide(fn, sendbuf, sendcounts, sdispls, sendtypes, sendtype, recvbuf, recvcounts,
                         rdispls, recvtypes, recvtype, per_peer, c, request);
}

/* ---- an intercommunicator's elementwise forms and allgather beyond int: one collective
 * in flight (coll/nb_inter.c), 64-bit, as the int forms there, never a coroutine (whose
 * later start could take the merged communicator's sequence numbers out of the program's
 * order); elsewhere the coroutine's pieces ---- */

static int inter_wide_started(const char *fn, ism_comm *c, int rc, ism_req *q,
                              MPI_Request *request)
{
    if (rc)
        return ism_abi_nbc_error(c, rc, fn);
    *request = (MPI_Request)q;
    return MPI_SUCCESS;
}

int ism_abi_wide_ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                          MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ibcast_c";
    ism_comm *c = inter_of(comm, request);
    ism_dt *d;
    ism_req *q = NULL;
    if (!c)
        return ISM_ABI_NB_PASS;
    int rc = ism_abi_inter_args(fn, c, datatype, count, MPI_OP_NULL, &root, NULL, &d, NULL);
    if (!rc) { /* (q set by the start, read after it: not in one call) */
        int e = ism_coll_inter_ibcast(buffer, count, d, root, c, &q);
        rc = inter_wide_started(fn, c, e, q, request);
    }
    return rc;
}

/* An allreduce (root NULL) or a reduce to *root. */
static int inter_wide_red(const char *fn, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, int *root, MPI_Comm comm,
                          MPI_Request *request)
{
    ism_comm *c = inter_of(comm, request);
    ism_dt *d;
    ism_op *o;
    ism_req *q = NULL;
    if (!c)
        return ISM_ABI_NB_PASS;
    int rc = ism_abi_inter_args(fn, c, datatype, count, op, root, sendbuf, &d, &o);
    if (!rc) {
        int e = root ? ism_coll_inter_ireduce(sendbuf, recvbuf, count, d, o, *root, c, &q)
                     : ism_coll_inter_iallreduce(sendbuf, recvbuf, count, d, o, c, &q);
        rc = inter_wide_started(fn, c, e, q, request);
    }
    return rc;
}

int ism_abi_wide_iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request)
{
    return inter_wide_red("MPI_Iallreduce_c", sendbuf, recvbuf, count, datatype, op, NULL, comm,
                          request);
}

int ism_abi_wide_ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                           MPI_Request *request)
{
    return inter_wide_red("MPI_Ireduce_c", sendbuf, recvbuf, count, datatype, op, &root, comm,
                          request);
}

/* counts NULL: one each (the block form) */
static int inter_wide_redscat(const char *fn, const void *sendbuf, void *recvbuf,
                              const MPI_Count *counts, MPI_Count one, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    ism_comm *c = inter_of(comm, request);
    ism_dt *d;
    ism_op *o;
    ism_req *q = NULL;
    if (!c)
        return ISM_ABI_NB_PASS;
    int rc = ism_abi_inter_args(fn, c, datatype, counts ? 0 : one, op, NULL, sendbuf, &d, &o);
    int n = c->local_size;
    int64_t *v = rc ? NULL : malloc(sizeof *v * (size_t)(n + 1));
    if (!rc && !v)
        rc = ism_abi_nbc_error(c, MPI_ERR_NO_MEM, fn);
    for (int i = 0; !rc && i < n; i++)
        if ((v[i] = counts ? counts[i] : one) < 0)
            rc = ism_abi_error(c, MPI_ERR_COUNT, fn, "receive count for rank %d is negative", i);
    if (!rc) {
        int e = ism_coll_inter_ireduce_scatter(sendbuf, recvbuf, v, d, o, c, &q);
        rc = inter_wide_started(fn, c, e, q, request);
    }
    free(v);
    return rc;
}

int ism_abi_wide_ireduce_scatter_c(const void *sendbuf, void *recvbuf,
                                   const MPI_Count recvcounts[], MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    if (!recvcounts) /* the coroutine's checks say so */
        return ISM_ABI_NB_PASS;
    return inter_wide_redscat("MPI_Ireduce_scatter_c", sendbuf, recvbuf, recvcounts, 0,
                              datatype, op, comm, request);
}

int ism_abi_wide_ireduce_scatter_block_c(const void *sendbuf, void *recvbuf,
                                         MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                         MPI_Comm comm, MPI_Request *request)
{
    return inter_wide_redscat("MPI_Ireduce_scatter_block_c", sendbuf, recvbuf, NULL, recvcount,
                              datatype, op, comm, request);
}

int ism_abi_wide_iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPI_Request *request)
{
    ism_comm *c = inter_of(comm, request);
    return c ? inter_exchange_c("MPI_Iallgather_c", c, sendbuf, sendcount, sendtype, recvbuf,
                                recvcount, recvtype, 0, request)
             : ISM_ABI_NB_PASS;
}

int ism_abi_wide_ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request *request)
{
    static const char fn[] = "MPI_Ialltoall_c";
    ism_comm *ic = inter_of(comm, request);
    if (ic) /* in flight (coll/nb_inter.c) */
        return inter_exchange_c(fn, ic, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                recvtype, 1, request);
    ism_comm *c = wide_comm(comm, request);
    if (!c)
        return ISM_ABI_NB_PASS;
    int ip = sendbuf == MPI_IN_PLACE;
    MPI_Aint *sd = NULL, *rd = NULL;
    MPI_Count *sc = NULL, *rc_ = NULL;
    int rc = uniform64(fn, c, recvcount, &rc_, &rd);
    if (!rc && !ip)
        rc = uniform64(fn, c, sendcount, &sc, &sd);
    if (!rc)
        rc = iwide_alltoall(fn, sendbuf, sc, sd, NULL, sendtype, recvbuf, rc_, rd, NULL, recvtype,
                            0, comm, request);
    free(sc);
    free(sd);
    free(rc_);
    free(rd);
    return rc;
}

int ism_abi_wide_ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return iwide_alltoall("MPI_Ialltoallv_c", sendbuf, sendcounts, sdispls, NULL, sendtype,
                          recvbuf, recvcounts, rdispls, NULL, recvtype, 0, comm, request);
}

int ism_abi_wide_ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void *recvbuf, const MPI_Count recvcounts[],
                              const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                              MPI_Comm comm, MPI_Request *request)
{
    return iwide_alltoall("MPI_Ialltoallw_c", sendbuf, sendcounts, sdispls, sendtypes,
                          MPI_DATATYPE_NULL, recvbuf, recvcounts, rdispls, recvtypes,
                          MPI_DATATYPE_NULL, 1, comm, request);
}
