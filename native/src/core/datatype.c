/* datatype.c: datatypes and reduction ops, in the core's terms.
 *
 * Each predefined ABI handle indexes a table entry holding the vendor's handle and the
 * element size, filled from the backend once the vendor MPI is up. A type the vendor
 * lacks has no entry (v == 0) and is reported as MPI_ERR_TYPE by the ABI layer.
 *
 * A derived type is built twice from one envelope: on the vendor (so site-local
 * traffic and collectives pass the vendor handle straight through) and as a flattened
 * type map (typemap.c) that packs data for other sites. The vendor is authoritative for
 * lb and extent: MPI leaves the struct alignment padding to the implementation, and an
 * application's own strides must agree with what its local messages use. Types are
 * reference counted: user handles, the types built on them and pending receives that
 * still have to unpack each hold one, so MPI_Type_free is safe at any time.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

ism_dt ism_dt_table[ISM_DT_COUNT];
ism_op ism_op_table[ISM_OP_COUNT];
static ism_tmap pre_maps[ISM_DT_COUNT];
static char *pre_names[ISM_DT_COUNT]; /* set by MPI_Type_set_name */

/* Every predefined handle of the ABI has a name, also those the vendor of this site lacks
 * (MPI_Type_get_name still works on them). Two names are aliases of one handle; each
 * gets the older name, as MPICH does (MPI_LONG_LONG_INT is MPI-1, MPI_C_COMPLEX is the
 * first name MPI 2.2 gives float _Complex); MPICH's test suite accepts both. */
static const char *const default_names[ISM_DT_COUNT] = {
#define ISM_DT(name, idx) [idx] = "MPI_" #name,
#include "../common/abi_tables.def"
#undef ISM_DT
    /* in the ABI but in no vendor table (no Fortran compiler behind the C build) */
    [0xc0] = "MPI_LOGICAL1",
    [0xc8] = "MPI_LOGICAL2",
    [0xca] = "MPI_REAL2",
    [0xd0] = "MPI_LOGICAL4",
    [0xd3] = "MPI_COMPLEX4",
    [0xd8] = "MPI_LOGICAL8",
    [0xe0] = "MPI_LOGICAL16",
    [0xe1] = "MPI_INTEGER16",
    /* the MPI-1 bound markers (mpi.h's legacy section; only struct constructors take them) */
    [0x05] = "MPI_UB",
    [0x06] = "MPI_LB",
};

static void set_contig(ism_dt *d, const ism_tmap *m)
{
    d->contig = 0;
    d->contig_off = 0;
    if (m->size == 0) {
        d->contig = 1;
    } else if (m->nblk == 1 && m->blk[0].len == m->size && m->ub - m->lb == m->size) {
        d->contig = 1;
        d->contig_off = m->blk[0].off;
    }
}

void ism_types_init(void)
{
    for (int i = 0; i < ISM_DT_COUNT; i++) {
        int size = 0;
        if (!ism.be->dt[i] || ism.be->type_size(ism.be->dt[i], &size))
            continue;
        ism_dt_table[i].v = ism.be->dt[i];
        ptrdiff_t lb = 0, extent = size;
        ism.be->type_extent(ism.be->dt[i], &lb, &extent);
        ism_dt_table[i].size = size;
        ism_dt_table[i].extent = (int)extent;
        ptrdiff_t tlb = 0, textent = extent;
        ism.be->type_true_extent(ism.be->dt[i], &tlb, &textent);
        ism_dt_table[i].true_extent = (int)textent;
        ism_dt_table[i].abi = ISM_DT_BASE + i;
        ism_dt_table[i].committed = 1;
        ism_tmap *m = &pre_maps[i];
        if (ism_tmap_predefined(i, m) || m->size != size || m->ub - m->lb != extent) {
            /* the vendor disagrees with the C compiler about this type (a Fortran type
             * of another size, say): move it as opaque bytes, like MPI_BYTE */
            ism_tmap_free(m);
            int64_t n = size;
            ism_tmap byte;
            ism_tmap_predefined(0x47, &byte);
            const ism_tmap *t[] = {&byte};
            ism_tmap c;
            if (ism_tmap_build(ISM_COMBINER_CONTIGUOUS, &n, NULL, t, &c) == 0) {
                c.ub = c.lb + extent;
                c.ext32 = -1;
                *m = c;
            }
            ism_tmap_free(&byte);
        }
        set_contig(&ism_dt_table[i], m);
    }
    for (int i = 0; i < ISM_OP_COUNT; i++) {
        if (!ism.be->op[i])
            continue;
        ism_op_table[i].v = ism.be->op[i];
        ism_op_table[i].abi = ISM_OP_BASE + i;
        ism_op_table[i].commute = 1;
    }
}

