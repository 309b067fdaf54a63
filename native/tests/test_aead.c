/* test_aead.c: checks for link encryption (wan/aead.c, wan/sstream.c) and the suite
 * negotiation of the handshake (wan/auth_hs.c).
 *
 * Owns: keys that agree between the two ends of one handshake and differ for another
 * direction, transport, connection or job; records that open only with the right key,
 * number and additional data, whatever single bit is changed; the key update at the same
 * record on both sides, with the previous key kept for late datagrams and a forged far
 * number refused without moving the keys; the replay window; the record stream over a
 * socket pair (a pattern through, a flipped bit, a truncated stream, a replayed and a
 * dropped record all fail with EBADMSG, and nothing of a bad record is delivered); and
 * which suite two handshakes agree on for every pair of settings.
 */
#include "aead.h"
#include "auth.h"
#include "sock.h"
#include "sstream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static const char JOB[] = "00112233445566778899aabbccddeeff";
static const char SECRET[] = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
static const char OTHER[] = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
static const ism_auth_id C = {1, 0}, S = {2, 0};

static void key(ism_auth_key *k, const char *job, const char *secret)
{
    char err[200];
    if (ism_auth_key_from_hex(k, job, secret, err, sizeof err) != 0) {
        fprintf(stderr, "FATAL: %s\n", err);
        exit(2);
    }
}

/* Two handshakes in memory; returns 0 when both ended DONE. */
static int handshake(const ism_auth_key *kc, const ism_auth_key *ks, unsigned cs, unsigned ss,
                     ism_auth_hs *c, ism_auth_hs *s)
{
    ism_auth_hs_start(c, 0, kc, C, cs, 0, "server");
    ism_auth_hs_start(s, 1, ks, S, ss, 0, "client");
    for (int turn = 0; turn < 10; turn++) {
        ism_auth_hs *from = turn % 2 ? s : c, *to = turn % 2 ? c : s;
        const uint8_t *out;
        size_t n = ism_auth_hs_pending(from, &out);
        if (n == 0)
            continue;
        uint8_t m[ISM_AUTH_MSG_MAX];
        memcpy(m, out, n);
        ism_auth_hs_sent(from, n);
        for (size_t at = 0; at < n && to->state == ISM_AUTH_HS_RUN;) {
            uint8_t *in;
            size_t w = ism_auth_hs_wanted(to, &in);
            if (w == 0)
                break;
            size_t k = w < n - at ? w : n - at;
            memcpy(in, m + at, k);
            ism_auth_hs_received(to, k);
            at += k;
        }
    }
    return c->state == ISM_AUTH_HS_DONE && s->state == ISM_AUTH_HS_DONE ? 0 : -1;
}

static void derive_pair(const char *transport, ism_aead_keys *kc, ism_aead_keys *ks)
{
    ism_auth_key k;
    key(&k, JOB, SECRET);
    ism_auth_hs c, s;
    CHECK(handshake(&k, &k, ISM_AUTH_SUITES_AEAD, ISM_AUTH_SUITES_AEAD, &c, &s) == 0,
          "handshake: %s / %s", c.err, s.err);
    CHECK(ism_aead_derive(&c, transport, kc) == 0 && ism_aead_derive(&s, transport, ks) == 0,
          "derive");
    ism_auth_hs_wipe(&c);
    ism_auth_hs_wipe(&s);
}

static void test_keys_agree_and_differ(void)
{
    ism_aead_keys a, b, other;
    derive_pair("gw-tcp", &a, &b);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "the two ends derived different keys");
    CHECK(memcmp(&a.c2s, &a.s2c, sizeof a.c2s) != 0, "both directions have the same key");
    derive_pair("gw-tcp", &other, &b);
    CHECK(memcmp(&a.c2s, &other.c2s, sizeof a.c2s) != 0, "a new handshake gave the same keys");
    /* the same handshake for another transport: keep it, derive twice */
    ism_auth_key k;
    key(&k, JOB, SECRET);
    ism_auth_hs c, s;
    CHECK(handshake(&k, &k, ISM_AUTH_SUITES_AEAD, ISM_AUTH_SUITES_AEAD, &c, &s) == 0, "hs");
    ism_aead_keys t1, t2;
    CHECK(ism_aead_derive(&c, "gw-tcp", &t1) == 0 && ism_aead_derive(&c, "copy", &t2) == 0, "d");
    CHECK(memcmp(&t1.c2s, &t2.c2s, sizeof t1.c2s) != 0, "keys do not depend on the transport");
    ism_auth_hs_wipe(&c);
    ism_auth_hs_wipe(&s);
}

