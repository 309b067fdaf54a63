/*
 * soak: all-to-all and allreduce, round after round, for argv[1] seconds, checking every
 * byte; made to run for minutes while the WAN loses, reorders, duplicates and is cut
 * (bench/soak.py; a 60 s version in the suite). Nothing may be lost (every call must
 * complete: a lost message is a hang, which the launcher's timeout turns into a
 * failure), duplicated or corrupted (every byte received is compared with what its
 * sender computed).
 *
 * Round r: an MPI_Alltoall of blocks of a size that cycles from 8 bytes to 256 KiB
 * (eager, early data and rendezvous across sites), byte k of the block src -> dst being a
 * hash of (src, dst, r, k); then an MPI_Allreduce (sum of uint64) of a vector whose
 * length cycles from 1 to 64 Ki elements, element i of rank p a hash of (p, r, i), the
 * expected sum computed by every rank alone. At the end rank 0 prints the rounds, the
 * messages and bytes every rank handed to MPI, and the bytes found wrong (0).
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 32);
}

static uint8_t byte_at(int src, int dst, int round, size_t k)
{
    return (uint8_t)mix((uint64_t)k << 24 ^ (uint64_t)(src + 1) << 12 ^ (uint64_t)(dst + 1) ^
                        (uint64_t)round << 44);
}

static uint64_t elem(int p, int round, size_t i)
{
    return mix((uint64_t)(p + 1) << 40 ^ (uint64_t)round << 20 ^ i) >> 8; /* no overflow */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    static const size_t blocks[] = {8, 1024, 48 << 10, 256 << 10, 100, 200 << 10, 64 << 10};
    static const size_t vecs[] = {1, 1000, 64 << 10, 7, 8192, 100};
    const int nb = (int)(sizeof blocks / sizeof *blocks), nv = (int)(sizeof vecs / sizeof *vecs);
    size_t maxb = 256 << 10, maxv = 64 << 10;
    uint8_t *sbuf = malloc(maxb * (size_t)size), *rbuf = malloc(maxb * (size_t)size);
    uint64_t *vin = malloc(maxv * 8), *vout = malloc(maxv * 8);
    if (!sbuf || !rbuf || !vin || !vout)
        MPI_Abort(MPI_COMM_WORLD, 2);
    uint64_t msgs = 0, bytes = 0, wrong = 0;
    double t0 = MPI_Wtime();
    int round = 0, more = 1;
    while (more) {
        size_t b = blocks[round % nb];
        for (int p = 0; p < size; p++)
            for (size_t k = 0; k < b; k++)
                sbuf[(size_t)p * b + k] = byte_at(rank, p, round, k);
        memset(rbuf, 0, b * (size_t)size);
        CHECK_RC(MPI_Alltoall(sbuf, (int)b, MPI_BYTE, rbuf, (int)b, MPI_BYTE, MPI_COMM_WORLD),
                 "Alltoall");
        for (int p = 0; p < size; p++)
            for (size_t k = 0; k < b; k++)
                wrong += rbuf[(size_t)p * b + k] != byte_at(p, rank, round, k);
        msgs += (uint64_t)size - 1;
        bytes += (uint64_t)b * (uint64_t)(size - 1);

        size_t n = vecs[round % nv];
        for (size_t i = 0; i < n; i++)
            vin[i] = elem(rank, round, i);
        CHECK_RC(MPI_Allreduce(vin, vout, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD),
                 "Allreduce");
        for (size_t i = 0; i < n; i++) {
            uint64_t want = 0;
            for (int p = 0; p < size; p++)
                want += elem(p, round, i);
            wrong += vout[i] != want;
        }
        msgs++;
        bytes += n * 8;
        CHECK(wrong == 0, "round %d: %llu bytes or elements wrong", round,
              (unsigned long long)wrong);
        round++;
        if (rank == 0)
            more = MPI_Wtime() - t0 < seconds;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    uint64_t mine[3] = {msgs, bytes, wrong}, all[3];
    MPI_Reduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("soak: %d rounds in %.1f s; %llu messages, %llu bytes handed to MPI; %llu wrong\n",
               round, MPI_Wtime() - t0, (unsigned long long)all[0], (unsigned long long)all[1],
               (unsigned long long)all[2]);
    free(sbuf);
    free(rbuf);
    free(vin);
    free(vout);
    int rc = check_finish("soak");
    MPI_Finalize();
    return rc;
}
