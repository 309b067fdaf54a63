/* main.c: isthmus-gateway's entry point: start-up, the buffer pool, shutdown, statistics.
 *
 * Start-up mirrors the app ranks' MPI_Init (the same vendor collectives in the same
 * order: allgather of roles, split, dup), reads the job layout and the job secret from
 * the environment `isthmus run` prepared, connects to every gateway of the other sites,
 * and then runs the event loop until every site has finished or the job aborts.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../backend/loader.h"
#include "../common/knobs.h"
#include "../contract/handshake.h"
#include "../contract/layout.h"
#include "../wan/aead.h"
#include "../wan/sock.h"
#include "gateway.h"
#include "trace.h"

gw_state gw;

static const char *site_name(int s)
{
    return gw.lay.site_names && s >= 0 && s < gw.lay.nsites ? gw.lay.site_names[s] : "?";
}

void gw_log(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "isthmus: site %s (gateway %d): %s\n", site_name(gw.lay.site), gw.gwidx, msg);
    fflush(stderr);
}

void gw_die(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gw_abort_job(code, msg);
}

/* ---- buffer pool ---- */

gw_buf *gw_buf_get(int pool)
{
    gw_buf **head = pool == GW_POOL_TX ? &gw.pool_tx : &gw.pool_rx;
    gw_buf *b = *head;
    if (!b)
        return NULL;
    *head = b->next;
    if (pool == GW_POOL_TX)
        gw.free_tx--;
    else
        gw.free_rx--;
    b->next = NULL;
    b->len = 0;
    b->seq = 0;
    b->flow = 0;
    return b;
}

gw_buf *gw_buf_small(size_t len)
{
    gw_buf *b = calloc(1, sizeof *b + len);
    if (!b)
        gw_die(1, "out of memory for a %zu-byte control frame", len);
    b->data = (char *)(b + 1);
    b->len = len;
    return b;
}

void gw_buf_put(gw_buf *b)
{
    if (b->pooled == GW_POOL_COPY)
        gw.copies--;
    if (!b->pooled || b->pooled == GW_POOL_COPY) {
        free(b);
        return;
    }
    if (b->pooled == GW_POOL_TX) {
        b->next = gw.pool_tx;
        gw.pool_tx = b;
        gw.free_tx++;
    } else {
        b->next = gw.pool_rx;
        gw.pool_rx = b;
        gw.free_rx++;
    }
}

/* Half the buffers carry frames out (held until the peer acknowledges them), half carry
 * frames in. */
static void pool_init(int n)
{
    gw.pool_total = n;
    for (int i = 0; i < n; i++) {
        gw_buf *b = calloc(1, sizeof *b);
        if (!b || !(b->data = malloc(gw.bufsize)))
            gw_die(1, "cannot allocate %d buffers of %zu bytes (ISTHMUS_GW_BUFFERS)", n,
                   gw.bufsize);
        b->pooled = i < n / 2 ? GW_POOL_TX : GW_POOL_RX;
        gw_buf_put(b);
    }
}

/* ---- environment ---- */

/* A knob of knobs.def, `def` when unset (check_knobs has refused bad values already). */
static double knob(ism_knob_id id, double def)
{
    return ism_knob_or_exit(id, def, 2);
}

/* Every setting the gateway reads, before anything starts: one line for each bad one,
 * the same line libisthmus and `isthmus run` print (knobs.h). */
static void check_knobs(void)
{
    if (ism_knobs_check_env(ISM_KNOB_GW, ism_knob_print_bad, NULL))
        exit(2);
}

