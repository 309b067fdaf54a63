/* test_auth.c: checks for the gateway handshake (auth.c) and socket helpers (sock.c).
 *
 * Owns the behaviour gateways depend on when links come up: matching keys authenticate
 * both ways, every kind of mismatch, truncation, silence or misbehaving peer ends in a
 * clear error within the deadline and never leaks the secret, key files are loaded
 * only when private, and address parsing/listening/connecting fail helpfully. A raw
 * peer written from the protocol text in auth.h doubles as a conformance check. A
 * client's early data (ism_auth_run_early) reaches the server after the handshake, under
 * the keys both derive, and is never written to a server that did not prove the secret.
 */
#include "aead.h"
#include "auth.h"
#include "sock.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "check.h"



static const char JOB1[] = "0123456789abcdef0123456789abcdef";
static const char JOB2[] = "fedcba9876543210fedcba9876543210";
static const char SECRET_A[] = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
static const char SECRET_B[] = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

static const ism_auth_id ID_CLIENT = {1, 0};
static const ism_auth_id ID_SERVER = {2, 3};

static int contains(const char *s, const char *sub)
{
    return s != NULL && strstr(s, sub) != NULL;
}

/* True if err holds any 12-character run of the hex secret, in either case. */
static int leaks_secret(const char *err, const char *hex)
{
    char low[256];
    size_t n = strlen(err);
    if (n >= sizeof low)
        n = sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)err[i]);
    low[n] = '\0';
    size_t hl = strlen(hex);
    for (size_t i = 0; i + 12 <= hl; i++) {
        char win[13];
        memcpy(win, hex + i, 12);
        win[12] = '\0';
        if (strstr(low, win))
            return 1;
    }
    return 0;
}

static void make_key(ism_auth_key *k, const char *job, const char *secret)
{
    char err[256];
    int rc = ism_auth_key_from_hex(k, job, secret, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "FATAL: test key rejected: %s\n", err);
        exit(2);
    }
}

/* ---------- raw peers, written from the protocol description in auth.h ---------- */

