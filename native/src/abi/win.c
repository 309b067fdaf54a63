/* win.c (abi): the MPI_Win_* calls: argument checks, the window's error handler, then
 * the core's windows (core/win.c). A window handle is a pointer to its ism_win.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "win_abi.h"

ism_win *ism_abi_win(MPI_Win h)
{
    if (h == MPI_WIN_NULL || (uintptr_t)h < 0x1000)
        return NULL;
    ism_win *w = (ism_win *)h;
    return w->magic == ISM_WIN_MAGIC ? w : NULL;
}

int ism_abi_win_error(ism_win *w, int code, const char *fn, const char *msg)
{
    if (!w)
        return ism_abi_error(NULL, code, fn, "%s", msg);
    MPI_Win h = (MPI_Win)w;
    return ism_abi_raise_errh_on(w->errh, &h, code, fn, msg);
}

/* A core error: its class, with the reason the core recorded (or the class's text). */
int ism_abi_win_fail(ism_win *w, int rc, const char *fn)
{
    const char *why = ism_win_why();
    char msg[600];
    snprintf(msg, sizeof msg, "%s", why[0] ? why : ism_abi_class_text(rc));
    ism_win_why_reset();
    return ism_abi_win_error(w, rc, fn, msg);
}

static int create(const char *fn, void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                  MPI_Comm comm, int flavor, void *baseptr, MPI_Win *win)
{
    ISM_CHECK_INIT(fn);
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (c->is_inter)
        return ism_abi_error(c, MPI_ERR_COMM, fn, "a window needs an intracommunicator");
    int has_base = flavor == ISM_WIN_FLAVOR_ALLOCATE || flavor == ISM_WIN_FLAVOR_SHARED;
    if (!win || (has_base && !baseptr))
        return ism_abi_error(c, MPI_ERR_ARG, fn, "NULL output argument");
    if (size < 0)
        return ism_abi_error(c, MPI_ERR_SIZE, fn, "negative window size");
    if (disp_unit <= 0)
        return ism_abi_error(c, MPI_ERR_DISP, fn, "displacement unit must be positive");
    MPI_Info hints;
    int rc = ism_abi_win_hints(fn, info, MPI_INFO_NULL, &hints);
    if (rc)
        return rc;
    ism_win *w;
    rc = ism_win_create(base, size, disp_unit, c, flavor, &w);
    if (rc) {
        PMPI_Info_free(&hints);
        char why[600];
        snprintf(why, sizeof why, "%s", ism_win_why()[0] ? ism_win_why() : "failed");
        ism_win_why_reset();
        return ism_abi_error(c, rc, fn, "%s", why);
    }
    w->hints = (void *)hints;
    if (has_base)
        *(void **)baseptr = w->base;
    *win = (MPI_Win)w;
    /* last: the helper thread then never runs beside this call, which holds no core lock
     * unless under MPI_THREAD_MULTIPLE */
    ism_rma_progress_join(w);
    return MPI_SUCCESS;
}

int PMPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                    MPI_Win *win)
{
    return create("MPI_Win_create", base, size, disp_unit, info, comm, ISM_WIN_FLAVOR_CREATE, NULL,
                  win);
}
ISM_PMPI(Win_create)

int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                      MPI_Win *win)
{
    return create("MPI_Win_allocate", NULL, size, disp_unit, info, comm, ISM_WIN_FLAVOR_ALLOCATE,
                  baseptr, win);
}
ISM_PMPI(Win_allocate)

/* The large-count forms: the displacement unit is an MPI_Aint here, an int in the window. */
static int create_c(const char *fn, void *base, MPI_Aint size, MPI_Aint disp_unit,
                    MPI_Info info, MPI_Comm comm, int flavor, void *baseptr, MPI_Win *win)
{
    if (disp_unit <= 0 || disp_unit > INT_MAX)
        return ism_abi_error(ism_abi_comm(comm), MPI_ERR_DISP, fn,
                             "displacement unit %lld: from 1 to %d allowed",
                             (long long)disp_unit, INT_MAX);
    return create(fn, base, size, (int)disp_unit, info, comm, flavor, baseptr, win);
}

int PMPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                      MPI_Comm comm, MPI_Win *win)
{
    return create_c("MPI_Win_create_c", base, size, disp_unit, info, comm, ISM_WIN_FLAVOR_CREATE, NULL,
                    win);
}
ISM_PMPI(Win_create_c)

int PMPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                        void *baseptr, MPI_Win *win)
{
    return create_c("MPI_Win_allocate_c", NULL, size, disp_unit, info, comm, ISM_WIN_FLAVOR_ALLOCATE,
                    baseptr, win);
}
ISM_PMPI(Win_allocate_c)

