/*
 * main.c - isthmus-bench: the interconnect and MPI benchmark program. It parses the
 * options, learns where every rank runs (host and site), builds the configuration that
 * every output record carries, and runs one benchmark. See docs/bench.md.
 *
 * Site of a rank: the isthmus site name (ISTHMUS_SITE indexes ISTHMUS_SITE_NAMES) when
 * run by `isthmus run`; else $ISTHMUS_BENCH_SITE; else the processor name (host).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* isthmus settings recorded with every result. A fixed list read with getenv, not a walk
 * over `environ`: a program that references `environ` gets a copy relocation, and Open MPI
 * loaded with RTLD_DEEPBIND then frees a pointer from the other copy in MPI_Init. */
static const char *const ENV_KNOBS[] = {
    "ISTHMUS_MPI", "ISTHMUS_SITE", "ISTHMUS_SITE_NAMES", "ISTHMUS_SITE_RANKS",
    "ISTHMUS_SITE_GATEWAYS", "ISTHMUS_TRANSPORT",
/* every setting of the table (the family of collective choices has no variable of its
 * own name: its entry is never set) */
#define ISM_KNOB(id, ...) "ISTHMUS_" #id,
#include "../../src/common/knobs.def"
#undef ISM_KNOB
    "ISTHMUS_BENCH_SITE", "ISTHMUS_BENCH_LINK", "ISTHMUS_BENCH_PROFILE", NULL,
};

static void my_site(char *out, size_t len, const char *host)
{
    const char *idx = getenv("ISTHMUS_SITE"), *names = getenv("ISTHMUS_SITE_NAMES");
    if (idx && names) {
        int want = atoi(idx), k = 0;
        const char *s = names;
        while (k < want && (s = strchr(s, ',')) != NULL) {
            s++;
            k++;
        }
        if (s && k == want) {
            size_t n = strcspn(s, ",");
            if (n >= len)
                n = len - 1;
            memcpy(out, s, n);
            out[n] = '\0';
            return;
        }
    }
    const char *env = getenv("ISTHMUS_BENCH_SITE");
    snprintf(out, len, "%s", env && *env ? env : host);
}

static void put(char **buf, size_t *cap, size_t *used, const char *s)
{
    size_t n = strlen(s);
    while (*used + n + 1 > *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        *buf = realloc(*buf, *cap);
        if (*buf == NULL) {
            fprintf(stderr, "isthmus-bench: out of memory\n");
            exit(3);
        }
    }
    memcpy(*buf + *used, s, n + 1);
    *used += n;
}

static void put_str_array(char **b, size_t *cap, size_t *used, const char *key,
                          char (*v)[ISM_BENCH_NAME_LEN], int n, int distinct)
{
    char esc[256];
    put(b, cap, used, ",\"");
    put(b, cap, used, key);
    put(b, cap, used, "\":[");
    int first = 1;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int q = 0; distinct && q < i; q++)
            seen |= !strcmp(v[q], v[i]);
        if (seen)
            continue;
        put(b, cap, used, first ? "\"" : ",\"");
        put(b, cap, used, ism_bench_json_escape(v[i], esc, sizeof esc));
        put(b, cap, used, "\"");
        first = 0;
    }
    put(b, cap, used, "]");
}

