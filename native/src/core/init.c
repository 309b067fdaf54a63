/* init.c: bringing an app rank into (and out of) an isthmus job.
 *
 * Loads the vendor backend plugin, starts the vendor MPI, reads the job layout that
 * `isthmus run` put into the environment (ISTHMUS_SITE, ISTHMUS_SITE_RANKS, ...), works
 * out which vendor ranks are this site's gateways, and builds MPI_COMM_WORLD with global
 * ranks ordered by site, then by local rank. Without ISTHMUS_SITE the program runs as a
 * single site under plain mpirun (or as a singleton). Also owns abort and fatal errors.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../backend/loader.h"
#include "core.h"
#include "win.h"
#include "../coll/coll.h"
#include "../contract/handshake.h"
#include "../contract/layout.h"

ism_global ism;

void ism_die(const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "isthmus: %s\n", msg);
    fflush(stderr);
    _exit(1);
}

const char *ism_site_name(int site)
{
    if (ism.lay.site_names && site >= 0 && site < ism.lay.nsites && ism.lay.site_names[site])
        return ism.lay.site_names[site];
    return "?";
}

static const char *backend_dir(char *buf, size_t n)
{
    const char *env = getenv("ISTHMUS_BACKEND_DIR");
    Dl_info info;
    if (env && *env)
        return env;
    if (dladdr((void *)&backend_dir, &info) && info.dli_fname) {
        snprintf(buf, n, "%s", info.dli_fname);
        char *slash = strrchr(buf, '/');
        if (slash) {
            *slash = 0;
            size_t used = strlen(buf);
            snprintf(buf + used, n - used, "/isthmus");
            return buf;
        }
    }
    return ".";
}

static const ism_backend *load_backend(void)
{
    char dirbuf[4096], err[2048];
    const ism_backend *be =
        ism_backend_load(backend_dir(dirbuf, sizeof dirbuf), ism_backend_vendor(), err, sizeof err);
    if (!be)
        ism_die("%s", err);
    return be;
}

/* The job layout `isthmus run` wrote (contract/layout.h); a bad one stops the rank with
 * the parser's line. */
static void read_layout(void)
{
    char err[512];
    if (ism_layout_from_env(&ism.lay, err, sizeof err))
        ism_die("bad job layout: %s; start the program with `isthmus run`", err);
}

/* A knob's value (knobs.def), or `def` when it is unset. Every knob the library reads was
 * checked at MPI_Init (check_knobs); one a program changes afterwards with setenv is
 * checked again here, and a bad one stops the job the same way. */
double ism_core_knob(ism_knob_id id, double def)
{
    ism_knob_val v;
    char err[512];
    int rc = ism_knob_env(id, &v, err, sizeof err);
    if (rc < 0)
        ism_die("%s", err);
    return rc ? v.num : def;
}

/* Every ISTHMUS_* setting of the library, before the vendor MPI starts: a value that is
 * not allowed stops the process with one line naming it, instead of running with a
 * policy nobody chose (ISTHMUS_EAGER=abc used to mean 0: no eager sends). */
static void check_knobs(void)
{
    if (ism_knobs_check_env(ISM_KNOB_LIB, ism_knob_print_bad, NULL)) {
        fflush(stderr);
        _exit(1);
    }
}

/* How long an idle wait yields the core before it naps (ISTHMUS_IDLE_YIELD_US, in
 * microseconds; gwlink.c, ism_idle). 1 ms by default: a wait that has found nothing for
 * that long is not waiting for shared memory, and a 50 us nap is then at most a tenth of
 * what it already waited. `isthmus run` sets 50 when the job has more processes than the
 * machine has cores: ranks that yield for milliseconds there take the CPU from the
 * processes they wait for (the gateways, the link emulator, the rank that has the data),
 * which cost 2 emulated sites of 4 ranks 15-30 % at 1 MiB, and stalls of 100-500 ms in
 * single calls (bench/notebook/collectives.md, issue 8 stop 22). */
