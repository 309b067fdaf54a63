/* comm.c (abi): creating, comparing and freeing intracommunicators: dup (with attribute
 * copying), split, split_type, create, create_group, free (with attribute deletion).
 * Every creation agrees on a new context id across all sites (core/comm.c).
 */
#include <string.h>

#include "abi.h"
#include "../coll/coll.h"

static int comm_lookup(const char *fn, MPI_Comm comm, ism_comm **c)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    return MPI_SUCCESS;
}

static int comm_arg(const char *fn, MPI_Comm comm, ism_comm **c)
{
    int rc = comm_lookup(fn, comm, c);
    if (!rc)
        ism_nbc_drain(*c); /* constructors are collectives too: keep the order */
    return rc;
}

/* Constructors isthmus offers on intracommunicators only, so far. drain = 0 for
 * MPI_Comm_create_group, which is collective over the group only, not over comm: it may
 * run while a nonblocking collective on comm is pending at some members and not yet
 * started at others (MPICH's comm/comm_create_group_idup). */
static int intra_arg_d(const char *fn, MPI_Comm comm, ism_comm **c, int drain)
{
    int rc = drain ? comm_arg(fn, comm, c) : comm_lookup(fn, comm, c);
    if (!rc && (*c)->is_inter)
        return ism_abi_error(*c, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                             "this constructor is not supported on intercommunicators yet");
    return rc;
}

static int intra_arg(const char *fn, MPI_Comm comm, ism_comm **c)
{
    return intra_arg_d(fn, comm, c, 1);
}

/* A new communicator inherits the parent's error handler (MPI 4.1 §7.4.2: dup does; we
 * follow MPICH and Open MPI, which do it for every constructor). */
static int hand_out(const char *fn, ism_comm *parent, ism_comm *n, int rc, MPI_Comm *newcomm)
{
    if (rc) {
        *newcomm = MPI_COMM_NULL;
        return ism_abi_error(parent, rc, fn, "creating the communicator failed");
    }
    if (n) {
        n->errh = parent->errh;
        n->session_bbuf = parent->session_bbuf; /* derived from the same session */
        ism_comm_spanning_vcoll(n);
    }
    *newcomm = n ? (MPI_Comm)n : MPI_COMM_NULL;
    return MPI_SUCCESS;
}

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    ism_comm *c, *n = NULL;
    int rc = comm_arg("MPI_Comm_dup", comm, &c);
    if (rc)
        return rc;
    rc = c->is_inter ? ism_intercomm_dup(c, &n) : ism_comm_dup(c, &n);
    if (!rc && (rc = ism_abi_topo_copy(c, n)) != MPI_SUCCESS) {
        ism_abi_topo_free(n);
        ism_comm_free(n);
        return ism_abi_error(c, rc, "MPI_Comm_dup", "copying the topology failed");
    }
    if (!rc && (rc = ism_abi_attr_copy(c, n)) != MPI_SUCCESS) {
        ism_abi_topo_free(n);
        ism_comm_free(n);
        *newcomm = MPI_COMM_NULL; /* as MPICH and Open MPI do */
        return ism_abi_error(c, rc, "MPI_Comm_dup", "an attribute copy callback failed");
    }
    return hand_out("MPI_Comm_dup", c, n, rc, newcomm);
}
ISM_PMPI(Comm_dup)

int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup(comm, newcomm);
    if (rc || info == MPI_INFO_NULL)
        return rc;
    return PMPI_Comm_set_info(*newcomm, info); /* kept, not interpreted */
}
ISM_PMPI(Comm_dup_with_info)

/* MPI_Comm_idup runs MPI_Comm_dup as a nonblocking collective (core/nbc.c): it queues
 * behind the collectives already started on comm, agrees on its context id in the space
 * for concurrent agreements (core/comm.c) and duplicates the vendor communicators with
 * the vendor's own MPI_Comm_idup, so it yields wherever it would wait. Several idups on
 * overlapping communicators may therefore be pending in any order (MPICH's
 * comm/comm_idup_overlap), and *newcomm is written when the request completes. The
 * info is copied at the call, as the program may free it right after. */
