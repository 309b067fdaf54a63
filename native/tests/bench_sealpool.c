/* bench_sealpool.c: what the crypto workers take off the thread that seals, without MPI,
 * gateways or sockets in the way (bench/notebook/link-crypto.md): one thread seals
 * `mib` MiB through a record stream in writes of 256 KiB (a gateway chunk) and drops the
 * records, with 0..W workers, runs interleaved. Prints per run the rate and the calling
 * thread's CPU per GB (RUSAGE_THREAD): with a free core per worker, that CPU falls towards
 * 1 / (W + 1) of the inline cost plus the handoffs.
 *
 * Modes: tcp (the record stream above); udp-seal, the reliable-UDP path (wan/udp/
 * sealbatch.c): flushes of 44 full datagrams of 1472 bytes (a GSO run) numbered and
 * sealed in one batch, the payload read in place through the slots' iovecs; udp-open:
 * receive batches of 64 such datagrams opened in place, the thread's CPU counted around
 * the opening only (they are sealed first, inline, outside the count).
 *
 *   bench_sealpool [mib=1024] [reps=5] [max_workers=1] [tcp|udp-seal|udp-open]
 */
#include "sealpool.h"
#include "sstream.h"
#include "conn.h"
#include "seal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double thread_cpu(void)
{
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define UDP_HDR 40 /* a data packet's header; the rest of 1472 - 24 bytes is payload */
#define UDP_PAY (1472 - UDP_SEAL_OVERHEAD - UDP_HDR)

/* Seal `bytes` of payload in flushes of UDP_GSO_MAX datagrams; the thread's CPU s. */
static double udp_seal_run(const ism_aead_keys *k, ism_sealpool *p, const uint8_t *src,
                           size_t bytes)
{
    udp_seal s;
    udp_txslot *t = calloc(UDP_GSO_MAX, sizeof *t);
    if (udp_seal_init(&s, k, 1) != 0 || udp_seal_use_pool(&s, p) != 0 || !t)
        exit(1);
    double c0 = thread_cpu();
    for (size_t done = 0; done < bytes; done += UDP_GSO_MAX * UDP_PAY) {
        for (int i = 0; i < UDP_GSO_MAX; i++) {
            memset(t[i].buf, i, UDP_HDR);
            t[i].iov[0] = (struct iovec){t[i].buf, UDP_HDR};
            t[i].iov[1] = (struct iovec){(void *)(src + (size_t)i * UDP_PAY), UDP_PAY};
            t[i].niov = 2;
            t[i].len = UDP_HDR + UDP_PAY;
            t[i].seq = s.next++;
            t[i].pending = 1;
        }
        if (udp_seal_slots(&s, t, UDP_GSO_MAX) != UDP_GSO_MAX)
            exit(1);
    }
    double c = thread_cpu() - c0;
    udp_seal_free(&s);
    free(t);
    return c;
}

static double open_wall; /* udp-open: the seconds spent opening */

/* Open `bytes` of payload in receive batches of UDP_RX_OPEN_MAX; the thread's CPU s
 * while opening (open_wall: the wall time). */
static double udp_open_run(const ism_aead_keys *k, ism_sealpool *p, const uint8_t *src,
                           size_t bytes)
{
    udp_seal tx, rx;
    uint8_t *d = malloc((size_t)UDP_RX_OPEN_MAX * 1472);
    if (udp_seal_init(&tx, k, 1) != 0 || udp_seal_init(&rx, k, 0) != 0 ||
        udp_seal_use_pool(&rx, p) != 0 || !d)
        exit(1);
    udp_rxd r[UDP_RX_OPEN_MAX];
    double c = 0;
    for (size_t done = 0; done < bytes; done += UDP_RX_OPEN_MAX * UDP_PAY) {
        for (int i = 0; i < UDP_RX_OPEN_MAX; i++) {
            uint8_t *b = d + (size_t)i * 1472;
            memset(b, i, UDP_HDR);
            struct iovec v = {(void *)(src + (size_t)i * UDP_PAY), UDP_PAY};
            size_t n = udp_seal_at(&tx.tx, tx.next++, b, UDP_HDR, &v, 1);
            r[i] = (udp_rxd){.p = b, .n = n, .type = 1};
        }
        double c0 = thread_cpu(), t0 = now();
        udp_seal_open_batch(&rx, r, UDP_RX_OPEN_MAX);
        c += thread_cpu() - c0;
        open_wall += now() - t0;
        for (int i = 0; i < UDP_RX_OPEN_MAX; i++)
            if (!r[i].ok)
                exit(1);
    }
    udp_seal_free(&tx);
    udp_seal_free(&rx);
    free(d);
    return c;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    int reps = argc > 2 ? atoi(argv[2]) : 5, maxw = argc > 3 ? atoi(argv[3]) : 1;
    const char *mode = argc > 4 ? argv[4] : "tcp";
    if (reps < 1 || reps > 100 || maxw < 0 || maxw > ISM_SEALPOOL_MAX)
        return 2;
    int udp = strcmp(mode, "udp-seal") == 0 ? 1 : strcmp(mode, "udp-open") == 0 ? 2 : 0;
    if (!udp && strcmp(mode, "tcp") != 0)
        return 2;
    ism_aead_keys k;
    memset(&k, 0, sizeof k);
    k.suite = ISM_AEAD_AES256GCM;
    k.rekey_log2 = 22;
    memset(k.c2s.secret, 7, sizeof k.c2s.secret);
    size_t chunk = 256 << 10; /* at least UDP_RX_OPEN_MAX x UDP_PAY */
    uint8_t *src = malloc(chunk);
    memset(src, 0x5a, chunk);
    double rate[ISM_SEALPOOL_MAX + 1][100], cpu[ISM_SEALPOOL_MAX + 1][100];
    for (int rep = 0; rep < reps; rep++) {
        for (int j = 0; j <= maxw; j++) {
            int w = (j + rep) % (maxw + 1); /* the order rotates */
            ism_sealpool *p = ism_sealpool_new(w);
            if (udp) {
                double gb = (double)(mib << 20) / 1e9, t0 = now();
                open_wall = 0;
                double c = udp == 1 ? udp_seal_run(&k, p, src, mib << 20)
                                    : udp_open_run(&k, p, src, mib << 20);
                rate[w][rep] = gb / (udp == 1 ? now() - t0 : open_wall);
                cpu[w][rep] = c / gb;
                ism_sealpool_free(p);
                continue;
            }
            ism_sstream s;
            if (ism_sstream_init(&s, &k, 1) != 0 || ism_sstream_use_pool(&s, p) != 0)
                return 1;
            double t0 = now(), c0 = thread_cpu();
            for (size_t done = 0; done < mib << 20; done += chunk) {
                size_t off = 0;
                while (off < chunk) {
                    struct iovec v = {src + off, chunk - off};
                    ssize_t n = ism_sstream_seal(&s, &v, 1);
                    if (n < 0)
                        return 1;
                    off += (size_t)n;
                    s.tx_off = s.tx_len = 0; /* the records are dropped, as a socket would take them */
                }
            }
            double gb = (double)(mib << 20) / 1e9;
            rate[w][rep] = gb / (now() - t0);
            cpu[w][rep] = (thread_cpu() - c0) / gb;
            ism_sstream_free(&s);
            ism_sealpool_free(p);
        }
    }
    printf("%s\nworkers  GB/s median   min   max   calling thread CPU s/GB median   min   max\n",
           mode);
    for (int w = 0; w <= maxw; w++) {
        qsort(rate[w], (size_t)reps, sizeof(double), cmp);
        qsort(cpu[w], (size_t)reps, sizeof(double), cmp);
        printf("%7d  %11.2f %5.2f %5.2f   %30.3f %5.3f %5.3f\n", w, rate[w][reps / 2], rate[w][0],
               rate[w][reps - 1], cpu[w][reps / 2], cpu[w][0], cpu[w][reps - 1]);
    }
    free(src);
    return 0;
}
