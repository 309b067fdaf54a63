/* typemap.c: the basic kinds and the construction of flattened type maps.
 *
 * Owns the table of predefined kinds (native size, external32 size, conversion class,
 * alignment), the maps of predefined types, and one builder for every combiner: each
 * constructor is reduced to "copies of old maps at displacements", appended in type-map
 * order with adjacent blocks and runs merged, so the result is as short as the layout
 * allows. Bounds follow the MPI rules (lb/ub over all copies; resized, subarray and
 * darray set them explicitly; struct rounds the extent up to its largest alignment).
 * The core adopts the vendor's lb/extent afterwards when they differ (see datatype.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dtmap.h"

#define K(idx, sz, e32, c, al) [idx] = {(int)(sz), (e32), (c), (int)(al)}
static const ism_kind kinds[ISM_KIND_COUNT] = {
    K(0x01, sizeof(intptr_t), 8, ISM_KC_INT, _Alignof(intptr_t)),  /* AINT */
    K(0x02, 8, 8, ISM_KC_INT, _Alignof(int64_t)),                  /* COUNT */
    K(0x03, 8, 8, ISM_KC_INT, _Alignof(int64_t)),                  /* OFFSET */
    K(0x07, 1, 1, ISM_KC_RAW, 1),                                  /* PACKED */
    K(0x08, sizeof(short), 2, ISM_KC_INT, _Alignof(short)),        /* SHORT */
    K(0x09, sizeof(int), 4, ISM_KC_INT, _Alignof(int)),            /* INT */
    K(0x0a, sizeof(long), 4, ISM_KC_INT, _Alignof(long)),          /* LONG */
    K(0x0b, sizeof(long long), 8, ISM_KC_INT, _Alignof(long long)),
    K(0x0c, sizeof(unsigned short), 2, ISM_KC_UINT, _Alignof(unsigned short)),
    K(0x0d, sizeof(unsigned), 4, ISM_KC_UINT, _Alignof(unsigned)),
    K(0x0e, sizeof(unsigned long), 4, ISM_KC_UINT, _Alignof(unsigned long)),
    K(0x0f, sizeof(unsigned long long), 8, ISM_KC_UINT, _Alignof(unsigned long long)),
    K(0x10, sizeof(float), 4, ISM_KC_FLOAT, _Alignof(float)),
    K(0x12, 2 * sizeof(float), 8, ISM_KC_COMPLEX, _Alignof(float)), /* C_FLOAT_COMPLEX */
    K(0x13, 2 * sizeof(float), 8, ISM_KC_COMPLEX, _Alignof(float)),
    K(0x14, sizeof(double), 8, ISM_KC_FLOAT, _Alignof(double)),
    K(0x16, 2 * sizeof(double), 16, ISM_KC_COMPLEX, _Alignof(double)),
    K(0x17, 2 * sizeof(double), 16, ISM_KC_COMPLEX, _Alignof(double)),
    K(0x18, 4, 4, ISM_KC_INT, 4),   /* LOGICAL */
    K(0x19, 4, 4, ISM_KC_INT, 4),   /* INTEGER */
    K(0x1a, 4, 4, ISM_KC_FLOAT, 4), /* REAL */
    K(0x1b, 8, 8, ISM_KC_COMPLEX, 4),
    K(0x1c, 8, 8, ISM_KC_FLOAT, 8), /* DOUBLE_PRECISION */
    K(0x1d, 16, 16, ISM_KC_COMPLEX, 8),
    K(0x1e, 1, 1, ISM_KC_RAW, 1), /* CHARACTER */
    K(0x20, sizeof(long double), 16, ISM_KC_LDOUBLE, _Alignof(long double)),
    K(0x24, 2 * sizeof(long double), 32, ISM_KC_LDCOMPLEX, _Alignof(long double)),
    K(0x25, 2 * sizeof(long double), 32, ISM_KC_LDCOMPLEX, _Alignof(long double)),
    K(0x38, sizeof(_Bool), 1, ISM_KC_RAW, _Alignof(_Bool)), /* C_BOOL */
    K(0x39, 1, 1, ISM_KC_RAW, 1),                            /* CXX_BOOL */
    K(0x3c, sizeof(int), 2, ISM_KC_UINT, _Alignof(int)),     /* WCHAR (wchar_t: 4 on Linux) */
    K(0x40, 1, 1, ISM_KC_INT, 1),
    K(0x41, 1, 1, ISM_KC_UINT, 1),
    K(0x43, 1, 1, ISM_KC_RAW, 1), /* CHAR */
    K(0x44, 1, 1, ISM_KC_RAW, 1), /* SIGNED_CHAR */
    K(0x45, 1, 1, ISM_KC_RAW, 1), /* UNSIGNED_CHAR */
    K(0x47, 1, 1, ISM_KC_RAW, 1), /* BYTE */
    K(0x48, 2, 2, ISM_KC_INT, 2),
    K(0x49, 2, 2, ISM_KC_UINT, 2),
    K(0x50, 4, 4, ISM_KC_INT, 4),
    K(0x51, 4, 4, ISM_KC_UINT, 4),
    K(0x58, 8, 8, ISM_KC_INT, _Alignof(int64_t)),
    K(0x59, 8, 8, ISM_KC_UINT, _Alignof(int64_t)),
    K(0xc1, 1, 1, ISM_KC_INT, 1), /* INTEGER1 */
    K(0xc9, 2, 2, ISM_KC_INT, 2),
    K(0xd1, 4, 4, ISM_KC_INT, 4),
    K(0xd2, 4, 4, ISM_KC_FLOAT, 4),
    K(0xd9, 8, 8, ISM_KC_INT, 8),
    K(0xda, 8, 8, ISM_KC_FLOAT, 8),
    K(0xdb, 8, 8, ISM_KC_COMPLEX, 4),
    K(0xe2, 16, 16, ISM_KC_FLOAT, 16), /* REAL16: IEEE binary128 */
    K(0xe3, 16, 16, ISM_KC_COMPLEX, 8),
    K(0xeb, 32, 32, ISM_KC_COMPLEX, 16),
};
#undef K

