/* datatype_large.c (abi): the large-count (_c) datatype constructors and envelope queries.
 *
 * A _c constructor whose values all fit an int is its int form (same checks, same
 * envelope). Otherwise the envelope is kept with its integers widened to 64 bits, laid out
 * as the int form's (the type-map builder reads one layout), and marked large: the vendor's
 * twin is then built from the map (core/dt_vendor_large.c), MPI_Type_get_envelope and
 * MPI_Type_get_contents refuse it as MPICH does, and the _c queries return the MPI-4 large
 * layout (the MPI_Count arguments in array_of_large_counts, in argument order).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

static int fits(MPI_Count v) { return v <= INT_MAX && v >= INT_MIN; }

static int all_fit(const MPI_Count *v, MPI_Count n)
{
    for (MPI_Count i = 0; v && i < n; i++)
        if (!fits(v[i]))
            return 0;
    return 1;
}

static int *narrow(const MPI_Count *v, MPI_Count n)
{
    int *o = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (MPI_Count i = 0; o && i < n; i++)
        o[i] = (int)v[i];
    return o;
}

static MPI_Aint *addrs(const MPI_Count *v, MPI_Count n)
{
    MPI_Aint *o = malloc(sizeof(MPI_Aint) * (size_t)(n > 0 ? n : 1));
    for (MPI_Count i = 0; o && i < n; i++)
        o[i] = (MPI_Aint)v[i];
    return o;
}

static int bad_count(const char *fn, MPI_Count n)
{
    if (n < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, fn, "count %lld is negative", (long long)n);
    return 0;
}

/* Arrays of blocks: the type map holds at most ISM_TMAP_MAX_ENTRIES of them. */
static int too_many(const char *fn, MPI_Count n)
{
    if (n > ISM_TMAP_MAX_ENTRIES)
        return ism_abi_error(NULL, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                             "%lld blocks: a type holds at most %d", (long long)n,
                             ISM_TMAP_MAX_ENTRIES);
    return 0;
}

static int bad_lengths(const char *fn, const MPI_Count *bl, MPI_Count n)
{
    for (MPI_Count i = 0; i < n; i++)
        if (bl[i] < 0)
            return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                                 "block length %lld (index %lld) is negative",
                                 (long long)bl[i], (long long)i);
    return 0;
}

static int no_mem(const char *fn) { return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "no memory"); }

/* {head..., a[n], b[n]} widened */
static int64_t *envelope(const MPI_Count *head, int nhead, const MPI_Count *a,
                         const MPI_Count *b, MPI_Count n)
{
    int64_t *e = malloc(sizeof(int64_t) * (size_t)(nhead + (a ? n : 0) + (b ? n : 0) + 1));
    if (!e)
        return NULL;
    int64_t k = 0;
    for (int i = 0; i < nhead; i++)
        e[k++] = head[i];
    for (MPI_Count i = 0; a && i < n; i++)
        e[k++] = a[i];
    for (MPI_Count i = 0; b && i < n; i++)
        e[k++] = b[i];
    return e;
}

static int make_env(const char *fn, int combiner, int64_t *ints, const MPI_Aint *aints,
                    const MPI_Datatype *olds, int nold, MPI_Datatype *newtype)
{
    int rc = ints ? ism_abi_type_make(fn, combiner, ints, aints, olds, nold, newtype) : no_mem(fn);
    free(ints);
    return rc;
}

int PMPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_contiguous_c";
    if (fits(count))
        return PMPI_Type_contiguous((int)count, oldtype, newtype);
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    int64_t ints[] = {count};
    return ism_abi_type_make(fn, ISM_COMBINER_CONTIGUOUS, ints, NULL, &oldtype, 1, newtype);
}
ISM_PMPI(Type_contiguous_c)

int PMPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_vector_c";
    if (fits(count) && fits(blocklength) && fits(stride))
        return PMPI_Type_vector((int)count, (int)blocklength, (int)stride, oldtype, newtype);
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    if (bad_lengths(fn, &blocklength, 1))
        return MPI_ERR_ARG;
    int64_t ints[] = {count, blocklength, stride};
    return ism_abi_type_make(fn, ISM_COMBINER_VECTOR, ints, NULL, &oldtype, 1, newtype);
}
ISM_PMPI(Type_vector_c)

int PMPI_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                               MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_hvector_c";
    if (fits(count) && fits(blocklength))
        return PMPI_Type_create_hvector((int)count, (int)blocklength, (MPI_Aint)stride, oldtype,
                                        newtype);
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    if (bad_lengths(fn, &blocklength, 1))
        return MPI_ERR_ARG;
    int64_t ints[] = {count, blocklength};
    MPI_Aint a[] = {(MPI_Aint)stride};
    return ism_abi_type_make(fn, ISM_COMBINER_HVECTOR, ints, a, &oldtype, 1, newtype);
}
ISM_PMPI(Type_create_hvector_c)

int PMPI_Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                        const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                        MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_indexed_c";
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    if (too_many(fn, count))
        return MPI_ERR_UNSUPPORTED_OPERATION;
    if (all_fit(array_of_blocklengths, count) && all_fit(array_of_displacements, count)) {
        int *bl = narrow(array_of_blocklengths, count), *d = narrow(array_of_displacements, count);
        int rc = bl && d ? PMPI_Type_indexed((int)count, bl, d, oldtype, newtype) : no_mem(fn);
        free(bl);
        free(d);
        return rc;
    }
    if (bad_lengths(fn, array_of_blocklengths, count))
        return MPI_ERR_ARG;
    MPI_Count head[] = {count};
    return make_env(fn, ISM_COMBINER_INDEXED,
                    envelope(head, 1, array_of_blocklengths, array_of_displacements, count), NULL,
                    &oldtype, 1, newtype);
}
ISM_PMPI(Type_indexed_c)

/* hindexed_c (one old type) and struct_c (one per block): block lengths and byte
 * displacements; the int form while the lengths fit. */
static int h_blocks(const char *fn, int combiner, MPI_Count count, const MPI_Count *bl,
                    const MPI_Count *disp, const MPI_Datatype *types, MPI_Datatype *newtype)
{
    int st = combiner == ISM_COMBINER_STRUCT;
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    if (too_many(fn, count))
        return MPI_ERR_UNSUPPORTED_OPERATION;
    MPI_Aint *d = addrs(disp, count);
    if (!d)
        return no_mem(fn);
    int rc = MPI_SUCCESS;
    if (all_fit(bl, count)) {
        int *b = narrow(bl, count);
        rc = !b  ? no_mem(fn)
             : st ? PMPI_Type_create_struct((int)count, b, d, types, newtype)
                  : PMPI_Type_create_hindexed((int)count, b, d, types[0], newtype);
        free(b);
    } else if (bad_lengths(fn, bl, count)) {
        rc = MPI_ERR_ARG;
    } else {
        for (MPI_Count i = 0; st && i < count && !rc; i++)
            if (ism_abi_is_bound_marker(types[i]))
                rc = ism_abi_error(NULL, MPI_ERR_TYPE, fn,
                                   "MPI_LB and MPI_UB (MPI-1) take no large block lengths");
        MPI_Count head[] = {count};
        if (!rc)
            rc = make_env(fn, combiner, envelope(head, 1, bl, NULL, count), d, types,
                          st ? (int)count : 1, newtype);
    }
    free(d);
    return rc;
}

int PMPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                MPI_Datatype *newtype)
{
    return h_blocks("MPI_Type_create_hindexed_c", ISM_COMBINER_HINDEXED, count,
                    array_of_blocklengths, array_of_displacements, &oldtype, newtype);
}
ISM_PMPI(Type_create_hindexed_c)

int PMPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                     const MPI_Count array_of_displacements[],
                                     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_indexed_block_c";
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    if (too_many(fn, count))
        return MPI_ERR_UNSUPPORTED_OPERATION;
    if (fits(blocklength) && all_fit(array_of_displacements, count)) {
        int *d = narrow(array_of_displacements, count);
        int rc = d ? PMPI_Type_create_indexed_block((int)count, (int)blocklength, d, oldtype,
                                                    newtype)
                   : no_mem(fn);
        free(d);
        return rc;
    }
    if (bad_lengths(fn, &blocklength, 1))
        return MPI_ERR_ARG;
    MPI_Count head[] = {count, blocklength};
    return make_env(fn, ISM_COMBINER_INDEXED_BLOCK,
                    envelope(head, 2, array_of_displacements, NULL, count), NULL, &oldtype, 1,
                    newtype);
}
ISM_PMPI(Type_create_indexed_block_c)

int PMPI_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                      const MPI_Count array_of_displacements[],
                                      MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_hindexed_block_c";
    if (bad_count(fn, count))
        return MPI_ERR_COUNT;
    if (too_many(fn, count))
        return MPI_ERR_UNSUPPORTED_OPERATION;
    MPI_Aint *d = addrs(array_of_displacements, count);
    if (!d)
        return no_mem(fn);
    int rc;
    if (fits(blocklength)) {
        rc = PMPI_Type_create_hindexed_block((int)count, (int)blocklength, d, oldtype, newtype);
    } else if (!(rc = bad_lengths(fn, &blocklength, 1) ? MPI_ERR_ARG : 0)) {
        int64_t ints[] = {count, blocklength};
        rc = ism_abi_type_make(fn, ISM_COMBINER_HINDEXED_BLOCK, ints, d, &oldtype, 1, newtype);
    }
    free(d);
    return rc;
}
ISM_PMPI(Type_create_hindexed_block_c)

int PMPI_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                              const MPI_Count array_of_displacements[],
                              const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return h_blocks("MPI_Type_create_struct_c", ISM_COMBINER_STRUCT, count,
                    array_of_blocklengths, array_of_displacements, array_of_types, newtype);
}
ISM_PMPI(Type_create_struct_c)

int PMPI_Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[],
                                const MPI_Count array_of_subsizes[],
                                const MPI_Count array_of_starts[], int order,
                                MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_subarray_c";
    if (ndims <= 0 || ndims > 1024)
        return ism_abi_error(NULL, MPI_ERR_DIMS, fn, "ndims %d must be in 1..1024", ndims);
    if (all_fit(array_of_sizes, ndims) && all_fit(array_of_subsizes, ndims) &&
        all_fit(array_of_starts, ndims)) {
        int *a = narrow(array_of_sizes, ndims), *b = narrow(array_of_subsizes, ndims),
            *c = narrow(array_of_starts, ndims);
        int rc = a && b && c ? PMPI_Type_create_subarray(ndims, a, b, c, order, oldtype, newtype)
                             : no_mem(fn);
        free(a);
        free(b);
        free(c);
        return rc;
    }
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
    for (int d = 0; d < ndims; d++)
        if (array_of_sizes[d] <= 0 || array_of_subsizes[d] <= 0 || array_of_starts[d] < 0 ||
            array_of_starts[d] > array_of_sizes[d] - array_of_subsizes[d])
            return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                                 "dimension %d: size %lld, subsize %lld, start %lld do not fit",
                                 d, (long long)array_of_sizes[d], (long long)array_of_subsizes[d],
                                 (long long)array_of_starts[d]);
    int64_t *ints = malloc(sizeof(int64_t) * (size_t)(3 * ndims + 2));
    if (!ints)
        return no_mem(fn);
    ints[0] = ndims;
    for (int d = 0; d < ndims; d++) {
        ints[1 + d] = array_of_sizes[d];
        ints[1 + ndims + d] = array_of_subsizes[d];
        ints[1 + 2 * ndims + d] = array_of_starts[d];
    }
    ints[1 + 3 * ndims] = order;
    return make_env(fn, ISM_COMBINER_SUBARRAY, ints, NULL, &oldtype, 1, newtype);
}
ISM_PMPI(Type_create_subarray_c)