static void test_records_open_only_untouched(int suite)
{
    ism_aead_keys ka, kb;
    derive_pair("gw-tcp", &ka, &kb);
    ka.suite = kb.suite = suite;
    ism_aead tx, rx;
    CHECK(ism_aead_init(&tx, suite, &ka.c2s, 1, 22) == 0 && ism_aead_init(&rx, suite, &kb.c2s, 0, 22) == 0,
          "init %s", ism_aead_suite_name(suite));
    uint8_t pt[100], ct[100], tag[16], out[100], aad[4] = {1, 2, 3, 4};
    for (int i = 0; i < 100; i++)
        pt[i] = (uint8_t)(i * 7);
    struct iovec v[2] = {{pt, 30}, {pt + 30, 70}};
    CHECK(ism_aead_seal(&tx, 5, aad, 4, v, 2, ct, tag) == 0, "seal");
    CHECK(memcmp(ct, pt, 100) != 0, "ciphertext equals plaintext");
    CHECK(ism_aead_open(&rx, 5, aad, 4, ct, 100, tag, out) == 0 && memcmp(out, pt, 100) == 0,
          "an untouched record did not open (%s)", ism_aead_suite_name(suite));
    int opened = 0;
    for (int bit = 0; bit < 8 * 100; bit += 13) {
        ct[bit / 8] ^= (uint8_t)(1 << bit % 8);
        opened += ism_aead_open(&rx, 5, aad, 4, ct, 100, tag, out) == 0;
        ct[bit / 8] ^= (uint8_t)(1 << bit % 8);
    }
    for (int bit = 0; bit < 128; bit += 5) {
        tag[bit / 8] ^= (uint8_t)(1 << bit % 8);
        opened += ism_aead_open(&rx, 5, aad, 4, ct, 100, tag, out) == 0;
        tag[bit / 8] ^= (uint8_t)(1 << bit % 8);
    }
    aad[2] ^= 1;
    opened += ism_aead_open(&rx, 5, aad, 4, ct, 100, tag, out) == 0;
    aad[2] ^= 1;
    opened += ism_aead_open(&rx, 6, aad, 4, ct, 100, tag, out) == 0;
    CHECK(opened == 0, "%d changed records opened", opened);
    /* the other direction's key, and another handshake's, do not open it */
    ism_aead wrong;
    CHECK(ism_aead_init(&wrong, suite, &kb.s2c, 0, 22) == 0, "init");
    CHECK(ism_aead_open(&wrong, 5, aad, 4, ct, 100, tag, out) != 0, "the other direction's key opened it");
    ism_aead_free(&wrong);
    ism_aead_free(&tx);
    ism_aead_free(&rx);
}