const ism_kind *ism_kind_info(int kind)
{
    return kind >= 0 && kind < ISM_KIND_COUNT && kinds[kind].size ? &kinds[kind] : NULL;
}

/* Pair types: two basic kinds at the offsets the C (or Fortran) compiler gives them. */
struct pair_fi { float a; int b; };
struct pair_di { double a; int b; };
struct pair_li { long a; int b; };
struct pair_ii { int a; int b; };
struct pair_si { short a; int b; };
struct pair_ldi { long double a; int b; };
struct pair_ff { float a; float b; };
struct pair_dd { double a; double b; };

typedef struct pair_desc {
    int idx, k1, k2;
    size_t off2, extent;
} pair_desc;

#define P(idx, k1, k2, T) {idx, k1, k2, offsetof(struct T, b), sizeof(struct T)}
static const pair_desc pairs[] = {
    P(0x28, 0x10, 0x09, pair_fi),  P(0x29, 0x14, 0x09, pair_di), P(0x2a, 0x0a, 0x09, pair_li),
    P(0x2b, 0x09, 0x09, pair_ii),  P(0x2c, 0x08, 0x09, pair_si), P(0x2d, 0x20, 0x09, pair_ldi),
    P(0x30, 0x1a, 0x1a, pair_ff),  P(0x31, 0x1c, 0x1c, pair_dd), P(0x32, 0x19, 0x19, pair_ii),
};
#undef P

/* ---- the growing map ---- */

typedef struct tbuild {
    ism_tmap m;
    int64_t capb, capr;
    int any; /* at least one copy appended (bounds valid) */
    int err;
} tbuild;