int PMPI_Type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                              const int array_of_distribs[], const int array_of_dargs[],
                              const int array_of_psizes[], int order, MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_darray_c";
    if (ndims <= 0 || ndims > 1024)
        return ism_abi_error(NULL, MPI_ERR_DIMS, fn, "ndims %d must be in 1..1024", ndims);
    if (all_fit(array_of_gsizes, ndims)) {
        int *g = narrow(array_of_gsizes, ndims);
        int rc = g ? PMPI_Type_create_darray(size, rank, ndims, g, array_of_distribs,
                                             array_of_dargs, array_of_psizes, order, oldtype,
                                             newtype)
                   : no_mem(fn);
        free(g);
        return rc;
    }
    int bad = ism_abi_darray_args(fn, size, rank, ndims, array_of_gsizes, array_of_distribs,
                                  array_of_dargs, array_of_psizes, order);
    if (bad)
        return bad;
    int64_t *ints = malloc(sizeof(int64_t) * (size_t)(4 * ndims + 4));
    if (!ints)
        return no_mem(fn);
    ints[0] = size, ints[1] = rank, ints[2] = ndims;
    for (int d = 0; d < ndims; d++) {
        ints[3 + d] = array_of_gsizes[d];
        ints[3 + ndims + d] = array_of_distribs[d];
        ints[3 + 2 * ndims + d] = array_of_dargs[d];
        ints[3 + 3 * ndims + d] = array_of_psizes[d];
    }
    ints[3 + 4 * ndims] = order;
    return make_env(fn, ISM_COMBINER_DARRAY, ints, NULL, &oldtype, 1, newtype);
}
ISM_PMPI(Type_create_darray_c)

int PMPI_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                               MPI_Datatype *newtype)
{
    return PMPI_Type_create_resized(oldtype, (MPI_Aint)lb, (MPI_Aint)extent, newtype);
}
ISM_PMPI(Type_create_resized_c)

/* ---- the envelope: MPI 4.1 §5.1.13, the large-count column ---- */

/* Where each of a large type's integers goes: 'i' array_of_integers, 'l' large counts.
 * The int layout's addresses (hvector's stride, the h-forms' displacements) are MPI_Count
 * arguments of the _c constructors, so they go to the large counts too, after the
 * integers that precede them in the argument list. */
typedef struct large_env {
    int64_t ni, nl;
    int64_t *ints, *counts; /* NULL when only counting */
} large_env;

static void put(large_env *e, char where, int64_t v)
{
    if (where == 'i') {
        if (e->ints)
            e->ints[e->ni] = v;
        e->ni++;
    } else {
        if (e->counts)
            e->counts[e->nl] = v;
        e->nl++;
    }
}

static void large_layout(const ism_dtx *x, large_env *e)
{
    const int64_t *in = x->ints, *a = x->aints;
    int64_t c = x->ni ? in[0] : 0;
    switch (x->combiner) {
    case ISM_COMBINER_HVECTOR:
        put(e, 'l', in[0]), put(e, 'l', in[1]), put(e, 'l', a[0]);
        break;
    case ISM_COMBINER_HINDEXED:
    case ISM_COMBINER_STRUCT:
        for (int64_t i = 0; i <= c; i++)
            put(e, 'l', in[i]);
        for (int64_t i = 0; i < c; i++)
            put(e, 'l', a[i]);
        break;
    case ISM_COMBINER_HINDEXED_BLOCK:
        put(e, 'l', in[0]), put(e, 'l', in[1]);
        for (int64_t i = 0; i < c; i++)
            put(e, 'l', a[i]);
        break;
    case ISM_COMBINER_SUBARRAY: /* ints {ndims, order}, counts {sizes, subsizes, starts} */
        put(e, 'i', in[0]);
        put(e, 'i', in[1 + 3 * c]);
        for (int64_t i = 0; i < 3 * c; i++)
            put(e, 'l', in[1 + i]);
        break;
    case ISM_COMBINER_DARRAY: { /* counts {gsizes}, the rest integers */
        int64_t n = in[2];
        put(e, 'i', in[0]), put(e, 'i', in[1]), put(e, 'i', in[2]);
        for (int64_t i = 0; i < 3 * n; i++)
            put(e, 'i', in[3 + n + i]);
        put(e, 'i', in[3 + 4 * n]);
        for (int64_t i = 0; i < n; i++)
            put(e, 'l', in[3 + i]);
        break;
    }
    default: /* contiguous, vector, indexed, indexed_block: every integer is a count */
        for (int i = 0; i < x->ni; i++)
            put(e, 'l', in[i]);
        break;
    }
}

