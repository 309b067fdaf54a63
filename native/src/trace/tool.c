/* tool.c: the tracer's life in an app rank: MPI_Init opens the trace file and aligns
 * the clocks, MPI_Finalize aligns them again and closes it, MPI_Abort writes out what is
 * held; MPI_Pcontrol marks the application's phases. Its settings are ISTHMUS_TRACE_*
 * (native/src/common/knobs.def), which `isthmus run --trace DIR` sets. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/knobs.h"
#include "../contract/layout.h"
#include "sync.h"
#include "wrap.h"

ism_tr_state ism_tr;
ISM_TR_TLS int ism_tr_depth;
ISM_TR_TLS int ism_tr_thread = -1;
static atomic_int threads;
static int fn_init, fn_init_thread, fn_finalize, fn_pcontrol, fn_abort;

uint64_t ism_tr_clock(void) { return ism_tr_now(); }

int ism_tr_thread_index(void)
{
    ism_tr_thread = atomic_fetch_add(&threads, 1);
    return ism_tr_thread;
}

int ism_tr_fn_index(const char *name)
{
    for (int i = 0; i < ism_tr_fn_count; i++)
        if (!strcmp(ism_tr_fn_names[i], name))
            return i;
    return -1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "isthmus trace: rank %d: %s\n", ism_tr.rank, msg);
    fflush(stderr);
}

/* The cost of one clock read, measured here (it depends on the clock source). */
static double clock_read_ns(void)
{
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        uint64_t a = ism_tr_now(), x = 0;
        for (int i = 0; i < 1000; i++)
            x += ism_tr_now();
        uint64_t b = ism_tr_now();
        double per = (double)(b - a) / 1000.0;
        if (per < best && x)
            best = per;
    }
    return best;
}

static double knob(ism_knob_id id, double def)
{
    ism_knob_val v;
    char err[512];
    int rc = ism_knob_env(id, &v, err, sizeof err);
    if (rc < 0) {
        say("%s; tracing is off", err);
        return -1;
    }
    return rc ? v.num : def;
}

/* This rank's place in the job layout (contract/layout.h). A bad layout has stopped the
 * job in MPI_Init already; outside `isthmus run` the program is one site. */
static void site_layout(void)
{
    ism_layout l;
    char err[512];
    ism_tr.site = 0;
    ism_tr.nsites = 1;
    ism_tr.site_rank = ism_tr.rank;
    ism_tr.site_size = ism_tr.size;
    ism_tr.site_gws = 0;
    if (!getenv("ISTHMUS_SITE") || ism_layout_from_env(&l, err, sizeof err))
        return;
    ism_tr.site = l.site;
    ism_tr.nsites = l.nsites;
    ism_tr.site_rank = ism_tr.rank - l.site_off[l.site];
    ism_tr.site_size = l.site_ranks[l.site];
    ism_tr.site_gws = l.site_gws[l.site];
    ism_layout_free(&l);
}

/* The INFO record: what the exporters need to know about this process, as JSON. */
static void write_info(int level)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (char *p = host; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 32)
            *p = '?';
    /* the site names as a JSON array (names are letters and digits: layout.py) */
    const char *names = getenv("ISTHMUS_SITE_NAMES");
    char sites[512] = "\"A\"";
    if (names && strlen(names) * 3 + 3 < sizeof sites) {
        size_t n = 0;
        sites[n++] = '"';
        for (const char *p = names; *p; p++) {
            if (*p == ',') {
                memcpy(sites + n, "\",\"", 3);
                n += 3;
            } else if (*p != '"' && *p != '\\' && (unsigned char)*p >= 32) {
                sites[n++] = *p;
            }
        }
        sites[n++] = '"';
        sites[n] = 0;
    }
    const char *job = getenv("ISTHMUS_JOB");
    char info[2048];
    int len = snprintf(
        info, sizeof info,
        "{\"kind\":\"rank\",\"rank\":%d,\"size\":%d,\"site\":%d,\"sites\":[%s],"
        "\"site_rank\":%d,\"site_size\":%d,\"site_gateways\":%d,\"host\":\"%s\",\"pid\":%d,"
        "\"job\":\"%s\",%s,\"clock_read_ns\":%.1f,"
        "\"thread_level\":%d,\"buffer_bytes\":%zu,\"chunk_bytes\":%zu}",
        ism_tr.rank, ism_tr.size, ism_tr.site, sites, ism_tr.site_rank, ism_tr.site_size,
        ism_tr.site_gws, host, (int)getpid(), job ? job : "", ism_tr.clock_desc,
        ism_tr.clock_read_ns, level,
        ism_tr.buf.chunk_size * (size_t)ism_tr.buf.nchunks, ism_tr.buf.chunk_size);
    ism_tr_put(&ism_tr.buf, ISM_TR_INFO, 0, 0, (ism_tr_hdr[1]){{0, 0, 0, 0}},
               sizeof(ism_tr_hdr), info, (size_t)len + 1);
    size_t total = 0;
    for (int i = 0; i < ism_tr_fn_count; i++)
        total += strlen(ism_tr_fn_names[i]) + 1;
    char *all = malloc(total), *p = all;
    if (all) {
        for (int i = 0; i < ism_tr_fn_count; i++) {
            size_t k = strlen(ism_tr_fn_names[i]) + 1;
            memcpy(p, ism_tr_fn_names[i], k);
            p += k;
        }
        ism_tr_put(&ism_tr.buf, ISM_TR_NAMES, 0, 0, (ism_tr_hdr[1]){{0, 0, 0, 0}},
                   sizeof(ism_tr_hdr), all, total);
        free(all);
    }
}

