/* json.h: a small streaming JSON writer for the probes' run files. It keeps only the
 * comma state per nesting level, so output size is bounded by what the caller writes,
 * and every string (file contents included) is escaped. */
#ifndef ISM_NOISE_JSON_H
#define ISM_NOISE_JSON_H

#include <stdint.h>
#include <stdio.h>

#define ISM_JSON_MAX_DEPTH 32

typedef struct {
    FILE *f;
    int depth;
    int count[ISM_JSON_MAX_DEPTH];
} ism_json;

void ism_json_init(ism_json *j, FILE *f);
/* key is NULL for array elements and the top-level value. */
void ism_json_obj(ism_json *j, const char *key);
void ism_json_arr(ism_json *j, const char *key);
void ism_json_end_obj(ism_json *j);
void ism_json_end_arr(ism_json *j);
void ism_json_str(ism_json *j, const char *key, const char *v);
void ism_json_strn(ism_json *j, const char *key, const char *v, size_t n);
void ism_json_i64(ism_json *j, const char *key, int64_t v);
void ism_json_u64(ism_json *j, const char *key, uint64_t v);
void ism_json_dbl(ism_json *j, const char *key, double v);
void ism_json_bool(ism_json *j, const char *key, int v);
void ism_json_null(ism_json *j, const char *key);

#endif
