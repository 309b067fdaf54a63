/*
 * options.c - the command line of isthmus-bench. Parsing is pure (no MPI): every rank
 * parses the same argv, so a mistake is found everywhere at once and reported once.
 */
#include "bench.h"
#include "../../src/common/units.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const BENCHMARKS[] = {
    "latency", "bw", "bibw", "msgrate", "placement", "one2many", "many2one",
    "interference", "coll", "a2a-fraction", "loggp", NULL,
};

void ism_bench_print_usage(void)
{
    fprintf(stderr,
        "usage: isthmus-bench BENCHMARK [options]      (run it with mpirun or isthmus run)\n"
        "benchmarks:\n"
        "  latency       ping-pong between rank 0 and --peer; one-way latency, us\n"
        "  bw            window of back-to-back MPI_Isend 0 -> peer, ack per window; MB/s\n"
        "  bibw          windows in both directions at once; MB/s\n"
        "  msgrate       pairs (i, i+n/2) all streaming windows; messages/s (even rank count)\n"
        "  placement     latency from rank 0 to every other rank, by distance\n"
        "                (same-node, same-site, other-site)\n"
        "  one2many      rank 0 sends to 1..N partners at once; time of the slowest, us\n"
        "  many2one      1..N partners send to rank 0 at once; time of the slowest, us\n"
        "  interference  ping-pong 0 <-> peer while the other ranks run --background traffic\n"
        "  coll          collectives (--op, default all: %s); max over ranks, us\n"
        "  a2a-fraction  Alltoall on --fractions %% of the ranks while the rest wait in a barrier\n"
        "  loggp         what LogGP is fitted to, 0 <-> --peer: one-way, send and receive\n"
        "                overhead, trains of sends; MPI_Reduce_local per op and type; us\n"
        "options:\n"
        "  -m SIZES      MIN:MAX (powers of two) or a list 8,1k,1M (bytes; k=1024, M=1048576)\n"
        "  -i ITERS      iterations per repetition (default 100 up to 8 KiB, 20 above)\n"
        "  -x WARMUP     untimed warm-up iterations per point (default: one repetition's worth)\n"
        "  -r REPS       repetitions (samples) per point (default 10)\n"
        "  -W WINDOW     messages per window for bw, bibw, msgrate, pairs background (default 64)\n"
        "  --peer R      partner of rank 0 for latency, bw, bibw, interference (default 1)\n"
        "  --partners L  partner counts for one2many/many2one, e.g. 1,2,4 (default powers of two)\n"
        "  --fractions L percentages for a2a-fraction (default 100,50,25,12.5)\n"
        "  --background none|pairs|alltoall    traffic of the other ranks (interference)\n"
        "  --bg-size S   message size of the background traffic (default 64k)\n"
        "  --bg-pairs L  explicit background pairs a:b,c:d (world ranks; default: all others)\n"
        "  --op L        collectives for coll, comma-separated\n"
        "  --nonblocking coll uses the MPI_I... forms followed by MPI_Wait\n"
        "  --algs L      coll under libisthmus: these algorithms (choices as ISTHMUS_COLL_*,\n"
        "                e.g. binomial,knomial:4,chain::8k), each forced by a communicator hint,\n"
        "                measured in turns within each point; one record per algorithm\n"
        "  --algs-wan    --algs names the phase among the sites' leaders (isthmus_coll_wan_*)\n"
        "  --via p2p|coll  how loggp moves a message: MPI_Send/MPI_Recv (default), or a\n"
        "                broadcast between the two ranks (one message of a collective's\n"
        "                schedule: what libisthmus's collectives pay inside a site)\n"
        "  --max-time S  stop a point's repetitions after S seconds (at least 3 are kept)\n"
        "  --json        JSON lines (one record per point) instead of OSU-style columns\n"
        "  --label TEXT  free text stored in every record\n"
        "  --link SPEC   link settings stored in every record (default $ISTHMUS_BENCH_LINK)\n"
        "  --list        print the benchmarks and collectives, then exit\n",
        ism_bench_coll_list());
}

static void seterr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* A size in the grammar of every isthmus setting (src/common/units.h: 8, 64k, 1MiB; k =
 * 1024), so a size means the same here, in the CLI and in the environment. */
