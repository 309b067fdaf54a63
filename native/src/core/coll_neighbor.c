/* coll_neighbor.c: the exchange under every neighborhood collective.
 *
 * Each rank receives one block from each in-neighbor and sends one block to each
 * out-neighbor, all at once, on the communicator's collective context: across sites as
 * frames, within a site on the vendor communicator kept for collective traffic (vcoll),
 * so neither can match the program's own receives. A neighbor listed twice exchanges
 * twice: paired in order (graphs), or by direction when the caller gives tags (Cartesian
 * grids: what a rank sends towards -1 arrives in its neighbor's +1 slot, even when both
 * neighbors are the same process, as the MPI 4.0 errata say). Counts are 64-bit (the
 * _c forms); the core's messages carry them.
 */
#include <stdlib.h>

#include "core.h"

int ism_neighbor_exchange64(const void *sbuf, int nout, const int *outs, const int64_t *scounts,
                            const ptrdiff_t *sdispls, ism_dt *const *sdts, void *rbuf, int nin,
                            const int *ins, const int64_t *rcounts, const ptrdiff_t *rdispls,
                            ism_dt *const *rdts, const int *stags, const int *rtags, ism_comm *c)
{
    int n = 0, rc = 0;
    ism_req **reqs = malloc(sizeof *reqs * (size_t)(nin + nout + 1));
    if (!reqs)
        return ISM_ERR_NO_MEM;
    for (int i = 0; i < nin && !rc; i++)
        if (ins[i] != ISM_PROC_NULL)
            rc = ism_irecv((char *)rbuf + rdispls[i], rcounts[i], rdts[i], ins[i],
                           rtags ? rtags[i] : TAG_NEIGHBOR, c, c->ctx + 1, &reqs[n++]);
    for (int i = 0; i < nout && !rc; i++)
        if (outs[i] != ISM_PROC_NULL)
            rc = ism_isend((const char *)sbuf + sdispls[i], scounts[i], sdts[i], outs[i],
                           stags ? stags[i] : TAG_NEIGHBOR, c, c->ctx + 1, ISM_MODE_STD,
                           &reqs[n++]);
    if (rc)
        n--; /* the failed call produced no request */
    for (int i = 0; i < n; i++) {
        int r2 = ism_wait_free(reqs[i]);
        rc = rc ? rc : r2;
    }
    free(reqs);
    return rc;
}

/* the same with int counts (the intercommunicator collectives) */
int ism_neighbor_exchange(const void *sbuf, int nout, const int *outs, const int *scounts,
                          const ptrdiff_t *sdispls, ism_dt *const *sdts, void *rbuf, int nin,
                          const int *ins, const int *rcounts, const ptrdiff_t *rdispls,
                          ism_dt *const *rdts, const int *stags, const int *rtags, ism_comm *c)
{
    int64_t *w = malloc(sizeof(int64_t) * (size_t)(nout + nin + 1));
    if (!w)
        return ISM_ERR_NO_MEM;
    for (int i = 0; i < nout; i++)
        w[i] = outs[i] != ISM_PROC_NULL ? scounts[i] : 0;
    for (int i = 0; i < nin; i++)
        w[nout + i] = ins[i] != ISM_PROC_NULL ? rcounts[i] : 0;
    int rc = ism_neighbor_exchange64(sbuf, nout, outs, w, sdispls, sdts, rbuf, nin, ins, w + nout,
                                     rdispls, rdts, stags, rtags, c);
    free(w);
    return rc;
}
