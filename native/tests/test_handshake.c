/* test_handshake.c: the start-up sequence app ranks and gateways share
 * (contract/handshake.c), against a fake vendor that plays a site of 3 app ranks and 2
 * gateways (vendor ranks 0 1 G 2 G): every process makes the same vendor calls in the same
 * order (allgather of its role, split by role keyed by its rank, dup of the world), each
 * side finds the other's ranks, a gateway its number, and a vendor error comes back. */
#include <stdio.h>
#include <string.h>

#include "../src/contract/handshake.h"
#include "check.h"

static const int site_roles[5] = {ISM_ROLE_APP, ISM_ROLE_APP, ISM_ROLE_GATEWAY, ISM_ROLE_APP,
                                  ISM_ROLE_GATEWAY};
static int me, fail_at;
static char calls[256];

static void called(const char *what)
{
    strncat(calls, what, sizeof calls - strlen(calls) - 1);
}

static int f_rank(ism_vh c, int *r)
{
    (void)c;
    *r = me;
    return 0;
}

static int f_size(ism_vh c, int *n)
{
    (void)c;
    *n = 5;
    return 0;
}

static int f_allgather(const void *sbuf, int sc, ism_vh sdt, void *rbuf, int rc, ism_vh rdt,
                       ism_vh comm)
{
    char s[64];
    snprintf(s, sizeof s, "allgather(%d,%d,%lu,%lu,%lu) ", *(const int *)sbuf, sc,
             (unsigned long)sdt, (unsigned long)rdt, (unsigned long)comm);
    called(s);
    CHECK(rc == 1, "receive count %d", rc);
    memcpy(rbuf, site_roles, sizeof site_roles);
    return fail_at == 1 ? 7 : 0;
}

static int f_split(ism_vh comm, int color, int key, ism_vh *out)
{
    char s[64];
    snprintf(s, sizeof s, "split(%lu,%d,%d) ", (unsigned long)comm, color, key);
    called(s);
    *out = 100 + (ism_vh)color;
    return fail_at == 2 ? 8 : 0;
}

static int f_dup(ism_vh comm, ism_vh *out)
{
    char s[64];
    snprintf(s, sizeof s, "dup(%lu)", (unsigned long)comm);
    called(s);
    *out = 200;
    return fail_at == 3 ? 9 : 0;
}

static ism_backend fake(void)
{
    ism_backend be;
    memset(&be, 0, sizeof be);
    be.comm_world = 42;
    be.dt[ISM_KIND_INT] = 5;
    be.comm_rank = f_rank;
    be.comm_size = f_size;
    be.allgather = f_allgather;
    be.comm_split = f_split;
    be.comm_dup = f_dup;
    return be;
}

int main(void)
{
    ism_backend be = fake();
    ism_join j;
    char want[256];
    for (me = 0; me < 5; me++) {
        calls[0] = 0;
        int role = site_roles[me];
        int rc = ism_join_site(&be, role, &j);
        CHECK(rc == 0, "rank %d: rc %d", me, rc);
        snprintf(want, sizeof want, "allgather(%d,1,5,5,42) split(42,%d,%d) dup(42)", role, role,
                 me);
        CHECK(!strcmp(calls, want), "rank %d called %s, not %s", me, calls, want);
        CHECK(j.own == (ism_vh)(100 + role) && j.channel == 200, "rank %d: comms %lu %lu", me,
              (unsigned long)j.own, (unsigned long)j.channel);
        int apps[5] = {-1, -1, -1, -1, -1}, gws[5] = {-1, -1, -1, -1, -1};
        CHECK(ism_join_ranks(&j, ISM_ROLE_APP, apps) == 3 && apps[0] == 0 && apps[1] == 1 &&
                  apps[2] == 3 && apps[3] == -1,
              "rank %d: app ranks %d %d %d", me, apps[0], apps[1], apps[2]);
        CHECK(ism_join_ranks(&j, ISM_ROLE_GATEWAY, gws) == 2 && gws[0] == 2 && gws[1] == 4,
              "rank %d: gateway ranks %d %d", me, gws[0], gws[1]);
        CHECK(ism_join_ranks(&j, ISM_ROLE_GATEWAY, NULL) == 2, "count without a buffer");
        int idx = ism_join_index(&j), want_idx[5] = {0, 1, 0, 2, 1};
        CHECK(idx == want_idx[me], "rank %d: index %d, not %d", me, idx, want_idx[me]);
        ism_join_free(&j);
        CHECK(j.roles == NULL, "free leaves the roles");
    }
    /* the app rank with local rank l goes through gateway l mod G on both sides */
    CHECK(ism_gw_of_local(0, 2) == 0 && ism_gw_of_local(1, 2) == 1 && ism_gw_of_local(2, 2) == 0,
          "gateway of local rank");
    /* a vendor error at any step comes back, and nothing is left allocated */
    me = 0;
    for (fail_at = 1; fail_at <= 3; fail_at++) {
        int rc = ism_join_site(&be, ISM_ROLE_APP, &j);
        CHECK(rc == 6 + fail_at, "error at step %d: rc %d", fail_at, rc);
        CHECK(j.roles == NULL, "error at step %d: roles left allocated", fail_at);
    }
    if (failures)
        fprintf(stderr, "test_handshake: %d failure(s)\n", failures);
    return failures != 0;
}