/* Derived type and its extension in one allocation. */
typedef struct dt_alloc {
    ism_dt d;
    ism_dtx x;
} dt_alloc;

/* Released types wait in a short LIFO list and the next constructor takes the last one
 * back, so handles are reused the way MPICH's and Open MPI's are: programs (MPICH's
 * datatype/indexed_misc among them) that build a type into a handle variable copied from
 * a type they just freed get the new type there under either vendor. Until reused, a
 * freed handle still points at readable memory marked freed (MPI_ERR_TYPE, "freed"). */
#define DT_SPARE_MAX 64
static dt_alloc *dt_spare[DT_SPARE_MAX];
static int dt_nspare;

static void recycle(dt_alloc *a)
{
    if (dt_nspare < DT_SPARE_MAX)
        dt_spare[dt_nspare++] = a;
    else
        free(a);
}

static dt_alloc *dt_new(void)
{
    if (!dt_nspare)
        return calloc(1, sizeof(dt_alloc));
    dt_alloc *a = dt_spare[--dt_nspare];
    memset(a, 0, sizeof *a);
    return a;
}

const ism_tmap *ism_dt_map(const ism_dt *d)
{
    return d->x ? &d->x->map : &pre_maps[d->abi - ISM_DT_BASE];
}

void ism_dt_retain(ism_dt *d)
{
    if (d->x)
        d->x->refs++;
}

void ism_dt_release(ism_dt *d)
{
    if (!d->x || --d->x->refs > 0)
        return;
    ism_dtx *x = d->x;
    if (d->v && ism.initialized && !ism.finalized)
        ism.be->type_free(&d->v);
    for (int i = 0; i < x->nt; i++)
        ism_dt_release(x->types[i]);
    ism_tmap_free(&x->map);
    free(x->ints);
    free(x->aints);
    free(x->types);
    x->magic = ISM_DT_MAGIC_FREED;
    recycle((dt_alloc *)d);
}

void ism_dt_user_free(ism_dt *d)
{
    if (!d->x)
        return;
    if (--d->x->handles <= 0)
        d->freed = 1;
    ism_dt_release(d);
}

static int tmap_err(int rc)
{
    return rc == ISM_TMAP_ENOMEM ? ISM_ERR_NO_MEM : rc == ISM_TMAP_ETOOBIG ? ISM_ERR_UNSUPPORTED
                                                                           : ISM_ERR_ARG;
}

