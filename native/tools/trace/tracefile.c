/* tracefile.c: reading a trace file (see tracefile.h). */
#include "tracefile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ism_tf_open(ism_tf *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->info.type = ISM_JSON_NULL;
    FILE *in = fopen(path, "rb");
    if (!in) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    f->data = malloc(n > 0 ? (size_t)n : 1);
    if (!f->data || (n > 0 && fread(f->data, 1, (size_t)n, in) != (size_t)n)) {
        snprintf(err, errlen, "%s: cannot read", path);
        fclose(in);
        free(f->data);
        return -1;
    }
    fclose(in);
    f->len = (size_t)n;
    f->path = strdup(path);
    if (f->len < sizeof f->hdr) {
        snprintf(err, errlen, "%s: shorter than a trace file header", path);
        ism_tf_close(f);
        return -1;
    }
    memcpy(&f->hdr, f->data, sizeof f->hdr);
    if (f->hdr.magic != ISM_TR_MAGIC || f->hdr.version != ISM_TR_VERSION) {
        snprintf(err, errlen, "%s: not an isthmus trace file of version %d (magic %08x, "
                              "version %u)", path, ISM_TR_VERSION, f->hdr.magic, f->hdr.version);
        ism_tf_close(f);
        return -1;
    }
    size_t off = ism_tf_first();
    for (int k = 0; k < 2; k++) {
        const ism_tr_hdr *h = ism_tf_next(f, &off);
        if (!h)
            break;
        const char *body = (const char *)(h + 1);
        size_t blen = h->len - sizeof *h;
        if (h->kind == ISM_TR_INFO) {
            char jerr[256];
            if (ism_json_parse(body, strnlen(body, blen), &f->info, jerr, sizeof jerr)) {
                snprintf(err, errlen, "%s: its INFO record is not JSON (%s)", path, jerr);
                ism_tf_close(f);
                return -1;
            }
        } else if (h->kind == ISM_TR_NAMES) {
            int cnt = 0;
            for (size_t i = 0; i < blen; i++)
                cnt += body[i] == 0;
            f->names = calloc((size_t)cnt + 1, sizeof *f->names);
            for (size_t i = 0; f->names && i < blen && f->nnames < cnt;) {
                f->names[f->nnames++] = body + i;
                i += strnlen(body + i, blen - i) + 1;
                while (i < blen && !body[i])
                    i++; /* the padding at the end */
            }
        }
    }
    return 0;
}

void ism_tf_close(ism_tf *f)
{
    ism_json_free(&f->info);
    free(f->names);
    free(f->data);
    free(f->path);
    memset(f, 0, sizeof *f);
}

const ism_tr_hdr *ism_tf_next(ism_tf *f, size_t *off)
{
    if (*off + sizeof(ism_tr_hdr) > f->len) {
        if (*off < f->len)
            f->truncated = 1;
        return NULL;
    }
    const ism_tr_hdr *h = (const ism_tr_hdr *)(const void *)(f->data + *off);
    if (h->len < sizeof *h || h->len % 8 || *off + h->len > f->len) {
        f->truncated = 1;
        return NULL;
    }
    *off += h->len;
    return h;
}

double ism_tf_num(const ism_tf *f, const char *key, double def)
{
    const ism_json *v = f->info.type == ISM_JSON_OBJ ? ism_json_get(&f->info, key) : NULL;
    return v && v->type == ISM_JSON_NUM ? v->num : def;
}

const char *ism_tf_str(const ism_tf *f, const char *key, const char *def)
{
    const ism_json *v = f->info.type == ISM_JSON_OBJ ? ism_json_get(&f->info, key) : NULL;
    return v && v->type == ISM_JSON_STR ? v->str : def;
}
