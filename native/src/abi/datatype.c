/* datatype.c (abi): the MPI datatype entry points.
 *
 * Constructors, commit and free, envelope and contents, extents and sizes, packing
 * (native and external32), addresses, and the status queries that depend on a type
 * (MPI_Get_count, MPI_Get_elements). Arguments are checked here; types are built and
 * packed by the core (core/datatype.c, core/typemap.c, core/pack.c). Errors go to
 * MPI_COMM_WORLD's handler, as for every call without a communicator.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

ism_dt *ism_abi_dt_derived(MPI_Datatype h, int need_commit)
{
    if ((uintptr_t)h < 0x1000)
        return NULL;
    ism_dt *d = (ism_dt *)h;
    if (!d->x || d->x->magic != ISM_DT_MAGIC || (d->freed && !ism_abi_nbc_kept(d)))
        return NULL;
    return need_commit && !d->committed ? NULL : d;
}

const char *ism_abi_dt_problem(MPI_Datatype h)
{
    uintptr_t i = (uintptr_t)h - ISM_DT_BASE;
    if (h == MPI_DATATYPE_NULL)
        return "MPI_DATATYPE_NULL is not a datatype";
    if (ism_abi_is_bound_marker(h))
        return "MPI_LB and MPI_UB are bound markers, only MPI_Type_struct and "
               "MPI_Type_create_struct take them";
    if (i < ISM_DT_COUNT)
        return "this predefined datatype does not exist in the vendor MPI of this site";
    if ((uintptr_t)h < 0x1000)
        return "invalid datatype handle";
    ism_dt *d = (ism_dt *)h;
    if (d->x && d->x->magic == ISM_DT_MAGIC_FREED)
        return "the datatype was freed (MPI_Type_free)";
    if (!d->x || d->x->magic != ISM_DT_MAGIC)
        return "invalid datatype handle";
    if (d->freed)
        return "the datatype was freed (MPI_Type_free)";
    if (!d->committed)
        return "the datatype is not committed (call MPI_Type_commit first)";
    return "invalid datatype";
}

#define TYPE_ERR(fn, h) ism_abi_error(NULL, MPI_ERR_TYPE, fn, "%s", ism_abi_dt_problem(h))

/* ---- constructors ---- */

/* Builds a type from its envelope (ints widened to 64 bits: the _c constructors' values
 * may pass INT_MAX; datatype_large.c). */
int ism_abi_type_make(const char *fn, int combiner, const int64_t *ints, const MPI_Aint *aints,
                      const MPI_Datatype *olds, int nold, MPI_Datatype *newtype)
{
    ISM_CHECK_INIT(fn);
    if (!newtype)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "newtype is NULL");
    ism_dt *small[4], **types = small;
    if (nold > 4 && !(types = malloc(sizeof(ism_dt *) * (size_t)nold)))
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for %d types", nold);
    int rc = MPI_SUCCESS;
    for (int i = 0; i < nold; i++) {
        if (!(types[i] = ism_abi_dt_any(olds[i]))) {
            rc = nold > 1 ? ism_abi_error(NULL, MPI_ERR_TYPE, fn, "type %d: %s", i,
                                          ism_abi_dt_problem(olds[i]))
                          : TYPE_ERR(fn, olds[i]);
            goto out;
        }
    }
    int na = 0, ni = 0, nt = 0;
    ism_envelope_sizes(combiner, ints, &ni, &na, &nt);
    int64_t small_a[4], *a64 = small_a;
    if (na > 4 && !(a64 = malloc(sizeof(int64_t) * (size_t)na))) {
        rc = ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for %d displacements", na);
        goto out;
    }
    for (int i = 0; i < na; i++)
        a64[i] = aints[i];
    ism_dt *d = NULL;
    int e = ism_dt_create(combiner, ints, a64, types, &d);
    if (a64 != small_a)
        free(a64);
    if (e == ISM_ERR_UNSUPPORTED)
        rc = ism_abi_error(NULL, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                           "the type is too large: more than %d contiguous blocks",
                           ISM_TMAP_MAX_ENTRIES);
    else if (e == ISM_ERR_NO_MEM)
        rc = ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for the type map");
    else if (e == ISM_ERR_ARG)
        rc = ism_abi_error(NULL, MPI_ERR_ARG, fn,
                           "the arguments describe no datatype (check sizes, starts and the "
                           "process grid)");
    else if (e)
        rc = ism_abi_error(NULL, e, fn, "the vendor MPI refused the type");
    else
        *newtype = (MPI_Datatype)d;
out:
    if (types != small)
        free(types);
    return rc;
}

