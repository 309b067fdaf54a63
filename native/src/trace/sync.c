/* sync.c: clock alignment of a traced job (see sync.h). */
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tools/noise/clocksync.h"
#include "wrap.h"

#define TAG_SYNC 7302

typedef struct {
    int32_t peer;   /* global rank, or site * 65536 + gateway */
    int16_t kind;   /* ISM_TR_SYNC_RANK or ISM_TR_SYNC_GATEWAY */
    int16_t phase;
    uint64_t t0, t1, tr;
} sample;

static sample *xs;
static int nxs, capxs;
static int *leader_of;  /* world rank -> its group's leader */
static int phases;
/* the gateway this rank samples (site rank g < gateways of the site samples gateway g) */
static int gw_ok;
static MPI_T_pvar_session gw_session;
static MPI_T_pvar_handle gw_clock;

static void keep(int32_t peer, int kind, int phase, uint64_t t0, uint64_t t1, uint64_t tr)
{
    if (nxs == capxs) {
        int cap = capxs ? capxs * 2 : 64;
        sample *n = realloc(xs, sizeof *n * (size_t)cap);
        if (!n)
            return;
        xs = n;
        capxs = cap;
    }
    xs[nxs++] = (sample){peer, (int16_t)kind, (int16_t)phase, t0, t1, tr};
    ism_tr_sync r = {{0, 0, 0, 0}, peer, 0, t0, t1, tr};
    ism_tr_put(&ism_tr.buf, ISM_TR_SYNC, (uint8_t)kind, (uint16_t)phase, &r, sizeof r, NULL, 0);
}

static void initiate(int peer, int phase)
{
    for (int k = 0; k < ism_tr.sync_rounds; k++) {
        uint64_t t0 = ism_tr_now(), tr = 0;
        PMPI_Send(&t0, 1, MPI_UINT64_T, peer, TAG_SYNC, ism_tr.comm);
        PMPI_Recv(&tr, 1, MPI_UINT64_T, peer, TAG_SYNC, ism_tr.comm, MPI_STATUS_IGNORE);
        keep(peer, ISM_TR_SYNC_RANK, phase, t0, ism_tr_now(), tr);
    }
}

static void respond(int peer)
{
    for (int k = 0; k < ism_tr.sync_rounds; k++) {
        uint64_t v;
        PMPI_Recv(&v, 1, MPI_UINT64_T, peer, TAG_SYNC, ism_tr.comm, MPI_STATUS_IGNORE);
        v = ism_tr_now();
        PMPI_Send(&v, 1, MPI_UINT64_T, peer, TAG_SYNC, ism_tr.comm);
    }
}

/* The gateway's clock is one of libisthmus's MPI_T variables: reading it asks the
 * gateway, so a read is a ping-pong like the others. Without it (a vendor's library, a
 * single site) gateways are not aligned, and clocks.json says so. */
static void gateway_open(void)
{
    int prov, idx, count;
    gw_ok = 0;
    if (ism_tr.site_rank >= ism_tr.site_gws || ism_tr.nsites < 2)
        return;
    if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS)
        return;
    if (PMPI_T_pvar_get_index("isthmus_gw_clock_ns", MPI_T_PVAR_CLASS_GENERIC, &idx) ==
            MPI_SUCCESS &&
        PMPI_T_pvar_session_create(&gw_session) == MPI_SUCCESS) {
        if (PMPI_T_pvar_handle_alloc(gw_session, idx, NULL, &gw_clock, &count) == MPI_SUCCESS &&
            count == 1)
            gw_ok = 1;
        else
            PMPI_T_pvar_session_free(&gw_session);
    }
    if (!gw_ok)
        PMPI_T_finalize();
}

static void gateway_phase(int phase)
{
    if (!gw_ok)
        return;
    int32_t code = ism_tr.site * 65536 + ism_tr.site_rank;
    for (int k = 0; k < ism_tr.sync_rounds; k++) {
        uint64_t t0 = ism_tr_now(), tr = 0;
        if (PMPI_T_pvar_read(gw_session, gw_clock, &tr) != MPI_SUCCESS)
            return;
        keep(code, ISM_TR_SYNC_GATEWAY, phase, t0, ism_tr_now(), tr);
    }
}

static void phase_run(int phase)
{
    int me = ism_tr.rank, leader = leader_of[me];
    if (me == 0) {
        for (int r = 1; r < ism_tr.size; r++)
            if (leader_of[r] == r)
                initiate(r, phase);
    } else if (leader == me) {
        respond(0);
    }
    if (leader == me) {
        for (int r = 0; r < ism_tr.size; r++)
            if (r != me && leader_of[r] == me)
                initiate(r, phase);
    } else {
        respond(leader);
    }
    gateway_phase(phase);
    phases = phase + 1;
}

