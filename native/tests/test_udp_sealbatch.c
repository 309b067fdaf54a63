/* test_udp_sealbatch.c: the reliable-UDP connection's datagrams sealed and opened in
 * batches on crypto workers (wan/udp/sealbatch.c), against one thread doing the same.
 *
 * Owns: slots numbered in order and sealed in batches on a pool give, datagram for
 * datagram, the bytes one cipher state sealing them one by one gives (key updates every
 * 16 datagrams, so inside every batch; payload in two pieces as from the send ring), for
 * both suites; and a receive batch holding a flipped bit, a second copy of a datagram, a
 * reordered pair, a datagram from before the window, a truncated one and a stranger is
 * opened on workers to exactly what udp_seal_open one by one delivers and rejects (same
 * plaintext, same verdicts, same count). Rounds repeat until the workers ran jobs of
 * both kinds, so a fault only a worker makes cannot hide.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "seal.h"
#include "check.h"
#include "test_keys.h"

#define NSLOTS 200
#define HLEN 40      /* a data header's worth: the common header, then header bytes sealed */
#define PAYLOAD 1416 /* a full datagram of 1472 bytes, sealed */

static void header(uint8_t *h, uint64_t n)
{
    for (int i = 0; i < HLEN; i++)
        h[i] = (uint8_t)(n * 31 + (uint64_t)i * 7);
}

/* Slot i of round r: header, then the payload in two pieces of the ring (src). */
static void fill(udp_txslot *t, uint64_t n, const uint8_t *src, size_t srclen)
{
    header(t->buf, n);
    size_t at = (n * 977) % (srclen - PAYLOAD), first = 100 + n % 700;
    t->iov[0] = (struct iovec){t->buf, HLEN};
    t->iov[1] = (struct iovec){(void *)(src + at), first};
    t->iov[2] = (struct iovec){(void *)(src + at + first), PAYLOAD - first};
    t->niov = 3;
    t->len = HLEN + PAYLOAD;
}

typedef struct dgram {
    uint8_t b[HLEN + PAYLOAD + UDP_SEAL_OVERHEAD];
    size_t n;
} dgram;

static int sealing_matches(int suite, ism_sealpool *p, const uint8_t *src, size_t srclen,
                           udp_txslot *t, dgram *ref, int round)
{
    ism_aead_keys k;
    test_keys(&k, suite);
    udp_seal one, shared;
    CHECK(udp_seal_init(&one, &k, 1) == 0 && udp_seal_init(&shared, &k, 1) == 0, "init");
    CHECK(udp_seal_use_pool(&shared, p) == 0 && shared.nslots == 3, "use pool");
    /* a few datagrams before, as a connection sealed its first ones before the pool */
    one.next = shared.next = (uint64_t)round * 5;
    int bad = 0;
    for (int pass = 0; pass < 3; pass++) {
        for (unsigned i = 0; i < NSLOTS; i++) {
            uint64_t n = one.next;
            fill(&t[i], n, src, srclen);
            memcpy(ref[i].b, t[i].buf, HLEN);
            ref[i].n = udp_seal_at(&one.tx, one.next++, ref[i].b, HLEN, t[i].iov + 1, 2);
            t[i].seq = shared.next++;
            t[i].pending = 1;
        }
        /* the first slots of a flush may be sealed already (sent before, not yet gone) */
        unsigned from = pass == 1 ? 7 : 0;
        for (unsigned i = 0; i < from; i++) {
            CHECK(udp_seal_slots(&shared, &t[i], 1) == 1, "one slot");
        }
        CHECK(udp_seal_slots(&shared, t, NSLOTS) == NSLOTS, "sealing failed");
        for (unsigned i = 0; i < NSLOTS; i++)
            if (t[i].pending || t[i].len != ref[i].n || t[i].niov != 1 ||
                memcmp(t[i].buf, ref[i].b, ref[i].n) != 0)
                bad++;
    }
    CHECK(bad == 0, "%s: %d datagrams sealed in batches differ from one thread's",
          ism_aead_suite_name(suite), bad);
    CHECK(shared.par_batches > 0, "no batch went to the pool");
    CHECK(udp_seal_rekeys(&shared) == udp_seal_rekeys(&one) && udp_seal_rekeys(&one) >= 30,
          "key updates %llu vs %llu", (unsigned long long)udp_seal_rekeys(&shared),
          (unsigned long long)udp_seal_rekeys(&one));
    udp_seal_free(&one);
    udp_seal_free(&shared);
    ism_aead_keys_wipe(&k);
    return bad;
}

/* What arrives: the datagrams of ref in order, with faults at fixed places. */
static int arrivals(const dgram *ref, int n, dgram *in, int *orig)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int j = i;
        if (i % 64 == 40)
            j = i + 1; /* a reordered pair */
        else if (i % 64 == 41)
            j = i - 1;
        in[m] = ref[j];
        orig[m++] = j;
        if (i % 64 == 10)
            in[m - 1].b[HLEN + 300] ^= 0x10; /* a flipped bit mid-batch */
        if (i % 64 == 20) {                  /* a second copy of an earlier datagram */
            in[m] = ref[i - 3];
            orig[m++] = i - 3;
        }
        if (i % 64 == 30) { /* truncated */
            in[m] = ref[i];
            in[m].n = 20;
            orig[m++] = -1;
        }
        if (i % 64 == 50) { /* a stranger: the caller's check refused it */
            in[m] = ref[i];
            in[m].b[1] = 99;
            orig[m++] = -2;
        }
    }
    in[m] = ref[0]; /* the first one again, long after */
    orig[m++] = 0;
    return m;
}

