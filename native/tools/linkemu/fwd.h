/* fwd.h: the forwarder: one thread, one epoll loop moving IPv4 packets between the sites'
 * TUN devices through the per-direction link models.
 *
 * A packet read from site i's device is routed by its IPv4 destination (subnet.j+1 is
 * site j), run through link (i -> j), and parked in the packet store until its release
 * time, when it is written to site j's device. The loop sleeps in epoll_wait; a timerfd
 * armed `lead` before the earliest release (absolute CLOCK_MONOTONIC, 1 ns timer slack)
 * wakes it, and from there it polls epoll without sleeping until the release, because a
 * timer wakeup on a VM comes late (lead.h: the lead follows that lateness). An idle
 * emulator sleeps. SIGINT and
 * SIGTERM end the loop; SIGUSR1 prints the statistics.
 *
 * Commands on the control descriptor (the emulator's standard input), one per line,
 * change the links while they run; each gets one reply line on standard output:
 *   link I:J:SPEC   new settings for direction I -> J (SPEC as on the command line;
 *                   settings it does not name take their defaults): "ok link I:J", or
 *                   "error link: <why>" */
#ifndef ISM_LE_FWD_H
#define ISM_LE_FWD_H

#include <stdint.h>
#include <stdio.h>

#include "lead.h"
#include "link.h"
#include "pktq.h"

#define ISM_LE_MAX_SITES 64

typedef struct {
    int nsites;
    int tun_fd[ISM_LE_MAX_SITES];
    uint32_t subnet;          /* a.b.c.0, host byte order: site i is a.b.c.(i+1) */
    ism_le_link *links;       /* nsites * nsites, [i * nsites + j] is i -> j */
    ism_le_pktq q;
    ism_le_lead lead;         /* how long before a release the loop polls (lead.h) */
    uint64_t unroutable;      /* non-IPv4, or to an address that is no site */
    uint64_t write_errors;
    uint64_t late_sum_ns, late_max_ns, late_n;  /* write time minus release time */
    uint64_t spun_ns;         /* time spent polling without sleeping */
    int ctl_fd;               /* commands (-1: none) */
    char ctl_buf[2048];
    size_t ctl_len;
} ism_le_fwd;

/* Run until SIGINT or SIGTERM (blocked by the caller and passed as a signalfd-able set).
 * Returns 0 on a signal, -1 on an I/O error (message on stderr). */
int ism_le_fwd_run(ism_le_fwd *f);

/* One JSON line of per-link counters. */
void ism_le_fwd_print_stats(const ism_le_fwd *f, FILE *out);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ism_le_now_ns(void);

#endif