/* The int constructors' envelope, widened. */
static int make(const char *fn, int combiner, const int *ints, const MPI_Aint *aints,
                const MPI_Datatype *olds, int nold, MPI_Datatype *newtype)
{
    int64_t head[3] = {0}, *w = NULL;
    int ni = 0, na = 0, nt = 0;
    for (int i = 0; ints && i < 3; i++) /* what the envelope's size depends on */
        if (i == 0 || combiner == ISM_COMBINER_DARRAY)
            head[i] = ints[i];
    if (ism_envelope_sizes(combiner, ints ? head : NULL, &ni, &na, &nt))
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "count %d describes no datatype",
                             ints ? ints[0] : 0);
    if (ni && !(w = malloc(sizeof(int64_t) * (size_t)ni)))
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for %d arguments", ni);
    for (int i = 0; i < ni; i++)
        w[i] = ints[i];
    int rc = ism_abi_type_make(fn, combiner, w, aints, olds, nold, newtype);
    free(w);
    return rc;
}

static int bad_lengths(const char *fn, int count, const int *bl)
{
    for (int i = 0; i < count; i++)
        if (bl[i] < 0)
            return ism_abi_error(NULL, MPI_ERR_ARG, fn, "block length %d (index %d) is negative",
                                 bl[i], i);
    return 0;
}

#define CHECK_COUNT(fn, n)                                                                         \
    do {                                                                                           \
        if ((n) < 0)                                                                               \
            return ism_abi_error(NULL, MPI_ERR_COUNT, fn, "count %d is negative", (n));          \
    } while (0)

int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    CHECK_COUNT("MPI_Type_contiguous", count);
    return make("MPI_Type_contiguous", ISM_COMBINER_CONTIGUOUS, &count, NULL, &oldtype, 1,
                newtype);
}
ISM_PMPI(Type_contiguous)

int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                     MPI_Datatype *newtype)
{
    CHECK_COUNT("MPI_Type_vector", count);
    if (bad_lengths("MPI_Type_vector", 1, &blocklength))
        return MPI_ERR_ARG;
    int ints[] = {count, blocklength, stride};
    return make("MPI_Type_vector", ISM_COMBINER_VECTOR, ints, NULL, &oldtype, 1, newtype);
}
ISM_PMPI(Type_vector)

int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                             MPI_Datatype *newtype)
{
    CHECK_COUNT("MPI_Type_create_hvector", count);
    if (bad_lengths("MPI_Type_create_hvector", 1, &blocklength))
        return MPI_ERR_ARG;
    int ints[] = {count, blocklength};
    return make("MPI_Type_create_hvector", ISM_COMBINER_HVECTOR, ints, &stride, &oldtype, 1,
                newtype);
}
ISM_PMPI(Type_create_hvector)

/* ints = {count, first[count], second[count]} (second may be absent) */
static int *pack_ints(int head, int h2, int use_h2, const int *a, const int *b, int count)
{
    int n = 1 + use_h2 + (a ? count : 0) + (b ? count : 0);
    int *ints = malloc(sizeof(int) * (size_t)n);
    if (!ints)
        return NULL;
    int k = 0;
    ints[k++] = head;
    if (use_h2)
        ints[k++] = h2;
    for (int i = 0; a && i < count; i++)
        ints[k++] = a[i];
    for (int i = 0; b && i < count; i++)
        ints[k++] = b[i];
    return ints;
}

#define INTS_OR_FAIL(fn, ints, expr)                                                               \
    int *ints = (expr);                                                                            \
    if (!ints)                                                                                     \
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for the arguments");

int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                      const int array_of_displacements[], MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_indexed";
    CHECK_COUNT(fn, count);
    if (bad_lengths(fn, count, array_of_blocklengths))
        return MPI_ERR_ARG;
    INTS_OR_FAIL(fn, ints,
                 pack_ints(count, 0, 0, array_of_blocklengths, array_of_displacements, count));
    int rc = make(fn, ISM_COMBINER_INDEXED, ints, NULL, &oldtype, 1, newtype);
    free(ints);
    return rc;
}
ISM_PMPI(Type_indexed)

int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                              const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_hindexed";
    CHECK_COUNT(fn, count);
    if (bad_lengths(fn, count, array_of_blocklengths))
        return MPI_ERR_ARG;
    INTS_OR_FAIL(fn, ints, pack_ints(count, 0, 0, array_of_blocklengths, NULL, count));
    int rc = make(fn, ISM_COMBINER_HINDEXED, ints, array_of_displacements, &oldtype, 1, newtype);
    free(ints);
    return rc;
}
ISM_PMPI(Type_create_hindexed)

int PMPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_indexed_block";
    CHECK_COUNT(fn, count);
    if (bad_lengths(fn, 1, &blocklength))
        return MPI_ERR_ARG;
    INTS_OR_FAIL(fn, ints, pack_ints(count, blocklength, 1, array_of_displacements, NULL, count));
    int rc = make(fn, ISM_COMBINER_INDEXED_BLOCK, ints, NULL, &oldtype, 1, newtype);
    free(ints);
    return rc;
}
ISM_PMPI(Type_create_indexed_block)

