/* env.c (abi): environment management: init and finalize, ranks and sizes, versions,
 * timers, error handlers and error strings, communicator names, datatype sizes.
 *
 * The runtime (vendor MPI, gateway connection, MPI_COMM_WORLD) has several users: the
 * world model (MPI_Init .. MPI_Finalize) and each open MPI-4 session (abi/session.c).
 * The first of them starts it, the last one to finish ends it.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

int ism_abi_tag_ub_value = -1; /* set at MPI_Init: the vendor's MPI_TAG_UB */

static int world_state;   /* the world model: 0 before MPI_Init, 1 initialized, 2 finalized */
static int runtime_users; /* the world model while initialized, and each open session */

int ism_abi_check_init(const char *fn)
{
    fprintf(stderr, "isthmus: %s called %s\n", fn,
            ism.finalized ? "after MPI_Finalize (and the last MPI_Session_finalize)"
                          : "before MPI_Init or MPI_Session_init");
    fflush(stderr);
    exit(1);
}

int ism_abi_runtime_start(int *argc, char ***argv, int required, int *provided, const char *fn)
{
    if (runtime_users > 0) {
        runtime_users++;
        *provided = ism.thread_level;
        return MPI_SUCCESS;
    }
    if (ism.initialized) {
        /* the vendor MPI cannot be initialized twice in one process */
        fprintf(stderr, "isthmus: %s: MPI was already finalized in this process (MPI_Finalize "
                "or the last MPI_Session_finalize ended it) and the site's MPI cannot be "
                "started again; keep a session or the world model open instead\n", fn);
        fflush(stderr);
        return MPI_ERR_OTHER;
    }
    int rc = ism_core_init(argc, argv, required, provided);
    if (rc) {
        fprintf(stderr, "isthmus: %s failed (%s)\n", fn, ism_abi_class_name(rc));
        return rc;
    }
    int vub = ism.be->vendor_tag_ub;
    ism_abi_tag_ub_value = vub > 0 ? vub : 32767;
    runtime_users = 1;
    return MPI_SUCCESS;
}

int ism_abi_runtime_stop(void)
{
    if (runtime_users <= 0)
        return MPI_ERR_OTHER;
    if (--runtime_users > 0)
        return MPI_SUCCESS;
    return ism_core_finalize() ? MPI_ERR_OTHER : MPI_SUCCESS;
}

const char *ism_abi_class_name(int c)
{
    /* the MPI 5.0 ABI's error classes are 0..62, in this order */
    static const char *names[] = {
        "MPI_SUCCESS", "MPI_ERR_BUFFER", "MPI_ERR_COUNT", "MPI_ERR_TYPE", "MPI_ERR_TAG",
        "MPI_ERR_COMM", "MPI_ERR_RANK", "MPI_ERR_REQUEST", "MPI_ERR_ROOT", "MPI_ERR_GROUP",
        "MPI_ERR_OP", "MPI_ERR_TOPOLOGY", "MPI_ERR_DIMS", "MPI_ERR_ARG", "MPI_ERR_UNKNOWN",
        "MPI_ERR_TRUNCATE", "MPI_ERR_OTHER", "MPI_ERR_INTERN", "MPI_ERR_PENDING",
        "MPI_ERR_IN_STATUS", "MPI_ERR_ACCESS", "MPI_ERR_AMODE", "MPI_ERR_ASSERT",
        "MPI_ERR_BAD_FILE", "MPI_ERR_BASE", "MPI_ERR_CONVERSION", "MPI_ERR_DISP",
        "MPI_ERR_DUP_DATAREP", "MPI_ERR_FILE_EXISTS", "MPI_ERR_FILE_IN_USE", "MPI_ERR_FILE",
        "MPI_ERR_INFO_KEY", "MPI_ERR_INFO_NOKEY", "MPI_ERR_INFO_VALUE", "MPI_ERR_INFO",
        "MPI_ERR_IO", "MPI_ERR_KEYVAL", "MPI_ERR_LOCKTYPE", "MPI_ERR_NAME", "MPI_ERR_NO_MEM",
        "MPI_ERR_NOT_SAME", "MPI_ERR_NO_SPACE", "MPI_ERR_NO_SUCH_FILE", "MPI_ERR_PORT",
        "MPI_ERR_QUOTA", "MPI_ERR_READ_ONLY", "MPI_ERR_RMA_ATTACH", "MPI_ERR_RMA_CONFLICT",
        "MPI_ERR_RMA_RANGE", "MPI_ERR_RMA_SHARED", "MPI_ERR_RMA_SYNC", "MPI_ERR_SERVICE",
        "MPI_ERR_SIZE", "MPI_ERR_SPAWN", "MPI_ERR_UNSUPPORTED_DATAREP",
        "MPI_ERR_UNSUPPORTED_OPERATION", "MPI_ERR_WIN", "MPI_ERR_RMA_FLAVOR",
        "MPI_ERR_PROC_ABORTED", "MPI_ERR_VALUE_TOO_LARGE", "MPI_ERR_SESSION",
        "MPI_ERR_ERRHANDLER", "MPI_ERR_ABI"};
    if (c >= 0 && c < (int)(sizeof names / sizeof *names))
        return names[c];
    return "MPI_ERR_OTHER";
}