static void test_key_update(void)
{
    ism_aead_keys ka, kb;
    derive_pair("gw-udp", &ka, &kb);
    ism_aead tx, rx;
    CHECK(ism_aead_init(&tx, ka.suite, &ka.c2s, 1, 4) == 0 &&
              ism_aead_init(&rx, kb.suite, &kb.c2s, 0, 4) == 0,
          "init");
    enum { N = 200 };
    static uint8_t ct[N][16], tag[N][16];
    uint8_t pt[16] = "sixteen bytes!!", out[16];
    struct iovec v = {pt, 16};
    for (uint64_t q = 0; q < N; q++)
        CHECK(ism_aead_seal(&tx, q, NULL, 0, &v, 1, ct[q], tag[q]) == 0, "seal %llu",
              (unsigned long long)q);
    CHECK(tx.rekeys == N / 16, "%llu key updates sealing %d records 16 per key",
          (unsigned long long)tx.rekeys, N);
    CHECK(memcmp(ct[0], ct[16], 16) != 0, "the key did not change");
    CHECK(tx.prev_ctx == NULL && tx.next_ctx == NULL, "the sealing side keeps other keys");
    for (uint64_t q = 0; q < 40; q++)
        CHECK(ism_aead_open(&rx, q, NULL, 0, ct[q], 16, tag[q], out) == 0, "open %llu",
              (unsigned long long)q);
    /* late, from the previous key: still opens; two keys back: gone */
    CHECK(ism_aead_open(&rx, 20, NULL, 0, ct[20], 16, tag[20], out) == 0,
          "a late record of the previous key did not open");
    CHECK(ism_aead_open(&rx, 3, NULL, 0, ct[3], 16, tag[3], out) != 0, "two keys back opened");
    /* a forged number far ahead, or a bad record of the next key, moves nothing */
    uint64_t e = rx.epoch;
    CHECK(ism_aead_open(&rx, 1000000, NULL, 0, ct[30], 16, tag[30], out) != 0 && rx.epoch == e,
          "a far number opened or moved the keys");
    CHECK(ism_aead_open(&rx, 50, NULL, 0, ct[50], 16, tag[49], out) != 0 && rx.epoch == e,
          "a bad record of the next key moved the keys");
    /* a long loss: records of three keys later still open (any epoch's key can be made) */
    CHECK(ism_aead_open(&rx, 100, NULL, 0, ct[100], 16, tag[100], out) == 0 && rx.epoch == 6,
          "a record three keys ahead did not open (epoch %llu)", (unsigned long long)rx.epoch);
    CHECK(ism_aead_open(&rx, 95, NULL, 0, ct[95], 16, tag[95], out) == 0,
          "the key before a jump is not made for a late record");
    CHECK(rx.failed == 3, "%llu failed opens counted, 3 expected", (unsigned long long)rx.failed);
    /* a rejected record's plaintext is wiped */
    uint8_t w[16];
    memset(w, 0xAA, sizeof w);
    tag[150][0] ^= 1;
    CHECK(ism_aead_open(&rx, 150, NULL, 0, ct[150], 16, tag[150], w) != 0, "bad tag opened");
    int zeros = 0;
    for (int i = 0; i < 16; i++)
        zeros += w[i] == 0;
    CHECK(zeros == 16, "the plaintext of a rejected record was left readable");
    ism_aead_free(&tx);
    ism_aead_free(&rx);
}