int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                    const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_hindexed_block";
    CHECK_COUNT(fn, count);
    if (bad_lengths(fn, 1, &blocklength))
        return MPI_ERR_ARG;
    int ints[] = {count, blocklength};
    return make(fn, ISM_COMBINER_HINDEXED_BLOCK, ints, array_of_displacements, &oldtype, 1,
                newtype);
}
ISM_PMPI(Type_create_hindexed_block)

int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                            const MPI_Aint array_of_displacements[],
                            const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_struct";
    CHECK_COUNT(fn, count);
    if (bad_lengths(fn, count, array_of_blocklengths))
        return MPI_ERR_ARG;
    for (int i = 0; i < count; i++)
        if (array_of_types && ism_abi_is_bound_marker(array_of_types[i]))
            return ism_abi_struct_with_markers(fn, count, array_of_blocklengths,
                                               array_of_displacements, array_of_types, newtype);
    INTS_OR_FAIL(fn, ints, pack_ints(count, 0, 0, array_of_blocklengths, NULL, count));
    int rc = make(fn, ISM_COMBINER_STRUCT, ints, array_of_displacements, array_of_types, count,
                  newtype);
    free(ints);
    return rc;
}
ISM_PMPI(Type_create_struct)

static int bad_order(const char *fn, int order)
{
    if (order == MPI_ORDER_C || order == MPI_ORDER_FORTRAN)
        return 0;
    return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                         "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
}

int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                              const int array_of_starts[], int order, MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_subarray";
    if (ndims <= 0)
        return ism_abi_error(NULL, MPI_ERR_DIMS, fn, "ndims %d must be positive", ndims);
    if (bad_order(fn, order))
        return MPI_ERR_ARG;
    for (int d = 0; d < ndims; d++)
        if (array_of_sizes[d] <= 0 || array_of_subsizes[d] <= 0 || array_of_starts[d] < 0 ||
            array_of_starts[d] + array_of_subsizes[d] > array_of_sizes[d])
            return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                                 "dimension %d: size %d, subsize %d, start %d do not fit", d,
                                 array_of_sizes[d], array_of_subsizes[d], array_of_starts[d]);
    int *ints = malloc(sizeof(int) * (size_t)(3 * ndims + 2));
    if (!ints)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for the arguments");
    ints[0] = ndims;
    memcpy(ints + 1, array_of_sizes, sizeof(int) * (size_t)ndims);
    memcpy(ints + 1 + ndims, array_of_subsizes, sizeof(int) * (size_t)ndims);
    memcpy(ints + 1 + 2 * ndims, array_of_starts, sizeof(int) * (size_t)ndims);
    ints[1 + 3 * ndims] = order;
    int rc = make(fn, ISM_COMBINER_SUBARRAY, ints, NULL, &oldtype, 1, newtype);
    free(ints);
    return rc;
}
ISM_PMPI(Type_create_subarray)

/* The checks of a darray's arguments (the int and _c forms; gsizes widened). */
int ism_abi_darray_args(const char *fn, int size, int rank, int ndims, const int64_t *gsizes,
                        const int *distribs, const int *dargs, const int *psizes, int order)
{
    if (ndims <= 0)
        return ism_abi_error(NULL, MPI_ERR_DIMS, fn, "ndims %d must be positive", ndims);
    if (size <= 0 || rank < 0 || rank >= size)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "rank %d is not in a group of size %d", rank,
                             size);
    if (bad_order(fn, order))
        return MPI_ERR_ARG;
    for (int d = 0; d < ndims; d++) {
        int dist = distribs[d], darg = dargs[d];
        if (gsizes[d] <= 0 || psizes[d] <= 0 ||
            (dist != MPI_DISTRIBUTE_NONE && dist != MPI_DISTRIBUTE_BLOCK &&
             dist != MPI_DISTRIBUTE_CYCLIC) ||
            (darg != MPI_DISTRIBUTE_DFLT_DARG && darg <= 0))
            return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                                 "dimension %d: gsize %lld, distribution %d, darg %d, psize %d is "
                                 "not a distribution",
                                 d, (long long)gsizes[d], dist, darg, psizes[d]);
    }
    return MPI_SUCCESS;
}

int PMPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                            const int array_of_distribs[], const int array_of_dargs[],
                            const int array_of_psizes[], int order, MPI_Datatype oldtype,
                            MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_darray";
    int64_t *g = malloc(sizeof(int64_t) * (size_t)(ndims > 0 ? ndims : 1));
    if (!g)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for the arguments");
    for (int d = 0; d < ndims; d++)
        g[d] = array_of_gsizes[d];
    int bad = ism_abi_darray_args(fn, size, rank, ndims, g, array_of_distribs, array_of_dargs,
                                  array_of_psizes, order);
    free(g);
    if (bad)
        return bad;
    int *ints = malloc(sizeof(int) * (size_t)(4 * ndims + 4));
    if (!ints)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory for the arguments");
    ints[0] = size;
    ints[1] = rank;
    ints[2] = ndims;
    memcpy(ints + 3, array_of_gsizes, sizeof(int) * (size_t)ndims);
    memcpy(ints + 3 + ndims, array_of_distribs, sizeof(int) * (size_t)ndims);
    memcpy(ints + 3 + 2 * ndims, array_of_dargs, sizeof(int) * (size_t)ndims);
    memcpy(ints + 3 + 3 * ndims, array_of_psizes, sizeof(int) * (size_t)ndims);
    ints[3 + 4 * ndims] = order;
    int rc = make(fn, ISM_COMBINER_DARRAY, ints, NULL, &oldtype, 1, newtype);
    free(ints);
    return rc;
}
ISM_PMPI(Type_create_darray)

