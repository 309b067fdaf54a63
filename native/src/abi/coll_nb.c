/* coll_nb.c (abi): how a nonblocking collective starts. Its entry point (MPI_I<x>,
 * generated in coll_nb_gen.c) checks the communicator and the request argument here
 * (ism_abi_nbc_comm), and hands a copy of its arguments to a coroutine (core/nbc.c) that
 * runs the blocking MPI_<x> itself, so the blocking and nonblocking forms share one
 * algorithm and one set of argument checks; an error found inside is returned by the
 * MPI_Wait/MPI_Test that completes the request. A persistent collective's runs
 * (coll_persist.c) and other operations built the same way (MPI_Comm_idup) start here too.
 * This file also keeps the derived types such a run uses alive until it returns.
 */
#include <string.h>

#include "abi.h"

/* MPI lets a program free a datatype while a nonblocking collective uses it ("pending
 * operations complete normally"): the coroutine holds a reference to each derived type it
 * was given (t1, t2; the w-forms' type arrays are not held) until it returns, and the
 * handle lookup accepts those freed types inside their own coroutine (ism_abi_nbc_kept).
 * A persistent collective's run names its template instead (owner), which holds all its
 * types, the w-forms' arrays included, until the request is freed (coll_persist.c). */
typedef struct {
    int (*body)(void *);
    ism_pcoll *owner;
    int n;
    ism_dt *kept[2];
    _Alignas(16) unsigned char args[192];
} kept_args;

static int run_kept(void *p)
{
    kept_args *k = p;
    int rc = k->body(k->args);
    for (int i = 0; i < k->n; i++)
        ism_dt_release(k->kept[i]);
    k->n = 0;
    if (k->owner) {
        ism_pcoll *o = k->owner;
        k->owner = NULL;
        ism_abi_pcoll_ended(o);
    }
    return rc;
}

int ism_abi_nbc_kept(const ism_dt *d)
{
    const kept_args *k = ism_nbc_cur_args();
    if (ism_abi_pcoll_starting && ism_abi_pcoll_holds(ism_abi_pcoll_starting, d))
        return 1; /* a persistent start as a collective in flight (coll_persist.c) */
    if (!k)
        return 0;
    for (int i = 0; i < k->n; i++)
        if (k->kept[i] == d)
            return 1;
    return k->owner && ism_abi_pcoll_holds(k->owner, d);
}

int ism_abi_nbc_run(ism_comm *c, int (*body)(void *), const void *args, size_t len, ism_dt *t1,
                    ism_dt *t2, ism_pcoll *owner, ism_req **out)
{
    kept_args k = {body, owner, 0, {NULL, NULL}, {0}};
    if (len > sizeof k.args)
        return MPI_ERR_INTERN;
    memcpy(k.args, args, len);
    ism_dt *ts[2] = {t1, t2};
    for (int i = 0; i < 2; i++) {
        ism_dt *d = ts[i];
        if (d && d->x && (k.n == 0 || k.kept[0] != d)) {
            ism_dt_retain(d);
            k.kept[k.n++] = d;
        }
    }
    int rc = ism_nbc_start(c, run_kept, &k, sizeof k, out);
    if (rc)
        for (int i = 0; i < k.n; i++)
            ism_dt_release(k.kept[i]);
    return rc;
}

int ism_abi_nbc_comm(const char *fn, MPI_Comm comm, MPI_Request *request, ism_comm **c)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (!request)
        return ism_abi_error(*c, MPI_ERR_REQUEST, fn, "the request argument is NULL");
    return MPI_SUCCESS;
}

int ism_abi_nbc_error(ism_comm *c, int rc, const char *fn)
{
    return ism_abi_error(c, rc, fn,
                         rc == MPI_ERR_NO_MEM
                             ? "out of memory, or too many nonblocking collectives pending "
                               "(4096 run as coroutines; on one communicator across sites, "
                               "16383 after the oldest still in flight)"
                             : "could not start the collective");
}

int ism_abi_nbc_start_types(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                            size_t len, MPI_Request *request, MPI_Datatype t1, MPI_Datatype t2)
{
    ism_comm *c;
    ism_req *r;
    int rc = ism_abi_nbc_comm(fn, comm, request, &c);
    if (rc)
        return rc;
    rc = ism_abi_nbc_run(c, body, args, len, ism_abi_dt_any(t1), ism_abi_dt_any(t2), NULL, &r);
    if (rc)
        return ism_abi_nbc_error(c, rc, fn);
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

/* For other nonblocking operations built the same way (MPI_Comm_idup). */
int ism_abi_nbc_start(const char *fn, MPI_Comm comm, int (*body)(void *), const void *args,
                      size_t len, MPI_Request *request)
{
    return ism_abi_nbc_start_types(fn, comm, body, args, len, request, MPI_DATATYPE_NULL,
                                   MPI_DATATYPE_NULL);
}
