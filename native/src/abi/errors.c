/* errors.c (abi): error handlers (predefined and user functions), error classes, codes
 * and strings, including the classes and codes a program adds at run time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

/* user-added classes and codes, numbered from MPI_ERR_LASTCODE + 1; a removed one (MPI
 * 4.1) keeps its slot, so numbers are never given twice, and is no longer valid */
typedef struct user_err {
    int cls;
    int removed;
    char *text;
} user_err;
static user_err *uerr;
static int nuerr, capuerr;

static int user_index(int code)
{
    int i = code - MPI_ERR_LASTCODE - 1;
    return i >= 0 && i < nuerr && !uerr[i].removed ? i : -1;
}

int ism_abi_call_user_errh(ism_comm *c, int code)
{
    MPI_Comm h = ism_abi_comm_handle(c);
    ism_abi_errh_call(c->errh, &h, &code);
    return code;
}

ism_errh *ism_abi_errh(MPI_Errhandler e)
{
    if (e == MPI_ERRORS_RETURN)
        return &ism_errh_return;
    if (e == MPI_ERRORS_ARE_FATAL)
        return &ism_errh_fatal;
    if (e == MPI_ERRORS_ABORT)
        return &ism_errh_abort;
    if ((uintptr_t)e < 0x1000)
        return NULL;
    return (ism_errh *)e;
}

MPI_Errhandler ism_abi_errh_handle(ism_errh *e)
{
    return e == &ism_errh_return  ? MPI_ERRORS_RETURN
           : e == &ism_errh_abort ? MPI_ERRORS_ABORT
           : e == &ism_errh_fatal ? MPI_ERRORS_ARE_FATAL
                                  : (MPI_Errhandler)e;
}

int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    ISM_CHECK_INIT("MPI_Comm_set_errhandler");
    ism_comm *c = ism_abi_comm(comm);
    ism_errh *e = ism_abi_errh(errhandler);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_set_errhandler",
                             "invalid communicator");
    if (!e)
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Comm_set_errhandler", "invalid error handler");
    c->errh = e;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_set_errhandler)

int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    ISM_CHECK_INIT("MPI_Comm_get_errhandler");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_get_errhandler",
                             "invalid communicator");
    *errhandler = ism_abi_errh_handle(c->errh);
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_get_errhandler)

int ism_abi_errh_create(const char *fn, void (*user)(void *, int *, ...), MPI_Errhandler *out)
{
    if (!user || !out)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "NULL argument");
    ism_errh *e = calloc(1, sizeof *e);
    if (!e)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory");
    e->kind = 3;
    e->fn = user;
    *out = (MPI_Errhandler)e;
    return MPI_SUCCESS;
}

int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    ISM_CHECK_INIT("MPI_Comm_create_errhandler");
    return ism_abi_errh_create("MPI_Comm_create_errhandler", (void (*)(void *, int *, ...))fn,
                               errhandler);
}
ISM_PMPI(Comm_create_errhandler)

int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    ISM_CHECK_INIT("MPI_Comm_call_errhandler");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_call_errhandler",
                             "invalid communicator");
    ism_abi_error(c, errorcode, "MPI_Comm_call_errhandler", "error raised by the program");
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_call_errhandler)

int PMPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    if (!errhandler || *errhandler == MPI_ERRHANDLER_NULL)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Errhandler_free",
                             "the error handler is MPI_ERRHANDLER_NULL");
    /* user handlers stay allocated: a communicator may still use them (MPI allows the
     * free to be deferred until no object refers to the handler) */
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Errhandler_free)

int PMPI_Error_class(int errorcode, int *errorclass)
{
    int i = user_index(errorcode);
    *errorclass = i >= 0 ? uerr[i].cls : errorcode;
    return MPI_SUCCESS;
}
ISM_PMPI(Error_class)

