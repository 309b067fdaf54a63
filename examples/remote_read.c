/* remote_read.c: ranks at every site read blocks of a table that one rank owns (rank 0,
 * at the first site), in short sequential walks from random starting points, as
 * RNAfold's backtracking reads its matrix (seed 000, section 5). "naive": every read is
 * one MPI_Get from the owner (one round trip across the link for ranks of other sites);
 * "cache": isthmus-patterns' remote-read cache, which fetches each block once per node
 * with PREFETCH following blocks in the same MPI_Get (docs/patterns.md).
 *
 * Every block holds values derived from its number, and each read is checked. Rank 0
 * prints "remote_read: MODE ranks N reads R: T s, U us per read", per site "remote_read:
 * site S: F gets, B blocks" (cache mode; what the site's ranks fetched over the link),
 * and "remote_read: ok" when every read on every rank was right.
 *
 * build: isthmus-cc -O2 -o remote_read remote_read.c -listhmus-patterns
 * usage: remote_read naive|cache [WALKS [WALK [BLOCKS [BLOCK_BYTES [PREFETCH]]]]]
 *        (defaults 20 walks of 8 blocks, 256 blocks of 512 bytes, prefetch 7)
 */
#include <isthmus_patterns.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t value(long block, size_t i)
{
    return (uint32_t)(block * 2654435761u) ^ (uint32_t)(i * 40503u);
}

static int block_ok(const void *p, long block, size_t block_bytes)
{
    const unsigned char *b = p;
    for (size_t i = 0; i + 4 <= block_bytes; i += 4) {
        uint32_t v;
        memcpy(&v, b + i, 4);
        if (v != value(block, i / 4))
            return 0;
    }
    return 1;
}

static long naive_read(MPI_Win win, long block, size_t block_bytes, unsigned char *buf)
{
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get(buf, (int)block_bytes, MPI_BYTE, 0, (MPI_Aint)(block * (long)block_bytes),
            (int)block_bytes, MPI_BYTE, win);
    MPI_Win_unlock(0, win);
    return block_ok(buf, block, block_bytes) ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int cache_mode = argc > 1 && strcmp(argv[1], "cache") == 0;
    long walks = argc > 2 ? atol(argv[2]) : 20, walk = argc > 3 ? atol(argv[3]) : 8;
    long nblocks = argc > 4 ? atol(argv[4]) : 256;
    long block_bytes = argc > 5 ? atol(argv[5]) : 512;
    int prefetch = argc > 6 ? atoi(argv[6]) : 7;
    if (argc < 2 || (!cache_mode && strcmp(argv[1], "naive") != 0) || walks < 1 || walk < 1 ||
        nblocks < 1 || block_bytes < 4 || block_bytes > (1 << 24) || prefetch < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: remote_read naive|cache [WALKS [WALK [BLOCKS [BLOCK_BYTES "
                    "[PREFETCH]]]]]: positive counts, BLOCK_BYTES 4..16777216, PREFETCH >= 0\n");
        MPI_Finalize();
        return 2;
    }
    size_t bb = (size_t)block_bytes;
    unsigned char *table = NULL;
    if (rank == 0) {
        table = malloc(bb * (size_t)nblocks);
        for (long b = 0; b < nblocks; b++)
            for (size_t i = 0; i + 4 <= bb; i += 4) {
                uint32_t v = value(b, i / 4);
                memcpy(table + (size_t)b * bb + i, &v, 4);
            }
    }
    MPI_Win win = MPI_WIN_NULL;
    ism_pat_cache *cache = NULL;
    if (cache_mode) {
        if (ism_pat_cache_create(MPI_COMM_WORLD, 0, table, bb, nblocks, prefetch, &cache))
            MPI_Abort(MPI_COMM_WORLD, 3);
    } else {
        MPI_Win_create(table, rank == 0 ? (MPI_Aint)(bb * (size_t)nblocks) : 0, 1,
                       MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    unsigned char *buf = malloc(bb);
    uint64_t x = 0x2545F4914F6CDD1Dull * (uint64_t)(rank + 1);
    long bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1); /* the timed reads, phase 1 of a trace */
    double t0 = MPI_Wtime();
    for (long w = 0; w < walks; w++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        long start = (long)(x % (uint64_t)nblocks);
        for (long k = 0; k < walk; k++) {
            long b = (start + k) % nblocks;
            if (cache_mode) {
                const void *p;
                if (ism_pat_cache_get(cache, b, &p))
                    MPI_Abort(MPI_COMM_WORLD, 3);
                bad += !block_ok(p, b, bb);
            } else {
                bad += naive_read(win, b, bb, buf);
            }
        }
    }
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Pcontrol(0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    long mine[2] = {0, 0}; /* gets, blocks fetched by this rank */
    if (cache_mode) {
        ism_pat_cache_stats st;
        ism_pat_cache_get_stats(cache, &st);
        mine[0] = st.fetches;
        mine[1] = st.blocks_fetched;
    }
    ism_pat_sites *sites;
    if (ism_pat_sites_create(MPI_COMM_WORLD, &sites))
        MPI_Abort(MPI_COMM_WORLD, 3);
    long *all = rank == 0 ? malloc(sizeof(long) * 2 * (size_t)size) : NULL;
    MPI_Gather(mine, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    long all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        long reads = walks * walk * size;
        printf("remote_read: %s ranks %d reads %ld: %.6f s, %.1f us per read\n", argv[1], size,
               reads, tmax, 1e6 * tmax / (double)(walks * walk));
        for (int s = 0; cache_mode && s < sites->nsites; s++) {
            long gets = 0, blocks = 0;
            for (int r = 0; r < size; r++)
                if (sites->site_of[r] == s)
                    gets += all[2 * r], blocks += all[2 * r + 1];
            printf("remote_read: site %d: %ld gets, %ld blocks\n", s, gets, blocks);
        }
        printf(all_bad ? "remote_read: FAILED: %ld wrong reads\n" : "remote_read: ok\n",
               all_bad);
    }
    free(all);
    ism_pat_sites_free(&sites);
    if (cache && ism_pat_cache_free(&cache))
        MPI_Abort(MPI_COMM_WORLD, 3);
    if (win != MPI_WIN_NULL)
        MPI_Win_free(&win);
    free(buf);
    free(table);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
