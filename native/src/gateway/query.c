/* query.c: the gateway's answers to its app ranks (see query.h). An answer is built from
 * the same fields `--stats` prints, so an MPI_T performance variable and the statistics
 * line agree. */
#define _GNU_SOURCE
#include "query.h"

#include <linux/tcp.h> /* the kernel's struct tcp_info: glibc's lacks min rtt and pacing */
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../contract/gwquery.h"
#include "../common/le.h"
#include "../wan/udp/udp.h"
#include "trace.h"

#define HAS(len, f) ((len) >= offsetof(struct tcp_info, f) + sizeof(((struct tcp_info *)0)->f))

static unsigned char *watching; /* per app of this site: 1 if it asked for link events */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void gw_stream_view(const gw_stream *s, gw_xp_view *v)
{
    memset(v, 0, sizeof *v);
    if (s->fd < 0)
        return;
    if (gw.xp == &gw_xport_udp && s->conn) {
        ism_udp_stats st;
        ism_udp_get_stats((ism_udp_conn *)s->conn, &st);
        v->srtt_ns = st.srtt_us > 0 ? (uint64_t)st.srtt_us * 1000 : 0;
        v->min_rtt_ns = st.min_rtt_us > 0 ? (uint64_t)st.min_rtt_us * 1000 : 0;
        v->cwnd = st.cwnd;
        v->pacing = st.pacing_rate;
    } else if (gw.xp == &gw_xport_tcp) {
        struct tcp_info ti;
        memset(&ti, 0, sizeof ti);
        socklen_t len = sizeof ti;
        if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
            return;
        v->srtt_ns = (uint64_t)ti.tcpi_rtt * 1000;
        v->cwnd = (uint64_t)ti.tcpi_snd_cwnd * ti.tcpi_snd_mss;
        if (HAS(len, tcpi_min_rtt) && ti.tcpi_min_rtt != ~0u)
            v->min_rtt_ns = (uint64_t)ti.tcpi_min_rtt * 1000;
        if (HAS(len, tcpi_pacing_rate) && ti.tcpi_pacing_rate != ~0ull)
            v->pacing = ti.tcpi_pacing_rate;
    }
}

/* the app rank whose global rank is g, if this gateway serves it; else -1 */
static int my_app(int g)
{
    int lo = gw.lay.site_off[gw.lay.site], hi = gw.lay.site_off[gw.lay.site + 1];
    if (g < lo || g >= hi || ism_gw_of_local(g - lo, gw.ngw_here) != gw.gwidx)
        return -1;
    return g - lo;
}

static void to_app(int g, int type, uint64_t a, uint64_t b, const void *payload, size_t len)
{
    gw_buf *f = gw_buf_small(ISM_FRAME_HDR_SIZE + len);
    ism_frame_hdr h;
    ism_frame_init(&h, type);
    h.src = -1;
    h.dst = g;
    h.a = a;
    h.b = b;
    h.len = (uint32_t)len;
    ism_frame_encode(&h, (uint8_t *)f->data);
    if (len)
        memcpy(f->data + ISM_FRAME_HDR_SIZE, payload, len);
    gw_deliver_local(f, &h);
}

static void answer(int g, uint64_t req)
{
    int nstreams = 0;
    for (int i = 0; i < gw.nlinks; i++)
        nstreams += gw.links[i].nstreams;
    size_t words = ISM_GWQ_HEAD + (size_t)gw.nlinks * ISM_GWQ_LINK +
                   (size_t)nstreams * ISM_GWQ_STREAM;
    uint8_t *p = calloc(words, 8);
    if (!p)
        gw_die(1, "out of memory answering rank %d", g);
    uint64_t head[ISM_GWQ_HEAD] = {ISM_GWQ_VERSION, now_ns(), (uint64_t)gw.nlinks,
                                   (uint64_t)nstreams, gw.held_bytes, gw.peak_bytes,
                                   (uint64_t)gw.pool_total, gw.bufsize};
    size_t w = 0;
    for (int k = 0; k < ISM_GWQ_HEAD; k++)
        ism_put_le64(p + 8 * w++, head[k]);
    for (int i = 0; i < gw.nlinks; i++) {
        const gw_link *l = &gw.links[i];
        uint64_t v[ISM_GWQ_LINK] = {
            (uint64_t)l->site, (uint64_t)l->gw, (uint64_t)l->state, (uint64_t)l->nstreams,
            l->tx_msgs, l->tx_bytes, l->tx_frames, l->tx_early, l->flow_passed, l->rx_msgs,
            l->rx_bytes, l->rx_frames, l->reconnects, l->resent_frames, l->dup_frames,
            l->crc_errors, (uint64_t)(l->srtt_ms * 1e6), (uint64_t)(l->min_rtt_ms * 1e6)};
        for (int k = 0; k < ISM_GWQ_LINK; k++)
            ism_put_le64(p + 8 * w++, v[k]);
    }
    for (int i = 0; i < gw.nlinks; i++)
        for (int j = 0; j < gw.links[i].nstreams; j++) {
            gw_xp_view x;
            gw_stream_view(&gw.links[i].st[j], &x);
            uint64_t v[ISM_GWQ_STREAM] = {x.srtt_ns, x.min_rtt_ns, x.cwnd, x.pacing};
            for (int k = 0; k < ISM_GWQ_STREAM; k++)
                ism_put_le64(p + 8 * w++, v[k]);
        }
    to_app(g, ISM_F_ANSWER, req, 0, p, words * 8);
    free(p);
}

void gw_query_frame(const ism_frame_hdr *h, int app_vrank)
{
    int app = my_app(h->src);
    if (app < 0)
        gw_die(1, "vendor rank %d sent a %s frame as rank %d, which this gateway does not serve",
               app_vrank, ism_frame_type_name(h->type), h->src);
    if (h->type == ISM_F_QUERY) {
        answer(h->src, h->a);
        return;
    }
    if (!watching && !(watching = calloc((size_t)gw.napps + 1, 1)))
        gw_die(1, "out of memory for link watchers");
    watching[app] = h->a != 0;
}

void gw_link_changed(const gw_link *l, const char *why)
{
    if (gw_tracing)
        gw_trace_link(l, why);
    if (!watching)
        return;
    size_t wl = why ? strlen(why) : 0;
    if (wl > 400)
        wl = 400;
    uint8_t pay[8 + 8 + 400];
    ism_put_le64(pay, now_ns());
    ism_put_le32(pay + 8, (uint32_t)l->site);
    ism_put_le32(pay + 12, (uint32_t)l->gw);
    if (wl)
        memcpy(pay + 16, why, wl);
    int lo = gw.lay.site_off[gw.lay.site];
    for (int a = 0; a < gw.napps; a++)
        if (watching[a])
            to_app(lo + a, ISM_F_LINKEV, (uint64_t)(l - gw.links), (uint64_t)l->state, pay,
                   16 + wl);
}
