/* coll_persist.c (abi): persistent collective requests, the MPI-4 MPI_<x>_init calls
 * (MPI 4.0 §6.13). Their entry points (coll_nb_gen.c, beside the nonblocking form whose
 * argument block and body they share) hand their arguments here; this file owns the
 * request from initialization to MPI_Request_free.
 *
 * The template made at initialization keeps
 *  - a private duplicate of the communicator. Ranks may start their persistent
 *    collectives in different orders (the operations were matched when they were
 *    initialized; only the info key mpi_assert_strict_persistent_collective_ordering
 *    would promise otherwise), while collectives on one communicator run one at a time in
 *    the order they were started (core/nbc.c). Its own communicator gives each request
 *    its own vendor communicator and cross-site context, so starts in any order cannot
 *    cross. The cost is one context-id agreement at initialization, which MPI makes a
 *    nonlocal collective call, and nothing per start;
 *  - a reference to every derived datatype it names (the w-forms' type arrays too), so
 *    that MPI_Type_free while the request lives changes nothing;
 *  - the argument block, naming the private communicator instead of the program's.
 *
 * MPI_Start starts the nonblocking form on the private communicator: as a collective in
 * flight where that engine takes it (coll/nb.c; its argument errors are raised at
 * MPI_Start), else by running its body (the blocking form) on a coroutine, whose errors
 * come back through the MPI_Wait/MPI_Test that completes the request, raised on the
 * program's communicator. A collective in flight tells the template when it has ended
 * (ism_coll_nb_next_ends), as the coroutine does. Completion leaves the request inactive and restartable (abi/request.c).
 * Freeing an active request is erroneous (MPI 4.0 §6.13) and does not crash: the run
 * completes in the background and the template goes at its end. The info argument is
 * accepted and not interpreted (no hint is defined for these calls).
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "../coll/coll.h"

struct ism_pcoll {
    int (*body)(void *);
    int (*sched)(void *, MPI_Request *); /* a start as a collective in flight, or NULL */
    ism_comm *priv;  /* the private duplicate the runs use */
    ism_dt **held;   /* derived types referenced until the template goes */
    int nheld;
    int running;     /* a run started by MPI_Start has not returned yet */
    int orphaned;    /* the request was freed during that run: the run's end frees us */
    size_t len;
    void *owned[6]; /* copies of the program's arrays the template reads (the _c forms) */
    int nowned;
    _Alignas(16) unsigned char args[192];
};

static void hold(ism_pcoll *p, MPI_Datatype h)
{
    ism_dt *d = ism_abi_dt_any(h);
    if (d && d->x) {
        ism_dt_retain(d);
        p->held[p->nheld++] = d;
    }
}

static void destroy(ism_pcoll *p)
{
    for (int i = 0; i < p->nowned; i++)
        free(p->owned[i]);
    for (int i = 0; i < p->nheld; i++)
        ism_dt_release(p->held[i]);
    free(p->held);
    if (p->priv) {
        ism_abi_topo_free(p->priv);
        ism_comm_free(p->priv); /* kept until no request can use it (core/comm.c) */
    }
    free(p);
}

