/* trace.c: the gateway's trace records (see trace.h). */
#define _GNU_SOURCE
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/knobs.h"
#include "../trace/buffer.h"
#include "query.h"

int gw_tracing;

static ism_tr_buf buf;
static int64_t sample_ms, next_sample_ms;
/* per link: early-data bytes sent and not yet given back; CREDIT chunks received since
 * the last sample (what let this site's senders go on) */
static int64_t *early_out;
static uint64_t *credits;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint16_t link_index(const gw_link *l)
{
    return (uint16_t)(l - gw.links);
}

static void write_info(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (char *p = host; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 32)
            *p = '?';
    size_t cap = 1024 + (size_t)gw.nlinks * 48 + (size_t)gw.lay.nsites * 40, n = 0;
    char *info = malloc(cap);
    if (!info)
        return;
    n += (size_t)snprintf(info + n, cap - n,
                          "{\"kind\":\"gateway\",\"site\":%d,\"gateway\":%d,\"sites\":[", gw.lay.site,
                          gw.gwidx);
    for (int s = 0; s < gw.lay.nsites; s++)
        n += (size_t)snprintf(info + n, cap - n, "%s\"%s\"", s ? "," : "", gw.lay.site_names[s]);
    n += (size_t)snprintf(info + n, cap - n,
                          "],\"host\":\"%s\",\"pid\":%d,\"transport\":\"%s\",\"clock\":"
                          "\"CLOCK_MONOTONIC\",\"sample_ms\":%lld,\"chunk_bytes\":%zu,\"links\":[",
                          host, (int)getpid(), gw.xp->name, (long long)sample_ms, gw.bufsize);
    for (int i = 0; i < gw.nlinks; i++)
        n += (size_t)snprintf(info + n, cap - n, "%s{\"link\":%d,\"site\":%d,\"gateway\":%d}",
                              i ? "," : "", i, gw.links[i].site, gw.links[i].gw);
    n += (size_t)snprintf(info + n, cap - n, "]}");
    ism_tr_put(&buf, ISM_TR_INFO, 0, 0, (ism_tr_hdr[1]){{0, 0, 0, 0}}, sizeof(ism_tr_hdr), info,
               n + 1);
    free(info);
}

void gw_trace_start(void)
{
    const char *dir = getenv("ISTHMUS_TRACE_DIR");
    if (!dir || !*dir)
        return;
    double total = ism_knob_or_exit(ISM_K_TRACE_BUFFER, 8 << 20, 2);
    double chunk = ism_knob_or_exit(ISM_K_TRACE_CHUNK, 1 << 20, 2);
    sample_ms = (int64_t)ism_knob_or_exit(ISM_K_TRACE_SAMPLE_MS, 10, 2);
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/gw-%s-%d.ismt", dir, gw.lay.site_names[gw.lay.site], gw.gwidx);
    if (ism_tr_buf_open(&buf, path, ISM_TR_PROC_GATEWAY, gw.lay.site * 65536 + gw.gwidx,
                        (size_t)total, (size_t)chunk, now_ns, err, sizeof err)) {
        gw_log("%s; this gateway is not traced", err);
        return;
    }
    early_out = calloc((size_t)gw.nlinks + 1, sizeof *early_out);
    credits = calloc((size_t)gw.nlinks + 1, sizeof *credits);
    write_info();
    gw_tracing = 1;
}

void gw_trace_stop(void)
{
    if (!gw_tracing)
        return;
    /* a last sample, whenever the previous one was: the totals a summary reports are the
     * link's final counts, not those of up to sample_ms (or a starved loop's longer) before */
    next_sample_ms = 0;
    gw_trace_tick(0);
    gw_tracing = 0;
    int e = ism_tr_buf_close(&buf);
    if (e)
        gw_log("writing the trace failed: %s; this gateway's trace is incomplete", strerror(e));
    if (buf.lost_records)
        gw_log("%llu trace records (%llu bytes) were dropped because the trace buffer was "
               "full (LOSS records say where); raise ISTHMUS_TRACE_BUFFER",
               (unsigned long long)buf.lost_records, (unsigned long long)buf.lost_bytes);
    free(early_out);
    free(credits);
    early_out = NULL;
    credits = NULL;
}

static void frame_record(const gw_link *l, const gw_stream *s, uint8_t event, uint64_t seq,
                         const ism_frame_hdr *h)
{
    ism_tr_gw_frame *r = ism_tr_reserve(&buf, sizeof *r);
    if (!r)
        return;
    ism_tr_hdr_set(r, sizeof *r, ISM_TR_GW_FRAME, event, h->type);
    r->t = now_ns();
    r->seq = seq;
    r->link = link_index(l);
    r->stream = (uint16_t)(s - l->st);
    r->len = h->len;
    r->src = h->src;
    r->dst = h->dst;
    r->tag = h->tag;
    r->fflags = h->flags;
    r->pad = 0;
    r->a = h->a;
    r->b = h->b;
}

