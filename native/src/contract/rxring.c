/* rxring.c: the ordered ring of pre-posted receives on the app–gateway channel (rxring.h). */
#include "rxring.h"

#include <stdlib.h>

int ism_rxring_init(ism_rxring *r, const ism_backend *be, ism_vh comm, int tag, int cap)
{
    *r = (ism_rxring){.be = be, .comm = comm, .tag = tag, .cap = cap};
    r->slot = calloc((size_t)cap, sizeof *r->slot);
    return r->slot ? 0 : -1;
}

int ism_rxring_post(ism_rxring *r, void *token, void *mem, size_t len)
{
    ism_rxring_slot *s = &r->slot[(r->head + r->count) % r->cap];
    int rc = r->be->irecv(mem, (int)len, r->be->dt[ISM_KIND_BYTE], ISM_VSRC_ANY, r->tag, r->comm,
                          &s->vreq);
    if (rc)
        return rc;
    s->token = token;
    r->count++;
    return 0;
}

void *ism_rxring_take(ism_rxring *r, ism_vstatus *st)
{
    if (r->count == 0)
        return NULL;
    ism_rxring_slot *s = &r->slot[r->head];
    int flag = 0;
    r->be->test(&s->vreq, &flag, st);
    if (!flag)
        return NULL;
    void *token = s->token;
    s->token = NULL;
    r->head = (r->head + 1) % r->cap;
    r->count--;
    return token;
}

void ism_rxring_cancel_all(ism_rxring *r, void (*release)(void *token))
{
    while (r->count > 0) {
        ism_rxring_slot *s = &r->slot[r->head];
        ism_vstatus st;
        r->be->cancel(&s->vreq);
        r->be->wait(&s->vreq, &st);
        if (release)
            release(s->token);
        r->head = (r->head + 1) % r->cap;
        r->count--;
    }
    free(r->slot);
    r->slot = NULL;
}
