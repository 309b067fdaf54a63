/* test_coll_select.c: the choice of collective algorithms without MPI: the
 * "algorithm[:radix[:segment]]" syntax (select.c), the JSON reader (json.c) and the
 * selection table (table.c): what a good table selects, first match wins, and that every
 * kind of mistake is refused with a message naming the file, the rule and the problem. */
#define _POSIX_C_SOURCE 200809L /* fileno, dup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/coll/coll.h"
#include "../src/coll/json.h"
#include "check.h"

static int parse(int coll, int lvl, const char *s, ism_coll_choice *ch, char *why)
{
    return ism_coll_parse_choice(coll, lvl, s, ch, why, 512);
}

static void choices(void)
{
    ism_coll_choice ch;
    char why[512];
    CHECK(!parse(ISM_COLL_BCAST, ISM_LVL_INTRA, "knomial:3", &ch, why) && ch.radix == 3 &&
              ch.alg == ism_coll_alg_by_name(ISM_COLL_BCAST, "knomial"),
          "knomial:3: %s", why);
    CHECK(!parse(ISM_COLL_REDUCE, ISM_LVL_WAN, "chain::64KiB", &ch, why) && ch.seg == 65536 &&
              ch.radix == 0,
          "chain::64KiB: %s", why);
    CHECK(!parse(ISM_COLL_ALLREDUCE, ISM_LVL_WAN, "pipeline::2M", &ch, why) &&
              ch.alg == ISM_ALG_PIPELINE && ch.seg == 2 << 20,
          "pipeline::2M: %s", why);
    CHECK(!parse(ISM_COLL_ALLGATHER, ISM_LVL_INTRA, "vendor", &ch, why) &&
              ch.alg == ISM_ALG_VENDOR,
          "vendor: %s", why);
    /* every collective has the vendor's inside a site (scan, exscan and reduce-scatter
     * since backend ABI 3), none between sites */
    CHECK(!parse(ISM_COLL_SCAN, ISM_LVL_INTRA, "vendor", &ch, why) && ch.alg == ISM_ALG_VENDOR,
          "scan vendor: %s", why);
    CHECK(!parse(ISM_COLL_EXSCAN, ISM_LVL_INTRA, "vendor", &ch, why) && ch.alg == ISM_ALG_VENDOR,
          "exscan vendor: %s", why);
    CHECK(!parse(ISM_COLL_REDUCE_SCATTER, ISM_LVL_INTRA, "vendor", &ch, why) &&
              ch.alg == ISM_ALG_VENDOR,
          "reduce_scatter vendor: %s", why);
    CHECK(!parse(ISM_COLL_BARRIER, ISM_LVL_INTRA, "default", &ch, why) &&
              ch.alg == ISM_ALG_DEFAULT,
          "default: %s", why);
    static const struct {
        int coll, lvl;
        const char *spec, *msg;
    } bad[] = {
        {ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, "bogus", "unknown allreduce algorithm \"bogus\""},
        {ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, "pipeline", "unknown allreduce algorithm"},
        {ISM_COLL_SCAN, ISM_LVL_WAN, "vendor", "unknown scan algorithm \"vendor\" at level wan"},
        {ISM_COLL_BCAST, ISM_LVL_WAN, "vendor", "at level wan"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "binomial:4", "binomial takes no radix"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "knomial:1", "radix \"1\" must be 2..64"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "knomial:x", "radix \"x\" must be 2..64"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "knomial:65", "must be 2..64"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "binomial::1k", "binomial takes no segment size"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "chain::12q", "segment \"12q\" is not a size"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, "chain:::", "not of the form"},
        {ISM_COLL_BCAST, ISM_LVL_INTRA, ":3", "not of the form"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = 0;
        int rc = parse(bad[i].coll, bad[i].lvl, bad[i].spec, &ch, why);
        CHECK(rc && strstr(why, bad[i].msg), "\"%s\" gave \"%s\", expected \"%s\"", bad[i].spec,
              why, bad[i].msg);
    }
}

static void json(void)
{
    ism_json j;
    char err[256];
    const char *good = "{\"a\": [1, 2.5e1, -3], \"b\": {\"c\": \"x\\ny\\u0041\"}, \"t\": true, "
                       "\"n\": null}";
    CHECK(!ism_json_parse(good, strlen(good), &j, err, sizeof err), "good json: %s", err);
    const ism_json *a = ism_json_get(&j, "a"), *b = ism_json_get(&j, "b");
    CHECK(a && a->type == ISM_JSON_ARR && a->n == 3 && a->items[1].num == 25 &&
              a->items[2].num == -3,
          "array");
    CHECK(b && !strcmp(ism_json_get(b, "c")->str, "x\nyA"), "string escapes");
    ism_json_free(&j);
    static const struct {
        const char *text, *msg;
    } bad[] = {{"{\"a\": 1,}", "line 1, column 9: expected a key"},
               {"[1, 2", "line 1, column 6: expected ',' or ']'"},
               {"{\"a\"\n 1}", "line 2, column 2: expected ':'"},
               {"\"abc", "unterminated string"},
               {"[1] 2", "text after the end"},
               {"[tru]", "expected a value"},
               {"[1.2.3]", "malformed number"},
               {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                "nested too deeply"}};
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = ism_json_parse(bad[i].text, strlen(bad[i].text), &j, err, sizeof err);
        CHECK(rc && strstr(err, bad[i].msg), "%s gave \"%s\", expected \"%s\"", bad[i].text, err,
              bad[i].msg);
    }
}

