/* gw_trace_off.c: the gateway's trace hooks (gateway/trace.h) and link-change hook
 * (gateway/query.h) for the tests and fuzz targets that link session.c with a fake
 * transport: nothing is traced or watched there, so they do nothing. */
#include "../src/gateway/query.h"
#include "../src/gateway/trace.h"

int gw_tracing;

void gw_trace_sent(const gw_link *l, const gw_stream *s, const gw_buf *b)
{
    (void)l, (void)s, (void)b;
}

void gw_trace_received(const gw_link *l, const gw_stream *s, const gw_buf *b, uint64_t seq)
{
    (void)l, (void)s, (void)b, (void)seq;
}

void gw_trace_duplicate(const gw_link *l, const gw_stream *s, uint64_t seq,
                        const ism_frame_hdr *h)
{
    (void)l, (void)s, (void)seq, (void)h;
}

void gw_trace_acked(const gw_link *l, uint64_t ack)
{
    (void)l, (void)ack;
}

void gw_link_changed(const gw_link *l, const char *why)
{
    (void)l, (void)why;
}
