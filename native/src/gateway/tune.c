/* tune.c: how the gateway's TCP streams are set up for long fat pipes (xport_tcp.c).
 *
 * Owns the choice of the number of streams per link and of the socket buffer sizes, from
 * the link as the user described it (ISTHMUS_WAN_RATE, ISTHMUS_WAN_RTT_MS,
 * ISTHMUS_WAN_LOSS; `isthmus run --wan` fills them in from the emulated link), the
 * congestion control (ISTHMUS_WAN_CC), and the report of system limits that stop the
 * buffers from covering the bandwidth-delay product (BDP), with the sysctl that lifts them.
 *
 * Buffers: a stream needs a window of its share of the BDP, and Linux lets half of a
 * socket buffer hold data, so the target is 2 x BDP / streams. Kernel autotuning grows
 * buffers up to net.ipv4.tcp_rmem/tcp_wmem[2] and is left alone when that is enough;
 * otherwise the buffers are set explicitly, which net.core.rmem_max/wmem_max cap. If even
 * that is too small and the number of streams is automatic, more streams make up for it.
 * Streams: one, unless the link is lossy and the congestion control is loss-based: then as
 * many as the Mathis et al. estimate (rate of one Reno-like stream = 1.22 MSS / (RTT
 * sqrt(p))) says are needed to fill the link, at most 8.
 *
 * Pacing: with a described rate each stream's sending is capped at its share of it
 * (SO_MAX_PACING_RATE, times ISTHMUS_WAN_PACE). A stream then never sends faster than the
 * bottleneck drains, so it does not overflow the bottleneck's queue: BBR v1 probing at
 * 1.25x, or two directions' bursts, otherwise lost 3-5 % of the bytes on a queue of one
 * bandwidth-delay product, and each loss holds up everything behind it for a round trip.
 * The congestion control still runs below the cap, for a link shared with others.
 *
 * Congestion control: the user's (ISTHMUS_WAN_CC), else cubic for a loss-free described
 * link that is paced (default_cc), else the system's default.
 *
 * Backlog: TCP_NOTSENT_LOWAT keeps at most a few milliseconds of the link's bytes written
 * but not yet sent in a socket, so that the gateway, not the kernel, holds the queue, and a
 * receiver's credit can pass the data queued ahead of it (session.c, gw_link_send).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway.h"

#define GW_MAX_STREAMS 16
#define GW_MSS 1448.0

static long autotune_cap;   /* min(tcp_rmem[2], tcp_wmem[2]) */
static long explicit_cap;   /* min(rmem_max, wmem_max): what SO_RCVBUF/SO_SNDBUF may ask */
static char limit_note[512]; /* why the buffers cannot cover the BDP, if they cannot */

static long read_last_long(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1, x;
    while (fscanf(f, "%ld", &x) == 1)
        v = x;
    fclose(f);
    return v;
}

static void read_line(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(buf, (int)n, f))
        buf[strcspn(buf, "\n")] = 0;
    fclose(f);
}

static long min_pos(long a, long b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

/* 0 if a TCP socket of ours may use congestion control `name`, else the errno why not. */
static int cc_refused(const char *name)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        gw_die(2, "cannot create a socket: %s", strerror(errno));
    int e = setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name)) ? errno
                                                                                         : 0;
    close(fd);
    return e;
}

static void check_cc(void)
{
    if (!gw.cc[0])
        return;
    int e = cc_refused(gw.cc);
    if (e) {
        char avail[256], allowed[256];
        read_line("/proc/sys/net/ipv4/tcp_available_congestion_control", avail, sizeof avail);
        read_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control", allowed, sizeof allowed);
        gw_die(2, "ISTHMUS_WAN_CC=%s: %s (this kernel has: %s; unprivileged users may choose: "
                  "%s)",
               gw.cc,
               e == ENOENT ? "no such congestion control (try: modprobe tcp_<name>)"
               : e == EPERM ? "not allowed for this user (net.ipv4.tcp_allowed_congestion_control)"
                            : strerror(e),
               avail[0] ? avail : "?", allowed[0] ? allowed : "?");
    }
}