typedef struct {
    MPI_Comm comm;
    MPI_Comm *newcomm;
    MPI_Info info;
} a_idup;

static int run_idup(void *p)
{
    a_idup *a = p;
    int rc = PMPI_Comm_dup(a->comm, a->newcomm);
    if (!rc && a->info != MPI_INFO_NULL)
        rc = PMPI_Comm_set_info(*a->newcomm, a->info);
    if (a->info != MPI_INFO_NULL)
        PMPI_Info_free(&a->info);
    return rc;
}

static int idup(const char *fn, MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                MPI_Request *request)
{
    ISM_CHECK_INIT(fn);
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    if (!newcomm)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "newcomm is NULL");
    if (!request)
        return ism_abi_error(c, MPI_ERR_REQUEST, fn, "the request argument is NULL");
    a_idup a = {comm, newcomm, MPI_INFO_NULL};
    if (info != MPI_INFO_NULL) {
        int rc = PMPI_Info_dup(info, &a.info);
        if (rc)
            return rc;
    }
    ism_nbc_next_creates = 1; /* see ism_nbc_settle_creations */
    int rc = ism_abi_nbc_start(fn, comm, run_idup, &a, sizeof a, request);
    ism_nbc_next_creates = 0;
    if (rc && a.info != MPI_INFO_NULL)
        PMPI_Info_free(&a.info);
    return rc;
}

int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    return idup("MPI_Comm_idup", comm, MPI_INFO_NULL, newcomm, request);
}
ISM_PMPI(Comm_idup)

int PMPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                             MPI_Request *request)
{
    return idup("MPI_Comm_idup_with_info", comm, info, newcomm, request);
}
ISM_PMPI(Comm_idup_with_info)

int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    ism_comm *c, *n = NULL;
    int rc = comm_arg("MPI_Comm_split", comm, &c);
    if (rc)
        return rc;
    if (color < 0 && color != MPI_UNDEFINED)
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Comm_split",
                             "color %d is negative (use MPI_UNDEFINED to opt out)", color);
    color = color == MPI_UNDEFINED ? -1 : color;
    rc = c->is_inter ? ism_intercomm_split(c, color, key, &n) : ism_comm_split(c, color, key, &n);
    return hand_out("MPI_Comm_split", c, n, rc, newcomm);
}
ISM_PMPI(Comm_split)

/* The one hardware resource isthmus knows is the node ("mpi_shared_memory", MPI 4.0
 * §7.4.2): MPI_COMM_TYPE_HW_GUIDED splits by node when the info asks for it and gives
 * MPI_COMM_NULL otherwise (no key, or a resource we cannot name); HW_UNGUIDED splits by
 * node if that is a proper subset and names the resource in the info argument. */
#define HW_KEY "mpi_hw_resource_type"
#define HW_NODE "mpi_shared_memory"

static int guided_node(MPI_Info info)
{
    char v[64] = "";
    int flag = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, HW_KEY, (int)sizeof v - 1, v, &flag))
        return 0;
    return flag && strcmp(v, HW_NODE) == 0;
}

int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    ism_comm *c, *n = NULL;
    int rc = intra_arg("MPI_Comm_split_type", comm, &c);
    if (rc)
        return rc;
    int type;
    switch (split_type) {
    case MPI_UNDEFINED: type = 0; break;
    case MPI_COMM_TYPE_SHARED: type = ISM_SPLIT_NODE; break;
    case ISTHMUS_COMM_TYPE_SITE: type = ISM_SPLIT_SITE; break;
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_RESOURCE_GUIDED: type = guided_node(info) ? ISM_SPLIT_NODE : 0; break;
    case MPI_COMM_TYPE_HW_UNGUIDED: type = ISM_SPLIT_NODE; break;
    default:
        return ism_abi_error(c, MPI_ERR_ARG, "MPI_Comm_split_type", "unknown split type %d",
                             split_type);
    }
    rc = ism_comm_split_type(c, type, key, &n);
    if (!rc && n && split_type == MPI_COMM_TYPE_HW_UNGUIDED) {
        if (n->size == c->size) { /* the node is the whole communicator: no subset */
            ism_comm_free(n);
            n = NULL;
        } else if (info != MPI_INFO_NULL) {
            PMPI_Info_set(info, HW_KEY, HW_NODE);
        }
    }
    return hand_out("MPI_Comm_split_type", c, n, rc, newcomm);
}
ISM_PMPI(Comm_split_type)