static int grow(void **p, int64_t *cap, int64_t need, size_t esz)
{
    if (need <= *cap)
        return 0;
    if (need > ISM_TMAP_MAX_ENTRIES)
        return ISM_TMAP_ETOOBIG;
    int64_t n = *cap ? *cap * 2 : 8;
    while (n < need)
        n *= 2;
    if (n > ISM_TMAP_MAX_ENTRIES)
        n = ISM_TMAP_MAX_ENTRIES;
    void *q = realloc(*p, (size_t)n * esz);
    if (!q)
        return ISM_TMAP_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static void add_blk(tbuild *b, int64_t off, int64_t len)
{
    ism_tmap *m = &b->m;
    if (len <= 0 || b->err)
        return;
    if (m->nblk && m->blk[m->nblk - 1].off + m->blk[m->nblk - 1].len == off) {
        m->blk[m->nblk - 1].len += len;
        return;
    }
    if ((b->err = grow((void **)&m->blk, &b->capb, m->nblk + 1, sizeof(ism_blk))))
        return;
    m->blk[m->nblk].off = off;
    m->blk[m->nblk].len = len;
    m->nblk++;
}

static void add_run(tbuild *b, int64_t off, int kind, int64_t n)
{
    ism_tmap *m = &b->m;
    if (n <= 0 || b->err)
        return;
    if (m->nrun) {
        ism_erun *l = &m->run[m->nrun - 1];
        if (l->kind == kind && l->off + l->n * kinds[kind].size == off) {
            l->n += n;
            return;
        }
    }
    if ((b->err = grow((void **)&m->run, &b->capr, m->nrun + 1, sizeof(ism_erun))))
        return;
    m->run[m->nrun].off = off;
    m->run[m->nrun].kind = kind;
    m->run[m->nrun].n = n;
    m->nrun++;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Append one copy of old at displacement disp. */
static void append(tbuild *b, const ism_tmap *old, int64_t disp)
{
    ism_tmap *m = &b->m;
    if (b->err)
        return;
    if (!b->any) {
        m->lb = disp + old->lb;
        m->ub = disp + old->ub;
        m->true_lb = disp + old->true_lb;
        m->true_ub = disp + old->true_ub;
        b->any = 1;
    } else {
        m->lb = min64(m->lb, disp + old->lb);
        m->ub = max64(m->ub, disp + old->ub);
        m->true_lb = min64(m->true_lb, disp + old->true_lb);
        m->true_ub = max64(m->true_ub, disp + old->true_ub);
    }
    for (int64_t i = 0; i < old->nblk; i++)
        add_blk(b, disp + old->blk[i].off, old->blk[i].len);
    for (int64_t i = 0; i < old->nrun; i++)
        add_run(b, disp + old->run[i].off, old->run[i].kind, old->run[i].n);
    m->size += old->size;
    m->nelem += old->nelem;
    if (old->ext32 < 0 || m->ext32 < 0)
        m->ext32 = -1;
    else
        m->ext32 += old->ext32;
    if (old->align > m->align)
        m->align = old->align;
}

/* bl copies of old, back to back by old's extent, starting at disp. */
static void append_block(tbuild *b, const ism_tmap *old, int64_t disp, int64_t bl)
{
    int64_t ext = old->ub - old->lb;
    /* A dense child (one block and one run that fill its extent): bl copies are one block
     * and one run, so a huge count (MPI_Type_contiguous(INT_MAX, MPI_BYTE)) costs O(1). */
    if (bl > 1 && ext > 0 && old->nblk == 1 && old->blk[0].len == ext && old->nrun == 1 &&
        old->run[0].n * kinds[old->run[0].kind].size == ext) {
        append(b, old, disp);
        if (b->err)
            return;
        ism_tmap *m = &b->m;
        int64_t more = bl - 1;
        m->blk[m->nblk - 1].len += more * ext;
        m->run[m->nrun - 1].n += more * old->run[0].n;
        m->size += more * old->size;
        m->nelem += more * old->nelem;
        if (m->ext32 >= 0)
            m->ext32 += more * old->ext32;
        m->ub = max64(m->ub, disp + more * ext + old->ub);
        m->true_ub = max64(m->true_ub, disp + more * ext + old->true_ub);
        return;
    }
    if (bl > 2 && old->nblk == 0 && old->nrun == 0) {
        /* no data: only the bounds of the first and the last copy count (a count of 2^40
         * would otherwise be 2^40 rounds of nothing) */
        append(b, old, disp);
        append(b, old, disp + (bl - 1) * ext);
        return;
    }
    for (int64_t j = 0; j < bl && !b->err; j++)
        append(b, old, disp + j * ext);
}

static int finish(tbuild *b, ism_tmap *out)
{
    if (b->err) {
        ism_tmap_free(&b->m);
        return b->err;
    }
    *out = b->m;
    return ISM_TMAP_OK;
}

void ism_tmap_free(ism_tmap *m)
{
    free(m->blk);
    free(m->run);
    memset(m, 0, sizeof *m);
}

int ism_tmap_copy(const ism_tmap *src, ism_tmap *out)
{
    tbuild b = {0};
    append(&b, src, 0);
    b.m.lb = src->lb;
    b.m.ub = src->ub;
    return finish(&b, out);
}

int ism_tmap_predefined(int kind, ism_tmap *out)
{
    tbuild b = {0};
    if (kind < 0 || kind >= ISM_KIND_COUNT)
        return ISM_TMAP_EARG;
    if (kinds[kind].size) {
        const ism_kind *k = &kinds[kind];
        add_blk(&b, 0, k->size);
        add_run(&b, 0, kind, 1);
        b.m.size = b.m.ub = b.m.true_ub = k->size;
        b.m.nelem = 1;
        b.m.ext32 = k->ext32 ? k->ext32 : -1;
        b.m.align = k->align;
        return finish(&b, out);
    }
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const pair_desc *p = &pairs[i];
        if (p->idx != kind)
            continue;
        const ism_kind *k1 = &kinds[p->k1], *k2 = &kinds[p->k2];
        add_blk(&b, 0, k1->size);
        add_blk(&b, (int64_t)p->off2, k2->size);
        add_run(&b, 0, p->k1, 1);
        add_run(&b, (int64_t)p->off2, p->k2, 1);
        b.m.size = k1->size + k2->size;
        b.m.ub = (int64_t)p->extent;
        b.m.true_ub = (int64_t)p->off2 + k2->size;
        b.m.nelem = 2;
        b.m.ext32 = k1->ext32 + k2->ext32;
        b.m.align = max64(k1->align, k2->align);
        return finish(&b, out);
    }
    return ISM_TMAP_EARG;
}

int ism_tmap_pair(const ism_tmap *m, int64_t *starts)
{
    if (m->nrun < 1 || m->nelem < 2 || m->nelem % 2)
        return -1;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const pair_desc *p = &pairs[i];
        if (p->k1 != m->run[0].kind)
            continue;
        /* walk the basic elements: even ones are values (k1), odd ones indices (k2) at
         * off2 from their value */
        int64_t e = 0, start = 0, ok = 1;
        for (int64_t r = 0; ok && r < m->nrun; r++) {
            const ism_erun *u = &m->run[r];
            int64_t sz = kinds[u->kind].size;
            for (int64_t j = 0; ok && j < u->n; j++, e++) {
                int64_t at = u->off + j * sz;
                if (e % 2 == 0) {
                    ok = u->kind == p->k1;
                    start = at;
                    if (ok && starts)
                        starts[e / 2] = at;
                } else {
                    ok = u->kind == p->k2 && at == start + (int64_t)p->off2;
                }
            }
        }
        if (ok)
            return p->idx;
    }
    return -1;
}

