/* rma_direct.c: puts and gets to a target on this node done by isthmus itself, as loads
 * and stores into the target's window memory, when that memory is the vendor's shared
 * memory (an MPI_Win_allocate window on one node, win.c allocate_shared, or a window of
 * MPI_Win_allocate_shared). MPICH 4.0's own put + flush cost 0.3-0.4 us there, and
 * isthmus's call through it as much again; a memcpy and a fence cost tens of ns.
 *
 * Only puts and gets, of contiguous types: every accumulate, get-accumulate,
 * fetch-and-op and compare-and-swap on such a window still goes to the vendor, from this
 * site's origins and from the process applying another site's (rma.c), so the window has
 * one atomicity mechanism (mixing the processor's atomics with osc/sm's locked ones lost
 * updates, bench/notebook/rma.md). MPI leaves a put racing an accumulate on the same bytes
 * undefined, and orders only accumulates among themselves, so the puts need not go the
 * vendor's way. A put or get here is complete, at origin and target, when it returns:
 * a flush is a memory fence, plus the vendor's flush only for a target with vendor
 * operations not flushed yet (w->vpend).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "win.h"

int ism_rma_direct_open(ism_win *w)
{
    int n = w->c->lsize;
    w->lbase = calloc((size_t)n, sizeof *w->lbase);
    w->vpend = calloc((size_t)n, 1);
    int rc = w->lbase && w->vpend ? 0 : ISM_ERR_NO_MEM;
    for (int l = 0; !rc && l < n; l++) {
        int64_t sz = 0;
        void *at = NULL;
        rc = ism.be->win_shared_query(w->vwin, l, &sz, &at);
        if (!rc && at)
            w->lbase[l] = (char *)at + (w->vpad ? w->vpad[l] : 0);
    }
    if (rc)
        ism_rma_direct_close(w);
    return rc;
}

void ism_rma_direct_close(ism_win *w)
{
    free(w->lbase);
    free(w->vpend);
    w->lbase = NULL;
    w->vpend = NULL;
    w->npend = 0;
}

int ism_rma_direct(ism_win *w, int l, int64_t on, ism_dt *odt, int64_t tn, ism_dt *tdt)
{
    if (!w->lbase || !w->lbase[l] || !odt->contig || !tdt->contig)
        return 0;
    return (uint64_t)on * (uint64_t)odt->size == (uint64_t)tn * (uint64_t)tdt->size;
}

void ism_rma_direct_copy(ism_win *w, int l, int put, void *o, int64_t on, ism_dt *odt,
                         int64_t off, ism_dt *tdt)
{
    size_t bytes = (size_t)on * (size_t)odt->size;
    char *t = w->lbase[l] + off + tdt->contig_off, *mine = (char *)o + odt->contig_off;
    if (bytes) /* memmove: the origin buffer may lie in the window, the target's own */
        memmove(put ? t : mine, put ? mine : t, bytes);
    ism.stat_rma_direct++;
}

void ism_win_vpend(ism_win *w, int l)
{
    if (w->vpend && !w->vpend[l]) {
        w->vpend[l] = 1;
        w->npend++;
    }
}

int ism_win_vflush(ism_win *w, int l)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!w->vwin)
        return 0;
    if (!w->vpend) /* the vendor does every operation on this window */
        return ism.be->win_sync(l < 0 ? ISM_VWIN_FLUSH_ALL : ISM_VWIN_FLUSH, l < 0 ? 0 : l,
                                w->vwin);
    if (l < 0 ? w->npend == 0 : !w->vpend[l])
        return 0;
    int rc = ism.be->win_sync(l < 0 ? ISM_VWIN_FLUSH_ALL : ISM_VWIN_FLUSH, l < 0 ? 0 : l,
                              w->vwin);
    if (!rc && l < 0) {
        memset(w->vpend, 0, (size_t)w->c->lsize);
        w->npend = 0;
    } else if (!rc) {
        w->vpend[l] = 0;
        w->npend--;
    }
    return rc;
}

int ism_win_vflush_local(ism_win *w, int l)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!w->vwin || (w->vpend && (l < 0 ? w->npend == 0 : !w->vpend[l])))
        return 0;
    return ism.be->win_sync(l < 0 ? ISM_VWIN_FLUSH_LOCAL_ALL : ISM_VWIN_FLUSH_LOCAL,
                            l < 0 ? 0 : l, w->vwin);
}
