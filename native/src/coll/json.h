/* json.h: the small JSON reader of the selection table (json.c). */
#ifndef ISM_COLL_JSON_H
#define ISM_COLL_JSON_H

#include <stddef.h>

enum { ISM_JSON_NULL, ISM_JSON_BOOL, ISM_JSON_NUM, ISM_JSON_STR, ISM_JSON_ARR, ISM_JSON_OBJ };

typedef struct ism_json {
    int type;
    double num;           /* NUM, BOOL (0/1) */
    char *str;            /* STR */
    int n;                /* ARR, OBJ: items */
    struct ism_json *items;
    char **keys;          /* OBJ */
} ism_json;

/* 0, or -1 with err saying where and what. */
int ism_json_parse(const char *text, size_t len, ism_json *out, char *err, size_t errlen);
void ism_json_free(ism_json *j);
const ism_json *ism_json_get(const ism_json *obj, const char *key);

#endif