int ism_abi_pcoll_init(const char *fn, MPI_Comm comm, MPI_Comm *slot, int (*body)(void *),
                       int (*sched)(void *, MPI_Request *), const void *args, size_t len,
                       MPI_Info info, MPI_Request *request,
                       MPI_Datatype t1, MPI_Datatype t2, const MPI_Datatype *tv1,
                       const MPI_Datatype *tv2, int neighbor)
{
    (void)info; /* accepted, not interpreted */
    ism_comm *c;
    int rc = ism_abi_nbc_comm(fn, comm, request, &c);
    if (rc)
        return rc;
    ism_pcoll *p = calloc(1, sizeof *p);
    if (!p || len > sizeof p->args) {
        free(p);
        return ism_abi_error(c, p ? MPI_ERR_INTERN : MPI_ERR_NO_MEM, fn,
                             p ? "argument block too large" : "out of memory");
    }
    int n1 = 0, n2 = 0;
    if (neighbor)
        ism_abi_neighbor_degrees(comm, &n2, &n1); /* send types go out, receive types in */
    else
        n1 = n2 = c->size; /* on an intercommunicator: the remote group */
    n1 = tv1 ? n1 : 0;
    n2 = tv2 ? n2 : 0;
    p->held = malloc(sizeof(ism_dt *) * (size_t)(2 + n1 + n2));
    ism_req *r = ism_req_alloc(ISM_RQ_PERSIST);
    if (!p->held || !r) {
        ism_req_free(r);
        destroy(p);
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    hold(p, t1);
    if (t2 != t1)
        hold(p, t2);
    for (int i = 0; i < n1; i++)
        hold(p, tv1[i]);
    for (int i = 0; i < n2; i++)
        hold(p, tv2[i]);
    ism_nbc_drain(c); /* initialization is a collective on comm: keep the order */
    ism_comm *priv = NULL;
    rc = c->is_inter ? ism_intercomm_dup(c, &priv) : ism_comm_dup(c, &priv);
    p->priv = rc ? NULL : priv;
    if (!rc)
        rc = ism_abi_topo_copy(c, priv); /* the neighborhood collectives need it */
    if (!rc)
        rc = ism_coll_copy_hints(c, priv); /* and chooses algorithms as c does */
    if (!rc && sched) /* a start in flight must not make it: that would block (coll/nb.c) */
        ism_comm_spanning_vcoll(priv);
    if (rc) {
        ism_req_free(r);
        destroy(p);
        return ism_abi_error(c, rc, fn, "creating the request's communicator failed");
    }
    p->body = body;
    p->sched = sched;
    p->len = len;
    memcpy(p->args, args, len);
    MPI_Comm h = (MPI_Comm)p->priv;
    memcpy(p->args + ((const unsigned char *)slot - (const unsigned char *)args), &h, sizeof h);
    r->comm = c;
    r->p_op = ISM_ABI_PCOLL;
    r->tmp = p;
    r->st.source = MPI_ANY_SOURCE;
    r->st.tag = MPI_ANY_TAG;
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

const ism_pcoll *ism_abi_pcoll_starting;

static void pcoll_ended(void *p) { ism_abi_pcoll_ended(p); }

int ism_abi_pcoll_start(ism_req *r)
{
    ism_pcoll *p = r->tmp;
    ism_comm *c = r->comm;
    /* An error inside a run is raised by the MPI_Wait/Test that completes it, on the
     * program's communicator; a fatal handler already stops inside, where the message
     * says most. A user function never sees the private communicator. */
    p->priv->errh = c->errh && c->errh->kind != 3 ? c->errh : &ism_errh_return;
    p->running = 1; /* before the run: it may end within the start */
    int rc = ISM_ABI_NB_PASS;
    if (p->sched) { /* as a collective in flight, which tells us when it has ended */
        MPI_Request q = MPI_REQUEST_NULL;
        ism_coll_nb_next_ends(pcoll_ended, p);
        ism_abi_pcoll_starting = p; /* its freed types are still the template's */
        rc = p->sched(p->args, &q);
        ism_abi_pcoll_starting = NULL;
        ism_coll_nb_next_ends(NULL, NULL);
        if (rc == MPI_SUCCESS) {
            r->inner = (ism_req *)q;
            return MPI_SUCCESS;
        }
        if (rc != ISM_ABI_NB_PASS) { /* raised on the private communicator already */
            p->running = 0;
            r->inner = NULL;
            return p->priv->errh == c->errh ? rc
                                            : ism_abi_error(c, rc, "MPI_Start",
                                                            "the collective's arguments are "
                                                            "invalid");
        }
    }
    rc = ism_abi_nbc_run(p->priv, p->body, p->args, p->len, NULL, NULL, p, &r->inner);
    if (rc) {
        p->running = 0;
        r->inner = NULL;
        return ism_abi_nbc_error(c, rc, "MPI_Start");
    }
    return MPI_SUCCESS;
}

void ism_abi_pcoll_free(ism_req *r)
{
    ism_pcoll *p = r->tmp;
    if (r->inner) {
        if (r->inner->done)
            ism_req_free(r->inner);
        else
            r->inner->freed = 1; /* completes during later progress and frees itself */
        r->inner = NULL;
    }
    r->tmp = NULL;
    ism_req_free(r);
    if (p->running)
        p->orphaned = 1;
    else
        destroy(p);
}

int ism_abi_pcoll_holds(const ism_pcoll *p, const ism_dt *d)
{
    for (int i = 0; i < p->nheld; i++)
        if (p->held[i] == d)
            return 1;
    return 0;
}

void ism_abi_pcoll_ended(ism_pcoll *p)
{
    p->running = 0;
    if (p->orphaned)
        destroy(p);
}

/* A copy of n elements of size bytes each from src, for ism_abi_pcoll_adopt; NULL when
 * src is NULL or n is 0 (not significant on this rank), or out of memory (*nomem set). */
void *ism_abi_pcoll_copy(const void *src, int n, size_t size, int *nomem)
{
    if (!src || n <= 0)
        return NULL;
    void *d = malloc(size * (size_t)n);
    if (d)
        memcpy(d, src, size * (size_t)n);
    else
        *nomem = 1;
    return d;
}

/* The request's template takes mem (from ism_abi_pcoll_copy) and frees it with itself:
 * MPICH copies a persistent collective's arrays at initialization, and clients rely on it
 * (mpi4py 4.1.2 frees the counts it passes to MPI_Reduce_scatter_init_c). */
void ism_abi_pcoll_adopt(MPI_Request request, void *mem)
{
    ism_req *r = ism_abi_req(request);
    ism_pcoll *p = r ? r->tmp : NULL;
    if (!mem)
        return;
    if (!p || p->nowned == (int)(sizeof p->owned / sizeof *p->owned)) {
        free(mem); /* not reached: the generated forms adopt at most four arrays */
        return;
    }
    p->owned[p->nowned++] = mem;
}
