/* fuzz_udp_wire.c: fuzz target for the reliable-UDP packet parsers and for a live
 * connection's packet handling, the code that reads UDP input from the network.
 *
 * Owns these properties on arbitrary input: the check and decode functions never read
 * past n and only return documented codes; an accepted DATA header and an accepted ACK
 * re-encode to the same bytes (through the same encoder and ACK builder the sender
 * uses); and a connection fed the input as an authenticated packet (token and CRC made
 * to match, so the deep paths run) either handles it or fails cleanly with a protocol
 * error, never crashing or corrupting its state (its invariants are checked after
 * every packet), also when the packet lands in a posted receive buffer. Built as a
 * libFuzzer target with clang; with -DISM_FUZZ_STANDALONE it has a deterministic driver
 * (seeds, a path-MTU probe among them, + mutations) that CTest runs.
 */
#include "conn.h"
#include "setup.h"
#include "wire.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t TOK[ISM_UDPW_TOKEN_LEN] = {9, 8, 7, 6, 5, 4, 3, 2};
static size_t data_ok, ack_ok, conn_pkts, conn_fails;
static ism_udp_conn *conn;

static void fail(const char *what, size_t size)
{
    fprintf(stderr, "fuzz_udp_wire: property violated: %s (input of %zu bytes)\n", what, size);
    abort();
}

static ism_udp_conn *new_conn(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(9)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        fail("no UDP socket for the connection under test", 0);
    ism_udp_opts o;
    ism_udp_opts_default(&o);
    o.sndbuf = o.rcvbuf = 1 << 16;
    o.crc = 0;
    o.keepalive_ms = 1000000;
    o.dead_ms = 1000000;
    char err[256];
    ism_udp_conn *c = udp_conn_new(fd, &o, TOK, TOK, 1 << 16, NULL, 0, "fuzz peer", err, sizeof err);
    if (!c)
        fail(err, 0);
    /* Give the sender something in flight so ACKs have packets to act on. */
    static uint8_t zeros[40000];
    ism_udp_send_nb(c, zeros, sizeof zeros);
    return c;
}