void ism_tr_start(int level)
{
    const char *dir = getenv("ISTHMUS_TRACE_DIR");
    if (!dir || !*dir || ism_tr.on)
        return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &ism_tr.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &ism_tr.size);
    double total = knob(ISM_K_TRACE_BUFFER, 8 << 20);
    double chunk = knob(ISM_K_TRACE_CHUNK, 1 << 20);
    double rounds = knob(ISM_K_TRACE_SYNC_ROUNDS, 20);
    if (total < 0 || chunk < 0 || rounds < 0)
        return;
    snprintf(ism_tr.dir, sizeof ism_tr.dir, "%s", dir);
    ism_tr.sync_rounds = (int)rounds;
    site_layout();
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/rank-%06d.ismt", dir, ism_tr.rank);
    if (ism_tr_buf_open(&ism_tr.buf, path, ISM_TR_PROC_RANK, ism_tr.rank, (size_t)total,
                        (size_t)chunk, ism_tr_clock, err, sizeof err)) {
        say("%s; this rank is not traced", err);
        return;
    }
    ism_tr.mt = level == MPI_THREAD_MULTIPLE;
    pthread_mutex_init(&ism_tr.mu, NULL);
    ism_knob_val cv;
    char kerr[512];
    int crc = ism_knob_env(ISM_K_TRACE_CLOCK, &cv, kerr, sizeof kerr);
    if (crc < 0)
        say("%s; using CLOCK_MONOTONIC", kerr);
    ism_tr_clock_choose(crc <= 0 || strcmp(cv.str, "monotonic"), ism_tr.clock_desc,
                        sizeof ism_tr.clock_desc);
    ism_tr.clock_read_ns = clock_read_ns();
    fn_init = ism_tr_fn_index("MPI_Init");
    fn_init_thread = ism_tr_fn_index("MPI_Init_thread");
    fn_finalize = ism_tr_fn_index("MPI_Finalize");
    fn_pcontrol = ism_tr_fn_index("MPI_Pcontrol");
    fn_abort = ism_tr_fn_index("MPI_Abort");
    write_info(level);
    PMPI_Comm_group(MPI_COMM_WORLD, &ism_tr.world_group);
    PMPI_Comm_dup(MPI_COMM_WORLD, &ism_tr.comm);
    PMPI_Comm_set_name(ism_tr.comm, "isthmus trace (clock alignment)");
    ism_tr_comms_start();
    ism_tr_sync_start();
    ism_tr.on = 1;
}

void ism_tr_stop(void)
{
    if (!ism_tr.on)
        return;
    ism_tr.on = 0;
    ism_tr_sync_stop();
    int e = ism_tr_buf_close(&ism_tr.buf);
    if (e)
        say("writing %s/rank-%06d.ismt failed: %s; the trace of this rank is incomplete",
            ism_tr.dir, ism_tr.rank, strerror(e));
    if (ism_tr.buf.lost_records)
        say("%llu records (%llu bytes) were dropped because the trace buffer was full; the "
            "trace says where (LOSS records); raise ISTHMUS_TRACE_BUFFER (now %zu bytes)",
            (unsigned long long)ism_tr.buf.lost_records,
            (unsigned long long)ism_tr.buf.lost_bytes,
            ism_tr.buf.chunk_size * (size_t)ism_tr.buf.nchunks);
    ism_tr_comms_stop();
    ism_tr_wins_stop();
    PMPI_Group_free(&ism_tr.world_group);
    PMPI_Comm_free(&ism_tr.comm);
}

void ism_tr_flush_now(void)
{
    if (!ism_tr.on)
        return;
    ism_tr.on = 0;
    ism_tr_buf_close(&ism_tr.buf);
}

/* ---- the calls written by hand ---- */

static void record_call(int fn, uint64_t t0, uint64_t t1, int rc)
{
    if (fn < 0)
        return;
    ism_tr_leave((uint16_t)fn, t0, t1, rc, 0);
    ism_tr_unlock();
}

int MPI_Init(int *argc, char ***argv)
{
    uint64_t t0 = ism_tr_now();
    int rc = PMPI_Init(argc, argv);
    uint64_t t1 = ism_tr_now();
    if (rc == MPI_SUCCESS) {
        int level = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&level);
        ism_tr_start(level);
        if (ism_tr.on)
            record_call(fn_init, t0, t1, rc);
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    uint64_t t0 = ism_tr_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    uint64_t t1 = ism_tr_now();
    if (rc == MPI_SUCCESS) {
        ism_tr_start(*provided);
        if (ism_tr.on)
            record_call(fn_init_thread, t0, t1, rc);
    }
    return rc;
}

int MPI_Finalize(void)
{
    if (ism_tr.on) {
        uint64_t t = ism_tr_now();
        record_call(fn_finalize, t, t, 0); /* the tracer's own work follows: not timed */
        ism_tr_stop();
    }
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (ism_tr.on) {
        uint64_t t = ism_tr_now();
        record_call(fn_abort, t, t, 0);
        ism_tr_flush_now();
    }
    return PMPI_Abort(comm, errorcode);
}

/* MPI_Pcontrol(level): level >= 1 starts the application's phase `level`, 0 ends the
 * current one (docs/trace.md). Recorded as a MARK. */
int MPI_Pcontrol(const int level, ...)
{
    if (ism_tr.on) {
        uint64_t t = ism_tr_now();
        record_call(fn_pcontrol, t, t, 0);
        ism_tr_mark m = {{0, 0, 0, 0}, t, level, 0};
        ism_tr_lock();
        ism_tr_put(&ism_tr.buf, ISM_TR_MARK, 0, 0, &m, sizeof m, NULL, 0);
        ism_tr_unlock();
    }
    return PMPI_Pcontrol(level);
}
