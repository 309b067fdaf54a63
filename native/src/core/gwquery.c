/* gwquery.c: the app rank asking its gateway (ISM_F_QUERY -> ISM_F_ANSWER) and hearing
 * from it about its links (ISM_F_WATCH, ISM_F_LINKEV), for the MPI_T variables and
 * events of abi/mpit_*.c. The gateway answers in its event loop; the rank waits by
 * making progress, so messages keep moving meanwhile. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../contract/gwquery.h"
#include "../common/le.h"
#include "core.h"

#define QUERY_TIMEOUT_NS (30ll * 1000000000)

unsigned ism_tev_mask;
void (*ism_tev_hook)(const ism_tev *e);

uint64_t ism_tev_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int post(int type, uint64_t a)
{
    ism_frame_hdr h;
    ism_frame_init(&h, type);
    h.src = ism.grank;
    h.dst = -1;
    h.a = a;
    return ism_gw_post(&h, NULL, 0);
}

int ism_gw_query(const uint8_t **words, size_t *nwords)
{
    if (!ism.multisite || !ism.initialized || ism.finalized || ism_progress_depth())
        return ISM_ERR_OTHER;
    uint64_t req = ++ism.gwq_next;
    int rc = post(ISM_F_QUERY, req);
    if (rc)
        return rc;
    uint64_t until = ism_tev_now() + QUERY_TIMEOUT_NS;
    unsigned spins = 0;
    while (ism.gwq_got != req) {
        if (ism_progress())
            spins = 0;
        else
            ism_idle(&spins);
        if (ism_tev_now() > until)
            return ISM_ERR_OTHER;
    }
    if (ism.gwq_len < ISM_GWQ_HEAD * 8 || ism_get_le64(ism.gwq_answer) != ISM_GWQ_VERSION)
        return ISM_ERR_OTHER;
    *words = ism.gwq_answer;
    *nwords = ism.gwq_len / 8;
    return ISM_OK;
}

void ism_gw_answered(const ism_frame_hdr *h, const void *payload)
{
    uint8_t *copy = malloc(h->len ? h->len : 1);
    if (!copy)
        ism_die("site %s rank %d: out of memory for the gateway's answer (%u bytes)",
                ism_site_name(ism.lay.site), ism.grank, h->len);
    memcpy(copy, payload, h->len);
    free(ism.gwq_answer);
    ism.gwq_answer = copy;
    ism.gwq_len = h->len;
    ism.gwq_got = h->a;
}

int ism_gw_watch(int on)
{
    if (!ism.multisite || !ism.rx.slot) /* no gateway, or not connected to it (yet, any more) */
        return ISM_ERR_OTHER;
    return post(ISM_F_WATCH, (uint64_t)(on != 0));
}

void ism_tev_link(const ism_frame_hdr *h, const void *payload)
{
    int kind = h->b == 0 ? ISM_TEV_LINK_DOWN : h->b == 2 ? ISM_TEV_LINK_UP : -1;
    if (kind < 0 || h->len < 16 || !(ism_tev_mask & (1u << kind)) || !ism_tev_hook)
        return;
    const uint8_t *p = payload;
    char why[401];
    size_t n = h->len - 16 < 400 ? h->len - 16 : 400;
    memcpy(why, p + 16, n);
    why[n] = 0;
    ism_tev e = {kind, 1, ism_get_le64(p),
                 {(int32_t)ism_get_le32(p + 8), (int32_t)ism_get_le32(p + 12), (int64_t)h->a,
                  (int64_t)h->b},
                 why};
    ism_tev_hook(&e);
}
