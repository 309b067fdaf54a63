/* details.c: the detail records of the generated wrappers (wrap.h): sizes, request
 * completion, persistent starts, collectives' context and matched messages. */
#include <stdlib.h>
#include <string.h>

#include "wrap.h"

uint64_t ism_tr_predef_size[256];

/* Only called with types of calls that succeeded, so t is valid and asking cannot
 * invoke an error handler. */
uint64_t ism_tr_type_size_slow(MPI_Datatype t)
{
    MPI_Count n = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size_x(t, &n) != MPI_SUCCESS || n < 0)
        return 0;
    uintptr_t i = (uintptr_t)t - 0x200;
    if (i < 256)
        ism_tr_predef_size[i] = (uint64_t)n;
    return (uint64_t)n;
}

uint64_t ism_tr_status_bytes(const MPI_Status *st, int rc)
{
    MPI_Count n = 0;
    if (!st || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0 || n == MPI_UNDEFINED)
        return 0;
    return (uint64_t)n;
}

/* the same sum for int and MPI_Count counts */
#define SUMW(NAME, T)                                                                              \
    uint64_t NAME(const T *counts, const MPI_Datatype *types, uint64_t n)                         \
    {                                                                                              \
        uint64_t s = 0;                                                                            \
        for (uint64_t i = 0; counts && types && i < n; i++)                                        \
            if (counts[i] > 0)                                                                     \
                s += (uint64_t)counts[i] * ism_tr_type_size(types[i]);                             \
        return s;                                                                                  \
    }
SUMW(ism_tr_sumw_i, int)
SUMW(ism_tr_sumw_c, MPI_Count)

int ism_tr_failed(uint16_t fn, uint64_t t0, uint64_t t1, int rc)
{
    ism_tr_leave(fn, t0, t1, rc, 0);
    ism_tr_unlock();
    return rc;
}

void ism_tr_coll_begin(ism_tr_coll_ctx *x, MPI_Comm comm, int root, int neighbor)
{
    ism_tr_comm_ent e = ism_tr_comm_of(comm);
    x->comm = e.id;
    x->inter = e.inter;
    x->n = e.inter ? e.rsize : e.size;
    x->me = e.rank;
    x->root = root;
    x->isroot = root >= 0 || root == MPI_ROOT ? (e.inter ? root == MPI_ROOT : root == e.rank)
                                              : 0;
    x->part = !(e.inter && root == MPI_PROC_NULL);
    if (x->me < 0 || (!e.inter && x->me >= x->n))
        x->me = 0; /* never an index out of the counts arrays */
    x->indeg = x->outdeg = 0;
    if (!neighbor)
        return;
    int kind = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        x->indeg = x->outdeg = 2 * nd;
    } else if (kind == MPI_GRAPH) {
        int nn = 0;
        PMPI_Graph_neighbors_count(comm, e.rank, &nn);
        x->indeg = x->outdeg = nn;
    } else if (kind == MPI_DIST_GRAPH) {
        int w = 0;
        PMPI_Dist_graph_neighbors_count(comm, &x->indeg, &x->outdeg, &w);
    }
}

/* ---- scratch memory: one set per nesting depth, so a callback's own MPI_Waitall does
 * not overwrite the copy its caller still needs ---- */

#define SCRATCH_DEPTHS 4

typedef struct {
    void *p;
    size_t cap;
} scratch;

static ISM_TR_TLS scratch reqs_s[SCRATCH_DEPTHS], stat_s[SCRATCH_DEPTHS];

static void *grow(scratch *s, size_t bytes)
{
    if (bytes <= s->cap)
        return s->p;
    size_t cap = s->cap ? s->cap : 64 * sizeof(MPI_Status);
    while (cap < bytes)
        cap *= 2;
    void *p = realloc(s->p, cap);
    if (!p)
        return NULL;
    s->p = p;
    s->cap = cap;
    return p;
}

static int depth_slot(void)
{
    return ism_tr_depth < SCRATCH_DEPTHS ? ism_tr_depth : SCRATCH_DEPTHS - 1;
}