int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                             MPI_Datatype *newtype)
{
    MPI_Aint a[] = {lb, extent};
    return make("MPI_Type_create_resized", ISM_COMBINER_RESIZED, NULL, a, &oldtype, 1, newtype);
}
ISM_PMPI(Type_create_resized)

int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    int rc = make("MPI_Type_dup", ISM_COMBINER_DUP, NULL, NULL, &oldtype, 1, newtype);
    if (rc)
        return rc;
    /* "newtype has the same committed state as oldtype" (MPI 3.1 §4.1.10); predefined
     * types are committed */
    ism_dt *old = ism_abi_dt_any(oldtype);
    if (old && (!old->x || old->committed) && (rc = ism_dt_commit(ism_abi_dt_any(*newtype)))) {
        PMPI_Type_free(newtype);
        return ism_abi_error(NULL, rc, "MPI_Type_dup", "the vendor MPI refused the commit");
    }
    /* cached attributes follow their copy callbacks (attr.c) */
    if ((rc = ism_abi_type_attr_copy(oldtype, *newtype)) != MPI_SUCCESS) {
        PMPI_Type_free(newtype);
        return ism_abi_error(NULL, rc, "MPI_Type_dup", "an attribute copy callback failed");
    }
    return MPI_SUCCESS;
}
ISM_PMPI(Type_dup)

/* ---- lifetime ---- */

int PMPI_Type_commit(MPI_Datatype *datatype)
{
    ISM_CHECK_INIT("MPI_Type_commit");
    ism_dt *d = datatype ? ism_abi_dt_any(*datatype) : NULL;
    if (!d)
        return datatype ? TYPE_ERR("MPI_Type_commit", *datatype)
                        : ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Type_commit", "datatype is NULL");
    int rc = ism_dt_commit(d);
    return rc ? ism_abi_error(NULL, rc, "MPI_Type_commit", "the vendor MPI refused the commit")
              : MPI_SUCCESS;
}
ISM_PMPI(Type_commit)

int PMPI_Type_free(MPI_Datatype *datatype)
{
    ISM_CHECK_INIT("MPI_Type_free");
    ism_dt *d = datatype ? ism_abi_dt_any(*datatype) : NULL;
    if (!d)
        return datatype ? TYPE_ERR("MPI_Type_free", *datatype)
                        : ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Type_free", "datatype is NULL");
    if (!d->x)
        return ism_abi_error(NULL, MPI_ERR_TYPE, "MPI_Type_free",
                             "%s is predefined and cannot be freed", ism_dt_name(d));
    int rc = ism_abi_type_attr_delete_all(*datatype);
    if (rc)
        return ism_abi_error(NULL, rc, "MPI_Type_free", "an attribute delete callback failed");
    ism_dt_user_free(d);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Type_free)

/* ---- envelope and contents ---- */

int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                           int *num_datatypes, int *combiner)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR("MPI_Type_get_envelope", datatype);
    if (!d->x) {
        *num_integers = *num_addresses = *num_datatypes = 0;
        *combiner = MPI_COMBINER_NAMED;
        return MPI_SUCCESS;
    }
    if (d->x->large) /* as MPICH: the int form cannot describe it */
        return ism_abi_error(NULL, MPI_ERR_TYPE, "MPI_Type_get_envelope",
                             "the type was built by a large-count constructor with values "
                             "beyond INT_MAX: use MPI_Type_get_envelope_c");
    *num_integers = d->x->ni;
    *num_addresses = d->x->na;
    *num_datatypes = d->x->nt;
    *combiner = d->x->combiner;
    return MPI_SUCCESS;
}
ISM_PMPI(Type_get_envelope)

