/*
 * idle_wait: how much CPU a rank burns while it waits for another site.
 *
 * Not a conformance test (it is not in tests.txt): it measures libisthmus's idle policy
 * (ISTHMUS_IDLE_YIELD_US, native/src/core/gwlink.c). Rank 0 sleeps for 1 s and then sends
 * one int to the last rank, which waits in MPI_Recv all that time; the last rank prints
 * the CPU seconds its own thread used during the receive (RUSAGE_THREAD: a vendor's
 * helper threads are not the rank's waiting), the wall seconds, and the seconds the
 * thread was runnable (on a cpu or queued for one, from /proc/thread-self/schedstat;
 * -1 where the kernel does not keep it), as
 *   idle_wait: cpu <seconds> wall <seconds> runnable <seconds>
 * then every rank checks the value and the program ends with the usual "idle_wait: OK".
 * Run it with the two ranks at different sites; the Python test reads the line. A thread
 * that yields throughout is runnable all the time however busy the machine is, while the
 * CPU it gets depends on what else runs; one that naps is runnable seldom.
 */
#define _GNU_SOURCE
#include "check.h"
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Seconds this thread has been on a cpu plus queued for one; -1 if unknown. */
static double runnable_s(void)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    unsigned long long run = 0, wait = 0;
    int got = f ? fscanf(f, "%llu %llu", &run, &wait) : 0;
    if (f)
        fclose(f);
    return got == 2 ? (double)(run + wait) * 1e-9 : -1.0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int last = size - 1, v = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1 && rank == 0) {
        sleep(1);
        v = 4242;
        CHECK_RC(MPI_Send(&v, 1, MPI_INT, last, 7, MPI_COMM_WORLD), "Send");
    } else if (size > 1 && rank == last) {
        double c0 = cpu_s(), w0 = MPI_Wtime(), r0 = runnable_s();
        CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "Recv");
        double c1 = cpu_s(), w1 = MPI_Wtime(), r1 = runnable_s();
        CHECK(v == 4242, "received %d, expected 4242", v);
        printf("idle_wait: cpu %.3f wall %.3f runnable %.3f\n", c1 - c0, w1 - w0,
               r0 < 0 || r1 < 0 ? -1.0 : r1 - r0);
        fflush(stdout);
    }
    check_finish("idle_wait");
    MPI_Finalize();
    return 0;
}