int ism_dt_create(int combiner, const int64_t *ints, const int64_t *aints, ism_dt *const *types,
                  ism_dt **out)
{
    int ni, na, nt;
    if (ism_envelope_sizes(combiner, ints, &ni, &na, &nt))
        return ISM_ERR_ARG;
    dt_alloc *a = dt_new();
    if (!a)
        return ISM_ERR_NO_MEM;
    ism_dt *d = &a->d;
    ism_dtx *x = &a->x;
    d->x = x;
    x->magic = ISM_DT_MAGIC;
    x->refs = x->handles = 1;
    x->combiner = combiner;
    x->ni = ni, x->na = na, x->nt = nt;
    x->ints = malloc(sizeof(int64_t) * (size_t)(ni ? ni : 1));
    int *vi = malloc(sizeof(int) * (size_t)(ni ? ni : 1)); /* the vendor's int arguments */
    x->aints = malloc(sizeof(int64_t) * (size_t)(na ? na : 1));
    x->types = malloc(sizeof(ism_dt *) * (size_t)(nt ? nt : 1));
    const ism_tmap **maps = malloc(sizeof(ism_tmap *) * (size_t)(nt ? nt : 1));
    ism_vh *vts = calloc((size_t)(nt ? nt : 1), sizeof(ism_vh)); /* [0] read even for count 0 */
    ptrdiff_t *va = malloc(sizeof(ptrdiff_t) * (size_t)(na ? na : 1));
    int rc = 0;
    if (!x->ints || !vi || !x->aints || !x->types || !maps || !vts || !va) {
        rc = ISM_ERR_NO_MEM;
        goto fail;
    }
    x->large = 0;
    for (int i = 0; i < ni; i++) {
        x->ints[i] = ints[i];
        x->large |= ints[i] > INT_MAX || ints[i] < INT_MIN;
        vi[i] = (int)ints[i];
    }
    for (int i = 0; i < na; i++)
        x->aints[i] = aints[i], va[i] = (ptrdiff_t)aints[i];
    for (int i = 0; i < nt; i++) {
        x->types[i] = types[i];
        maps[i] = ism_dt_map(types[i]);
        vts[i] = types[i]->v;
    }
    if ((rc = ism_tmap_build(combiner, x->ints, x->aints, maps, &x->map))) {
        rc = tmap_err(rc);
        goto fail;
    }
    ism_tmap *m = &x->map;
    /* the vendor's constructors take ints: beyond them, its twin comes from the map */
    if ((rc = x->large ? ism_dt_vendor_from_map(m, &d->v)
                       : ism.be->type_create(combiner, vi, va, vts, &d->v)))
        goto fail_map;
    ptrdiff_t vlb = 0, vext = 0;
    if (ism.be->type_extent(d->v, &vlb, &vext) == 0 && (vlb != m->lb || vlb + vext != m->ub)) {
        m->lb = vlb;
        m->ub = vlb + vext;
    }
    d->size = m->size;
    d->extent = m->ub - m->lb;
    d->true_extent = m->true_ub - m->true_lb;
    set_contig(d, m);
    for (int i = 0; i < nt; i++)
        ism_dt_retain(types[i]);
    free(vi);
    free(maps);
    free(vts);
    free(va);
    *out = d;
    return 0;
fail_map:
    ism_tmap_free(&x->map);
fail:
    free(vi);
    free(x->ints);
    free(x->aints);
    free(x->types);
    free(maps);
    free(vts);
    free(va);
    x->magic = ISM_DT_MAGIC_FREED;
    recycle(a);
    return rc;
}

int ism_dt_commit(ism_dt *d)
{
    if (!d->x || d->committed)
        return 0;
    int rc = ism.be->type_commit(&d->v);
    if (!rc)
        d->committed = 1;
    return rc;
}

size_t ism_dt_pack(ism_dt *d, const void *buf, int64_t count, void *out)
{
    size_t n = (size_t)count * (size_t)d->size;
    if (d->contig) {
        if (n)
            memcpy(out, (const char *)((uintptr_t)buf + (uintptr_t)d->contig_off), n);
        return n;
    }
    ism_tmap_pack(ism_dt_map(d), buf, count, out);
    return n;
}

void ism_dt_unpack_bytes(ism_dt *d, const void *in, size_t nbytes, void *buf)
{
    if (d->contig) {
        if (nbytes)
            memcpy((char *)((uintptr_t)buf + (uintptr_t)d->contig_off), in, nbytes);
        return;
    }
    ism_tmap_unpack(ism_dt_map(d), in, (int64_t)nbytes, buf);
}

void ism_dt_unpack(ism_dt *d, const void *in, void *buf, int64_t count)
{
    ism_dt_unpack_bytes(d, in, (size_t)count * (size_t)d->size, buf);
}

const char *ism_dt_predefined_name(unsigned idx)
{
    if (idx >= ISM_DT_COUNT || !default_names[idx])
        return NULL;
    if (pre_names[idx])
        return pre_names[idx];
    return idx == 0x0b ? "MPI_LONG_LONG_INT" : idx == 0x12 ? "MPI_C_COMPLEX" : default_names[idx];
}

const char *ism_dt_name(const ism_dt *d)
{
    if (d->x)
        return d->x->name;
    const char *n = ism_dt_predefined_name((unsigned)(d->abi - ISM_DT_BASE));
    return n ? n : "";
}

int ism_dt_set_predefined_name(unsigned idx, const char *name)
{
    if (idx >= ISM_DT_COUNT || !default_names[idx])
        return ISM_ERR_ARG;
    char *copy = malloc(128);
    if (!copy)
        return ISM_ERR_NO_MEM;
    snprintf(copy, 128, "%s", name);
    free(pre_names[idx]);
    pre_names[idx] = copy;
    return 0;
}

int ism_dt_set_name(ism_dt *d, const char *name)
{
    if (d->x) {
        snprintf(d->x->name, sizeof d->x->name, "%s", name);
        return 0;
    }
    return ism_dt_set_predefined_name((unsigned)(d->abi - ISM_DT_BASE), name);
}
