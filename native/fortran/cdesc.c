/* cdesc.c (fortran): the mpi_f08 choice buffers, which arrive as C descriptors of any
 * array or array section (TS 29113, so MPI_SUBARRAYS_SUPPORTED is .TRUE.). A scalar, a
 * contiguous array or a sentinel passes its address. A noncontiguous section whose
 * buffer holds (count, datatype) with a datatype that is one array element (MPI_REAL on a
 * REAL array, ...) becomes a datatype describing the section, so no byte is copied and
 * nonblocking and persistent calls work as they are; any other noncontiguous buffer (a
 * rooted collective's blocks, a reduction, whose user function must see the program's
 * own datatype, a datatype spanning several elements) is copied to a contiguous image
 * and back, after the call or, for a nonblocking one, when its request completes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

/* a contiguous image of a section and where it goes back (one allocation, which also
 * waits for the request of a nonblocking call) */
typedef struct ism_f08_copy {
    ism_f_waiter w;
    char *base;
    size_t elem;
    int rank, out;
    CFI_index_t extent[CFI_MAX_RANK], sm[CFI_MAX_RANK];
    _Alignas(16) char image[];
} image;

static int is_sentinel(const CFI_cdesc_t *d)
{
    return ism_f_buf(d->base_addr) != d->base_addr;
}

static int contiguous(const CFI_cdesc_t *d)
{
    CFI_index_t want = (CFI_index_t)d->elem_len;
    for (int i = 0; i < d->rank; i++) {
        if (d->dim[i].extent <= 1)
            continue;
        if (d->dim[i].sm != want)
            return 0;
        want *= d->dim[i].extent;
    }
    return 1;
}

static CFI_index_t elements(const CFI_cdesc_t *d)
{
    CFI_index_t n = 1;
    for (int i = 0; i < d->rank; i++)
        n *= d->dim[i].extent > 0 ? d->dim[i].extent : 0;
    return n;
}

static void direct(const CFI_cdesc_t *d, MPI_Count count, MPI_Datatype type, ism_f08_buf *b)
{
    b->buf = ism_f_buf(d->base_addr);
    b->count = count;
    b->type = type;
    b->made = MPI_DATATYPE_NULL;
    b->copy = NULL;
}

void *ism_f08_addr(const CFI_cdesc_t *d)
{
    return ism_f_buf(d->base_addr);
}

static int fail(int code, const char *fn, const char *fmt, long long a, long long b)
{
    char msg[300];
    snprintf(msg, sizeof msg, fmt, a, b);
    return ism_abi_f_error(code, fn, msg);
}

/* The byte offset of element k (in array element order) of the section. */
static MPI_Aint offset_of(const CFI_cdesc_t *d, CFI_index_t k)
{
    MPI_Aint off = 0;
    for (int i = 0; i < d->rank; i++) {
        off += (MPI_Aint)(k % d->dim[i].extent) * d->dim[i].sm;
        k /= d->dim[i].extent;
    }
    return off;
}