void ism_tr_sync_start(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the host name */
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    uint64_t key[2] = {(uint64_t)ism_tr.site, h}, *all = malloc(sizeof key * (size_t)ism_tr.size);
    leader_of = malloc(sizeof(int) * (size_t)ism_tr.size);
    nxs = 0;
    phases = 0;
    if (!all || !leader_of) {
        free(all);
        free(leader_of);
        leader_of = NULL;
        return;
    }
    PMPI_Allgather(key, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, ism_tr.comm);
    for (int r = 0; r < ism_tr.size; r++) {
        leader_of[r] = r;
        for (int q = 0; q < r; q++)
            if (all[2 * q] == all[2 * r] && all[2 * q + 1] == all[2 * r + 1]) {
                leader_of[r] = q;
                break;
            }
    }
    free(all);
    gateway_open();
    phase_run(0);
}

/* ---- rank 0: the maps ---- */

typedef struct {
    double a, b, err, rtt;
    int via, used, ok;
} map;

/* t_peer = a + b t_initiator from one initiator's exchanges with one peer (in phase
 * order). Each phase's fastest exchange bounds the offset to +-rtt/2 at its time. When
 * the offsets of the two phases differ by more than those bounds allow, the clocks drift
 * measurably and the noise toolkit's line through the fastest quarter of each phase
 * (clocksync.c) gives offset and drift; otherwise the drift is lost in the noise (a
 * short run on a loaded machine fitted 4000 ppm between two processes of one host) and
 * only the offset is kept: the middle of where both phases' bounds overlap. */
static map fit(const sample *s, int n, int rounds)
{
    map m = {0, 1, 0, 0, -1, 0, 0};
    double off[2] = {0, 0}, err[2] = {1e300, 1e300};
    int seen[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        int p = s[i].phase ? 1 : 0;
        double rtt = (double)(s[i].t1 - s[i].t0);
        if (rtt / 2 < err[p]) {
            err[p] = rtt / 2;
            off[p] = (double)s[i].tr - ((double)s[i].t0 + rtt / 2);
        }
        seen[p]++;
    }
    if (!seen[0] && !seen[1])
        return m;
    m.ok = 1;
    if (!seen[0] || !seen[1]) {
        int p = seen[1];
        m.a = off[p];
        m.err = err[p];
        m.rtt = 2 * err[p];
        m.used = 1;
        return m;
    }
    m.rtt = 2 * (err[0] < err[1] ? err[0] : err[1]);
    double lo = off[0] - err[0] > off[1] - err[1] ? off[0] - err[0] : off[1] - err[1];
    double hi = off[0] + err[0] < off[1] + err[1] ? off[0] + err[0] : off[1] + err[1];
    if (lo <= hi) {
        m.a = (lo + hi) / 2;
        m.err = (hi - lo) / 2;
        m.used = 2;
        return m;
    }
    ism_pingpong *x = malloc(sizeof *x * (size_t)n);
    if (!x) {
        m.ok = 0;
        return m;
    }
    for (int i = 0; i < n; i++)
        x[i] = (ism_pingpong){s[i].t0, s[i].t1, s[i].tr};
    ism_clockmap cm = ism_clocksync_fit(x, (size_t)n, (size_t)rounds, 0.25);
    free(x);
    m.a = cm.a;
    m.b = cm.b;
    /* the line's own bound over the run: each exchange in it is off by up to half ITS
     * round trip, and the fit weighs several; half the fastest one's is no bound */
    m.err = cm.err_max;
    m.used = (int)cm.used;
    return m;
}

/* The exchanges `from` started with `peer` (of kind), in order. */
static int select_pair(const sample *all, const int *off, const int *cnt, int from, int32_t peer,
                       int kind, sample *out)
{
    int n = 0;
    for (int i = 0; i < cnt[from]; i++) {
        const sample *s = &all[off[from] + i];
        if (s->peer == peer && s->kind == kind)
            out[n++] = *s;
    }
    return n;
}

static void compose(map *m, const map *parent, int via)
{
    /* t_me = a + b t_parent, t_parent = A + B t_0 */
    m->a = m->a + m->b * parent->a;
    m->b = m->b * parent->b;
    m->err += parent->err;
    m->via = via;
}

static void write_entry(FILE *f, int first, const char *kind, int id, int site, int gw,
                        const map *m)
{
    fprintf(f, "%s\n  {\"kind\":\"%s\",\"id\":%d,", first ? "" : ",", kind, id);
    if (gw >= 0)
        fprintf(f, "\"site\":%d,\"gateway\":%d,", site, gw);
    fprintf(f,
            "\"aligned\":%s,\"a\":%.17g,\"b\":%.17g,\"error_ns\":%.1f,\"rtt_min_ns\":%.1f,"
            "\"via\":%d,\"exchanges_used\":%d}",
            m->ok ? "true" : "false", m->a, m->b, m->err, m->rtt, m->via, m->used);
}

