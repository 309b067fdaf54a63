/* table.c: the selection table: which algorithm each collective phase uses, by level
 * (inside a site, between sites), group size and message size. `isthmus model tune`
 * writes it; MPI_Init reads it from ISTHMUS_COLL_TABLE. The format (docs/model.md):
 *
 *   {"format": "isthmus-coll-table", "version": 1,
 *    "rules": [{"coll": "allreduce", "level": "intra", "ranks": [2, 8],
 *               "bytes": [0, 65535], "algorithm": "recursive_doubling"}, ...]}
 *
 * "ranks" and "bytes" are inclusive ranges ([min, null]: no upper bound), either may be
 * left out (any); "algorithm" is a name of docs/model.md's list, "vendor", or
 * "pipeline", optionally with ":radix:segment", or with "radix" and "segment" fields.
 * The first rule that matches wins. Anything wrong is an error naming the file and the
 * rule, so a table never silently does less than it says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "json.h"

#define MAX_RULES 4096
#define MAX_FILE (4 << 20)

typedef struct rule {
    int coll, lvl;
    int64_t pmin, pmax, bmin, bmax;
    ism_coll_choice ch;
} rule;

static rule *rules;
static int nrules;

void ism_coll_table_free(void)
{
    free(rules);
    rules = NULL;
    nrules = 0;
}

int ism_coll_table_lookup(int coll, int lvl, int p, int64_t bytes, ism_coll_choice *out)
{
    for (int i = 0; i < nrules; i++) {
        const rule *r = &rules[i];
        if (r->coll == coll && r->lvl == lvl && p >= r->pmin && p <= r->pmax &&
            bytes >= r->bmin && bytes <= r->bmax) {
            *out = r->ch;
            return 1;
        }
    }
    return 0;
}

static int whole(const ism_json *j, int64_t *v)
{
    if (j->type != ISM_JSON_NUM || j->num < 0 || j->num > 9e15 || j->num != (double)(int64_t)j->num)
        return -1;
    *v = (int64_t)j->num;
    return 0;
}

/* [min, max] with max null for no bound, or a single number */
static int range(const ism_json *j, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = INT64_MAX;
    if (!j)
        return 0;
    if (j->type == ISM_JSON_NUM)
        return whole(j, lo) ? -1 : (*hi = *lo, 0);
    if (j->type != ISM_JSON_ARR || j->n != 2 || whole(&j->items[0], lo))
        return -1;
    if (j->items[1].type == ISM_JSON_NULL)
        return 0;
    return whole(&j->items[1], hi) || *hi < *lo ? -1 : 0;
}

static int rule_of(const ism_json *o, rule *r, char *why, size_t wl)
{
    static const char *const known[] = {"coll", "level", "ranks", "bytes", "algorithm", "radix",
                                        "segment", "predicted_us", "measured_us", "note"};
    if (o->type != ISM_JSON_OBJ)
        return snprintf(why, wl, "is not an object"), -1;
    for (int i = 0; i < o->n; i++) {
        unsigned k = 0;
        while (k < sizeof known / sizeof *known && strcmp(known[k], o->keys[i]))
            k++;
        if (k == sizeof known / sizeof *known)
            return snprintf(why, wl, "unknown field \"%s\"", o->keys[i]), -1;
    }
    const ism_json *c = ism_json_get(o, "coll"), *l = ism_json_get(o, "level"),
                   *a = ism_json_get(o, "algorithm");
    if (!c || c->type != ISM_JSON_STR || (r->coll = ism_coll_by_name(c->str)) < 0)
        return snprintf(why, wl, "\"coll\" must name a collective (barrier, bcast, reduce, "
                                 "allreduce, reduce_scatter, scan, exscan, allgather, "
                                 "alltoall)"), -1;
    r->lvl = ISM_LVL_INTRA;
    if (l && (l->type != ISM_JSON_STR ||
              (strcmp(l->str, "intra") && strcmp(l->str, "wan"))))
        return snprintf(why, wl, "\"level\" must be \"intra\" or \"wan\""), -1;
    if (l && !strcmp(l->str, "wan"))
        r->lvl = ISM_LVL_WAN;
    if (range(ism_json_get(o, "ranks"), &r->pmin, &r->pmax))
        return snprintf(why, wl, "\"ranks\" must be a count or [min, max] (max may be null)"), -1;
    if (range(ism_json_get(o, "bytes"), &r->bmin, &r->bmax))
        return snprintf(why, wl, "\"bytes\" must be a size or [min, max] (max may be null)"), -1;
    if (!a || a->type != ISM_JSON_STR)
        return snprintf(why, wl, "\"algorithm\" (a string) is missing"), -1;
    char spec[256];
    const ism_json *rx = ism_json_get(o, "radix"), *sg = ism_json_get(o, "segment");
    int64_t radix = 0, seg = 0;
    if ((rx && whole(rx, &radix)) || (sg && whole(sg, &seg)))
        return snprintf(why, wl, "\"radix\" and \"segment\" must be whole numbers"), -1;
    if ((rx || sg) && strchr(a->str, ':'))
        return snprintf(why, wl, "give radix and segment either in \"algorithm\" or as fields"), -1;
    if (rx || sg)
        snprintf(spec, sizeof spec, "%s:%s%lld:%s%lld", a->str, rx ? "" : "0",
                 (long long)radix, sg ? "" : "0", (long long)seg);
    else
        snprintf(spec, sizeof spec, "%s", a->str);
    return ism_coll_parse_choice(r->coll, r->lvl, spec, &r->ch, why, wl) ? -1 : 0;
}