static int raw_write(int fd, const void *b, size_t n)
{
    const uint8_t *p = b;
    while (n) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int raw_read(int fd, void *b, size_t n)
{
    uint8_t *p = b;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void raw_wait_eof(int fd)
{
    char c;
    for (;;) {
        ssize_t r = recv(fd, &c, 1, 0);
        if (r > 0 || (r < 0 && errno == EINTR))
            continue;
        return;
    }
}

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void preamble(uint8_t *p, int type, int code)
{
    memcpy(p, "ISAU", 4);
    p[4] = 3;
    p[5] = (uint8_t)type;
    p[6] = (uint8_t)code;
    p[7] = 0;
}

/* The raw peers' offer (AES-256-GCM or ChaCha20-Poly1305), the raw server's choice, the
 * key-update interval both ask for, and their key shares: any 32 bytes are an X25519
 * public key (the real side computes with them; the raw one never needs the result). */
#define RAW_OFFER 0x07 /* none or either cipher: the plain forms under test accept none */
#define RAW_REKEY 22
static const uint8_t RAW_EC[32] = {[0] = 0x31, [7] = 0x52, [31] = 0x17};
static const uint8_t RAW_ES[32] = {[0] = 0x61, [9] = 0x24, [31] = 0x23};

/* The transcript of auth.h (version 3) and its HMAC. */
static void ref_mac(const ism_auth_key *k, const char *label, ism_auth_id cid, ism_auth_id sid,
                    const uint8_t *n1, const uint8_t *n2, uint8_t offer, uint8_t suite,
                    const uint8_t *ec, const uint8_t *es, uint8_t rc, uint8_t rs, uint8_t out[32])
{
    uint8_t t[19 + 16 + 8 + 8 + 32 + 32 + 2 + 64 + 2], *p = t;
    memcpy(p, label, 19);
    p += 19;
    memcpy(p, k->job, 16);
    p += 16;
    le32(p, cid.site);
    le32(p + 4, cid.gw);
    le32(p + 8, sid.site);
    le32(p + 12, sid.gw);
    p += 16;
    memcpy(p, n1, 32);
    memcpy(p + 32, n2, 32);
    p[64] = offer;
    p[65] = suite;
    memcpy(p + 66, ec, 32);
    memcpy(p + 98, es, 32);
    p[130] = rc;
    p[131] = rs;
    unsigned int ol = 0;
    HMAC(EVP_sha256(), k->secret, (int)k->secret_len, t, sizeof t, out, &ol);
}

enum raw_mode {
    RAW_SERVER_GOOD,        /* full server side, verdict 1 if MACc verifies */
    RAW_SERVER_VERDICT0,    /* correct MACs, then refuses anyway */
    RAW_SERVER_CLOSE_HELLO, /* reads HELLO, closes */
    RAW_SERVER_HALF_CHAL,   /* reads HELLO, sends half a CHALLENGE, closes */
    RAW_SERVER_SILENT,      /* reads HELLO, never answers */
    RAW_CLIENT_HALF_HELLO,  /* sends 20 bytes of HELLO, closes */
    RAW_CLIENT_SILENT,      /* sends nothing */
    RAW_CLIENT_BADMAC,      /* proper HELLO, garbage RESPONSE, reads verdict */
    RAW_CLIENT_HTTP         /* not an isthmus peer at all */
};

typedef struct raw_peer {
    int fd;
    enum raw_mode mode;
    const ism_auth_key *k;
    ism_auth_id self;
    int ok;          /* the raw side saw what it expected */
    int verdict;     /* verdict byte received (RAW_CLIENT_BADMAC) */
    int macc_valid;  /* RAW_SERVER_GOOD: MACc verified */
    int got_refusal; /* RAW_SERVER_*: a REFUSE came instead of RESPONSE */
} raw_peer;

static void *raw_run(void *arg)
{
    raw_peer *r = arg;
    uint8_t m[128], nc[32], ns[32], mac[32], ec[32];
    memset(ns, 0x42, sizeof ns);
    switch (r->mode) {
    case RAW_SERVER_GOOD:
    case RAW_SERVER_VERDICT0: {
        if (raw_read(r->fd, m, 104) != 0)
            break;
        ism_auth_id cid = {m[8] | m[9] << 8 | m[10] << 16 | (uint32_t)m[11] << 24,
                           m[12] | m[13] << 8 | m[14] << 16 | (uint32_t)m[15] << 24};
        memcpy(nc, m + 16, 32);
        memcpy(ec, m + 64, 32);
        uint8_t offer = m[6], rc = m[96];
        uint8_t suite = offer & 2 ? 1 : offer & 4 ? 2 : 0; /* the first of auth.h's suites offered */
        if (memcmp(m, "ISAU", 4) != 0 || m[4] != 3 || m[5] != 1 || memcmp(m + 48, r->k->job, 16))
            break;
        memset(m, 0, 120);
        preamble(m, 2, suite);
        le32(m + 8, r->self.site);
        le32(m + 12, r->self.gw);
        memcpy(m + 16, ns, 32);
        memcpy(m + 48, RAW_ES, 32);
        m[80] = RAW_REKEY;
        ref_mac(r->k, "isthmus-auth-server", cid, r->self, nc, ns, offer, suite, ec, RAW_ES, rc,
                RAW_REKEY, m + 88);
        if (raw_write(r->fd, m, 120) != 0 || raw_read(r->fd, m, 8) != 0)
            break;
        if (m[5] == 4) {
            r->got_refusal = 1;
            r->ok = 1;
            break;
        }
        if (raw_read(r->fd, m + 8, 32) != 0)
            break;
        ref_mac(r->k, "isthmus-auth-client", cid, r->self, ns, nc, offer, suite, ec, RAW_ES, rc,
                RAW_REKEY, mac);
        r->macc_valid = memcmp(mac, m + 8, 32) == 0;
        uint8_t v = (r->mode == RAW_SERVER_GOOD && r->macc_valid) ? 1 : 0;
        r->ok = raw_write(r->fd, &v, 1) == 0;
        break;
    }
    case RAW_SERVER_CLOSE_HELLO:
        r->ok = raw_read(r->fd, m, 104) == 0;
        break;
    case RAW_SERVER_HALF_CHAL:
        if (raw_read(r->fd, m, 104) != 0)
            break;
        preamble(m, 2, 0);
        memset(m + 8, 0, 32);
        r->ok = raw_write(r->fd, m, 40) == 0;
        break;
    case RAW_SERVER_SILENT:
        r->ok = raw_read(r->fd, m, 104) == 0;
        raw_wait_eof(r->fd);
        break;
    case RAW_CLIENT_HALF_HELLO:
        preamble(m, 1, RAW_OFFER);
        memset(m + 8, 0x11, 12);
        r->ok = raw_write(r->fd, m, 20) == 0;
        break;
    case RAW_CLIENT_SILENT:
        raw_wait_eof(r->fd);
        r->ok = 1;
        break;
    case RAW_CLIENT_BADMAC:
        memset(m, 0, 104);
        preamble(m, 1, RAW_OFFER);
        le32(m + 8, r->self.site);
        le32(m + 12, r->self.gw);
        memset(m + 16, 0x77, 32);
        memcpy(m + 48, r->k->job, 16);
        memcpy(m + 64, RAW_EC, 32);
        m[96] = RAW_REKEY;
        if (raw_write(r->fd, m, 104) != 0 || raw_read(r->fd, m, 120) != 0)
            break;
        preamble(m, 3, 0);
        memset(m + 8, 0xEE, 32);
        if (raw_write(r->fd, m, 40) != 0)
            break;
        uint8_t v = 0xFF;
        r->ok = raw_read(r->fd, &v, 1) == 0;
        r->verdict = v;
        break;
    case RAW_CLIENT_HTTP: {
        static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        r->ok = raw_write(r->fd, req, sizeof req - 1) == 0;
        raw_wait_eof(r->fd);
        break;
    }
    }
    close(r->fd);
    return NULL;
}

/* ---------- real parties ---------- */

typedef struct party {
    int fd;
    int server;
    const ism_auth_key *k;
    ism_auth_id self, peer;
    int timeout_ms;
    int rc;
    int64_t elapsed_ms;
    char err[512];
} party;

static void *party_run(void *arg)
{
    party *p = arg;
    p->peer.site = p->peer.gw = 0xFFFFFFFFu;
    int64_t t0 = ism_now_ms();
    if (p->server)
        p->rc = ism_auth_server(p->fd, p->k, p->self, &p->peer, p->timeout_ms, p->err,
                                sizeof p->err);
    else
        p->rc = ism_auth_client(p->fd, p->k, p->self, &p->peer, p->timeout_ms, p->err,
                                sizeof p->err);
    p->elapsed_ms = ism_now_ms() - t0;
    close(p->fd); /* as a real caller does on failure; harmless after success here */
    return NULL;
}

static void party_init(party *p, int fd, int server, const ism_auth_key *k, ism_auth_id self,
                       int timeout_ms)
{
    memset(p, 0, sizeof *p);
    p->fd = fd;
    p->server = server;
    p->k = k;
    p->self = self;
    p->timeout_ms = timeout_ms;
}

static void unix_pair(int fds[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        perror("FATAL: socketpair");
        exit(2);
    }
}

/* A connected loopback TCP pair: fds[0] the connecting side, fds[1] the accepted one. */
static void tcp_pair(int fds[2])
{
    char err[256];
    int l = ism_sock_listen("127.0.0.1", 0, 4, err, sizeof err);
    if (l < 0) {
        fprintf(stderr, "FATAL: %s\n", err);
        exit(2);
    }
    int port = ism_sock_local_port(l);
    fds[0] = ism_sock_connect("127.0.0.1", port, 2000, err, sizeof err);
    if (fds[0] < 0) {
        fprintf(stderr, "FATAL: %s\n", err);
        exit(2);
    }
    fds[1] = accept(l, NULL, NULL);
    if (fds[1] < 0) {
        perror("FATAL: accept");
        exit(2);
    }
    close(l);
}

static void run2(void *(*fa)(void *), void *a, void *(*fb)(void *), void *b)
{
    pthread_t ta, tb;
    if (pthread_create(&ta, NULL, fa, a) != 0 || pthread_create(&tb, NULL, fb, b) != 0) {
        fprintf(stderr, "FATAL: pthread_create\n");
        exit(2);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
}

static void handshake(int fds[2], const ism_auth_key *kc, const ism_auth_key *ks, int timeout_ms,
                      party *c, party *s)
{
    party_init(c, fds[0], 0, kc, ID_CLIENT, timeout_ms);
    party_init(s, fds[1], 1, ks, ID_SERVER, timeout_ms);
    run2(party_run, c, party_run, s);
}

/* ---------- handshake scenarios ---------- */

static void test_same_secret(void)
{
    ism_auth_key k;
    make_key(&k, JOB1, SECRET_A);
    party c, s;
    int fds[2];

    tcp_pair(fds);
    handshake(fds, &k, &k, 5000, &c, &s);
    CHECK(c.rc == 0, "tcp client: %d %s", c.rc, c.err);
    CHECK(s.rc == 0, "tcp server: %d %s", s.rc, s.err);
    CHECK(c.peer.site == ID_SERVER.site && c.peer.gw == ID_SERVER.gw, "client learned %u/%u",
          c.peer.site, c.peer.gw);
    CHECK(s.peer.site == ID_CLIENT.site && s.peer.gw == ID_CLIENT.gw, "server learned %u/%u",
          s.peer.site, s.peer.gw);

    /* Non-blocking fds must work too, and be left non-blocking. */
    unix_pair(fds);
    ism_sock_set_nonblock(fds[0], 1);
    ism_sock_set_nonblock(fds[1], 1);
    party_init(&c, fds[0], 0, &k, ID_CLIENT, 5000);
    party_init(&s, fds[1], 1, &k, ID_SERVER, 5000);
    int dc = dup(fds[0]);
    run2(party_run, &c, party_run, &s);
    CHECK(c.rc == 0 && s.rc == 0, "nonblocking: client %d '%s', server %d '%s'", c.rc, c.err,
          s.rc, s.err);
    CHECK((fcntl(dc, F_GETFL) & O_NONBLOCK) != 0, "handshake changed the fd's blocking mode");
    close(dc);

    /* Secrets of different lengths within the allowed range. */
    ism_auth_key k16, k64;
    make_key(&k16, JOB1, "00112233445566778899aabbccddeeff");
    char s64[129];
    for (int i = 0; i < 128; i++)
        s64[i] = "0123456789abcdef"[(i * 7) % 16];
    s64[128] = '\0';
    make_key(&k64, JOB1, s64);
    unix_pair(fds);
    handshake(fds, &k16, &k16, 5000, &c, &s);
    CHECK(c.rc == 0 && s.rc == 0, "16-byte secret: %s / %s", c.err, s.err);
    unix_pair(fds);
    handshake(fds, &k64, &k64, 5000, &c, &s);
    CHECK(c.rc == 0 && s.rc == 0, "64-byte secret: %s / %s", c.err, s.err);
    unix_pair(fds);
    handshake(fds, &k16, &k64, 5000, &c, &s);
    CHECK(c.rc == ISM_AUTH_EAUTH && s.rc == ISM_AUTH_EAUTH, "16 vs 64-byte secret: %d %d", c.rc,
          s.rc);
    ism_auth_key_clear(&k);
    ism_auth_key_clear(&k16);
    ism_auth_key_clear(&k64);
}

static void test_wrong_secret(void)
{
    ism_auth_key ka, kb;
    make_key(&ka, JOB1, SECRET_A);
    make_key(&kb, JOB1, SECRET_B);
    party c, s;
    int fds[2];
    tcp_pair(fds);
    handshake(fds, &ka, &kb, 5000, &c, &s);
    CHECK(c.rc == ISM_AUTH_EAUTH, "client rc %d: %s", c.rc, c.err);
    CHECK(s.rc == ISM_AUTH_EAUTH, "server rc %d: %s", s.rc, s.err);
    CHECK(contains(c.err, "failed authentication") && contains(c.err, "HMAC mismatch"),
          "client message: %s", c.err);
    CHECK(contains(c.err, "peer 127.0.0.1:"), "client message lacks peer address: %s", c.err);
    CHECK(contains(s.err, "authentication") && contains(s.err, "wrong job secret"),
          "server message: %s", s.err);
    CHECK(contains(s.err, "peer 127.0.0.1:"), "server message lacks peer address: %s", s.err);
    const char *errs[] = {c.err, s.err};
    for (int i = 0; i < 2; i++) {
        CHECK(!leaks_secret(errs[i], SECRET_A), "message leaks secret A: %s", errs[i]);
        CHECK(!leaks_secret(errs[i], SECRET_B), "message leaks secret B: %s", errs[i]);
    }
    CHECK(c.elapsed_ms < 2000 && s.elapsed_ms < 2000, "wrong secret took %lld/%lld ms",
          (long long)c.elapsed_ms, (long long)s.elapsed_ms);
    printf("  wrong secret, client says: %s\n  wrong secret, server says: %s\n", c.err, s.err);
}

static void test_wrong_job(void)
{
    ism_auth_key k1, k2;
    make_key(&k1, JOB1, SECRET_A);
    make_key(&k2, JOB2, SECRET_A);
    party c, s;
    int fds[2];
    unix_pair(fds);
    handshake(fds, &k1, &k2, 5000, &c, &s);
    CHECK(c.rc == ISM_AUTH_EJOB, "client rc %d: %s", c.rc, c.err);
    CHECK(s.rc == ISM_AUTH_EJOB, "server rc %d: %s", s.rc, s.err);
    CHECK(contains(c.err, "job id mismatch") && contains(c.err, "another job"), "client: %s",
          c.err);
    CHECK(contains(s.err, "job id mismatch") && contains(s.err, "another job"), "server: %s",
          s.err);
}

static void test_same_identity(void)
{
    ism_auth_key k;
    make_key(&k, JOB1, SECRET_A);
    party c, s;
    int fds[2];
    unix_pair(fds);
    party_init(&c, fds[0], 0, &k, ID_SERVER, 5000);
    party_init(&s, fds[1], 1, &k, ID_SERVER, 5000);
    run2(party_run, &c, party_run, &s);
    CHECK(c.rc == ISM_AUTH_EIDENT && s.rc == ISM_AUTH_EIDENT, "same identity: %d '%s' / %d '%s'",
          c.rc, c.err, s.rc, s.err);
}

static void run_raw(party *p, raw_peer *r, enum raw_mode mode, int party_is_server,
                    const ism_auth_key *k, int timeout_ms)
{
    int fds[2];
    unix_pair(fds);
    memset(r, 0, sizeof *r);
    r->fd = fds[1];
    r->mode = mode;
    r->k = k;
    r->self = party_is_server ? ID_CLIENT : ID_SERVER;
    party_init(p, fds[0], party_is_server, k, party_is_server ? ID_SERVER : ID_CLIENT,
               timeout_ms);
    run2(party_run, p, raw_run, r);
}

static void test_conformance(void)
{
    ism_auth_key k;
    make_key(&k, JOB1, SECRET_A);
    party p;
    raw_peer r;

    run_raw(&p, &r, RAW_SERVER_GOOD, 0, &k, 5000);
    CHECK(p.rc == 0, "client vs reference server: %d %s", p.rc, p.err);
    CHECK(r.ok && r.macc_valid, "reference server did not verify the client's MAC");
    CHECK(p.peer.site == ID_SERVER.site && p.peer.gw == ID_SERVER.gw, "peer id %u/%u",
          p.peer.site, p.peer.gw);

    run_raw(&p, &r, RAW_SERVER_VERDICT0, 0, &k, 5000);
    CHECK(p.rc == ISM_AUTH_EAUTH, "verdict 0: rc %d %s", p.rc, p.err);
    CHECK(contains(p.err, "rejected our authentication"), "verdict 0 message: %s", p.err);

    /* The reference server holding another secret must get a REFUSE, not our MAC. */
    ism_auth_key kb;
    make_key(&kb, JOB1, SECRET_B);
    int fds[2];
    unix_pair(fds);
    memset(&r, 0, sizeof r);
    r.fd = fds[1];
    r.mode = RAW_SERVER_GOOD;
    r.k = &kb;
    r.self = ID_SERVER;
    party_init(&p, fds[0], 0, &k, ID_CLIENT, 5000);
    run2(party_run, &p, raw_run, &r);
    CHECK(p.rc == ISM_AUTH_EAUTH && r.got_refusal, "bad MACs: rc %d, refusal %d", p.rc,
          r.got_refusal);

    run_raw(&p, &r, RAW_CLIENT_BADMAC, 1, &k, 5000);
    CHECK(p.rc == ISM_AUTH_EAUTH, "bad MACc: rc %d %s", p.rc, p.err);
    CHECK(contains(p.err, "failed authentication"), "bad MACc message: %s", p.err);
    CHECK(r.ok && r.verdict == 0, "client with bad MAC got verdict %d", r.verdict);

    run_raw(&p, &r, RAW_CLIENT_HTTP, 1, &k, 5000);
    CHECK(p.rc == ISM_AUTH_EPROTO && contains(p.err, "not an isthmus gateway"),
          "HTTP client: rc %d %s", p.rc, p.err);
}

static void test_peer_closes(void)
{
    ism_auth_key k;
    make_key(&k, JOB1, SECRET_A);
    party p;
    raw_peer r;

    run_raw(&p, &r, RAW_CLIENT_HALF_HELLO, 1, &k, 5000);
    CHECK(p.rc == ISM_AUTH_ECLOSED, "half HELLO: rc %d %s", p.rc, p.err);
    CHECK(contains(p.err, "closed the connection during the handshake"), "half HELLO: %s",
          p.err);
    CHECK(p.elapsed_ms < 2000, "half HELLO took %lld ms", (long long)p.elapsed_ms);

    run_raw(&p, &r, RAW_SERVER_CLOSE_HELLO, 0, &k, 5000);
    CHECK(p.rc == ISM_AUTH_ECLOSED, "close after HELLO: rc %d %s", p.rc, p.err);
    CHECK(contains(p.err, "closed") && contains(p.err, "CHALLENGE"), "close after HELLO: %s",
          p.err);
    CHECK(p.elapsed_ms < 2000, "close after HELLO took %lld ms", (long long)p.elapsed_ms);

    run_raw(&p, &r, RAW_SERVER_HALF_CHAL, 0, &k, 5000);
    CHECK(p.rc == ISM_AUTH_ECLOSED, "half CHALLENGE: rc %d %s", p.rc, p.err);
    CHECK(p.elapsed_ms < 2000, "half CHALLENGE took %lld ms", (long long)p.elapsed_ms);
    printf("  peer closed, we say: %s\n", p.err);
}

static void test_silence(void)
{
    ism_auth_key k;
    make_key(&k, JOB1, SECRET_A);
    party p;
    raw_peer r;
    const int T = 300;

    run_raw(&p, &r, RAW_CLIENT_SILENT, 1, &k, T);
    CHECK(p.rc == ISM_AUTH_ETIMEDOUT, "silent client: rc %d %s", p.rc, p.err);
    CHECK(contains(p.err, "timed out after 300 ms"), "silent client: %s", p.err);
    CHECK(p.elapsed_ms >= T - 5 && p.elapsed_ms < T + 1500, "silent client took %lld ms",
          (long long)p.elapsed_ms);

    run_raw(&p, &r, RAW_SERVER_SILENT, 0, &k, T);
    CHECK(p.rc == ISM_AUTH_ETIMEDOUT, "silent server: rc %d %s", p.rc, p.err);
    CHECK(contains(p.err, "timed out after 300 ms") && contains(p.err, "CHALLENGE"),
          "silent server: %s", p.err);
    CHECK(p.elapsed_ms >= T - 5 && p.elapsed_ms < T + 1500, "silent server took %lld ms",
          (long long)p.elapsed_ms);
    printf("  silent peer, we say: %s\n", p.err);
}

static void test_bad_args(void)
{
    ism_auth_key k;
    make_key(&k, JOB1, SECRET_A);
    char err[256];
    int fds[2];
    unix_pair(fds);
    CHECK(ism_auth_client(fds[0], &k, ID_CLIENT, NULL, 0, err, sizeof err) == ISM_AUTH_EINVAL,
          "timeout 0 accepted");
    CHECK(ism_auth_server(fds[1], NULL, ID_SERVER, NULL, 100, err, sizeof err) == ISM_AUTH_EINVAL,
          "NULL key accepted");
    ism_auth_key weak = k;
    weak.secret_len = 4;
    CHECK(ism_auth_client(fds[0], &weak, ID_CLIENT, NULL, 100, err, sizeof err) ==
              ISM_AUTH_EINVAL,
          "4-byte secret accepted");
    CHECK(ism_auth_client(-1, &k, ID_CLIENT, NULL, 100, NULL, 0) == ISM_AUTH_EINVAL,
          "fd -1 accepted (with NULL err buffer)");
    close(fds[0]);
    close(fds[1]);
    CHECK(strcmp(ism_auth_strerror(ISM_AUTH_EJOB), ism_auth_strerror(ISM_AUTH_EAUTH)) != 0,
          "strerror not distinct");
}

/* ---------- keys ---------- */

static void test_key_hex(void)
{
    ism_auth_key k;
    char err[256];
    CHECK(ism_auth_key_from_hex(&k, JOB1, SECRET_A, err, sizeof err) == 0, "%s", err);
    CHECK(k.secret_len == 32 && k.job[0] == 0x01 && k.job[15] == 0xef && k.secret[0] == 0xa1 &&
              k.secret[31] == 0x90,
          "decoded key wrong");
    CHECK(ism_auth_key_from_hex(&k, "0123", SECRET_A, err, sizeof err) == ISM_AUTH_EKEY &&
              contains(err, "32 hex digits"),
          "short job id: %s", err);
    CHECK(ism_auth_key_from_hex(&k, "0123456789abcdef0123456789abcdeg", SECRET_A, err,
                                sizeof err) == ISM_AUTH_EKEY &&
              contains(err, "position 32"),
          "bad job hex: %s", err);
    CHECK(ism_auth_key_from_hex(&k, JOB1, "abcd", err, sizeof err) == ISM_AUTH_EKEY &&
              contains(err, "between 32 and 128"),
          "short secret: %s", err);
    char bad[65];
    memcpy(bad, SECRET_A, sizeof bad);
    bad[40] = 'z';
    CHECK(ism_auth_key_from_hex(&k, JOB1, bad, err, sizeof err) == ISM_AUTH_EKEY &&
              contains(err, "not valid hex") && !leaks_secret(err, bad),
          "bad secret hex: %s", err);
    CHECK(k.secret_len == 0 && k.secret[0] == 0, "failed parse left key material behind");
    CHECK(ism_auth_key_from_hex(&k, JOB1, SECRET_A + 1, err, sizeof err) == ISM_AUTH_EKEY,
          "odd-length secret accepted");
    CHECK(ism_auth_key_from_hex(&k, JOB1, NULL, err, sizeof err) == ISM_AUTH_EKEY,
          "NULL secret accepted");
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
        fchmod(fd, mode) != 0) {
        perror("FATAL: write key file");
        exit(2);
    }
    close(fd);
}

static void test_key_file(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600], err[1024];
    snprintf(dir, sizeof dir, "%s/ism_auth_test_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("FATAL: mkdtemp");
        exit(2);
    }
    snprintf(path, sizeof path, "%s/job.secret", dir);
    ism_auth_key k, ref;
    make_key(&ref, JOB1, SECRET_A);
    char content[200];
    snprintf(content, sizeof content, "  %s\n", SECRET_A);

    write_file(path, content, 0644);
    int rc = ism_auth_key_load_file(&k, JOB1, path, err, sizeof err);
    CHECK(rc == ISM_AUTH_EKEY, "0644 key file accepted");
    CHECK(contains(err, path) && contains(err, "chmod 600") && contains(err, "0644"),
          "0644 message: %s", err);
    CHECK(!leaks_secret(err, SECRET_A), "0644 message leaks the secret: %s", err);
    printf("  0644 key file: %s\n", err);

    write_file(path, content, 0640);
    CHECK(ism_auth_key_load_file(&k, JOB1, path, err, sizeof err) == ISM_AUTH_EKEY,
          "0640 key file accepted");

    write_file(path, content, 0600);
    rc = ism_auth_key_load_file(&k, JOB1, path, err, sizeof err);
    CHECK(rc == 0, "0600 key file refused: %s", err);
    CHECK(rc == 0 && k.secret_len == ref.secret_len &&
              memcmp(k.secret, ref.secret, ref.secret_len) == 0 &&
              memcmp(k.job, ref.job, sizeof k.job) == 0,
          "key from file differs from key from hex");

    write_file(path, content, 0400);
    CHECK(ism_auth_key_load_file(&k, JOB1, path, err, sizeof err) == 0, "0400 refused: %s", err);

    char badc[200];
    snprintf(badc, sizeof badc, "%.40sXY%s\n", SECRET_A, SECRET_A + 42);
    write_file(path, badc, 0600);
    CHECK(ism_auth_key_load_file(&k, JOB1, path, err, sizeof err) == ISM_AUTH_EKEY &&
              contains(err, "not valid hex") && !leaks_secret(err, SECRET_A),
          "bad file content: %s", err);

    unlink(path);
    CHECK(ism_auth_key_load_file(&k, JOB1, path, err, sizeof err) == ISM_AUTH_EKEY &&
              contains(err, path) && contains(err, "No such file"),
          "missing file: %s", err);
    CHECK(ism_auth_key_load_file(&k, JOB1, dir, err, sizeof err) == ISM_AUTH_EKEY,
          "directory accepted as key file");
    /* A FIFO must be refused at once, not block waiting for a writer. */
    if (mkfifo(path, 0600) == 0) {
        CHECK(ism_auth_key_load_file(&k, JOB1, path, err, sizeof err) == ISM_AUTH_EKEY &&
                  contains(err, "not a regular file"),
              "fifo: %s", err);
        unlink(path);
    }
    rmdir(dir);
}

/* ---------- sockets ---------- */

static void test_parse_hostport(void)
{
    static const struct {
        const char *in, *host;
        int port;
    } good[] = {
        {"127.0.0.1:41000", "127.0.0.1", 41000},
        {"localhost:1", "localhost", 1},
        {"gw-1.site-a.example.org:65535", "gw-1.site-a.example.org", 65535},
        {"node_7:80", "node_7", 80},
        {"10.0.0.5:00080", "10.0.0.5", 80},
        {"host.:22", "host.", 22},
    };
    static const struct {
        const char *in, *why;
    } bad[] = {
        {"", "empty"},
        {"host", "no port"},
        {":80", "no host"},
        {"host:", "no port after"},
        {"host:0", "out of range"},
        {"host:65536", "out of range"},
        {"host:99999999999999999999", "out of range"},
        {"host:8x", "not a decimal"},
        {"host:-1", "not a decimal"},
        {"host:+80", "not a decimal"},
        {"host: 80", "not a decimal"},
        {"::1:80", "IPv6"},
        {"[::1]:80", "IPv6"},
        {"999.1.1.1:80", "not a valid IPv4"},
        {"1.2.3:80", "not a valid IPv4"},
        {"bad host:80", "not a valid host name"},
        {"-host:80", "not a valid host name"},
        {"host..x:80", "not a valid host name"},
        {"host\n:80", "not a valid host name"},
    };
    char host[64], err[256];
    int port;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        port = -1;
        int rc = ism_sock_parse_hostport(good[i].in, host, sizeof host, &port, err, sizeof err);
        CHECK(rc == 0 && strcmp(host, good[i].host) == 0 && port == good[i].port,
              "'%s': rc %d host '%s' port %d err '%s'", good[i].in, rc, rc == 0 ? host : "",
              port, rc ? err : "");
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = ism_sock_parse_hostport(bad[i].in, host, sizeof host, &port, err, sizeof err);
        CHECK(rc != 0 && contains(err, bad[i].why), "'%s' should fail with '%s', got rc %d '%s'",
              bad[i].in, bad[i].why, rc, err);
    }
    char small[4];
    CHECK(ism_sock_parse_hostport("localhost:80", small, sizeof small, &port, err, sizeof err) !=
                  0 &&
              contains(err, "too long"),
          "tiny host buffer: %s", err);
}