static void write_clocks(const sample *all, const int *off, const int *cnt)
{
    int n = ism_tr.size, total = off[n - 1] + cnt[n - 1];
    map *rm = calloc((size_t)n, sizeof *rm);
    sample *tmp = malloc(sizeof *tmp * (size_t)(total > 0 ? total : 1));
    char path[4200];
    snprintf(path, sizeof path, "%s/clocks.json", ism_tr.dir);
    FILE *f = rm && tmp ? fopen(path, "w") : NULL;
    if (!f) {
        fprintf(stderr, "isthmus trace: rank 0: cannot write %s; the sites' clocks are not "
                        "aligned in this trace\n", path);
        free(rm);
        free(tmp);
        return;
    }
    rm[0] = (map){0, 1, 0, 0, -1, 0, 1};
    for (int pass = 0; pass < 2; pass++) /* leaders, then the others */
        for (int r = 1; r < n; r++) {
            int is_leader = leader_of[r] == r;
            if (is_leader != (pass == 0))
                continue;
            int from = is_leader ? 0 : leader_of[r];
            int k = select_pair(all, off, cnt, from, r, ISM_TR_SYNC_RANK, tmp);
            rm[r] = fit(tmp, k, ism_tr.sync_rounds);
            if (rm[r].ok && rm[from].ok)
                compose(&rm[r], &rm[from], from);
            else
                rm[r].ok = 0;
        }
    fprintf(f, "{\"reference\":\"rank 0\",\"clock\":\"CLOCK_MONOTONIC\",\"unit\":\"ns\","
               "\"map\":\"t_process = a + b * t_reference\",\"rounds\":%d,\"phases\":%d,"
               "\"processes\":[",
            ism_tr.sync_rounds, phases);
    for (int r = 0; r < n; r++)
        write_entry(f, r == 0, "rank", r, -1, -1, &rm[r]);
    /* gateways: sampled by the rank whose site rank is the gateway's index */
    for (int r = 0; r < n; r++)
        for (int i = 0; i < cnt[r]; i++) {
            const sample *s = &all[off[r] + i];
            if (s->kind != ISM_TR_SYNC_GATEWAY || s->phase != 0 ||
                (i > 0 && all[off[r] + i - 1].kind == ISM_TR_SYNC_GATEWAY &&
                 all[off[r] + i - 1].phase == 0))
                continue; /* one entry per gateway: at its first exchange */
            int k = select_pair(all, off, cnt, r, s->peer, ISM_TR_SYNC_GATEWAY, tmp);
            map m = fit(tmp, k, ism_tr.sync_rounds);
            if (m.ok && rm[r].ok)
                compose(&m, &rm[r], r);
            else
                m.ok = 0;
            write_entry(f, 0, "gateway", s->peer, s->peer / 65536, s->peer % 65536, &m);
        }
    fprintf(f, "\n]}\n");
    if (fclose(f))
        fprintf(stderr, "isthmus trace: rank 0: writing %s failed\n", path);
    free(rm);
    free(tmp);
}

void ism_tr_sync_stop(void)
{
    if (!leader_of)
        return;
    phase_run(1);
    if (gw_ok) {
        PMPI_T_pvar_handle_free(gw_session, &gw_clock);
        PMPI_T_pvar_session_free(&gw_session);
        PMPI_T_finalize();
        gw_ok = 0;
    }
    int n = ism_tr.size, *cnt = NULL, *off = NULL, *bcnt = NULL;
    sample *all = NULL;
    if (ism_tr.rank == 0) {
        cnt = calloc((size_t)n, sizeof *cnt);
        off = calloc((size_t)n, sizeof *off);
        bcnt = calloc((size_t)n, sizeof *bcnt);
    }
    PMPI_Gather(&nxs, 1, MPI_INT, cnt, 1, MPI_INT, 0, ism_tr.comm);
    int *boff = NULL;
    if (ism_tr.rank == 0) {
        boff = calloc((size_t)n, sizeof *boff);
        int total = 0;
        for (int r = 0; r < n; r++) {
            off[r] = total;
            boff[r] = total * (int)sizeof(sample);
            bcnt[r] = cnt[r] * (int)sizeof(sample);
            total += cnt[r];
        }
        all = malloc(sizeof *all * (size_t)(total > 0 ? total : 1));
    }
    PMPI_Gatherv(xs, nxs * (int)sizeof(sample), MPI_BYTE, all, bcnt, boff, MPI_BYTE, 0,
                 ism_tr.comm);
    if (ism_tr.rank == 0 && all && cnt && off)
        write_clocks(all, off, cnt);
    free(all);
    free(cnt);
    free(off);
    free(bcnt);
    free(boff);
    free(xs);
    xs = NULL;
    nxs = capxs = 0;
    free(leader_of);
    leader_of = NULL;
}
