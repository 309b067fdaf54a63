/*
 * wan_stress: every rank exchanges messages with every other rank, round after round,
 * for at least argv[1] seconds (default 0: one round) and at least argv[2] rounds
 * (default 3), and checks every byte. Made to run while the WAN misbehaves (links
 * broken and reconnected, an outage of seconds): nothing may be lost, duplicated,
 * reordered or corrupted.
 *
 * Per round and ordered pair (src -> dst) src sends, with tags that encode the round,
 * five messages of 0, 1 KiB, 48 KiB (eager or not depending on the MPI) and 1 MiB
 * and 3 MiB (rendezvous, several chunks): byte k of message m is a hash of (src, dst,
 * round, m, k). Nonblocking receives are posted first with MPI_ANY_TAG, so the tags
 * seen also prove per-pair ordering. At the end a checksum over all data received is
 * summed over the ranks and compared with the value every rank can compute alone.
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define NMSG 5
static const size_t msg_bytes[NMSG] = {0, 1024, 48 * 1024, 1 << 20, 3 << 20};

static uint8_t byte_at(int src, int dst, int round, int m, size_t k)
{
    uint64_t x = (uint64_t)k * 0x9E3779B97F4A7C15ull ^ (uint64_t)(src + 1) << 40 ^
                 (uint64_t)(dst + 1) << 24 ^ (uint64_t)(round + 1) << 8 ^ (uint64_t)m;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (uint8_t)x;
}

static void fill(uint8_t *p, int src, int dst, int round, int m)
{
    for (size_t k = 0; k < msg_bytes[m]; k++)
        p[k] = byte_at(src, dst, round, m, k);
}

static uint64_t sum_of(const uint8_t *p, size_t n)
{
    uint64_t s = 0;
    for (size_t k = 0; k < n; k++)
        s = s * 31 + p[k];
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double min_seconds = argc > 1 ? atof(argv[1]) : 0;
    int min_rounds = argc > 2 ? atoi(argv[2]) : 3;
    size_t total = 0;
    for (int m = 0; m < NMSG; m++)
        total += msg_bytes[m];
    int npeers = size - 1;
    uint8_t *sbuf = malloc(total * (size_t)(npeers ? npeers : 1));
    uint8_t *rbuf = malloc(total * (size_t)(npeers ? npeers : 1));
    uint8_t *want = malloc(total);
    MPI_Request *rq = malloc(sizeof *rq * (size_t)(2 * NMSG * (npeers ? npeers : 1)));
    MPI_Status *st = malloc(sizeof *st * (size_t)(2 * NMSG * (npeers ? npeers : 1)));
    if (!sbuf || !rbuf || !want || !rq || !st)
        MPI_Abort(MPI_COMM_WORLD, 2);
    uint64_t checksum = 0, expect = 0;
    double t0 = MPI_Wtime();
    int round = 0, more = 1;
    while (more) {
        int n = 0;
        for (int i = 0, p = 0; p < size; p++) {
            if (p == rank)
                continue;
            size_t off = (size_t)i++ * total;
            for (int m = 0; m < NMSG; m++) {
                MPI_Irecv(rbuf + off, (int)msg_bytes[m], MPI_BYTE, p, MPI_ANY_TAG, MPI_COMM_WORLD,
                          &rq[n++]);
                off += msg_bytes[m];
            }
        }
        for (int i = 0, p = 0; p < size; p++) {
            if (p == rank)
                continue;
            size_t off = (size_t)i++ * total;
            for (int m = 0; m < NMSG; m++) {
                fill(sbuf + off, rank, p, round, m);
                MPI_Isend(sbuf + off, (int)msg_bytes[m], MPI_BYTE, p, round * NMSG + m,
                          MPI_COMM_WORLD, &rq[n++]);
                off += msg_bytes[m];
            }
        }
        CHECK_RC(MPI_Waitall(n, rq, st), "Waitall");
        for (int i = 0, p = 0, k = 0; p < size; p++) {
            if (p == rank)
                continue;
            size_t off = (size_t)i++ * total;
            for (int m = 0; m < NMSG; m++, k++) {
                int cnt = -1;
                MPI_Get_count(&st[k], MPI_BYTE, &cnt);
                CHECK(st[k].MPI_SOURCE == p && st[k].MPI_TAG == round * NMSG + m &&
                          cnt == (int)msg_bytes[m],
                      "round %d from %d message %d: source %d tag %d count %d", round, p, m,
                      st[k].MPI_SOURCE, st[k].MPI_TAG, cnt);
                fill(want, p, rank, round, m);
                if (memcmp(want, rbuf + off, msg_bytes[m]) != 0) {
                    size_t bad = 0;
                    while (want[bad] == rbuf[off + bad])
                        bad++;
                    CHECK(0, "round %d from %d message %d (%zu bytes): byte %zu differs", round,
                          p, m, msg_bytes[m], bad);
                }
                checksum += sum_of(rbuf + off, msg_bytes[m]);
                expect += sum_of(want, msg_bytes[m]);
                off += msg_bytes[m];
            }
        }
        round++;
        if (rank == 0)
            more = round < min_rounds || MPI_Wtime() - t0 < min_seconds;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    uint64_t sums[2] = {checksum, expect}, tot[2];
    MPI_Allreduce(sums, tot, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(tot[0] == tot[1], "checksum over all data 0x%llx, expected 0x%llx",
          (unsigned long long)tot[0], (unsigned long long)tot[1]);
    if (rank == 0)
        printf("wan_stress: info: %d rounds in %.1f s, %.1f MiB checked, checksum 0x%016llx\n",
               round, MPI_Wtime() - t0,
               (double)total * size * npeers * round / (1 << 20), (unsigned long long)tot[0]);
    free(sbuf);
    free(rbuf);
    free(want);
    free(rq);
    free(st);
    int rc = check_finish("wan_stress");
    MPI_Finalize();
    return rc;
}