/* No process of an isthmus job was spawned (its sites and ranks are fixed at launch), so
 * none has a parent. */
int PMPI_Comm_get_parent(MPI_Comm *parent)
{
    ISM_CHECK_INIT("MPI_Comm_get_parent");
    if (!parent)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Comm_get_parent", "parent is NULL");
    *parent = MPI_COMM_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_get_parent)

/* MPI 4.1: the hardware resources the calling process can split by, as an info object;
 * for isthmus the node alone, under the key MPI_COMM_TYPE_HW_GUIDED takes. */
int PMPI_Get_hw_resource_info(MPI_Info *hw_info)
{
    ISM_CHECK_INIT("MPI_Get_hw_resource_info");
    if (!hw_info)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Get_hw_resource_info", "hw_info is NULL");
    int rc = PMPI_Info_create(hw_info);
    return rc ? rc : PMPI_Info_set(*hw_info, HW_KEY, HW_NODE);
}
ISM_PMPI(Get_hw_resource_info)

/* The group must be a subgroup of the (local) group of c. */
static int group_arg(const char *fn, ism_comm *c, MPI_Group group, ism_group **g)
{
    *g = ism_abi_group(group);
    if (!*g)
        return ism_abi_error(c, MPI_ERR_GROUP, fn, "invalid group");
    for (int i = 0; i < (*g)->size; i++) {
        int in = 0;
        if (!c->is_inter)
            in = c->c_of_g[(*g)->g[i]] >= 0;
        for (int j = 0; c->is_inter && !in && j < c->local_size; j++)
            in = c->local_g[j] == (*g)->g[i];
        if (!in)
            return ism_abi_error(c, MPI_ERR_GROUP, fn,
                                 "the group has a process that is not in the communicator%s",
                                 c->is_inter ? "'s local group" : "");
    }
    return MPI_SUCCESS;
}

int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    ism_comm *c, *n = NULL;
    ism_group *g;
    int rc = comm_arg("MPI_Comm_create", comm, &c);
    if (rc || (rc = group_arg("MPI_Comm_create", c, group, &g)))
        return rc;
    if (c->is_inter) /* the local group becomes `group`, in its order */
        rc = ism_intercomm_split(c, g->rank == ISM_UNDEFINED ? -1 : 0, g->rank, &n);
    else
        rc = ism_comm_create(c, g, &n);
    return hand_out("MPI_Comm_create", c, n, rc, newcomm);
}
ISM_PMPI(Comm_create)

int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    ism_comm *c, *n = NULL;
    ism_group *g;
    int rc = intra_arg_d("MPI_Comm_create_group", comm, &c, 0);
    if (rc || (rc = group_arg("MPI_Comm_create_group", c, group, &g)))
        return rc;
    if (tag < 0 || tag > ism_abi_tag_ub())
        return ism_abi_error(c, MPI_ERR_TAG, "MPI_Comm_create_group", "tag %d is outside 0..%d",
                             tag, ism_abi_tag_ub());
    if (g->rank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    rc = ism_comm_create_group(c, g, tag, &n);
    return hand_out("MPI_Comm_create_group", c, n, rc, newcomm);
}
ISM_PMPI(Comm_create_group)