static int bad(const char *path, const char *what)
{
    fprintf(stderr, "isthmus: collective selection table %s: %s\n", path, what);
    return ISM_ERR_ARG;
}

int ism_coll_table_load(const char *path)
{
    char why[512];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, sizeof why, "cannot open it (ISTHMUS_COLL_TABLE)");
        return bad(path, why);
    }
    char *text = malloc(MAX_FILE + 1);
    size_t n = text ? fread(text, 1, MAX_FILE + 1, f) : 0;
    fclose(f);
    if (!text)
        return bad(path, "out of memory");
    if (n > MAX_FILE) {
        free(text);
        return bad(path, "larger than 4 MiB");
    }
    ism_json doc;
    if (ism_json_parse(text, n, &doc, why, sizeof why)) {
        free(text);
        return bad(path, why);
    }
    free(text);
    int rc = 0;
    const ism_json *fmt = ism_json_get(&doc, "format"), *ver = ism_json_get(&doc, "version"),
                   *rl = ism_json_get(&doc, "rules");
    if (doc.type != ISM_JSON_OBJ || !fmt || fmt->type != ISM_JSON_STR ||
        strcmp(fmt->str, "isthmus-coll-table"))
        rc = bad(path, "not a selection table (\"format\": \"isthmus-coll-table\" missing)");
    else if (!ver || ver->type != ISM_JSON_NUM || ver->num != 1)
        rc = bad(path, "unsupported \"version\" (this isthmus reads version 1)");
    else if (!rl || rl->type != ISM_JSON_ARR)
        rc = bad(path, "\"rules\" (an array) is missing");
    else if (rl->n > MAX_RULES)
        rc = bad(path, "more than 4096 rules");
    rule *nr = rc ? NULL : calloc((size_t)(rl->n ? rl->n : 1), sizeof *nr);
    if (!rc && !nr)
        rc = bad(path, "out of memory");
    for (int i = 0; !rc && i < rl->n; i++) {
        char msg[700];
        if (rule_of(&rl->items[i], &nr[i], why, sizeof why)) {
            const ism_json *c = ism_json_get(&rl->items[i], "coll");
            snprintf(msg, sizeof msg, "rule %d%s%s%s: %s", i + 1,
                     c && c->type == ISM_JSON_STR ? " (" : "",
                     c && c->type == ISM_JSON_STR ? c->str : "",
                     c && c->type == ISM_JSON_STR ? ")" : "", why);
            rc = bad(path, msg);
        }
    }
    if (!rc) {
        ism_coll_table_free();
        rules = nr;
        nrules = rl->n;
    } else {
        free(nr);
    }
    ism_json_free(&doc);
    return rc;
}
