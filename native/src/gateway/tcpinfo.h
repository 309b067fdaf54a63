/* tcpinfo.h: what the kernel measured on one WAN stream (TCP_INFO), for the gateway's
 * ISTHMUS_STATS report: how long the stream had data to send, and how much of that time
 * the receiver's window or our own send buffer held it back, the bytes it sent and sent
 * again, and its smallest round trip. */
#ifndef ISM_GW_TCPINFO_H
#define ISM_GW_TCPINFO_H

#include <stddef.h>
#include <stdint.h>

typedef struct gw_tcpinfo {
    int has_chrono;       /* busy/rwnd/sndbuf times are known (Linux >= 4.10) */
    int has_bytes;        /* bytes_sent/bytes_retrans are known (Linux >= 4.19) */
    uint64_t busy_us, rwnd_limited_us, sndbuf_limited_us;
    uint64_t bytes_sent, bytes_retrans;
    uint32_t min_rtt_us;  /* 0: not measured */
    uint32_t total_retrans; /* segments */
} gw_tcpinfo;

/* 0 on success, -1 with errno if TCP_INFO cannot be read. */
int gw_tcpinfo_read(int fd, gw_tcpinfo *out);

/* Adds a connection that ended to a stream's totals: times and bytes add up, the smaller
 * min rtt wins, and a field counts as known only if every part knew it. */
void gw_tcpinfo_add(gw_tcpinfo *sum, int *nsum, const gw_tcpinfo *x);

/* One line of text: "busy 4908 ms (receive window 1.0 %, send buffer 11.8 %), transmitted
 * 415.6 MB, retransmitted 0.16 %, min rtt 20.0 ms"; fields the kernel lacks are left out.
 * Never the word "sent": the link's counter line is the one that says it. */
void gw_tcpinfo_format(const gw_tcpinfo *t, char *buf, size_t n);

#endif
