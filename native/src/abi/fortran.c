/* fortran.c (abi): language interoperability with Fortran: status conversions between
 * C, Fortran arrays and the mpi_f08 TYPE(MPI_Status) (all three are the same eight
 * integers in the standard ABI), the Fortran status sentinels, and user functions written
 * in Fortran (reduction ops and error handlers), which take integer handles where C
 * functions take pointers.
 */
#include <string.h>

#include "abi.h"
#include "fortran.h"

/* Distinct addresses until the Fortran bindings are loaded; their library points these
 * at the Fortran MPI_STATUS(ES)_IGNORE (native/fortran/). */
static MPI_Fint no_status[MPI_F_STATUS_SIZE], no_statuses[MPI_F_STATUS_SIZE];
static MPI_F08_status no_status08, no_statuses08;
MPI_Fint *MPI_F_STATUS_IGNORE = no_status;
MPI_Fint *MPI_F_STATUSES_IGNORE = no_statuses;
MPI_F08_status *MPI_F08_STATUS_IGNORE = &no_status08;
MPI_F08_status *MPI_F08_STATUSES_IGNORE = &no_statuses08;

_Static_assert(sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
               "a C status and a Fortran status array have the same size");
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "TYPE(MPI_Status) is MPI_Status");

static int copy_status(const char *fn, const void *from, const void *from_ignore, void *to,
                       const void *to_ignore)
{
    if (!from || from == from_ignore || !to || to == to_ignore)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "a status argument is NULL or a STATUS_IGNORE, which this "
                             "conversion does not accept");
    memmove(to, from, sizeof(MPI_Status));
    return MPI_SUCCESS;
}

/* MPI_<Name>(from, to): the ignore values of each side are refused */
#define STATUS_CONV(Name, From, from_ignore, To, to_ignore)                                        \
    int PMPI_##Name(const From *from, To *to)                                                      \
    {                                                                                              \
        return copy_status("MPI_" #Name, from, from_ignore, to, to_ignore);                        \
    }                                                                                              \
    ISM_PMPI(Name)

STATUS_CONV(Status_c2f, MPI_Status, MPI_STATUS_IGNORE, MPI_Fint, MPI_F_STATUS_IGNORE)
STATUS_CONV(Status_f2c, MPI_Fint, MPI_F_STATUS_IGNORE, MPI_Status, MPI_STATUS_IGNORE)
STATUS_CONV(Status_c2f08, MPI_Status, MPI_STATUS_IGNORE, MPI_F08_status, MPI_F08_STATUS_IGNORE)
STATUS_CONV(Status_f082c, MPI_F08_status, MPI_F08_STATUS_IGNORE, MPI_Status, MPI_STATUS_IGNORE)
STATUS_CONV(Status_f2f08, MPI_Fint, MPI_F_STATUS_IGNORE, MPI_F08_status, MPI_F08_STATUS_IGNORE)
STATUS_CONV(Status_f082f, MPI_F08_status, MPI_F08_STATUS_IGNORE, MPI_Fint, MPI_F_STATUS_IGNORE)

/* ---- user functions written in Fortran ---- */

static void call_fortran_op(ism_user_fn *user, void *in, void *inout, int *len, void *dtype)
{
    MPI_Fint f = PMPI_Type_c2f((MPI_Datatype)dtype);
    ((ism_abi_f_user_fn *)(void (*)(void))user)(in, inout, len, &f);
}

int ism_abi_f_op_create(ism_abi_f_user_fn *fn, int commute, MPI_Op *op)
{
    int rc = PMPI_Op_create((MPI_User_function *)(void (*)(void))fn, commute, op);
    if (rc == MPI_SUCCESS)
        ((ism_op *)*op)->call = call_fortran_op;
    return rc;
}

int ism_abi_f_errhandler_create(const char *fn_name, ism_abi_f_errh_fn *fn,
                                MPI_Errhandler *errhandler)
{
    ISM_CHECK_INIT(fn_name);
    int rc = ism_abi_errh_create(fn_name, (void (*)(void *, int *, ...))(void (*)(void))fn,
                                 errhandler);
    if (rc == MPI_SUCCESS)
        ((ism_errh *)*errhandler)->fortran = 1;
    return rc;
}

void ism_abi_errh_call(ism_errh *e, void *handle, int *code)
{
    if (!e->fortran) {
        e->fn(handle, code);
        return;
    }
    /* a communicator and a session handle convert alike: both are pointers or small
     * predefined values, numbered by the same table */
    MPI_Fint f = PMPI_Comm_c2f(*(MPI_Comm *)handle);
    ((ism_abi_f_errh_fn *)(void (*)(void))e->fn)(&f, code);
}

int ism_abi_f_error(int code, const char *fn, const char *msg)
{
    return ism_abi_error(NULL, code, fn, "%s", msg);
}

/* A Fortran program passes buf to keep the compiler from moving its loads and stores
 * across MPI calls that read or write it behind its back (MPI_BOTTOM, nonblocking
 * buffers; MPI 4.1 section 19.1.17): being an external call that takes buf is the point. */
int PMPI_F_sync_reg(void *buf)
{
    (void)buf;
    return MPI_SUCCESS;
}
ISM_PMPI(F_sync_reg)