static int parse_size(const char *s, long long *out)
{
    int64_t v;
    if (s == NULL || ism_units_size(s, &v))
        return -1;
    *out = (long long)v;
    return 0;
}

static int parse_long(const char *s, long min, long *out)
{
    char *end;
    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

static int parse_sizes(const char *s, ism_bench_opts *o, char *err, size_t len)
{
    char buf[512];
    if (strlen(s) >= sizeof buf) {
        seterr(err, len, "-m %s: too long", s);
        return -1;
    }
    strcpy(buf, s);
    o->nsizes = 0;
    char *colon = strchr(buf, ':');
    if (colon != NULL) {
        long long lo, hi;
        *colon = '\0';
        if (parse_size(buf, &lo) || parse_size(colon + 1, &hi) || lo > hi) {
            seterr(err, len, "-m %s: expected MIN:MAX with MIN <= MAX, e.g. 1:4M", s);
            return -1;
        }
        if (lo == 0)
            o->sizes[o->nsizes++] = 0;
        for (long long v = lo == 0 ? 1 : lo; v <= hi; v *= 2) {
            if (o->nsizes == ISM_BENCH_MAX_LIST) {
                seterr(err, len, "-m %s: more than %d sizes", s, ISM_BENCH_MAX_LIST);
                return -1;
            }
            o->sizes[o->nsizes++] = v;
        }
        return 0;
    }
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        long long v;
        if (parse_size(tok, &v)) {
            seterr(err, len, "-m: '%s' is not " ISM_UNITS_SIZE_HELP, tok);
            return -1;
        }
        if (o->nsizes == ISM_BENCH_MAX_LIST) {
            seterr(err, len, "-m: more than %d sizes", ISM_BENCH_MAX_LIST);
            return -1;
        }
        o->sizes[o->nsizes++] = v;
    }
    if (o->nsizes == 0) {
        seterr(err, len, "-m: no sizes given");
        return -1;
    }
    return 0;
}

static int parse_int_list(const char *flag, const char *s, int *out, int *n, int min,
                          char *err, size_t len)
{
    char buf[512];
    if (strlen(s) >= sizeof buf) {
        seterr(err, len, "%s: too long", flag);
        return -1;
    }
    strcpy(buf, s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        long v;
        if (parse_long(tok, min, &v) || v > INT_MAX || *n == ISM_BENCH_MAX_LIST) {
            seterr(err, len, "%s: '%s' is not an integer >= %d", flag, tok, min);
            return -1;
        }
        out[(*n)++] = (int)v;
    }
    if (*n == 0) {
        seterr(err, len, "%s: empty list", flag);
        return -1;
    }
    return 0;
}

static int parse_fractions(const char *s, ism_bench_opts *o, char *err, size_t len)
{
    char buf[512];
    if (strlen(s) >= sizeof buf) {
        seterr(err, len, "--fractions: too long");
        return -1;
    }
    strcpy(buf, s);
    o->nfractions = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        double v = strtod(tok, &end);
        if (*end == '%')
            end++;
        if (end == tok || *end != '\0' || !(v > 0.0 && v <= 100.0) ||
            o->nfractions == ISM_BENCH_MAX_LIST) {
            seterr(err, len, "--fractions: '%s' is not a percentage in (0, 100]", tok);
            return -1;
        }
        o->fractions[o->nfractions++] = v;
    }
    return o->nfractions ? 0 : (seterr(err, len, "--fractions: empty list"), -1);
}

static int parse_ops(const char *s, ism_bench_opts *o, char *err, size_t len)
{
    char buf[512];
    if (strlen(s) >= sizeof buf) {
        seterr(err, len, "--op: too long");
        return -1;
    }
    strcpy(buf, s);
    o->nops = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!ism_bench_coll_known(tok)) {
            seterr(err, len, "--op %s: unknown collective (known: %s)", tok, ism_bench_coll_list());
            return -1;
        }
        if (o->nops == ISM_BENCH_MAX_LIST)
            return seterr(err, len, "--op: too many"), -1;
        snprintf(o->ops[o->nops++], sizeof o->ops[0], "%s", tok);
    }
    return o->nops ? 0 : (seterr(err, len, "--op: empty list"), -1);
}