int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                           int max_datatypes, int array_of_integers[],
                           MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])
{
    const char *fn = "MPI_Type_get_contents";
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR(fn, datatype);
    if (!d->x)
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn,
                             "%s is predefined (MPI_COMBINER_NAMED) and has no contents",
                             ism_dt_name(d));
    ism_dtx *x = d->x;
    if (x->large)
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn,
                             "the type was built by a large-count constructor with values "
                             "beyond INT_MAX: use MPI_Type_get_contents_c");
    if (max_integers < x->ni || max_addresses < x->na || max_datatypes < x->nt)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "arrays too small: need %d integers, %d addresses, %d datatypes "
                             "(MPI_Type_get_envelope tells)",
                             x->ni, x->na, x->nt);
    for (int i = 0; i < x->ni; i++)
        array_of_integers[i] = (int)x->ints[i];
    for (int i = 0; i < x->na; i++)
        array_of_addresses[i] = (MPI_Aint)x->aints[i];
    ism_abi_type_contents_types(x, array_of_datatypes);
    return MPI_SUCCESS;
}
ISM_PMPI(Type_get_contents)

/* The old types of an envelope, as new handles where derived. */
void ism_abi_type_contents_types(ism_dtx *x, MPI_Datatype array_of_datatypes[])
{
    for (int i = 0; i < x->nt; i++) {
        ism_dt *t = x->types[i];
        if (t->x) {
            /* a derived type comes back as a new handle the caller frees */
            t->x->handles++;
            t->freed = 0;
            ism_dt_retain(t);
            array_of_datatypes[i] = (MPI_Datatype)t;
        } else {
            array_of_datatypes[i] = (MPI_Datatype)(uintptr_t)t->abi;
        }
    }
}


/* ---- sizes and extents ---- */

/* What the size and extent queries report, in 64 bits; 0 or the raised error. The true
 * extent is the vendor's for predefined types (12 for MPI_DOUBLE_INT). */
typedef struct dt_bounds {
    int64_t size, lb, extent, true_lb, true_extent;
} dt_bounds;

static int bounds(const char *fn, MPI_Datatype datatype, dt_bounds *b)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR(fn, datatype);
    const ism_tmap *m = ism_dt_map(d);
    b->size = d->size;
    b->lb = m->lb;
    b->extent = d->extent;
    b->true_lb = m->true_lb;
    b->true_extent = d->true_extent;
    return 0;
}

int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_size", datatype, &b);
    if (!rc) /* MPI 4.1 §5.1.5: a value the argument cannot express is MPI_UNDEFINED */
        *size = b.size > INT_MAX ? MPI_UNDEFINED : (int)b.size;
    return rc;
}
ISM_PMPI(Type_size)

int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_size_x", datatype, &b);
    if (!rc)
        *size = b.size;
    return rc;
}
ISM_PMPI(Type_size_x)

int PMPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_size_c", datatype, &b);
    if (!rc)
        *size = b.size;
    return rc;
}
ISM_PMPI(Type_size_c)

int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_get_extent", datatype, &b);
    if (!rc)
        *lb = (MPI_Aint)b.lb, *extent = (MPI_Aint)b.extent;
    return rc;
}
ISM_PMPI(Type_get_extent)

int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_get_extent_x", datatype, &b);
    if (!rc)
        *lb = b.lb, *extent = b.extent;
    return rc;
}
ISM_PMPI(Type_get_extent_x)

int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_get_true_extent", datatype, &b);
    if (!rc)
        *true_lb = (MPI_Aint)b.true_lb, *true_extent = (MPI_Aint)b.true_extent;
    return rc;
}
ISM_PMPI(Type_get_true_extent)

int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    dt_bounds b = {0};
    int rc = bounds("MPI_Type_get_true_extent_x", datatype, &b);
    if (!rc)
        *true_lb = b.true_lb, *true_extent = b.true_extent;
    return rc;
}
ISM_PMPI(Type_get_true_extent_x)

/* ---- names ---- */

/* Names work on every predefined handle of the ABI, also one this site's vendor lacks:
 * MPI lets such a type be used nowhere else, but naming it is harmless and MPICH does. */
static unsigned predefined_index(MPI_Datatype h)
{
    return (unsigned)((uintptr_t)h - ISM_DT_BASE);
}

int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d && !ism_dt_predefined_name(predefined_index(datatype)))
        return TYPE_ERR("MPI_Type_set_name", datatype);
    if (!type_name)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Type_set_name", "type_name is NULL");
    if (d ? ism_dt_set_name(d, type_name)
          : ism_dt_set_predefined_name(predefined_index(datatype), type_name))
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Type_set_name", "no memory for the name");
    return MPI_SUCCESS;
}
ISM_PMPI(Type_set_name)

int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    const char *name = d ? ism_dt_name(d) : ism_dt_predefined_name(predefined_index(datatype));
    if (!name && datatype == MPI_DATATYPE_NULL)
        name = "MPI_DATATYPE_NULL"; /* the null handle has its name, as in MPICH (MPI 4.1) */
    if (!name)
        return TYPE_ERR("MPI_Type_get_name", datatype);
    if (!type_name || !resultlen)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Type_get_name",
                             "type_name or resultlen is NULL");
    snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", name);
    *resultlen = (int)strlen(type_name);
    return MPI_SUCCESS;
}
ISM_PMPI(Type_get_name)

