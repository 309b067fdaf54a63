/* wrap.h: what the generated wrappers (calls.c) ask of the tracer: communicator ids,
 * datatype sizes, scratch memory for request arrays, and the detail records. The
 * functions are in comms.c and details.c. */
#ifndef ISM_TRACE_WRAP_H
#define ISM_TRACE_WRAP_H

#include "tool.h"

/* A table's own mutex, taken only under MPI_THREAD_MULTIPLE (comms.c, wins.c). */
static inline void ism_tr_table_lock(pthread_mutex_t *m)
{
    if (ism_tr.mt)
        pthread_mutex_lock(m);
}
static inline void ism_tr_table_unlock(pthread_mutex_t *m)
{
    if (ism_tr.mt)
        pthread_mutex_unlock(m);
}

/* ---- communicators (comms.c) ---- */

typedef struct ism_tr_comm_ent {
    MPI_Comm h;
    uint32_t id;
    int size, rank, rsize, inter; /* rsize: the remote group of an intercommunicator */
} ism_tr_comm_ent;

extern ism_tr_comm_ent ism_tr_world_ent;

/* The entry of a communicator, defining it (a COMM record) on first sight; id
 * UINT32_MAX if it could not be defined. */
ism_tr_comm_ent ism_tr_comm_slow(MPI_Comm c);
static inline ism_tr_comm_ent ism_tr_comm_of(MPI_Comm c)
{
    if (c == MPI_COMM_WORLD)
        return ism_tr_world_ent;
    return ism_tr_comm_slow(c);
}
static inline uint32_t ism_tr_comm_id(MPI_Comm c)
{
    return c == MPI_COMM_WORLD ? 0 : ism_tr_comm_slow(c).id;
}
void ism_tr_comms_start(void); /* defines MPI_COMM_WORLD and MPI_COMM_SELF */
void ism_tr_comms_stop(void);
/* A communicator a call just created: defined now, in creation order (the exporters
 * match communicators across ranks by members and order). `like` (or MPI_COMM_NULL) has
 * the same members, for one that cannot be asked yet (MPI_Comm_idup). */
void ism_tr_comm_created(MPI_Comm c, MPI_Comm like);
/* Before MPI_Comm_free / MPI_Comm_disconnect: forgotten (a COMMFREE record). */
void ism_tr_comm_freed(MPI_Comm c);

/* ---- windows (wins.c) ---- */

/* A window: the tracer's id and its members as global ranks (NULL if unknown). */
typedef struct {
    uint32_t id;
    int n;
    const int *world;
} ism_tr_win_ent;

ism_tr_win_ent ism_tr_win_slow(MPI_Win w);
extern MPI_Win ism_tr_win_last_h;
extern ism_tr_win_ent ism_tr_win_last;
/* The entry of window w (id UINT32_MAX for one the tracer never saw created). */
static inline ism_tr_win_ent ism_tr_win_of(MPI_Win w)
{
    if (ISM_TR_LIKELY(w == ism_tr_win_last_h && !ism_tr.mt))
        return ism_tr_win_last;
    return ism_tr_win_slow(w);
}
/* A window a call just created over comm: its id (members from comm's group). */
uint32_t ism_tr_win_created(MPI_Win w, MPI_Comm comm);
/* Before MPI_Win_free: forgotten; returns its id. */
uint32_t ism_tr_win_forget(MPI_Win w);
void ism_tr_wins_stop(void);

static inline void ism_tr_rma_set(ism_tr_rma *d, uint16_t op, uint8_t flags,
                                  const ism_tr_win_ent *w, int target, int assert_,
                                  uint64_t out, uint64_t back, uint64_t req)
{
    ism_tr_hdr_set(d, sizeof *d, ISM_TR_RMA, flags, 0);
    d->win = w->id;
    d->target = target < 0 ? (target == MPI_PROC_NULL ? -3 : -1)
                : w->world && target < w->n ? w->world[target] : -1;
    d->op = op;
    d->pad = 0;
    d->assert_ = assert_;
    d->out = out;
    d->back = back;
    d->req = req;
}

static inline void ism_tr_win_set(ism_tr_win *d, uint8_t flags, uint32_t win, uint32_t comm)
{
    ism_tr_hdr_set(d, sizeof *d, ISM_TR_WIN, flags, 0);
    d->win = win;
    d->comm = comm;
}

/* The CALL and one RMA record per member of group (MPI_Win_post, MPI_Win_start). */
int ism_tr_rma_group(uint16_t fn, uint64_t t0, uint64_t t1, int rc, uint16_t op,
                     MPI_Win win, MPI_Group group, int assert_);

/* ---- datatypes and statuses (details.c) ---- */

/* Bytes of one element (0 for a handle that is not a valid datatype). Predefined types
 * (the standard ABI's handles 0x200..0x2ff) are looked up in a table filled at start;
 * derived ones are asked each time (a freed handle may come back as another type). */
