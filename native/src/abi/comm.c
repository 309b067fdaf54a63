/* comm.c (abi): communicator management calls available so far: dup, free, compare. */
#include "abi.h"

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    ISM_CHECK_INIT("MPI_Comm_dup");
    ism_comm *c = ism_abi_comm(comm), *n;
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_dup", "invalid communicator");
    int rc = ism_comm_dup(c, &n);
    if (rc)
        return ism_abi_error(c, rc, "MPI_Comm_dup", "duplicating the communicator failed");
    *newcomm = (MPI_Comm)n;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_dup)

int PMPI_Comm_free(MPI_Comm *comm)
{
    ISM_CHECK_INIT("MPI_Comm_free");
    ism_comm *c = comm ? ism_abi_comm(*comm) : NULL;
    if (!c || c->builtin)
        return ism_abi_error(c, MPI_ERR_COMM, "MPI_Comm_free",
                             c ? "predefined communicators cannot be freed"
                               : "invalid communicator");
    int rc = ism_comm_free(c);
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
