/* op.c (abi): user-defined reduction operations (MPI_Op_create/free/commutative).
 *
 * A user op keeps the program's function; isthmus applies it itself (core/coll_reduce.c)
 * with the program's own datatype handle, in rank order.
 */
#include <stdlib.h>

#include "abi.h"

static int create(const char *fn, ism_user_fn *user, int large, int commute, MPI_Op *op)
{
    ISM_CHECK_INIT(fn);
    if (!user)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "the function is NULL");
    ism_op *o = calloc(1, sizeof *o);
    if (!o)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    o->user = user;
    o->large = large;
    o->commute = commute != 0;
    *op = (MPI_Op)o;
    return MPI_SUCCESS;
}

int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    return create("MPI_Op_create", (ism_user_fn *)user_fn, 0, commute, op);
}
ISM_PMPI(Op_create)

/* The large-count form: the function gets its element count as an MPI_Count. */
int PMPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
    return create("MPI_Op_create_c", (ism_user_fn *)(void (*)(void))user_fn, 1, commute, op);
}
ISM_PMPI(Op_create_c)

int PMPI_Op_free(MPI_Op *op)
{
    ISM_CHECK_INIT("MPI_Op_free");
    ism_op *o = op ? ism_abi_op(*op) : NULL;
    if (!o || !o->user)
        return ism_abi_error(NULL, MPI_ERR_OP, "MPI_Op_free",
                             o ? "predefined ops cannot be freed" : "invalid op");
    if (o->holds)
        o->freed = 1; /* a collective in flight still applies it: its end frees it */
    else
        free(o);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Op_free)

int PMPI_Op_commutative(MPI_Op op, int *commute)
{
    ISM_CHECK_INIT("MPI_Op_commutative");
    ism_op *o = ism_abi_op(op);
    if (!o)
        return ism_abi_error(NULL, MPI_ERR_OP, "MPI_Op_commutative", "invalid op");
    *commute = o->user ? o->commute : 1;
    return MPI_SUCCESS;
}
ISM_PMPI(Op_commutative)