static void test_keys_bound_to_context(void)
{
    ism_auth_key k1, k2;
    key(&k1, JOB, SECRET);
    key(&k2, "ffeeddccbbaa99887766554433221100", SECRET);
    ism_auth_hs c, s, c2, s2;
    CHECK(handshake(&k1, &k1, ISM_AUTH_SUITES_AEAD, ISM_AUTH_SUITES_AEAD, &c, &s) == 0, "hs");
    CHECK(handshake(&k2, &k2, ISM_AUTH_SUITES_AEAD, ISM_AUTH_SUITES_AEAD, &c2, &s2) == 0, "hs2");
    /* the second job's handshake with the first's nonces, shares and DH: only the job differs */
    memcpy(c2.nc, c.nc, sizeof c.nc);
    memcpy(c2.ns, c.ns, sizeof c.ns);
    memcpy(c2.dh, c.dh, sizeof c.dh);
    ism_aead_keys a, b;
    CHECK(ism_aead_derive(&c, "t", &a) == 0 && ism_aead_derive(&c2, "t", &b) == 0, "derive");
    CHECK(memcmp(&a.c2s, &b.c2s, sizeof a.c2s) != 0, "keys do not depend on the job");
    ism_auth_id keep = c.peer;
    c.peer.gw ^= 1;
    CHECK(ism_aead_derive(&c, "t", &b) == 0 && memcmp(&a.c2s, &b.c2s, sizeof a.c2s) != 0,
          "keys do not depend on the identities");
    c.peer = keep;
    int suite = c.suite;
    c.suite = suite == ISM_AEAD_AES256GCM ? ISM_AEAD_CHACHA20POLY1305 : ISM_AEAD_AES256GCM;
    CHECK(ism_aead_derive(&c, "t", &b) == 0 && memcmp(&a.c2s, &b.c2s, sizeof a.c2s) != 0,
          "keys do not depend on the suite");
    c.suite = suite;
    c.dh[0] ^= 1;
    CHECK(ism_aead_derive(&c, "t", &b) == 0 && memcmp(&a.c2s, &b.c2s, sizeof a.c2s) != 0,
          "keys do not depend on the key exchange (no forward secrecy)");
    c.dh[0] ^= 1;
    /* "t" then the job id cannot be read as another label: the label's length is in */
    CHECK(ism_aead_derive(&c, "tt", &b) == 0 && memcmp(&a.c2s, &b.c2s, sizeof a.c2s) != 0, "label");
    ism_aead_keys s1, s2b;
    CHECK(ism_aead_keys_sub(&a, "udp-setup", &s1) == 0 && memcmp(&s1.c2s, &a.c2s, sizeof s1.c2s),
          "a sub-key equals its parent");
    s2b = a;
    CHECK(ism_aead_keys_bind(&s2b, "udp-conn", (const uint8_t *)"ctx", 3) == 0 &&
              memcmp(&s2b.c2s, &s1.c2s, sizeof s1.c2s) && memcmp(&s2b.c2s, &a.c2s, sizeof a.c2s),
          "bound keys equal the parent or the sub-key");
    /* the two ends of one handshake made the same shared secret; another's differs */
    CHECK(memcmp(c.dh, s.dh, sizeof c.dh) == 0 && memcmp(c.dh, c2.dh, sizeof c.dh) == 0,
          "DH copied above");
    ism_auth_hs c3, s3;
    CHECK(handshake(&k1, &k1, ISM_AUTH_SUITES_AEAD, ISM_AUTH_SUITES_AEAD, &c3, &s3) == 0, "hs3");
    CHECK(memcmp(c3.dh, s3.dh, sizeof c3.dh) == 0 && memcmp(c3.dh, c.dh, sizeof c.dh) != 0,
          "the key exchange does not agree, or repeats");
    ism_auth_hs *all[] = {&c, &s, &c2, &s2, &c3, &s3};
    for (int i = 0; i < 6; i++)
        ism_auth_hs_wipe(all[i]);
}

static void test_rekey_interval_agreed(void)
{
    ism_auth_key k;
    key(&k, JOB, SECRET);
    ism_auth_hs c, s;
    ism_auth_hs_start(&c, 0, &k, C, ISM_AUTH_SUITES_AEAD, 6, "server");
    ism_auth_hs_start(&s, 1, &k, S, ISM_AUTH_SUITES_AEAD, 0, "client");
    /* drive them: reuse the helper's loop by running the exchange by hand */
    for (int turn = 0; turn < 10; turn++) {
        ism_auth_hs *from = turn % 2 ? &s : &c, *to = turn % 2 ? &c : &s;
        const uint8_t *out;
        size_t n = ism_auth_hs_pending(from, &out);
        uint8_t m[ISM_AUTH_MSG_MAX];
        memcpy(m, out, n);
        ism_auth_hs_sent(from, n);
        for (size_t at = 0; at < n;) {
            uint8_t *in;
            size_t w = ism_auth_hs_wanted(to, &in);
            if (!w)
                break;
            size_t q = w < n - at ? w : n - at;
            memcpy(in, m + at, q);
            ism_auth_hs_received(to, q);
            at += q;
        }
    }
    CHECK(c.state == ISM_AUTH_HS_DONE && s.state == ISM_AUTH_HS_DONE, "handshake");
    CHECK(c.rekey_log2 == 6 && s.rekey_log2 == 6, "intervals agreed: %d / %d (want the smaller, 6)",
          c.rekey_log2, s.rekey_log2);
    ism_auth_hs_wipe(&c);
    ism_auth_hs_wipe(&s);
}