const char *ism_abi_class_text(int c)
{
    switch (c) {
    case MPI_SUCCESS: return "no error";
    case MPI_ERR_BUFFER: return "invalid buffer";
    case MPI_ERR_COUNT: return "invalid count";
    case MPI_ERR_TYPE: return "invalid datatype";
    case MPI_ERR_TAG: return "invalid tag";
    case MPI_ERR_COMM: return "invalid communicator";
    case MPI_ERR_RANK: return "invalid rank";
    case MPI_ERR_REQUEST: return "invalid request";
    case MPI_ERR_ROOT: return "invalid root";
    case MPI_ERR_OP: return "invalid reduction operation";
    case MPI_ERR_ARG: return "invalid argument";
    case MPI_ERR_TRUNCATE: return "message truncated: the receive buffer is too small";
    case MPI_ERR_INTERN: return "internal error";
    case MPI_ERR_PENDING: return "request pending";
    case MPI_ERR_IN_STATUS: return "error code in status";
    case MPI_ERR_NO_MEM: return "out of memory";
    case MPI_ERR_KEYVAL: return "invalid keyval";
    case MPI_ERR_INFO_KEY: return "invalid info key";
    case MPI_ERR_INFO_VALUE: return "invalid info value";
    case MPI_ERR_INFO_NOKEY: return "info key not found";
    case MPI_ERR_INFO: return "invalid info object";
    case MPI_ERR_NAME: return "invalid name";
    case MPI_ERR_ERRHANDLER: return "invalid error handler";
    case MPI_ERR_TOPOLOGY: return "invalid topology";
    case MPI_ERR_DIMS: return "invalid dimensions";
    case MPI_ERR_GROUP: return "invalid group";
    case MPI_ERR_UNKNOWN: return "unknown error";
    case MPI_ERR_NOT_SAME: return "arguments not the same on every process";
    case MPI_ERR_DISP: return "invalid displacement";
    case MPI_ERR_SIZE: return "invalid size";
    case MPI_ERR_VALUE_TOO_LARGE: return "value too large to fit in the output";
    case MPI_ERR_UNSUPPORTED_OPERATION: return "operation not supported by isthmus yet";
    case MPI_ERR_SESSION: return "invalid session";
    default: return "other error";
    }
}

static int error_v(ism_comm *c, int code, const char *fn, const char *fmt, va_list ap)
{
    ism_comm *h = c ? c : &ism_comm_world;
    if (h->errh && h->errh->kind == 1)
        return code;
    if (h->errh && h->errh->kind == 3)
        return ism_abi_call_user_errh(h, code);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    char why[900];
    snprintf(why, sizeof why, "site %s rank %d: %s: %s (%s); aborting the job",
             ism_site_name(ism.lay.site), ism.grank, fn, msg, ism_abi_class_name(code));
    fprintf(stderr, "isthmus: %s\n", why);
    fflush(stderr);
    ism_core_abort(h, code ? code : 1, why);
}

/* Also called by the fast path, which holds no core lock under MPI_THREAD_MULTIPLE: the
 * handler is looked up, and a program's handler runs, holding it. */
int ism_abi_error(ism_comm *c, int code, const char *fn, const char *fmt, ...)
{
    int mt = ism_mt_locks();
    if (mt)
        ism_mt_lock();
    va_list ap;
    va_start(ap, fmt);
    int rc = error_v(c, code, fn, fmt, ap);
    va_end(ap);
    if (mt)
        ism_mt_unlock();
    return rc;
}

int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int prov = 0;
    if (world_state) {
        fprintf(stderr, "isthmus: MPI_Init called %s\n",
                world_state == 1 ? "twice" : "after MPI_Finalize");
        return MPI_ERR_OTHER;
    }
    int rc = ism_abi_runtime_start(argc, argv, required, &prov, "MPI_Init");
    if (rc)
        return rc;
    world_state = 1;
    if (provided)
        *provided = prov;
    return MPI_SUCCESS;
}
ISM_PMPI(Init_thread)

int PMPI_Init(int *argc, char ***argv)
{
    int prov;
    return PMPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &prov);
}
ISM_PMPI(Init)

