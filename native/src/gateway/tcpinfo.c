/* tcpinfo.c: reads TCP_INFO for the gateway's stream report (tcpinfo.h). It includes the
 * kernel's <linux/tcp.h>, whose struct tcp_info has the fields glibc's lacks, and checks
 * the length the kernel filled in, so an older kernel gives fewer fields, not garbage. */
#define _GNU_SOURCE
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "tcpinfo.h"

#define HAS(len, field) ((len) >= offsetof(struct tcp_info, field) + sizeof(((struct tcp_info *)0)->field))

int gw_tcpinfo_read(int fd, gw_tcpinfo *out)
{
    struct tcp_info ti;
    memset(&ti, 0, sizeof ti);
    memset(out, 0, sizeof *out);
    socklen_t len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return -1;
    out->total_retrans = ti.tcpi_total_retrans;
    if (HAS(len, tcpi_min_rtt))
        out->min_rtt_us = ti.tcpi_min_rtt == ~0u ? 0 : ti.tcpi_min_rtt;
    if (HAS(len, tcpi_sndbuf_limited)) {
        out->has_chrono = 1;
        out->busy_us = ti.tcpi_busy_time;
        out->rwnd_limited_us = ti.tcpi_rwnd_limited;
        out->sndbuf_limited_us = ti.tcpi_sndbuf_limited;
    }
    if (HAS(len, tcpi_bytes_retrans)) {
        out->has_bytes = 1;
        out->bytes_sent = ti.tcpi_bytes_sent;
        out->bytes_retrans = ti.tcpi_bytes_retrans;
    }
    return 0;
}

void gw_tcpinfo_add(gw_tcpinfo *sum, int *nsum, const gw_tcpinfo *x)
{
    if (*nsum == 0) {
        *sum = *x;
        *nsum = 1;
        return;
    }
    sum->has_chrono &= x->has_chrono;
    sum->has_bytes &= x->has_bytes;
    sum->busy_us += x->busy_us;
    sum->rwnd_limited_us += x->rwnd_limited_us;
    sum->sndbuf_limited_us += x->sndbuf_limited_us;
    sum->bytes_sent += x->bytes_sent;
    sum->bytes_retrans += x->bytes_retrans;
    sum->total_retrans += x->total_retrans;
    if (x->min_rtt_us && (!sum->min_rtt_us || x->min_rtt_us < sum->min_rtt_us))
        sum->min_rtt_us = x->min_rtt_us;
    (*nsum)++;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void gw_tcpinfo_format(const gw_tcpinfo *t, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
#define PUT(...)                                                                           \
    do {                                                                                   \
        if (k < n) {                                                                       \
            int w = snprintf(buf + k, n - k, __VA_ARGS__);                                 \
            k += w > 0 ? (size_t)w : 0;                                                    \
        }                                                                                  \
    } while (0)
    if (t->has_chrono)
        PUT("busy %.0f ms (limited by the receive window %.1f %%, by the send buffer %.1f %%), ",
            (double)t->busy_us / 1e3, pct(t->rwnd_limited_us, t->busy_us),
            pct(t->sndbuf_limited_us, t->busy_us));
    if (t->has_bytes)
        PUT("transmitted %.1f MB, retransmitted %.2f %% of bytes, ", (double)t->bytes_sent / 1e6,
            pct(t->bytes_retrans, t->bytes_sent));
    else
        PUT("%u segments retransmitted, ", t->total_retrans);
    if (t->min_rtt_us)
        PUT("min rtt %.3f ms", (double)t->min_rtt_us / 1e3);
    else
        PUT("min rtt not measured");
#undef PUT
}
