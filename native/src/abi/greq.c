/* greq.c (abi): generalized requests (MPI 3.1 §12.2), operations the program itself
 * completes with MPI_Grequest_complete.
 *
 * A generalized request is a core request of kind ISM_RQ_GREQ that no progress engine
 * completes: MPI_Grequest_complete sets it done, and the completion calls of
 * abi/request.c then ask the program for its status (query_fn) and release it (free_fn);
 * the callbacks' return codes become the calls' error codes. MPI_Cancel calls cancel_fn;
 * MPI_Request_free before MPI_Grequest_complete defers free_fn to the latter, whichever
 * of the two comes last runs it.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"

struct ism_greq {
    MPI_Grequest_query_function *query;
    MPI_Grequest_free_function *free;
    MPI_Grequest_cancel_function *cancel;
    void *state;
};

int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn,
                        MPI_Grequest_free_function *free_fn,
                        MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                        MPI_Request *request)
{
    const char *fn = "MPI_Grequest_start";
    ISM_CHECK_INIT(fn);
    if (!query_fn || !free_fn || !cancel_fn || !request)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "query_fn, free_fn, cancel_fn and request must not be NULL");
    struct ism_greq *g = malloc(sizeof *g);
    ism_req *r = g ? ism_req_alloc(ISM_RQ_GREQ) : NULL;
    if (!r) {
        free(g);
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    *g = (struct ism_greq){query_fn, free_fn, cancel_fn, extra_state};
    r->greq = g;
    r->st.source = MPI_ANY_SOURCE;
    r->st.tag = MPI_ANY_TAG;
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}
ISM_PMPI(Grequest_start)

/* Runs free_fn and releases the request. */
static int release(ism_req *r)
{
    struct ism_greq *g = r->greq;
    int rc = g->free(g->state);
    free(g);
    r->greq = NULL;
    ism_req_free(r);
    return rc;
}

int PMPI_Grequest_complete(MPI_Request request)
{
    const char *fn = "MPI_Grequest_complete";
    ISM_CHECK_INIT(fn);
    ism_req *r = ism_abi_req(request);
    if (!r || r->kind != ISM_RQ_GREQ)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, fn, "not a generalized request");
    if (r->done)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, fn, "the request was already completed");
    if (r->freed) { /* MPI_Request_free came first: nobody will wait for it */
        int rc = release(r);
        return rc ? ism_abi_error(NULL, rc, fn, "free_fn returned an error") : MPI_SUCCESS;
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE); /* another thread may be waiting */
    return MPI_SUCCESS;
}
ISM_PMPI(Grequest_complete)

int ism_abi_greq_query(ism_req *r, ism_status *st)
{
    struct ism_greq *g = r->greq;
    MPI_Status s;
    memset(&s, 0, sizeof s);
    s.MPI_SOURCE = MPI_ANY_SOURCE; /* what the status says if query_fn leaves it */
    s.MPI_TAG = MPI_ANY_TAG;
    int rc = g->query(g->state, &s);
    st->source = s.MPI_SOURCE;
    st->tag = s.MPI_TAG;
    st->cancelled = s.MPI_internal[2];
    st->bytes = ism_abi_status_bytes(&s);
    st->error = rc;
    return rc;
}

int ism_abi_greq_finish(MPI_Request *h, ism_status *st)
{
    ism_req *r = ism_abi_req(*h);
    int rc = ism_abi_greq_query(r, st);
    int frc = release(r);
    *h = MPI_REQUEST_NULL;
    if (!rc && frc)
        st->error = rc = frc;
    return rc;
}

int ism_abi_greq_free(ism_req *r)
{
    if (!r->done) {
        r->freed = 1; /* free_fn runs in MPI_Grequest_complete */
        return MPI_SUCCESS;
    }
    return release(r);
}

int ism_abi_greq_cancel(ism_req *r)
{
    struct ism_greq *g = r->greq;
    return g->cancel(g->state, r->done);
}