int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
    int i = user_index(errorcode);
    if (i >= 0)
        snprintf(string, MPI_MAX_ERROR_STRING, "%s", uerr[i].text ? uerr[i].text : "");
    else
        snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", ism_abi_class_name(errorcode),
                 ism_abi_class_text(errorcode));
    *resultlen = (int)strlen(string);
    return MPI_SUCCESS;
}
ISM_PMPI(Error_string)

static int add_err(int cls)
{
    if (nuerr == capuerr) {
        capuerr = capuerr ? capuerr * 2 : 16;
        uerr = realloc(uerr, sizeof *uerr * (size_t)capuerr);
    }
    int code = MPI_ERR_LASTCODE + 1 + nuerr;
    uerr[nuerr].cls = cls < 0 ? code : cls;
    uerr[nuerr].removed = 0;
    uerr[nuerr].text = NULL;
    nuerr++;
    return code;
}

int PMPI_Add_error_class(int *errorclass)
{
    *errorclass = add_err(-1);
    return MPI_SUCCESS;
}
ISM_PMPI(Add_error_class)

int PMPI_Add_error_code(int errorclass, int *errorcode)
{
    int i = user_index(errorclass);
    if (!(errorclass >= 0 && errorclass < MPI_ERR_LASTCODE) && !(i >= 0 && uerr[i].cls == errorclass))
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Add_error_code",
                             "%d is not an error class", errorclass);
    *errorcode = add_err(errorclass);
    return MPI_SUCCESS;
}
ISM_PMPI(Add_error_code)

int PMPI_Add_error_string(int errorcode, const char *string)
{
    int i = user_index(errorcode);
    if (i < 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Add_error_string",
                             "%d is not a user-added error code or class", errorcode);
    free(uerr[i].text);
    size_t n = strlen(string) + 1;
    uerr[i].text = malloc(n);
    if (uerr[i].text)
        memcpy(uerr[i].text, string, n);
    return MPI_SUCCESS;
}
ISM_PMPI(Add_error_string)

/* MPI 4.1 §9.5: only what the program added can be removed; a class only once its codes
 * are gone, and either only once its string is (as MPICH and mpi4py's suite have it);
 * each check fails alike on every rank that calls it with the same values. */
static int removable(const char *fn, int code, int want_class)
{
    int i = user_index(code);
    if (i < 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "%d is not an error %s the program added (or it was removed)", code,
                             want_class ? "class" : "code");
    if ((uerr[i].cls == code) != want_class)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "%d is an error %s, not a%s", code,
                             want_class ? "code" : "class", want_class ? " class" : " code");
    if (uerr[i].text)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "error %s %d still has a string: MPI_Remove_error_string first",
                             want_class ? "class" : "code", code);
    for (int j = 0; want_class && j < nuerr; j++)
        if (j != i && !uerr[j].removed && uerr[j].cls == code)
            return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                                 "error class %d still has error code %d: remove it first", code,
                                 MPI_ERR_LASTCODE + 1 + j);
    return MPI_SUCCESS;
}

static int remove_err(const char *fn, int code, int want_class)
{
    int rc = removable(fn, code, want_class);
    if (rc)
        return rc;
    user_err *e = &uerr[user_index(code)];
    free(e->text);
    e->text = NULL;
    e->removed = 1;
    return MPI_SUCCESS;
}

int PMPI_Remove_error_class(int errorclass)
{
    return remove_err("MPI_Remove_error_class", errorclass, 1);
}
ISM_PMPI(Remove_error_class)

int PMPI_Remove_error_code(int errorcode)
{
    return remove_err("MPI_Remove_error_code", errorcode, 0);
}
ISM_PMPI(Remove_error_code)

int PMPI_Remove_error_string(int errorcode)
{
    int i = user_index(errorcode);
    if (i < 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Remove_error_string",
                             "%d is not a user-added error code or class", errorcode);
    free(uerr[i].text);
    uerr[i].text = NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Remove_error_string)

int ism_abi_last_used_code(void) { return MPI_ERR_LASTCODE + nuerr; }
