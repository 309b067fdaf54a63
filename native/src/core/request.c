/* request.c: request objects, their lists, and completion.
 *
 * Requests come from a free list (no malloc on the fast path once warm). A request that
 * is purely local is a vendor request and is waited on at the vendor, in one blocking
 * call when nothing cross-site needs our progress meanwhile; any other request is
 * completed by turning ism_progress() until it is done.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

static ism_req *free_list;
static long live; /* requests allocated and not yet freed */

long ism_req_live(void) { return live; }

ism_req *ism_req_alloc(int kind)
{
    ism_req *r = free_list;
    if (r)
        free_list = r->next;
    else if (!(r = malloc(sizeof *r)))
        return NULL;
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)kind;
    live++;
    return r;
}

void ism_req_free(ism_req *r)
{
    if (!r)
        return;
    if (r->kind == ISM_RQ_PERSIST && r->p_dt) {
        ism_dt_release(r->p_dt); /* the template's reference (abi/p2p.c persist()) */
        r->p_dt = NULL;
    }
    r->next = free_list;
    free_list = r;
    live--;
}

void ism_list_push(ism_reqlist *l, ism_req *r)
{
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
}

void ism_list_remove(ism_reqlist *l, ism_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else if (l->head == r)
        l->head = r->next;
    else
        return; /* not on this list */
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->next = r->prev = NULL;
}

void ism_req_complete(ism_req *r, int error)
{
    if (r->done)
        return;
    r->done = 1;
    r->error = error;
    if (r->pdt) {
        ism_dt_release(r->pdt);
        r->pdt = NULL;
    }
    if (r->kind == ISM_RQ_RSEND || r->kind == ISM_RQ_RRECV)
        ism_remote_add(-1);
    if (r->freed) /* MPI_Request_free'd while in flight: nobody will wait for it */
        ism_req_free(r);
}

int ism_req_test(ism_req *r, int *flag, ism_status *st)
{
    int rc = 0;
    if (r->done && r->kind != ISM_RQ_PERSIST) {
        *flag = 1;
        if (st)
            *st = r->st;
        return r->error;
    }
    switch (r->kind) {
    case ISM_RQ_VENDOR: {
        ism_vstatus vst;
        ism_progress();
        rc = ism.be->test(&r->vreq, flag, &vst);
        if (*flag) {
            ism_status_from_vendor(r->comm, &vst, &r->st);
            r->done = 1;
            r->error = vst.error;
        }
        break;
    }
    case ISM_RQ_PERSIST:
        if (!r->inner) {
            *flag = 1; /* inactive persistent request: empty status */
            memset(&r->st, 0, sizeof r->st);
            r->st.source = ISM_ANY_SOURCE;
            r->st.tag = ISM_ANY_TAG;
            break;
        }
        rc = ism_req_test(r->inner, flag, &r->st);
        if (*flag) {
            r->error = r->inner->error;
            ism_req_free(r->inner);
            r->inner = NULL;
        }
        break;
    case ISM_RQ_PAIR: {
        int fs = 1, fr = 1;
        ism_status ss;
        if (r->inner && !r->inner->done)
            ism_req_test(r->inner, &fs, &ss);
        else if (r->inner && r->inner->kind == ISM_RQ_VENDOR && !r->inner->done)
            fs = 0;
        if (r->inner2 && !r->inner2->done)
            ism_req_test(r->inner2, &fr, &r->st);
        *flag = (!r->inner || r->inner->done) && (!r->inner2 || r->inner2->done);
        if (*flag) {
            r->st = r->inner2 ? r->inner2->st : r->st;
            r->error = r->inner2 && r->inner2->error ? r->inner2->error
                                                      : r->inner ? r->inner->error : 0;
            r->st.error = r->error;
            ism_req_free(r->inner);
            ism_req_free(r->inner2);
            free(r->tmp);
            r->inner = r->inner2 = NULL;
            r->tmp = NULL;
            r->done = 1;
        }
        (void)fs;
        (void)fr;
        break;
    }
    default:
        if (!r->done)
            ism_progress();
        if (!r->done && r->kind == ISM_RQ_NBC)
            ism_nbc_poll();
        *flag = r->done;
        break;
    }
    if (*flag) {
        if (st)
            *st = r->st;
        if (!rc)
            rc = r->error;
    }
    return rc;
}

int ism_req_wait(ism_req *r, ism_status *st)
{
    unsigned spins = 0;
    if (r->kind == ISM_RQ_VENDOR && !r->done && !ism.remote_active && !ism_nbc_cur &&
        !ism_nbc_pending()) {
        ism_vstatus vst;
        int rc = ism.be->wait(&r->vreq, &vst);
        ism_status_from_vendor(r->comm, &vst, &r->st);
        r->done = 1;
        r->error = rc ? rc : vst.error;
        if (st)
            *st = r->st;
        return r->error;
    }
    for (;;) {
        int flag = 0, rc = ism_req_test(r, &flag, st);
        if (flag || (rc && r->kind == ISM_RQ_VENDOR))
            return rc;
        if (!ism_progress())
            ism_idle(&spins);
    }
}
