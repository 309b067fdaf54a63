/* mpit_tool.c: isthmus's tools interface (MPI_T) from a tool's side, across sites.
 *
 *   mpit_tool [links]
 *
 * Enumerates every control variable, performance variable, category and event and checks
 * what each says of itself (names unique and found again by name, category members that
 * exist, every readable control variable read); writes the two writable settings and is
 * refused the others; reads the gateway's link counters before and after a known amount
 * of cross-site traffic and checks they moved at least that much; catches the events of
 * a message from another site that arrives before its receive (arrival, then unexpected)
 * and checks their elements; and with `links` (run with ISTHMUS_GW_FAULT_AFTER, which
 * breaks every link once) waits for the link-down and link-up events. Rank 0 and the
 * last rank must be at different sites. Prints "mpit_tool: OK" if all checks passed.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define TRAFFIC_MSGS 20
#define TRAFFIC_BYTES 65536
#define PROBE_TAG 77
#define PROBE_BYTES 1000

static int rank, size;

/* ---- enumeration ---- */

static int name_seen(char (*names)[256], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

static int type_bytes(MPI_Datatype t)
{
    int s = 0;
    if (t == MPI_DATATYPE_NULL || MPI_Type_size(t, &s) != MPI_SUCCESS)
        return 0;
    return s;
}

static void enumerate(int verbose)
{
    int ncv = 0, npv = 0, ncat = 0, nev = 0;
    CHECK_RC(MPI_T_cvar_get_num(&ncv), "MPI_T_cvar_get_num");
    CHECK_RC(MPI_T_pvar_get_num(&npv), "MPI_T_pvar_get_num");
    CHECK_RC(MPI_T_category_get_num(&ncat), "MPI_T_category_get_num");
    CHECK_RC(MPI_T_event_get_num(&nev), "MPI_T_event_get_num");
    char (*names)[256] = calloc((size_t)(ncv + npv + 1), sizeof *names);
    int isthmus_cv = 0, vendor_cv = 0, readable = 0;
    const char *vendor = getenv("ISTHMUS_MPI");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s:", vendor ? vendor : "?");
    for (int i = 0; i < ncv; i++) {
        char name[256], desc[2048];
        int nl = sizeof name, dl = sizeof desc, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        int rc = MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &et, desc, &dl, &bind, &scope);
        CHECK(rc == MPI_SUCCESS, "cvar %d: get_info returned %d", i, rc);
        if (rc)
            continue;
        CHECK(name[0] && (int)strlen(name) + 1 == nl, "cvar %d: name '%s' length %d", i, name, nl);
        CHECK(!name_seen(names, i, name), "cvar %d: name %s seen twice", i, name);
        snprintf(names[i], sizeof names[i], "%s", name);
        isthmus_cv += !strncmp(name, "ISTHMUS_", 8);
        vendor_cv += !strncmp(name, prefix, strlen(prefix));
        int back = -1;
        CHECK(MPI_T_cvar_get_index(name, &back) == MPI_SUCCESS && back == i,
              "cvar %s: get_index gives %d, not %d", name, back, i);
        if (et != MPI_T_ENUM_NULL) {
            int items = 0;
            char en[256];
            int enl = sizeof en;
            CHECK_RC(MPI_T_enum_get_info(et, &items, en, &enl), "MPI_T_enum_get_info");
            for (int k = 0; k < items; k++) {
                int v, il = sizeof en;
                CHECK_RC(MPI_T_enum_get_item(et, k, &v, en, &il), "MPI_T_enum_get_item");
            }
        }
        /* read what can be read without an object, or bound to MPI_COMM_WORLD */
        if (dt == MPI_DATATYPE_NULL || (bind != MPI_T_BIND_NO_OBJECT && bind != MPI_T_BIND_MPI_COMM))
            continue;
        MPI_Comm world = MPI_COMM_WORLD;
        MPI_T_cvar_handle h;
        int count = 0;
        rc = MPI_T_cvar_handle_alloc(i, bind == MPI_T_BIND_MPI_COMM ? &world : NULL, &h, &count);
        if (rc != MPI_SUCCESS)
            continue; /* a vendor may refuse some (Open MPI: deprecated ones) */
        size_t room = (size_t)(count > 0 ? count : 1) * (size_t)(type_bytes(dt) + 8);
        char *buf = calloc(1, room + 16);
        rc = MPI_T_cvar_read(h, buf);
        CHECK(rc == MPI_SUCCESS || strncmp(name, "ISTHMUS_", 8) != 0,
              "isthmus cvar %s: read returned %d", name, rc);
        readable += rc == MPI_SUCCESS;
        free(buf);
        CHECK_RC(MPI_T_cvar_handle_free(&h), "MPI_T_cvar_handle_free");
    }
    CHECK(isthmus_cv >= 20, "only %d ISTHMUS_* control variables", isthmus_cv);
    CHECK(vendor_cv > 0, "no control variable of the vendor (%s...)", prefix);
    int isthmus_pv = 0;
    for (int i = 0; i < npv; i++) {
        char name[256], desc[2048];
        int nl = sizeof name, dl = sizeof desc, verb, cls, bind, ro, cont, at;
        MPI_Datatype dt;
        MPI_T_enum et;
        int rc = MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &et, desc, &dl, &bind, &ro,
                                     &cont, &at);
        CHECK(rc == MPI_SUCCESS, "pvar %d: get_info returned %d", i, rc);
        if (rc)
            continue;
        isthmus_pv += !strncmp(name, "isthmus_", 8);
        int back = -1;
        CHECK(MPI_T_pvar_get_index(name, cls, &back) == MPI_SUCCESS && back == i,
              "pvar %s: get_index gives %d, not %d", name, back, i);
    }
    CHECK(isthmus_pv >= 20, "only %d isthmus_* performance variables", isthmus_pv);
    for (int c = 0; c < ncat; c++) {
        char name[256], desc[2048];
        int nl = sizeof name, dl = sizeof desc, nc = 0, np = 0, nk = 0, ne = 0;
        int rc = MPI_T_category_get_info(c, name, &nl, desc, &dl, &nc, &np, &nk);
        CHECK(rc == MPI_SUCCESS, "category %d: get_info returned %d", c, rc);
        if (rc)
            continue;
        int back = -1;
        CHECK(MPI_T_category_get_index(name, &back) == MPI_SUCCESS && back == c,
              "category %s: get_index gives %d, not %d", name, back, c);
        CHECK_RC(MPI_T_category_get_num_events(c, &ne), "MPI_T_category_get_num_events");
        int *m = calloc((size_t)(nc + np + nk + ne + 1), sizeof(int));
        CHECK_RC(MPI_T_category_get_cvars(c, nc, m), "MPI_T_category_get_cvars");
        for (int k = 0; k < nc; k++)
            CHECK(m[k] >= 0 && m[k] < ncv, "category %s: cvar %d of %d", name, m[k], ncv);
        CHECK_RC(MPI_T_category_get_pvars(c, np, m), "MPI_T_category_get_pvars");
        for (int k = 0; k < np; k++)
            CHECK(m[k] >= 0 && m[k] < npv, "category %s: pvar %d of %d", name, m[k], npv);
        CHECK_RC(MPI_T_category_get_categories(c, nk, m), "MPI_T_category_get_categories");
        for (int k = 0; k < nk; k++)
            CHECK(m[k] >= 0 && m[k] < ncat, "category %s: category %d of %d", name, m[k], ncat);
        CHECK_RC(MPI_T_category_get_events(c, ne, m), "MPI_T_category_get_events");
        for (int k = 0; k < ne; k++)
            CHECK(m[k] >= 0 && m[k] < nev, "category %s: event %d of %d", name, m[k], nev);
        free(m);
    }
    for (int e = 0; e < nev; e++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verb, nel = 8, bind;
        MPI_Datatype t[8];
        MPI_Aint d[8];
        MPI_T_enum et;
        MPI_Info info;
        CHECK_RC(MPI_T_event_get_info(e, name, &nl, &verb, t, d, &nel, &et, &info, desc, &dl,
                                      &bind),
                 "MPI_T_event_get_info");
        int back = -1;
        CHECK(MPI_T_event_get_index(name, &back) == MPI_SUCCESS && back == e,
              "event %s: get_index gives %d", name, back);
        CHECK(nel == 4, "event %s: %d elements", name, nel);
    }
    if (verbose)
        printf("mpit_tool: %d control variables (%d ISTHMUS_*, %d %s, %d read), %d performance "
               "variables (%d isthmus_*), %d categories, %d events\n",
               ncv, isthmus_cv, vendor_cv, prefix, readable, npv, isthmus_pv, ncat, nev);
    free(names);
}