static void build_config(ism_bench_ctx *c, const char *libfull, int ver, int subver)
{
    char *b = NULL, esc[4096], tmp[256];
    size_t cap = 0, used = 0;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(tmp, sizeof tmp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    put(&b, &cap, &used, "{\"bench_version\":\"" ISM_BENCH_VERSION "\",\"start\":\"");
    put(&b, &cap, &used, tmp);
    put(&b, &cap, &used, "\",\"library\":\"");
    put(&b, &cap, &used, ism_bench_json_escape(c->library, esc, sizeof esc));
    put(&b, &cap, &used, "\",\"library_version\":\"");
    put(&b, &cap, &used, ism_bench_json_escape(libfull, esc, sizeof esc));
    snprintf(tmp, sizeof tmp, "\",\"mpi_standard\":\"%d.%d\",\"ranks\":%d,\"host\":\"", ver, subver,
             c->nranks);
    put(&b, &cap, &used, tmp);
    put(&b, &cap, &used, ism_bench_json_escape(c->host[0], esc, sizeof esc));
    put(&b, &cap, &used, "\",\"timer\":");
    put(&b, &cap, &used, c->timer_json);
    put_str_array(&b, &cap, &used, "hosts", c->host, c->nranks, 1);
    put_str_array(&b, &cap, &used, "sites", c->site, c->nranks, 1);
    put_str_array(&b, &cap, &used, "rank_sites", c->site, c->nranks, 0);
    put_str_array(&b, &cap, &used, "rank_hosts", c->host, c->nranks, 0);
    put(&b, &cap, &used, ",\"link\":");
    if (c->opt.link && *c->opt.link) {
        put(&b, &cap, &used, "\"");
        put(&b, &cap, &used, ism_bench_json_escape(c->opt.link, esc, sizeof esc));
        put(&b, &cap, &used, "\"");
    } else {
        put(&b, &cap, &used, "null");
    }
    put(&b, &cap, &used, ",\"label\":");
    if (c->opt.label) {
        put(&b, &cap, &used, "\"");
        put(&b, &cap, &used, ism_bench_json_escape(c->opt.label, esc, sizeof esc));
        put(&b, &cap, &used, "\"");
    } else {
        put(&b, &cap, &used, "null");
    }
    put(&b, &cap, &used, ",\"argv\":[");
    for (int i = 0; i < c->opt.argc; i++) {
        put(&b, &cap, &used, i ? ",\"" : "\"");
        put(&b, &cap, &used, ism_bench_json_escape(c->opt.argv[i], esc, sizeof esc));
        put(&b, &cap, &used, "\"");
    }
    /* isthmus tuning knobs in effect (never the secret's path) */
    put(&b, &cap, &used, "],\"env\":{");
    int first = 1;
    for (int k = 0; ENV_KNOBS[k]; k++) {
        const char *val = getenv(ENV_KNOBS[k]);
        if (val == NULL)
            continue;
        snprintf(tmp, sizeof tmp, "%s\"%s\":\"", first ? "" : ",", ENV_KNOBS[k]);
        put(&b, &cap, &used, tmp);
        put(&b, &cap, &used, ism_bench_json_escape(val, esc, sizeof esc));
        put(&b, &cap, &used, "\"");
        first = 0;
    }
    put(&b, &cap, &used, "}}");
    c->config_json = b;
}

static void identify(ism_bench_ctx *c)
{
    char host[MPI_MAX_PROCESSOR_NAME] = "", me_host[ISM_BENCH_NAME_LEN], me_site[ISM_BENCH_NAME_LEN];
    int len = 0;
    MPI_Get_processor_name(host, &len);
    snprintf(me_host, sizeof me_host, "%.*s", ISM_BENCH_NAME_LEN - 1, host); /* names are cut to fit */
    my_site(me_site, sizeof me_site, me_host);
    c->host = calloc((size_t)c->nranks, sizeof *c->host);
    c->site = calloc((size_t)c->nranks, sizeof *c->site);
    if (c->host == NULL || c->site == NULL)
        MPI_Abort(c->world, 3);
    MPI_Allgather(me_host, ISM_BENCH_NAME_LEN, MPI_CHAR, c->host, ISM_BENCH_NAME_LEN, MPI_CHAR,
                  c->world);
    MPI_Allgather(me_site, ISM_BENCH_NAME_LEN, MPI_CHAR, c->site, ISM_BENCH_NAME_LEN, MPI_CHAR,
                  c->world);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int ver = 0, subver = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&ver, &subver);
    size_t first_line = strcspn(lib, "\n,");
    c->library = malloc(first_line + 1);
    memcpy(c->library, lib, first_line);
    c->library[first_line] = '\0';
    ism_bench_check_timer(c);
    build_config(c, lib, ver, subver);
}

static const struct {
    const char *name;
    void (*run)(ism_bench_ctx *);
} TABLE[] = {
    {"latency", ism_bench_latency},     {"bw", ism_bench_bw},
    {"bibw", ism_bench_bibw},           {"msgrate", ism_bench_msgrate},
    {"placement", ism_bench_placement}, {"one2many", ism_bench_one2many},
    {"many2one", ism_bench_many2one},   {"interference", ism_bench_interference},
    {"coll", ism_bench_coll},           {"a2a-fraction", ism_bench_a2a_fraction},
    {"loggp", ism_bench_loggp},
};

int main(int argc, char **argv)
{
    ism_bench_ctx ctx;
    char err[512];
    memset(&ctx, 0, sizeof ctx);
    int parsed = ism_bench_parse_options(argc, argv, &ctx.opt, err, sizeof err);

    MPI_Init(&argc, &argv);
    ctx.world = MPI_COMM_WORLD;
    MPI_Comm_rank(ctx.world, &ctx.rank);
    MPI_Comm_size(ctx.world, &ctx.nranks);
    if (parsed == 1 || parsed == 2) {
        if (ctx.rank == 0) {
            if (parsed == 1) {
                ism_bench_print_usage();
            } else {
                for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
                    printf("%s\n", TABLE[i].name);
                printf("collectives: %s\n", ism_bench_coll_list());
            }
        }
        MPI_Finalize();
        return 0;
    }
    if (parsed != 0)
        ism_bench_usage_error(&ctx, "%s", err);
    identify(&ctx);
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++) {
        if (!strcmp(TABLE[i].name, ctx.opt.benchmark)) {
            TABLE[i].run(&ctx);
            break;
        }
    }
    MPI_Barrier(ctx.world);
    free(ctx.host);
    free(ctx.site);
    free(ctx.config_json);
    free(ctx.library);
    MPI_Finalize();
    return 0;
}
