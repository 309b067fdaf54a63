/* backend_mpit.c: the vendor's tools interface (MPI_T) for isthmus's, compiled against
 * the vendor's mpi.h like backend_vendor.c (see backend.h, ism_backend_t). It turns the
 * vendor's constants (error codes, datatypes, bind, scope, verbosity, class) into the
 * standard ABI's, so the vendor's variables appear in isthmus's MPI_T beside its own. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

const ism_backend_t *ism_backend_mpit(const ism_backend *b);

static const ism_backend *be;

/* the standard ABI's MPI_T error codes (include/mpi.h) */
enum {
    A_ERR_CANNOT_INIT = 1001, A_ERR_NOT_ACCESSIBLE, A_ERR_NOT_INITIALIZED, A_ERR_NOT_SUPPORTED,
    A_ERR_MEMORY, A_ERR_INVALID, A_ERR_INVALID_INDEX, A_ERR_INVALID_ITEM, A_ERR_INVALID_SESSION,
    A_ERR_INVALID_HANDLE, A_ERR_INVALID_NAME, A_ERR_OUT_OF_HANDLES, A_ERR_OUT_OF_SESSIONS,
    A_ERR_CVAR_SET_NOT_NOW, A_ERR_CVAR_SET_NEVER, A_ERR_PVAR_NO_WRITE, A_ERR_PVAR_NO_STARTSTOP,
    A_ERR_PVAR_NO_ATOMIC
};

static int trc(int rc)
{
    switch (rc) {
    case MPI_SUCCESS: return 0;
    case MPI_T_ERR_CANNOT_INIT: return A_ERR_CANNOT_INIT;
    case MPI_T_ERR_NOT_INITIALIZED: return A_ERR_NOT_INITIALIZED;
    case MPI_T_ERR_MEMORY: return A_ERR_MEMORY;
    case MPI_T_ERR_INVALID: return A_ERR_INVALID;
    case MPI_T_ERR_INVALID_INDEX: return A_ERR_INVALID_INDEX;
    case MPI_T_ERR_INVALID_ITEM: return A_ERR_INVALID_ITEM;
    case MPI_T_ERR_INVALID_SESSION: return A_ERR_INVALID_SESSION;
    case MPI_T_ERR_INVALID_HANDLE: return A_ERR_INVALID_HANDLE;
    case MPI_T_ERR_INVALID_NAME: return A_ERR_INVALID_NAME;
    case MPI_T_ERR_OUT_OF_HANDLES: return A_ERR_OUT_OF_HANDLES;
    case MPI_T_ERR_OUT_OF_SESSIONS: return A_ERR_OUT_OF_SESSIONS;
    case MPI_T_ERR_CVAR_SET_NOT_NOW: return A_ERR_CVAR_SET_NOT_NOW;
    case MPI_T_ERR_CVAR_SET_NEVER: return A_ERR_CVAR_SET_NEVER;
    case MPI_T_ERR_PVAR_NO_WRITE: return A_ERR_PVAR_NO_WRITE;
    case MPI_T_ERR_PVAR_NO_STARTSTOP: return A_ERR_PVAR_NO_STARTSTOP;
    case MPI_T_ERR_PVAR_NO_ATOMIC: return A_ERR_PVAR_NO_ATOMIC;
#ifdef MPI_T_ERR_NOT_ACCESSIBLE
    case MPI_T_ERR_NOT_ACCESSIBLE: return A_ERR_NOT_ACCESSIBLE;
#endif
#ifdef MPI_T_ERR_NOT_SUPPORTED
    case MPI_T_ERR_NOT_SUPPORTED: return A_ERR_NOT_SUPPORTED;
#endif
    default: return A_ERR_INVALID;
    }
}

/* Handles: pointers in both vendors' MPI_T; datatypes as in backend_vendor.c. */
#if defined(OPEN_MPI)
#define DT2H(v) ((ism_vh)(v))
#else
#define DT2H(v) ((ism_vh)(uint32_t)(v))
#endif

static int abi_dt(MPI_Datatype t)
{
    ism_vh v = DT2H(t);
    for (int i = 1; i < ISM_DT_COUNT; i++)
        if (be->dt[i] == v)
            return ISM_DT_BASE + i;
    return 0;
}