static void read_env(void)
{
    const char *names = getenv("ISTHMUS_SITE_NAMES"), *site = getenv("ISTHMUS_SITE");
    const char *addrs = getenv("ISTHMUS_GATEWAY_ADDRS");
    if (!site || !names || !addrs) {
        fprintf(stderr, "isthmus-gateway: not started by `isthmus run` (ISTHMUS_SITE, "
                        "ISTHMUS_SITE_NAMES or ISTHMUS_GATEWAY_ADDRS missing)\n");
        exit(2);
    }
    char lerr[512];
    if (ism_layout_from_env(&gw.lay, lerr, sizeof lerr)) {
        fprintf(stderr, "isthmus-gateway: bad job layout: %s; start jobs with `isthmus run`\n",
                lerr);
        exit(2);
    }
    gw_paths_parse(addrs, getenv("ISTHMUS_SITE_DIALOUT"));
    gw.bufsize = ISM_FRAME_HDR_SIZE + (size_t)knob(ISM_K_CHUNK, 256 << 10);
    gw.dead_ms = (int64_t)knob(ISM_K_LINK_DEAD_MS, 5000);
    gw.outage_ms = (int64_t)(knob(ISM_K_LINK_OUTAGE, 60) * 1000);
    gw.streams = (int)knob(ISM_K_WAN_STREAMS, 0);
    gw.sockbuf = (int)knob(ISM_K_WAN_SOCKBUF, 0);
    gw.crc = (int)knob(ISM_K_WAN_CRC, 0);
    gw.flow_first = (int)knob(ISM_K_GW_FLOW_FIRST, 1);
    gw.mtu = (int)knob(ISM_K_WAN_MTU, 1500);
    const char *xp = getenv("ISTHMUS_TRANSPORT");
    gw.xp = gw_xport_find(xp && *xp ? xp : "tcp");
    if (!gw.xp) {
        fprintf(stderr, "isthmus-gateway: ISTHMUS_TRANSPORT=%s: the transports are tcp and udp\n",
                xp);
        exit(2);
    }
    ism_knob_val v;
    char kerr[512];
    gw.suites = ism_knob_env(ISM_K_WAN_CRYPTO, &v, kerr, sizeof kerr) > 0 &&
                        strcmp(v.str, "none") == 0
                    ? ISM_AUTH_SUITES_NONE
                    : ISM_AUTH_SUITES_AEAD;
    if (ism_knob_env(ISM_K_WAN_CIPHER, &v, kerr, sizeof kerr) > 0 && strcmp(v.str, "auto") != 0) {
        if (gw.suites == ISM_AUTH_SUITES_NONE) {
            fprintf(stderr, "isthmus: ISTHMUS_WAN_CIPHER=%s with ISTHMUS_WAN_CRYPTO=none: a "
                            "cipher needs encryption on\n", v.str);
            exit(2);
        }
        gw.suites = 1u << ism_aead_suite_parse(v.str);
    }
    uint64_t rekey = (uint64_t)knob(ISM_K_WAN_REKEY, 0);
    gw.rekey_log2 = 0; /* 0: the handshake's default */
    if (rekey > 0) {
        gw.rekey_log2 = ISM_AUTH_REKEY_MIN;
        while (gw.rekey_log2 < ISM_AUTH_REKEY_MAX && (2ull << gw.rekey_log2) <= rekey)
            gw.rekey_log2++;
    }
    gw.nsealers = (int)knob(ISM_K_WAN_SEAL_WORKERS, -1);
    if (gw.nsealers < 0)
        gw.nsealers = ism_knob_auto(ISM_K_WAN_SEAL_WORKERS);
    gw.fault_after = (int64_t)knob(ISM_K_GW_FAULT_AFTER, 0);
    gw.hint_rate_bps = knob(ISM_K_WAN_RATE, 0);
    gw.hint_rtt_ms = knob(ISM_K_WAN_RTT_MS, 0);
    gw.hint_loss = knob(ISM_K_WAN_LOSS, 0);
    gw.pace = knob(ISM_K_WAN_PACE, 1.0);
    ism_knob_val cc;
    char err[512];
    if (ism_knob_env(ISM_K_WAN_CC, &cc, err, sizeof err) > 0)
        snprintf(gw.cc, sizeof gw.cc, "%s", cc.str);
    gw.connect_timeout_ms = (int64_t)(knob(ISM_K_CONNECT_TIMEOUT, 60) * 1000);
    gw.idle_max_us = (int)knob(ISM_K_GW_IDLE_US, 200);
    gw.idle_deep_us = (int)knob(ISM_K_GW_IDLE_DEEP_US, 2000);
    if (gw.idle_deep_us < gw.idle_max_us)
        gw.idle_deep_us = gw.idle_max_us;
    gw.stats = knob(ISM_K_STATS, 0) != 0;
    /* frames kept until acknowledged need about a bandwidth-delay product of buffers on
     * top of the 16 posted for the apps; more buffers only when the link is described */
    long bufs = 64;
    if (gw.hint_rate_bps > 0 && gw.hint_rtt_ms > 0) {
        double bdp = gw.hint_rate_bps / 8 * gw.hint_rtt_ms / 1000;
        long need = 32 + 8 * (long)(bdp / (double)gw.bufsize + 1);
        if (need > bufs)
            bufs = need > 1024 ? 1024 : need;
    }
    pool_init((int)knob(ISM_K_GW_BUFFERS, (double)bufs));
}