/* ---- control variables: the writable two, and a read-only one ---- */

static MPI_T_cvar_handle cvar(const char *name)
{
    int i;
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    int count;
    CHECK_RC(MPI_T_cvar_get_index(name, &i), name);
    CHECK_RC(MPI_T_cvar_handle_alloc(i, NULL, &h, &count), name);
    return h;
}

static void settings(void)
{
    MPI_T_cvar_handle eager = cvar("ISTHMUS_EAGER"), chunk = cvar("ISTHMUS_CHUNK");
    unsigned long long old = 0, v = 1024, got = 0, c = 0;
    CHECK_RC(MPI_T_cvar_read(eager, &old), "read ISTHMUS_EAGER");
    CHECK_RC(MPI_T_cvar_read(chunk, &c), "read ISTHMUS_CHUNK");
    CHECK(old == 65536 && c == 262144, "ISTHMUS_EAGER %llu, ISTHMUS_CHUNK %llu: not the defaults",
          old, c);
    CHECK_RC(MPI_T_cvar_write(eager, &v), "write ISTHMUS_EAGER");
    CHECK_RC(MPI_T_cvar_read(eager, &got), "read ISTHMUS_EAGER again");
    CHECK(got == 1024, "ISTHMUS_EAGER reads %llu after writing 1024", got);
    unsigned long long big = c + 1;
    CHECK(MPI_T_cvar_write(eager, &big) == MPI_T_ERR_INVALID,
          "ISTHMUS_EAGER above ISTHMUS_CHUNK was taken");
    CHECK(MPI_T_cvar_write(chunk, &v) == MPI_T_ERR_CVAR_SET_NEVER, "ISTHMUS_CHUNK was written");
    CHECK_RC(MPI_T_cvar_write(eager, &old), "restore ISTHMUS_EAGER");
    MPI_T_cvar_handle_free(&eager);
    MPI_T_cvar_handle_free(&chunk);
}

