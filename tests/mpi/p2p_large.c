/*
 * p2p_large: one very large message each way, verified completely.
 * argv[1] = size in MiB (default 256).  Rank 0 sends N MiB to rank size/2
 * (far), then rank 1 sends N MiB to rank 0 (near; with 2 or 3 ranks the
 * same partner).  Data is uint64 words, word k = k ^ constant(sender,
 * direction), so misplaced, stale or partial data is detected; every word
 * is checked.  Only the ranks involved allocate (one N MiB buffer each).
 * Status source/tag and Get_count are checked.  Also: 0-byte messages
 * (Send, Ssend, Isend; receive with a specific tag and with MPI_ANY_TAG)
 * to the near and far peers, with distinct tags.
 * Works for any size >= 1 (self-message at size 1).
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int rank, size;

static uint64_t key(int sender, int dir)
{
    return 0x5DEECE66Dull * (uint64_t)(sender + 1) ^ ((uint64_t)(dir + 1) << 56);
}

static void transfer(int src, int dst, int tag, size_t nwords, int dir)
{
    if (rank != src && rank != dst)
        return;
    uint64_t *buf = malloc(nwords * sizeof(uint64_t));
    CHECK(buf != NULL, "cannot allocate %zu bytes", nwords * sizeof(uint64_t));
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    const uint64_t k = key(src, dir);
    MPI_Status st;
    double t0 = MPI_Wtime();
    if (rank == src) {
        for (size_t i = 0; i < nwords; i++)
            buf[i] = (uint64_t)i ^ k;
        if (rank != dst) {
            MPI_Send(buf, (int)nwords, MPI_UINT64_T, dst, tag, MPI_COMM_WORLD);
            free(buf);
            return;
        }
        /* self-message (size 1): a second buffer and a nonblocking send */
        uint64_t *rb = malloc(nwords * sizeof(uint64_t));
        if (!rb)
            MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Request sreq;
        MPI_Isend(buf, (int)nwords, MPI_UINT64_T, dst, tag, MPI_COMM_WORLD, &sreq);
        MPI_Recv(rb, (int)nwords, MPI_UINT64_T, src, tag, MPI_COMM_WORLD, &st);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        free(buf);
        buf = rb;
    } else {
        memset(buf, 0, nwords * sizeof(uint64_t));
        MPI_Recv(buf, (int)nwords, MPI_UINT64_T, src, tag, MPI_COMM_WORLD, &st);
    }
    int cnt = -1;
    MPI_Get_count(&st, MPI_UINT64_T, &cnt);
    CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag && cnt == (int)nwords,
          "dir %d: status src %d tag %d count %d", dir, st.MPI_SOURCE, st.MPI_TAG, cnt);
    double t1 = MPI_Wtime();
    size_t bad = 0, first = (size_t)-1;
    for (size_t i = 0; i < nwords; i++)
        if (buf[i] != ((uint64_t)i ^ k)) {
            if (!bad)
                first = i;
            bad++;
        }
    CHECK(bad == 0, "dir %d (%d -> %d): %zu of %zu words wrong, first at word %zu", dir, src,
          dst, bad, nwords, first);
    printf("p2p_large: info: %d -> %d: %.0f MiB in %.3f s (%.0f MiB/s)\n", src, dst,
           nwords * 8.0 / 1048576.0, t1 - t0, nwords * 8.0 / 1048576.0 / (t1 - t0 + 1e-9));
    fflush(stdout);
    free(buf);
}

static void zero_bytes(void)
{
    int peers_to[2] = {peer_near(rank, size), peer_far_to(rank, size)};
    int peers_from[2] = {peer_near(rank, size), peer_far_from(rank, size)};
    char dummy = 'z', rb = 'q';
    for (int p = 0; p < 2; p++) {
        int to = peers_to[p], from = peers_from[p];
        MPI_Request r[3];
        int tags[3] = {100 + p * 10, 101 + p * 10, 102 + p * 10};
        /* nonblocking sends so self-messages and Ssend cannot deadlock */
        MPI_Isend(&dummy, 0, MPI_BYTE, to, tags[0], MPI_COMM_WORLD, &r[0]);
        MPI_Issend(&dummy, 0, MPI_CHAR, to, tags[1], MPI_COMM_WORLD, &r[1]);
        MPI_Isend(NULL, 0, MPI_INT, to, tags[2], MPI_COMM_WORLD, &r[2]);
        /* receive in reverse order by tag, the last one with ANY_TAG */
        for (int t = 2; t >= 0; t--) {
            MPI_Status st;
            int rtag = t == 0 ? MPI_ANY_TAG : tags[t];
            MPI_Recv(&rb, 1, MPI_BYTE, from, rtag, MPI_COMM_WORLD, &st);
            int cnt = -1;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tags[t] && cnt == 0 && rb == 'q',
                  "0-byte %s tag %d: src %d tag %d count %d", p ? "far" : "near", tags[t],
                  st.MPI_SOURCE, st.MPI_TAG, cnt);
        }
        MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    }
    /* blocking zero-byte Send, ordered to avoid relying on buffering */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    MPI_Request rr;
    MPI_Irecv(&rb, 0, MPI_BYTE, from, 120, MPI_COMM_WORLD, &rr);
    MPI_Send(&dummy, 0, MPI_BYTE, to, 120, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Wait(&rr, &st);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 120, "0-byte Send: src %d tag %d",
          st.MPI_SOURCE, st.MPI_TAG);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long mib = argc > 1 ? atol(argv[1]) : 256;
    if (mib < 1 || mib * 131072L > 2147483647L) {
        if (rank == 0)
            fprintf(stderr, "p2p_large: size %ld MiB out of range (1..16383)\n", mib);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t nwords = (size_t)mib * 131072u; /* 2^20 / 8 */

    zero_bytes();
    transfer(0, size / 2, 1, nwords, 0);       /* far */
    transfer(size > 1 ? 1 : 0, 0, 2, nwords, 1); /* near, back to 0 */
    zero_bytes();

    int rc = check_finish("p2p_large");
    MPI_Finalize();
    return rc;
}