MPI_Request *ism_tr_scratch_reqs(int n)
{
    return grow(&reqs_s[depth_slot()], sizeof(MPI_Request) * (size_t)(n > 0 ? n : 1));
}

MPI_Status *ism_tr_scratch_statuses(int n)
{
    return grow(&stat_s[depth_slot()], sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
}

int ism_tr_done_list(uint16_t fn, uint64_t t0, uint64_t t1, int rc, int k,
                     const MPI_Request *reqs, const int *idx, const MPI_Status *st)
{
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
        k = 0;
    if (k < 0 || !reqs)
        k = 0;
    if (!ism_tr_leave(fn, t0, t1, rc, 0)) {
        ism_tr_unlock();
        return rc;
    }
    for (int i = 0; i < k; i++) {
        MPI_Request r = idx ? reqs[idx[i]] : reqs[i];
        if (r == MPI_REQUEST_NULL)
            continue;
        const MPI_Status *s = st ? &st[i] : NULL;
        if (rc == MPI_ERR_IN_STATUS && s && s->MPI_ERROR == MPI_ERR_PENDING)
            continue;
        ism_tr_done *d = ism_tr_detail(sizeof *d);
        if (!d)
            break;
        int cancelled = 0;
        if (s)
            PMPI_Test_cancelled(s, &cancelled);
        ism_tr_hdr_set(d, sizeof *d, ISM_TR_DONE,
                       (cancelled ? ISM_TR_DONE_CANCELLED : 0) | (s ? ISM_TR_DONE_STATUS : 0), 0);
        d->req = (uint64_t)(uintptr_t)r;
        d->source = s ? s->MPI_SOURCE : -1;
        d->tag = s ? s->MPI_TAG : -1;
        d->bytes = ism_tr_status_bytes(s, rc);
    }
    ism_tr_unlock();
    return rc;
}

int ism_tr_req_list(uint16_t fn, uint64_t t0, uint64_t t1, int rc, uint8_t kind,
                    uint8_t flags, int n, const MPI_Request *reqs)
{
    if (!ism_tr_leave(fn, t0, t1, rc, 0)) {
        ism_tr_unlock();
        return rc;
    }
    for (int i = 0; reqs && i < n; i++) {
        ism_tr_req *d = ism_tr_detail(sizeof *d);
        if (!d)
            break;
        ism_tr_hdr_set(d, sizeof *d, kind, flags, 0);
        d->req = (uint64_t)(uintptr_t)reqs[i];
    }
    ism_tr_unlock();
    return rc;
}

/* ---- matched messages: a few per thread are ever outstanding ---- */

#define MSG_SLOTS 64

typedef struct {
    MPI_Message m;
    ism_tr_msg v;
} msg_slot;

static _Thread_local msg_slot msgs[MSG_SLOTS];

void ism_tr_message_probed(MPI_Message m, MPI_Comm comm, const MPI_Status *st)
{
    if (m == MPI_MESSAGE_NO_PROC)
        return;
    ism_tr_msg v = {ism_tr_comm_id(comm), st->MPI_SOURCE, st->MPI_TAG};
    int free_at = -1;
    for (int i = 0; i < MSG_SLOTS; i++) {
        if (msgs[i].m == m) {
            free_at = i;
            break;
        }
        if (free_at < 0 && msgs[i].m == (MPI_Message)0)
            free_at = i;
    }
    if (free_at < 0)
        free_at = (int)((uintptr_t)m % MSG_SLOTS); /* overwrite: that one records as unknown */
    msgs[free_at].m = m;
    msgs[free_at].v = v;
}

ism_tr_msg ism_tr_message_take(MPI_Message m)
{
    for (int i = 0; i < MSG_SLOTS; i++)
        if (msgs[i].m == m && m != (MPI_Message)0) {
            msgs[i].m = (MPI_Message)0;
            return msgs[i].v;
        }
    if (m == MPI_MESSAGE_NO_PROC)
        return (ism_tr_msg){0, MPI_PROC_NULL, MPI_ANY_TAG};
    return (ism_tr_msg){UINT32_MAX, MPI_ANY_SOURCE, MPI_ANY_TAG};
}
