/* coll_sched_dump.c: what libisthmus's schedule builders (native/src/coll/b_*.c) make,
 * per member, as one line of numbers, so the cost model's schedules
 * (python/isthmus/model/schedule.py) can be held to them (python/tests/test_model_vs_c.py):
 *
 *   coll_sched_dump COLL ALG P BYTES [RADIX [SEG]]
 *   -> per member: "sends bytes_sent copies bytes_copied rounds"
 *
 * BYTES is the vector (bcast, reduce, allreduce, scan), each member's block (allgather,
 * alltoall) or the whole vector in equal blocks (reduce_scatter); elements are 4 bytes
 * for reductions and 1 otherwise, as isthmus-bench coll uses them; the op commutes (as
 * MPI_SUM), the root is 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/coll/sched.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s COLL ALG P BYTES [RADIX [SEG]]\n", argv[0]);
        return 2;
    }
    int coll = ism_coll_by_name(argv[1]);
    int alg = coll < 0 ? -1 : ism_coll_alg_by_name(coll, argv[2]);
    int p = atoi(argv[3]);
    long long bytes = atoll(argv[4]);
    if (coll < 0 || alg < 0 || p < 1 || p > 64 || bytes < 0) {
        fprintf(stderr, "coll_sched_dump: unknown collective or algorithm, or bad P/BYTES\n");
        return 2;
    }
    const ism_coll_alg *al = &ism_coll_algs(coll)[alg];
    int red = coll == ISM_COLL_REDUCE || coll == ISM_COLL_ALLREDUCE ||
              coll == ISM_COLL_REDUCE_SCATTER || coll == ISM_COLL_SCAN;
    int64_t blk[64];
    for (int me = 0; me < p; me++) {
        ism_coll_sched s;
        ism_coll_args a;
        memset(&a, 0, sizeof a);
        ism_coll_sched_init(&s, p, me);
        a.p = p;
        a.me = me;
        a.esize = red ? 4 : 1;
        a.bytes = bytes;
        a.radix = argc > 5 ? atoi(argv[5]) : ISM_COLL_DEFAULT_RADIX;
        a.seg = argc > 6 ? atoll(argv[6]) : 0;
        a.commute = 1;
        if (coll == ISM_COLL_REDUCE_SCATTER) {
            for (int i = 0; i < p; i++)
                blk[i] = bytes / p;
            a.blk = blk;
        }
        if (al->build(&s, &a)) {
            fprintf(stderr, "coll_sched_dump: the builder failed for member %d\n", me);
            return 1;
        }
        long long ns = 0, bs = 0, nc = 0, bc = 0;
        for (int i = 0; i < s.nact; i++) {
            if (s.act[i].kind == ISM_CA_SEND) {
                ns++;
                bs += s.act[i].len;
            } else if (s.act[i].kind == ISM_CA_COPY) {
                nc++;
                bc += s.act[i].len;
            }
        }
        printf("%lld %lld %lld %lld %d\n", ns, bs, nc, bc, s.nround);
        ism_coll_sched_free(&s);
    }
    return 0;
}