/* ---- subarray and darray: the cartesian product of owned indices per dimension ---- */

/* A run of consecutive owned indices of one dimension. */
typedef struct irun {
    int64_t first, n;
} irun;

typedef struct grid {
    int ndims, order;
    int64_t *stride; /* bytes between consecutive indices of dimension d */
    irun **idx;      /* owned global indices of dimension d, ascending, as runs */
    int64_t *nidx;   /* runs in idx[d] */
} grid;

static void grid_walk(tbuild *b, const grid *g, const ism_tmap *old, int level, int64_t off)
{
    /* C order: dimension 0 varies slowest; Fortran order: the last one does */
    int d = g->order == ISM_ORDER_C ? level : g->ndims - 1 - level;
    for (int64_t i = 0; i < g->nidx[d] && !b->err; i++) {
        const irun *r = &g->idx[d][i];
        if (level == g->ndims - 1) {
            /* the innermost stride is old's extent: a run is one block of copies */
            append_block(b, old, off + r->first * g->stride[d], r->n);
            continue;
        }
        for (int64_t j = r->first; j < r->first + r->n && !b->err; j++)
            grid_walk(b, g, old, level + 1, off + j * g->stride[d]);
    }
}

static int grid_alloc(grid *g, int ndims, int order)
{
    g->ndims = ndims;
    g->order = order;
    g->stride = calloc((size_t)ndims, sizeof *g->stride);
    g->idx = calloc((size_t)ndims, sizeof *g->idx);
    g->nidx = calloc((size_t)ndims, sizeof *g->nidx);
    return g->stride && g->idx && g->nidx ? 0 : ISM_TMAP_ENOMEM;
}

