/* bench/core_latency.c: the round trip of one cache line between the machine's two
 * CPUs, sampled over time (issue 8). Two threads pinned to CPU 0 and CPU 1 pass a
 * counter back and forth; each sample is the mean of N round trips. On this project's
 * 2-vCPU EPYC guest the time switches between two levels for seconds at a time, which
 * every shared-memory measurement inside the node inherits (the model's calibration
 * against its sweep; the 2-rank collectives against the vendor's).
 *
 *   cc -O2 -pthread -o /tmp/core_latency bench/core_latency.c && /tmp/core_latency [S] [N]
 *   S samples one second apart (default 30), N round trips per sample (default 1000000)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Alignas(64) atomic_long ping;
static _Alignas(64) atomic_long pong;
static long n_trips = 1000000;
static atomic_int stop;

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s))
        fprintf(stderr, "core_latency: cannot pin to CPU %d\n", cpu);
}

static void *echo(void *arg)
{
    (void)arg;
    pin(1);
    long seen = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        long v = atomic_load_explicit(&ping, memory_order_acquire);
        if (v != seen) {
            seen = v;
            atomic_store_explicit(&pong, v, memory_order_release);
        }
    }
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int samples = argc > 1 ? atoi(argv[1]) : 30;
    if (argc > 2)
        n_trips = atol(argv[2]);
    if (samples < 1 || n_trips < 1) {
        fprintf(stderr, "usage: core_latency [samples >= 1] [round trips >= 1]\n");
        return 2;
    }
    pthread_t t;
    pin(0);
    if (pthread_create(&t, NULL, echo, NULL))
        return 1;
    long v = 0;
    double start = now();
    printf("# t_s round_trip_ns (CPU 0 <-> CPU 1, mean of %ld)\n", n_trips);
    for (int s = 0; s < samples; s++) {
        double t0 = now();
        for (long i = 0; i < n_trips; i++) {
            atomic_store_explicit(&ping, ++v, memory_order_release);
            while (atomic_load_explicit(&pong, memory_order_acquire) != v)
                ;
        }
        double t1 = now();
        printf("%.1f %.1f\n", t0 - start, (t1 - t0) * 1e9 / (double)n_trips);
        fflush(stdout);
        if (s + 1 < samples)
            sleep(1);
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    return 0;
}
