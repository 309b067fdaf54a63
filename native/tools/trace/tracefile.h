/* tracefile.h: one process's trace file (native/src/trace/record.h) in memory, for the
 * exporters: its header, its INFO (parsed JSON) and NAMES, and an iterator over its
 * records that stops at a truncated tail (a process that died mid-write) and says so. */
#ifndef ISM_TOOLS_TRACEFILE_H
#define ISM_TOOLS_TRACEFILE_H

#include <stddef.h>

#include "../../src/coll/json.h"
#include "../../src/trace/record.h"

typedef struct {
    char *path;
    char *data;          /* the whole file */
    size_t len;
    ism_tr_file_hdr hdr;
    ism_json info;       /* INFO's object (type ISM_JSON_NULL without one) */
    const char **names;  /* NAMES: function index -> name */
    int nnames;
    int truncated;       /* the last record was cut short */
} ism_tf;

/* Read path. 0, or -1 with err (not a trace file, wrong version, unreadable). */
int ism_tf_open(ism_tf *f, const char *path, char *err, size_t errlen);
void ism_tf_close(ism_tf *f);

/* The record at *off (start with ism_tf_first()), advancing *off; NULL at the end. */
static inline size_t ism_tf_first(void) { return sizeof(ism_tr_file_hdr); }
const ism_tr_hdr *ism_tf_next(ism_tf *f, size_t *off);

/* INFO fields. */
double ism_tf_num(const ism_tf *f, const char *key, double def);
const char *ism_tf_str(const ism_tf *f, const char *key, const char *def);

#endif
