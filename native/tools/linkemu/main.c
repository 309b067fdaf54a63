/* main.c: isthmus-linkemu, the user-space WAN link emulator: command line, device setup
 * (tun.c), link models (link.c) and the forwarding loop (fwd.c).
 *
 *   isthmus-linkemu --ns NS0 --ns NS1 [...] [--all SPEC] [--link I:J:SPEC ...]
 *                   [--seed N] [--pool-mb N] [--subnet A.B.C] [--ifname NAME] [--spin-us N]
 *                   [--spin-mode adaptive|fixed] [--rt-prio N]
 *
 * The namespaces must exist (`ip netns add`; `isthmus link emulate` does all of this).
 * Site i gets device NAME in namespace NSi with address A.B.C.(i+1)/24. SPEC is the
 * numeric form of conf.h; --all applies to every direction, then --link I:J overrides one
 * direction. A site's device MTU is the smallest MTU of its outgoing links. Prints
 * "ready" on stdout once every device is up, per-link statistics as one JSON line on
 * SIGUSR1 and at exit, and exits 0 on SIGINT/SIGTERM, 2 on bad arguments, 1 on failures.
 * Lines "link I:J:SPEC" on stdin change a direction while it runs (fwd.h).
 * --rt-prio N (1-99) runs the forwarder under SCHED_FIFO: on a machine whose cores are
 * busy, a normal-priority emulator waits for the CPU and releases packets late by up to
 * milliseconds. The kernel's RT throttling still leaves other tasks their share.
 * --spin-us (default 50) is the most the loop polls without sleeping before a release:
 * measured here under a 100 Mbit/s TCP flow, 0 us left releases 36-56 us late on average,
 * 50 us left 4 us at ~50% of a core, and 200 us kept the core so busy that RT throttling
 * stalled the emulator for up to 33 ms. --spin-mode adaptive (the default) polls only as
 * long as the timer wakeups have been late (their mean plus twice their deviation, at most
 * --spin-us); fixed always polls --spin-us. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "conf.h"
#include "fwd.h"
#include "tun.h"

#define MAX_LINK_ARGS 4096

static void usage(void)
{
    fprintf(stderr,
            "usage: isthmus-linkemu --ns NS0 --ns NS1 [...] [--all SPEC] [--link I:J:SPEC ...]\n"
            "                       [--seed N] [--pool-mb N] [--subnet A.B.C] [--ifname NAME]\n"
            "                       [--spin-us N] [--spin-mode adaptive|fixed] [--rt-prio N]\n"
            "SPEC: delay=NS,jitter=NS,reorder=0|1,reorderp=P,rate=BYTES/S,queue=BYTES,burst=BYTES,\n"
            "      loss=P,ge=P/R/LOSS_BAD/LOSS_GOOD,dup=P,corrupt=P,mtu=BYTES (plain numbers)\n"
            "stdin: 'link I:J:SPEC' lines change a direction while it runs\n"
            "Normally started by `isthmus link emulate`, which sets up the namespaces.\n");
}

static int bad(const char *msg, const char *arg)
{
    fprintf(stderr, "isthmus-linkemu: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    usage();
    return 2;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_subnet(const char *s, uint32_t *out)
{
    unsigned a, b, c;
    char extra;
    if (sscanf(s, "%u.%u.%u%c", &a, &b, &c, &extra) != 3 || a > 255 || b > 255 || c > 255)
        return -1;
    *out = a << 24 | b << 16 | c << 8;
    return 0;
}

int main(int argc, char **argv)
{
    const char *ns[ISM_LE_MAX_SITES];
    const char *links[MAX_LINK_ARGS];
    int nsites = 0, nlinks = 0;
    const char *all = NULL, *ifname = "ism0";
    uint64_t seed = 1, pool_mb = 64, spin_us = 50, rt_prio = 0;
    int adaptive = 1;
    uint32_t subnet = 10u << 24 | 77u << 16;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        }
        if (i + 1 >= argc)
            return bad("missing value after", a);
        const char *v = argv[++i];
        if (strcmp(a, "--ns") == 0) {
            if (nsites == ISM_LE_MAX_SITES)
                return bad("too many sites (at most 64)", NULL);
            ns[nsites++] = v;
        } else if (strcmp(a, "--link") == 0) {
            if (nlinks == MAX_LINK_ARGS)
                return bad("too many --link options", NULL);
            links[nlinks++] = v;
        } else if (strcmp(a, "--all") == 0) {
            all = v;
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_u64(v, 0, UINT64_MAX, &seed) < 0)
                return bad("--seed needs a non-negative integer", v);
        } else if (strcmp(a, "--pool-mb") == 0) {
            if (parse_u64(v, 1, 65536, &pool_mb) < 0)
                return bad("--pool-mb needs an integer in [1, 65536]", v);
        } else if (strcmp(a, "--spin-us") == 0) {
            if (parse_u64(v, 0, 100000, &spin_us) < 0)
                return bad("--spin-us needs an integer in [0, 100000]", v);
        } else if (strcmp(a, "--spin-mode") == 0) {
            if (strcmp(v, "adaptive") && strcmp(v, "fixed"))
                return bad("--spin-mode needs adaptive or fixed", v);
            adaptive = strcmp(v, "adaptive") == 0;
        } else if (strcmp(a, "--rt-prio") == 0) {
            if (parse_u64(v, 0, 99, &rt_prio) < 0)
                return bad("--rt-prio needs an integer in [0, 99] (0: normal scheduling)", v);
        } else if (strcmp(a, "--subnet") == 0) {
            if (parse_subnet(v, &subnet) < 0)
                return bad("--subnet needs the first three octets, like 10.77.0", v);
        } else if (strcmp(a, "--ifname") == 0) {
            if (strlen(v) == 0 || strlen(v) >= 16)
                return bad("--ifname needs 1 to 15 characters", v);
            ifname = v;
        } else {
            return bad("unknown option", a);
        }
    }
    if (nsites < 2)
        return bad("give at least two sites with --ns", NULL);

    char err[512];
    ism_le_link_conf base;
    ism_le_link_conf_default(&base);
    if (all && ism_le_conf_parse(all, &base, err, sizeof err) < 0)
        return bad(err, NULL);
    /* Per-direction settings and state live in static tables (64 x 64 at most), so the
     * early exits below have nothing to free. */
    static ism_le_link_conf confs[ISM_LE_MAX_SITES * ISM_LE_MAX_SITES];
    static ism_le_link links_state[ISM_LE_MAX_SITES * ISM_LE_MAX_SITES];
    ism_le_fwd f = {.nsites = nsites, .subnet = subnet, .links = links_state, .ctl_fd = 0};
    ism_le_lead_init(&f.lead, spin_us * 1000, adaptive);
    for (int i = 0; i < nsites * nsites; i++)
        confs[i] = base;
    for (int k = 0; k < nlinks; k++) {
        unsigned si, sj;
        int off = 0;
        if (sscanf(links[k], "%u:%u:%n", &si, &sj, &off) != 2 || off == 0)
            return bad("--link needs I:J:SPEC", links[k]);
        if (si >= (unsigned)nsites || sj >= (unsigned)nsites)
            return bad("--link names a site that does not exist (sites count from 0)", links[k]);
        if (si == sj)
            return bad("--link joins a site to itself", links[k]);
        if (ism_le_conf_parse(links[k] + off, &confs[si * nsites + sj], err, sizeof err) < 0)
            return bad(err, NULL);
    }

    uint32_t bufsize = 0;
    for (int i = 0; i < nsites * nsites; i++)
        if (confs[i].mtu > bufsize)
            bufsize = confs[i].mtu;
    uint64_t nslots = pool_mb * 1048576u / bufsize;
    if (nslots < 64)
        nslots = 64;
    if (nslots > (1u << 22))
        nslots = 1u << 22;
    if (ism_le_pktq_init(&f.q, (uint32_t)nslots, bufsize) < 0) {
        fprintf(stderr, "isthmus-linkemu: cannot allocate the packet pool (%llu x %u bytes); "
                "lower --pool-mb\n", (unsigned long long)nslots, bufsize);
        return 1;
    }

    /* The emulator must not outlive the CLI that started it, nor sleep with timer slack. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_TIMERSLACK, 1UL);
    if (rt_prio > 0) {
        struct sched_param sp = {.sched_priority = (int)rt_prio};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
            fprintf(stderr, "isthmus-linkemu: warning: SCHED_FIFO priority %llu refused (%s); "
                    "delays may be late on a busy machine\n", (unsigned long long)rt_prio,
                    strerror(errno));
    }
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGUSR1);
    sigprocmask(SIG_BLOCK, &sigs, NULL);

    uint64_t now = ism_le_now_ns();
    int rc = 0;
    for (int i = 0; i < nsites && rc == 0; i++) {
        uint32_t mtu = 65535;
        for (int j = 0; j < nsites; j++)
            if (j != i && confs[i * nsites + j].mtu < mtu)
                mtu = confs[i * nsites + j].mtu;
        f.tun_fd[i] = ism_le_tun_open(ns[i], ifname, subnet | (uint32_t)(i + 1), mtu, err, sizeof err);
        if (f.tun_fd[i] < 0) {
            fprintf(stderr, "isthmus-linkemu: site %d (namespace %s): %s\n", i, ns[i], err);
            rc = 1;
            nsites = i;
        }
    }
    if (rc == 0) {
        for (int i = 0; i < f.nsites; i++)
            for (int j = 0; j < f.nsites; j++)
                ism_le_link_init(&f.links[i * f.nsites + j], &confs[i * f.nsites + j],
                                 seed * 1000003u + (uint64_t)(i * f.nsites + j), now);
        printf("ready\n");
        fflush(stdout);
        rc = ism_le_fwd_run(&f) == 0 ? 0 : 1;
        ism_le_fwd_print_stats(&f, stdout);
    }
    for (int i = 0; i < nsites; i++)
        close(f.tun_fd[i]);
    ism_le_pktq_free(&f.q);
    return rc;
}