void gw_trace_sent(const gw_link *l, const gw_stream *s, const gw_buf *b)
{
    ism_frame_hdr h;
    if (ism_frame_decode((const uint8_t *)b->data, b->len, &h))
        return;
    int again = b->seq && b->seq <= l->resend_upto;
    if (!again && h.type == ISM_F_DATA && (h.flags & ISM_FRAME_FLAG_EARLY))
        early_out[link_index(l)] += h.len;
    frame_record(l, s, again ? ISM_TR_GW_RESENT : ISM_TR_GW_SENT, b->seq, &h);
}

void gw_trace_received(const gw_link *l, const gw_stream *s, const gw_buf *b, uint64_t seq)
{
    ism_frame_hdr h;
    if (ism_frame_decode((const uint8_t *)b->data, b->len, &h))
        return;
    if (h.type == ISM_F_CREDIT) {
        if (h.flags & ISM_FRAME_FLAG_EARLY)
            early_out[link_index(l)] -= (int64_t)h.b;
        else
            credits[link_index(l)] += h.b;
    }
    frame_record(l, s, ISM_TR_GW_RECEIVED, seq, &h);
}

void gw_trace_duplicate(const gw_link *l, const gw_stream *s, uint64_t seq,
                        const ism_frame_hdr *h)
{
    frame_record(l, s, ISM_TR_GW_DUPLICATE, seq, h);
}

void gw_trace_acked(const gw_link *l, uint64_t ack)
{
    ism_tr_gw_ack *r = ism_tr_reserve(&buf, sizeof *r);
    if (!r)
        return;
    ism_tr_hdr_set(r, sizeof *r, ISM_TR_GW_ACK, 0, 0);
    r->t = now_ns();
    r->ack = ack;
    r->link = link_index(l);
    r->pad16 = 0;
    r->pad = 0;
}

void gw_trace_link(const gw_link *l, const char *why)
{
    ism_tr_gw_link r = {{0, 0, 0, 0}, now_ns(), link_index(l), 0, l->site, l->gw, 0};
    ism_tr_put(&buf, ISM_TR_GW_LINK, (uint8_t)l->state, 0, &r, sizeof r, why,
               why ? strlen(why) + 1 : 0);
}

void gw_trace_app(const gw_link *l, const ism_frame_hdr *h, int to_app)
{
    ism_tr_gw_app *r = ism_tr_reserve(&buf, sizeof *r);
    if (!r)
        return;
    ism_tr_hdr_set(r, sizeof *r, ISM_TR_GW_APP, to_app ? ISM_TR_GW_TO_APP : ISM_TR_GW_FROM_APP,
                   h->type);
    r->t = now_ns();
    r->src = h->src;
    r->dst = h->dst;
    r->tag = h->tag;
    r->len = h->len;
    r->a = h->a;
    r->link = l ? link_index(l) : UINT16_MAX;
    r->pad16 = 0;
    r->pad = 0;
}

/* The transport's view of a link: round trip, window and pacing over its streams. */
static void transport_view(const gw_link *l, uint64_t *srtt_us, uint64_t *cwnd, uint64_t *pacing)
{
    *srtt_us = l->srtt_ms > 0 ? (uint64_t)(l->srtt_ms * 1000) : 0;
    *cwnd = *pacing = 0;
    for (int i = 0; i < l->nstreams; i++) {
        gw_xp_view v;
        gw_stream_view(&l->st[i], &v);
        *cwnd += v.cwnd;
        *pacing += v.pacing;
        if (v.srtt_ns && gw.xp == &gw_xport_udp)
            *srtt_us = v.srtt_ns / 1000;
    }
}

void gw_trace_tick(int64_t now)
{
    if (now < next_sample_ms)
        return;
    next_sample_ms = now + sample_ms;
    for (int i = 0; i < gw.nlinks; i++) {
        const gw_link *l = &gw.links[i];
        ism_tr_gw_sample *r = ism_tr_reserve(&buf, sizeof *r);
        if (!r)
            return;
        uint32_t q = 0, u = 0;
        for (const gw_buf *b = l->sendq; b; b = b->next)
            q++;
        for (const gw_buf *b = l->unacked; b; b = b->next)
            u++;
        ism_tr_hdr_set(r, sizeof *r, ISM_TR_GW_SAMPLE, (uint8_t)l->state, 0);
        r->t = now_ns();
        r->link = (uint16_t)i;
        r->nstreams = (uint16_t)l->nstreams;
        r->sendq = q;
        r->unacked = u;
        r->ooo = (uint32_t)l->nooo;
        r->tx_bytes = l->tx_bytes;
        r->rx_bytes = l->rx_bytes;
        r->held_bytes = gw.held_bytes;
        r->early_out = early_out[i];
        transport_view(l, &r->srtt_us, &r->cwnd, &r->pacing_Bps);
        r->credits_granted = (uint32_t)credits[i];
        r->pad = 0;
        credits[i] = 0;
    }
}