static void grid_free(grid *g)
{
    for (int d = 0; g->idx && d < g->ndims; d++)
        free(g->idx[d]);
    free(g->stride);
    free(g->idx);
    free(g->nidx);
}

/* Byte strides of a global array of gsizes[] elements of extent ext. */
static void grid_strides(grid *g, const int64_t *gsizes, int64_t ext)
{
    int64_t s = ext;
    for (int k = 0; k < g->ndims; k++) {
        int d = g->order == ISM_ORDER_C ? g->ndims - 1 - k : k;
        g->stride[d] = s;
        s *= gsizes[d];
    }
}

static int grid_build(grid *g, const ism_tmap *old, const int64_t *gsizes, ism_tmap *out)
{
    tbuild b = {0};
    int64_t ext = old->ub - old->lb, total = ext;
    for (int d = 0; d < g->ndims; d++)
        total *= gsizes[d];
    int empty = 0;
    for (int d = 0; d < g->ndims; d++)
        empty |= g->nidx[d] == 0;
    if (!empty)
        grid_walk(&b, g, old, 0, 0);
    if (!b.any) {
        b.m.ext32 = old->ext32 < 0 ? -1 : 0;
        b.m.align = old->align;
    }
    b.m.lb = old->lb;
    b.m.ub = old->lb + total;
    return finish(&b, out);
}

static int subarray(const int64_t *ints, const ism_tmap *old, ism_tmap *out)
{
    int n = (int)ints[0];
    const int64_t *sizes = ints + 1, *sub = ints + 1 + n, *starts = ints + 1 + 2 * n;
    int order = (int)ints[1 + 3 * n];
    grid g = {0};
    int rc = grid_alloc(&g, n, order);
    for (int d = 0; d < n && !rc; d++) {
        if (sub[d] < 0 || starts[d] < 0 || starts[d] + sub[d] > sizes[d]) {
            rc = ISM_TMAP_EARG;
            break;
        }
        if (!(g.idx[d] = malloc(sizeof(irun)))) {
            rc = ISM_TMAP_ENOMEM;
            break;
        }
        g.nidx[d] = sub[d] > 0;
        g.idx[d][0] = (irun){starts[d], sub[d]};
    }
    if (!rc) {
        grid_strides(&g, sizes, old->ub - old->lb);
        rc = grid_build(&g, old, sizes, out);
    }
    grid_free(&g);
    return rc;
}

/* Indices of dimension d owned by process coordinate c (MPI-4.1 section 5.1.4). */
static int darray_dim(int64_t gsize, int64_t distrib, int64_t darg, int64_t psize, int64_t c,
                      irun **idx, int64_t *n)
{
    int64_t cnt = 0, blk = 1, nruns = 1;
    if (distrib == ISM_DISTRIBUTE_NONE) {
        if (psize != 1)
            return ISM_TMAP_EARG;
        blk = gsize;
    } else if (distrib == ISM_DISTRIBUTE_BLOCK) {
        blk = darg == ISM_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        if (blk <= 0 || blk * psize < gsize)
            return ISM_TMAP_EARG;
    } else if (distrib == ISM_DISTRIBUTE_CYCLIC) {
        blk = darg == ISM_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        if (blk <= 0)
            return ISM_TMAP_EARG;
        nruns = gsize / (blk * psize) + 1;
        if (nruns > ISM_TMAP_MAX_ENTRIES)
            return ISM_TMAP_ETOOBIG; /* each run is at least one block of the map */
    } else {
        return ISM_TMAP_EARG;
    }
    if (!(*idx = malloc(sizeof(irun) * (size_t)nruns)))
        return ISM_TMAP_ENOMEM;
    if (distrib != ISM_DISTRIBUTE_CYCLIC) {
        int64_t first = distrib == ISM_DISTRIBUTE_NONE ? 0 : c * blk;
        int64_t end = first + blk < gsize ? first + blk : gsize;
        if (end > first)
            (*idx)[cnt++] = (irun){first, end - first};
    } else {
        for (int64_t s = c * blk; s < gsize; s += blk * psize)
            (*idx)[cnt++] = (irun){s, s + blk < gsize ? blk : gsize - s};
    }
    *n = cnt;
    return 0;
}