static void check_invariants(const ism_udp_conn *c, size_t size)
{
    if (c->snd_una > c->snd_nxt || c->snd_nxt > c->snd_end || c->lua > c->next_pn ||
        c->chunk_head > c->chunk_tail || c->rcv_read > c->rcv_nxt ||
        c->rcv_nxt > c->rcv_read + c->rbuf_size || c->nivals > UDP_IVAL_MAX ||
        c->inflight > c->snd_nxt - c->snd_una)
        fail("connection invariant broken", size);
    for (unsigned i = 0; i < c->nivals; i++)
        if (c->ivals[i].lo <= c->rcv_nxt || c->ivals[i].lo >= c->ivals[i].hi ||
            (i && c->ivals[i].lo <= c->ivals[i - 1].hi))
            fail("receiver intervals unordered or overlapping", size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > ISM_UDPW_MAX_DGRAM)
        size = ISM_UDPW_MAX_DGRAM;
    uint8_t *p = malloc(size ? size : 1);
    if (!p)
        fail("malloc", size);
    memcpy(p, data, size);
    int t = ism_udpw_check(p, size, size >= 16 ? p + 8 : TOK, size && (p[0] & 0x80));
    if (t != ISM_UDPW_DATA && t != ISM_UDPW_ACK && t != ISM_UDPW_CLOSE && t != ISM_UDPW_ESHORT &&
        t != ISM_UDPW_EVERSION && t != ISM_UDPW_ETYPE && t != ISM_UDPW_ECRC && t != ISM_UDPW_ELEN)
        fail("check returned an undocumented code", size);

    ism_udpw_data d;
    int rc = ism_udpw_decode_data(p, size, &d);
    if (rc == 0) {
        data_ok++;
        uint8_t h[ISM_UDPW_DATA_HDR];
        ism_udpw_encode_data(h, d.flags, p + 8, d.pn, d.offset, d.lua_delta);
        if (memcmp(h, p, 4) != 0 || memcmp(h + 8, p + 8, ISM_UDPW_DATA_HDR - 8) != 0 ||
            d.len != size - ISM_UDPW_DATA_HDR)
            fail("accepted DATA does not re-encode to its bytes", size);
    } else if (rc < ISM_UDPW_EFIELD || rc > ISM_UDPW_ESHORT) {
        fail("decode_data returned an undocumented code", size);
    }
    ism_udpw_ack a;
    rc = ism_udpw_decode_ack(p, size, &a);
    if (rc == 0) {
        ack_ok++;
        static ism_udpw_ackb b;
        static uint8_t out[ISM_UDPW_MAX_DGRAM];
        ism_udpw_ack_begin(&b, out, sizeof out, p + 8, a.largest, a.rcv_limit, a.ack_delay_us);
        for (unsigned i = 0; i < a.nranges; i++)
            if (ism_udpw_ack_add_range(&b, ism_udpw_ack_range(&a, i).hi,
                                       ism_udpw_ack_range(&a, i).count) != 0)
                fail("builder refused a range that fitted", size);
        for (unsigned i = 0; i < a.nnacks; i++)
            if (ism_udpw_ack_add_nack(&b, (uint32_t)(a.largest - ism_udpw_ack_nack(&a, i))) != 0)
                fail("builder refused a NACK that fitted", size);
        size_t n = ism_udpw_ack_finish(&b);
        out[2] = p[2];
        out[3] = p[3];
        if (n != size || memcmp(out + 8, p + 8, n - 8) != 0 || memcmp(out, p, 2) != 0)
            fail("accepted ACK does not re-encode to its bytes", size);
    } else if (rc < ISM_UDPW_EFIELD || rc > ISM_UDPW_ESHORT) {
        fail("decode_ack returned an undocumented code", size);
    }
    uint32_t reason;
    rc = ism_udpw_decode_close(p, size, &reason);
    if (rc != 0 && (rc < ISM_UDPW_EFIELD || rc > ISM_UDPW_ESHORT))
        fail("decode_close returned an undocumented code", size);

    /* The same bytes as an authenticated packet on a live connection. */
    if (size >= ISM_UDPW_COMMON) {
        if (!conn)
            conn = new_conn();
        memcpy(p + 8, TOK, ISM_UDPW_TOKEN_LEN);
        p[2] &= (uint8_t)~(ISM_UDPW_F_CRC & 0xff);
        p[3] &= (uint8_t)~(ISM_UDPW_F_CRC >> 8);
        memset(p + 4, 0, 4);
        int64_t now = udp_now_us();
        /* Every other packet lands while a receive is posted: a buffer of exactly the
         * posted size (ASan sees a write past it), freed when the post ends (and a write
         * after that). */
        uint8_t *post = NULL;
        if (conn_pkts % 2) {
            size_t n = 1 + (size_t)data[size - 1] * 97;
            post = malloc(n);
            if (!post || ism_udp_recv_post(conn, post, n) != 0)
                fail("a post on an idle connection was refused", size);
        }
        udp_dispatch(conn, p, size, now);
        conn_pkts++;
        if (post) {
            uint64_t pend = conn->post_off + conn->post_len;
            if (conn->rcv_read != (conn->rcv_nxt < pend ? conn->rcv_nxt : pend))
                fail("a posted receive's filled prefix is not the contiguous data", size);
            if (data[size - 2] & 1)
                ism_udp_recv_cancel(conn);
            else if (ism_udp_recv_test(conn) < 0) /* not over, or the connection failed */
                ism_udp_recv_cancel(conn);
            if (conn->post_buf)
                fail("a posted receive outlived its cancel", size);
            free(post);
        }
        if (!conn->err) {
            udp_maybe_ack(conn, now);
            udp_send_data(conn, now);
            udp_tx_flush(conn);
            uint8_t sink[4096];
            ism_udp_recv_nb(conn, sink, sizeof sink);
        }
        check_invariants(conn, size);
        if (conn->err) {
            conn_fails++;
            udp_conn_free(conn);
            conn = NULL;
        }
    }
    free(p);
    return 0;
}

