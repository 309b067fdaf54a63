/* main.c: isthmus-knobs: checks the ISTHMUS_* settings of the environment with the parser
 * libisthmus and isthmus-gateway use (src/common/knobs.c, and coll/select.c for the
 * collective choices and table), so `isthmus run` refuses a bad value before it starts
 * anything, with the line the library would print; prints the settings' table for
 * docs/knobs.md; and parses sizes and rates for the Python CLI's agreement test.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r, unsetenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/coll/coll.h"
#include "../../src/common/knobs.h"
#include "../../src/common/units.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: isthmus-knobs --check [--skip-files]   check every ISTHMUS_* setting in the\n"
            "                                              environment (exit 2: one line each)\n"
            "       isthmus-knobs --markdown                the settings' table (docs/knobs.md)\n"
            "       isthmus-knobs --parse size|rate TEXT... each TEXT as bytes or bits/s, or\n"
            "                                              \"error\" (one line each)\n"
            "--skip-files: do not read ISTHMUS_COLL_TABLE (it is on another host)\n");
}

static int check(int skip_files)
{
    int bad = ism_knobs_check_env(ISM_KNOB_LIB | ISM_KNOB_GW | ISM_KNOB_RUN, ism_knob_print_bad,
                                  NULL);
    if (skip_files)
        unsetenv(ism_knobs[ISM_K_COLL_TABLE].name);
    /* the collective choices and table, exactly as MPI_Init reads them (it prints why) */
    if (ism_coll_init())
        bad++;
    ism_coll_table_free();
    return bad ? 2 : 0;
}

static void markdown(void)
{
    printf("| variable | default | values | read by | meaning |\n|---|---|---|---|---|\n");
    for (int id = 0; id < ISM_K_N; id++) {
        const ism_knob *k = &ism_knobs[id];
        char allowed[256], users[96] = "";
        ism_knob_allowed((ism_knob_id)id, allowed, sizeof allowed);
        if (k->users & ISM_KNOB_LIB)
            strcat(users, "libisthmus");
        if (k->users & ISM_KNOB_GW)
            strcat(users, users[0] ? ", gateway" : "gateway");
        if (k->users & ISM_KNOB_RUN)
            strcat(users, users[0] ? ", `isthmus run`" : "`isthmus run`");
        if (k->kind == ISM_KNOB_CHOICE) {
            char names[128], *save = NULL;
            snprintf(names, sizeof names, "%s", k->unit);
            printf("|");
            for (char *t = strtok_r(names, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
                printf(" `%s`", t);
            printf(" | %s | algorithm[:radix[:segment]] | %s | %s |\n", k->def, users, k->doc);
        } else {
            printf("| `%s` | %s | %s | %s | %s |\n", k->name, k->def, allowed, users, k->doc);
        }
    }
}

static int parse(const char *kind, int n, char **texts)
{
    if (strcmp(kind, "size") && strcmp(kind, "rate")) {
        fprintf(stderr, "isthmus-knobs: --parse %s: the kinds are size and rate\n", kind);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        int64_t bytes;
        double bits;
        if (!strcmp(kind, "size") ? ism_units_size(texts[i], &bytes)
                                  : ism_units_rate(texts[i], &bits))
            puts("error");
        else if (!strcmp(kind, "size"))
            printf("%lld\n", (long long)bytes);
        else
            printf("%.17g\n", bits);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--check")) {
        int skip = argc == 3 && !strcmp(argv[2], "--skip-files");
        if (argc > 3 || (argc == 3 && !skip)) {
            usage(stderr);
            return 2;
        }
        return check(skip);
    }
    if (argc == 2 && !strcmp(argv[1], "--markdown")) {
        markdown();
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "--parse"))
        return parse(argv[2], argc - 3, argv + 3);
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