/* MPI_Type_match_size (MPI 3.1 §17.2.5): a predefined type of a class and byte size. The
 * sized Fortran types come first, then the default Fortran kinds, then the C types, as
 * in MPICH and Open MPI; only types this site's vendor has are candidates. The result
 * is predefined: the program must not free it. */
int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    static const MPI_Datatype reals[] = {MPI_REAL4,  MPI_REAL8, MPI_REAL16,
                                         MPI_REAL,   MPI_DOUBLE_PRECISION, MPI_FLOAT,
                                         MPI_DOUBLE, MPI_LONG_DOUBLE};
    static const MPI_Datatype ints[] = {MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4,
                                        MPI_INTEGER8, MPI_INTEGER,  MPI_SIGNED_CHAR,
                                        MPI_SHORT,    MPI_INT,      MPI_LONG,
                                        MPI_LONG_LONG};
    static const MPI_Datatype complexes[] = {
        MPI_COMPLEX8,        MPI_COMPLEX16,        MPI_COMPLEX32,
        MPI_COMPLEX,         MPI_DOUBLE_COMPLEX,   MPI_C_FLOAT_COMPLEX,
        MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX};
    const char *fn = "MPI_Type_match_size";
    ISM_CHECK_INIT(fn);
    if (!datatype)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "datatype is NULL");
    const MPI_Datatype *cand;
    size_t n;
    const char *cls;
    switch (typeclass) {
    case MPI_TYPECLASS_REAL: cand = reals, n = sizeof reals / sizeof *reals, cls = "REAL"; break;
    case MPI_TYPECLASS_INTEGER: cand = ints, n = sizeof ints / sizeof *ints, cls = "INTEGER"; break;
    case MPI_TYPECLASS_COMPLEX:
        cand = complexes, n = sizeof complexes / sizeof *complexes, cls = "COMPLEX";
        break;
    default:
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "typeclass %d is none of MPI_TYPECLASS_REAL, _INTEGER, _COMPLEX",
                             typeclass);
    }
    for (size_t i = 0; i < n; i++) {
        const ism_dt *d = ism_abi_dt(cand[i]);
        if (d && d->size == size) {
            *datatype = cand[i];
            return MPI_SUCCESS;
        }
    }
    return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                         "no predefined type of class MPI_TYPECLASS_%s has %d bytes at this site",
                         cls, size);
}
ISM_PMPI(Type_match_size)

/* ---- packing ----
 * Each body takes 64-bit counts, sizes and positions; the int forms and the large-count
 * (_c) forms call it, the int forms refusing a result an int cannot hold. */

static int pack_size(const char *fn, int64_t incount, MPI_Datatype datatype, int64_t max,
                     int64_t *size)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR(fn, datatype);
    if (incount < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, fn, "count %lld is negative",
                             (long long)incount);
    int64_t n = incount * d->size;
    if (n > max)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "%lld elements of %lld bytes do not fit an int (use %s_c)",
                             (long long)incount, (long long)d->size, fn);
    *size = n;
    return MPI_SUCCESS;
}

int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    (void)comm; /* every site packs natively; see docs/design.md, "Datatypes" */
    int64_t n = 0;
    int rc = pack_size("MPI_Pack_size", incount, datatype, INT_MAX, &n);
    if (!rc)
        *size = (int)n;
    return rc;
}
ISM_PMPI(Pack_size)

int PMPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count *size)
{
    (void)comm;
    int64_t n = 0;
    int rc = pack_size("MPI_Pack_size_c", incount, datatype, INT64_MAX, &n);
    if (!rc)
        *size = n;
    return rc;
}
ISM_PMPI(Pack_size_c)

/* Checks common to the packing calls: a committed type, a count, room. */
static int pack_check(const char *fn, MPI_Datatype datatype, int64_t count, int64_t avail,
                      int64_t pos, int64_t per, ism_dt **d)
{
    ISM_CHECK_INIT(fn);
    if (!(*d = ism_abi_dt(datatype)))
        return TYPE_ERR(fn, datatype);
    if (count < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, fn, "count %lld is negative",
                             (long long)count);
    if (pos < 0 || pos > avail)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "position %lld is outside the %lld-byte buffer",
                             (long long)pos, (long long)avail);
    if (count * per > avail - pos)
        return ism_abi_error(NULL, MPI_ERR_TRUNCATE, fn,
                             "%lld elements need %lld bytes; the buffer has %lld left after "
                             "position %lld",
                             (long long)count, (long long)(count * per),
                             (long long)(avail - pos), (long long)pos);
    return 0;
}

static int pack(const char *fn, const void *inbuf, int64_t incount, MPI_Datatype datatype,
                void *outbuf, int64_t outsize, int64_t *position)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    int rc = pack_check(fn, datatype, incount, outsize, *position, d ? d->size : 0, &d);
    if (rc)
        return rc;
    *position += (int64_t)ism_dt_pack(d, inbuf, incount, (char *)outbuf + *position);
    return MPI_SUCCESS;
}

