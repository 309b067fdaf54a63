/* fuzz_unseal.c: fuzz target for opening what crosses a WAN link encrypted: the AEAD
 * records of a TCP stream (wan/sstream.c) and the sealed datagrams of reliable UDP
 * (wan/udp/seal.c). The keys are fixed; a "genuine sender" sealed a known plaintext with
 * them, and the seeds are its records and datagrams, so mutations start from bytes that
 * open.
 *
 * First byte even: the rest is a TCP byte stream, read in pieces whose sizes the second
 * byte sets. Whatever the reader delivers must be exactly the genuine plaintext from its
 * start (a forged, reordered, replayed or cut record is never delivered), and once it
 * fails it delivers nothing more. First byte odd: the rest is a run of datagrams, each
 * preceded by its length (u16); a datagram that opens must be one the genuine sender
 * sealed (its plaintext at that seal number), and no seal number opens twice.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aead.h"
#include "conn.h"
#include "../src/common/le.h"
#include "seal.h"
#include "sstream.h"
#include "wire.h"

#define PLAIN 20000
#define NDGRAM 40
#define DGRAM_PAYLOAD 40

static uint8_t plain[PLAIN];
static size_t n_tcp, n_tcp_bytes, n_tcp_failed, n_udp, n_opened;

static void fail(const char *what, size_t n) { ism_fuzz_fail("fuzz_unseal", what, n); }

static void keys(ism_aead_keys *k)
{
    memset(k, 0, sizeof *k);
    k->suite = ISM_AEAD_AES256GCM;
    k->rekey_log2 = 4; /* a key update every 16 records: the seeds cross several */
    for (int i = 0; i < ISM_AEAD_KEY_LEN; i++) {
        k->c2s.secret[i] = (uint8_t)(i + 1);
        k->s2c.secret[i] = (uint8_t)(i + 101);
    }
    for (int i = 0; i < ISM_AEAD_IV_LEN; i++) {
        k->c2s.iv[i] = (uint8_t)(i * 3);
        k->s2c.iv[i] = (uint8_t)(i * 5);
    }
}

static void init_plain(void)
{
    for (size_t i = 0; i < PLAIN; i++)
        plain[i] = (uint8_t)(i * 7 + (i >> 8));
}

/* The genuine datagram of seal number q: a DATA-type common header, then the payload. */
static void dgram_plain(uint64_t q, uint8_t *p)
{
    memset(p, 0, ISM_UDPW_COMMON);
    p[0] = ISM_UDPW_VERSION;
    p[1] = ISM_UDPW_DATA;
    for (int i = 0; i < DGRAM_PAYLOAD; i++)
        p[ISM_UDPW_COMMON + i] = (uint8_t)(q * 31 + (uint64_t)i);
}

static void tcp_stream(const uint8_t *d, size_t n, size_t size)
{
    ism_aead_keys k;
    keys(&k);
    ism_sstream rx;
    if (ism_sstream_init(&rx, &k, 0) != 0)
        fail("init", size);
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0)
        abort();
    int big = 1 << 20;
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    size_t piece = n ? 1 + (size_t)d[0] * 97 : 1; /* 1 byte at a time up to whole records */
    const uint8_t *w = n ? d + 1 : d;
    size_t wn = n ? n - 1 : 0;
    if (wn && write(fds[0], w, wn) != (ssize_t)wn)
        abort();
    close(fds[0]);
    static uint8_t got[PLAIN + 65536];
    size_t have = 0;
    int failed = 0;
    for (int guard = 0; guard < 100000; guard++) {
        size_t want = piece;
        if (want > sizeof got - have)
            want = sizeof got - have;
        if (want == 0)
            break;
        ssize_t r = ism_sstream_read(&rx, fds[1], got + have, want);
        if (r > 0) {
            if (failed)
                fail("bytes delivered after the stream failed", size);
            have += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EBADMSG && failed < 3) {
            failed++; /* read again: nothing more may come out */
            continue;
        }
        break;
    }
    if (have > PLAIN || memcmp(got, plain, have) != 0)
        fail("delivered bytes that the genuine sender did not send", size);
    n_tcp++;
    n_tcp_bytes += have > 0;
    n_tcp_failed += failed > 0;
    close(fds[1]);
    ism_sstream_free(&rx);
}