/* The pacing cap per stream and the unsent backlog a socket may hold (see the top), both
 * only for a described link (ISTHMUS_WAN_RATE). The backlog is 4 ms of the described rate,
 * at least 128 KiB (at 100 Mbit/s, 10 ms of it: 64 KiB measured as well, 256 KiB let
 * credits wait again, BENCHMARKS.md). An undescribed link keeps the kernel's backlog: over
 * loopback a 256 KiB limit cost 7 % of the two-way rate in more wake-ups, and with no rate
 * there is no time to size it by. ISTHMUS_GW_FLOW_FIRST=0 sets no limit either (the gateway
 * as it was, for comparisons). */
static void pacing_and_backlog(void)
{
    gw.pace_Bps = 0;
    gw.notsent = 0;
    if (gw.hint_rate_bps <= 0)
        return;
    if (gw.pace > 0)
        gw.pace_Bps = (unsigned long long)(gw.hint_rate_bps / 8.0 * gw.pace / gw.streams);
    if (gw.flow_first) {
        double b = gw.hint_rate_bps / 8.0 * 0.004;
        gw.notsent = b < (128 << 10) ? 128 << 10 : b > (64 << 20) ? 64 << 20 : (int)b;
    }
}

static void streams_and_buffers(void)
{
    autotune_cap = min_pos(read_last_long("/proc/sys/net/ipv4/tcp_rmem"),
                           read_last_long("/proc/sys/net/ipv4/tcp_wmem"));
    explicit_cap = min_pos(read_last_long("/proc/sys/net/core/rmem_max"),
                           read_last_long("/proc/sys/net/core/wmem_max"));
    check_cc();
    int auto_streams = gw.streams == 0;
    if (auto_streams) {
        gw.streams = 1;
        char eff[32];
        if (gw.cc[0])
            snprintf(eff, sizeof eff, "%s", gw.cc);
        else /* the system default applies */
            read_line("/proc/sys/net/ipv4/tcp_congestion_control", eff, sizeof eff);
        int lossbased = strncmp(eff, "bbr", 3) != 0;
        if (lossbased && gw.hint_loss > 0 && gw.hint_rate_bps > 0 && gw.hint_rtt_ms > 0) {
            double one = 1.22 * GW_MSS * 8.0 / (gw.hint_rtt_ms / 1000.0 * sqrt(gw.hint_loss));
            int n = (int)ceil(gw.hint_rate_bps / one);
            gw.streams = n < 1 ? 1 : n > 8 ? 8 : n;
        }
    }
    double bdp = gw.hint_rate_bps / 8.0 * gw.hint_rtt_ms / 1000.0;
    if (gw.sockbuf > 0 || bdp <= 0)
        return; /* as given, or kernel autotuning for a link we know nothing about */
    double need = 2.0 * bdp / gw.streams;
    if (autotune_cap > 0 && need <= (double)autotune_cap)
        return; /* autotuning reaches it */
    long cap = explicit_cap > autotune_cap ? explicit_cap : autotune_cap;
    if (cap > 0 && need > (double)cap) {
        if (auto_streams) {
            int n = (int)ceil(2.0 * bdp / (double)cap);
            gw.streams = n > GW_MAX_STREAMS ? GW_MAX_STREAMS : n;
            need = 2.0 * bdp / gw.streams;
        }
        if (need > (double)cap)
            snprintf(limit_note, sizeof limit_note,
                     "socket buffers are capped at %ld bytes per stream by "
                     "net.core.rmem_max/wmem_max (explicit) and net.ipv4.tcp_rmem/tcp_wmem "
                     "(autotuning), but %d stream%s need %.0f bytes each for a BDP of %.0f "
                     "bytes; raise them with: sysctl -w net.core.rmem_max=%.0f "
                     "net.core.wmem_max=%.0f, or use more streams (ISTHMUS_WAN_STREAMS)",
                     cap, gw.streams, gw.streams == 1 ? "" : "s", need, bdp, need, need);
    }
    if (explicit_cap > autotune_cap && autotune_cap > 0 && need > (double)autotune_cap)
        gw.sockbuf = (int)(need < (double)explicit_cap ? need : (double)explicit_cap);
    if (limit_note[0])
        gw_log("%s", limit_note);
}