static int abi_bind(int b)
{
    switch (b) {
    case MPI_T_BIND_NO_OBJECT: return 1;
    case MPI_T_BIND_MPI_COMM: return 2;
    case MPI_T_BIND_MPI_DATATYPE: return 3;
    case MPI_T_BIND_MPI_ERRHANDLER: return 4;
    case MPI_T_BIND_MPI_FILE: return 5;
    case MPI_T_BIND_MPI_GROUP: return 6;
    case MPI_T_BIND_MPI_OP: return 7;
    case MPI_T_BIND_MPI_REQUEST: return 8;
    case MPI_T_BIND_MPI_WIN: return 9;
    case MPI_T_BIND_MPI_MESSAGE: return 10;
    case MPI_T_BIND_MPI_INFO: return 11;
    default: return 1;
    }
}

static int abi_scope(int s)
{
    switch (s) {
    case MPI_T_SCOPE_CONSTANT: return 1;
    case MPI_T_SCOPE_READONLY: return 2;
    case MPI_T_SCOPE_LOCAL: return 3;
    case MPI_T_SCOPE_GROUP: return 4;
    case MPI_T_SCOPE_GROUP_EQ: return 5;
    case MPI_T_SCOPE_ALL: return 6;
    case MPI_T_SCOPE_ALL_EQ: return 7;
    default: return 2;
    }
}

static int abi_verbosity(int v)
{
    switch (v) {
    case MPI_T_VERBOSITY_USER_BASIC: return 0x09;
    case MPI_T_VERBOSITY_USER_DETAIL: return 0x0a;
    case MPI_T_VERBOSITY_USER_ALL: return 0x0c;
    case MPI_T_VERBOSITY_TUNER_BASIC: return 0x11;
    case MPI_T_VERBOSITY_TUNER_DETAIL: return 0x12;
    case MPI_T_VERBOSITY_TUNER_ALL: return 0x14;
    case MPI_T_VERBOSITY_MPIDEV_BASIC: return 0x21;
    case MPI_T_VERBOSITY_MPIDEV_DETAIL: return 0x22;
    default: return 0x24;
    }
}

static int abi_class(int c)
{
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE: return 1;
    case MPI_T_PVAR_CLASS_LEVEL: return 2;
    case MPI_T_PVAR_CLASS_SIZE: return 3;
    case MPI_T_PVAR_CLASS_PERCENTAGE: return 4;
    case MPI_T_PVAR_CLASS_HIGHWATERMARK: return 5;
    case MPI_T_PVAR_CLASS_LOWWATERMARK: return 6;
    case MPI_T_PVAR_CLASS_COUNTER: return 7;
    case MPI_T_PVAR_CLASS_AGGREGATE: return 8;
    case MPI_T_PVAR_CLASS_TIMER: return 9;
    default: return 10;
    }
}

static int t_init(void)
{
    int prov;
    return trc(MPI_T_init_thread(MPI_THREAD_SINGLE, &prov));
}
static int t_finalize(void) { return trc(MPI_T_finalize()); }
static int t_cvar_num(int *n) { return trc(MPI_T_cvar_get_num(n)); }
static int t_pvar_num(int *n) { return trc(MPI_T_pvar_get_num(n)); }
static int t_cat_num(int *n) { return trc(MPI_T_category_get_num(n)); }
static int t_cat_changed(int *s) { return trc(MPI_T_category_changed(s)); }

static int t_cvar_info(int i, char *name, int *nlen, int *verb, int *dt, void **et, char *desc,
                       int *dlen, int *bind, int *scope)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_T_enum e = MPI_T_ENUM_NULL;
    int v = 0, b = 0, s = 0;
    int rc = MPI_T_cvar_get_info(i, name, nlen, &v, &t, &e, desc, dlen, &b, &s);
    if (rc != MPI_SUCCESS)
        return trc(rc);
    *verb = abi_verbosity(v);
    *dt = abi_dt(t);
    *et = e == MPI_T_ENUM_NULL ? NULL : (void *)e;
    *bind = abi_bind(b);
    *scope = abi_scope(s);
    return 0;
}

static int t_cvar_alloc(int i, void *obj, void **h, int *count)
{
    MPI_T_cvar_handle x;
    int rc = MPI_T_cvar_handle_alloc(i, obj, &x, count);
    *h = rc == MPI_SUCCESS ? (void *)x : NULL;
    return trc(rc);
}
static int t_cvar_free(void **h)
{
    MPI_T_cvar_handle x = (MPI_T_cvar_handle)*h;
    int rc = MPI_T_cvar_handle_free(&x);
    *h = NULL;
    return trc(rc);
}
static int t_cvar_read(void *h, void *buf) { return trc(MPI_T_cvar_read((MPI_T_cvar_handle)h, buf)); }
static int t_cvar_write(void *h, const void *buf)
{
    return trc(MPI_T_cvar_write((MPI_T_cvar_handle)h, buf));
}