static void load_secret(void)
{
    char err[512];
    const char *job = getenv("ISTHMUS_JOB"), *path = getenv("ISTHMUS_SECRET_FILE");
    if (!job || !path)
        gw_die(2, "ISTHMUS_JOB or ISTHMUS_SECRET_FILE missing; start jobs with `isthmus run`");
    if (ism_auth_key_load_file(&gw.key, job, path, err, sizeof err))
        gw_die(2, "job secret: %s", err);
}

static const char *exe_backend_dir(char *buf, size_t n)
{
    const char *env = getenv("ISTHMUS_BACKEND_DIR");
    if (env && *env)
        return env;
    ssize_t k = readlink("/proc/self/exe", buf, n - 32);
    if (k <= 0)
        return ".";
    buf[k] = 0;
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = 0;
    slash = strrchr(buf, '/');
    if (slash)
        *slash = 0; /* <prefix>/bin -> <prefix> */
    strcat(buf, "/lib/isthmus");
    return buf;
}

static void vendor_start(int *argc, char ***argv)
{
    char dir[PATH_MAX], err[2048];
    gw.be = ism_backend_load(exe_backend_dir(dir, sizeof dir), ism_backend_vendor(), err,
                             sizeof err);
    if (!gw.be) {
        fprintf(stderr, "isthmus-gateway: %s\n", err);
        exit(2);
    }
    int prov;
    if (gw.be->init_thread(argc, argv, 0, &prov)) {
        fprintf(stderr, "isthmus-gateway: the vendor MPI failed to initialise\n");
        exit(2);
    }
    gw.vworld = gw.be->comm_world;
    /* the same collective sequence as the app ranks' MPI_Init (contract/handshake.h) */
    ism_join j;
    int rc = ism_join_site(gw.be, ISM_ROLE_GATEWAY, &j);
    if (rc) {
        char why[48] = "out of memory";
        if (rc != ISM_JOIN_ENOMEM)
            snprintf(why, sizeof why, "vendor MPI error %d", rc);
        fprintf(stderr, "isthmus-gateway: the start-up handshake with the app ranks failed "
                        "(%s)\n", why);
        exit(2);
    }
    gw.vown = j.own;
    gw.vgw = j.channel;
    gw.app_vrank = calloc((size_t)j.wsize, sizeof(int));
    if (!gw.app_vrank) {
        fprintf(stderr, "isthmus-gateway: out of memory for %d vendor ranks\n", j.wsize);
        exit(2);
    }
    gw.napps = ism_join_ranks(&j, ISM_ROLE_APP, gw.app_vrank);
    gw.ngw_here = ism_join_ranks(&j, ISM_ROLE_GATEWAY, NULL);
    gw.gwidx = ism_join_index(&j);
    ism_join_free(&j);
}

static int64_t start_ms;