int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                             void *baseptr, MPI_Win *win)
{
    return create("MPI_Win_allocate_shared", NULL, size, disp_unit, info, comm, ISM_WIN_FLAVOR_SHARED,
                  baseptr, win);
}
ISM_PMPI(Win_allocate_shared)

int PMPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                               void *baseptr, MPI_Win *win)
{
    return create_c("MPI_Win_allocate_shared_c", NULL, size, disp_unit, info, comm,
                    ISM_WIN_FLAVOR_SHARED, baseptr, win);
}
ISM_PMPI(Win_allocate_shared_c)

#define WIN_ARG(fn, h, out)                                                                        \
    ISM_CHECK_INIT(fn);                                                                            \
    ism_win *out = ism_abi_win(h);                                                                 \
    if (!out)                                                                                      \
        return ism_abi_error(NULL, MPI_ERR_WIN, fn, "invalid window");

/* a function, not a macro: its argument is the core call, which must run once */
static inline int WIN_RC(ism_win *w, int rc, const char *fn)
{
    return rc ? ism_abi_win_fail(w, rc, fn) : MPI_SUCCESS;
}

/* A dynamic window has no memory until its members attach some; a target displacement is
 * an address from MPI_Get_address on the target (disp unit 1, base MPI_BOTTOM, size 0). */
int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    return create("MPI_Win_create_dynamic", NULL, 0, 1, info, comm, ISM_WIN_FLAVOR_DYNAMIC, NULL, win);
}
ISM_PMPI(Win_create_dynamic)

int PMPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    WIN_ARG("MPI_Win_attach", win, w);
    return WIN_RC(w, ism_win_attach(w, base, (int64_t)size), "MPI_Win_attach");
}
ISM_PMPI(Win_attach)

int PMPI_Win_detach(MPI_Win win, const void *base)
{
    WIN_ARG("MPI_Win_detach", win, w);
    return WIN_RC(w, ism_win_detach(w, base), "MPI_Win_detach");
}
ISM_PMPI(Win_detach)

int PMPI_Win_free(MPI_Win *win)
{
    if (!win)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Win_free", "NULL window pointer");
    WIN_ARG("MPI_Win_free", *win, w);
    int rc = ism_abi_win_attr_delete_all(w);
    if (rc)
        return ism_abi_win_error(w, rc, "MPI_Win_free", "an attribute's delete callback failed");
    MPI_Info hints = (MPI_Info)w->hints;
    rc = ism_win_free(w);
    if (!rc && hints != MPI_INFO_NULL)
        PMPI_Info_free(&hints);
    if (rc) {
        const char *why = ism_win_why()[0] ? ism_win_why() : "the vendor could not free its window";
        return ism_abi_error(NULL, rc, "MPI_Win_free", "%s", why);
    }
    *win = MPI_WIN_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Win_free)

int PMPI_Win_fence(int assert, MPI_Win win)
{
    WIN_ARG("MPI_Win_fence", win, w);
    return WIN_RC(w, ism_win_fence(w, assert), "MPI_Win_fence");
}
ISM_PMPI(Win_fence)

static int bad_target(ism_win *w, int rank, const char *fn)
{
    char msg[160];
    snprintf(msg, sizeof msg, "rank %d is not in the window's group of %d", rank, w->c->size);
    return ism_abi_win_error(w, MPI_ERR_RANK, fn, msg);
}

int PMPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    WIN_ARG("MPI_Win_lock", win, w);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= w->c->size)
        return bad_target(w, rank, "MPI_Win_lock");
    return WIN_RC(w, ism_win_lock(w, lock_type, rank, assert), "MPI_Win_lock");
}
ISM_PMPI(Win_lock)

int PMPI_Win_unlock(int rank, MPI_Win win)
{
    WIN_ARG("MPI_Win_unlock", win, w);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= w->c->size)
        return bad_target(w, rank, "MPI_Win_unlock");
    return WIN_RC(w, ism_win_unlock(w, rank), "MPI_Win_unlock");
}
ISM_PMPI(Win_unlock)

int PMPI_Win_lock_all(int assert, MPI_Win win)
{
    WIN_ARG("MPI_Win_lock_all", win, w);
    return WIN_RC(w, ism_win_lock_all(w, assert), "MPI_Win_lock_all");
}
ISM_PMPI(Win_lock_all)