static int opening_matches(int suite, ism_sealpool *p, const dgram *ref, int n)
{
    ism_aead_keys k;
    test_keys(&k, suite);
    udp_seal one, shared;
    CHECK(udp_seal_init(&one, &k, 0) == 0 && udp_seal_init(&shared, &k, 0) == 0, "init");
    CHECK(udp_seal_use_pool(&shared, p) == 0, "use pool");
    dgram *a = malloc(sizeof *a * (size_t)(2 * n)), *b = malloc(sizeof *b * (size_t)(2 * n));
    int *orig = malloc(sizeof *orig * (size_t)(2 * n));
    int m = arrivals(ref, n, a, orig);
    memcpy(b, a, sizeof *a * (size_t)m);
    int bad = 0, delivered = 0;
    udp_rxd d[UDP_RX_OPEN_MAX];
    for (int i = 0; i < m; i += UDP_RX_OPEN_MAX) {
        int k2 = m - i < UDP_RX_OPEN_MAX ? m - i : UDP_RX_OPEN_MAX;
        for (int j = 0; j < k2; j++)
            d[j] = (udp_rxd){.p = b[i + j].b, .n = b[i + j].n, .type = orig[i + j] == -2 ? -1 : 1};
        udp_seal_open_batch(&shared, d, k2);
        for (int j = 0; j < k2; j++) {
            size_t n1 = a[i + j].n;
            int ok1 = orig[i + j] != -2 && udp_seal_open(&one, a[i + j].b, &n1) == 0;
            if (ok1 != d[j].ok || (ok1 && (n1 != d[j].n || memcmp(a[i + j].b, d[j].p, n1) != 0)))
                bad++;
            delivered += ok1;
        }
    }
    CHECK(bad == 0, "%s: %d datagrams opened in batches differ from one thread's",
          ism_aead_suite_name(suite), bad);
    /* of 200: 3 flipped, 3 second copies, 3 truncated, the first one again at the end */
    CHECK(shared.rejected == one.rejected && one.rejected == 10,
          "rejected %llu in batches, %llu one by one", (unsigned long long)shared.rejected,
          (unsigned long long)one.rejected);
    CHECK(delivered == n - (n + 53) / 64, "%d of %d delivered", delivered, n);
    CHECK(shared.par_batches > 0, "no batch went to the pool");
    udp_seal_free(&one);
    udp_seal_free(&shared);
    ism_aead_keys_wipe(&k);
    free(a);
    free(b);
    free(orig);
    return bad;
}

static void test_suite(int suite)
{
    size_t srclen = 1 << 20;
    uint8_t *src = malloc(srclen);
    for (size_t i = 0; i < srclen; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 13);
    udp_txslot *t = calloc(NSLOTS, sizeof *t);
    dgram *ref = malloc(sizeof *ref * NSLOTS);
    ism_sealpool *p = ism_sealpool_new(2);
    CHECK(p != NULL, "pool");
    /* until the workers sealed and opened a good share: a shared-CPU machine may let
     * the loop thread take everything in one round (20 s at most) */
    time_t t0 = time(NULL);
    unsigned long long jobs = 0, on_workers = 0, sealed_on = 0;
    int rounds = 0;
    do {
        unsigned long long before;
        ism_sealpool_counts(p, &jobs, &before);
        sealing_matches(suite, p, src, srclen, t, ref, rounds);
        ism_sealpool_counts(p, &jobs, &on_workers);
        sealed_on += on_workers - before;
        opening_matches(suite, p, ref, NSLOTS);
        ism_sealpool_counts(p, &jobs, &on_workers);
        rounds++;
    } while ((sealed_on < 20 || on_workers - sealed_on < 20) && time(NULL) - t0 < 20 && !failures);
    CHECK(sealed_on >= 20 && on_workers - sealed_on >= 20,
          "%s: the workers took too few jobs to test them (%llu sealed, %llu in all)",
          ism_aead_suite_name(suite), sealed_on, on_workers);
    printf("%s: %d rounds, %llu of %llu jobs on the workers\n", ism_aead_suite_name(suite),
           rounds, on_workers, jobs);
    ism_sealpool_free(p);
    free(ref);
    free(t);
    free(src);
}

int main(void)
{
    test_suite(ISM_AEAD_AES256GCM);
    test_suite(ISM_AEAD_CHACHA20POLY1305);
    if (failures) {
        fprintf(stderr, "test_udp_sealbatch: %d checks failed\n", failures);
        return 1;
    }
    printf("test_udp_sealbatch: all checks passed\n");
    return 0;
}
