/* handshake.c: the start-up collectives shared by app ranks and gateways (handshake.h).
 * The vendor's MPI_INT carries the roles: both sides run one vendor library. */
#include "handshake.h"

#include <stdlib.h>
#include <string.h>

int ism_join_site(const ism_backend *be, int role, ism_join *j)
{
    int rc;
    memset(j, 0, sizeof *j);
    if ((rc = be->comm_rank(be->comm_world, &j->wrank)) ||
        (rc = be->comm_size(be->comm_world, &j->wsize)))
        return rc;
    j->roles = calloc((size_t)j->wsize, sizeof(int));
    if (!j->roles)
        return ISM_JOIN_ENOMEM;
    if ((rc = be->allgather(&role, 1, be->dt[ISM_KIND_INT], j->roles, 1, be->dt[ISM_KIND_INT],
                            be->comm_world)) ||
        (rc = be->comm_split(be->comm_world, role, j->wrank, &j->own)) ||
        (rc = be->comm_dup(be->comm_world, &j->channel))) {
        ism_join_free(j);
        return rc;
    }
    return 0;
}

int ism_join_ranks(const ism_join *j, int role, int *out)
{
    int n = 0;
    for (int i = 0; i < j->wsize; i++)
        if (j->roles[i] == role) {
            if (out)
                out[n] = i;
            n++;
        }
    return n;
}

int ism_join_index(const ism_join *j)
{
    int k = 0;
    for (int i = 0; i < j->wrank; i++)
        k += j->roles[i] == j->roles[j->wrank];
    return k;
}

void ism_join_free(ism_join *j)
{
    free(j->roles);
    j->roles = NULL;
}