int PMPI_Win_unlock_all(MPI_Win win)
{
    WIN_ARG("MPI_Win_unlock_all", win, w);
    return WIN_RC(w, ism_win_unlock_all(w), "MPI_Win_unlock_all");
}
ISM_PMPI(Win_unlock_all)

/* Flushes: completion at the target (a round trip to another site), or only local
 * completion (flush_local: no round trip, core/win.c); the vendor's own at this site. */
static int flush(const char *fn, int rank, int all, int local, MPI_Win win)
{
    WIN_ARG(fn, win, w);
    int (*f)(ism_win *, int) = local ? ism_win_flush_local : ism_win_flush;
    if (all)
        return WIN_RC(w, f(w, -1), fn);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= w->c->size)
        return bad_target(w, rank, fn);
    return WIN_RC(w, f(w, rank), fn);
}

int PMPI_Win_flush(int rank, MPI_Win win) { return flush("MPI_Win_flush", rank, 0, 0, win); }
ISM_PMPI(Win_flush)

int PMPI_Win_flush_all(MPI_Win win) { return flush("MPI_Win_flush_all", 0, 1, 0, win); }
ISM_PMPI(Win_flush_all)

int PMPI_Win_flush_local(int rank, MPI_Win win)
{
    return flush("MPI_Win_flush_local", rank, 0, 1, win);
}
ISM_PMPI(Win_flush_local)

int PMPI_Win_flush_local_all(MPI_Win win)
{
    return flush("MPI_Win_flush_local_all", 0, 1, 1, win);
}
ISM_PMPI(Win_flush_local_all)

int PMPI_Win_sync(MPI_Win win)
{
    WIN_ARG("MPI_Win_sync", win, w);
    return WIN_RC(w, ism_win_sync(w), "MPI_Win_sync");
}
ISM_PMPI(Win_sync)

int PMPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
    WIN_ARG("MPI_Win_get_group", win, w);
    return PMPI_Comm_group(ism_abi_comm_handle(w->c), group);
}
ISM_PMPI(Win_get_group)

int PMPI_Win_set_name(MPI_Win win, const char *win_name)
{
    WIN_ARG("MPI_Win_set_name", win, w);
    if (!win_name)
        return ism_abi_win_error(w, MPI_ERR_ARG, "MPI_Win_set_name", "NULL name");
    snprintf(w->name, sizeof w->name, "%s", win_name);
    return MPI_SUCCESS;
}
ISM_PMPI(Win_set_name)

int PMPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    ISM_CHECK_INIT("MPI_Win_get_name");
    ism_win *w = ism_abi_win(win);
    if (!w && win != MPI_WIN_NULL)
        return ism_abi_error(NULL, MPI_ERR_WIN, "MPI_Win_get_name", "invalid window");
    if (!win_name || !resultlen)
        return ism_abi_win_error(w, MPI_ERR_ARG, "MPI_Win_get_name", "NULL argument");
    /* the null handle has its name, as in MPICH (MPI 4.1) */
    const char *name = w ? w->name : "MPI_WIN_NULL";
    size_t n = strlen(name);
    memcpy(win_name, name, n + 1);
    *resultlen = (int)n;
    return MPI_SUCCESS;
}
ISM_PMPI(Win_get_name)

int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    ISM_CHECK_INIT("MPI_Win_create_errhandler");
    return ism_abi_errh_create("MPI_Win_create_errhandler", (void (*)(void *, int *, ...))fn,
                               errhandler);
}
ISM_PMPI(Win_create_errhandler)

int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    WIN_ARG("MPI_Win_set_errhandler", win, w);
    ism_errh *e = ism_abi_errh(errhandler);
    if (!e)
        return ism_abi_win_error(w, MPI_ERR_ARG, "MPI_Win_set_errhandler",
                                 "invalid error handler");
    w->errh = e;
    return MPI_SUCCESS;
}
ISM_PMPI(Win_set_errhandler)

int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    WIN_ARG("MPI_Win_get_errhandler", win, w);
    if (!errhandler)
        return ism_abi_win_error(w, MPI_ERR_ARG, "MPI_Win_get_errhandler", "NULL argument");
    *errhandler = ism_abi_errh_handle(w->errh);
    return MPI_SUCCESS;
}
ISM_PMPI(Win_get_errhandler)

int PMPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
    WIN_ARG("MPI_Win_call_errhandler", win, w);
    ism_abi_win_error(w, errorcode, "MPI_Win_call_errhandler", "called by the program");
    return MPI_SUCCESS;
}
ISM_PMPI(Win_call_errhandler)

