/* group.c (abi): the MPI_Group_* calls and MPI_Comm_group: argument checks, then the
 * core's list operations on global ranks (core/group.c).
 */
#include <stdlib.h>

#include "abi.h"

static ism_group *grp_of(MPI_Group h)
{
    if (h == MPI_GROUP_EMPTY)
        return &ism_group_empty;
    if ((uintptr_t)h < 0x1000)
        return NULL;
    return (ism_group *)h;
}

static MPI_Group grp_handle(ism_group *g)
{
    return g == &ism_group_empty ? MPI_GROUP_EMPTY : (MPI_Group)g;
}

#define GRP_ARG(fn, h, out)                                                                        \
    ism_group *out = grp_of(h);                                                                    \
    if (!out)                                                                                      \
        return ism_abi_error(NULL, MPI_ERR_GROUP, fn, "invalid group");

static int give(const char *fn, ism_group *g, MPI_Group *out)
{
    if (!g)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory building the group");
    *out = grp_handle(g);
    return MPI_SUCCESS;
}

int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    ISM_CHECK_INIT("MPI_Comm_group");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_group", "invalid communicator");
    if (c->is_inter)
        return give("MPI_Comm_group", ism_group_new(c->local_size, c->local_g), group);
    return give("MPI_Comm_group", ism_group_new(c->size, c->g_of), group);
}
ISM_PMPI(Comm_group)

int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    ISM_CHECK_INIT("MPI_Comm_remote_group");
    ism_comm *c = ism_abi_comm(comm);
    if (!c || !c->is_inter)
        return ism_abi_error(c, MPI_ERR_COMM, "MPI_Comm_remote_group",
                             c ? "not an intercommunicator" : "invalid communicator");
    return give("MPI_Comm_remote_group", ism_group_new(c->size, c->g_of), group);
}
ISM_PMPI(Comm_remote_group)

int PMPI_Group_size(MPI_Group group, int *size)
{
    GRP_ARG("MPI_Group_size", group, g);
    *size = g->size;
    return MPI_SUCCESS;
}
ISM_PMPI(Group_size)

int PMPI_Group_rank(MPI_Group group, int *rank)
{
    GRP_ARG("MPI_Group_rank", group, g);
    *rank = g->rank;
    return MPI_SUCCESS;
}
ISM_PMPI(Group_rank)

int PMPI_Group_free(MPI_Group *group)
{
    ism_group *g = group ? grp_of(*group) : NULL;
    if (!g)
        return ism_abi_error(NULL, MPI_ERR_GROUP, "MPI_Group_free", "invalid group");
    ism_group_release(g);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Group_free)

int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                               int ranks2[])
{
    GRP_ARG("MPI_Group_translate_ranks", group1, a);
    GRP_ARG("MPI_Group_translate_ranks", group2, b);
    if (n < 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Group_translate_ranks", "n %d is negative",
                             n);
    for (int i = 0; i < n; i++) {
        int r = ranks1[i];
        if (r == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
            continue;
        }
        if (r < 0 || r >= a->size)
            return ism_abi_error(NULL, MPI_ERR_RANK, "MPI_Group_translate_ranks",
                                 "rank %d is not in the first group (size %d)", r, a->size);
        ranks2[i] = ism_group_index(b, a->g[r]);
    }
    return MPI_SUCCESS;
}
ISM_PMPI(Group_translate_ranks)

int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    GRP_ARG("MPI_Group_compare", group1, a);
    GRP_ARG("MPI_Group_compare", group2, b);
    *result = ism_group_compare(a, b);
    return MPI_SUCCESS;
}
ISM_PMPI(Group_compare)

static int setop(const char *fn, MPI_Group group1, MPI_Group group2, int op, MPI_Group *newgroup)
{
    GRP_ARG(fn, group1, a);
    GRP_ARG(fn, group2, b);
    return give(fn, ism_group_setop(a, b, op), newgroup);
}

int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return setop("MPI_Group_union", group1, group2, ISM_GROUP_UNION, newgroup);
}
ISM_PMPI(Group_union)

int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return setop("MPI_Group_intersection", group1, group2, ISM_GROUP_INTERSECTION, newgroup);
}
ISM_PMPI(Group_intersection)