static void datagrams(const uint8_t *d, size_t n, size_t size)
{
    ism_aead_keys k;
    keys(&k);
    udp_seal s;
    if (udp_seal_init(&s, &k, 0) != 0)
        fail("init", size);
    uint64_t opened[64];
    int nopened = 0;
    size_t at = 0;
    while (at + 2 <= n && nopened < 64) {
        size_t len = (size_t)(d[at] | d[at + 1] << 8);
        at += 2;
        if (len > n - at)
            len = n - at;
        if (len > ISM_UDPW_MAX_DGRAM)
            len = ISM_UDPW_MAX_DGRAM;
        uint8_t p[ISM_UDPW_MAX_DGRAM];
        memcpy(p, d + at, len);
        at += len;
        size_t m = len;
        if (udp_seal_open(&s, p, &m) != 0)
            continue;
        uint64_t q = ism_get_le64(d + at - UDP_SEAL_OVERHEAD);
        uint8_t want[ISM_UDPW_COMMON + DGRAM_PAYLOAD];
        dgram_plain(q, want);
        if (m != sizeof want || memcmp(p, want, m) != 0)
            fail("a datagram the genuine sender did not seal opened", size);
        for (int i = 0; i < nopened; i++)
            if (opened[i] == q)
                fail("a seal number opened twice (a replay)", size);
        opened[nopened++] = q;
    }
    n_udp++;
    n_opened += (size_t)nopened;
    udp_seal_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static int ready;
    if (!ready) {
        init_plain();
        ready = 1;
    }
    if (n == 0)
        return 0;
    if (d[0] % 2 == 0)
        tcp_stream(d + 1, n - 1, n);
    else
        datagrams(d + 1, n - 1, n);
    return 0;
}

void ism_fuzz_report(void)
{
    printf("fuzz_unseal: %zu streams (%zu delivered bytes, %zu failed a record), %zu datagram "
           "runs (%zu datagrams opened)\n", n_tcp, n_tcp_bytes, n_tcp_failed, n_udp, n_opened);
}

/* Seeds: the genuine sender's records of the plaintext (in pieces crossing three key
 * updates), and its datagrams 0..NDGRAM-1, whole and framed. */
size_t ism_fuzz_seeds(const ism_fuzz_seed **out)
{
    init_plain();
    static uint8_t tcp[2 + PLAIN + 64 * ISM_SSTREAM_OVERHEAD];
    _Static_assert(PLAIN / 500 < 64, "room for the seed's records");
    static uint8_t udp[1 + NDGRAM * (2 + ISM_UDPW_COMMON + DGRAM_PAYLOAD + UDP_SEAL_OVERHEAD)];
    static ism_fuzz_seed seeds[2];
    ism_aead_keys k;
    keys(&k);
    ism_sstream tx;
    if (ism_sstream_init(&tx, &k, 1) != 0)
        abort();
    size_t len = 2;
    tcp[0] = 0;
    tcp[1] = 200;
    for (size_t off = 0; off < PLAIN;) {
        size_t k1 = PLAIN - off < 500 ? PLAIN - off : 500;
        struct iovec v = {plain + off, k1};
        ssize_t t = ism_sstream_seal(&tx, &v, 1);
        if (t <= 0)
            abort();
        off += (size_t)t;
        memcpy(tcp + len, tx.txb + tx.tx_off, tx.tx_len - tx.tx_off);
        len += tx.tx_len - tx.tx_off;
        tx.tx_off = tx.tx_len = 0;
    }
    ism_sstream_free(&tx);
    seeds[0] = (ism_fuzz_seed){tcp, len};
    /* datagrams: sealed as the client side's connection would */
    ism_udp_conn c;
    memset(&c, 0, sizeof c);
    if (udp_seal_init(&c.seal, &k, 1) != 0)
        abort();
    size_t at = 1;
    udp[0] = 1;
    for (uint64_t q = 0; q < NDGRAM; q++) {
        uint8_t p[ISM_UDPW_COMMON + DGRAM_PAYLOAD + UDP_SEAL_OVERHEAD];
        dgram_plain(q, p);
        size_t m = udp_seal_buf(&c, p, ISM_UDPW_COMMON + DGRAM_PAYLOAD);
        udp[at] = (uint8_t)m;
        udp[at + 1] = (uint8_t)(m >> 8);
        memcpy(udp + at + 2, p, m);
        at += 2 + m;
    }
    udp_seal_free(&c.seal);
    seeds[1] = (ism_fuzz_seed){udp, at};
    *out = seeds;
    return 2;
}
