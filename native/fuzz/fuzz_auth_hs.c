#define _GNU_SOURCE
/* fuzz_auth_hs.c: fuzz target for the gateway handshake's state machine (wan/auth_hs.c),
 * the code every stranger who reaches a gateway port talks to.
 *
 * The first byte picks the game:
 *   0, 1  a server (0) or client (1) fed the rest of the input as the peer's bytes, in
 *         pieces whose sizes the second byte sets. Nobody without the secret can answer
 *         its fresh nonce, so it must never succeed; it must never ask for more than one
 *         message at a time, must end FAILED with a reason (that never holds the secret)
 *         or still be waiting, and must ask for nothing once ended.
 *   2, 3  a real client and a real server, with the same key (2) or different secrets
 *         (3), talking through a man in the middle who XORs bytes into the messages at
 *         places the rest of the input names, or cuts the exchange short; bits 2-3 of the
 *         first byte set which link-encryption suites each side accepts (aead or none).
 *         With different secrets neither side succeeds, nor when one side accepts only
 *         aead and the other only none. A change to a byte a MAC covers (identities,
 *         nonces, job id, the suites offered and chosen, MACs) leaves neither side
 *         succeeding. When both succeed, each knows the other's true identity and both
 *         agree on a suite each of them accepts.
 */
#include "fuzz.h"

#include "aead.h"
#include "auth.h"
#include "sock.h"

#include <stdio.h>
#include <string.h>

static const char SECRET_HEX[] = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2";
static const char OTHER_HEX[] = "0123456701234567012345670123456701234567012345670123456701234567";
static const char JOB_HEX[] = "00112233445566778899aabbccddeeff";
static const ism_auth_id CLIENT = {1, 0}, SERVER = {2, 1};

static void fail(const char *what, size_t n) { ism_fuzz_fail("fuzz_auth_hs", what, n); }

static void key(ism_auth_key *k, const char *secret)
{
    char err[200];
    if (ism_auth_key_from_hex(k, JOB_HEX, secret, err, sizeof err) != 0)
        fail(err, 0);
}

static void check_ended(const ism_auth_hs *h, size_t n)
{
    uint8_t *in;
    if (h->state == ISM_AUTH_HS_FAILED) {
        if (h->rc >= 0 || h->err[0] == 0)
            fail("FAILED without a code or a reason", n);
        /* neither as hex text nor as raw bytes (any 6 of them in a row) */
        if (strstr(h->err, "5ec2e75e"))
            fail("the reason holds the secret (hex)", n);
        for (size_t i = 0; i + 6 <= h->key->secret_len; i++)
            if (memmem(h->err, strlen(h->err), h->key->secret + i, 6))
                fail("the reason holds the secret (bytes)", n);
    }
    if (h->state != ISM_AUTH_HS_RUN && ism_auth_hs_wanted((ism_auth_hs *)h, &in) != 0)
        fail("input wanted after the end", n);
}

/* One side against the raw bytes of the input. */
static void against_bytes(int server, const uint8_t *d, size_t n)
{
    ism_auth_key k;
    key(&k, SECRET_HEX);
    size_t piece = n ? 1 + d[0] % 97 : 1, at = n ? 1 : 0;
    ism_auth_hs h;
    ism_auth_hs_start(&h, server, &k, server ? SERVER : CLIENT, ISM_AUTH_SUITES_AEAD, 0,
                      "fuzz peer");
    while (h.state == ISM_AUTH_HS_RUN) {
        const uint8_t *out;
        size_t k_out = ism_auth_hs_pending(&h, &out);
        if (k_out) {
            ism_auth_hs_sent(&h, k_out);
            continue;
        }
        uint8_t *in;
        size_t want = ism_auth_hs_wanted(&h, &in);
        if (want == 0 || want > ISM_AUTH_MSG_MAX)
            fail("a running handshake wants 0 or more than a message", n);
        if (at >= n) {
            ism_auth_hs_io_failed(&h, ISM_SOCK_ECLOSED, 0);
            break;
        }
        size_t give = want < piece ? want : piece;
        if (give > n - at)
            give = n - at;
        memcpy(in, d + at, give);
        at += give;
        ism_auth_hs_received(&h, give);
    }
    if (h.state == ISM_AUTH_HS_DONE)
        fail("authenticated a peer that does not know the secret", n);
    check_ended(&h, n);
    ism_auth_hs_wipe(&h);
    ism_auth_key_clear(&k);
}

