/* request.c (abi): completion calls (Wait/Test in their single, all, any, some forms),
 * MPI_Request_free and MPI_Request_get_status. A completed generalized request gets its
 * status and release from the program's callbacks (abi/greq.c).
 *
 * Completed non-persistent requests are freed and their handles set to
 * MPI_REQUEST_NULL; persistent ones become inactive. Null and inactive handles give the
 * empty status. When every request is a local vendor request and nothing cross-site is
 * pending, Waitall is one vendor call.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"

static void empty_status(MPI_Status *s)
{
    ism_status st = {MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, 0};
    ism_abi_status_err(s, &st);
}

static int inactive(ism_req *r) { return !r || (r->kind == ISM_RQ_PERSIST && !r->inner); }

/* Retire a completed request: free it, or leave a persistent one inactive. */
static void retire(MPI_Request *h)
{
    ism_req *r = ism_abi_req(*h);
    if (r && r->kind != ISM_RQ_PERSIST) {
        ism_req_free(r);
        *h = MPI_REQUEST_NULL;
    }
}

int PMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    ISM_CHECK_INIT("MPI_Wait");
    ism_req *r = ism_abi_req(*request);
    if (inactive(r)) {
        empty_status(status);
        return MPI_SUCCESS;
    }
    ism_status st;
    ism_comm *c = r->comm;
    int rc = ism_req_wait(r, &st);
    if (r->kind == ISM_RQ_GREQ)
        rc = ism_abi_greq_finish(request, &st);
    ism_abi_status(status, &st);
    retire(request);
    return rc ? ism_abi_error(c, rc, "MPI_Wait", "the request completed with an error") : 0;
}
ISM_PMPI(Wait)

int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    ISM_CHECK_INIT("MPI_Test");
    ism_req *r = ism_abi_req(*request);
    if (inactive(r)) {
        *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    ism_status st;
    ism_comm *c = r->comm;
    int rc = ism_req_test(r, flag, &st);
    if (*flag) {
        if (r->kind == ISM_RQ_GREQ)
            rc = ism_abi_greq_finish(request, &st);
        ism_abi_status(status, &st);
        retire(request);
    } else {
        ism_idle(&(unsigned){64});
    }
    return rc ? ism_abi_error(c, rc, "MPI_Test", "the request completed with an error") : 0;
}
ISM_PMPI(Test)

static int all_vendor(int n, MPI_Request *reqs)
{
    if (ism.remote_active || ism_nbc_pending())
        return 0; /* cross-site work needs our progress while we wait */
    for (int i = 0; i < n; i++) {
        ism_req *r = ism_abi_req(reqs[i]);
        if (r && (r->kind != ISM_RQ_VENDOR || r->done))
            return 0;
    }
    return 1;
}

/* One pass over the array: completes what it can. Returns how many are still pending. */
static int sweep(int n, MPI_Request *reqs, MPI_Status *sts, char *done, int *err)
{
    int pending = 0;
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        ism_req *r = ism_abi_req(reqs[i]);
        MPI_Status *s = sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
        if (inactive(r)) {
            empty_status(s);
            done[i] = 1;
            continue;
        }
        int flag = 0;
        ism_status st;
        int rc = ism_req_test(r, &flag, &st);
        if (flag) {
            if (r->kind == ISM_RQ_GREQ)
                rc = ism_abi_greq_finish(&reqs[i], &st);
            if (rc && !st.error)
                st.error = rc;
            if (st.error)
                *err = 1;
            ism_abi_status_err(s, &st);
            retire(&reqs[i]);
            done[i] = 1;
        } else {
            pending++;
        }
    }
    return pending;
}

int PMPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    ISM_CHECK_INIT("MPI_Waitall");
    if (count < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, "MPI_Waitall", "count %d is negative", count);
    if (all_vendor(count, array_of_requests)) {
        ism_vh small[64], *v = count <= 64 ? small : malloc(sizeof(ism_vh) * (size_t)count);
        ism_vstatus vsmall[64], *vs = count <= 64 ? vsmall : malloc(sizeof *vs * (size_t)count);
        int rc = 0;
        for (int i = 0; i < count; i++) {
            ism_req *r = ism_abi_req(array_of_requests[i]);
            v[i] = r ? r->vreq : ism.be->request_null;
        }
        rc = ism.be->waitall(count, v, vs);
        for (int i = 0; i < count; i++) {
            ism_req *r = ism_abi_req(array_of_requests[i]);
            MPI_Status *s =
                array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &array_of_statuses[i];
            if (!r) {
                empty_status(s);
                continue;
            }
            ism_status st;
            ism_status_from_vendor(r->comm, &vs[i], &st);
            if (rc && !st.error)
                st.error = rc == MPI_ERR_IN_STATUS ? 0 : rc;
            if (st.error == MPI_ERR_PENDING) {
                /* not completed (another request failed first): it stays active */
                r->vreq = v[i];
                if (s != MPI_STATUS_IGNORE)
                    s->MPI_ERROR = MPI_ERR_PENDING;
                continue;
            }
            ism_abi_status_err(s, &st);
            retire(&array_of_requests[i]);
        }
        if (v != small)
            free(v);
        if (vs != vsmall)
            free(vs);
        return rc ? ism_abi_error(NULL, MPI_ERR_IN_STATUS, "MPI_Waitall",
                                  "a request completed with an error")
                  : MPI_SUCCESS;
    }
    char *done = calloc((size_t)count + 1, 1);
    int err = 0;
    unsigned spins = 0;
    while (sweep(count, array_of_requests, array_of_statuses, done, &err) > 0)
        if (!ism_progress())
            ism_idle(&spins);
    free(done);
    return err ? ism_abi_error(NULL, MPI_ERR_IN_STATUS, "MPI_Waitall",
                               "a request completed with an error")
               : MPI_SUCCESS;
}
ISM_PMPI(Waitall)

int PMPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                 MPI_Status array_of_statuses[])
{
    ISM_CHECK_INIT("MPI_Testall");
    /* Testall completes all or none: first check, then complete. */
    ism_progress();
    for (int i = 0; i < count; i++) {
        ism_req *r = ism_abi_req(array_of_requests[i]);
        if (inactive(r) || r->done)
            continue;
        if (r->kind == ISM_RQ_PAIR) {
            int f = 0;
            ism_status st;
            ism_req_test(r, &f, &st); /* completion is recorded in r */
            if (f)
                continue;
        }
        if (r->kind == ISM_RQ_VENDOR || r->kind == ISM_RQ_PERSIST) {
            int f = 0;
            ism_status st;
            ism_req *t = r->kind == ISM_RQ_PERSIST ? r->inner : r;
            if (t->kind != ISM_RQ_VENDOR) {
                if (!t->done) {
                    *flag = 0;
                    ism_idle(&(unsigned){64}); /* runs pending collectives, persistent ones too */
                    return MPI_SUCCESS;
                }
                continue;
            }
            ism_req_test(t, &f, &st); /* vendor completion is recorded in t */
            if (f)
                continue;
        }
        *flag = 0;
        ism_idle(&(unsigned){64});
        return MPI_SUCCESS;
    }
    *flag = 1;
    return PMPI_Waitall(count, array_of_requests, array_of_statuses);
}
ISM_PMPI(Testall)

static int any_once(int count, MPI_Request *reqs, int *index, int *flag, MPI_Status *status,
                    int *rc_out)
{
    int active = 0;
    for (int i = 0; i < count; i++) {
        ism_req *r = ism_abi_req(reqs[i]);
        if (inactive(r))
            continue;
        active++;
        int f = 0;
        ism_status st;
        int rc = ism_req_test(r, &f, &st);
        if (f) {
            if (r->kind == ISM_RQ_GREQ)
                rc = ism_abi_greq_finish(&reqs[i], &st);
            ism_abi_status(status, &st);
            retire(&reqs[i]);
            *index = i;
            *flag = 1;
            *rc_out = rc;
            return 1;
        }
    }
    if (!active) {
        *index = MPI_UNDEFINED;
        *flag = 1;
        empty_status(status);
        return 1;
    }
    return 0;
}

int PMPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    ISM_CHECK_INIT("MPI_Waitany");
    int flag = 0, rc = 0;
    unsigned spins = 0;
    while (!any_once(count, array_of_requests, index, &flag, status, &rc))
        if (!ism_progress())
            ism_idle(&spins);
    return rc ? ism_abi_error(NULL, rc, "MPI_Waitany", "the request completed with an error") : 0;
}
ISM_PMPI(Waitany)

int PMPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                 MPI_Status *status)
{
    ISM_CHECK_INIT("MPI_Testany");
    int rc = 0;
    *flag = 0;
    if (!any_once(count, array_of_requests, index, flag, status, &rc)) {
        *index = MPI_UNDEFINED;
        ism_idle(&(unsigned){64});
    }
    return rc ? ism_abi_error(NULL, rc, "MPI_Testany", "the request completed with an error") : 0;
}
ISM_PMPI(Testany)

static int some_once(int count, MPI_Request *reqs, int *outcount, int *indices, MPI_Status *sts,
                     int *err)
{
    int active = 0, n = 0;
    for (int i = 0; i < count; i++) {
        ism_req *r = ism_abi_req(reqs[i]);
        if (inactive(r))
            continue;
        active++;
        int f = 0;
        ism_status st;
        int rc = ism_req_test(r, &f, &st);
        if (f) {
            if (r->kind == ISM_RQ_GREQ)
                rc = ism_abi_greq_finish(&reqs[i], &st);
            if (rc && !st.error)
                st.error = rc;
            if (st.error)
                *err = 1;
            if (sts != MPI_STATUSES_IGNORE)
                ism_abi_status_err(&sts[n], &st);
            indices[n++] = i;
            retire(&reqs[i]);
        }
    }
    *outcount = active ? n : MPI_UNDEFINED;
    return !active || n > 0;
}

int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                  int array_of_indices[], MPI_Status array_of_statuses[])
{
    ISM_CHECK_INIT("MPI_Waitsome");
    int err = 0;
    unsigned spins = 0;
    while (!some_once(incount, array_of_requests, outcount, array_of_indices, array_of_statuses,
                      &err))
        if (!ism_progress())
            ism_idle(&spins);
    return err ? ism_abi_error(NULL, MPI_ERR_IN_STATUS, "MPI_Waitsome",
                               "a request completed with an error")
               : 0;
}
ISM_PMPI(Waitsome)

int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                  int array_of_indices[], MPI_Status array_of_statuses[])
{
    ISM_CHECK_INIT("MPI_Testsome");
    int err = 0;
    if (!some_once(incount, array_of_requests, outcount, array_of_indices, array_of_statuses,
                   &err))
        ism_idle(&(unsigned){64});
    return err ? ism_abi_error(NULL, MPI_ERR_IN_STATUS, "MPI_Testsome",
                               "a request completed with an error")
               : 0;
}
ISM_PMPI(Testsome)

int PMPI_Request_free(MPI_Request *request)
{
    ISM_CHECK_INIT("MPI_Request_free");
    ism_req *r = ism_abi_req(*request);
    if (!r)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Request_free", "null request");
    if (r->kind == ISM_RQ_GREQ) {
        *request = MPI_REQUEST_NULL;
        int rc = ism_abi_greq_free(r);
        return rc ? ism_abi_error(NULL, rc, "MPI_Request_free", "free_fn returned an error")
                  : MPI_SUCCESS;
    } else if (r->kind == ISM_RQ_PERSIST && r->p_op == ISM_ABI_PCOLL) {
        ism_abi_pcoll_free(r); /* also when active, which is erroneous: see there */
    } else if (r->kind == ISM_RQ_PERSIST) {
        if (r->inner)
            ism_req_wait(r->inner, NULL), ism_req_free(r->inner);
        ism_req_free(r);
    } else if (r->kind == ISM_RQ_VENDOR) {
        ism.be->request_free(&r->vreq);
        ism_req_free(r);
    } else if (r->kind == ISM_RQ_PAIR && !r->done) {
        /* finish it here: its parts and copy are owned by the pair */
        ism_req_wait(r, NULL);
        ism_req_free(r);
    } else if (r->done) {
        ism_req_free(r);
    } else {
        /* cross-site and in flight: it completes during later progress and frees itself */
        r->freed = 1;
    }
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Request_free)

