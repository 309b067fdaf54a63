/* comm_from_group.c: communicators made from a group alone, with no parent communicator
 * (MPI 4.0 §7.4.2 MPI_Comm_create_from_group, §7.6.2 MPI_Intercomm_create_from_groups;
 * the constructors of the sessions model).
 *
 * Only the group's members call them. The group holds global ranks, so the machinery of
 * MPI_Comm_create_group works unchanged over MPI_COMM_WORLD: the members at each site
 * build their vendor communicator from the site's vendor world, and agree on a context id
 * on a bootstrap context derived from the members, the tag and how often they did so
 * before (comm.c, boot_ctx). The string tag becomes that integer tag through a hash; two
 * tags with the same hash on the same group only share the call counter, which every
 * member advances alike, so they stay apart.
 */
#include <stdlib.h>

#include "core.h"

/* A vendor tag every MPI offers (MPI_TAG_UB is at least 32767). */
static int tag_of(const char *stringtag)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = stringtag; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (int)((h ^ (h >> 32)) & 0x7fff);
}

int ism_comm_from_group(const ism_group *grp, const char *stringtag, ism_comm **out)
{
    *out = NULL;
    if (grp->rank == ISM_UNDEFINED)
        return ISM_ERR_GROUP;
    return ism_comm_create_group(&ism_comm_world, grp, tag_of(stringtag), out);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The local group's communicator, then one of both groups (members in global rank order,
 * so that both sides build the same one) through which the leaders meet, as the peer
 * communicator of MPI_Intercomm_create; both are freed again. */
int ism_intercomm_from_groups(const ism_group *lg, int lleader, const ism_group *rg, int rleader,
                              const char *stringtag, ism_comm **out)
{
    *out = NULL;
    if (lg->rank == ISM_UNDEFINED)
        return ISM_ERR_GROUP;
    for (int i = 0; i < rg->size; i++)
        if (ism_group_index(lg, rg->g[i]) != ISM_UNDEFINED)
            return ISM_ERR_GROUP; /* the groups must be disjoint */
    int n = lg->size + rg->size;
    int *all = malloc(sizeof(int) * (size_t)n);
    if (!all)
        return ISM_ERR_NO_MEM;
    for (int i = 0; i < lg->size; i++)
        all[i] = lg->g[i];
    for (int i = 0; i < rg->size; i++)
        all[lg->size + i] = rg->g[i];
    qsort(all, (size_t)n, sizeof *all, cmp_int);
    ism_group *both = ism_group_new(n, all);
    free(all);
    if (!both)
        return ISM_ERR_NO_MEM;
    ism_comm *local = NULL, *peer = NULL;
    int rc = ism_comm_from_group(lg, stringtag, &local);
    if (!rc)
        rc = ism_comm_from_group(both, stringtag, &peer);
    if (!rc)
        rc = ism_intercomm_create(local, lleader, peer, peer->c_of_g[rg->g[rleader]],
                                  tag_of(stringtag), out);
    ism_group_release(both);
    if (peer)
        ism_comm_free(peer);
    if (local)
        ism_comm_free(local);
    return rc;
}