#ifdef ISM_FUZZ_STANDALONE

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    enum { NSEEDS = 7 };
    static uint8_t seeds[NSEEDS][1600];
    size_t seedlen[NSEEDS];
    /* valid DATA (two sizes, FIN), a PING, valid ACKs with ranges and NACKs, a CLOSE */
    ism_udpw_encode_data(seeds[0], 0, TOK, 0, 0, 0);
    seedlen[0] = ISM_UDPW_DATA_HDR + 1436;
    ism_udpw_encode_data(seeds[1], ISM_UDPW_F_FIN, TOK, 3, 1436, 2);
    seedlen[1] = ISM_UDPW_DATA_HDR + 20;
    ism_udpw_encode_data(seeds[2], ISM_UDPW_F_PING, TOK, 7, 0, 7);
    seedlen[2] = ISM_UDPW_DATA_HDR;
    static ism_udpw_ackb b;
    ism_udpw_ack_begin(&b, seeds[3], 1472, TOK, 20, 1 << 16, 100);
    ism_udpw_ack_add_range(&b, 20, 5);
    ism_udpw_ack_add_range(&b, 10, 3);
    ism_udpw_ack_add_nack(&b, 5);
    ism_udpw_ack_add_nack(&b, 6);
    seedlen[3] = ism_udpw_ack_finish(&b);
    ism_udpw_ack_begin(&b, seeds[4], 1472, TOK, 2, 1 << 17, 0);
    ism_udpw_ack_add_range(&b, 2, 3);
    seedlen[4] = ism_udpw_ack_finish(&b);
    seedlen[5] = ism_udpw_encode_close(seeds[5], TOK, 1);
    /* a path-MTU probe: PING|PAD, zero padding (the array is zero) */
    ism_udpw_encode_data(seeds[6], ISM_UDPW_F_PING | ISM_UDPW_F_PAD, TOK, 9, 0, 9);
    seedlen[6] = 1300;
    for (int s = 0; s < NSEEDS; s++)
        LLVMFuzzerTestOneInput(seeds[s], seedlen[s]);
    static uint8_t buf[1600];
    for (long it = 0; it < iters; it++) {
        int s = (int)(rng() % NSEEDS);
        size_t n = seedlen[s];
        memcpy(buf, seeds[s], n);
        int muts = 1 + (int)(rng() % 6);
        for (int m = 0; m < muts; m++) {
            uint64_t r = rng();
            if (n == 0)
                break;
            switch (r % 5) {
            case 0: buf[rng() % n] ^= (uint8_t)(1u << (r >> 8) % 8); break;
            case 1: buf[rng() % n] = (uint8_t)(r >> 16); break;
            case 2: n = (size_t)(rng() % (n + 1)); break;
            case 3: /* small integers in a 64-bit field: where the interesting values are */
                if (n >= 24) {
                    size_t at = 16 + 8 * (rng() % ((n - 16) / 8 > 3 ? 3 : (n - 16) / 8));
                    uint64_t v = rng() % 64;
                    for (int i = 0; i < 8; i++)
                        buf[at + i] = (uint8_t)(v >> (8 * i));
                }
                break;
            default:
                if (n < sizeof buf - 12) {
                    for (int i = 0; i < 12; i++)
                        buf[n + i] = (uint8_t)rng();
                    n += 4 * (1 + rng() % 3);
                }
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_udp_wire: %ld inputs; %zu DATA and %zu ACK accepted; %zu fed to a connection, "
           "%zu of which it refused as protocol violations\n",
           iters + NSEEDS, data_ok, ack_ok, conn_pkts, conn_fails);
    if (data_ok == 0 || ack_ok == 0 || conn_fails == 0)
        fail("the driver never reached the deep paths", 0);
    if (conn)
        udp_conn_free(conn);
    return 0;
}
#endif