static int64_t idle_yield_us(void)
{
    return (int64_t)ism_core_knob(ISM_K_IDLE_YIELD_US, 1000);
}

/* Chunks a large message may have in flight before the receiver's credits: 8, or enough
 * to keep a described WAN link (ISTHMUS_WAN_RATE bits/s, ISTHMUS_WAN_RTT_MS) busy. Credits
 * come back a round trip after the data left, in batches of half a window, and wait in
 * the gateways' queues behind data; measured on a 1 Gbit/s, 20 ms link (bench/wan_stream.c,
 * 64 MiB messages) the rate grows up to about 4 bandwidth-delay products of window and is
 * flat beyond (2 BDP: 74 MB/s; 4.6 BDP: 101-107 MB/s; 9 BDP: 101 MB/s). */
static size_t default_window(size_t chunk)
{
    double rate = ism_core_knob(ISM_K_WAN_RATE, 0), rtt = ism_core_knob(ISM_K_WAN_RTT_MS, 0);
    if (!(rate > 0 && rtt > 0))
        return 8;
    double bdp = rate / 8 * rtt / 1000;
    double w = 4 * bdp / (double)chunk + 8;
    return w < 8 ? 8 : w > 128 ? 128 : (size_t)w;
}

/* Vendor settings isthmus depends on, each unless the user set it. Open MPI 4.1's
 * MPI_Ireduce takes a segmented chain for 2 to 4 processes and messages of 64 KiB or more
 * (its binomial tree above 4), 3x slower than its blocking MPI_Reduce at 1 MiB on 2 ranks
 * (600 vs 200 us); every site-local phase of a reduction uses MPI_Ireduce (core/coll.c),
 * so the binomial tree is chosen for every size (189 us). bench/notebook/collectives.md, "Blocking
 * collectives on one site". */
static void vendor_defaults(void)
{
    if (!strcmp(ism.be->vendor, "openmpi")) {
        setenv("OMPI_MCA_coll_libnbc_ireduce_algorithm", "2", 0);
        ism_backend_sync_environ();
    }
}

