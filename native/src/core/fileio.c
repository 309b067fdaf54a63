/* fileio.c: a rank's requests to the file agent at another site (MPI-IO; contract/fileio.h,
 * gateway/fileagent.c). A request is one ISM_F_IO frame; its answer comes back through
 * the gateways as ISM_F_IOREP and is matched here by request id. A rank keeps at most
 * ISM_FIO_SLOTS requests outstanding (the callers keep to ism.window of them), so what
 * the agent's site holds for it is bounded. Waiting makes progress, so messages keep
 * moving, and ends after ISTHMUS_IO_TIMEOUT with an error that names the site. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../contract/fileio.h"
#include "core.h"

typedef struct fio_slot {
    uint64_t id;      /* 0: free */
    int done, op, site;
    int64_t result;
    void *rbuf;
    size_t rcap, got;
} fio_slot;

static fio_slot slots[ISM_FIO_SLOTS];
static uint64_t next_id;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

size_t ism_fio_max_payload(void) { return ism.chunk; }

typedef struct {
    const void *p1, *p2;
    size_t l1, l2;
} two_parts;

static void fill_two(void *dst, size_t len, void *arg)
{
    const two_parts *t = arg;
    (void)len;
    if (t->l1)
        memcpy(dst, t->p1, t->l1);
    if (t->l2)
        memcpy((char *)dst + t->l1, t->p2, t->l2);
}

int ism_fio_post(int site, uint32_t handle, int op, uint64_t b, const void *p1, size_t l1,
                 const void *p2, size_t l2, void *rbuf, size_t rcap, int *slot)
{
    int i = 0;
    while (i < ISM_FIO_SLOTS && slots[i].id)
        i++;
    if (i == ISM_FIO_SLOTS || l1 + l2 > ism.chunk || rcap > ism.chunk)
        return ISM_ERR_OTHER; /* the callers keep below both: a bug if reached */
    fio_slot *s = &slots[i];
    memset(s, 0, sizeof *s);
    s->id = ++next_id;
    s->op = op;
    s->site = site;
    s->rbuf = rbuf;
    s->rcap = rcap;
    ism_frame_hdr h;
    ism_frame_init(&h, ISM_F_IO);
    h.src = ism.grank;
    h.dst = ism.lay.site_off[site];
    h.tag = op;
    h.ctx = handle;
    h.a = s->id;
    h.b = b;
    two_parts t = {p1, p2, l1, l2};
    int rc = ism_gw_post_with(&h, l1 + l2, fill_two, &t);
    if (rc) {
        s->id = 0;
        return rc;
    }
    *slot = i;
    return ISM_OK;
}

void ism_fio_reply(const ism_frame_hdr *h, const void *payload)
{
    for (int i = 0; i < ISM_FIO_SLOTS; i++) {
        fio_slot *s = &slots[i];
        if (s->id != h->a || s->done)
            continue;
        size_t n = h->len < s->rcap ? h->len : s->rcap;
        if (n)
            memcpy(s->rbuf, payload, n);
        s->got = n;
        s->result = (int64_t)h->b;
        s->done = 1;
        return;
    }
    /* an answer after its request timed out: nobody waits for it any more */
}

int ism_fio_wait(int slot, int64_t *result, size_t *got)
{
    fio_slot *s = &slots[slot];
    double limit_s = ism_core_knob(ISM_K_IO_TIMEOUT, 120);
    int64_t until = mono_ns() + (int64_t)(limit_s * 1e9);
    unsigned spins = 0;
    while (!s->done) {
        if (ism_progress())
            spins = 0;
        else
            ism_idle(&spins);
        if (!s->done && mono_ns() > until) {
            fprintf(stderr,
                    "isthmus: site %s rank %d: the file agent at site %s did not answer request "
                    "%d within %.0f s (ISTHMUS_IO_TIMEOUT); the MPI-IO call fails\n",
                    ism_site_name(ism.lay.site), ism.grank, ism_site_name(s->site), s->op, limit_s);
            s->id = 0;
            return ISM_ERR_OTHER;
        }
    }
    *result = s->result;
    if (got)
        *got = s->got;
    s->id = 0;
    return ISM_OK;
}

int ism_fio_call(int site, uint32_t handle, int op, uint64_t b, const void *p1, size_t l1,
                 const void *p2, size_t l2, void *rbuf, size_t rcap, int64_t *result)
{
    int slot;
    int rc = ism_fio_post(site, handle, op, b, p1, l1, p2, l2, rbuf, rcap, &slot);
    return rc ? rc : ism_fio_wait(slot, result, NULL);
}
