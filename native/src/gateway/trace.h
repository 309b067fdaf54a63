/* trace.h: the gateway's part of a trace (isthmus run --trace: ISTHMUS_TRACE_DIR), in
 * trace.c: every frame on every link (sent, sent again, received, duplicate dropped),
 * acknowledgements, link state changes, frames taken from and delivered to local app
 * ranks, and every ISTHMUS_TRACE_SAMPLE_MS each link's queues, bytes, round trip,
 * congestion window, early data outstanding and credits, into DIR/gw-<site>-<g>.ismt
 * (native/src/trace/record.h). The hooks in session.c, links.c and loop.c are one line
 * each, behind gw_tracing. */
#ifndef ISM_GW_TRACE_H
#define ISM_GW_TRACE_H

#include <stdint.h>

#include "gateway.h"

extern int gw_tracing;

void gw_trace_start(void);  /* after the links exist (gw_links_connect) */
void gw_trace_stop(void);   /* at the end, also when aborting: writes what is held */

/* a frame finished on stream s of l: written (b: the buffer), or read (b holds it) */
void gw_trace_sent(const gw_link *l, const gw_stream *s, const gw_buf *b);
void gw_trace_received(const gw_link *l, const gw_stream *s, const gw_buf *b, uint64_t seq);
void gw_trace_duplicate(const gw_link *l, const gw_stream *s, uint64_t seq,
                        const ism_frame_hdr *h);
void gw_trace_acked(const gw_link *l, uint64_t ack);
void gw_trace_link(const gw_link *l, const char *why);
/* a frame from a local app rank going out on l, or from l to a local app rank */
void gw_trace_app(const gw_link *l, const ism_frame_hdr *h, int to_app);
void gw_trace_tick(int64_t now_ms);

#endif
