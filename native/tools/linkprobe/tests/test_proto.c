/* test_proto.c: isthmus-linkprobe's HELLO/PORT/REPORT: round trips, every malformed
 * field refused, where each HELLO may go (main port or data port), plus a deterministic
 * fuzz pass (decode never accepts what it cannot re-encode). */
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "../../../tests/check.h"


int main(void)
{
    lp_hello h = {.mode = LP_TPUT, .stream = 2, .nstreams = 4, .size = 0, .window = 65536,
                  .omit_ms = 1000, .session = 0x1122334455667788ull}, d;
    uint8_t w[LP_HELLO_SIZE], b[LP_HELLO_SIZE];
    const char *why = NULL;
    lp_hello_encode(&h, w);
    CHECK(lp_hello_decode(w, sizeof w, &d, &why) == 0 && d.mode == h.mode && d.stream == 2 &&
              d.nstreams == 4 && d.window == 65536 && d.omit_ms == 1000 && d.session == h.session,
          "hello round trip");
    CHECK(lp_hello_decode(w, sizeof w - 1, &d, &why) == -1, "short hello");
    struct { int at; uint8_t val; const char *what; } cases[] = {
        {0, 'X', "magic"}, {4, 9, "version"}, {5, 7, "mode"}, {6, 4, "stream >= nstreams"},
        {7, 0, "nstreams 0"}, {7, 65, "nstreams 65"}, {20, 1, "reserved"}, {15, 0x7f, "window"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, w, sizeof b);
        b[cases[i].at] = cases[i].val;
        why = NULL;
        CHECK(lp_hello_decode(b, sizeof b, &d, &why) == -1 && why, "%s accepted", cases[i].what);
    }
    lp_hello r = {.mode = LP_RTT, .stream = 0, .nstreams = 1, .size = 0};
    lp_hello_encode(&r, b);
    CHECK(lp_hello_decode(b, sizeof b, &d, &why) == -1, "rtt size 0 accepted");
    r.size = LP_MAX_SIZE + 1;
    lp_hello_encode(&r, b);
    CHECK(lp_hello_decode(b, sizeof b, &d, &why) == -1, "rtt size too large accepted");

    /* where a HELLO may go: tput only to a data port, everything else only to the main one */
    CHECK(lp_hello_route(w, sizeof w, 1, &d, &why) == LP_TPUT, "tput on a data port");
    why = NULL;
    CHECK(lp_hello_route(w, sizeof w, 0, &d, &why) == -1 && why && strstr(why, "data port"),
          "tput on the main port accepted");
    lp_hello s = {.mode = LP_SETUP, .stream = 0, .nstreams = 8, .window = 1 << 20};
    lp_hello_encode(&s, b);
    CHECK(lp_hello_route(b, sizeof b, 0, &d, &why) == LP_SETUP && d.nstreams == 8, "setup");
    CHECK(lp_hello_route(b, sizeof b, 1, &d, &why) == -1, "setup on a data port accepted");
    CHECK(lp_hello_route(b, sizeof b - 1, 0, &d, &why) == -1, "a short setup accepted");
    uint8_t pb[LP_PORT_SIZE];
    lp_port_encode(41999, pb);
    CHECK(lp_port_decode(pb, sizeof pb) == 41999, "port round trip");
    CHECK(lp_port_decode(pb, 3) == -1, "a short port answer accepted");
    lp_port_encode(0, pb);
    CHECK(lp_port_decode(pb, sizeof pb) == -1, "port 0 accepted");
    lp_port_encode(65536, pb);
    CHECK(lp_port_decode(pb, sizeof pb) == -1, "port 65536 accepted");

    lp_report rep = {1000, 600, 123456789}, rd;
    uint8_t rw[LP_REPORT_SIZE];
    lp_report_encode(&rep, rw);
    CHECK(lp_report_decode(rw, sizeof rw, &rd) == 0 && rd.bytes == 1000 &&
              rd.bytes_after_omit == 600 && rd.ns_after_omit == 123456789,
          "report round trip");
    rep.bytes_after_omit = 2000;
    lp_report_encode(&rep, rw);
    CHECK(lp_report_decode(rw, sizeof rw, &rd) == -1, "more counted than received accepted");

    /* fuzz: random mutations of a valid hello; accepted ones must re-encode identically */
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    int accepted = 0;
    for (int i = 0; i < 200000; i++) {
        memcpy(b, w, sizeof b);
        for (int m = 0; m < 3; m++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[x % LP_HELLO_SIZE] = (uint8_t)(x >> 24);
        }
        if (lp_hello_decode(b, sizeof b, &d, &why) == 0) {
            uint8_t again[LP_HELLO_SIZE];
            lp_hello_encode(&d, again);
            CHECK(memcmp(again, b, sizeof b) == 0, "accepted hello does not re-encode");
            accepted++;
        }
    }
    CHECK(accepted > 1000, "fuzz reached the accept path only %d times", accepted);
    if (failures)
        return 1;
    printf("test_linkprobe_proto: all checks passed (%d fuzzed hellos accepted)\n", accepted);
    return 0;
}
