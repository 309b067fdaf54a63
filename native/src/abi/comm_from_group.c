/* comm_from_group.c (abi): the sessions model's communicator constructors, which need no
 * parent communicator (MPI 4.0 §7.4.2 MPI_Comm_create_from_group, §7.6.2
 * MPI_Intercomm_create_from_groups): argument checks, then core/comm_from_group.c. The
 * errhandler argument goes to the new communicator and also receives the constructor's
 * own errors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"

static int raise(ism_errh *e, int code, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int raise(ism_errh *e, int code, const char *fn, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ism_abi_raise_errh(e, code, fn, msg);
}

static int tag_arg(ism_errh *e, const char *fn, const char *stringtag)
{
    if (!stringtag)
        return raise(e, MPI_ERR_ARG, fn, "the string tag is NULL");
    if (strlen(stringtag) >= MPI_MAX_STRINGTAG_LEN)
        return raise(e, MPI_ERR_ARG, fn, "the string tag is longer than %d characters",
                     MPI_MAX_STRINGTAG_LEN - 1);
    return MPI_SUCCESS;
}

/* The new communicator gets the error handler and keeps the info as hints. */
static int hand_out(const char *fn, ism_errh *e, ism_comm *n, int rc, MPI_Info info,
                    MPI_Comm *newcomm)
{
    if (rc) {
        *newcomm = MPI_COMM_NULL;
        return raise(e, rc, fn, "creating the communicator failed");
    }
    n->errh = e;
    ism_comm_spanning_vcoll(n);
    *newcomm = (MPI_Comm)n;
    return info == MPI_INFO_NULL ? MPI_SUCCESS : PMPI_Comm_set_info(*newcomm, info);
}

int PMPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                MPI_Errhandler errhandler, MPI_Comm *newcomm)
{
    const char *fn = "MPI_Comm_create_from_group";
    ISM_CHECK_INIT(fn);
    ism_errh *e = ism_abi_errh(errhandler);
    if (!e)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "invalid error handler");
    ism_group *g = ism_abi_group(group);
    int rc = tag_arg(e, fn, stringtag);
    if (rc)
        return rc;
    if (!g)
        return raise(e, MPI_ERR_GROUP, fn, "invalid group");
    if (g->rank == MPI_UNDEFINED)
        return raise(e, MPI_ERR_GROUP, fn, "the calling process is not a member of the group "
                     "(only members call it)");
    ism_comm *n = NULL;
    rc = ism_comm_from_group(g, stringtag, &n);
    if (n)
        n->session_bbuf = g->session_bbuf;
    return hand_out(fn, e, n, rc, info, newcomm);
}
ISM_PMPI(Comm_create_from_group)

int PMPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                      MPI_Group remote_group, int remote_leader,
                                      const char *stringtag, MPI_Info info,
                                      MPI_Errhandler errhandler, MPI_Comm *newintercomm)
{
    const char *fn = "MPI_Intercomm_create_from_groups";
    ISM_CHECK_INIT(fn);
    ism_errh *e = ism_abi_errh(errhandler);
    if (!e)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "invalid error handler");
    ism_group *lg = ism_abi_group(local_group), *rg = ism_abi_group(remote_group);
    int rc = tag_arg(e, fn, stringtag);
    if (rc)
        return rc;
    if (!lg || !rg)
        return raise(e, MPI_ERR_GROUP, fn, "invalid %s group", lg ? "remote" : "local");
    if (lg->rank == MPI_UNDEFINED)
        return raise(e, MPI_ERR_GROUP, fn, "the calling process is not a member of the local "
                     "group");
    if (local_leader < 0 || local_leader >= lg->size)
        return raise(e, MPI_ERR_RANK, fn, "local leader %d is not in the local group (size %d)",
                     local_leader, lg->size);
    if (remote_leader < 0 || remote_leader >= rg->size)
        return raise(e, MPI_ERR_RANK, fn, "remote leader %d is not in the remote group "
                     "(size %d)", remote_leader, rg->size);
    for (int i = 0; i < rg->size; i++)
        if (ism_group_index(lg, rg->g[i]) != ISM_UNDEFINED)
            return raise(e, MPI_ERR_GROUP, fn, "the groups overlap (global rank %d is in both)",
                         rg->g[i]);
    ism_comm *n = NULL;
    rc = ism_intercomm_from_groups(lg, local_leader, rg, remote_leader, stringtag, &n);
    return hand_out(fn, e, n, rc, info, newintercomm);
}
ISM_PMPI(Intercomm_create_from_groups)