uint64_t ism_tr_type_size_slow(MPI_Datatype t);
extern uint64_t ism_tr_predef_size[256];
static inline uint64_t ism_tr_type_size(MPI_Datatype t)
{
    uintptr_t i = (uintptr_t)t - 0x200;
    if (ISM_TR_LIKELY(i < 256 && ism_tr_predef_size[i]))
        return ism_tr_predef_size[i];
    return ism_tr_type_size_slow(t);
}

/* Bytes a status says arrived (0 if the call failed or it says nothing). */
uint64_t ism_tr_status_bytes(const MPI_Status *st, int rc);

static inline uint64_t ism_tr_sum_i(const int *v, uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = 0; v && i < n; i++)
        s += (uint64_t)(v[i] > 0 ? v[i] : 0);
    return s;
}
static inline uint64_t ism_tr_sum_c(const MPI_Count *v, uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = 0; v && i < n; i++)
        s += (uint64_t)(v[i] > 0 ? v[i] : 0);
    return s;
}
#define ISM_TR_SUM(v, n)                                                                           \
    _Generic((v), int *: ism_tr_sum_i, const int *: ism_tr_sum_i, MPI_Count *: ism_tr_sum_c,       \
             const MPI_Count *: ism_tr_sum_c)((v), (n))
uint64_t ism_tr_sumw_i(const int *counts, const MPI_Datatype *types, uint64_t n);
uint64_t ism_tr_sumw_c(const MPI_Count *counts, const MPI_Datatype *types, uint64_t n);
#define ISM_TR_SUMW(v, t, n)                                                                       \
    _Generic((v), int *: ism_tr_sumw_i, const int *: ism_tr_sumw_i, MPI_Count *: ism_tr_sumw_c,    \
             const MPI_Count *: ism_tr_sumw_c)((v), (t), (n))

/* ---- records ---- */

/* A call that failed: only its CALL record (its handles may be invalid). Returns rc. */
int ism_tr_failed(uint16_t fn, uint64_t t0, uint64_t t1, int rc);

static inline void ism_tr_p2p_set(ism_tr_p2p *d, uint8_t kind, uint8_t flags, uint32_t comm,
                                  int peer, int tag, uint64_t bytes, uint64_t req)
{
    ism_tr_hdr_set(d, sizeof *d, kind, flags, 0);
    d->comm = comm;
    d->peer = peer;
    d->tag = tag;
    d->pad = 0;
    d->bytes = bytes;
    d->req = req;
}

/* What a collective's formulas need to know about its communicator and root. */
typedef struct {
    uint32_t comm;
    int n, me, inter, isroot, part, root, indeg, outdeg;
} ism_tr_coll_ctx;

void ism_tr_coll_begin(ism_tr_coll_ctx *x, MPI_Comm comm, int root, int neighbor);

static inline void ism_tr_coll_set(ism_tr_coll *d, uint8_t flags, const ism_tr_coll_ctx *x,
                                   uint64_t sent, uint64_t recvd, uint64_t req)
{
    ism_tr_hdr_set(d, sizeof *d, ISM_TR_COLL, flags | (x->isroot ? ISM_TR_COLL_ROOT : 0), 0);
    d->comm = x->comm;
    d->root = x->root;
    d->sent = sent;
    d->recvd = recvd;
    d->req = req;
}

/* Scratch memory of the calling thread (NULL when out of memory). */
MPI_Request *ism_tr_scratch_reqs(int n);
MPI_Status *ism_tr_scratch_statuses(int n);

/* The CALL and one DONE per completed request: k of them, reqs[idx[i]] with status st[i]
 * when idx is given, else reqs[i] with st[i]. A request that a failed Waitall/Testall
 * (MPI_ERR_IN_STATUS) did not complete is left out. */
int ism_tr_done_list(uint16_t fn, uint64_t t0, uint64_t t1, int rc, int k,
                     const MPI_Request *reqs, const int *idx, const MPI_Status *st);

/* The CALL and a START or FREE per request (MPI_Start, MPI_Startall, MPI_Request_free,
 * MPI_Cancel). */
int ism_tr_req_list(uint16_t fn, uint64_t t0, uint64_t t1, int rc, uint8_t kind,
                    uint8_t flags, int n, const MPI_Request *reqs);

/* A matched message (MPI_Mprobe, MPI_Improbe) waits for its MPI_Mrecv/MPI_Imrecv, which
 * learns its communicator and envelope from here. */
typedef struct {
    uint32_t comm;
    int source, tag;
} ism_tr_msg;
void ism_tr_message_probed(MPI_Message m, MPI_Comm comm, const MPI_Status *st);
ism_tr_msg ism_tr_message_take(MPI_Message m);

#endif
