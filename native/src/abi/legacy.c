/* legacy.c (abi): the MPI-1 functions and bound markers that MPI 3.0 removed.
 *
 * Older applications still call MPI_Address, MPI_Type_struct, MPI_Type_extent,
 * MPI_Errhandler_set and the rest, and build struct types with MPI_LB and MPI_UB to set
 * their bounds. MPICH still provides all of them; isthmus does too, so those programs
 * run unmodified. Each function is its MPI-2 replacement under the old name.
 *
 * The markers (MPI 1.1 §3.12.3): a struct with MPI_LB entries has as lower bound the
 * least MPI_LB displacement, with MPI_UB entries as upper bound the greatest MPI_UB
 * displacement; a bound without markers is the one the other entries give. Such a
 * struct is built as the struct of its other entries, resized to those bounds (the
 * resized type carries explicit bounds, as a marked struct does when nested in further
 * constructors). Two things differ from MPICH: the envelope is MPI_COMBINER_RESIZED
 * over the unmarked struct, not a struct listing the markers, and the explicit bounds
 * an entry's own type carries (its markers, or MPI_Type_create_resized) count only on a
 * side that has no marker at this level.
 */
#include <stdlib.h>

#include "abi.h"

int PMPI_Address(void *location, MPI_Aint *address)
{
    return PMPI_Get_address(location, address);
}
ISM_PMPI(Address)

int PMPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return PMPI_Type_create_hindexed(count, array_of_blocklengths, array_of_displacements,
                                     oldtype, newtype);
}
ISM_PMPI(Type_hindexed)

int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    return PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}
ISM_PMPI(Type_hvector)

int PMPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                     MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return PMPI_Type_create_struct(count, array_of_blocklengths, array_of_displacements,
                                   array_of_types, newtype);
}
ISM_PMPI(Type_struct)

enum bound { BOUND_EXTENT, BOUND_LB, BOUND_UB };

static int get_bound(const char *fn, MPI_Datatype datatype, enum bound which, MPI_Aint *out)
{
    if (!out)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "the output argument is NULL");
    MPI_Aint lb, extent;
    int rc = PMPI_Type_get_extent(datatype, &lb, &extent);
    if (rc == MPI_SUCCESS)
        *out = which == BOUND_EXTENT ? extent : which == BOUND_LB ? lb : lb + extent;
    return rc;
}

int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    return get_bound("MPI_Type_extent", datatype, BOUND_EXTENT, extent);
}
ISM_PMPI(Type_extent)

int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
    return get_bound("MPI_Type_lb", datatype, BOUND_LB, displacement);
}
ISM_PMPI(Type_lb)

int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
    return get_bound("MPI_Type_ub", datatype, BOUND_UB, displacement);
}
ISM_PMPI(Type_ub)

int PMPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)
{
    return PMPI_Comm_create_errhandler(function, errhandler);
}
ISM_PMPI(Errhandler_create)

int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    return PMPI_Comm_get_errhandler(comm, errhandler);
}
ISM_PMPI(Errhandler_get)

int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    return PMPI_Comm_set_errhandler(comm, errhandler);
}
ISM_PMPI(Errhandler_set)

int ism_abi_struct_with_markers(const char *fn, int count, const int blocklengths[],
                                const MPI_Aint displacements[], const MPI_Datatype types[],
                                MPI_Datatype *newtype)
{
    if (!newtype)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "newtype is NULL");
    if (count > 0 && (!blocklengths || !displacements))
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "a NULL array with count %d", count);
    size_t cap = count > 0 ? (size_t)count : 1;
    int *bl = malloc(sizeof(int) * cap);
    MPI_Aint *disp = malloc(sizeof(MPI_Aint) * cap);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * cap);
    if (!bl || !disp || !ty) {
        free(bl), free(disp), free(ty);
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for %d entries", count);
    }
    int n = 0, have_lb = 0, have_ub = 0;
    MPI_Aint lb = 0, ub = 0;
    for (int i = 0; i < count; i++) {
        if (!ism_abi_is_bound_marker(types[i])) {
            bl[n] = blocklengths[i], disp[n] = displacements[i], ty[n] = types[i];
            n++;
        } else if (blocklengths[i] > 0 && types[i] == MPI_LB) {
            lb = have_lb && lb < displacements[i] ? lb : displacements[i];
            have_lb = 1;
        } else if (blocklengths[i] > 0) {
            ub = have_ub && ub > displacements[i] ? ub : displacements[i];
            have_ub = 1;
        }
    }
    MPI_Datatype inner = MPI_DATATYPE_NULL;
    int rc = PMPI_Type_create_struct(n, bl, disp, ty, &inner);
    free(bl), free(disp), free(ty);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Aint inner_lb = 0, inner_extent = 0;
    rc = PMPI_Type_get_extent(inner, &inner_lb, &inner_extent);
    if (rc == MPI_SUCCESS) {
        if (!have_lb)
            lb = inner_lb;
        if (!have_ub)
            ub = inner_lb + inner_extent;
        rc = PMPI_Type_create_resized(inner, lb, ub - lb, newtype);
    }
    PMPI_Type_free(&inner);
    return rc;
}