struct delayed_listener {
    int port, delay_ms, accepted;
};

static void *delayed_listen(void *arg)
{
    struct delayed_listener *d = arg;
    struct timespec ts = {d->delay_ms / 1000, (long)(d->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    char err[256];
    int l = ism_sock_listen("127.0.0.1", d->port, 4, err, sizeof err);
    if (l < 0) {
        fprintf(stderr, "delayed listener: %s\n", err);
        return NULL;
    }
    int c = accept(l, NULL, NULL);
    d->accepted = c >= 0;
    if (c >= 0)
        close(c);
    close(l);
    return NULL;
}

static void test_listen_connect(void)
{
    char err[512];
    int l1 = ism_sock_listen("127.0.0.1", 0, 8, err, sizeof err);
    CHECK(l1 >= 0, "listen on ephemeral port: %s", err);
    int port = ism_sock_local_port(l1);
    CHECK(port > 0, "local port %d", port);

    int l2 = ism_sock_listen("127.0.0.1", port, 8, err, sizeof err);
    char want[64];
    snprintf(want, sizeof want, "cannot listen on 127.0.0.1:%d: address already in use", port);
    CHECK(l2 < 0, "second listen on port %d succeeded", port);
    CHECK(contains(err, want) && contains(err, "--port"), "second listen message: %s", err);
    printf("  port in use: %s\n", err);
    if (l2 >= 0)
        close(l2);

    int c = ism_sock_connect("localhost", port, 1000, err, sizeof err);
    CHECK(c >= 0, "connect by name: %s", err);
    if (c >= 0) {
        CHECK((fcntl(c, F_GETFL) & O_NONBLOCK) == 0, "connect returned a non-blocking fd");
        CHECK(ism_sock_set_nodelay(c, 1) == 0, "nodelay: %s", strerror(errno));
        CHECK(ism_sock_set_buffers(c, 1 << 20, 1 << 20) == 0, "buffers: %s", strerror(errno));
        CHECK(ism_sock_set_buffers(c, 0, -1) == 0, "buffers no-op");
        int a = accept(l1, NULL, NULL);
        char name[80];
        ism_sock_peer_name(a, name, sizeof name);
        CHECK(strncmp(name, "127.0.0.1:", 10) == 0, "peer name '%s'", name);
        /* read_full with a deadline on an idle link times out on time. */
        char buf[4];
        size_t done = 99;
        int64_t t0 = ism_now_ms();
        int rc = ism_sock_read_full(a, buf, sizeof buf, t0 + 150, &done);
        int64_t dt = ism_now_ms() - t0;
        CHECK(rc == ISM_SOCK_ETIMEDOUT && done == 0 && dt >= 145 && dt < 1500,
              "read_full timeout: rc %d done %zu after %lld ms", rc, done, (long long)dt);
        CHECK(ism_sock_write_full(c, "ab", 2, -1, NULL) == 0, "write_full");
        close(c);
        rc = ism_sock_read_full(a, buf, sizeof buf, ism_now_ms() + 1000, &done);
        CHECK(rc == ISM_SOCK_ECLOSED && done == 2, "read_full after close: rc %d done %zu", rc,
              done);
        rc = ism_sock_write_full(a, buf, 1, ism_now_ms() + 1000, NULL);
        rc = rc == 0 ? ism_sock_write_full(a, buf, 1, ism_now_ms() + 1000, NULL) : rc;
        CHECK(rc == ISM_SOCK_ECLOSED || rc == 0, "write to closed peer raised rc %d", rc);
        close(a);
    }
    close(l1);

    /* Nobody listens: refused until the deadline, and the message says so. */
    int64_t t0 = ism_now_ms();
    c = ism_sock_connect("127.0.0.1", port, 300, err, sizeof err);
    int64_t dt = ism_now_ms() - t0;
    CHECK(c < 0 && contains(err, "Connection refused") && contains(err, "kept retrying"),
          "connect to closed port: %s", err);
    CHECK(dt >= 295 && dt < 1500, "refused connect gave up after %lld ms", (long long)dt);
    printf("  nobody listening: %s\n", err);
    if (c >= 0)
        close(c);

    /* The peer starts listening late: connect keeps retrying and gets through. */
    struct delayed_listener d = {port, 250, 0};
    pthread_t t;
    pthread_create(&t, NULL, delayed_listen, &d);
    c = ism_sock_connect("127.0.0.1", port, 5000, err, sizeof err);
    CHECK(c >= 0, "connect to late listener: %s", err);
    if (c >= 0)
        close(c);
    pthread_join(t, NULL);
    CHECK(d.accepted, "late listener accepted nothing");

    CHECK(ism_sock_connect("127.0.0.1", 0, 100, err, sizeof err) < 0 && contains(err, "range"),
          "port 0: %s", err);
    CHECK(ism_sock_connect("999.0.0.1", 80, 100, err, sizeof err) < 0 &&
              contains(err, "999.0.0.1"),
          "bad address: %s", err);
    CHECK(ism_sock_listen("127.0.0.1", 70000, 1, err, sizeof err) < 0 && contains(err, "70000"),
          "listen port 70000: %s", err);
}


/* ---------- early data: the client writes before the verdict ---------- */

typedef struct early_party {
    party p;
    ism_aead_keys keys;
    int called, fail; /* the hook ran; it is to fail (as a write to a closed peer) */
    uint8_t msg[32];
} early_party;

static int early_hook(void *arg, const ism_aead_keys *keys, int64_t deadline_ms)
{
    early_party *e = arg;
    e->called = 1;
    if (e->fail)
        return ISM_SOCK_ECLOSED;
    uint8_t m[32];
    memcpy(m, keys->c2s.secret, 16); /* proves the hook saw the keys the client ends with */
    memset(m + 16, 0xA5, 16);
    memcpy(e->msg, m, sizeof m);
    return ism_sock_write_full(e->p.fd, m, sizeof m, deadline_ms, NULL);
}

static void *early_client_run(void *arg)
{
    early_party *e = arg;
    party *p = &e->p;
    p->rc = ism_auth_run_early(p->fd, p->k, p->self, ISM_AUTH_SUITES_AEAD, 0, "test", &p->peer,
                               &e->keys, p->timeout_ms, p->err, sizeof p->err, early_hook, e);
    if (p->rc != 0)
        shutdown(p->fd, SHUT_RDWR); /* as a real caller closes: the server's read ends */
    return NULL;
}

static void *early_server_run(void *arg)
{
    early_party *e = arg;
    party *p = &e->p;
    p->rc = ism_auth_run(p->fd, 1, p->k, p->self, ISM_AUTH_SUITES_AEAD, 0, "test", &p->peer,
                         &e->keys, p->timeout_ms, p->err, sizeof p->err);
    if (p->rc == 0) /* what the client wrote early: read after the handshake, as a user does */
        ism_sock_read_full(p->fd, e->msg, sizeof e->msg, ism_now_ms() + 5000, NULL);
    return NULL;
}

/* One handshake with early data over a fresh TCP pair: client key kc, server key ks. */
static void early_round(const ism_auth_key *kc, const ism_auth_key *ks, int fail,
                        early_party *c, early_party *s)
{
    int fds[2];
    tcp_pair(fds);
    memset(c, 0, sizeof *c);
    memset(s, 0, sizeof *s);
    party_init(&c->p, fds[0], 0, kc, ID_CLIENT, 5000);
    party_init(&s->p, fds[1], 1, ks, ID_SERVER, 5000);
    c->fail = fail;
    run2(early_client_run, c, early_server_run, s);
    close(fds[0]);
    close(fds[1]);
}

static void test_early_data(void)
{
    ism_auth_key ka, kb;
    make_key(&ka, JOB1, SECRET_A);
    make_key(&kb, JOB1, SECRET_B);
    early_party c, s;

    early_round(&ka, &ka, 0, &c, &s);
    CHECK(c.p.rc == 0 && s.p.rc == 0, "early data: client %d '%s', server %d '%s'", c.p.rc,
          c.p.err, s.p.rc, s.p.err);
    CHECK(c.called == 1, "the client's early hook did not run");
    CHECK(memcmp(c.msg, s.msg, sizeof c.msg) == 0,
          "the server read other bytes than the client wrote early");
    CHECK(memcmp(c.keys.c2s.secret, s.keys.c2s.secret, sizeof c.keys.c2s.secret) == 0 &&
              memcmp(c.msg, s.keys.c2s.secret, 16) == 0,
          "the early hook's keys differ from the keys both sides ended with");

    /* A server without the secret: its MAC fails at the client, which writes nothing. */
    early_round(&ka, &kb, 0, &c, &s);
    CHECK(c.p.rc == ISM_AUTH_EAUTH, "wrong secret: client rc %d: %s", c.p.rc, c.p.err);
    CHECK(c.called == 0, "the early hook ran for a server that did not prove the secret");

    /* A hook that fails ends the handshake as an I/O error, naming the peer. */
    early_round(&ka, &ka, 1, &c, &s);
    CHECK(c.called == 1 && c.p.rc == ISM_AUTH_ECLOSED && contains(c.p.err, "peer 127.0.0.1:"),
          "failing hook: rc %d: %s", c.p.rc, c.p.err);

    ism_auth_key_clear(&ka);
    ism_auth_key_clear(&kb);
}

int main(void)
{
    struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"parse_hostport", test_parse_hostport},
        {"listen_connect", test_listen_connect},
        {"key_hex", test_key_hex},
        {"key_file", test_key_file},
        {"bad_args", test_bad_args},
        {"same_secret", test_same_secret},
        {"wrong_secret", test_wrong_secret},
        {"wrong_job", test_wrong_job},
        {"same_identity", test_same_identity},
        {"conformance", test_conformance},
        {"peer_closes", test_peer_closes},
        {"silence", test_silence},
        {"early_data", test_early_data},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = failures;
        printf("[ RUN  ] %s\n", tests[i].name);
        fflush(stdout);
        tests[i].fn();
        printf("[ %s ] %s\n", failures == before ? " OK " : "FAIL", tests[i].name);
    }
    if (failures) {
        fprintf(stderr, "test_auth: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_auth: all checks passed\n");
    return 0;
}
