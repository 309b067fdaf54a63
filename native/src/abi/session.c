/* session.c (abi): MPI-4 sessions (MPI 4.0 §11.3): MPI_Session_init/finalize, their info,
 * process sets and session error handlers.
 *
 * isthmus implements sessions itself, on top of the vendor's MPI_Init: a session is one
 * more user of the runtime (abi/env.c), which the first of MPI_Init and MPI_Session_init
 * starts and the last of MPI_Finalize and MPI_Session_finalize stops. The vendor MPI (Open
 * MPI 4.1 has no sessions) is initialized once. Process sets, compared without regard to
 * case as MPICH does:
 *   mpi://WORLD            every rank of every site
 *   mpi://SELF             the calling process
 *   isthmus://SITE         the ranks of the caller's site
 *   isthmus://site/<name>  the ranks of the named site, one per site (A, B, ... by default)
 * Each has the info key "mpi_size"; the isthmus ones also "isthmus_site" (the site's name).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "abi.h"

typedef struct session {
    ism_errh *errh;
    int thread_level; /* the level the runtime provides */
    ism_bbuf *bbuf;   /* MPI_Session_attach_buffer's (abi/buffers.c), or NULL */
} session;

/* The open sessions: a handle is valid only while listed here. */
static session **open_s;
static int nopen, capopen;

static session *session_of(MPI_Session h)
{
    for (int i = 0; i < nopen; i++)
        if ((MPI_Session)open_s[i] == h)
            return open_s[i];
    return NULL;
}

/* Raise code on error handler e; handle is what a user function receives. */
static int raise_on(ism_errh *e, void *handle, int code, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int raise_on(ism_errh *e, void *handle, int code, const char *fn, const char *fmt, ...)
{
    if (e && e->kind == 1)
        return code;
    if (e && e->kind == 3) {
        ism_abi_errh_call(e, handle, &code);
        return code;
    }
    char msg[512], why[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ism.initialized && !ism.finalized)
        snprintf(why, sizeof why, "site %s rank %d: %s: %s (%s); aborting the job",
                 ism_site_name(ism.lay.site), ism.grank, fn, msg, ism_abi_class_name(code));
    else
        snprintf(why, sizeof why, "%s: %s (%s); aborting", fn, msg, ism_abi_class_name(code));
    fprintf(stderr, "isthmus: %s\n", why);
    fflush(stderr);
    if (!ism.initialized || ism.finalized)
        exit(1);
    ism_core_abort(NULL, code ? code : 1, why);
}

#define SESSION_ARG(fn, h, out)                                                                    \
    session *out = session_of(h);                                                                  \
    if (!out)                                                                                      \
        return ism_abi_error(NULL, MPI_ERR_SESSION, fn, "invalid session");

static int session_error(session *s, int code, const char *fn, const char *msg, const char *arg)
{
    MPI_Session h = (MPI_Session)s;
    return raise_on(s->errh, &h, code, fn, "%s%s", msg, arg ? arg : "");
}

/* ---- process sets ---- */

enum { PSET_WORLD, PSET_SELF, PSET_SITE, PSET_FIRST_SITE };

static int npsets(void) { return PSET_FIRST_SITE + ism.lay.nsites; }

static void pset_name(int i, char *buf, size_t n)
{
    if (i == PSET_WORLD)
        snprintf(buf, n, "mpi://WORLD");
    else if (i == PSET_SELF)
        snprintf(buf, n, "mpi://SELF");
    else if (i == PSET_SITE)
        snprintf(buf, n, "isthmus://SITE");
    else
        snprintf(buf, n, "isthmus://site/%s", ism_site_name(i - PSET_FIRST_SITE));
}

static int pset_find(const char *name)
{
    char buf[MPI_MAX_PSET_NAME_LEN];
    for (int i = 0; i < npsets(); i++) {
        pset_name(i, buf, sizeof buf);
        if (!strcasecmp(buf, name))
            return i;
    }
    return -1;
}

/* Global ranks [*lo, *hi) of pset i, or the caller alone. */
static void pset_range(int i, int *lo, int *hi)
{
    int site = i == PSET_SITE ? ism.lay.site : i - PSET_FIRST_SITE;
    if (i == PSET_WORLD) {
        *lo = 0;
        *hi = ism.lay.gsize;
    } else if (i == PSET_SELF) {
        *lo = ism.grank;
        *hi = ism.grank + 1;
    } else {
        *lo = ism.lay.site_off[site];
        *hi = ism.lay.site_off[site + 1];
    }
}

static const char *level_name(int level)
{
    return level == MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
           : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
           : level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                            : "MPI_THREAD_SINGLE";
}

/* The thread level a session's info asks for ("thread_level", MPI 4.0 §11.3.1). */
static int requested_level(MPI_Info info, int *level)
{
    char v[64];
    int flag = 0;
    *level = MPI_THREAD_SINGLE;
    if (info == MPI_INFO_NULL)
        return 0;
    if (PMPI_Info_get(info, "thread_level", (int)sizeof v - 1, v, &flag) || !flag)
        return 0;
    const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                          MPI_THREAD_MULTIPLE};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (!strcasecmp(v, level_name(levels[i]))) {
            *level = levels[i];
            return 0;
        }
    return -1;
}

