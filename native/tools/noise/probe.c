/* probe.c: allocation of per-core probe results and the probes' names. */
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ism_probe_result_init(ism_probe_result *r, const ism_probe_params *p, int cpu)
{
    memset(r, 0, sizeof *r);
    r->cpu = cpu;
    r->value_min = UINT64_MAX;
    r->calib_buf = calloc(ISM_TIMER_PAIRS, sizeof *r->calib_buf);
    if (!r->calib_buf)
        return -1;
    if (p->max_events) {
        r->events = calloc(p->max_events, sizeof *r->events);
        if (!r->events) {
            ism_probe_result_free(r);
            errno = ENOMEM;
            return -1;
        }
    }
    if (p->raw && p->max_raw) {
        r->raw = calloc(p->max_raw, sizeof *r->raw);
        if (!r->raw) {
            ism_probe_result_free(r);
            errno = ENOMEM;
            return -1;
        }
    }
    if (p->kind == ISM_PROBE_FTQ) {
        r->slot_cap = (size_t)(p->duration_s * p->hz / (double)(1ull << p->ftq_log2)) + 4;
        r->slot_count = calloc(r->slot_cap, sizeof *r->slot_count);
        r->slot_ovh = calloc(r->slot_cap, sizeof *r->slot_ovh);
        if (!r->slot_count || !r->slot_ovh) {
            ism_probe_result_free(r);
            errno = ENOMEM;
            return -1;
        }
        memset(r->slot_count, 0, r->slot_cap * sizeof *r->slot_count);
        memset(r->slot_ovh, 0, r->slot_cap * sizeof *r->slot_ovh);
    }
    /* touch every page now: a first-touch page fault inside a probe would be a detour of
     * the probe's own making */
    memset(r->calib_buf, 0, ISM_TIMER_PAIRS * sizeof *r->calib_buf);
    if (r->events)
        memset(r->events, 0, p->max_events * sizeof *r->events);
    if (r->raw)
        memset(r->raw, 0, p->max_raw * sizeof *r->raw);
    return 0;
}

void ism_probe_result_free(ism_probe_result *r)
{
    free(r->calib_buf);
    free(r->events);
    free(r->raw);
    free(r->slot_count);
    free(r->slot_ovh);
    r->calib_buf = NULL;
    r->events = NULL;
    r->raw = NULL;
    r->slot_count = NULL;
    r->slot_ovh = NULL;
}

size_t ism_probe_ftq_bytes(const ism_probe_params *p)
{
    double slots = p->duration_s * p->hz / (double)(1ull << p->ftq_log2) + 4;
    return (size_t)(slots * (sizeof(uint32_t) + sizeof(uint16_t)));
}

const char *ism_probe_name(ism_probe_kind k)
{
    switch (k) {
    case ISM_PROBE_FTQ: return "ftq";
    case ISM_PROBE_FWQ: return "fwq";
    case ISM_PROBE_SELFISH: return "selfish";
    }
    return "?";
}
