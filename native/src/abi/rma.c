/* rma.c (abi): MPI_Put, MPI_Get, the accumulates, the fetching atomics and their R*
 * request forms: argument checks, then core/rma.c.
 */
#include <stdio.h>

#include "abi.h"
#include "win_abi.h"

/* The window, the target and one (count, datatype) pair; each failure is raised on the
 * window with what was wrong. */
static int check_side(ism_win *w, const char *fn, const char *side, int64_t count,
                      MPI_Datatype h, ism_dt **out)
{
    char msg[200];
    if (count < 0) {
        snprintf(msg, sizeof msg, "negative %s count %lld", side, (long long)count);
        return ism_abi_win_error(w, MPI_ERR_COUNT, fn, msg);
    }
    *out = ism_abi_dt(h);
    if (!*out) {
        snprintf(msg, sizeof msg, "%s datatype: %s", side, ism_abi_dt_problem(h));
        return ism_abi_win_error(w, MPI_ERR_TYPE, fn, msg);
    }
    return MPI_SUCCESS;
}

static int check(const char *fn, MPI_Win win, int target, ism_win **w)
{
    ISM_CHECK_INIT(fn);
    *w = ism_abi_win(win);
    if (!*w)
        return ism_abi_error(NULL, MPI_ERR_WIN, fn, "invalid window");
    if (target != MPI_PROC_NULL && (target < 0 || target >= (*w)->c->size)) {
        char msg[160];
        snprintf(msg, sizeof msg, "target rank %d is not in the window's group of %d", target,
                 (*w)->c->size);
        return ism_abi_win_error(*w, MPI_ERR_RANK, fn, msg);
    }
    return MPI_SUCCESS;
}

static int check_op(ism_win *w, const char *fn, MPI_Op h, ism_op **out)
{
    *out = ism_abi_op(h);
    if (!*out || !(*out)->abi)
        return ism_abi_win_error(w, MPI_ERR_OP, fn,
                                 "one-sided accumulates take a predefined operation");
    return MPI_SUCCESS;
}

static int done(ism_win *w, int rc, const char *fn, ism_req *r, MPI_Request *request)
{
    if (rc)
        return ism_abi_win_fail(w, rc, fn);
    if (request)
        *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

/* The window, target and both (count, datatype) pairs of a put or get. */
static int two_sides(const char *fn, MPI_Win win, int target, int64_t on, MPI_Datatype odt,
                     int64_t tn, MPI_Datatype tdt, ism_win **w, ism_dt **od, ism_dt **td)
{
    int rc = check(fn, win, target, w);
    if (rc || (rc = check_side(*w, fn, "origin", on, odt, od)))
        return rc;
    return check_side(*w, fn, "target", tn, tdt, td);
}

static int put(const char *fn, const void *o, int64_t on, MPI_Datatype odt, int target,
               MPI_Aint disp, int64_t tn, MPI_Datatype tdt, MPI_Win win, MPI_Request *request)
{
    ism_win *w;
    ism_dt *od, *td;
    ism_req *r = NULL;
    int rc = two_sides(fn, win, target, on, odt, tn, tdt, &w, &od, &td);
    if (rc)
        return rc;
    rc = ism_rma_put(w, o, on, od, target, disp, tn, td, request ? &r : NULL);
    return done(w, rc, fn, r, request); /* r is set by the call above */
}

int PMPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win)
{
    return put("MPI_Put", origin_addr, origin_count, origin_datatype, target_rank, target_disp,
               target_count, target_datatype, win, NULL);
}
ISM_PMPI(Put)

int PMPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, int target_count,
              MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Rput", "NULL request pointer");
    return put("MPI_Rput", origin_addr, origin_count, origin_datatype, target_rank, target_disp,
               target_count, target_datatype, win, request);
}
ISM_PMPI(Rput)

static int get(const char *fn, void *o, int64_t on, MPI_Datatype odt, int target, MPI_Aint disp,
               int64_t tn, MPI_Datatype tdt, MPI_Win win, MPI_Request *request)
{
    ism_win *w;
    ism_dt *od, *td;
    ism_req *r = NULL;
    int rc = two_sides(fn, win, target, on, odt, tn, tdt, &w, &od, &td);
    if (rc)
        return rc;
    rc = ism_rma_get(w, o, on, od, target, disp, tn, td, request ? &r : NULL);
    return done(w, rc, fn, r, request); /* r is set by the call above */
}

int PMPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    return get("MPI_Get", origin_addr, origin_count, origin_datatype, target_rank, target_disp,
               target_count, target_datatype, win, NULL);
}
ISM_PMPI(Get)

int PMPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
              MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
              MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Rget", "NULL request pointer");
    return get("MPI_Rget", origin_addr, origin_count, origin_datatype, target_rank, target_disp,
               target_count, target_datatype, win, request);
}
ISM_PMPI(Rget)

static int acc(const char *fn, const void *o, int64_t on, MPI_Datatype odt, int target,
               MPI_Aint disp, int64_t tn, MPI_Datatype tdt, MPI_Op op, MPI_Win win,
               MPI_Request *request)
{
    ism_win *w;
    ism_dt *od, *td;
    ism_op *p;
    ism_req *r = NULL;
    int rc = two_sides(fn, win, target, on, odt, tn, tdt, &w, &od, &td);
    if (rc || (rc = check_op(w, fn, op, &p)))
        return rc;
    rc = ism_rma_acc(w, o, on, od, target, disp, tn, td, p, request ? &r : NULL);
    return done(w, rc, fn, r, request);
}

int PMPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    return acc("MPI_Accumulate", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, op, win, NULL);
}
ISM_PMPI(Accumulate)

int PMPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, int target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Raccumulate", "NULL request pointer");
    return acc("MPI_Raccumulate", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, op, win, request);
}
ISM_PMPI(Raccumulate)

static int get_acc(const char *fn, const void *o, int64_t on, MPI_Datatype odt, void *res,
                   int64_t rn, MPI_Datatype rdt, int target, MPI_Aint disp, int64_t tn,
                   MPI_Datatype tdt, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    ism_win *w;
    ism_dt *od = NULL, *rd, *td;
    ism_op *p;
    int rc = check(fn, win, target, &w);
    if (rc || (rc = check_op(w, fn, op, &p)))
        return rc;
    int noop = op == MPI_NO_OP;
    if ((!noop && (rc = check_side(w, fn, "origin", on, odt, &od))) ||
        (rc = check_side(w, fn, "result", rn, rdt, &rd)) ||
        (rc = check_side(w, fn, "target", tn, tdt, &td)))
        return rc;
    ism_req *r = NULL;
    rc = ism_rma_get_acc(w, noop ? NULL : o, noop ? 0 : on, od, res, rn, rd, target, disp, tn,
                         td, p, request ? &r : NULL);
    return done(w, rc, fn, r, request);
}

int PMPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    return get_acc("MPI_Get_accumulate", origin_addr, origin_count, origin_datatype, result_addr,
                   result_count, result_datatype, target_rank, target_disp, target_count,
                   target_datatype, op, win, NULL);
}
ISM_PMPI(Get_accumulate)

int PMPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                         void *result_addr, int result_count, MPI_Datatype result_datatype,
                         int target_rank, MPI_Aint target_disp, int target_count,
                         MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                         MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Rget_accumulate", "NULL request pointer");
    return get_acc("MPI_Rget_accumulate", origin_addr, origin_count, origin_datatype,
                   result_addr, result_count, result_datatype, target_rank, target_disp,
                   target_count, target_datatype, op, win, request);
}
ISM_PMPI(Rget_accumulate)

/* ---- the large-count (_c) forms: the same bodies, whose counts are 64-bit (the core
 * sends a 64-bit byte count across sites and hands its vendor a covering type) ---- */

int PMPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win)
{
    return put("MPI_Put_c", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, win, NULL);
}
ISM_PMPI(Put_c)

int PMPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Rput_c", "NULL request pointer");
    return put("MPI_Rput_c", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, win, request);
}
ISM_PMPI(Rput_c)

int PMPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win)
{
    return get("MPI_Get_c", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, win, NULL);
}
ISM_PMPI(Get_c)

int PMPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Rget_c", "NULL request pointer");
    return get("MPI_Rget_c", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, win, request);
}
ISM_PMPI(Rget_c)

int PMPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count,
                      MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                      MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                      MPI_Win win)
{
    return acc("MPI_Accumulate_c", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, op, win, NULL);
}
ISM_PMPI(Accumulate_c)

int PMPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count,
                       MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                       MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                       MPI_Win win, MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Raccumulate_c", "NULL request pointer");
    return acc("MPI_Raccumulate_c", origin_addr, origin_count, origin_datatype, target_rank,
               target_disp, target_count, target_datatype, op, win, request);
}
ISM_PMPI(Raccumulate_c)

int PMPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, void *result_addr,
                          MPI_Count result_count, MPI_Datatype result_datatype, int target_rank,
                          MPI_Aint target_disp, MPI_Count target_count,
                          MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    return get_acc("MPI_Get_accumulate_c", origin_addr, origin_count, origin_datatype,
                   result_addr, result_count, result_datatype, target_rank, target_disp,
                   target_count, target_datatype, op, win, NULL);
}
ISM_PMPI(Get_accumulate_c)

int PMPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                           MPI_Datatype origin_datatype, void *result_addr,
                           MPI_Count result_count, MPI_Datatype result_datatype,
                           int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                           MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                           MPI_Request *request)
{
    if (!request)
        return ism_abi_error(NULL, MPI_ERR_REQUEST, "MPI_Rget_accumulate_c",
                             "NULL request pointer");
    return get_acc("MPI_Rget_accumulate_c", origin_addr, origin_count, origin_datatype,
                   result_addr, result_count, result_datatype, target_rank, target_disp,
                   target_count, target_datatype, op, win, request);
}
ISM_PMPI(Rget_accumulate_c)

int PMPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    return get_acc("MPI_Fetch_and_op", origin_addr, 1, datatype, result_addr, 1, datatype,
                   target_rank, target_disp, 1, datatype, op, win, NULL);
}
ISM_PMPI(Fetch_and_op)

int PMPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                          MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Win win)
{
    static const char fn[] = "MPI_Compare_and_swap";
    ism_win *w;
    ism_dt *d;
    int rc = check(fn, win, target_rank, &w);
    if (rc || (rc = check_side(w, fn, "the", 1, datatype, &d)))
        return rc;
    if (!d->abi)
        return ism_abi_win_error(w, MPI_ERR_TYPE, fn, "takes a predefined datatype");
    return done(w, ism_rma_cas(w, origin_addr, compare_addr, result_addr, d, target_rank,
                               target_disp),
                fn, NULL, NULL);
}
ISM_PMPI(Compare_and_swap)
