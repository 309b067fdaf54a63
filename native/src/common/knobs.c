/* knobs.c: the table of knobs.def and the strict reading of its variables (knobs.h). */
#define _GNU_SOURCE
#include "knobs.h"

#include <sched.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

#define LIB ISM_KNOB_LIB
#define GW ISM_KNOB_GW
#define RUN ISM_KNOB_RUN
const ism_knob ism_knobs[ISM_K_N] = {
#define ISM_KNOB(id, kind, unit, lo, hi, def, users, doc)                                      \
    {"ISTHMUS_" #id, ISM_KNOB_##kind, unit, (double)(lo), (double)(hi), def, users, doc},
#include "knobs.def"
#undef ISM_KNOB
};
#undef LIB
#undef GW
#undef RUN

/* A number as the knob's kind writes it: sizes with their binary suffix (1m), others
 * as the shortest decimal (1e+15 stays readable). */
static void number_text(const ism_knob *k, double v, char *buf, size_t len)
{
    if (k->kind == ISM_KNOB_SIZE)
        ism_units_size_text((int64_t)v, buf, len);
    else
        snprintf(buf, len, "%.15g", v);
}

/* What a value of each kind is, in words (a duration's unit, ENUM's choices and the
 * ranges come after). */
static const char *kind_text(ism_knob_kind kind)
{
    switch (kind) {
    case ISM_KNOB_SIZE: return ISM_UNITS_SIZE_HELP;
    case ISM_KNOB_COUNT: return "a whole number";
    case ISM_KNOB_BOOL: return "0 or 1";
    case ISM_KNOB_DURATION: return "a duration in";
    case ISM_KNOB_RATE: return ISM_UNITS_RATE_HELP;
    case ISM_KNOB_RATIO: return "a number (e.g. 0.5 or 50%)";
    case ISM_KNOB_ENUM: return "one of ";
    case ISM_KNOB_NAME: return "a name of 1 to 15 lowercase letters, digits or _";
    case ISM_KNOB_FILE: return "a file name";
    case ISM_KNOB_CHOICE: return "a choice as docs/model.md describes";
    }
    return "?";
}

static int numeric(ism_knob_kind kind)
{
    return kind == ISM_KNOB_SIZE || kind == ISM_KNOB_COUNT || kind == ISM_KNOB_DURATION ||
           kind == ISM_KNOB_RATE || kind == ISM_KNOB_RATIO;
}

void ism_knob_allowed(ism_knob_id id, char *buf, size_t len)
{
    const ism_knob *k = &ism_knobs[id];
    size_t n = (size_t)snprintf(buf, len, "%s", kind_text(k->kind));
    if (k->kind == ISM_KNOB_DURATION && n < len)
        n += (size_t)snprintf(buf + n, len - n, " %s (a number, or with a unit: ns, us, ms, s)",
                              k->unit);
    for (const char *p = k->unit; k->kind == ISM_KNOB_ENUM && *p && n + 3 < len; p++)
        n += (size_t)(*p == '|' ? snprintf(buf + n, len - n, ", ")
                                : snprintf(buf + n, len - n, "%c", *p));
    if (numeric(k->kind) && n < len) {
        char lo[32], hi[32];
        number_text(k, k->min, lo, sizeof lo);
        number_text(k, k->max, hi, sizeof hi);
        snprintf(buf + n, len - n, " from %s to %s%s%s", lo, hi, *k->unit ? " " : "", k->unit);
    }
}

static int enum_has(const char *choices, const char *text)
{
    size_t n = strlen(text);
    for (const char *p = choices; *p;) {
        size_t m = strcspn(p, "|");
        if (m == n && !strncmp(p, text, n))
            return 1;
        p += m + (p[m] == '|');
    }
    return 0;
}

/* The text as a value of kind k, range not yet checked; -1 if it is not one. */
static int parse_kind(const ism_knob *k, const char *text, ism_knob_val *out)
{
    int64_t i;
    out->str = text;
    out->num = 0;
    switch (k->kind) {
    case ISM_KNOB_SIZE:
        if (ism_units_size(text, &i))
            return -1;
        out->num = (double)i;
        return 0;
    case ISM_KNOB_COUNT:
        if (ism_units_count(text, &i))
            return -1;
        out->num = (double)i;
        return 0;
    case ISM_KNOB_BOOL:
        if (strcmp(text, "0") && strcmp(text, "1"))
            return -1;
        out->num = text[0] == '1';
        return 0;
    case ISM_KNOB_DURATION: {
        double unit_s = !strcmp(k->unit, "us") ? 1e-6 : !strcmp(k->unit, "ms") ? 1e-3 : 1;
        return ism_units_duration(text, unit_s, &out->num);
    }
    case ISM_KNOB_RATE:
        return ism_units_rate(text, &out->num);
    case ISM_KNOB_RATIO:
        return ism_units_fraction(text, &out->num);
    case ISM_KNOB_ENUM:
        return enum_has(k->unit, text) ? 0 : -1;
    case ISM_KNOB_NAME: {
        size_t n = strlen(text);
        return n >= 1 && n <= 15 && strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_") == n
                   ? 0
                   : -1;
    }
    case ISM_KNOB_FILE:
    case ISM_KNOB_CHOICE:
        return 0;
    }
    return -1;
}

int ism_knob_parse(ism_knob_id id, const char *text, ism_knob_val *out, char *err,
                   size_t errlen)
{
    const ism_knob *k = &ism_knobs[id];
    ism_knob_val v;
    if (parse_kind(k, text, &v) == 0 &&
        (!numeric(k->kind) || (v.num >= k->min && v.num <= k->max))) {
        *out = v;
        return 0;
    }
    char allowed[256];
    ism_knob_allowed(id, allowed, sizeof allowed);
    snprintf(err, errlen, "%s=%s: expected %s", k->name, text, allowed);
    return -1;
}

int ism_knob_env(ism_knob_id id, ism_knob_val *out, char *err, size_t errlen)
{
    const char *v = getenv(ism_knobs[id].name);
    if (!v || !*v || ism_knobs[id].kind == ISM_KNOB_CHOICE)
        return 0;
    return ism_knob_parse(id, v, out, err, errlen) ? -1 : 1;
}

int ism_knobs_check_env(unsigned users, void (*bad)(const char *line, void *arg), void *arg)
{
    int n = 0;
    for (int id = 0; id < ISM_K_N; id++) {
        ism_knob_val v;
        char err[512];
        if ((ism_knobs[id].users & users) &&
            ism_knob_env((ism_knob_id)id, &v, err, sizeof err) < 0) {
            bad(err, arg);
            n++;
        }
    }
    return n;
}

void ism_knob_print_bad(const char *line, void *arg)
{
    (void)arg;
    fprintf(stderr, "isthmus: %s\n", line);
}

double ism_knob_or_exit(ism_knob_id id, double def, int code)
{
    ism_knob_val v;
    char err[512];
    int rc = ism_knob_env(id, &v, err, sizeof err);
    if (rc < 0) {
        ism_knob_print_bad(err, NULL);
        exit(code);
    }
    return rc ? v.num : def;
}

int ism_knob_auto(ism_knob_id id)
{
    if (id != ISM_K_WAN_SEAL_WORKERS)
        return -1;
    cpu_set_t set;
    int cpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = CPU_COUNT(&set);
    int w = cpus - 2;
    return w < 0 ? 0 : w > 3 ? 3 : w;
}