/* ---- sessions ---- */

int PMPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session_out)
{
    const char *fn = "MPI_Session_init";
    ism_errh *e = ism_abi_errh(errhandler);
    if (!e)
        return raise_on(NULL, NULL, MPI_ERR_ARG, fn, "invalid error handler");
    if (!session_out)
        return raise_on(e, NULL, MPI_ERR_ARG, fn, "the session argument is NULL");
    *session_out = MPI_SESSION_NULL;
    int required;
    if (requested_level(info, &required))
        return raise_on(e, session_out, MPI_ERR_ARG, fn,
                        "info key thread_level is not one of MPI_THREAD_SINGLE, "
                        "MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE");
    if (nopen == capopen) {
        int cap = capopen ? 2 * capopen : 4;
        session **n = realloc(open_s, sizeof *n * (size_t)cap);
        if (!n)
            return raise_on(e, session_out, MPI_ERR_NO_MEM, fn, "out of memory");
        open_s = n;
        capopen = cap;
    }
    session *s = calloc(1, sizeof *s);
    if (!s)
        return raise_on(e, session_out, MPI_ERR_NO_MEM, fn, "out of memory");
    int prov = 0, rc = ism_abi_runtime_start(NULL, NULL, required, &prov, fn);
    if (rc) {
        free(s);
        return raise_on(e, session_out, rc, fn, "starting the MPI runtime failed");
    }
    s->errh = e;
    s->thread_level = prov;
    open_s[nopen++] = s;
    *session_out = (MPI_Session)s;
    return MPI_SUCCESS;
}
ISM_PMPI(Session_init)

/* Communicators derived from the session stay usable until they are freed; the runtime
 * ends when the last session and the world model have finished. */
int PMPI_Session_finalize(MPI_Session *session_io)
{
    if (!session_io)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Session_finalize", "NULL argument");
    SESSION_ARG("MPI_Session_finalize", *session_io, s);
    for (int i = 0; i < nopen; i++)
        if (open_s[i] == s) {
            open_s[i] = open_s[--nopen];
            break;
        }
    ism_errh *e = s->errh;
    free(s);
    *session_io = MPI_SESSION_NULL;
    int rc = ism_abi_runtime_stop();
    if (rc)
        return raise_on(e, session_io, rc, "MPI_Session_finalize",
                        "finalizing the MPI runtime failed");
    return MPI_SUCCESS;
}
ISM_PMPI(Session_finalize)

int PMPI_Session_get_info(MPI_Session session_h, MPI_Info *info_used)
{
    SESSION_ARG("MPI_Session_get_info", session_h, s);
    if (!info_used)
        return session_error(s, MPI_ERR_ARG, "MPI_Session_get_info", "NULL argument", NULL);
    int rc = PMPI_Info_create(info_used);
    if (!rc)
        rc = PMPI_Info_set(*info_used, "thread_level", level_name(s->thread_level));
    return rc;
}
ISM_PMPI(Session_get_info)

int PMPI_Session_get_num_psets(MPI_Session session_h, MPI_Info info, int *npset_names)
{
    (void)info; /* MPI 4.0 defines no keys for it */
    SESSION_ARG("MPI_Session_get_num_psets", session_h, s);
    if (!npset_names)
        return session_error(s, MPI_ERR_ARG, "MPI_Session_get_num_psets", "NULL argument", NULL);
    *npset_names = npsets();
    return MPI_SUCCESS;
}
ISM_PMPI(Session_get_num_psets)

/* *pset_len 0: the length needed, terminator included; else the name, cut to fit. */
int PMPI_Session_get_nth_pset(MPI_Session session_h, MPI_Info info, int n, int *pset_len,
                              char *name)
{
    (void)info;
    const char *fn = "MPI_Session_get_nth_pset";
    SESSION_ARG(fn, session_h, s);
    if (n < 0 || n >= npsets()) {
        char num[64];
        snprintf(num, sizeof num, "%d is outside 0..%d", n, npsets() - 1);
        return session_error(s, MPI_ERR_ARG, fn, "process set number ", num);
    }
    if (!pset_len || *pset_len < 0 || (*pset_len > 0 && !name))
        return session_error(s, MPI_ERR_ARG, fn, "invalid pset_len or pset_name", NULL);
    char buf[MPI_MAX_PSET_NAME_LEN];
    pset_name(n, buf, sizeof buf);
    if (*pset_len == 0)
        *pset_len = (int)strlen(buf) + 1;
    else
        snprintf(name, (size_t)*pset_len, "%s", buf);
    return MPI_SUCCESS;
}
ISM_PMPI(Session_get_nth_pset)