int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    ISM_CHECK_INIT("MPI_Request_get_status");
    ism_req *r = ism_abi_req(request);
    if (inactive(r)) {
        *flag = 1;
        empty_status(status);
        return MPI_SUCCESS;
    }
    if (r->kind == ISM_RQ_VENDOR || r->kind == ISM_RQ_PERSIST) {
        /* vendor requests cannot be peeked without completing: report completion only via
         * progress of cross-site work, and local completion via a test that records it */
        ism_req *t = r->kind == ISM_RQ_PERSIST ? r->inner : r;
        if (!t->done) {
            ism_status st;
            int f = 0;
            ism_req_test(t, &f, &st); /* t keeps its final status; the handle stays valid */
        }
        *flag = t->done;
        if (*flag)
            ism_abi_status(status, &t->st);
        return MPI_SUCCESS;
    }
    ism_progress();
    if (r->kind == ISM_RQ_GREQ) {
        /* complete: query_fn gives the status, the request stays active */
        *flag = __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
        ism_status st;
        int rc = *flag ? ism_abi_greq_query(r, &st) : MPI_SUCCESS;
        if (*flag)
            ism_abi_status(status, &st);
        return rc ? ism_abi_error(NULL, rc, "MPI_Request_get_status", "query_fn returned an error")
                  : MPI_SUCCESS;
    }
    if (!r->done) {
        ism_status st;
        int f = 0;
        ism_req_test(r, &f, &st); /* progress (nonblocking collectives too); completion is
                                     recorded in r and the handle stays valid */
    }
    *flag = r->done;
    if (*flag)
        ism_abi_status(status, &r->st);
    return MPI_SUCCESS;
}
ISM_PMPI(Request_get_status)

/* MPI 4.1 §3.7.6: the Request_get_status forms for arrays; like it, they neither free nor
 * deactivate a request, so the program still completes each with a wait or test. */
int PMPI_Request_get_status_all(int count, MPI_Request array_of_requests[], int *flag,
                                MPI_Status *array_of_statuses)
{
    ISM_CHECK_INIT("MPI_Request_get_status_all");
    int all = 1;
    for (int i = 0; i < count; i++) {
        int f = 0, rc = PMPI_Request_get_status(array_of_requests[i], &f, MPI_STATUS_IGNORE);
        if (rc)
            return rc;
        all &= f;
    }
    *flag = all;
    for (int i = 0; all && array_of_statuses != MPI_STATUSES_IGNORE && i < count; i++)
        PMPI_Request_get_status(array_of_requests[i], &all, &array_of_statuses[i]);
    return MPI_SUCCESS;
}
ISM_PMPI(Request_get_status_all)

int PMPI_Request_get_status_any(int count, MPI_Request array_of_requests[], int *indx, int *flag,
                                MPI_Status *status)
{
    ISM_CHECK_INIT("MPI_Request_get_status_any");
    int active = 0;
    *flag = 0;
    *indx = MPI_UNDEFINED;
    for (int i = 0; i < count; i++) {
        if (inactive(ism_abi_req(array_of_requests[i])))
            continue;
        active++;
        int f = 0, rc = PMPI_Request_get_status(array_of_requests[i], &f, status);
        if (rc)
            return rc;
        if (f) {
            *flag = 1;
            *indx = i;
            return MPI_SUCCESS;
        }
    }
    if (!active) {
        *flag = 1;
        empty_status(status);
    }
    return MPI_SUCCESS;
}
ISM_PMPI(Request_get_status_any)

int PMPI_Request_get_status_some(int incount, MPI_Request array_of_requests[], int *outcount,
                                 int array_of_indices[], MPI_Status *array_of_statuses)
{
    ISM_CHECK_INIT("MPI_Request_get_status_some");
    int active = 0, n = 0;
    for (int i = 0; i < incount; i++) {
        if (inactive(ism_abi_req(array_of_requests[i])))
            continue;
        active++;
        int f = 0;
        MPI_Status *st = array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                                                  : &array_of_statuses[n];
        int rc = PMPI_Request_get_status(array_of_requests[i], &f, st);
        if (rc)
            return rc;
        if (f)
            array_of_indices[n++] = i;
    }
    *outcount = active ? n : MPI_UNDEFINED;
    return MPI_SUCCESS;
}
ISM_PMPI(Request_get_status_some)
