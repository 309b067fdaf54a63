/* layout.c: the strict reading of the job layout (layout.h) shared by app ranks and
 * gateways. Before it, the library ignored junk (atoi of "2x" is 2) where the gateway
 * stopped, and the two could read one environment as two different jobs. */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 32

/* A list entry [p, p + n) as a whole decimal number in [lo, hi]: digits only, no sign,
 * no blanks, no overflow. */
static int entry_number(const char *p, size_t n, long lo, long hi, long *v)
{
    long x = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        x = x * 10 + (p[i] - '0');
        if (x > hi)
            return -1;
    }
    if (x < lo)
        return -1;
    *v = x;
    return 0;
}

static int entries(const char *s)
{
    int n = 1;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    return n;
}

/* One comma list of numbers in [lo, hi] with exactly `want` entries (any count >= 1 when
 * want is 0) into a new array; *count gets the count. */
static int number_list(const char *var, const char *s, int want, long lo, long hi,
                       const char *what, int **out, int *count, char *err, size_t errlen)
{
    int n = entries(s);
    if (want && n != want) {
        snprintf(err, errlen, "%s=%s lists %d site%s, ISTHMUS_SITE_RANKS lists %d; allowed: "
                              "one entry per site",
                 var, s, n, n == 1 ? "" : "s", want);
        return -1;
    }
    int *v = calloc((size_t)n, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "%s=%s: out of memory", var, s);
        return -1;
    }
    const char *p = s;
    for (int i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        long x;
        if (entry_number(p, len, lo, hi, &x)) {
            snprintf(err, errlen, "%s=%s: entry %d (\"%.*s\") is not allowed; allowed: a comma "
                                  "list of %s, each a whole number from %ld to %ld",
                     var, s, i + 1, (int)(len > 40 ? 40 : len), p, what, lo, hi);
            free(v);
            return -1;
        }
        v[i] = (int)x;
        p = end ? end + 1 : p + len;
    }
    *out = v;
    *count = n;
    return 0;
}

static int name_ok(const char *p, size_t n)
{
    if (n < 1 || n > NAME_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

static int name_list(const char *s, int want, char ***out, char *err, size_t errlen)
{
    char **v = calloc((size_t)want, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "ISTHMUS_SITE_NAMES: out of memory");
        return -1;
    }
    int n = s ? entries(s) : want;
    if (n != want) {
        snprintf(err, errlen, "ISTHMUS_SITE_NAMES=%s lists %d site%s, ISTHMUS_SITE_RANKS lists "
                              "%d; allowed: one name per site",
                 s, n, n == 1 ? "" : "s", want);
        free(v);
        return -1;
    }
    const char *p = s;
    for (int i = 0; i < want; i++) {
        char def[16];
        const char *name = def;
        size_t len;
        if (s) {
            const char *end = strchr(p, ',');
            len = end ? (size_t)(end - p) : strlen(p);
            if (!name_ok(p, len)) {
                snprintf(err, errlen, "ISTHMUS_SITE_NAMES=%s: name %d (\"%.*s\") is not allowed; "
                                      "allowed: 1-%d letters, digits, '_', '.', '-'",
                         s, i + 1, (int)(len > 40 ? 40 : len), p, NAME_MAX_LEN);
                for (int k = 0; k < i; k++)
                    free(v[k]);
                free(v);
                return -1;
            }
            name = p;
            p = end ? end + 1 : p + len;
        } else {
            snprintf(def, sizeof def, "%c", 'A' + i % 26);
            len = strlen(def);
        }
        if (!(v[i] = strndup(name, len))) {
            snprintf(err, errlen, "ISTHMUS_SITE_NAMES: out of memory");
            for (int k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return -1;
        }
    }
    *out = v;
    return 0;
}

int ism_layout_parse(const char *site, const char *ranks, const char *gws, const char *names,
                     ism_layout *out, char *err, size_t errlen)
{
    ism_layout l = {0};
    const char *unset = !site ? "ISTHMUS_SITE" : !ranks ? "ISTHMUS_SITE_RANKS" : !gws ? "ISTHMUS_SITE_GATEWAYS" : NULL;
    memset(out, 0, sizeof *out);
    if (unset) {
        snprintf(err, errlen, "%s is not set; allowed: the job layout `isthmus run` writes", unset);
        return -1;
    }
    if (number_list("ISTHMUS_SITE_RANKS", ranks, 0, 1, ISM_LAYOUT_MAX_RANKS, "app ranks per site",
                    &l.site_ranks, &l.nsites, err, errlen))
        return -1;
    int ngws;
    if (number_list("ISTHMUS_SITE_GATEWAYS", gws, l.nsites, 1, ISM_LAYOUT_MAX_RANKS,
                    "gateways per site", &l.site_gws, &ngws, err, errlen))
        goto fail;
    long s;
    if (entry_number(site, strlen(site), 0, l.nsites - 1, &s)) {
        snprintf(err, errlen, "ISTHMUS_SITE=%s is not allowed; allowed: a site index from 0 to %d "
                              "(ISTHMUS_SITE_RANKS=%s lists %d site%s)",
                 site, l.nsites - 1, ranks, l.nsites, l.nsites == 1 ? "" : "s");
        goto fail;
    }
    l.site = (int)s;
    l.site_off = calloc((size_t)l.nsites + 1, sizeof(int));
    if (!l.site_off) {
        snprintf(err, errlen, "job layout: out of memory");
        goto fail;
    }
    long total = 0;
    for (int i = 0; i < l.nsites; i++) {
        total += l.site_ranks[i];
        if (total > ISM_LAYOUT_MAX_RANKS) {
            snprintf(err, errlen, "ISTHMUS_SITE_RANKS=%s adds up to more than %d app ranks; "
                                  "allowed: at most %d in a job",
                     ranks, ISM_LAYOUT_MAX_RANKS, ISM_LAYOUT_MAX_RANKS);
            goto fail;
        }
        l.site_off[i + 1] = (int)total;
    }
    l.gsize = (int)total;
    if (name_list(names, l.nsites, &l.site_names, err, errlen))
        goto fail;
    *out = l;
    return 0;
fail:
    ism_layout_free(&l);
    return -1;
}

int ism_layout_from_env(ism_layout *out, char *err, size_t errlen)
{
    return ism_layout_parse(getenv("ISTHMUS_SITE"), getenv("ISTHMUS_SITE_RANKS"),
                            getenv("ISTHMUS_SITE_GATEWAYS"), getenv("ISTHMUS_SITE_NAMES"), out,
                            err, errlen);
}

void ism_layout_free(ism_layout *l)
{
    if (l->site_names)
        for (int i = 0; i < l->nsites; i++)
            free(l->site_names[i]);
    free(l->site_names);
    free(l->site_ranks);
    free(l->site_gws);
    free(l->site_off);
    memset(l, 0, sizeof *l);
}