static int darray(const int64_t *ints, const ism_tmap *old, ism_tmap *out)
{
    int64_t size = ints[0], rank = ints[1];
    int n = (int)ints[2];
    const int64_t *gsizes = ints + 3, *distribs = ints + 3 + n, *dargs = ints + 3 + 2 * n,
                  *psizes = ints + 3 + 3 * n;
    int order = (int)ints[3 + 4 * n];
    int64_t nprocs = 1;
    for (int d = 0; d < n; d++)
        nprocs *= psizes[d];
    if (nprocs != size || rank < 0 || rank >= size)
        return ISM_TMAP_EARG;
    grid g = {0};
    int rc = grid_alloc(&g, n, order);
    /* the process grid is row-major whatever the array order */
    int64_t r = rank;
    for (int d = n - 1; d >= 0 && !rc; d--) {
        int64_t c = r % psizes[d];
        r /= psizes[d];
        rc = darray_dim(gsizes[d], distribs[d], dargs[d], psizes[d], c, &g.idx[d], &g.nidx[d]);
    }
    if (!rc) {
        grid_strides(&g, gsizes, old->ub - old->lb);
        rc = grid_build(&g, old, gsizes, out);
    }
    grid_free(&g);
    return rc;
}

int ism_envelope_sizes(int combiner, const int64_t *ints, int *ni, int *na, int *nt)
{
    /* the array lengths: at most what an int-counted envelope holds */
    int64_t len = !ints ? 0 : combiner == ISM_COMBINER_DARRAY ? ints[2]
                  : combiner == ISM_COMBINER_CONTIGUOUS || combiner == ISM_COMBINER_VECTOR ||
                          combiner == ISM_COMBINER_HVECTOR
                      ? 0
                      : ints[0];
    if (len < 0 || len > INT_MAX / 4 - 4)
        return ISM_TMAP_EARG;
    int c = (int)len;
    *ni = *na = 0;
    *nt = 1;
    switch (combiner) {
    case ISM_COMBINER_DUP: break;
    case ISM_COMBINER_CONTIGUOUS: *ni = 1; break;
    case ISM_COMBINER_VECTOR: *ni = 3; break;
    case ISM_COMBINER_HVECTOR: *ni = 2, *na = 1; break;
    case ISM_COMBINER_INDEXED: *ni = 2 * c + 1; break;
    case ISM_COMBINER_HINDEXED: *ni = c + 1, *na = c; break;
    case ISM_COMBINER_INDEXED_BLOCK: *ni = c + 2; break;
    case ISM_COMBINER_HINDEXED_BLOCK: *ni = 2, *na = c; break;
    case ISM_COMBINER_STRUCT: *ni = c + 1, *na = c, *nt = c; break;
    case ISM_COMBINER_SUBARRAY: *ni = 3 * c + 2; break;
    case ISM_COMBINER_DARRAY: *ni = 4 * c + 4; break;
    case ISM_COMBINER_RESIZED: *na = 2; break;
    default: return ISM_TMAP_EARG;
    }
    return 0;
}

/* The block after block i of count: of a type without data only the last one still counts
 * (for the bounds). */
static int64_t next_copy(const ism_tmap *old, int64_t i, int64_t count)
{
    return old->nblk == 0 && old->nrun == 0 && i + 1 < count - 1 ? count - 1 : i + 1;
}