/* --algs: the choices themselves are the library's to judge (a hint it refuses is an
 * error at the first point); here only their number and length */
static int parse_algs(const char *s, ism_bench_opts *o, char *err, size_t len)
{
    char buf[1024];
    if (strlen(s) >= sizeof buf) {
        seterr(err, len, "--algs: too long");
        return -1;
    }
    strcpy(buf, s);
    o->nalgs = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (strlen(tok) >= sizeof o->algs[0])
            return seterr(err, len, "--algs %s: too long", tok), -1;
        if (o->nalgs == ISM_BENCH_MAX_LIST)
            return seterr(err, len, "--algs: too many"), -1;
        snprintf(o->algs[o->nalgs++], sizeof o->algs[0], "%s", tok);
    }
    return o->nalgs ? 0 : (seterr(err, len, "--algs: empty list"), -1);
}

static int parse_bg_pairs(const char *s, ism_bench_opts *o, char *err, size_t len)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return seterr(err, len, "--bg-pairs: too long"), -1;
    strcpy(buf, s);
    o->nbg_pairs = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *colon = strchr(tok, ':');
        long a, b;
        if (colon == NULL)
            return seterr(err, len, "--bg-pairs: '%s' is not a:b", tok), -1;
        *colon = '\0';
        if (parse_long(tok, 0, &a) || parse_long(colon + 1, 0, &b) || a == b ||
            a > INT_MAX || b > INT_MAX || o->nbg_pairs == ISM_BENCH_MAX_LIST)
            return seterr(err, len, "--bg-pairs: '%s:%s' is not two different ranks", tok,
                          colon + 1), -1;
        o->bg_pairs[o->nbg_pairs][0] = (int)a;
        o->bg_pairs[o->nbg_pairs][1] = (int)b;
        o->nbg_pairs++;
    }
    return 0;
}