/* A datatype for the first count elements of the section, each one `type`. */
static int section_type(const CFI_cdesc_t *d, MPI_Count count, MPI_Datatype type,
                        MPI_Datatype *out)
{
    int rc;
    MPI_Datatype t = type;
    if (count == elements(d)) {
        /* one vector level per dimension, strides in bytes, blocks of one */
        for (int i = 0; i < d->rank; i++) {
            MPI_Datatype n;
            rc = PMPI_Type_create_hvector((int)d->dim[i].extent, 1, (MPI_Aint)d->dim[i].sm, t,
                                          &n);
            if (t != type)
                PMPI_Type_free(&t);
            if (rc != MPI_SUCCESS)
                return rc;
            t = n;
        }
    } else {
        MPI_Aint *disp = malloc(sizeof *disp * (size_t)count);
        if (!disp)
            return MPI_ERR_NO_MEM;
        for (MPI_Count k = 0; k < count; k++)
            disp[k] = offset_of(d, k);
        rc = PMPI_Type_create_hindexed_block((int)count, 1, disp, type, &t);
        free(disp);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    rc = PMPI_Type_commit(&t);
    if (rc != MPI_SUCCESS) {
        PMPI_Type_free(&t);
        return rc;
    }
    *out = t;
    return MPI_SUCCESS;
}

/* Whether type is exactly one element of elem bytes: no gaps, no offset. */
static int element_sized(MPI_Datatype type, size_t elem)
{
    MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(type, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    return size == (MPI_Count)elem && extent == size && lb == 0 && tlb == 0 && textent == size;
}

/* Walk the section's elements in array element order, copying each to or from the
 * contiguous image. */
static void walk(image *c, int to_image)
{
    CFI_index_t idx[CFI_MAX_RANK] = {0};
    CFI_index_t n = 1;
    for (int i = 0; i < c->rank; i++)
        n *= c->extent[i];
    char *p = c->base;
    for (CFI_index_t k = 0; k < n; k++) {
        char *img = c->image + (size_t)k * c->elem;
        if (to_image)
            memcpy(img, p, c->elem);
        else
            memcpy(p, img, c->elem);
        for (int i = 0; i < c->rank; i++) {
            p += c->sm[i];
            if (++idx[i] < c->extent[i])
                break;
            p -= c->sm[i] * c->extent[i];
            idx[i] = 0;
        }
    }
}

static void write_back(ism_f_waiter *w)
{
    image *c = (image *)w;
    if (c->out)
        walk(c, 0);
    free(c);
}

/* b->buf: a contiguous image of the noncontiguous section d */
static int copy_of(const CFI_cdesc_t *d, int flags, const char *fn, ism_f08_buf *b)
{
    if (flags & ISM_F08_PERSIST)
        return ism_abi_f_error(MPI_ERR_BUFFER, fn,
                               "a noncontiguous array section is the buffer of a persistent "
                               "request, and its datatype is not one element of the array: "
                               "the copy it needs would go stale between MPI_Start calls; "
                               "pass a contiguous array, or a datatype of one element");
    CFI_index_t n = elements(d);
    image *c = malloc(sizeof *c + (size_t)(n > 0 ? n : 1) * d->elem_len);
    if (!c)
        return ism_f_nomem(fn);
    c->w.done = write_back;
    c->base = d->base_addr;
    c->elem = d->elem_len;
    c->rank = d->rank;
    c->out = (flags & ISM_F08_OUT) != 0;
    for (int i = 0; i < d->rank; i++) {
        c->extent[i] = d->dim[i].extent;
        c->sm[i] = d->dim[i].sm;
    }
    /* copied in even for a receive: what the call leaves alone must come back unchanged */
    walk(c, 1);
    b->copy = c;
    b->buf = c->image;
    return MPI_SUCCESS;
}

int ism_f08_image(const CFI_cdesc_t *d, int flags, const char *fn, ism_f08_buf *b)
{
    direct(d, 0, MPI_DATATYPE_NULL, b);
    if (is_sentinel(d) || d->rank == 0 || contiguous(d))
        return MPI_SUCCESS;
    return copy_of(d, flags, fn, b);
}

int ism_f08_triple(const CFI_cdesc_t *d, MPI_Count count, MPI_Datatype type, int flags,
                   const char *fn, ism_f08_buf *b)
{
    direct(d, count, type, b);
    if (is_sentinel(d) || d->rank == 0 || contiguous(d) || count <= 0)
        return MPI_SUCCESS;
    if (!element_sized(type, d->elem_len))
        return copy_of(d, flags, fn, b);
    if (count > elements(d))
        return fail(MPI_ERR_COUNT, fn,
                    "count %lld is more than the %lld elements of the array section", count,
                    (long long)elements(d));
    int rc = section_type(d, count, type, &b->made);
    if (rc != MPI_SUCCESS)
        return rc == MPI_ERR_NO_MEM ? ism_f_nomem(fn) : rc;
    b->buf = d->base_addr;
    b->count = 1;
    b->type = b->made;
    return MPI_SUCCESS;
}

void ism_f08_done(ism_f08_buf *b, int rc, const MPI_Fint *request)
{
    /* a request holds its own reference to a datatype: freeing ours is safe at once */
    if (b->made != MPI_DATATYPE_NULL)
        PMPI_Type_free(&b->made);
    if (!b->copy)
        return;
    if (request)
        ism_f_keep(rc, request, &b->copy->w);
    else
        write_back(&b->copy->w);
    b->copy = NULL;
}