int PMPI_Type_get_envelope_c(MPI_Datatype datatype, MPI_Count *num_integers,
                             MPI_Count *num_addresses, MPI_Count *num_large_counts,
                             MPI_Count *num_datatypes, int *combiner)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return ism_abi_error(NULL, MPI_ERR_TYPE, "MPI_Type_get_envelope_c", "%s",
                             ism_abi_dt_problem(datatype));
    if (!d->x || !d->x->large) {
        int ni = 0, na = 0, nt = 0;
        int rc = PMPI_Type_get_envelope(datatype, &ni, &na, &nt, combiner);
        if (!rc)
            *num_integers = ni, *num_addresses = na, *num_large_counts = 0, *num_datatypes = nt;
        return rc;
    }
    large_env e = {0};
    large_layout(d->x, &e);
    *num_integers = e.ni;
    *num_addresses = 0;
    *num_large_counts = e.nl;
    *num_datatypes = d->x->nt;
    *combiner = d->x->combiner;
    return MPI_SUCCESS;
}
ISM_PMPI(Type_get_envelope_c)

int PMPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers,
                             MPI_Count max_addresses, MPI_Count max_large_counts,
                             MPI_Count max_datatypes, int array_of_integers[],
                             MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                             MPI_Datatype array_of_datatypes[])
{
    const char *fn = "MPI_Type_get_contents_c";
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!d)
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn, "%s", ism_abi_dt_problem(datatype));
    if (!d->x || !d->x->large) {
        int clamp[3] = {max_integers > INT_MAX ? INT_MAX : (int)max_integers,
                        max_addresses > INT_MAX ? INT_MAX : (int)max_addresses,
                        max_datatypes > INT_MAX ? INT_MAX : (int)max_datatypes};
        return PMPI_Type_get_contents(datatype, clamp[0], clamp[1], clamp[2], array_of_integers,
                                      array_of_addresses, array_of_datatypes);
    }
    (void)max_addresses;
    (void)array_of_addresses;
    large_env e = {0};
    large_layout(d->x, &e);
    if (max_integers < e.ni || max_large_counts < e.nl || max_datatypes < d->x->nt)
        return ism_abi_error(NULL, MPI_ERR_ARG, fn,
                             "arrays too small: need %lld integers, %lld large counts, %d "
                             "datatypes (MPI_Type_get_envelope_c tells)",
                             (long long)e.ni, (long long)e.nl, d->x->nt);
    int64_t *ints = malloc(sizeof(int64_t) * (size_t)(e.ni + 1));
    if (!ints)
        return no_mem(fn);
    large_env f = {0, 0, ints, array_of_large_counts};
    large_layout(d->x, &f);
    for (int64_t i = 0; i < f.ni; i++)
        array_of_integers[i] = (int)ints[i];
    free(ints);
    ism_abi_type_contents_types(d->x, array_of_datatypes);
    return MPI_SUCCESS;
}
ISM_PMPI(Type_get_contents_c)