/* count blocks of bl copies of old that follow each other without a gap are one block of
 * count * bl copies (so MPI_Type_vector_c(2^31, 1, 1, ...) costs no loop of 2^31); 0 when the
 * product does not fit. */
static int dense_run(tbuild *b, const ism_tmap *old, int64_t count, int64_t bl)
{
    int64_t n;
    if (count <= 1 || __builtin_mul_overflow(count, bl, &n))
        return 0;
    append_block(b, old, 0, n);
    return 1;
}

int ism_tmap_build(int combiner, const int64_t *ints, const int64_t *aints,
                   const ism_tmap *const *types, ism_tmap *out)
{
    tbuild b = {0};
    const ism_tmap *old = combiner == ISM_COMBINER_STRUCT && ints[0] == 0 ? NULL : types[0];
    int64_t ext = old ? old->ub - old->lb : 0;
    switch (combiner) {
    case ISM_COMBINER_DUP:
        return ism_tmap_copy(old, out);
    case ISM_COMBINER_CONTIGUOUS:
        append_block(&b, old, 0, ints[0]);
        break;
    case ISM_COMBINER_VECTOR:
        if (ints[2] == ints[1] && dense_run(&b, old, ints[0], ints[1]))
            break; /* blocks back to back: one block of count * blocklength copies */
        for (int64_t i = 0; i < ints[0] && !b.err; i = next_copy(old, i, ints[0]))
            append_block(&b, old, i * ints[2] * ext, ints[1]);
        break;
    case ISM_COMBINER_HVECTOR:
        if (aints[0] == ints[1] * ext && dense_run(&b, old, ints[0], ints[1]))
            break;
        for (int64_t i = 0; i < ints[0] && !b.err; i = next_copy(old, i, ints[0]))
            append_block(&b, old, i * aints[0], ints[1]);
        break;
    case ISM_COMBINER_INDEXED:
        for (int64_t i = 0; i < ints[0] && !b.err; i++)
            append_block(&b, old, ints[1 + ints[0] + i] * ext, ints[1 + i]);
        break;
    case ISM_COMBINER_HINDEXED:
        for (int64_t i = 0; i < ints[0] && !b.err; i++)
            append_block(&b, old, aints[i], ints[1 + i]);
        break;
    case ISM_COMBINER_INDEXED_BLOCK:
        for (int64_t i = 0; i < ints[0] && !b.err; i++)
            append_block(&b, old, ints[2 + i] * ext, ints[1]);
        break;
    case ISM_COMBINER_HINDEXED_BLOCK:
        for (int64_t i = 0; i < ints[0] && !b.err; i++)
            append_block(&b, old, aints[i], ints[1]);
        break;
    case ISM_COMBINER_STRUCT: {
        int align = 1;
        for (int64_t i = 0; i < ints[0] && !b.err; i++) {
            append_block(&b, types[i], aints[i], ints[1 + i]);
            if (types[i]->align > align)
                align = types[i]->align;
        }
        if (!b.any)
            break;
        /* the "epsilon" of MPI 5.1: the extent rounds up to the largest alignment */
        int64_t e = b.m.ub - b.m.lb;
        if (e % align)
            b.m.ub += align - e % align;
        break;
    }
    case ISM_COMBINER_RESIZED:
        append(&b, old, 0);
        b.m.lb = aints[0];
        b.m.ub = aints[0] + aints[1];
        break;
    case ISM_COMBINER_SUBARRAY:
        return subarray(ints, old, out);
    case ISM_COMBINER_DARRAY:
        return darray(ints, old, out);
    default:
        return ISM_TMAP_EARG;
    }
    if (!b.any && !b.err) {
        /* no copy at all (count 0): an empty type of extent 0 */
        int anyext = 0;
        for (int64_t i = 0; i < (combiner == ISM_COMBINER_STRUCT ? ints[0] : 1); i++)
            anyext |= types[i]->ext32 < 0;
        b.m.ext32 = anyext ? -1 : 0;
        b.m.align = old ? old->align : 1;
    }
    return finish(&b, out);
}