int PMPI_Comm_free(MPI_Comm *comm)
{
    ISM_CHECK_INIT("MPI_Comm_free");
    ism_comm *c = comm ? ism_abi_comm(*comm) : NULL;
    if (!c || c->builtin)
        return ism_abi_error(c, MPI_ERR_COMM, "MPI_Comm_free",
                             c ? "predefined communicators cannot be freed"
                               : "invalid communicator");
    ism_nbc_drain(c);
    ism_coll_nb_drain(c); /* its collectives in flight use its contexts and vcoll */
    int rc = ism_abi_attr_delete_all(c);
    if (rc)
        return ism_abi_error(c, rc, "MPI_Comm_free", "an attribute delete callback failed");
    ism_abi_topo_free(c);
    ism_abi_hints_free(c);
    rc = ism_comm_free(c);
    *comm = MPI_COMM_NULL;
    return rc ? ism_abi_error(NULL, rc, "MPI_Comm_free", "freeing failed") : MPI_SUCCESS;
}
ISM_PMPI(Comm_free)

int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    ISM_CHECK_INIT("MPI_Comm_compare");
    ism_comm *a = ism_abi_comm(comm1), *b = ism_abi_comm(comm2);
    if (!a || !b)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_compare", "invalid communicator");
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    int same = a->size == b->size, perm = a->size == b->size;
    for (int r = 0; same && r < a->size; r++)
        same = a->g_of[r] == b->g_of[r];
    for (int r = 0; !same && perm && r < a->size; r++)
        perm = b->c_of_g[a->g_of[r]] >= 0;
    *result = same ? MPI_CONGRUENT : perm ? MPI_SIMILAR : MPI_UNEQUAL;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_compare)

int PMPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    ism_comm *c;
    int rc = comm_arg("MPI_Comm_test_inter", comm, &c);
    if (rc)
        return rc;
    *flag = c->is_inter;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_test_inter)

int PMPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    ism_comm *c;
    int rc = comm_arg("MPI_Comm_remote_size", comm, &c);
    if (rc)
        return rc;
    if (!c->is_inter)
        return ism_abi_error(c, MPI_ERR_COMM, "MPI_Comm_remote_size",
                             "not an intercommunicator");
    *size = c->size;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_remote_size)

int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                          int remote_leader, int tag, MPI_Comm *newintercomm)
{
    const char *fn = "MPI_Intercomm_create";
    ism_comm *l, *p = NULL, *n = NULL;
    int rc = comm_arg(fn, local_comm, &l);
    if (rc)
        return rc;
    if (l->is_inter)
        return ism_abi_error(l, MPI_ERR_COMM, fn, "the local communicator is an intercommunicator");
    if (local_leader < 0 || local_leader >= l->size)
        return ism_abi_error(l, MPI_ERR_RANK, fn, "local leader %d is not in the local "
                             "communicator (size %d)", local_leader, l->size);
    if (l->rank == local_leader) {
        p = ism_abi_comm(peer_comm);
        if (!p)
            return ism_abi_error(l, MPI_ERR_COMM, fn, "invalid peer communicator");
        if (remote_leader < 0 || remote_leader >= p->size || remote_leader == p->rank)
            return ism_abi_error(l, MPI_ERR_RANK, fn, "remote leader %d is not another rank "
                                 "of the peer communicator (size %d)", remote_leader, p->size);
    }
    if (tag < 0 || tag > ism_abi_tag_ub())
        return ism_abi_error(l, MPI_ERR_TAG, fn, "tag %d is outside 0..%d", tag,
                             ism_abi_tag_ub());
    /* only the leader uses the peer communicator; the others may pass anything */
    rc = ism_intercomm_create(l, local_leader, p ? p : l, remote_leader, tag, &n);
    return hand_out(fn, l, n, rc, newintercomm);
}
ISM_PMPI(Intercomm_create)

int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    ism_comm *c, *n = NULL;
    int rc = comm_arg("MPI_Intercomm_merge", intercomm, &c);
    if (rc)
        return rc;
    if (!c->is_inter)
        return ism_abi_error(c, MPI_ERR_COMM, "MPI_Intercomm_merge", "not an intercommunicator");
    rc = ism_intercomm_merge(c, high, &n);
    return hand_out("MPI_Intercomm_merge", c, n, rc, newintracomm);
}
ISM_PMPI(Intercomm_merge)