int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
              int *position, MPI_Comm comm)
{
    (void)comm;
    int64_t pos = *position;
    int rc = pack("MPI_Pack", inbuf, incount, datatype, outbuf, outsize, &pos);
    *position = (int)pos; /* at most outsize */
    return rc;
}
ISM_PMPI(Pack)

int PMPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
                MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    (void)comm;
    int64_t pos = *position;
    int rc = pack("MPI_Pack_c", inbuf, incount, datatype, outbuf, outsize, &pos);
    *position = pos;
    return rc;
}
ISM_PMPI(Pack_c)

static int unpack(const char *fn, const void *inbuf, int64_t insize, int64_t *position,
                  void *outbuf, int64_t outcount, MPI_Datatype datatype)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    int rc = pack_check(fn, datatype, outcount, insize, *position, d ? d->size : 0, &d);
    if (rc)
        return rc;
    ism_dt_unpack(d, (const char *)inbuf + *position, outbuf, outcount);
    *position += outcount * d->size;
    return MPI_SUCCESS;
}

int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                MPI_Datatype datatype, MPI_Comm comm)
{
    (void)comm;
    int64_t pos = *position;
    int rc = unpack("MPI_Unpack", inbuf, insize, &pos, outbuf, outcount, datatype);
    *position = (int)pos;
    return rc;
}
ISM_PMPI(Unpack)

int PMPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                  MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    (void)comm;
    int64_t pos = *position;
    int rc = unpack("MPI_Unpack_c", inbuf, insize, &pos, outbuf, outcount, datatype);
    *position = pos;
    return rc;
}
ISM_PMPI(Unpack_c)

static int ext32_check(const char *fn, const char *datarep, MPI_Datatype datatype, int64_t *per)
{
    ISM_CHECK_INIT(fn);
    if (!datarep || strcmp(datarep, "external32") != 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "data representation \"%s\" is not supported (only \"external32\")",
                             datarep ? datarep : "(null)");
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR(fn, datatype);
    *per = ism_dt_map(d)->ext32;
    if (*per < 0)
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn,
                             "the type holds a basic type with no external32 form on this "
                             "platform");
    return 0;
}

static int pack_external_size(const char *fn, const char *datarep, int64_t incount,
                              MPI_Datatype datatype, int64_t *size)
{
    int64_t per = 0;
    int rc = ext32_check(fn, datarep, datatype, &per);
    if (rc)
        return rc;
    if (incount < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, fn, "count %lld is negative",
                             (long long)incount);
    *size = incount * per;
    return MPI_SUCCESS;
}

int PMPI_Pack_external_size(const char *datarep, int incount, MPI_Datatype datatype,
                            MPI_Aint *size)
{
    int64_t n = 0;
    int rc = pack_external_size("MPI_Pack_external_size", datarep, incount, datatype, &n);
    if (!rc)
        *size = (MPI_Aint)n;
    return rc;
}
ISM_PMPI(Pack_external_size)

int PMPI_Pack_external_size_c(const char *datarep, MPI_Count incount, MPI_Datatype datatype,
                              MPI_Count *size)
{
    int64_t n = 0;
    int rc = pack_external_size("MPI_Pack_external_size_c", datarep, incount, datatype, &n);
    if (!rc)
        *size = n;
    return rc;
}
ISM_PMPI(Pack_external_size_c)

static int pack_external(const char *fn, const char *datarep, const void *inbuf,
                         int64_t incount, MPI_Datatype datatype, void *outbuf, int64_t outsize,
                         int64_t *position)
{
    int64_t per = 0;
    ism_dt *d;
    int rc = ext32_check(fn, datarep, datatype, &per);
    if (!rc)
        rc = pack_check(fn, datatype, incount, outsize, *position, per, &d);
    if (rc)
        return rc;
    if (ism_tmap_pack_ext32(ism_dt_map(d), inbuf, incount, (char *)outbuf + *position))
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn, "conversion to external32 failed");
    *position += incount * per;
    return MPI_SUCCESS;
}

int PMPI_Pack_external(const char *datarep, const void *inbuf, int incount,
                       MPI_Datatype datatype, void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    int64_t pos = *position;
    int rc = pack_external("MPI_Pack_external", datarep, inbuf, incount, datatype, outbuf,
                           outsize, &pos);
    *position = (MPI_Aint)pos;
    return rc;
}
ISM_PMPI(Pack_external)

int PMPI_Pack_external_c(const char *datarep, const void *inbuf, MPI_Count incount,
                         MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                         MPI_Count *position)
{
    int64_t pos = *position;
    int rc = pack_external("MPI_Pack_external_c", datarep, inbuf, incount, datatype, outbuf,
                           outsize, &pos);
    *position = pos;
    return rc;
}
ISM_PMPI(Pack_external_c)