int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return setop("MPI_Group_difference", group1, group2, ISM_GROUP_DIFFERENCE, newgroup);
}
ISM_PMPI(Group_difference)

/* Checks a rank list (in range, no repeats): 0, or an error class with a message. */
static int check_ranks(const char *fn, const ism_group *g, int n, const int *ranks, char *seen)
{
    if (n < 0 || n > g->size)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "n %d is outside 0..%d", n, g->size);
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        if (r < 0 || r >= g->size)
            return ism_abi_error(NULL, MPI_ERR_RANK, fn, "rank %d is not in the group (size %d)",
                                 r, g->size);
        if (seen[r])
            return ism_abi_error(NULL, MPI_ERR_RANK, fn, "rank %d is listed twice", r);
        seen[r] = 1;
    }
    return MPI_SUCCESS;
}

static int incl_excl(const char *fn, ism_group *g, int n, const int *ranks, int excl,
                     MPI_Group *newgroup)
{
    char *seen = calloc((size_t)g->size + 1, 1);
    int *v = malloc(sizeof(int) * ((size_t)g->size + 1));
    int rc = seen && v ? check_ranks(fn, g, n, ranks, seen)
                       : ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    int k = 0;
    if (!rc && !excl)
        for (int i = 0; i < n; i++)
            v[k++] = g->g[ranks[i]];
    if (!rc && excl)
        for (int r = 0; r < g->size; r++)
            if (!seen[r])
                v[k++] = g->g[r];
    if (!rc)
        rc = give(fn, ism_group_new(k, v), newgroup);
    free(seen);
    free(v);
    return rc;
}

int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    GRP_ARG("MPI_Group_incl", group, g);
    return incl_excl("MPI_Group_incl", g, n, ranks, 0, newgroup);
}
ISM_PMPI(Group_incl)

int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    GRP_ARG("MPI_Group_excl", group, g);
    return incl_excl("MPI_Group_excl", g, n, ranks, 1, newgroup);
}
ISM_PMPI(Group_excl)

/* Expand (first, last, stride) triplets into a rank list, checking each as MPI says. */
static int expand(const char *fn, const ism_group *g, int n, int ranges[][3], int **out, int *k)
{
    long total = 0;
    *out = NULL;
    if (n < 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "n %d is negative", n);
    for (int i = 0; i < n; i++) {
        int f = ranges[i][0], l = ranges[i][1], s = ranges[i][2];
        if (s == 0 || (s > 0 && f > l) || (s < 0 && f < l))
            return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                                 "range %d (%d, %d, %d) is empty or has stride 0", i, f, l, s);
        if (f < 0 || f >= g->size || l < 0 || l >= g->size)
            return ism_abi_error(NULL, MPI_ERR_RANK, fn,
                                 "range %d (%d, %d, %d) leaves the group (size %d)", i, f, l, s,
                                 g->size);
        total += (l - f) / s + 1;
        if (total > g->size)
            return ism_abi_error(NULL, MPI_ERR_RANK, fn, "ranges list a rank twice");
    }
    int *v = malloc(sizeof(int) * ((size_t)total + 1));
    if (!v)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    *k = 0;
    for (int i = 0; i < n; i++)
        for (int r = ranges[i][0]; ranges[i][2] > 0 ? r <= ranges[i][1] : r >= ranges[i][1];
             r += ranges[i][2])
            v[(*k)++] = r;
    *out = v;
    return MPI_SUCCESS;
}

int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    GRP_ARG("MPI_Group_range_incl", group, g);
    int *v, k = 0;
    int rc = expand("MPI_Group_range_incl", g, n, ranges, &v, &k);
    if (rc)
        return rc;
    rc = incl_excl("MPI_Group_range_incl", g, k, v, 0, newgroup);
    free(v);
    return rc;
}
ISM_PMPI(Group_range_incl)

int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    GRP_ARG("MPI_Group_range_excl", group, g);
    int *v, k = 0;
    int rc = expand("MPI_Group_range_excl", g, n, ranges, &v, &k);
    if (rc)
        return rc;
    rc = incl_excl("MPI_Group_range_excl", g, k, v, 1, newgroup);
    free(v);
    return rc;
}
ISM_PMPI(Group_range_excl)

ism_group *ism_abi_group(MPI_Group h) { return grp_of(h); }