/* The MAC-covered bytes of a message of the handshake: past the 8-byte preamble, and the
 * preamble's code byte of HELLO (the suites offered) and CHALLENGE (the suite chosen);
 * none of the 1-byte verdict. */
static int covered(size_t len, size_t pos)
{
    return len > 1 && (pos >= 8 || (pos == 6 && (len == 104 || len == 120)));
}

/* A real client and server through a man in the middle. */
static void through_middle(int same_key, unsigned csuites, unsigned ssuites, const uint8_t *d,
                           size_t n)
{
    ism_auth_key kc, ks;
    key(&kc, SECRET_HEX);
    key(&ks, same_key ? SECRET_HEX : OTHER_HEX);
    ism_auth_hs c, s;
    ism_auth_hs_start(&c, 0, &kc, CLIENT, csuites, 4 + (int)(n ? d[0] % 24 : 0), "server");
    ism_auth_hs_start(&s, 1, &ks, SERVER, ssuites, 0, "client");
    /* edits: (message number, position, xor) triples; 0xff as message number cuts the
     * exchange at that message instead */
    int tampered = 0, changed = 0, cut = -1;
    int msg = 0;
    for (int guard = 0; guard < 16; guard++) {
        ism_auth_hs *from = msg % 2 == 0 ? &c : &s, *to = msg % 2 == 0 ? &s : &c;
        const uint8_t *out;
        size_t len = ism_auth_hs_pending(from, &out);
        if (len == 0 || from->state == ISM_AUTH_HS_FAILED)
            break;
        uint8_t m[ISM_AUTH_MSG_MAX];
        memcpy(m, out, len);
        for (size_t i = 0; i + 2 < n; i += 3) {
            if (d[i] == 0xff && d[i + 1] == msg)
                cut = msg;
            if (d[i] != msg || d[i + 2] == 0)
                continue;
            m[d[i + 1] % len] ^= d[i + 2];
        }
        for (size_t pos = 0; pos < len; pos++) /* edits may undo each other */
            if (m[pos] != out[pos]) {
                changed = 1;
                tampered |= covered(len, pos);
            }
        ism_auth_hs_sent(from, len);
        if (cut == msg) {
            ism_auth_hs_io_failed(to, ISM_SOCK_ECLOSED, 0);
            break;
        }
        size_t at = 0;
        while (at < len && to->state == ISM_AUTH_HS_RUN) {
            uint8_t *in;
            size_t want = ism_auth_hs_wanted(to, &in);
            if (want == 0)
                fail("the receiver of a message wants nothing", n);
            size_t give = want < len - at ? want : len - at;
            memcpy(in, m + at, give);
            ism_auth_hs_received(to, give);
            at += give;
        }
        msg++;
    }
    int both = c.state == ISM_AUTH_HS_DONE && s.state == ISM_AUTH_HS_DONE;
    if (!same_key && (c.state == ISM_AUTH_HS_DONE || s.state == ISM_AUTH_HS_DONE))
        fail("a side authenticated a peer with another secret", n);
    if (tampered && (c.state == ISM_AUTH_HS_DONE || s.state == ISM_AUTH_HS_DONE))
        fail("a side authenticated a handshake whose MAC-covered bytes were changed", n);
    int agree = (csuites & ssuites) != 0;
    if (!agree && (c.state == ISM_AUTH_HS_DONE || s.state == ISM_AUTH_HS_DONE))
        fail("a side succeeded though the two accept no common suite", n);
    if (same_key && agree && !changed && cut < 0 && !both)
        fail("an untouched handshake between key holders did not succeed", n);
    if (both && (c.suite != s.suite || !(csuites >> c.suite & 1) || !(ssuites >> s.suite & 1)))
        fail("the two sides agreed on different suites, or one they do not accept", n);
    if (both) {
        ism_aead_keys kc2, ks2;
        if (ism_aead_derive(&c, "fuzz", &kc2) != 0 || ism_aead_derive(&s, "fuzz", &ks2) != 0 ||
            memcmp(&kc2, &ks2, sizeof kc2) != 0)
            fail("the two sides of one handshake derived different keys", n);
        if (c.rekey_log2 != s.rekey_log2 || c.rekey_log2 < ISM_AUTH_REKEY_MIN)
            fail("the two sides agreed on different key-update intervals", n);
        ism_aead_keys_wipe(&kc2);
        ism_aead_keys_wipe(&ks2);
    }
    if (both && (c.peer.site != SERVER.site || c.peer.gw != SERVER.gw ||
                 s.peer.site != CLIENT.site || s.peer.gw != CLIENT.gw))
        fail("a successful handshake names the wrong peer", n);
    check_ended(&c, n);
    check_ended(&s, n);
    ism_auth_hs_wipe(&c);
    ism_auth_hs_wipe(&s);
    ism_auth_key_clear(&kc);
    ism_auth_key_clear(&ks);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n == 0)
        return 0;
    switch (d[0] % 4) {
    case 0:
    case 1:
        against_bytes(d[0] % 4 == 0, d + 1, n - 1);
        break;
    default: {
        static const unsigned pick[4] = {ISM_AUTH_SUITES_AEAD, ISM_AUTH_SUITES_NONE,
                                         1u << ISM_AEAD_AES256GCM,
                                         1u << ISM_AEAD_CHACHA20POLY1305};
        through_middle(d[0] % 4 == 2, pick[d[0] >> 2 & 3], pick[d[0] >> 4 & 3], d + 1, n - 1);
    }
    }
    return 0;
}

