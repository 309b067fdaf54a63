/* otf2_rma.h: one-sided calls (the RMA and WIN records of a rank's trace) as OTF2's RMA
 * events and window definitions, for isthmus-trace-otf2 (otf2.c). */
#ifndef ISM_TOOLS_TRACE_OTF2_RMA_H
#define ISM_TOOLS_TRACE_OTF2_RMA_H

#include <otf2/otf2.h>

#include "job.h"

typedef struct {
    uint32_t win;
    int32_t target; /* global rank */
    uint64_t id;    /* matching id */
} tr_rma_op;

/* One rank's one-sided state while its events are written. */
typedef struct {
    umap wins;         /* local window id -> global window + 1 */
    umap per_comm;     /* global communicator -> windows created over it so far */
    umap reqs;         /* request of an R form -> (window << 40) | matching id */
    tr_rma_op *open;   /* operations started and not yet completed */
    size_t nopen, capopen;
    uint64_t next_id;
} tr_rma;

/* A WIN record, at the end of its call; gcomm: the global communicator (or UINT32_MAX). */
void tr_rma_win(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, const ism_tr_win *d, uint32_t gcomm);
/* An RMA record, at its call's entry and at its end. */
void tr_rma_enter(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, const ism_tr_rma *d);
void tr_rma_leave(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, const tr_job *j,
                  const ism_tr_rma *d);
/* A DONE of request req: 1 if it completed an R form (its completion is written). */
int tr_rma_done(tr_rma *s, OTF2_EvtWriter *w, uint64_t t, uint64_t req);
void tr_rma_free(tr_rma *s);

/* The windows' definitions (with g NULL: only their names, as strings). */
void tr_rma_defs(OTF2_GlobalDefWriter *g, uint32_t (*str_id)(const char *));

#endif