int ism_bench_parse_options(int argc, char **argv, ism_bench_opts *o, char *err, size_t len)
{
    memset(o, 0, sizeof *o);
    o->reps = 10;
    o->warmup = -1;
    o->window = 64;
    o->peer = 1;
    o->bg_size = 64 * 1024;
    o->link = getenv("ISTHMUS_BENCH_LINK");
    o->argc = argc;
    o->argv = argv;
    err[0] = '\0';
    if (argc < 2) {
        seterr(err, len, "give a benchmark (see --help)");
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
#define NEED_VALUE()                                                               \
    do {                                                                           \
        if (v == NULL) {                                                           \
            seterr(err, len, "%s needs a value", a);                               \
            return -1;                                                             \
        }                                                                          \
        i++;                                                                       \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            return 1;
        } else if (!strcmp(a, "--list")) {
            return 2;
        } else if (!strcmp(a, "-m")) {
            NEED_VALUE();
            if (parse_sizes(v, o, err, len))
                return -1;
            o->sizes_given = 1;
        } else if (!strcmp(a, "-i")) {
            NEED_VALUE();
            if (parse_long(v, 1, &n))
                return seterr(err, len, "-i %s: expected an integer >= 1", v), -1;
            o->iters = n;
        } else if (!strcmp(a, "-x")) {
            NEED_VALUE();
            if (parse_long(v, 0, &n))
                return seterr(err, len, "-x %s: expected an integer >= 0", v), -1;
            o->warmup = n;
        } else if (!strcmp(a, "-r")) {
            NEED_VALUE();
            if (parse_long(v, 1, &n) || n > 100000)
                return seterr(err, len, "-r %s: expected an integer in 1..100000", v), -1;
            o->reps = (int)n;
        } else if (!strcmp(a, "-W")) {
            NEED_VALUE();
            if (parse_long(v, 1, &n) || n > 100000)
                return seterr(err, len, "-W %s: expected an integer in 1..100000", v), -1;
            o->window = (int)n;
        } else if (!strcmp(a, "--peer")) {
            NEED_VALUE();
            if (parse_long(v, 1, &n) || n > INT_MAX)
                return seterr(err, len, "--peer %s: expected a rank >= 1", v), -1;
            o->peer = (int)n;
        } else if (!strcmp(a, "--partners")) {
            NEED_VALUE();
            if (parse_int_list(a, v, o->partners, &o->npartners, 1, err, len))
                return -1;
        } else if (!strcmp(a, "--fractions")) {
            NEED_VALUE();
            if (parse_fractions(v, o, err, len))
                return -1;
        } else if (!strcmp(a, "--background")) {
            NEED_VALUE();
            if (!strcmp(v, "none"))
                o->background = BG_NONE;
            else if (!strcmp(v, "pairs"))
                o->background = BG_PAIRS;
            else if (!strcmp(v, "alltoall"))
                o->background = BG_ALLTOALL;
            else
                return seterr(err, len, "--background %s: expected none, pairs or alltoall", v), -1;
        } else if (!strcmp(a, "--bg-size")) {
            NEED_VALUE();
            if (parse_size(v, &o->bg_size) || o->bg_size > INT_MAX)
                return seterr(err, len, "--bg-size %s: expected a size such as 64k", v), -1;
        } else if (!strcmp(a, "--bg-pairs")) {
            NEED_VALUE();
            if (parse_bg_pairs(v, o, err, len))
                return -1;
        } else if (!strcmp(a, "--op")) {
            NEED_VALUE();
            if (parse_ops(v, o, err, len))
                return -1;
        } else if (!strcmp(a, "--nonblocking")) {
            o->nonblocking = 1;
        } else if (!strcmp(a, "--algs")) {
            NEED_VALUE();
            if (parse_algs(v, o, err, len))
                return -1;
        } else if (!strcmp(a, "--algs-wan")) {
            o->algs_wan = 1;
        } else if (!strcmp(a, "--via")) {
            NEED_VALUE();
            if (strcmp(v, "p2p") && strcmp(v, "coll"))
                return seterr(err, len, "--via %s: expected p2p or coll", v), -1;
            o->via_coll = !strcmp(v, "coll");
        } else if (!strcmp(a, "--max-time")) {
            NEED_VALUE();
            char *end;
            o->max_time = strtod(v, &end);
            if (end == v || *end != '\0' || !(o->max_time > 0.0))
                return seterr(err, len, "--max-time %s: expected seconds > 0", v), -1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--label")) {
            NEED_VALUE();
            o->label = v;
        } else if (!strcmp(a, "--link")) {
            NEED_VALUE();
            o->link = v;
        } else if (a[0] == '-') {
            return seterr(err, len, "unknown option %s (see --help)", a), -1;
        } else if (o->benchmark == NULL) {
            int known = 0;
            for (int k = 0; BENCHMARKS[k]; k++)
                known |= !strcmp(BENCHMARKS[k], a);
            if (!known)
                return seterr(err, len, "unknown benchmark '%s' (known: latency, bw, bibw, msgrate, "
                              "placement, one2many, many2one, interference, coll, a2a-fraction, loggp)", a), -1;
            o->benchmark = a;
        } else {
            return seterr(err, len, "unexpected argument '%s' (one benchmark per run)", a), -1;
        }
#undef NEED_VALUE
    }
    if (o->benchmark == NULL)
        return seterr(err, len, "give a benchmark (see --help)"), -1;
    if ((o->nalgs || o->algs_wan) && strcmp(o->benchmark, "coll"))
        return seterr(err, len, "--algs and --algs-wan are options of coll"), -1;
    if (o->algs_wan && !o->nalgs)
        return seterr(err, len, "--algs-wan needs --algs"), -1;
    for (int k = 0; k < o->nsizes; k++)
        if (o->sizes[k] > INT_MAX)
            return seterr(err, len, "-m: size %lld is above INT_MAX bytes", o->sizes[k]), -1;
    if (o->nfractions == 0) {
        const double def[] = {100.0, 50.0, 25.0, 12.5};
        for (int k = 0; k < 4; k++)
            o->fractions[k] = def[k];
        o->nfractions = 4;
    }
    return 0;
}

long ism_bench_iters(const ism_bench_ctx *c, long long size)
{
    if (c->opt.iters > 0)
        return c->opt.iters;
    return size <= 8192 ? 100 : 20;
}

long ism_bench_warmup(const ism_bench_ctx *c, long iters)
{
    return c->opt.warmup >= 0 ? c->opt.warmup : iters;
}
