/* sites.c (patterns): which rank of a communicator is at which site, for the pattern
 * helpers. Asked once, through MPI_Comm_split_type: under isthmus the type
 * ISTHMUS_COMM_TYPE_SITE (mpi.h's extension) gives the ranks of one site; built against
 * another MPI, which has no notion of sites, a shared-memory node stands for a site. The
 * sites are numbered by their lowest rank, so every rank numbers them alike without
 * another exchange.
 */
#include "patterns.h"

#include <stdlib.h>

#ifdef ISTHMUS_COMM_TYPE_SITE
#define PAT_SPLIT_SITE ISTHMUS_COMM_TYPE_SITE
#else
#define PAT_SPLIT_SITE MPI_COMM_TYPE_SHARED
#endif

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int number_sites(ism_pat_sites *s, const int *leader_of)
{
    int *sorted = malloc(sizeof(int) * (size_t)s->size);
    if (!sorted)
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for the site table of %d ranks",
                        s->rank, s->size);
    for (int r = 0; r < s->size; r++)
        sorted[r] = leader_of[r];
    qsort(sorted, (size_t)s->size, sizeof(int), cmp_int);
    int n = 0;
    for (int r = 0; r < s->size; r++)
        if (r == 0 || sorted[r] != sorted[r - 1])
            sorted[n++] = sorted[r];
    s->nsites = n;
    s->leader = malloc(sizeof(int) * (size_t)n);
    s->site_size = calloc((size_t)n, sizeof(int));
    if (!s->leader || !s->site_size) {
        free(sorted);
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for %d sites", s->rank, n);
    }
    for (int i = 0; i < n; i++)
        s->leader[i] = sorted[i];
    for (int r = 0; r < s->size; r++) {
        int *hit = bsearch(&leader_of[r], sorted, (size_t)n, sizeof(int), cmp_int);
        s->site_of[r] = (int)(hit - sorted);
        s->site_size[s->site_of[r]]++;
    }
    s->my_site = s->site_of[s->rank];
    free(sorted);
    return MPI_SUCCESS;
}

int ism_pat_sites_create(MPI_Comm comm, ism_pat_sites **out)
{
    *out = NULL;
    ism_pat_sites *s = calloc(1, sizeof(*s));
    if (!s)
        return pat_fail(MPI_ERR_NO_MEM, "no memory for a site table");
    s->comm = s->site = MPI_COMM_NULL;
    int rc = MPI_Comm_dup(comm, &s->comm);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_rank(s->comm, &s->rank);
        MPI_Comm_size(s->comm, &s->size);
        rc = MPI_Comm_split_type(s->comm, PAT_SPLIT_SITE, s->rank, MPI_INFO_NULL, &s->site);
    }
    int *leader_of = NULL, lowest = s->rank;
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&s->rank, &lowest, 1, MPI_INT, MPI_MIN, s->site);
    if (rc == MPI_SUCCESS) {
        leader_of = malloc(sizeof(int) * (size_t)s->size);
        s->site_of = malloc(sizeof(int) * (size_t)s->size);
        rc = leader_of && s->site_of ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Allgather(&lowest, 1, MPI_INT, leader_of, 1, MPI_INT, s->comm);
    if (rc == MPI_SUCCESS)
        rc = number_sites(s, leader_of);
    else
        pat_fail(rc, "rank %d: finding the sites of a communicator of %d ranks failed",
                 s->rank, s->size);
    free(leader_of);
    if (rc != MPI_SUCCESS) {
        ism_pat_sites_free(&s);
        return rc;
    }
    *out = s;
    return MPI_SUCCESS;
}

void ism_pat_sites_free(ism_pat_sites **sp)
{
    ism_pat_sites *s = *sp;
    if (!s)
        return;
    if (s->site != MPI_COMM_NULL)
        MPI_Comm_free(&s->site);
    if (s->comm != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm);
    free(s->site_of);
    free(s->leader);
    free(s->site_size);
    free(s);
    *sp = NULL;
}