static void test_window(void)
{
    ism_aead_window w = {0};
    CHECK(ism_aead_window_check(&w, 0) && ism_aead_window_check(&w, 5), "fresh window");
    ism_aead_window_mark(&w, 5);
    CHECK(!ism_aead_window_check(&w, 5), "a replay was accepted");
    CHECK(ism_aead_window_check(&w, 3), "an early one that never came was refused");
    ism_aead_window_mark(&w, 3);
    CHECK(!ism_aead_window_check(&w, 3), "a replay of a late one was accepted");
    ism_aead_window_mark(&w, 100000);
    CHECK(!ism_aead_window_check(&w, 5) && !ism_aead_window_check(&w, 100000 - ISM_AEAD_WINDOW),
          "numbers older than the window were accepted");
    CHECK(ism_aead_window_check(&w, 99990) && ism_aead_window_check(&w, 100001),
          "numbers in the window refused");
    /* the edge: ISM_AEAD_WINDOW - 64 numbers below the top are still told apart */
    ism_aead_window e = {0};
    ism_aead_window_mark(&e, 10000);
    CHECK(ism_aead_window_check(&e, 10001 - (ISM_AEAD_WINDOW - 64)) &&
              !ism_aead_window_check(&e, 10000 - (ISM_AEAD_WINDOW - 64)),
          "the window's edge is not where aead.h says");
    /* every number once, in a shuffled order over a long run: each accepted exactly once */
    ism_aead_window x = {0};
    int dups = 0, refused = 0;
    for (uint64_t base = 0; base < 200000; base += 64)
        for (uint64_t i = 0; i < 64; i++) {
            uint64_t q = base + (i * 37) % 64;
            refused += !ism_aead_window_check(&x, q);
            ism_aead_window_mark(&x, q);
            dups += ism_aead_window_check(&x, q);
        }
    CHECK(refused == 0 && dups == 0, "%d refused, %d accepted twice", refused, dups);
}

/* ---- the record stream over a socket pair ---- */

static void pair(int fds[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) {
        perror("socketpair");
        exit(2);
    }
    int big = 1 << 20;
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
}

static void streams(ism_sstream *a, ism_sstream *b, int rekey_log2)
{
    ism_aead_keys ka, kb;
    derive_pair("gw-tcp", &ka, &kb);
    if (rekey_log2)
        ka.rekey_log2 = kb.rekey_log2 = rekey_log2;
    CHECK(ism_sstream_init(a, &ka, 1) == 0 && ism_sstream_init(b, &kb, 0) == 0,
          "sstream init");
}

static void test_stream_pattern(void)
{
    ism_sstream a, b;
    streams(&a, &b, 4);
    int fds[2];
    pair(fds);
    size_t n = 600000;
    uint8_t *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 13);
    size_t sent = 0, got = 0;
    while (got < n) {
        if (sent < n) {
            size_t k = n - sent < 5000 ? n - sent : 5000 + sent % 777;
            struct iovec v[2] = {{src + sent, k / 2}, {src + sent + k / 2, k - k / 2}};
            ssize_t t = ism_sstream_seal(&a, v, 2);
            CHECK(t >= 0, "seal");
            sent += (size_t)t;
        }
        CHECK(ism_sstream_flush(&a, fds[0]) >= 0, "flush: %s", strerror(errno));
        ssize_t r = ism_sstream_read(&b, fds[1], dst + got, 1 + got % 20000);
        if (r < 0)
            CHECK(errno == EAGAIN, "read: %s", strerror(errno));
        else
            got += (size_t)r;
    }
    CHECK(memcmp(src, dst, n) == 0, "the bytes through the record stream differ");
    CHECK(a.tx.rekeys > 3 && a.tx.rekeys == b.rx.rekeys, "key updates: %llu sealing, %llu opening",
          (unsigned long long)a.tx.rekeys, (unsigned long long)b.rx.rekeys);
    /* nothing of the plaintext on the wire: seal the pattern again and look at the bytes */
    close(fds[0]);
    close(fds[1]);
    free(src);
    free(dst);
    ism_sstream_free(&a);
    ism_sstream_free(&b);
}

/* Seal msg, let `damage` change the bytes on the way, then read: the reader must fail
 * with `want` (EBADMSG, or EPIPE for a stream that merely stops) and deliver nothing of
 * the damaged record. */
