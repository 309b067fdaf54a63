/* fuzz_linkprobe_hello.c: fuzz target for what isthmus-linkprobe reads from a peer: the
 * HELLO and where the server routes it (lp_hello_route, on the main port or on a data
 * port), the data port's number the server answers a setup with (lp_port_decode, read
 * by the client) and the REPORT a tput stream ends with. The first input byte picks
 * which; the rest is its input. Properties checked besides memory safety: whatever
 * decodes re-encodes to exactly the same bytes; an accepted HELLO's fields are within
 * the limits the server relies on (stream count 1..64 and index below it, rtt size
 * 1..16 MiB, window at most 1 GiB so it fits SO_RCVBUF's int, omit at most an hour); a
 * data port runs throughput streams only and the main port everything else; a port is
 * 1..65535; a REPORT never counts more bytes after the omitted start than in all.
 * Built as a libFuzzer target with clang; with -DISM_FUZZ_STANDALONE a deterministic
 * driver (seeds + mutations) runs it under CTest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { K_MAIN, K_DATA, K_PORT, K_REPORT, K_N };
static size_t accepted[K_N], refused[K_N];

_Noreturn static void fail(const char *what, size_t size)
{
    fprintf(stderr, "fuzz_linkprobe_hello: property violated: %s (input of %zu bytes)\n", what, size);
    abort();
}

static void check_hello(const uint8_t *d, size_t n, int data_only)
{
    lp_hello h;
    const char *why = NULL;
    int mode = lp_hello_route(d, n, data_only, &h, &why);
    if (mode < 0) {
        if (!why)
            fail("a HELLO was refused without a reason", n);
        refused[data_only ? K_DATA : K_MAIN]++;
        return;
    }
    accepted[data_only ? K_DATA : K_MAIN]++;
    if (mode != h.mode || (data_only ? mode != LP_TPUT : mode != LP_RTT && mode != LP_SETUP))
        fail("a HELLO was routed to a port that does not run its mode", n);
    if (h.nstreams < 1 || h.nstreams > LP_MAX_STREAMS || h.stream >= h.nstreams ||
        h.window > LP_MAX_WINDOW || h.omit_ms > 3600000u ||
        (mode == LP_RTT && (h.size < 1 || h.size > LP_MAX_SIZE)))
        fail("an accepted HELLO has a field out of the server's limits", n);
    uint8_t again[LP_HELLO_SIZE];
    lp_hello_encode(&h, again);
    if (n < LP_HELLO_SIZE || memcmp(again, d, LP_HELLO_SIZE) != 0)
        fail("an accepted HELLO does not re-encode to its bytes", n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int k = data[0] % K_N;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    if (k == K_MAIN || k == K_DATA) {
        check_hello(d, n, k == K_DATA);
    } else if (k == K_PORT) {
        int port = lp_port_decode(d, n);
        if (port < 0) {
            refused[k]++;
            return 0;
        }
        accepted[k]++;
        uint8_t again[LP_PORT_SIZE];
        lp_port_encode(port, again);
        if (port < 1 || port > 65535 || memcmp(again, d, LP_PORT_SIZE) != 0)
            fail("an accepted port answer is out of range or does not re-encode", n);
    } else {
        lp_report r;
        if (lp_report_decode(d, n, &r) != 0) {
            refused[k]++;
            return 0;
        }
        accepted[k]++;
        uint8_t again[LP_REPORT_SIZE];
        lp_report_encode(&r, again);
        if (r.bytes_after_omit > r.bytes || memcmp(again, d, LP_REPORT_SIZE) != 0)
            fail("an accepted REPORT is inconsistent or does not re-encode", n);
    }
    return 0;
}

#ifdef ISM_FUZZ_STANDALONE
#include "../../../tests/fuzz_driver.h"

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    enum { NSEEDS = 6, SEEDMAX = 64 };
    static uint8_t seeds[NSEEDS][SEEDMAX];
    size_t len[NSEEDS];
    lp_hello rtt = {.mode = LP_RTT, .stream = 0, .nstreams = 1, .size = 8};
    lp_hello setup = {.mode = LP_SETUP, .nstreams = 16, .window = 4 << 20, .session = 42};
    lp_hello tput = {.mode = LP_TPUT, .stream = 3, .nstreams = 16, .window = 4 << 20,
                     .omit_ms = 1000, .session = 42};
    seeds[0][0] = K_MAIN;
    lp_hello_encode(&rtt, seeds[0] + 1);
    seeds[1][0] = K_MAIN;
    lp_hello_encode(&setup, seeds[1] + 1);
    seeds[2][0] = K_DATA;
    lp_hello_encode(&tput, seeds[2] + 1);
    seeds[3][0] = K_DATA; /* a setup on a data port: refused */
    lp_hello_encode(&setup, seeds[3] + 1);
    for (int s = 0; s < 4; s++)
        len[s] = 1 + LP_HELLO_SIZE;
    seeds[4][0] = K_PORT;
    lp_port_encode(41999, seeds[4] + 1);
    len[4] = 1 + LP_PORT_SIZE;
    lp_report rep = {1 << 20, 1 << 19, 123456789};
    seeds[5][0] = K_REPORT;
    lp_report_encode(&rep, seeds[5] + 1);
    len[5] = 1 + LP_REPORT_SIZE;
    for (int s = 0; s < NSEEDS; s++)
        ism_fuzz_run(seeds[s], len[s]);
    static uint8_t buf[SEEDMAX + 16];
    for (long it = 0; it < iters; it++) {
        int s = (int)(ism_fuzz_rng() % NSEEDS);
        size_t n = len[s];
        memcpy(buf, seeds[s], n);
        for (int m = 0, muts = 1 + (int)(ism_fuzz_rng() % 3); m < muts; m++) {
            uint64_t x = ism_fuzz_rng();
            if (x % 4 == 0)
                buf[0] = (uint8_t)(x >> 24); /* the same bytes, read as another kind */
            else
                n = ism_fuzz_mutate(buf, n, sizeof buf, 1);
        }
        ism_fuzz_run(buf, n);
    }
    static const char *names[K_N] = {"HELLO on the main port", "HELLO on a data port", "PORT",
                                     "REPORT"};
    printf("fuzz_linkprobe_hello: %ld inputs;", iters + NSEEDS);
    for (int k = 0; k < K_N; k++)
        printf(" %s %zu/%zu", names[k], accepted[k], accepted[k] + refused[k]);
    printf(" accepted\n");
    for (int k = 0; k < K_N; k++)
        if (!accepted[k] || !refused[k])
            fail("the driver never reached both outcomes of a decoder", 0);
    return 0;
}
#endif
