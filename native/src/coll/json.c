/* json.c: a small JSON reader for the selection table (RFC 8259: objects, arrays,
 * strings with escapes, numbers, true/false/null) into a tree. Depth and size are
 * bounded; errors say at which line and column, so a hand-edited table is easy to fix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 32

typedef struct {
    const char *s, *end, *start;
    char *err;
    size_t errlen;
} rd;

static int fail(rd *r, const char *what)
{
    int line = 1, col = 1;
    for (const char *p = r->start; p < r->s && p < r->end; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(r->err, r->errlen, "line %d, column %d: %s", line, col, what);
    return -1;
}

static void ws(rd *r)
{
    while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\n' || *r->s == '\r'))
        r->s++;
}

static int value(rd *r, ism_json *out, int depth);

static int hex4(const char *p, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        *u <<= 4;
        if (c >= '0' && c <= '9')
            *u |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *u |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *u |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    return 0;
}

static int string(rd *r, char **out)
{
    r->s++; /* the opening quote */
    size_t cap = 16, n = 0;
    char *b = malloc(cap);
    if (!b)
        return fail(r, "out of memory");
    while (r->s < r->end && *r->s != '"') {
        unsigned char c = (unsigned char)*r->s++;
        if (c < 0x20) {
            free(b);
            return fail(r, "control character in a string");
        }
        if (c == '\\') {
            if (r->s >= r->end)
                break;
            char e = *r->s++;
            unsigned u;
            switch (e) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                if (r->end - r->s < 4 || hex4(r->s, &u) || u > 0x7f) {
                    free(b);
                    return fail(r, "only \\u escapes of ASCII characters are accepted");
                }
                r->s += 4;
                c = (unsigned char)u;
                break;
            default:
                free(b);
                return fail(r, "unknown escape in a string");
            }
        }
        if (n + 2 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return fail(r, "out of memory");
            }
            b = nb;
        }
        b[n++] = (char)c;
    }
    if (r->s >= r->end) {
        free(b);
        return fail(r, "unterminated string");
    }
    r->s++;
    b[n] = 0;
    *out = b;
    return 0;
}

static int push(ism_json *a, ism_json *item, char *key)
{
    ism_json *ni = realloc(a->items, sizeof *ni * (size_t)(a->n + 1));
    if (!ni)
        return -1;
    a->items = ni;
    if (a->type == ISM_JSON_OBJ) {
        char **nk = realloc(a->keys, sizeof *nk * (size_t)(a->n + 1));
        if (!nk)
            return -1;
        a->keys = nk;
        a->keys[a->n] = key;
    }
    a->items[a->n++] = *item;
    return 0;
}

static int container(rd *r, ism_json *out, int depth, int obj)
{
    out->type = obj ? ISM_JSON_OBJ : ISM_JSON_ARR;
    r->s++;
    ws(r);
    if (r->s < r->end && *r->s == (obj ? '}' : ']')) {
        r->s++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        ws(r);
        if (obj) {
            if (r->s >= r->end || *r->s != '"')
                return fail(r, "expected a key in quotes");
            if (string(r, &key))
                return -1;
            ws(r);
            if (r->s >= r->end || *r->s != ':') {
                free(key);
                return fail(r, "expected ':' after a key");
            }
            r->s++;
        }
        ism_json item = {0};
        if (value(r, &item, depth + 1) || push(out, &item, key)) {
            free(key);
            ism_json_free(&item);
            return r->err[0] ? -1 : fail(r, "out of memory");
        }
        ws(r);
        if (r->s < r->end && *r->s == ',') {
            r->s++;
            continue;
        }
        if (r->s < r->end && *r->s == (obj ? '}' : ']')) {
            r->s++;
            return 0;
        }
        return fail(r, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(rd *r, ism_json *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > MAX_DEPTH)
        return fail(r, "nested too deeply");
    ws(r);
    if (r->s >= r->end)
        return fail(r, "unexpected end of the file");
    char c = *r->s;
    if (c == '{' || c == '[')
        return container(r, out, depth, c == '{');
    if (c == '"') {
        out->type = ISM_JSON_STR;
        return string(r, &out->str);
    }
    static const struct { const char *w; int type, b; } words[] = {
        {"true", ISM_JSON_BOOL, 1}, {"false", ISM_JSON_BOOL, 0}, {"null", ISM_JSON_NULL, 0}};
    for (unsigned i = 0; i < 3; i++) {
        size_t n = strlen(words[i].w);
        if ((size_t)(r->end - r->s) >= n && !strncmp(r->s, words[i].w, n)) {
            r->s += n;
            out->type = words[i].type;
            out->num = words[i].b;
            return 0;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t n = 0;
        while (r->s + n < r->end && n < sizeof buf - 1 &&
               strchr("+-0123456789.eE", r->s[n]))
            n++;
        memcpy(buf, r->s, n);
        buf[n] = 0;
        char *e;
        out->num = strtod(buf, &e);
        if (e != buf + n || !n)
            return fail(r, "malformed number");
        out->type = ISM_JSON_NUM;
        r->s += n;
        return 0;
    }
    return fail(r, "expected a value");
}

int ism_json_parse(const char *text, size_t len, ism_json *out, char *err, size_t errlen)
{
    rd r = {text, text + len, text, err, errlen};
    err[0] = 0;
    if (value(&r, out, 0)) {
        ism_json_free(out);
        return -1;
    }
    ws(&r);
    if (r.s != r.end) {
        ism_json_free(out);
        return fail(&r, "text after the end of the document");
    }
    return 0;
}

void ism_json_free(ism_json *j)
{
    for (int i = 0; i < j->n; i++) {
        ism_json_free(&j->items[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    free(j->str);
    memset(j, 0, sizeof *j);
}

const ism_json *ism_json_get(const ism_json *obj, const char *key)
{
    if (obj->type != ISM_JSON_OBJ)
        return NULL;
    for (int i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return &obj->items[i];
    return NULL;
}
