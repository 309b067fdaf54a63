/* callbacks.c (fortran): the routines whose arguments are Fortran procedures, written by
 * hand: reduction ops and error handlers (libisthmus calls those with integer handles
 * itself, abi/fortran.h), attribute copy and delete functions and generalized requests
 * (through the C functions below, which find the Fortran procedures in their extra
 * state), and the predefined callbacks MPI_COMM_DUP_FN and friends as Fortran
 * procedures, which the keyval routines recognise by address. The same C entry point
 * serves mpif.h, `use mpi` and `use mpi_f08` (these interfaces are not BIND(C): their
 * arguments arrive by reference alike, an absent ierror as NULL).
 */
#include <stdlib.h>

#include "glue.h"

/* pmpi_x_ and mpi_x_ for mpif.h and `use mpi`, pmpi_x_f08_ and mpi_x_f08_ for mpi_f08 */
#define ISM_F_ENTRY(x)                                                                             \
    ISM_F_WEAK(mpi_##x##_, pmpi_##x##_)                                                            \
    ISM_F_ALIAS(pmpi_##x##_f08_, pmpi_##x##_)                                                      \
    ISM_F_WEAK(mpi_##x##_f08_, pmpi_##x##_)

static void set_ierror(MPI_Fint *ierror, int rc)
{
    if (ierror)
        *ierror = rc;
}

/* ---- reduction ops and error handlers ---- */

void pmpi_op_create_(ism_abi_f_user_fn *user_fn, const MPI_Fint *commute, MPI_Fint *op,
                     MPI_Fint *ierror)
{
    MPI_Op c = MPI_OP_NULL;
    int rc = ism_abi_f_op_create(user_fn, ism_f_bool(*commute), &c);
    *op = ism_abi_f_hold(PMPI_Op_c2f(c));
    set_ierror(ierror, rc);
}
ISM_F_ENTRY(op_create)

static void errhandler_create(const char *fn, ism_abi_f_errh_fn *f, MPI_Fint *errhandler,
                              MPI_Fint *ierror)
{
    MPI_Errhandler c = MPI_ERRHANDLER_NULL;
    int rc = ism_abi_f_errhandler_create(fn, f, &c);
    *errhandler = ism_abi_f_hold(PMPI_Errhandler_c2f(c));
    set_ierror(ierror, rc);
}

void pmpi_comm_create_errhandler_(ism_abi_f_errh_fn *f, MPI_Fint *errhandler, MPI_Fint *ierror)
{
    errhandler_create("MPI_Comm_create_errhandler", f, errhandler, ierror);
}
ISM_F_ENTRY(comm_create_errhandler)

void pmpi_session_create_errhandler_(ism_abi_f_errh_fn *f, MPI_Fint *errhandler,
                                     MPI_Fint *ierror)
{
    errhandler_create("MPI_Session_create_errhandler", f, errhandler, ierror);
}
ISM_F_ENTRY(session_create_errhandler)

/* MPI-1's name (mpif.h and `use mpi` only) */
void pmpi_errhandler_create_(ism_abi_f_errh_fn *f, MPI_Fint *errhandler, MPI_Fint *ierror)
{
    errhandler_create("MPI_Errhandler_create", f, errhandler, ierror);
}
ISM_F_WEAK(mpi_errhandler_create_, pmpi_errhandler_create_)

/* ---- predefined attribute callbacks, as Fortran procedures ---- */

typedef void f_copy(MPI_Fint *old, MPI_Fint *keyval, MPI_Aint *extra, MPI_Aint *in,
                    MPI_Aint *out, MPI_Fint *flag, MPI_Fint *ierror);
typedef void f_delete(MPI_Fint *obj, MPI_Fint *keyval, MPI_Aint *attr, MPI_Aint *extra,
                      MPI_Fint *ierror);
/* MPI-1's, for MPI_KEYVAL_CREATE: default INTEGERs throughout */
typedef void f_copy1(MPI_Fint *old, MPI_Fint *keyval, MPI_Fint *extra, MPI_Fint *in,
                     MPI_Fint *out, MPI_Fint *flag, MPI_Fint *ierror);
typedef void f_delete1(MPI_Fint *obj, MPI_Fint *keyval, MPI_Fint *attr, MPI_Fint *extra,
                       MPI_Fint *ierror);

#define NULL_COPY(name, T)                                                                         \
    void name(MPI_Fint *old, MPI_Fint *keyval, T *extra, T *in, T *out, MPI_Fint *flag,         \
              MPI_Fint *ierror)                                                                    \
    {                                                                                              \
        (void)old, (void)keyval, (void)extra, (void)in, (void)out;                                 \
        *flag = ISM_F_FALSE;                                                                       \
        *ierror = MPI_SUCCESS;                                                                     \
    }
#define DUP(name, T)                                                                               \
    void name(MPI_Fint *old, MPI_Fint *keyval, T *extra, T *in, T *out, MPI_Fint *flag,         \
              MPI_Fint *ierror)                                                                    \
    {                                                                                              \
        (void)old, (void)keyval, (void)extra;                                                      \
        *out = *in;                                                                                \
        *flag = ISM_F_TRUE;                                                                        \
        *ierror = MPI_SUCCESS;                                                                     \
    }
#define NULL_DELETE(name, T)                                                                       \
    void name(MPI_Fint *obj, MPI_Fint *keyval, T *attr, T *extra, MPI_Fint *ierror)             \
    {                                                                                              \
        (void)obj, (void)keyval, (void)attr, (void)extra;                                          \
        *ierror = MPI_SUCCESS;                                                                     \
    }

NULL_COPY(mpi_comm_null_copy_fn_, MPI_Aint)
DUP(mpi_comm_dup_fn_, MPI_Aint)
NULL_DELETE(mpi_comm_null_delete_fn_, MPI_Aint)
NULL_COPY(mpi_type_null_copy_fn_, MPI_Aint)
DUP(mpi_type_dup_fn_, MPI_Aint)
NULL_DELETE(mpi_type_null_delete_fn_, MPI_Aint)
NULL_COPY(mpi_null_copy_fn_, MPI_Fint)
DUP(mpi_dup_fn_, MPI_Fint)
NULL_DELETE(mpi_null_delete_fn_, MPI_Fint)

/* ---- keyvals: C callbacks that call the program's Fortran procedures ---- */

/* One per keyval, never freed: attributes may call it after MPI_Comm_free_keyval. */
typedef struct {
    void (*copy)(void);
    void (*del)(void);
    MPI_Aint extra;
} keyval_state;

/* MPI_Comm_copy_attr_function and MPI_Type_copy_attr_function differ only in the type of
 * their first argument, which converts alike (see abi/fortran.c) */
static int copy_tramp(void *obj, int keyval, void *extra_state, void *in, void *out, int *flag,
                      int legacy)
{
    keyval_state *s = extra_state;
    MPI_Fint fobj = PMPI_Comm_c2f((MPI_Comm)obj), fkey = keyval, fflag = ISM_F_FALSE;
    MPI_Fint ierror = MPI_SUCCESS;
    MPI_Aint v;
    if (legacy) {
        MPI_Fint extra = (MPI_Fint)s->extra, fin = (MPI_Fint)(intptr_t)in, fout = 0;
        ((f_copy1 *)s->copy)(&fobj, &fkey, &extra, &fin, &fout, &fflag, &ierror);
        v = fout;
    } else {
        MPI_Aint fin = (MPI_Aint)(intptr_t)in, fout = 0;
        ((f_copy *)s->copy)(&fobj, &fkey, &s->extra, &fin, &fout, &fflag, &ierror);
        v = fout;
    }
    *flag = ism_f_bool(fflag);
    if (*flag)
        *(void **)out = (void *)(intptr_t)v;
    return ierror;
}

static int delete_tramp(void *obj, int keyval, void *attr, void *extra_state, int legacy)
{
    keyval_state *s = extra_state;
    MPI_Fint fobj = PMPI_Comm_c2f((MPI_Comm)obj), fkey = keyval, ierror = MPI_SUCCESS;
    if (legacy) {
        MPI_Fint extra = (MPI_Fint)s->extra, fattr = (MPI_Fint)(intptr_t)attr;
        ((f_delete1 *)s->del)(&fobj, &fkey, &fattr, &extra, &ierror);
    } else {
        MPI_Aint fattr = (MPI_Aint)(intptr_t)attr;
        ((f_delete *)s->del)(&fobj, &fkey, &fattr, &s->extra, &ierror);
    }
    return ierror;
}

static int comm_copy(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    return copy_tramp((void *)c, k, x, in, out, flag, 0);
}
static int comm_delete(MPI_Comm c, int k, void *attr, void *x)
{
    return delete_tramp((void *)c, k, attr, x, 0);
}
static int type_copy(MPI_Datatype t, int k, void *x, void *in, void *out, int *flag)
{
    return copy_tramp((void *)t, k, x, in, out, flag, 0);
}
static int type_delete(MPI_Datatype t, int k, void *attr, void *x)
{
    return delete_tramp((void *)t, k, attr, x, 0);
}
static int legacy_copy(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    return copy_tramp((void *)c, k, x, in, out, flag, 1);
}
static int legacy_delete(MPI_Comm c, int k, void *attr, void *x)
{
    return delete_tramp((void *)c, k, attr, x, 1);
}

static keyval_state *new_state(void (*copy)(void), void (*del)(void), MPI_Aint extra)
{
    keyval_state *s = malloc(sizeof *s);
    if (s) {
        s->copy = copy;
        s->del = del;
        s->extra = extra;
    }
    return s;
}

enum { COMM, TYPE, LEGACY };

/* A keyval whose Fortran procedures are called through the trampolines above; the
 * predefined procedures become MPI's own (the same reserved values, 0 and 1, for every
 * kind: mpi.h). */
static int keyval_create(int kind, void (*copy)(void), void (*del)(void), MPI_Aint extra,
                         MPI_Fint *keyval)
{
    static const struct {
        const char *fn;
        void (*null_copy)(void), (*dup)(void), (*null_delete)(void);
    } pre[] = {
        [COMM] = {"MPI_Comm_create_keyval", (void (*)(void))mpi_comm_null_copy_fn_,
                  (void (*)(void))mpi_comm_dup_fn_, (void (*)(void))mpi_comm_null_delete_fn_},
        [TYPE] = {"MPI_Type_create_keyval", (void (*)(void))mpi_type_null_copy_fn_,
                  (void (*)(void))mpi_type_dup_fn_, (void (*)(void))mpi_type_null_delete_fn_},
        [LEGACY] = {"MPI_Keyval_create", (void (*)(void))mpi_null_copy_fn_,
                    (void (*)(void))mpi_dup_fn_, (void (*)(void))mpi_null_delete_fn_},
    };
    keyval_state *s = new_state(copy, del, extra);
    if (!s)
        return ism_f_nomem(pre[kind].fn);
    uintptr_t c = copy == pre[kind].null_copy ? 0 : copy == pre[kind].dup ? 1 : 2;
    int d = del != pre[kind].null_delete;
    int k = MPI_KEYVAL_INVALID, rc;
    if (kind == COMM)
        rc = PMPI_Comm_create_keyval(c == 2 ? comm_copy : (MPI_Comm_copy_attr_function *)c,
                                     d ? comm_delete : MPI_COMM_NULL_DELETE_FN, &k, s);
    else if (kind == TYPE)
        rc = PMPI_Type_create_keyval(c == 2 ? type_copy : (MPI_Type_copy_attr_function *)c,
                                     d ? type_delete : MPI_TYPE_NULL_DELETE_FN, &k, s);
    else
        rc = PMPI_Keyval_create(c == 2 ? legacy_copy : (MPI_Copy_function *)c,
                                d ? legacy_delete : MPI_NULL_DELETE_FN, &k, s);
    if (rc != MPI_SUCCESS)
        free(s);
    *keyval = k;
    return rc;
}

void pmpi_comm_create_keyval_(f_copy *copy, f_delete *del, MPI_Fint *keyval,
                              const MPI_Aint *extra_state, MPI_Fint *ierror)
{
    set_ierror(ierror, keyval_create(COMM, (void (*)(void))copy, (void (*)(void))del,
                                     *extra_state, keyval));
}
ISM_F_ENTRY(comm_create_keyval)

void pmpi_type_create_keyval_(f_copy *copy, f_delete *del, MPI_Fint *keyval,
                              const MPI_Aint *extra_state, MPI_Fint *ierror)
{
    set_ierror(ierror, keyval_create(TYPE, (void (*)(void))copy, (void (*)(void))del,
                                     *extra_state, keyval));
}
ISM_F_ENTRY(type_create_keyval)

void pmpi_keyval_create_(f_copy1 *copy, f_delete1 *del, MPI_Fint *keyval,
                         const MPI_Fint *extra_state, MPI_Fint *ierror)
{
    set_ierror(ierror, keyval_create(LEGACY, (void (*)(void))copy, (void (*)(void))del,
                                     *extra_state, keyval));
}
ISM_F_WEAK(mpi_keyval_create_, pmpi_keyval_create_)

/* ---- generalized requests ---- */

typedef void f_query(MPI_Aint *extra, MPI_Fint *status, MPI_Fint *ierror);
typedef void f_free(MPI_Aint *extra, MPI_Fint *ierror);
typedef void f_cancel(MPI_Aint *extra, MPI_Fint *complete, MPI_Fint *ierror);

/* one per request, freed after its free_fn ran. The procedures get the program's own
 * extra_state variable, as MPICH and Open MPI pass it (MPICH's f77/pt2pt/greqf has its
 * free_fn change it) */
typedef struct {
    f_query *query;
    f_free *free_fn;
    f_cancel *cancel;
    MPI_Aint *extra;
} greq_state;

static int greq_query(void *x, MPI_Status *status)
{
    greq_state *s = x;
    MPI_Fint ierror = MPI_SUCCESS;
    s->query(s->extra, (MPI_Fint *)status, &ierror);
    return ierror;
}

static int greq_free(void *x)
{
    greq_state *s = x;
    MPI_Fint ierror = MPI_SUCCESS;
    s->free_fn(s->extra, &ierror);
    free(s);
    return ierror;
}

static int greq_cancel(void *x, int complete)
{
    greq_state *s = x;
    MPI_Fint ierror = MPI_SUCCESS, c = ism_f_logical(complete);
    s->cancel(s->extra, &c, &ierror);
    return ierror;
}

void pmpi_grequest_start_(f_query *query, f_free *free_fn, f_cancel *cancel,
                          MPI_Aint *extra_state, MPI_Fint *request, MPI_Fint *ierror)
{
    greq_state *s = malloc(sizeof *s);
    if (!s) {
        set_ierror(ierror, ism_f_nomem("MPI_Grequest_start"));
        return;
    }
    *s = (greq_state){query, free_fn, cancel, extra_state};
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, s, &r);
    if (rc != MPI_SUCCESS)
        free(s);
    *request = ism_abi_f_hold(PMPI_Request_c2f(r));
    set_ierror(ierror, rc);
}
ISM_F_ENTRY(grequest_start)
