/* test_rxring.c: the ordered receive ring of the app–gateway channel
 * (src/contract/rxring.c) against a fake vendor whose receives complete in any order.
 * Frames must come out in posting order, and only once the oldest has completed; a ring
 * of cap receives takes cap posts; cancelling hands every posted token back once. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../src/contract/rxring.h"
#include "check.h"

enum { CAP = 4 };

/* the fake vendor: receive i completes when done[i] is set; its handle is i + 1 */
static int posted, done[64], cancelled[64], tags[64];
static void *mems[64];

static int f_irecv(void *buf, int count, ism_vh dt, int src, int tag, ism_vh comm, ism_vh *req)
{
    (void)count, (void)dt, (void)src, (void)comm;
    mems[posted] = buf;
    tags[posted] = tag;
    *req = (ism_vh)(++posted);
    return 0;
}

static int f_test(ism_vh *req, int *flag, ism_vstatus *st)
{
    int i = (int)*req - 1;
    *flag = done[i];
    if (*flag) {
        memset(st, 0, sizeof *st);
        st->bytes = (size_t)(100 + i);
        *req = 0;
    }
    return 0;
}

static int f_cancel(ism_vh *req)
{
    cancelled[(int)*req - 1]++;
    return 0;
}

static int f_wait(ism_vh *req, ism_vstatus *st)
{
    (void)st;
    *req = 0;
    return 0;
}

static int releases;
static void release(void *token)
{
    (void)token;
    releases++;
}

int main(void)
{
    ism_backend be;
    memset(&be, 0, sizeof be);
    be.irecv = f_irecv;
    be.test = f_test;
    be.cancel = f_cancel;
    be.wait = f_wait;
    ism_rxring r;
    CHECK(ism_rxring_init(&r, &be, 7, 42, CAP) == 0, "init");
    char bufs[8][8];
    int n = 0;
    while (!ism_rxring_full(&r)) {
        CHECK(ism_rxring_post(&r, bufs[n], bufs[n], 8) == 0, "post %d", n);
        n++;
    }
    CHECK(n == CAP && posted == CAP && tags[0] == 42 && mems[2] == bufs[2], "%d posts", n);
    ism_vstatus st;
    CHECK(ism_rxring_take(&r, &st) == NULL, "nothing completed, something taken");
    /* the third and second complete first: nothing comes out before the first */
    done[2] = done[1] = 1;
    CHECK(ism_rxring_take(&r, &st) == NULL, "a later receive overtook the oldest");
    done[0] = 1;
    for (int i = 0; i < 3; i++) {
        void *t = ism_rxring_take(&r, &st);
        CHECK(t == bufs[i] && st.bytes == (size_t)(100 + i), "take %d: %p, %zu bytes", i, t,
              st.bytes);
    }
    CHECK(ism_rxring_take(&r, &st) == NULL, "the fourth has not completed");
    /* posted again at the tail: after the fourth, in posting order */
    CHECK(ism_rxring_post(&r, bufs[0], bufs[0], 8) == 0, "repost");
    done[4] = 1;
    CHECK(ism_rxring_take(&r, &st) == NULL, "the repost overtook the fourth");
    done[3] = 1;
    CHECK(ism_rxring_take(&r, &st) == bufs[3], "the fourth");
    CHECK(ism_rxring_take(&r, &st) == bufs[0], "the repost");
    /* two still posted: cancelled and handed back once each */
    CHECK(ism_rxring_post(&r, bufs[1], bufs[1], 8) == 0 &&
              ism_rxring_post(&r, bufs[2], bufs[2], 8) == 0, "two more");
    ism_rxring_cancel_all(&r, release);
    CHECK(releases == 2 && cancelled[5] == 1 && cancelled[6] == 1 && r.slot == NULL,
          "cancel: %d releases", releases);
    if (failures) {
        fprintf(stderr, "test_rxring: %d failures\n", failures);
        return 1;
    }
    printf("test_rxring: OK\n");
    return 0;
}