int PMPI_Finalize(void)
{
    if (world_state != 1) {
        fprintf(stderr, "isthmus: MPI_Finalize called %s\n",
                world_state ? "twice" : "before MPI_Init");
        fflush(stderr);
        exit(1);
    }
    /* MPI 3.1 §8.7.1: Finalize first frees MPI_COMM_SELF's attributes, running their
     * delete callbacks in the reverse order of setting (our lists are LIFO), while MPI
     * is still fully usable; programs use this as an at-exit hook. */
    ism_abi_attr_delete_all(ism_abi_comm(MPI_COMM_SELF));
    world_state = 2;
    return ism_abi_runtime_stop(); /* open sessions keep the runtime up */
}
ISM_PMPI(Finalize)

int PMPI_Initialized(int *flag)
{
    *flag = world_state >= 1; /* the world model only (MPI 4.0 §11.2.1) */
    return MPI_SUCCESS;
}
ISM_PMPI(Initialized)

int PMPI_Finalized(int *flag)
{
    *flag = world_state == 2;
    return MPI_SUCCESS;
}
ISM_PMPI(Finalized)

int PMPI_Query_thread(int *provided)
{
    *provided = ism.thread_level;
    return MPI_SUCCESS;
}
ISM_PMPI(Query_thread)

int PMPI_Is_thread_main(int *flag)
{
    *flag = 1;
    return MPI_SUCCESS;
}
ISM_PMPI(Is_thread_main)

int PMPI_Abort(MPI_Comm comm, int errorcode)
{
    char why[256];
    snprintf(why, sizeof why, "site %s rank %d called MPI_Abort (error code %d)",
             ism_site_name(ism.lay.site), ism.grank, errorcode);
    fprintf(stderr, "isthmus: %s; stopping every site\n", why);
    fflush(stderr);
    ism_core_abort(ism_abi_comm(comm), errorcode, why);
}
ISM_PMPI(Abort)

int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    ism_comm *c = ism_abi_comm(comm);
    if (ISM_UNLIKELY(!c || !ism.initialized))
        return c ? ism_abi_check_init("MPI_Comm_rank")
                 : ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_rank", "invalid communicator");
    *rank = c->rank;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_rank)

int PMPI_Comm_size(MPI_Comm comm, int *size)
{
    ism_comm *c = ism_abi_comm(comm);
    if (ISM_UNLIKELY(!c || !ism.initialized))
        return c ? ism_abi_check_init("MPI_Comm_size")
                 : ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_size", "invalid communicator");
    *size = ISM_LIKELY(!c->is_inter) ? c->size : c->local_size;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_size)

int PMPI_Get_processor_name(char *name, int *resultlen)
{
    ISM_CHECK_INIT("MPI_Get_processor_name");
    snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", ism.procname);
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}
ISM_PMPI(Get_processor_name)

int PMPI_Get_version(int *version, int *subversion)
{
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}
ISM_PMPI(Get_version)

/* MPI 5.0 §20.3: the ABI this library implements; callable before MPI_Init, like
 * MPI_Get_version. The Fortran ABI's queries follow MPI_Abi_get_info. */
int PMPI_Abi_get_version(int *abi_major, int *abi_minor)
{
    *abi_major = MPI_ABI_VERSION;
    *abi_minor = MPI_ABI_SUBVERSION;
    return MPI_SUCCESS;
}
ISM_PMPI(Abi_get_version)

int PMPI_Abi_get_info(MPI_Info *info)
{
    char v[8];
    int rc = info ? PMPI_Info_create(info) : MPI_ERR_ARG;
    static const struct {
        const char *key;
        size_t size;
    } sizes[] = {{"mpi_aint_size", sizeof(MPI_Aint)},
                 {"mpi_count_size", sizeof(MPI_Count)},
                 {"mpi_offset_size", sizeof(MPI_Offset)}};
    for (size_t i = 0; !rc && i < sizeof sizes / sizeof *sizes; i++) {
        snprintf(v, sizeof v, "%zu", sizes[i].size);
        rc = PMPI_Info_set(*info, sizes[i].key, v);
    }
    return rc ? ism_abi_error(NULL, rc, "MPI_Abi_get_info", "could not build the info") : 0;
}
ISM_PMPI(Abi_get_info)

/* A predefined Fortran datatype's size in bytes as this process's vendor defines it (the
 * same MPI_Type_size reports), or 0 when the vendor has no such type. */
static int fortran_size(MPI_Datatype h)
{
    ism_dt *d = ism_abi_dt_any(h);
    return d && d->size > 0 && d->size <= INT_MAX ? (int)d->size : 0;
}

/* MPI 5.0 §20.3: the Fortran ABI this library was set up for. isthmus's Fortran bindings
 * pass the program's Fortran data to the vendor as the vendor's Fortran types, so the
 * sizes and the optional types are the vendor's, known once MPI_Init has loaded it;
 * before that nothing is known and the answer is MPI_INFO_NULL (which MPI allows). */