int ism_core_init(int *argc, char ***argv, int required, int *provided)
{
    int rc, wrank, wsize;
    if (ism.initialized)
        return ISM_ERR_OTHER;
    check_knobs();
    ism.idle_yield_ns = idle_yield_us() * 1000;
    ism.chunk = (size_t)ism_core_knob(ISM_K_CHUNK, 256 << 10);
    ism.eager_limit = (size_t)ism_core_knob(ISM_K_EAGER, 64 << 10);
    if (ism.eager_limit > ism.chunk)
        ism.eager_limit = ism.chunk;
    /* a sixteenth of a chunk: a batch frame then carries at least 16 of the largest */
    ism.rma_batch_max = (size_t)ism_core_knob(ISM_K_RMA_BATCH, 4096);
    ism.vendor_max = (int64_t)ism_core_knob(ISM_K_VENDOR_MAX, INT_MAX);
    if (ism.rma_batch_max > ism.chunk / 16)
        ism.rma_batch_max = ism.chunk / 16;
    ism.window = (int)ism_core_knob(ISM_K_WINDOW, (double)default_window(ism.chunk));
    /* Early data: two chunks by default (at most 64 MiB, knobs.def, since a receiver may
     * hold that much per sender). Two, not one: bytes come back to the sender a one-way delay after
     * they were placed, so a sender whose next message follows within that time (every
     * collective called in a loop) found a one-chunk budget spent and waited for the
     * clear-to-send again: 2 sites of 4 ranks, 10 ms apart, 64 KiB allgather and
     * reduce_scatter 44 and 52 ms with one chunk, 34 with two; 1 MiB allreduce 113 and 103
     * (bench/notebook/collectives.md, issue 8 stop 22). */
    ism.early_max = (size_t)ism_core_knob(ISM_K_EARLY, 2.0 * (double)ism.chunk);
    /* a wrong collective selection (environment, table) stops the job before it starts:
     * the program would otherwise run with choices other than the ones it was given */
    if (ism_coll_init())
        ism_die("the collective selection above is not valid; correct it or unset it");
    ism.be = ism.vbe = load_backend();
    vendor_defaults();
    /* The progress helper of windows across sites (rma_progress.c) calls the vendor from
     * a second thread, never at the same time as the program's (both hold the core lock):
     * MPI_THREAD_SERIALIZED. The program is told the level it would have had. (Open MPI
     * 4.1.4 started at SERIALIZED hung a truncated receive within a node in its
     * MPI_Waitall, tests/mpi/p2p_truncate.c: its backend polls MPI_Testall there, and
     * the level is raised with both vendors.) */
    ism.rma_progress_ns = (int64_t)(ism_core_knob(ISM_K_RMA_PROGRESS_US, 200) * 1000);
    int ask = required;
    if (getenv("ISTHMUS_SITE") && ism.rma_progress_ns > 0 && ask < 2048)
        ask = 2048; /* MPI_THREAD_SERIALIZED */
    rc = ism.be->init_thread(argc, argv, ask, provided);
    if (rc)
        return rc;
    ism.helper_ok = *provided >= 2048;
    if (ask != required && *provided > required)
        *provided = required;
    ism.thread_level = *provided;
    ism.initialized = 1;
    ism_types_init();
    ism.vworld = ism.be->comm_world;
    ism.be->comm_rank(ism.vworld, &wrank);
    ism.be->comm_size(ism.vworld, &wsize);
    int plen = 0;
    ism.be->get_processor_name(ism.procname, &plen);

    if (!getenv("ISTHMUS_SITE")) {
        /* Single site: every vendor rank is an app rank, no gateway. */
        ism.lay.nsites = 1;
        ism.lay.site = 0;
        ism.lay.site_ranks = calloc(1, sizeof(int));
        ism.lay.site_ranks[0] = wsize;
        ism.lay.site_gws = calloc(1, sizeof(int));
        ism.lay.site_off = calloc(2, sizeof(int));
        ism.lay.site_off[1] = wsize;
        ism.lay.gsize = wsize;
        ism.lay.site_names = calloc(1, sizeof(char *));
        ism.lay.site_names[0] = strdup("A");
        rc = ism.be->comm_dup(ism.vworld, &ism.vapp);
        if (rc)
            return rc;
        ism.lrank = wrank;
        ism.lsize = wsize;
    } else {
        read_layout();
        /* the gateways run the same sequence (contract/handshake.h) */
        ism_join j;
        rc = ism_join_site(ism.be, ISM_ROLE_APP, &j);
        if (rc)
            return rc == ISM_JOIN_ENOMEM ? ISM_ERR_NO_MEM : rc;
        ism.vapp = j.own;
        ism.vgw = j.channel;
        ism.gw_vrank = calloc((size_t)wsize, sizeof(int));
        if (!ism.gw_vrank)
            return ISM_ERR_NO_MEM;
        ism.ngw = ism_join_ranks(&j, ISM_ROLE_GATEWAY, ism.gw_vrank);
        ism_join_free(&j);
        ism.be->comm_rank(ism.vapp, &ism.lrank);
        ism.be->comm_size(ism.vapp, &ism.lsize);
        if (ism.lsize != ism.lay.site_ranks[ism.lay.site])
            ism_die("site %s: this site's MPI job has %d application ranks but the job layout "
                    "says %d; start the program with `isthmus run`",
                    ism_site_name(ism.lay.site), ism.lsize, ism.lay.site_ranks[ism.lay.site]);
        if (ism.lay.nsites > 1 && ism.ngw < 1)
            ism_die("site %s: no isthmus-gateway rank in this site's MPI job; start the program "
                    "with `isthmus run` (it adds the gateway with the launcher's MPMD syntax)",
                    ism_site_name(ism.lay.site));
        if (ism.ngw > 0)
            ism.my_gw = ism.gw_vrank[ism_gw_of_local(ism.lrank, ism.ngw)];
    }
    /* a gateway in the job (isthmus run, even with one site) must see our FIN */
    ism.multisite = ism.lay.nsites > 1 || ism.ngw > 0;
    ism.grank = ism.lay.site_off[ism.lay.site] + ism.lrank;
    ism.site_of_g = calloc((size_t)ism.lay.gsize, sizeof(int));
    for (int s = 0; s < ism.lay.nsites; s++)
        for (int r = ism.lay.site_off[s]; r < ism.lay.site_off[s + 1]; r++)
            ism.site_of_g[r] = s;
    rc = ism_comm_build_world();
    if (rc)
        return rc;
    if (ism.multisite) {
        ism.early_left = malloc(sizeof(size_t) * (size_t)ism.lay.gsize);
        ism.early_in = calloc((size_t)ism.lay.gsize, sizeof(size_t));
        if (!ism.early_left || !ism.early_in)
            return ISM_ERR_NO_MEM;
        for (int r = 0; r < ism.lay.gsize; r++)
            ism.early_left[r] = ism.early_max;
        rc = ism_gw_setup();
        if (rc)
            return rc;
        /* a tool that asked for link events before MPI_Init (abi/mpit_event.c) */
        if (ism_tev_mask & (1u << ISM_TEV_LINK_DOWN | 1u << ISM_TEV_LINK_UP))
            ism_gw_watch(1);
        /* MPI_Init returns once every site is connected. */
        rc = ism_barrier(&ism_comm_world);
        if (!rc)
            ism_comm_spanning_vcoll(&ism_comm_world);
    }
    if (!rc && ism.thread_level == 4096) { /* MPI_THREAD_MULTIPLE */
        /* With other sites, a thread blocked inside the vendor (the fast path) would not
         * move cross-site work another thread starts afterwards and then leaves to be
         * finished by progress: so every wait polls both sides, as when such work is
         * pending (design.md, "Threads"). */
        if (ism.multisite)
            ism_remote_add(1);
        ism_mt_start();
    }
    return rc;
}