/* MPI_ERR_ARG for an unknown name, as MPICH does. */
static int pset_arg(session *s, const char *fn, const char *name, int *idx)
{
    if (!name)
        return session_error(s, MPI_ERR_ARG, fn, "the process set name is NULL", NULL);
    *idx = pset_find(name);
    if (*idx < 0)
        return session_error(s, MPI_ERR_ARG, fn,
                             "no such process set (MPI_Session_get_nth_pset lists them): ", name);
    return MPI_SUCCESS;
}

int PMPI_Session_get_pset_info(MPI_Session session_h, const char *pset, MPI_Info *info)
{
    const char *fn = "MPI_Session_get_pset_info";
    SESSION_ARG(fn, session_h, s);
    int i, rc = pset_arg(s, fn, pset, &i);
    if (rc)
        return rc;
    if (!info)
        return session_error(s, MPI_ERR_ARG, fn, "NULL info argument", NULL);
    int lo, hi;
    pset_range(i, &lo, &hi);
    char size[32];
    snprintf(size, sizeof size, "%d", hi - lo);
    rc = PMPI_Info_create(info);
    if (!rc)
        rc = PMPI_Info_set(*info, "mpi_size", size);
    if (!rc && i >= PSET_SITE)
        rc = PMPI_Info_set(*info, "isthmus_site",
                           ism_site_name(i == PSET_SITE ? ism.lay.site : i - PSET_FIRST_SITE));
    return rc;
}
ISM_PMPI(Session_get_pset_info)

int PMPI_Group_from_session_pset(MPI_Session session_h, const char *pset, MPI_Group *newgroup)
{
    const char *fn = "MPI_Group_from_session_pset";
    SESSION_ARG(fn, session_h, s);
    int i, rc = pset_arg(s, fn, pset, &i);
    if (rc)
        return rc;
    if (!newgroup)
        return session_error(s, MPI_ERR_ARG, fn, "NULL group argument", NULL);
    int lo, hi;
    pset_range(i, &lo, &hi);
    int *g = malloc(sizeof(int) * (size_t)(hi - lo));
    for (int r = lo; g && r < hi; r++)
        g[r - lo] = r;
    ism_group *grp = g ? ism_group_new(hi - lo, g) : NULL;
    free(g);
    if (!grp)
        return session_error(s, MPI_ERR_NO_MEM, fn, "out of memory building the group", NULL);
    if (grp->size > 0) /* not the shared empty group */
        grp->session_bbuf = &s->bbuf;
    *newgroup = (MPI_Group)grp;
    return MPI_SUCCESS;
}
ISM_PMPI(Group_from_session_pset)

/* The session's buffer slot, for abi/buffers.c; NULL for an invalid handle. */
ism_bbuf **ism_abi_session_bbuf(MPI_Session h)
{
    session *s = session_of(h);
    return s ? &s->bbuf : NULL;
}

/* ---- error handlers ---- */

int PMPI_Session_create_errhandler(MPI_Session_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    /* before MPI_Session_init too: the handler is that call's argument */
    return ism_abi_errh_create("MPI_Session_create_errhandler",
                               (void (*)(void *, int *, ...))fn, errhandler);
}
ISM_PMPI(Session_create_errhandler)

int PMPI_Session_set_errhandler(MPI_Session session_h, MPI_Errhandler errhandler)
{
    SESSION_ARG("MPI_Session_set_errhandler", session_h, s);
    ism_errh *e = ism_abi_errh(errhandler);
    if (!e)
        return session_error(s, MPI_ERR_ARG, "MPI_Session_set_errhandler",
                             "invalid error handler", NULL);
    s->errh = e;
    return MPI_SUCCESS;
}
ISM_PMPI(Session_set_errhandler)

int PMPI_Session_get_errhandler(MPI_Session session_h, MPI_Errhandler *errhandler)
{
    SESSION_ARG("MPI_Session_get_errhandler", session_h, s);
    if (!errhandler)
        return session_error(s, MPI_ERR_ARG, "MPI_Session_get_errhandler", "NULL argument", NULL);
    *errhandler = ism_abi_errh_handle(s->errh);
    return MPI_SUCCESS;
}
ISM_PMPI(Session_get_errhandler)

int PMPI_Session_call_errhandler(MPI_Session session_h, int errorcode)
{
    SESSION_ARG("MPI_Session_call_errhandler", session_h, s);
    session_error(s, errorcode, "MPI_Session_call_errhandler", "error raised by the program",
                  NULL);
    return MPI_SUCCESS;
}
ISM_PMPI(Session_call_errhandler)

/* For abi/comm_from_group.c: errors of the constructors go to their errhandler argument
 * (MPI 4.0 §7.4.2); a user function gets MPI_COMM_NULL. */
int ism_abi_raise_errh_on(ism_errh *e, void *handle, int code, const char *fn, const char *msg)
{
    return raise_on(e, handle, code, fn, "%s", msg);
}

int ism_abi_raise_errh(ism_errh *e, int code, const char *fn, const char *msg)
{
    MPI_Comm none = MPI_COMM_NULL;
    return raise_on(e, &none, code, fn, "%s", msg);
}