static void damaged_as(const char *what, void (*damage)(uint8_t *w, size_t *n), int want)
{
    ism_sstream a, b;
    streams(&a, &b, 0);
    uint8_t msg[3000];
    memset(msg, 'x', sizeof msg);
    struct iovec v = {msg, sizeof msg};
    /* two records: the first untouched, then the one damaged */
    CHECK(ism_sstream_seal(&a, &v, 1) == (ssize_t)sizeof msg, "seal");
    v.iov_len = 100;
    CHECK(ism_sstream_seal(&a, &v, 1) == 100, "seal 2");
    uint8_t wire[8000];
    size_t n = a.tx_len;
    memcpy(wire, a.txb, n);
    damage(wire, &n);
    int fds[2];
    pair(fds);
    CHECK(write(fds[0], wire, n) == (ssize_t)n, "write");
    close(fds[0]);
    uint8_t out[4000];
    size_t got = 0;
    ssize_t r;
    int fails = 0;
    for (int i = 0; i < 100; i++) {
        r = ism_sstream_read(&b, fds[1], out + got, sizeof out - got);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        fails = r < 0 && errno == want;
        break;
    }
    CHECK(fails, "%s: the stream did not fail with %s (got %zu bytes)", what, strerror(want), got);
    CHECK(got == 0 || got == sizeof msg, "%s: %zu bytes of a damaged record delivered", what, got);
    CHECK(b.rejected == (want == EBADMSG), "%s: %llu records rejected", what,
          (unsigned long long)b.rejected);
    close(fds[1]);
    ism_sstream_free(&a);
    ism_sstream_free(&b);
}

static void damaged(const char *what, void (*damage)(uint8_t *w, size_t *n))
{
    damaged_as(what, damage, EBADMSG);
}

static void flip_second(uint8_t *w, size_t *n) { w[*n - 30] ^= 0x10; }
static void flip_first(uint8_t *w, size_t *n) { (void)n; w[100] ^= 0x01; }
static void cut_short(uint8_t *w, size_t *n) { (void)w; *n -= 5; }
static void swap_records(uint8_t *w, size_t *n)
{
    /* the second record put first: right key, wrong number */
    size_t first = 4 + 3000 + 16, second = *n - first;
    uint8_t tmp[8000];
    memcpy(tmp, w + first, second);
    memmove(w + second, w, first);
    memcpy(w, tmp, second);
}
static void drop_first(uint8_t *w, size_t *n)
{
    size_t first = 4 + 3000 + 16;
    memmove(w, w + first, *n - first);
    *n -= first;
}
static void replay_first(uint8_t *w, size_t *n)
{
    size_t first = 4 + 3000 + 16;
    memcpy(w + first, w, first); /* the first record again where the second was */
    *n = 2 * first;
}
static void bad_length(uint8_t *w, size_t *n)
{
    (void)n;
    w[0] = 0xff;
    w[1] = 0xff;
}

static void cut_at_boundary(uint8_t *w, size_t *n)
{
    (void)w;
    *n = 4 + 3000 + 16; /* the first record whole, then the connection ends */
}

static void test_stream_end(void)
{
    /* with the end mark: the reader sees the end (0) after every byte */
    ism_sstream a, b;
    streams(&a, &b, 0);
    uint8_t msg[500];
    memset(msg, 'e', sizeof msg);
    struct iovec v = {msg, sizeof msg};
    CHECK(ism_sstream_seal(&a, &v, 1) == (ssize_t)sizeof msg && ism_sstream_seal_end(&a) == 0,
          "seal");
    int fds[2];
    pair(fds);
    CHECK(ism_sstream_flush(&a, fds[0]) == 0, "flush");
    close(fds[0]);
    uint8_t out[600];
    size_t got = 0;
    ssize_t r;
    while ((r = ism_sstream_read(&b, fds[1], out + got, sizeof out - got)) > 0)
        got += (size_t)r;
    CHECK(r == 0 && got == sizeof msg, "the end mark: read %zd after %zu bytes (%s)", r, got,
          r < 0 ? strerror(errno) : "end");
    close(fds[1]);
    ism_sstream_free(&a);
    ism_sstream_free(&b);
}

static void test_stream_damage(void)
{
    damaged("a flipped bit in the second record", flip_second);
    damaged("a flipped bit in the first record", flip_first);
    damaged("a stream cut inside a record", cut_short);
    damaged("records swapped", swap_records);
    damaged("a record dropped", drop_first);
    damaged("a record replayed", replay_first);
    damaged("an impossible length", bad_length);
    damaged_as("a stream cut at a record boundary (no end mark)", cut_at_boundary, EPIPE);
}