static void print_stats(void)
{
    for (int i = 0; i < gw.nlinks; i++) {
        gw_link *l = &gw.links[i];
        char rtt[96] = "heartbeat rtt not measured";
        if (l->srtt_ms > 0)
            snprintf(rtt, sizeof rtt, "heartbeat rtt min %.3f ms smoothed %.3f ms", l->min_rtt_ms,
                     l->srtt_ms);
        fprintf(stderr,
                "isthmus stats: site %s gateway %d -> site %s gateway %d: sent %llu msgs %llu "
                "bytes %llu frames, %llu bytes early, %llu flow-control frames ahead of data; received %llu msgs %llu bytes %llu frames; %d stream%s, "
                "%llu reconnects, %llu frames resent, %llu duplicates dropped, %llu CRC errors; "
                "%s\n",
                site_name(gw.lay.site), gw.gwidx, site_name(l->site), l->gw,
                (unsigned long long)l->tx_msgs, (unsigned long long)l->tx_bytes,
                (unsigned long long)l->tx_frames, (unsigned long long)l->tx_early,
                (unsigned long long)l->flow_passed, (unsigned long long)l->rx_msgs,
                (unsigned long long)l->rx_bytes, (unsigned long long)l->rx_frames, l->nstreams,
                l->nstreams == 1 ? "" : "s", (unsigned long long)l->reconnects,
                (unsigned long long)l->resent_frames, (unsigned long long)l->dup_frames,
                (unsigned long long)l->crc_errors, rtt);
        char paths[600];
        gw_path_report(l, paths, sizeof paths);
        if (paths[0])
            fprintf(stderr, "isthmus stats: site %s gateway %d -> site %s gateway %d: paths: %s\n",
                    site_name(gw.lay.site), gw.gwidx, site_name(l->site), l->gw, paths);
        for (int j = 0; j < l->nstreams; j++) {
            char text[512];
            gw.xp->report(&l->st[j], text, sizeof text);
            if (text[0])
                fprintf(stderr, "isthmus stats: site %s gateway %d -> site %s gateway %d: "
                                "stream %d: %s\n",
                        site_name(gw.lay.site), gw.gwidx, site_name(l->site), l->gw, j, text);
        }
    }
    /* the gateway's own CPU (all its threads, the vendor's included) over its life: what
     * "idle means idle" and the transports' cost per byte are checked against */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    /* this (the event loop's) thread alone: what the crypto workers take off it */
    struct rusage rt;
    getrusage(RUSAGE_THREAD, &rt);
    double loop = (double)(rt.ru_utime.tv_sec + rt.ru_stime.tv_sec) +
                  (double)(rt.ru_utime.tv_usec + rt.ru_stime.tv_usec) / 1e6;
    unsigned long long jobs, on_workers;
    ism_sealpool_counts(gw.sealers, &jobs, &on_workers);
    fprintf(stderr,
            "isthmus stats: site %s gateway %d: peak buffered %zu bytes (pool %d x %zu); cpu "
            "%.3f s (user %.3f s, system %.3f s) in %.3f s; transport %s; crypto workers %d; "
            "event loop thread cpu %.3f s; records in batches %llu, %llu of them by the "
            "workers\n",
            site_name(gw.lay.site), gw.gwidx, gw.peak_bytes, gw.pool_total, gw.bufsize, user + sys,
            user, sys, (double)(ism_now_ms() - start_ms) / 1000.0, gw.xp->name,
            ism_sealpool_workers(gw.sealers), loop, jobs, on_workers);
    char su[200];
    gw_setup_report(su, sizeof su);
    fprintf(stderr, "isthmus stats: site %s gateway %d: listener: %s\n", site_name(gw.lay.site),
            gw.gwidx, su);
    fflush(stderr);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    start_ms = ism_now_ms();
    check_knobs();
    read_env();
    vendor_start(&argc, &argv);
    if (gw.napps != gw.lay.site_ranks[gw.lay.site] || gw.ngw_here != gw.lay.site_gws[gw.lay.site]) {
        gw_die(2, "this site's MPI job has %d app ranks and %d gateways, the job layout says %d "
                  "and %d",
               gw.napps, gw.ngw_here, gw.lay.site_ranks[gw.lay.site], gw.lay.site_gws[gw.lay.site]);
    }
    for (int l = 0; l < gw.napps; l++)
        gw.apps_mine += ism_gw_of_local(l, gw.ngw_here) == gw.gwidx;
    load_secret();
    /* after the vendor's start (which may fork helpers): threads of our own from here on */
    if (gw.suites != ISM_AUTH_SUITES_NONE && gw.nsealers > 0) {
        gw.sealers = ism_sealpool_new(gw.nsealers);
        if (!gw.sealers) /* the loop thread does it all, as with 0 */
            fprintf(stderr, "isthmus-gateway: starting %d crypto workers failed (%s); sealing on "
                            "the event loop\n", gw.nsealers, strerror(errno));
    }
    gw.xp->init();
    gw_links_connect();
    gw_trace_start();
    gw_loop();
    gw_links_finish(ism_now_ms() + GW_SETUP_TIMEOUT_MS);
    gw_trace_stop();
    gw_cancel_receives();
    if (gw.stats)
        print_stats();
    for (int i = 0; i < gw.nlinks; i++)
        for (int j = 0; j < gw.links[i].nstreams; j++)
            gw_stream_close(&gw.links[i].st[j]);
    if (gw.listen_fd >= 0)
        close(gw.listen_fd);
    ism_sealpool_free(gw.sealers); /* after the streams that used it */
    ism_auth_key_clear(&gw.key);
    gw.be->finalize();
    return 0;
}
