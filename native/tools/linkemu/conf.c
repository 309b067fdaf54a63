/* conf.c: parser of the numeric link settings (see conf.h). */
#include "conf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int num(const char *key, const char *s, double lo, double hi, double *out,
               char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, errlen, "%s=%s: expected a number in [%g, %g]", key, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int ge(const char *s, ism_le_link_conf *c, char *err, size_t errlen)
{
    double v[4];
    const char *p = s;
    char part[64];
    for (int i = 0; i < 4; i++) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if ((slash == NULL) != (i == 3) || n == 0 || n >= sizeof part) {
            snprintf(err, errlen, "ge=%s: expected P/R/LOSS_BAD/LOSS_GOOD", s);
            return -1;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        if (num("ge", part, 0, 1, &v[i], err, errlen) < 0)
            return -1;
        p = slash ? slash + 1 : p + n;
    }
    c->loss_kind = ISM_LE_LOSS_GE;
    c->loss_p = v[0];
    c->ge_r = v[1];
    c->ge_loss_bad = v[2];
    c->ge_loss_good = v[3];
    return 0;
}

static int item(const char *key, const char *val, ism_le_link_conf *c, char *err, size_t errlen)
{
    double v;
    if (strcmp(key, "ge") == 0)
        return ge(val, c, err, errlen);
    if (strcmp(key, "delay") == 0 || strcmp(key, "jitter") == 0) {
        if (num(key, val, 0, 3600e9, &v, err, errlen) < 0)
            return -1;
        *(key[0] == 'd' ? &c->delay_ns : &c->jitter_ns) = (uint64_t)v;
    } else if (strcmp(key, "reorder") == 0) {
        if (num(key, val, 0, 1, &v, err, errlen) < 0)
            return -1;
        c->reorder = v != 0;
    } else if (strcmp(key, "reorderp") == 0) {
        if (num(key, val, 0, 1, &v, err, errlen) < 0)
            return -1;
        c->reorder_p = v;
    } else if (strcmp(key, "rate") == 0) {
        if (num(key, val, 0, 1e12, &v, err, errlen) < 0)
            return -1;
        c->rate_Bps = v;
    } else if (strcmp(key, "queue") == 0 || strcmp(key, "burst") == 0) {
        if (num(key, val, 1, 1e10, &v, err, errlen) < 0)
            return -1;
        *(key[0] == 'q' ? &c->queue_bytes : &c->burst_bytes) = v;
    } else if (strcmp(key, "loss") == 0) {
        if (num(key, val, 0, 1, &v, err, errlen) < 0)
            return -1;
        if (c->loss_kind != ISM_LE_LOSS_GE) {
            c->loss_kind = v > 0 ? ISM_LE_LOSS_BERNOULLI : ISM_LE_LOSS_NONE;
            c->loss_p = v;
        }
    } else if (strcmp(key, "dup") == 0) {
        if (num(key, val, 0, 1, &v, err, errlen) < 0)
            return -1;
        c->dup = v;
    } else if (strcmp(key, "corrupt") == 0) {
        if (num(key, val, 0, 1, &v, err, errlen) < 0)
            return -1;
        c->corrupt = v;
    } else if (strcmp(key, "mtu") == 0) {
        if (num(key, val, 68, 65535, &v, err, errlen) < 0)
            return -1;
        c->mtu = (uint32_t)v;
    } else {
        snprintf(err, errlen, "unknown link setting %s (known: delay jitter reorder reorderp rate "
                 "queue burst loss ge dup corrupt mtu)", key);
        return -1;
    }
    return 0;
}

int ism_le_conf_parse(const char *spec, ism_le_link_conf *c, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "link settings longer than %zu characters", sizeof buf - 1);
        return -1;
    }
    strcpy(buf, spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "%s: expected key=value", tok);
            return -1;
        }
        *eq = '\0';
        if (item(tok, eq + 1, c, err, errlen) < 0)
            return -1;
    }
    return 0;
}