int ism_core_finalize(void)
{
    int rc = 0;
    ism_rma_progress_finalize();
    ism_coll_nb_report();
    ism_coll_finalize();
    if (ism.multisite) {
        unsigned spins = 0;
        /* Our own sends must reach the gateway before we leave. */
        while (ism.rsends.head || ism.nout > 0 || ism_bsend_pending()) {
            if (!ism_progress())
                ism_idle(&spins);
        }
        rc = ism_barrier(&ism_comm_world);
        ism_gw_teardown();
        free(ism.early_left);
        free(ism.early_in);
        ism.early_left = ism.early_in = NULL;
    }
    ism.finalized = 1;
    ism_backend_sync_environ();
    ism_mt_stop();
    int rc2 = ism.be->finalize();
    return rc ? rc : rc2;
}

void ism_core_abort(ism_comm *c, int code, const char *why)
{
    (void)c;
    if (!ism.be)
        _exit(code ? code : 1);
    if (ism.multisite && !ism.finalized) {
        /* Tell the gateway so every other site stops too; wait briefly for its ack. */
        ism_frame_hdr h;
        ism_frame_init(&h, ISM_F_ABORT);
        h.src = ism.grank;
        h.dst = -1;
        h.a = (uint64_t)(unsigned)code;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", why ? why : "MPI_Abort");
        h.len = (uint32_t)strlen(msg);
        ism_gw_post(&h, msg, h.len);
        double t0 = ism.be->wtime();
        unsigned spins = 0;
        while (!ism.abort_acked && ism.be->wtime() - t0 < 3.0) {
            if (!ism_progress())
                ism_idle(&spins);
        }
    }
    ism.be->abort(ism.vworld, code);
    _exit(code ? code : 1);
}
