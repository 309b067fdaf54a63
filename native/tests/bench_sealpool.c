/* bench_sealpool.c: what the crypto workers take off the thread that seals, without MPI,
 * gateways or sockets in the way (bench/notebook/link-crypto.md): one thread seals
 * `mib` MiB through a record stream in writes of 256 KiB (a gateway chunk) and drops the
 * records, with 0..W workers, runs interleaved. Prints per run the rate and the calling
 * thread's CPU per GB (RUSAGE_THREAD): with a free core per worker, that CPU falls towards
 * 1 / (W + 1) of the inline cost plus the handoffs.
 *
 *   bench_sealpool [mib=1024] [reps=5] [max_workers=1]
 */
#include "sealpool.h"
#include "sstream.h"

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

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    int reps = argc > 2 ? atoi(argv[2]) : 5, maxw = argc > 3 ? atoi(argv[3]) : 1;
    if (reps < 1 || reps > 100 || maxw < 0 || maxw > ISM_SEALPOOL_MAX)
        return 2;
    ism_aead_keys k;
    memset(&k, 0, sizeof k);
    k.suite = ISM_AEAD_AES256GCM;
    k.rekey_log2 = 22;
    memset(k.c2s.secret, 7, sizeof k.c2s.secret);
    size_t chunk = 256 << 10;
    uint8_t *src = malloc(chunk);
    memset(src, 0x5a, chunk);
    double rate[ISM_SEALPOOL_MAX + 1][100], cpu[ISM_SEALPOOL_MAX + 1][100];
    for (int rep = 0; rep < reps; rep++) {
        for (int j = 0; j <= maxw; j++) {
            int w = (j + rep) % (maxw + 1); /* the order rotates */
            ism_sealpool *p = ism_sealpool_new(w);
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
    printf("workers  GB/s median   min   max   sealing thread CPU s/GB median   min   max\n");
    for (int w = 0; w <= maxw; w++) {
        qsort(rate[w], (size_t)reps, sizeof(double), cmp);
        qsort(cpu[w], (size_t)reps, sizeof(double), cmp);
        printf("%7d  %11.2f %5.2f %5.2f   %30.3f %5.3f %5.3f\n", w, rate[w][reps / 2], rate[w][0],
               rate[w][reps - 1], cpu[w][reps / 2], cpu[w][0], cpu[w][reps - 1]);
    }
    free(src);
    return 0;
}