int PMPI_Abi_get_fortran_info(MPI_Info *info)
{
    if (!info)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Abi_get_fortran_info", "info is NULL");
    static const struct {
        const char *name;
        MPI_Datatype h;
        int optional; /* a _supported key; else a _size key */
    } types[] = {
        {"logical", MPI_LOGICAL, 0},     {"integer", MPI_INTEGER, 0},
        {"real", MPI_REAL, 0},           {"double_precision", MPI_DOUBLE_PRECISION, 0},
        {"logical1", MPI_LOGICAL1, 1},   {"logical2", MPI_LOGICAL2, 1},
        {"logical4", MPI_LOGICAL4, 1},   {"logical8", MPI_LOGICAL8, 1},
        {"logical16", MPI_LOGICAL16, 1}, {"integer1", MPI_INTEGER1, 1},
        {"integer2", MPI_INTEGER2, 1},   {"integer4", MPI_INTEGER4, 1},
        {"integer8", MPI_INTEGER8, 1},   {"integer16", MPI_INTEGER16, 1},
        {"real2", MPI_REAL2, 1},         {"real4", MPI_REAL4, 1},
        {"real8", MPI_REAL8, 1},         {"real16", MPI_REAL16, 1},
        {"complex4", MPI_COMPLEX4, 1},   {"complex8", MPI_COMPLEX8, 1},
        {"complex16", MPI_COMPLEX16, 1}, {"complex32", MPI_COMPLEX32, 1},
        {"double_complex", MPI_DOUBLE_COMPLEX, 1},
    };
    *info = MPI_INFO_NULL;
    /* a vendor built without Fortran has none of the four default types */
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!types[i].optional && (!ism.initialized || !fortran_size(types[i].h)))
            return MPI_SUCCESS;
    int rc = PMPI_Info_create(info);
    for (size_t i = 0; !rc && i < sizeof types / sizeof *types; i++) {
        char key[48], v[16];
        int size = fortran_size(types[i].h);
        snprintf(key, sizeof key, "mpi_%s_%s", types[i].name,
                 types[i].optional ? "supported" : "size");
        snprintf(v, sizeof v, "%d", size);
        rc = PMPI_Info_set(*info, key, types[i].optional ? (size ? "true" : "false") : v);
    }
    return rc ? ism_abi_error(NULL, rc, "MPI_Abi_get_fortran_info", "could not build the info")
              : MPI_SUCCESS;
}
ISM_PMPI(Abi_get_fortran_info)

int PMPI_Get_library_version(char *version, int *resultlen)
{
    char vendor[4096] = "";
    int vl = 0;
    if (ism.be && ism.initialized)
        ism.be->get_library_version(vendor, &vl);
    char *nl = strchr(vendor, '\n');
    if (nl)
        *nl = 0;
    snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
             "isthmus 0.1 (MPI %d.%d standard ABI), %d site(s), site MPI: %s", MPI_VERSION,
             MPI_SUBVERSION, ism.lay.nsites, vendor[0] ? vendor : "not initialized");
    *resultlen = (int)strlen(version);
    return MPI_SUCCESS;
}
ISM_PMPI(Get_library_version)

double PMPI_Wtime(void) { return ism.be ? ism.be->wtime() : 0.0; }
ISM_PMPI(Wtime)

double PMPI_Wtick(void) { return ism.be ? ism.be->wtick() : 1e-9; }
ISM_PMPI(Wtick)

/* ---- names ---- */

int PMPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    ism_comm *c = ism_abi_comm(comm);
    if (!c && comm != MPI_COMM_NULL)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_get_name", "invalid communicator");
    /* the null handle has its name, as in MPICH (MPI 4.1) */
    snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", c ? c->name : "MPI_COMM_NULL");
    *resultlen = (int)strlen(comm_name);
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_get_name)

int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_set_name", "invalid communicator");
    snprintf(c->name, sizeof c->name, "%s", comm_name);
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_set_name)

/* ---- memory for RMA and fast transfers: plain heap memory (no registration yet) ---- */

int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    (void)info;
    if (size < 0)
        return ism_abi_error(NULL, MPI_ERR_SIZE, "MPI_Alloc_mem", "size %ld is negative",
                             (long)size);
    void *p = malloc(size ? (size_t)size : 1);
    if (!p)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Alloc_mem",
                             "cannot allocate %ld bytes", (long)size);
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}
ISM_PMPI(Alloc_mem)

int PMPI_Free_mem(void *base)
{
    free(base);
    return MPI_SUCCESS;
}
ISM_PMPI(Free_mem)
