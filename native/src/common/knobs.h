/* knobs.h: the ISTHMUS_* settings of knobs.def, read strictly from the environment.
 *
 * A variable that is unset or empty means its default. Anything else must be a value of
 * the knob's kind inside its range, or it is refused with one line that names the
 * variable, the value and what is allowed:
 *
 *   ISTHMUS_EAGER=abc: expected a size in bytes (e.g. 65536, 64k, 1m) from 0 to 1m
 *
 * The programs print that line behind their "isthmus: " and stop before they start
 * anything (MPI_Init in libisthmus, start-up in isthmus-gateway, `isthmus run` through
 * isthmus-knobs --check).
 */
#ifndef ISM_KNOBS_H
#define ISM_KNOBS_H

#include <stddef.h>

typedef enum {
    ISM_KNOB_SIZE,     /* bytes (units.h) */
    ISM_KNOB_COUNT,    /* a whole number */
    ISM_KNOB_BOOL,     /* 0 or 1 */
    ISM_KNOB_DURATION, /* in the knob's unit, or with one */
    ISM_KNOB_RATE,     /* bits/s */
    ISM_KNOB_RATIO,    /* a number, or a percentage */
    ISM_KNOB_ENUM,     /* one of the words in `unit` */
    ISM_KNOB_NAME,     /* a kernel-style name: lowercase letters, digits, _ */
    ISM_KNOB_FILE,     /* a path, read by its owner (coll/table.c) */
    ISM_KNOB_CHOICE,   /* a family of variables checked by their owner (coll/select.c) */
} ism_knob_kind;

/* who reads a knob */
enum { ISM_KNOB_LIB = 1, ISM_KNOB_GW = 2, ISM_KNOB_RUN = 4 };

typedef enum {
#define ISM_KNOB(id, kind, unit, lo, hi, def, users, doc) ISM_K_##id,
#include "knobs.def"
#undef ISM_KNOB
    ISM_K_N
} ism_knob_id;

typedef struct {
    const char *name; /* "ISTHMUS_EAGER" */
    ism_knob_kind kind;
    const char *unit;
    double min, max;
    const char *def;
    unsigned users;
    const char *doc;
} ism_knob;

extern const ism_knob ism_knobs[ISM_K_N];

/* A value: numbers in bytes, bits/s, the knob's unit, or 0/1; words as given. */
typedef struct {
    double num;
    const char *str;
} ism_knob_val;

/* 0 and *out set if `text` is a good value of knob `id`; else -1 and the one-line
 * complaint (without "isthmus: ") in err. */
int ism_knob_parse(ism_knob_id id, const char *text, ism_knob_val *out, char *err,
                   size_t errlen);

/* The knob's variable: 1 and *out set, 0 if unset or empty (*out untouched), -1 and err
 * if its value is not allowed. */
int ism_knob_env(ism_knob_id id, ism_knob_val *out, char *err, size_t errlen);

/* The value of a knob whose documented default is "auto", computed here so that its
 * reader and MPI_T agree: ISTHMUS_WAN_SEAL_WORKERS (the gateway's crypto workers) is the
 * CPUs this process may run on (sched_getaffinity) minus two (the event loop, and the
 * kernel's network work), at most 3; 0 on 2 CPUs or fewer, where a worker only
 * competes. -1 for any other knob. */
int ism_knob_auto(ism_knob_id id);

/* Check every knob read by one of `users` (CHOICE and FILE ones excepted: their owners
 * check them); call `bad` with each complaint. Returns the number of bad ones. */
int ism_knobs_check_env(unsigned users, void (*bad)(const char *line, void *arg), void *arg);

/* Prints a complaint of ism_knobs_check_env as the programs do: "isthmus: <line>". */
void ism_knob_print_bad(const char *line, void *arg);

/* The knob's value, `def` when unset; a bad value is printed (ism_knob_print_bad) and
 * ends the process with exit(code). For programs that may exit() at any time (the
 * gateway, the tools); libisthmus stops with ism_die instead. */
double ism_knob_or_exit(ism_knob_id id, double def, int code);

/* What a knob accepts, in words: "a size in bytes (e.g. 65536, 64k, 1m) from 0 to 1m". */
void ism_knob_allowed(ism_knob_id id, char *buf, size_t len);

#endif