static char path[64];

static int load(const char *text, char *out, size_t outlen)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    /* the loader reports on stderr: catch it */
    fflush(stderr);
    FILE *e = tmpfile();
    int saved = dup(2);
    dup2(fileno(e), 2);
    int rc = ism_coll_table_load(path);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(e);
    size_t n = fread(out, 1, outlen - 1, e);
    out[n] = 0;
    fclose(e);
    return rc;
}

static void table(void)
{
    char msg[1024];
    const char *good =
        "{\"format\": \"isthmus-coll-table\", \"version\": 1, \"rules\": ["
        "{\"coll\": \"allreduce\", \"level\": \"wan\", \"bytes\": [1048576, null],"
        " \"algorithm\": \"pipeline\", \"segment\": 262144},"
        "{\"coll\": \"allreduce\", \"ranks\": [2, 8], \"bytes\": [0, 65535],"
        " \"algorithm\": \"recursive_doubling\", \"predicted_us\": 12.5},"
        "{\"coll\": \"allreduce\", \"ranks\": [2, 8], \"algorithm\": \"ring:0:64KiB\"},"
        "{\"coll\": \"bcast\", \"ranks\": 4, \"algorithm\": \"knomial\", \"radix\": 3}]}";
    CHECK(!load(good, msg, sizeof msg), "good table refused: %s", msg);
    ism_coll_choice ch;
    CHECK(ism_coll_table_lookup(ISM_COLL_ALLREDUCE, ISM_LVL_WAN, 2, 1 << 20, &ch) &&
              ch.alg == ISM_ALG_PIPELINE && ch.seg == 262144,
          "wan pipeline");
    CHECK(!ism_coll_table_lookup(ISM_COLL_ALLREDUCE, ISM_LVL_WAN, 2, 1000, &ch), "below range");
    CHECK(ism_coll_table_lookup(ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, 4, 100, &ch) &&
              ch.alg == ism_coll_alg_by_name(ISM_COLL_ALLREDUCE, "recursive_doubling"),
          "first match wins");
    CHECK(ism_coll_table_lookup(ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, 8, 65536, &ch) &&
              ch.alg == ism_coll_alg_by_name(ISM_COLL_ALLREDUCE, "ring") && ch.seg == 65536,
          "second range");
    CHECK(!ism_coll_table_lookup(ISM_COLL_ALLREDUCE, ISM_LVL_INTRA, 9, 100, &ch), "ranks range");
    CHECK(ism_coll_table_lookup(ISM_COLL_BCAST, ISM_LVL_INTRA, 4, 7, &ch) && ch.radix == 3,
          "radix field");
    CHECK(!ism_coll_table_lookup(ISM_COLL_BCAST, ISM_LVL_INTRA, 5, 7, &ch), "ranks = 4 only");
    static const struct {
        const char *rules, *msg;
    } bad[] = {
        {"{\"coll\": \"allreduce\", \"algorithm\": \"ring\", \"colour\": 1}",
         "rule 1 (allreduce): unknown field \"colour\""},
        {"{\"coll\": \"allreduse\", \"algorithm\": \"ring\"}", "rule 1 (allreduse): \"coll\" must"},
        {"{\"coll\": \"bcast\", \"level\": \"site\", \"algorithm\": \"linear\"}",
         "\"level\" must be \"intra\" or \"wan\""},
        {"{\"coll\": \"bcast\", \"ranks\": [4, 2], \"algorithm\": \"linear\"}", "\"ranks\" must"},
        {"{\"coll\": \"bcast\", \"bytes\": [-1, 2], \"algorithm\": \"linear\"}", "\"bytes\" must"},
        {"{\"coll\": \"bcast\"}", "\"algorithm\" (a string) is missing"},
        {"{\"coll\": \"bcast\", \"algorithm\": \"ring\"}", "unknown bcast algorithm \"ring\""},
        {"{\"coll\": \"bcast\", \"algorithm\": \"knomial:3\", \"radix\": 3}",
         "either in \"algorithm\" or as fields"},
        {"{\"coll\": \"bcast\", \"algorithm\": \"binomial\", \"segment\": 1024}",
         "binomial takes no segment size"},
        {"3", "rule 1: is not an object"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"format\": \"isthmus-coll-table\", \"version\": 1, \"rules\": [%s]}",
                 bad[i].rules);
        int rc = load(text, msg, sizeof msg);
        CHECK(rc && strstr(msg, path) && strstr(msg, bad[i].msg), "%s gave \"%s\"", bad[i].rules,
              msg);
    }
    CHECK(load("{\"format\": \"isthmus-coll-table\", \"version\": 2, \"rules\": []}", msg,
               sizeof msg) &&
              strstr(msg, "unsupported \"version\""),
          "version: %s", msg);
    CHECK(load("{\"rules\": []}", msg, sizeof msg) && strstr(msg, "not a selection table"),
          "format: %s", msg);
    unlink(path);
    CHECK(ism_coll_table_load(path) != 0, "a missing file is an error");
    ism_coll_table_free();
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/test_coll_select.%d.json", (int)getpid());
    choices();
    json();
    table();
    printf("test_coll_select: %d failures\n", failures);
    return failures ? 1 : 0;
}
