/* layout.h: the job layout, the first half of the contract between an app rank and its
 * gateway. `isthmus run` (python/isthmus/launch/env.py) writes it into the environment of
 * every process of a site: ISTHMUS_SITE (this site's index), ISTHMUS_SITE_RANKS and
 * ISTHMUS_SITE_GATEWAYS (app ranks and gateways per site) and ISTHMUS_SITE_NAMES. Both
 * libisthmus's MPI_Init (core/init.c) and isthmus-gateway (gateway/main.c) read it here,
 * with one set of rules, so that the two sides of a site can never disagree on it. The
 * parser does not stop the process: it returns one line naming the variable, its value
 * and what is allowed, and each side dies in its own way. */
#ifndef ISM_CONTRACT_LAYOUT_H
#define ISM_CONTRACT_LAYOUT_H

#include <stddef.h>

/* The most app ranks a job may have, and so a site (python/isthmus/launch/layout.py,
 * MAX_RANKS): global ranks travel in 32-bit fields, well below this. */
#define ISM_LAYOUT_MAX_RANKS (1 << 24)

typedef struct ism_layout {
    int nsites;
    int site;          /* this process's site */
    int gsize;         /* app ranks in the job */
    int *site_ranks;   /* app ranks per site */
    int *site_gws;     /* gateways per site */
    int *site_off;     /* nsites + 1 entries: each site's first global rank, then gsize */
    char **site_names; /* ISTHMUS_SITE_NAMES; A, B, ... when it is not set */
} ism_layout;

/* Parse the four variables' values (names may be NULL). 0 and *out filled, or -1 with a
 * one-line reason in err and *out left empty. Every number is decimal digits only; the
 * lists have one entry per site; names are 1-32 letters, digits, '_', '.' or '-'. */
int ism_layout_parse(const char *site, const char *ranks, const char *gws, const char *names,
                     ism_layout *out, char *err, size_t errlen);

/* The same, read from the environment. */
int ism_layout_from_env(ism_layout *out, char *err, size_t errlen);

void ism_layout_free(ism_layout *l);

#endif
