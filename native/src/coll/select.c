/* select.c: which algorithm a collective phase runs. In order of precedence:
 *
 *   1. a communicator hint, isthmus_coll_<coll> (the phase inside a site, or the whole
 *      collective on a communicator within one site) or isthmus_coll_wan_<coll> (the
 *      phase among the sites' leaders), set with MPI_Comm_set_info; this is how a
 *      program (and the test suite) runs each algorithm in turn within one job;
 *   2. the environment, ISTHMUS_COLL_<COLL> and ISTHMUS_COLL_WAN_<COLL>;
 *   3. the selection table (table.c), by group size and message size;
 *   4. the default (coll/twolevel.c, vendor_default and algs_default): inside a site
 *      the vendor's collective, except barrier and the reductions on a communicator
 *      within one site, which run our schedules, and scan, exscan and reduce-scatter,
 *      whose default was always ours; between leaders the direct exchange.
 *
 * A choice is "algorithm[:radix[:segment]]" (radix 2.., segment a size such as 64KiB;
 * an empty or 0 field keeps the default). An algorithm that needs a commutative op falls
 * back to the default for a non-commutative one, as MPICH does. Every rank of a
 * communicator must make the same choice, like MPICH's control variables: hints,
 * environment and table must be the same everywhere.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/units.h"
#include "coll.h"

static ism_coll_choice env_choice[ISM_COLL_N][ISM_LVL_N];
static int env_set[ISM_COLL_N][ISM_LVL_N];
/* calls per collective, level and algorithm (index alg + 3) */
#define NALG 16
static uint64_t counts[ISM_COLL_N][ISM_LVL_N][NALG + 3];

struct ism_coll_hints {
    int set[ISM_COLL_N][ISM_LVL_N];
    ism_coll_choice ch[ISM_COLL_N][ISM_LVL_N];
    char text[ISM_COLL_N][ISM_LVL_N][96];
};

static const char *const level_names[ISM_LVL_N] = {"intra", "wan"};

const char *ism_coll_alg_name(int coll, int alg)
{
    if (alg == ISM_ALG_VENDOR)
        return "vendor";
    if (alg == ISM_ALG_PIPELINE)
        return "pipeline";
    if (alg == ISM_ALG_DEFAULT)
        return "default";
    const ism_coll_alg *a = ism_coll_algs(coll);
    return a && alg >= 0 ? a[alg].name : "?";
}

static void known_list(int coll, int lvl, char *buf, size_t n)
{
    const ism_coll_alg *a = ism_coll_algs(coll);
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; a && a[i].name && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", a[i].name);
    if (lvl == ISM_LVL_INTRA && at < n) /* every collective has the vendor's inside a site */
        at += (size_t)snprintf(buf + at, n - at, ", vendor");
    if (lvl == ISM_LVL_WAN && coll == ISM_COLL_ALLREDUCE && at < n)
        snprintf(buf + at, n - at, ", pipeline");
}

int ism_coll_parse_choice(int coll, int lvl, const char *s, ism_coll_choice *out,
                          char *why, size_t whylen)
{
    char name[64], f2[64] = "", f3[64] = "";
    const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    size_t ln = c1 ? (size_t)(c1 - s) : strlen(s);
    if (ln == 0 || ln >= sizeof name || (c1 && strlen(c1) >= sizeof f2) ||
        (c2 && strchr(c2 + 1, ':'))) {
        snprintf(why, whylen, "\"%s\" is not of the form algorithm[:radix[:segment]]", s);
        return -1;
    }
    memcpy(name, s, ln);
    name[ln] = 0;
    if (c1) {
        size_t l2 = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
        memcpy(f2, c1 + 1, l2);
        f2[l2] = 0;
        if (c2)
            snprintf(f3, sizeof f3, "%s", c2 + 1);
    }
    ism_coll_choice ch = {ISM_ALG_DEFAULT, 0, 0};
    int radix_ok = 0, seg_ok = 0;
    if (!strcmp(name, "default")) {
        ch.alg = ISM_ALG_DEFAULT;
    } else if (!strcmp(name, "vendor") && lvl == ISM_LVL_INTRA) {
        ch.alg = ISM_ALG_VENDOR;
    } else if (!strcmp(name, "pipeline") && lvl == ISM_LVL_WAN && coll == ISM_COLL_ALLREDUCE) {
        ch.alg = ISM_ALG_PIPELINE;
        seg_ok = 1;
    } else if ((ch.alg = ism_coll_alg_by_name(coll, name)) >= 0) {
        radix_ok = ism_coll_algs(coll)[ch.alg].radix;
        seg_ok = ism_coll_algs(coll)[ch.alg].seg;
    } else {
        char list[400];
        known_list(coll, lvl, list, sizeof list);
        snprintf(why, whylen, "unknown %s algorithm \"%s\" at level %s; known: %s",
                 ism_coll_name(coll), name, level_names[lvl], list);
        return -1;
    }
    if (f2[0]) {
        char *e;
        long r = strtol(f2, &e, 10);
        if (*e || r < 0 || r == 1 || r > 64 || (r && !radix_ok)) {
            snprintf(why, whylen, r && !radix_ok && !*e ? "%s takes no radix" :
                     "radix \"%s\" must be 2..64", r && !radix_ok && !*e ? name : f2);
            return -1;
        }
        ch.radix = (int)r;
    }
    if (f3[0]) {
        if (ism_units_size(f3, &ch.seg)) {
            snprintf(why, whylen, "segment \"%s\" is not " ISM_UNITS_SIZE_HELP, f3);
            return -1;
        }
        if (ch.seg && !seg_ok) {
            snprintf(why, whylen, "%s takes no segment size", name);
            return -1;
        }
    }
    *out = ch;
    return 0;
}

