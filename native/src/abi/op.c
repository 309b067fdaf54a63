/* op.c (abi): user-defined reduction operations (MPI_Op_create/free/commutative).
 *
 * A user op keeps the program's function; isthmus applies it itself (core/coll_reduce.c)
 * with the program's own datatype handle, in rank order.
 *
 * MPI_Op_free only marks an op that a pending operation may still apply ("pending
 * operations complete normally"): one held by a collective in flight (coll/nb.c), or any
 * op while a coroutine's collective is pending (core/nbc.c; which op it uses is in its
 * argument block, unseen here). Marked ops wait in a list, freed by a later
 * MPI_Op_create or MPI_Op_free once nothing pending can use them.
 */
#include <stdlib.h>

#include "abi.h"

static ism_op **marked;
static int nmarked, capmarked;

static void sweep(void)
{
    for (int i = 0; i < nmarked;)
        if (!marked[i]->holds && !ism_nbc_pending()) {
            free(marked[i]);
            marked[i] = marked[--nmarked];
        } else {
            i++;
        }
}

static int mark(ism_op *o)
{
    if (nmarked == capmarked) {
        int cap = capmarked ? 2 * capmarked : 8;
        ism_op **m = realloc(marked, sizeof *m * (size_t)cap);
        if (!m)
            return 0;
        marked = m;
        capmarked = cap;
    }
    o->freed = 1;
    marked[nmarked++] = o;
    return 1;
}

static int create(const char *fn, ism_user_fn *user, int large, int commute, MPI_Op *op)
{
    ISM_CHECK_INIT(fn);
    if (!user)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "the function is NULL");
    sweep();
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
    sweep();
    if (!o->holds && !ism_nbc_pending())
        free(o);
    else if (!mark(o))
        o->freed = 1; /* no room to remember it: kept for good rather than freed in use */
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
