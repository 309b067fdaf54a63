/* pending.c (fortran): work that waits for a request to complete, which the Fortran
 * bindings find out when a completion call turns the request's integer into
 * MPI_REQUEST_NULL (ism_f_store): arrays a nonblocking collective reads until then, the
 * communicator MPI_Comm_idup writes at completion, the copy of a noncontiguous mpi_f08
 * buffer. Each waits in a small hash by request integer; its memory comes with the work
 * (allocated before the call), so keeping it can never fail. ism_f_npending lets every
 * other completion skip the lookup.
 */
#include <stddef.h>
#include <stdlib.h>

#include "glue.h"

#define NBUCKET 256
static ism_f_waiter *bucket[NBUCKET];
int ism_f_npending;

void ism_f_keep(int rc, const MPI_Fint *request, ism_f_waiter *w)
{
    MPI_Fint none = (MPI_Fint)(intptr_t)MPI_REQUEST_NULL;
    MPI_Fint r = rc == MPI_SUCCESS && request ? *request : none;
    if (r == none) {
        w->done(w); /* the call failed: nothing reads or writes the arguments later */
        return;
    }
    w->request = r;
    ism_f_waiter **b = &bucket[(unsigned)r % NBUCKET];
    w->next = *b;
    *b = w;
    ism_f_npending++;
}

void ism_f_settle(MPI_Fint request)
{
    ism_f_waiter **p = &bucket[(unsigned)request % NBUCKET];
    while (*p) {
        ism_f_waiter *w = *p;
        if (w->request != request) {
            p = &w->next;
            continue;
        }
        *p = w->next;
        ism_f_npending--;
        w->done(w);
    }
}

/* ---- arrays read until completion ---- */

typedef struct {
    ism_f_waiter w;
    _Alignas(16) unsigned char data[];
} kept_array;

static void free_kept(ism_f_waiter *w)
{
    free(w);
}

void *ism_f_kept_alloc(long n, size_t size)
{
    kept_array *k = malloc(sizeof *k + size * (size_t)(n > 0 ? n : 1));
    if (!k)
        return NULL;
    k->w.done = free_kept;
    return k->data;
}

void ism_f_keep_free(int rc, const MPI_Fint *request, void *p)
{
    if (p)
        ism_f_keep(rc, request, &((kept_array *)((char *)p - offsetof(kept_array, data)))->w);
}

/* ---- MPI_Comm_idup's new communicator ---- */

typedef struct {
    ism_f_waiter w;
    MPI_Fint *f;
    MPI_Comm cell;
} comm_out;

static void store_comm(ism_f_waiter *w)
{
    comm_out *o = (comm_out *)w;
    *o->f = ism_abi_f_hold(PMPI_Comm_c2f(o->cell));
    free(o);
}

MPI_Comm *ism_f_comm_cell(void)
{
    comm_out *o = malloc(sizeof *o);
    if (!o)
        return NULL;
    o->w.done = store_comm;
    o->cell = MPI_COMM_NULL;
    return &o->cell;
}

void ism_f_keep_comm(int rc, const MPI_Fint *request, MPI_Fint *f, MPI_Comm *cell)
{
    if (!cell)
        return;
    comm_out *o = (comm_out *)((char *)cell - offsetof(comm_out, cell));
    o->f = f;
    ism_f_keep(rc, request, &o->w);
}