static int unpack_external(const char *fn, const char *datarep, const void *inbuf,
                           int64_t insize, int64_t *position, void *outbuf, int64_t outcount,
                           MPI_Datatype datatype)
{
    int64_t per = 0;
    ism_dt *d;
    int rc = ext32_check(fn, datarep, datatype, &per);
    if (!rc)
        rc = pack_check(fn, datatype, outcount, insize, *position, per, &d);
    if (rc)
        return rc;
    if (ism_tmap_unpack_ext32(ism_dt_map(d), (const char *)inbuf + *position, outcount, outbuf))
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn, "conversion from external32 failed");
    *position += outcount * per;
    return MPI_SUCCESS;
}

int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                         MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)
{
    int64_t pos = *position;
    int rc = unpack_external("MPI_Unpack_external", datarep, inbuf, insize, &pos, outbuf,
                             outcount, datatype);
    *position = (MPI_Aint)pos;
    return rc;
}
ISM_PMPI(Unpack_external)

int PMPI_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize,
                           MPI_Count *position, void *outbuf, MPI_Count outcount,
                           MPI_Datatype datatype)
{
    int64_t pos = *position;
    int rc = unpack_external("MPI_Unpack_external_c", datarep, inbuf, insize, &pos, outbuf,
                             outcount, datatype);
    *position = pos;
    return rc;
}
ISM_PMPI(Unpack_external_c)

/* ---- addresses ---- */

int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}
ISM_PMPI(Get_address)

MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
ISM_PMPI(Aint_add)

MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }
ISM_PMPI(Aint_diff)

/* ---- statuses: byte counts are packed bytes, so any type can read them ---- */

/* The large-count form: a status may hold more than INT_MAX elements (MPI_Recv_c). */
int PMPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR("MPI_Get_count_c", datatype);
    size_t b = ism_abi_status_bytes(status);
    if (d->size == 0)
        *count = b == 0 ? 0 : MPI_UNDEFINED;
    else
        *count = b % (size_t)d->size ? MPI_UNDEFINED : (MPI_Count)(b / (size_t)d->size);
    return MPI_SUCCESS;
}
ISM_PMPI(Get_count_c)

int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count n = 0;
    int rc = PMPI_Get_count_c(status, datatype, &n);
    if (!rc)
        *count = n > INT_MAX ? MPI_UNDEFINED : (int)n;
    return rc;
}
ISM_PMPI(Get_count)

static int64_t elements(ism_dt *d, const MPI_Status *status)
{
    return ism_tmap_elements(ism_dt_map(d), (int64_t)ism_abi_status_bytes(status));
}

int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR("MPI_Get_elements_x", datatype);
    int64_t e = elements(d, status);
    *count = e < 0 ? MPI_UNDEFINED : e;
    return MPI_SUCCESS;
}
ISM_PMPI(Get_elements_x)

int PMPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return PMPI_Get_elements_x(status, datatype, count);
}
ISM_PMPI(Get_elements_c)

int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return TYPE_ERR("MPI_Get_elements", datatype);
    int64_t e = elements(d, status);
    *count = e < 0 || e > INT_MAX ? MPI_UNDEFINED : (int)e;
    return MPI_SUCCESS;
}
ISM_PMPI(Get_elements)

/* MPI 4.1 §6.9.4: the predefined pair type of MPI_MINLOC/MPI_MAXLOC for a value and an
 * index type, or MPI_DATATYPE_NULL when MPI predefines none for them. */
int PMPI_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type,
                              MPI_Datatype *pair_type)
{
    static const struct {
        MPI_Datatype value, index, pair;
    } pairs[] = {
        {MPI_FLOAT, MPI_INT, MPI_FLOAT_INT},
        {MPI_DOUBLE, MPI_INT, MPI_DOUBLE_INT},
        {MPI_LONG, MPI_INT, MPI_LONG_INT},
        {MPI_INT, MPI_INT, MPI_2INT},
        {MPI_SHORT, MPI_INT, MPI_SHORT_INT},
        {MPI_LONG_DOUBLE, MPI_INT, MPI_LONG_DOUBLE_INT},
        {MPI_REAL, MPI_REAL, MPI_2REAL},
        {MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, MPI_2DOUBLE_PRECISION},
        {MPI_INTEGER, MPI_INTEGER, MPI_2INTEGER},
    };
    const char *fn = "MPI_Type_get_value_index";
    ISM_CHECK_INIT(fn);
    if (!pair_type)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn, "pair_type is NULL");
    if (!ism_abi_dt_any(value_type) || !ism_abi_dt_any(index_type))
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn, "invalid %s type",
                             ism_abi_dt_any(value_type) ? "index" : "value");
    *pair_type = MPI_DATATYPE_NULL;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        if (pairs[i].value == value_type && pairs[i].index == index_type)
            *pair_type = pairs[i].pair;
    return MPI_SUCCESS;
}
ISM_PMPI(Type_get_value_index)