static void test_stream_wrong_key(void)
{
    ism_sstream a, b1, b2;
    streams(&a, &b1, 0);
    ism_sstream_free(&b1);
    ism_aead_keys other, x;
    derive_pair("gw-tcp", &x, &other);
    CHECK(ism_sstream_init(&b2, &other, 0) == 0, "init");
    uint8_t msg[64] = "a message sealed under one connection's keys";
    struct iovec v = {msg, sizeof msg};
    CHECK(ism_sstream_seal(&a, &v, 1) == (ssize_t)sizeof msg, "seal");
    CHECK(memmem(a.txb, a.tx_len, "sealed under", 12) == NULL, "the plaintext is on the wire");
    int fds[2];
    pair(fds);
    CHECK(ism_sstream_flush(&a, fds[0]) == 0, "flush");
    uint8_t out[64];
    ssize_t r = ism_sstream_read(&b2, fds[1], out, sizeof out);
    CHECK(r < 0 && errno == EBADMSG, "another connection's keys opened the record");
    close(fds[0]);
    close(fds[1]);
    ism_sstream_free(&a);
    ism_sstream_free(&b2);
}

/* ---- which suite two settings agree on ---- */

static void test_suites(void)
{
    ism_auth_key k, o;
    key(&k, JOB, SECRET);
    key(&o, JOB, OTHER);
    ism_auth_hs c, s;
    const unsigned aead = ISM_AUTH_SUITES_AEAD, none = ISM_AUTH_SUITES_NONE;
    const unsigned aes = 1u << ISM_AEAD_AES256GCM, chacha = 1u << ISM_AEAD_CHACHA20POLY1305;
    CHECK(handshake(&k, &k, aead, aead, &c, &s) == 0 && c.suite == s.suite &&
              c.suite == (ism_aead_cpu_has_aes() ? ISM_AEAD_AES256GCM : ISM_AEAD_CHACHA20POLY1305),
          "aead/aead agreed on %d", c.suite);
    CHECK(handshake(&k, &k, none, none, &c, &s) == 0 && c.suite == ISM_AEAD_NONE, "none/none");
    CHECK(handshake(&k, &k, chacha, aead, &c, &s) == 0 && s.suite == ISM_AEAD_CHACHA20POLY1305,
          "a client forcing chacha got %d", s.suite);
    CHECK(handshake(&k, &k, aead, aes, &c, &s) == 0 && c.suite == ISM_AEAD_AES256GCM,
          "a server forcing aes gave %d", c.suite);
    CHECK(handshake(&k, &k, none, aead, &c, &s) != 0 && c.rc == ISM_AUTH_ESUITE &&
              s.rc == ISM_AUTH_ESUITE && strstr(s.err, "disagree on link encryption"),
          "none against aead: %d %d %s", c.rc, s.rc, s.err);
    CHECK(handshake(&k, &k, aead, none, &c, &s) != 0 && c.rc == ISM_AUTH_ESUITE, "aead vs none");
    CHECK(handshake(&k, &k, aes, chacha, &c, &s) != 0 && s.rc == ISM_AUTH_ESUITE, "aes vs chacha");
    CHECK(handshake(&k, &o, aead, aead, &c, &s) != 0 && c.rc == ISM_AUTH_EAUTH,
          "different secrets: %d", c.rc);
}

int main(void)
{
    test_keys_agree_and_differ();
    test_records_open_only_untouched(ISM_AEAD_AES256GCM);
    test_records_open_only_untouched(ISM_AEAD_CHACHA20POLY1305);
    test_key_update();
    test_keys_bound_to_context();
    test_rekey_interval_agreed();
    test_window();
    test_stream_pattern();
    test_stream_damage();
    test_stream_end();
    test_stream_wrong_key();
    test_suites();
    if (failures) {
        fprintf(stderr, "test_aead: %d checks failed\n", failures);
        return 1;
    }
    printf("test_aead: all checks passed\n");
    return 0;
}