static int t_pvar_info(int i, char *name, int *nlen, int *verb, int *cls, int *dt, void **et,
                       char *desc, int *dlen, int *bind, int *ro, int *cont, int *atomic)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_T_enum e = MPI_T_ENUM_NULL;
    int v = 0, c = 0, b = 0;
    int rc = MPI_T_pvar_get_info(i, name, nlen, &v, &c, &t, &e, desc, dlen, &b, ro, cont, atomic);
    if (rc != MPI_SUCCESS)
        return trc(rc);
    *verb = abi_verbosity(v);
    *cls = abi_class(c);
    *dt = abi_dt(t);
    *et = e == MPI_T_ENUM_NULL ? NULL : (void *)e;
    *bind = abi_bind(b);
    return 0;
}

static int t_session_create(void **s)
{
    MPI_T_pvar_session x;
    int rc = MPI_T_pvar_session_create(&x);
    *s = rc == MPI_SUCCESS ? (void *)x : NULL;
    return trc(rc);
}
static int t_session_free(void **s)
{
    MPI_T_pvar_session x = (MPI_T_pvar_session)*s;
    int rc = MPI_T_pvar_session_free(&x);
    *s = NULL;
    return trc(rc);
}
static int t_pvar_alloc(void *s, int i, void *obj, void **h, int *count)
{
    MPI_T_pvar_handle x;
    int rc = MPI_T_pvar_handle_alloc((MPI_T_pvar_session)s, i, obj, &x, count);
    *h = rc == MPI_SUCCESS ? (void *)x : NULL;
    return trc(rc);
}
static int t_pvar_free(void *s, void **h)
{
    MPI_T_pvar_handle x = (MPI_T_pvar_handle)*h;
    int rc = MPI_T_pvar_handle_free((MPI_T_pvar_session)s, &x);
    *h = NULL;
    return trc(rc);
}
static int t_pvar_op(void *s, int op, void *h, void *buf)
{
    MPI_T_pvar_session ss = (MPI_T_pvar_session)s;
    MPI_T_pvar_handle hh = (MPI_T_pvar_handle)h;
    switch (op) {
    case 0: return trc(MPI_T_pvar_start(ss, hh));
    case 1: return trc(MPI_T_pvar_stop(ss, hh));
    case 2: return trc(MPI_T_pvar_read(ss, hh, buf));
    case 3: return trc(MPI_T_pvar_write(ss, hh, buf));
    case 4: return trc(MPI_T_pvar_reset(ss, hh));
    case 5: return trc(MPI_T_pvar_readreset(ss, hh, buf));
    default: return A_ERR_INVALID;
    }
}

static int t_cat_info(int i, char *name, int *nlen, char *desc, int *dlen, int *ncv, int *npv,
                      int *ncat)
{
    return trc(MPI_T_category_get_info(i, name, nlen, desc, dlen, ncv, npv, ncat));
}
static int t_cat_members(int i, int what, int len, int *out)
{
    switch (what) {
    case 0: return trc(MPI_T_category_get_cvars(i, len, out));
    case 1: return trc(MPI_T_category_get_pvars(i, len, out));
    default: return trc(MPI_T_category_get_categories(i, len, out));
    }
}
static int t_enum_info(void *et, int *n, char *name, int *nlen)
{
    return trc(MPI_T_enum_get_info((MPI_T_enum)et, n, name, nlen));
}
static int t_enum_item(void *et, int i, int *value, char *name, int *nlen)
{
    return trc(MPI_T_enum_get_item((MPI_T_enum)et, i, value, name, nlen));
}

static const ism_backend_t ops = {
    t_init, t_finalize, t_cvar_num, t_cvar_info, t_cvar_alloc, t_cvar_free, t_cvar_read,
    t_cvar_write, t_pvar_num, t_pvar_info, t_session_create, t_session_free, t_pvar_alloc,
    t_pvar_free, t_pvar_op, t_cat_num, t_cat_info, t_cat_members, t_cat_changed, t_enum_info,
    t_enum_item,
};

const ism_backend_t *ism_backend_mpit(const ism_backend *b)
{
    be = b;
    return &ops;
}