/* ---- performance variables ---- */

static unsigned long long pvar_sum(MPI_T_pvar_session s, const char *name, int cls)
{
    int i, count = 0;
    MPI_T_pvar_handle h;
    CHECK_RC(MPI_T_pvar_get_index(name, cls, &i), name);
    CHECK_RC(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count), name);
    unsigned long long v[64] = {0}, sum = 0;
    CHECK(count >= 1 && count <= 64, "%s: %d elements", name, count);
    CHECK_RC(MPI_T_pvar_read(s, h, v), name);
    for (int k = 0; k < count && k < 64; k++)
        sum += v[k];
    CHECK(MPI_T_pvar_reset(s, h) == MPI_T_ERR_PVAR_NO_WRITE, "%s could be reset", name);
    CHECK(MPI_T_pvar_start(s, h) == MPI_T_ERR_PVAR_NO_STARTSTOP, "%s could be started", name);
    CHECK_RC(MPI_T_pvar_handle_free(s, &h), name);
    return sum;
}

static void counters(void)
{
    int far = size - 1;
    MPI_T_pvar_session s;
    CHECK_RC(MPI_T_pvar_session_create(&s), "MPI_T_pvar_session_create");
    const int C = MPI_T_PVAR_CLASS_COUNTER;
    unsigned long long sent0 = 0, msgs0 = 0, recv0 = 0, mine0 = 0, clock0 = 0, clock1 = 0;
    if (rank == 0) {
        sent0 = pvar_sum(s, "isthmus_link_sent_bytes", C);
        msgs0 = pvar_sum(s, "isthmus_link_sent_messages", C);
        mine0 = pvar_sum(s, "isthmus_rank_remote_bytes_sent", C);
        clock0 = pvar_sum(s, "isthmus_gw_clock_ns", MPI_T_PVAR_CLASS_GENERIC);
    }
    if (rank == far)
        recv0 = pvar_sum(s, "isthmus_link_received_bytes", C);
    MPI_Barrier(MPI_COMM_WORLD);
    char *buf = calloc(1, TRAFFIC_BYTES);
    for (int i = 0; i < TRAFFIC_MSGS; i++) {
        if (rank == 0)
            MPI_Send(buf, TRAFFIC_BYTES, MPI_BYTE, far, 5, MPI_COMM_WORLD);
        else if (rank == far)
            MPI_Recv(buf, TRAFFIC_BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long want = (unsigned long long)TRAFFIC_MSGS * TRAFFIC_BYTES;
    if (rank == 0) {
        unsigned long long sent = pvar_sum(s, "isthmus_link_sent_bytes", C) - sent0;
        unsigned long long msgs = pvar_sum(s, "isthmus_link_sent_messages", C) - msgs0;
        unsigned long long mine = pvar_sum(s, "isthmus_rank_remote_bytes_sent", C) - mine0;
        clock1 = pvar_sum(s, "isthmus_gw_clock_ns", MPI_T_PVAR_CLASS_GENERIC);
        CHECK(sent >= want, "the gateway's links sent %llu bytes for %llu of messages", sent, want);
        CHECK(msgs >= TRAFFIC_MSGS, "the links sent %llu messages for %d", msgs, TRAFFIC_MSGS);
        CHECK(mine == want, "this rank sent %llu bytes to other sites, not %llu", mine, want);
        CHECK(clock1 > clock0, "the gateway's clock went from %llu to %llu", clock0, clock1);
        unsigned long long rtt = pvar_sum(s, "isthmus_stream_rtt_ns", MPI_T_PVAR_CLASS_GENERIC);
        CHECK(rtt > 0, "no connection reports a round trip");
    }
    if (rank == far) {
        unsigned long long got = pvar_sum(s, "isthmus_link_received_bytes", C) - recv0;
        CHECK(got >= want, "the far gateway's links received %llu bytes for %llu", got, want);
    }
    CHECK_RC(MPI_T_pvar_session_free(&s), "MPI_T_pvar_session_free");
}

/* ---- events ---- */

typedef struct {
    int arrived, unexpected, dropped, link_down, link_up;
    int all_arrived; /* of any tag: barriers cross sites too */
    int src, tag, site, queued;
    unsigned long long bytes;
    MPI_Count ts;
    int source_index;
    int down_site, up_state;
} seen_t;

static seen_t seen;

static void on_message(MPI_T_event_instance ev, MPI_T_event_registration reg,
                       MPI_T_cb_safety safety, void *user)
{
    (void)reg;
    (void)safety;
    int unexpected = *(int *)user;
    int src, tag, last;
    unsigned long long bytes;
    MPI_T_event_read(ev, 0, &src);
    MPI_T_event_read(ev, 1, &tag);
    MPI_T_event_read(ev, 2, &bytes);
    MPI_T_event_read(ev, 3, &last);
    struct { int a, b; unsigned long long c; int d; } all;
    MPI_T_event_copy(ev, &all);
    if (all.a != src || all.b != tag || all.c != bytes || all.d != last)
        seen.src = -100; /* copy and read disagree: reported by the checks */
    if (!unexpected)
        seen.all_arrived++;
    if (tag != PROBE_TAG)
        return;
    if (unexpected) {
        seen.unexpected++;
        seen.queued = last;
    } else {
        seen.arrived++;
        seen.site = last;
        MPI_T_event_get_timestamp(ev, &seen.ts);
        MPI_T_event_get_source(ev, &seen.source_index);
    }
    if (seen.src != -100)
        seen.src = src;
    seen.tag = tag;
    seen.bytes = bytes;
}

static void on_dropped(MPI_Count count, MPI_T_event_registration reg, int source,
                       MPI_T_cb_safety safety, void *user)
{
    (void)reg, (void)source, (void)safety, (void)user;
    seen.dropped += (int)count;
}

static void never(MPI_T_event_instance ev, MPI_T_event_registration reg, MPI_T_cb_safety s,
                  void *user)
{
    (void)ev, (void)reg, (void)s, (void)user;
    seen.src = -200; /* registered for MPI_T_CB_REQUIRE_NONE only: must not be called */
}

static MPI_T_event_registration event(const char *name, MPI_T_cb_safety safety, void *user,
                                      MPI_T_event_cb_function *fn)
{
    int i;
    MPI_T_event_registration r;
    CHECK_RC(MPI_T_event_get_index(name, &i), name);
    CHECK_RC(MPI_T_event_handle_alloc(i, NULL, MPI_INFO_NULL, &r), name);
    CHECK_RC(MPI_T_event_register_callback(r, safety, MPI_INFO_NULL, user, fn), name);
    return r;
}

static void events(void)
{
    int far = size - 1;
    static int zero = 0, one = 1;
    MPI_T_event_registration a = NULL, u = NULL, n = NULL;
    if (rank == far) {
        a = event("isthmus_message_arrived", MPI_T_CB_REQUIRE_MPI_RESTRICTED, &zero, on_message);
        u = event("isthmus_unexpected_queued", MPI_T_CB_REQUIRE_THREAD_SAFE, &one, on_message);
        n = event("isthmus_message_arrived", MPI_T_CB_REQUIRE_NONE, NULL, never);
        CHECK_RC(MPI_T_event_set_dropped_handler(n, on_dropped), "set_dropped_handler");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char buf[PROBE_BYTES] = {0};
    if (rank == 0)
        MPI_Send(buf, PROBE_BYTES, MPI_BYTE, far, PROBE_TAG, MPI_COMM_WORLD);
    if (rank == far) {
        /* no receive yet: probe until the message is here, so it is queued as unexpected */
        int flag = 0;
        while (!flag)
            MPI_Iprobe(0, PROBE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        MPI_Count now = 0;
        MPI_T_source_get_timestamp(0, &now);
        MPI_Recv(buf, PROBE_BYTES, MPI_BYTE, 0, PROBE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(seen.arrived == 1 && seen.unexpected == 1, "events: %d arrivals, %d unexpected",
              seen.arrived, seen.unexpected);
        CHECK(seen.src == 0 && seen.tag == PROBE_TAG && seen.bytes == PROBE_BYTES,
              "event elements: source %d tag %d bytes %llu", seen.src, seen.tag, seen.bytes);
        CHECK(seen.site == 0 && seen.queued >= 1, "event elements: site %d, %d queued",
              seen.site, seen.queued);
        CHECK(seen.source_index == 0 && seen.ts > 0 && seen.ts <= now,
              "event time %lld (source %d), now %lld", (long long)seen.ts, seen.source_index,
              (long long)now);
        CHECK(seen.dropped >= 1 && seen.dropped == seen.all_arrived,
              "%d arrivals dropped for a callback of safety NONE, %d arrived", seen.dropped,
              seen.all_arrived);
        MPI_T_event_handle_free(a, NULL, NULL);
        MPI_T_event_handle_free(u, NULL, NULL);
        MPI_T_event_handle_free(n, NULL, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void on_link(MPI_T_event_instance ev, MPI_T_event_registration reg,
                    MPI_T_cb_safety safety, void *user)
{
    (void)reg, (void)safety;
    int peer_site, state, source = -1;
    MPI_T_event_read(ev, 0, &peer_site);
    MPI_T_event_read(ev, 3, &state);
    MPI_T_event_get_source(ev, &source);
    if (*(int *)user == 0) {
        seen.link_down++;
        seen.down_site = source == 1 ? peer_site : -1;
    } else {
        seen.link_up++;
        seen.up_state = state;
    }
}

/* Registered before MPI_Init, so the gateway is asked for link events as soon as the rank
 * connects to it, before any traffic (the fault comes after a number of frames). */
static MPI_T_event_registration link_down, link_up;

static void links_watch(void)
{
    static int down = 0, up = 1;
    link_down = event("isthmus_link_down", MPI_T_CB_REQUIRE_MPI_RESTRICTED, &down, on_link);
    link_up = event("isthmus_link_up", MPI_T_CB_REQUIRE_MPI_RESTRICTED, &up, on_link);
}

static void links(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    /* enough frames for ISTHMUS_GW_FAULT_AFTER to break the links while they carry some */
    char buf[4096] = {0};
    int far = size - 1;
    for (int i = 0; i < 200; i++) {
        if (rank == 0)
            MPI_Send(buf, sizeof buf, MPI_BYTE, far, 9, MPI_COMM_WORLD);
        else if (rank == far)
            MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double until = MPI_Wtime() + 30;
    while ((!seen.link_down || !seen.link_up) && MPI_Wtime() < until) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        usleep(1000);
    }
    CHECK(seen.link_down >= 1 && seen.link_up >= 1, "link events: %d down, %d up",
          seen.link_down, seen.link_up);
    CHECK(seen.down_site >= 0 && seen.up_state == 2, "link down from site %d, up in state %d",
          seen.down_site, seen.up_state);
    MPI_T_event_handle_free(link_down, NULL, NULL);
    MPI_T_event_handle_free(link_up, NULL, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int provided, before = 0;
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
    CHECK_RC(MPI_T_cvar_get_num(&before), "MPI_T_cvar_get_num before MPI_Init");
    int watch = argc > 1 && !strcmp(argv[1], "links");
    if (watch)
        links_watch();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int after = 0;
    MPI_T_cvar_get_num(&after);
    CHECK(after > before, "the vendor's control variables did not appear after MPI_Init "
                          "(%d before, %d after)", before, after);
    enumerate(rank == 0);
    settings();
    counters();
    events();
    if (watch)
        links();
    MPI_T_finalize();
    int rc = check_finish("mpit_tool");
    MPI_Finalize();
    return rc;
}
