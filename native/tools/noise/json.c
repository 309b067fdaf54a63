/* json.c: the streaming JSON writer (see json.h). */
#include "json.h"

#include <math.h>
#include <string.h>

void ism_json_init(ism_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

static void escaped(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        default:
            if (c < 0x20 || c >= 0x7f)
                fprintf(f, "\\u%04x", c < 0x7f ? c : 0xfffd);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

static void prefix(ism_json *j, const char *key)
{
    if (j->count[j->depth]++)
        fputc(',', j->f);
    if (key) {
        escaped(j->f, key, strlen(key));
        fputc(':', j->f);
    }
}

static void open_(ism_json *j, const char *key, char c)
{
    prefix(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < ISM_JSON_MAX_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
}

void ism_json_obj(ism_json *j, const char *key) { open_(j, key, '{'); }
void ism_json_arr(ism_json *j, const char *key) { open_(j, key, '['); }

static void close_(ism_json *j, char c)
{
    fputc(c, j->f);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0)
        fputc('\n', j->f);
}

void ism_json_end_obj(ism_json *j) { close_(j, '}'); }
void ism_json_end_arr(ism_json *j) { close_(j, ']'); }

void ism_json_strn(ism_json *j, const char *key, const char *v, size_t n)
{
    prefix(j, key);
    escaped(j->f, v, n);
}

void ism_json_str(ism_json *j, const char *key, const char *v)
{
    if (!v) {
        ism_json_null(j, key);
        return;
    }
    ism_json_strn(j, key, v, strlen(v));
}

void ism_json_i64(ism_json *j, const char *key, int64_t v)
{
    prefix(j, key);
    fprintf(j->f, "%lld", (long long)v);
}

void ism_json_u64(ism_json *j, const char *key, uint64_t v)
{
    prefix(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void ism_json_dbl(ism_json *j, const char *key, double v)
{
    prefix(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.17g", v);
    else
        fputs("null", j->f);
}

void ism_json_bool(ism_json *j, const char *key, int v)
{
    prefix(j, key);
    fputs(v ? "true" : "false", j->f);
}

void ism_json_null(ism_json *j, const char *key)
{
    prefix(j, key);
    fputs("null", j->f);
}