/* A group's members as window ranks (malloc'd), or a raised MPI_ERR_GROUP. */
static int group_ranks(ism_win *w, MPI_Group group, const char *fn, int **out, int *n)
{
    ism_group *g = ism_abi_group(group);
    if (!g)
        return ism_abi_win_error(w, MPI_ERR_GROUP, fn, "invalid group");
    int *r = malloc(sizeof *r * (size_t)(g->size ? g->size : 1));
    if (!r)
        return ism_abi_win_error(w, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < g->size; i++) {
        r[i] = w->c->c_of_g[g->g[i]];
        if (r[i] < 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "member %d of the group (global rank %d) is not in the "
                                      "window's group", i, g->g[i]);
            free(r);
            return ism_abi_win_error(w, MPI_ERR_GROUP, fn, msg);
        }
    }
    *out = r;
    *n = g->size;
    return MPI_SUCCESS;
}

static int pscw_open(const char *fn, MPI_Group group, MPI_Win win,
                     int (*open)(ism_win *, const int *, int))
{
    WIN_ARG(fn, win, w);
    int *r = NULL, n = 0, rc = group_ranks(w, group, fn, &r, &n);
    if (rc)
        return rc;
    rc = open(w, r, n);
    free(r);
    return WIN_RC(w, rc, fn);
}

int PMPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    (void)assert;
    return pscw_open("MPI_Win_post", group, win, ism_win_post);
}
ISM_PMPI(Win_post)

int PMPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    (void)assert;
    return pscw_open("MPI_Win_start", group, win, ism_win_start);
}
ISM_PMPI(Win_start)

int PMPI_Win_complete(MPI_Win win)
{
    WIN_ARG("MPI_Win_complete", win, w);
    return WIN_RC(w, ism_win_complete(w), "MPI_Win_complete");
}
ISM_PMPI(Win_complete)

int PMPI_Win_wait(MPI_Win win)
{
    WIN_ARG("MPI_Win_wait", win, w);
    return WIN_RC(w, ism_win_wait(w, NULL), "MPI_Win_wait");
}
ISM_PMPI(Win_wait)

int PMPI_Win_test(MPI_Win win, int *flag)
{
    WIN_ARG("MPI_Win_test", win, w);
    if (!flag)
        return ism_abi_win_error(w, MPI_ERR_ARG, "MPI_Win_test", "NULL flag");
    return WIN_RC(w, ism_win_wait(w, flag), "MPI_Win_test");
}
ISM_PMPI(Win_test)

/* Window hints (abi/info.c): the info in use holds every hint isthmus recognizes. */
int PMPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
    WIN_ARG("MPI_Win_get_info", win, w);
    if (!info_used)
        return ism_abi_win_error(w, MPI_ERR_ARG, "MPI_Win_get_info", "NULL argument");
    return PMPI_Info_dup((MPI_Info)w->hints, info_used);
}
ISM_PMPI(Win_get_info)

int PMPI_Win_set_info(MPI_Win win, MPI_Info info)
{
    WIN_ARG("MPI_Win_set_info", win, w);
    if (info == MPI_INFO_NULL) /* refused by MPICH (MPI_ERR_ARG) and Open MPI alike */
        return ism_abi_win_error(w, MPI_ERR_INFO, "MPI_Win_set_info", "MPI_INFO_NULL");
    MPI_Info n;
    int rc = ism_abi_win_hints("MPI_Win_set_info", info, (MPI_Info)w->hints, &n);
    if (rc)
        return rc;
    MPI_Info old = (MPI_Info)w->hints;
    PMPI_Info_free(&old);
    w->hints = (void *)n;
    return MPI_SUCCESS;
}
ISM_PMPI(Win_set_info)

static int shared_query(const char *fn, MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                        void *baseptr)
{
    WIN_ARG(fn, win, w);
    if (!size || !disp_unit || !baseptr)
        return ism_abi_win_error(w, MPI_ERR_ARG, fn, "NULL output argument");
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= w->c->size))
        return bad_target(w, rank, fn);
    int64_t sz = 0;
    int rc = ism_win_shared_query(w, rank, &sz, disp_unit, (void **)baseptr);
    *size = (MPI_Aint)sz;
    return WIN_RC(w, rc, fn);
}

int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    return shared_query("MPI_Win_shared_query", win, rank, size, disp_unit, baseptr);
}
ISM_PMPI(Win_shared_query)

int PMPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                            void *baseptr)
{
    int du = 0, rc = shared_query("MPI_Win_shared_query_c", win, rank, size, &du, baseptr);
    if (!rc && disp_unit)
        *disp_unit = du;
    return rc;
}
ISM_PMPI(Win_shared_query_c)