/* Seeds: a well-formed HELLO for the server, a CHALLENGE-shaped answer for the client,
 * and man-in-the-middle games with no edit, an edit in each message, and a cut. */
size_t ism_fuzz_seeds(const ism_fuzz_seed **out)
{
    static uint8_t hello[1 + 1 + 104 + 40], chal[1 + 1 + 120 + 1];
    static const uint8_t clean[] = {2}, other[] = {3}, nones[] = {2 | 1 << 2 | 1 << 4},
                         mixed[] = {2 | 1 << 2}, edits[] = {2, 0, 20, 0x01, 1, 50, 0x80},
                         late[] = {2, 2, 10, 0x04, 3, 0, 0x02}, cut[] = {2, 0xff, 1, 0};
    ism_auth_key k;
    key(&k, SECRET_HEX);
    hello[0] = 0;
    hello[1] = 8;
    memcpy(hello + 2, "ISAU\x03\x01\x06\x00", 8);
    hello[10] = 1; /* site 1, gateway 0, a zero nonce, the job id, a key share, 2^22 */
    memcpy(hello + 2 + 48, k.job, 16);
    memset(hello + 2 + 64, 0x09, 32);
    hello[2 + 96] = 22;
    memcpy(hello + 2 + 104, "ISAU\x03\x03\x00\x00", 8);
    chal[0] = 1;
    chal[1] = 120;
    memcpy(chal + 2, "ISAU\x03\x02\x01\x00", 8);
    chal[10] = 2;
    chal[14] = 1;
    memset(chal + 2 + 48, 0x09, 32);
    chal[2 + 80] = 22;
    chal[sizeof chal - 1] = 1;
    ism_auth_key_clear(&k);
    static ism_fuzz_seed s[9];
    s[0] = (ism_fuzz_seed){hello, sizeof hello};
    s[1] = (ism_fuzz_seed){chal, sizeof chal};
    s[2] = (ism_fuzz_seed){clean, sizeof clean};
    s[3] = (ism_fuzz_seed){other, sizeof other};
    s[4] = (ism_fuzz_seed){edits, sizeof edits};
    s[5] = (ism_fuzz_seed){late, sizeof late};
    s[6] = (ism_fuzz_seed){cut, sizeof cut};
    s[7] = (ism_fuzz_seed){nones, sizeof nones};
    s[8] = (ism_fuzz_seed){mixed, sizeof mixed};
    *out = s;
    return 9;
}
