/* test_layout.c: the job layout parser both sides of a site use (contract/layout.c): good
 * layouts come out whole, and every bad one (junk in a number, a list of the wrong length,
 * a site out of range, a bad name) is refused with a line naming the variable and its
 * value. Before the shared parser the library took "2x" for 2 (atoi). */
#include <stdio.h>
#include <string.h>

#include "../src/contract/layout.h"
#include "check.h"

static void good(void)
{
    ism_layout l;
    char err[512] = "";
    int rc = ism_layout_parse("1", "2,3,1", "1,2,1", "A,east,c-3", &l, err, sizeof err);
    CHECK(rc == 0, "good layout refused: %s", err);
    if (rc)
        return;
    CHECK(l.nsites == 3 && l.site == 1 && l.gsize == 6, "nsites %d site %d gsize %d", l.nsites,
          l.site, l.gsize);
    CHECK(l.site_ranks[0] == 2 && l.site_ranks[1] == 3 && l.site_ranks[2] == 1, "ranks");
    CHECK(l.site_gws[0] == 1 && l.site_gws[1] == 2 && l.site_gws[2] == 1, "gateways");
    CHECK(l.site_off[0] == 0 && l.site_off[1] == 2 && l.site_off[2] == 5 && l.site_off[3] == 6,
          "offsets %d %d %d %d", l.site_off[0], l.site_off[1], l.site_off[2], l.site_off[3]);
    CHECK(!strcmp(l.site_names[1], "east") && !strcmp(l.site_names[2], "c-3"), "names %s %s",
          l.site_names[1], l.site_names[2]);
    ism_layout_free(&l);
    CHECK(l.site_ranks == NULL && l.nsites == 0, "free leaves a stale layout");

    /* without ISTHMUS_SITE_NAMES the library names the sites A, B, ... */
    rc = ism_layout_parse("0", "4", "1", NULL, &l, err, sizeof err);
    CHECK(rc == 0 && l.nsites == 1 && !strcmp(l.site_names[0], "A"), "one site: %s", err);
    if (!rc)
        ism_layout_free(&l);
    rc = ism_layout_parse("0", "16777216", "1", "A", &l, err, sizeof err);
    CHECK(rc == 0 && l.gsize == 1 << 24, "largest site refused: %s", err);
    if (!rc)
        ism_layout_free(&l);
}

/* A bad layout: refused, with the variable, its value and `allowed` in the error. */
static void bad(const char *site, const char *ranks, const char *gws, const char *names,
                const char *var, const char *value)
{
    ism_layout l;
    char err[512] = "";
    int rc = ism_layout_parse(site, ranks, gws, names, &l, err, sizeof err);
    CHECK(rc == -1, "accepted site=%s ranks=%s gws=%s names=%s", site ? site : "(unset)",
          ranks ? ranks : "(unset)", gws ? gws : "(unset)", names ? names : "(unset)");
    if (rc == 0) {
        ism_layout_free(&l);
        return;
    }
    char want[128];
    snprintf(want, sizeof want, "%s%s%s", var, value ? "=" : "", value ? value : "");
    CHECK(strstr(err, want) != NULL, "error does not name %s: %s", want, err);
    CHECK(strstr(err, "allowed") != NULL, "error does not say what is allowed: %s", err);
    CHECK(strchr(err, '\n') == NULL, "error is more than one line: %s", err);
    CHECK(l.site_ranks == NULL && l.nsites == 0, "a refused layout left data behind");
}

int main(void)
{
    good();
    /* junk in a number */
    bad("0", "2x,2", "1,1", NULL, "ISTHMUS_SITE_RANKS", "2x,2");
    bad("0", "2,2", "1,1y", NULL, "ISTHMUS_SITE_GATEWAYS", "1,1y");
    bad("0", " 2,2", "1,1", NULL, "ISTHMUS_SITE_RANKS", " 2,2");
    bad("0", "+2,2", "1,1", NULL, "ISTHMUS_SITE_RANKS", "+2,2");
    bad("0", "-2,2", "1,1", NULL, "ISTHMUS_SITE_RANKS", "-2,2");
    bad("1x", "2,2", "1,1", NULL, "ISTHMUS_SITE", "1x");
    bad("", "2,2", "1,1", NULL, "ISTHMUS_SITE", "");
    /* empty entries, zero and too large */
    bad("0", "2,,2", "1,1,1", NULL, "ISTHMUS_SITE_RANKS", "2,,2");
    bad("0", "2,", "1,1", NULL, "ISTHMUS_SITE_RANKS", "2,");
    bad("0", "", "1", NULL, "ISTHMUS_SITE_RANKS", "");
    bad("0", "0,2", "1,1", NULL, "ISTHMUS_SITE_RANKS", "0,2");
    bad("0", "2,2", "0,1", NULL, "ISTHMUS_SITE_GATEWAYS", "0,1");
    bad("0", "16777217", "1", NULL, "ISTHMUS_SITE_RANKS", "16777217");
    bad("0", "99999999999999999999", "1", NULL, "ISTHMUS_SITE_RANKS", "99999999999999999999");
    bad("0", "16777216,1", "1,1", NULL, "ISTHMUS_SITE_RANKS", "16777216,1");
    /* lists of the wrong length */
    bad("0", "2,2", "1", NULL, "ISTHMUS_SITE_GATEWAYS", "1");
    bad("0", "2,2", "1,1,1", NULL, "ISTHMUS_SITE_GATEWAYS", "1,1,1");
    bad("0", "2,2", "1,1", "A", "ISTHMUS_SITE_NAMES", "A");
    bad("0", "2,2", "1,1", "A,B,C", "ISTHMUS_SITE_NAMES", "A,B,C");
    /* the site out of range */
    bad("2", "2,2", "1,1", NULL, "ISTHMUS_SITE", "2");
    bad("-1", "2,2", "1,1", NULL, "ISTHMUS_SITE", "-1");
    /* names */
    bad("0", "2,2", "1,1", "A,", "ISTHMUS_SITE_NAMES", "A,");
    bad("0", "2,2", "1,1", "A,b c", "ISTHMUS_SITE_NAMES", "A,b c");
    bad("0", "2,2", "1,1", "A,\"x\"", "ISTHMUS_SITE_NAMES", "A,\"x\"");
    bad("0", "1", "1", "abcdefghijklmnopqrstuvwxyz0123456", "ISTHMUS_SITE_NAMES",
        "abcdefghijklmnopqrstuvwxyz0123456");
    /* unset */
    bad(NULL, "2,2", "1,1", NULL, "ISTHMUS_SITE", NULL);
    bad("0", NULL, "1,1", NULL, "ISTHMUS_SITE_RANKS", NULL);
    bad("0", "2,2", NULL, NULL, "ISTHMUS_SITE_GATEWAYS", NULL);
    if (failures)
        fprintf(stderr, "test_layout: %d failure(s)\n", failures);
    return failures != 0;
}