/* The congestion control when nobody chose one (ISTHMUS_WAN_CC) and the link is described
 * as loss-free and paced at its rate: cubic, if the kernel lets us. Why: paced at the
 * link's rate a stream does not overflow the bottleneck, so a loss-based control sees no
 * losses of its own making, and BBR v1 sends a burst after an idle spell at about half the
 * rate: raw TCP through the emulator, 10 ms and 100 Mbit/s, a 64 KiB message took 20.2 ms
 * one way with bbr and 15.4 with cubic (the link's bound is 15.2), and 64 KiB collectives
 * across 2 sites 30.6 against 26.5 ms (bench/notebook/collectives.md, issue 8 stop 22). A lossy link
 * (ISTHMUS_WAN_LOSS) keeps the system's default, which BBR copes with far better. */
static void default_cc(void)
{
    if (gw.cc[0] || gw.pace <= 0 || gw.hint_rate_bps <= 0 || gw.hint_loss > 0)
        return;
    if (!cc_refused("cubic"))
        strcpy(gw.cc, "cubic");
}

void gw_tune_init(void)
{
    default_cc();
    streams_and_buffers();
    pacing_and_backlog(); /* per stream: after the number of streams is known */
}

static int apply(int fd)
{
    if (gw.sockbuf > 0) {
        int v = gw.sockbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v))
            return -1;
    }
    if (gw.pace_Bps && setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &gw.pace_Bps,
                                  sizeof gw.pace_Bps))
        return -1;
    if (gw.notsent &&
        setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &gw.notsent, sizeof gw.notsent))
        return -1;
    if (gw.cc[0] &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, gw.cc, (socklen_t)strlen(gw.cc)) != 0)
        return -1;
    return 0;
}

int gw_tune_socket_prep(int fd, void *arg)
{
    (void)arg;
    return apply(fd);
}

int gw_tune_socket(int fd, int listening, char *err, size_t errlen)
{
    if (apply(fd) != 0) {
        snprintf(err, errlen, "cannot set the %s socket's options (buffers %d, pacing %llu "
                              "bytes/s, unsent at most %d bytes, congestion control '%s'): %s",
                 listening ? "listening" : "WAN", gw.sockbuf, gw.pace_Bps, gw.notsent, gw.cc,
                 strerror(errno));
        return -1;
    }
    return 0;
}

void gw_tune_describe(const gw_link *l, char *buf, size_t n)
{
    int snd = 0, rcv = 0;
    socklen_t sl = sizeof snd;
    getsockopt(l->st[0].fd, SOL_SOCKET, SO_SNDBUF, &snd, &sl);
    sl = sizeof rcv;
    getsockopt(l->st[0].fd, SOL_SOCKET, SO_RCVBUF, &rcv, &sl);
    char cc[32] = "";
    sl = sizeof cc - 1;
    getsockopt(l->st[0].fd, IPPROTO_TCP, TCP_CONGESTION, cc, &sl);
    unsigned long long pace = 0;
    sl = sizeof pace;
    getsockopt(l->st[0].fd, SOL_SOCKET, SO_MAX_PACING_RATE, &pace, &sl);
    int notsent = 0;
    sl = sizeof notsent;
    getsockopt(l->st[0].fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &notsent, &sl);
    char paced[64] = "not paced", backlog[64] = "unsent not limited";
    if (gw.pace_Bps && pace != ~0ULL && pace != 0xffffffffULL)
        snprintf(paced, sizeof paced, "paced at %.2f MB/s", (double)pace / 1e6);
    if (notsent > 0)
        snprintf(backlog, sizeof backlog, "unsent at most %d bytes", notsent);
    snprintf(buf, n,
             "%d stream%s, congestion control %s, socket buffers %s (now snd %d rcv %d bytes), "
             "%s, %s, crc %s",
             l->nstreams, l->nstreams == 1 ? "" : "s", cc[0] ? cc : "?",
             gw.sockbuf > 0 ? "set explicitly" : "autotuned", snd, rcv, paced, backlog,
             gw.crc ? "on" : "off");
}
