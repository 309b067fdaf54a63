/* query.h: what a gateway tells its app ranks on request (query.c): its counters and
 * clock (ISM_F_QUERY -> ISM_F_ANSWER, contract/gwquery.h) and its links going down and up
 * (ISM_F_WATCH, then ISM_F_LINKEV), for libisthmus's MPI_T variables and events; and the
 * transport's view of one stream, shared with the trace (trace.c). */
#ifndef ISM_GW_QUERY_H
#define ISM_GW_QUERY_H

#include <stdint.h>

#include "gateway.h"

/* A QUERY or WATCH frame from the app rank at vendor rank app_vrank. */
void gw_query_frame(const ism_frame_hdr *h, int app_vrank);

/* l changed state (gateway.h: down, resuming, up): traced, and said to the watchers. */
void gw_link_changed(const gw_link *l, const char *why);

typedef struct {
    uint64_t srtt_ns, min_rtt_ns, cwnd, pacing; /* 0 where the transport does not say */
} gw_xp_view;

/* TCP_INFO of a TCP stream, or the reliable-UDP connection's own counters. */
void gw_stream_view(const gw_stream *s, gw_xp_view *v);

#endif