int ism_coll_init(void)
{
    char var[64], why[600];
    for (int c = 0; c < ISM_COLL_N; c++)
        for (int l = 0; l < ISM_LVL_N; l++) {
            snprintf(var, sizeof var, "ISTHMUS_COLL_%s%s", l ? "WAN_" : "", ism_coll_name(c));
            for (char *p = var; *p; p++)
                *p = (char)toupper((unsigned char)*p);
            const char *v = getenv(var);
            env_set[c][l] = 0;
            if (!v || !*v)
                continue;
            if (ism_coll_parse_choice(c, l, v, &env_choice[c][l], why, sizeof why)) {
                fprintf(stderr, "isthmus: %s: %s\n", var, why);
                return ISM_ERR_ARG;
            }
            env_set[c][l] = 1;
        }
    const char *t = getenv("ISTHMUS_COLL_TABLE");
    if (t && *t)
        return ism_coll_table_load(t);
    return 0;
}

ism_coll_choice ism_coll_select(ism_comm *c, int coll, int lvl, int p, int64_t bytes,
                                int commute)
{
    ism_coll_choice ch = {ISM_ALG_DEFAULT, 0, 0};
    const ism_coll_hints *h = c->coll ? c->coll->hints : NULL;
    if (h && h->set[coll][lvl])
        ch = h->ch[coll][lvl];
    else if (env_set[coll][lvl])
        ch = env_choice[coll][lvl];
    else
        ism_coll_table_lookup(coll, lvl, p, bytes, &ch);
    if (ch.alg >= 0 && ism_coll_algs(coll)[ch.alg].commute_only && !commute)
        ch.alg = ISM_ALG_DEFAULT;
    return ch;
}

void ism_coll_count(int coll, int lvl, int alg)
{
    if (alg + 3 >= 0 && alg + 3 < NALG + 3)
        counts[coll][lvl][alg + 3]++;
}

void ism_coll_finalize(void)
{
    if (ism_core_knob(ISM_K_COLL_STATS, 0) != 0) {
        for (int c = 0; c < ISM_COLL_N; c++)
            for (int l = 0; l < ISM_LVL_N; l++)
                for (int a = 0; a < NALG + 3; a++)
                    if (counts[c][l][a])
                        fprintf(stderr, "isthmus coll: site %s rank %d: %s %s %s: %llu calls\n",
                                ism_site_name(ism.lay.site), ism.grank, ism_coll_name(c),
                                level_names[l], ism_coll_alg_name(c, a - 3),
                                (unsigned long long)counts[c][l][a]);
        fprintf(stderr,
                "isthmus coll: site %s rank %d: temporaries: %llu schedules, %llu allocations, "
                "%llu skewed copies, %llu shared-memory messages; skewed path below %zu bytes\n",
                ism_site_name(ism.lay.site), ism.grank, (unsigned long long)ism_coll_temps.runs,
                (unsigned long long)ism_coll_temps.allocs,
                (unsigned long long)ism_coll_temps.skewed,
                (unsigned long long)ism_coll_temps.shm_msgs, ism_coll_skew_limit());
    }
    ism_coll_table_free();
}

/* ---- communicator hints ---- */

int ism_coll_hint(ism_comm *c, const char *key, const char *value, const char **why)
{
    static char msg[600];
    const char *pre = "isthmus_coll_";
    if (strncmp(key, pre, strlen(pre)))
        return 0;
    const char *rest = key + strlen(pre);
    int lvl = ISM_LVL_INTRA;
    if (!strncmp(rest, "wan_", 4)) {
        lvl = ISM_LVL_WAN;
        rest += 4;
    }
    int coll = ism_coll_by_name(rest);
    if (coll < 0) {
        snprintf(msg, sizeof msg, "unknown collective in hint \"%s\"", key);
        *why = msg;
        return -ISM_ERR_ARG;
    }
    ism_coll_choice ch;
    char w[560];
    if (ism_coll_parse_choice(coll, lvl, value, &ch, w, sizeof w)) {
        snprintf(msg, sizeof msg, "hint %s: %s", key, w);
        *why = msg;
        return -ISM_ERR_ARG;
    }
    ism_coll_comm *st = ism_coll_state(c);
    if (!st)
        return -ISM_ERR_NO_MEM;
    if (!st->hints && !(st->hints = calloc(1, sizeof *st->hints)))
        return -ISM_ERR_NO_MEM;
    st->hints->set[coll][lvl] = ch.alg != ISM_ALG_DEFAULT;
    st->hints->ch[coll][lvl] = ch;
    snprintf(st->hints->text[coll][lvl], sizeof st->hints->text[coll][lvl], "%s", value);
    return 1;
}

void ism_coll_hints_each(ism_comm *c, void (*fn)(void *arg, const char *k, const char *v),
                         void *arg)
{
    const ism_coll_hints *h = c->coll ? c->coll->hints : NULL;
    for (int k = 0; h && k < ISM_COLL_N; k++)
        for (int l = 0; l < ISM_LVL_N; l++)
            if (h->set[k][l]) {
                char key[64];
                snprintf(key, sizeof key, "isthmus_coll_%s%s", l ? "wan_" : "",
                         ism_coll_name(k));
                fn(arg, key, h->text[k][l]);
            }
}

int ism_coll_copy_hints(const ism_comm *from, ism_comm *to)
{
    if (!from->coll || !from->coll->hints)
        return 0;
    ism_coll_comm *st = ism_coll_state(to);
    if (!st || (!st->hints && !(st->hints = malloc(sizeof *st->hints))))
        return ISM_ERR_NO_MEM;
    *st->hints = *from->coll->hints;
    return 0;
}
