/* dt_vendor_large.c: the vendor's twin of a datatype whose constructor arguments pass
 * INT_MAX (MPI_Type_contiguous_c(3000000000, ...) and the other large-count constructors).
 *
 * The vendors' constructors take int counts (Open MPI 4.1 has no _c forms at all), so such
 * a type cannot be built on the vendor by the same call. It is built from the type map
 * instead: one struct entry per run of basic elements, in type-map order (so the type
 * signature is the same: a receive of the vendor's basic types matches it), a run of more
 * than INT_MAX elements as a contiguous type of 2^30-element pieces plus its remainder,
 * and the whole resized to the map's bounds. The vendor then packs, reduces and moves it
 * as any type of its own.
 */
#include <limits.h>
#include <stdlib.h>

#include "core.h"

#define PIECE ((int64_t)1 << 30)

int ism_dt_vendor_from_map(const ism_tmap *m, ism_vh *out)
{
    int64_t n = 0;
    for (int64_t r = 0; r < m->nrun; r++)
        n += m->run[r].n > INT_MAX ? 2 : 1;
    if (n > INT_MAX / 2)
        return ISM_ERR_UNSUPPORTED;
    size_t cap = (size_t)(n ? n : 1);
    int *bl = malloc(sizeof(int) * cap);
    ptrdiff_t *disp = malloc(sizeof(ptrdiff_t) * cap);
    ism_vh *ts = calloc(cap, sizeof(ism_vh));
    ism_vh *made = calloc(cap * 2, sizeof(ism_vh)); /* the pieces, freed once used */
    int rc = bl && disp && ts && made ? 0 : ISM_ERR_NO_MEM, k = 0, nmade = 0;
    for (int64_t r = 0; !rc && r < m->nrun; r++) {
        const ism_erun *u = &m->run[r];
        ism_vh kv = ism_dt_table[u->kind].v;
        int64_t sz = ism_dt_table[u->kind].size;
        if (!kv) {
            rc = ISM_ERR_TYPE;
            break;
        }
        if (u->n <= INT_MAX) {
            bl[k] = (int)u->n, disp[k] = (ptrdiff_t)u->off, ts[k++] = kv;
            continue;
        }
        /* q pieces of 2^30 elements, then the rest */
        int64_t q = u->n / PIECE, rest = u->n % PIECE;
        int piece_n = (int)PIECE, qn = (int)q;
        ism_vh p = 0, pq = 0;
        if ((rc = ism.be->type_create(ISM_COMBINER_CONTIGUOUS, &piece_n, NULL, &kv, &p)))
            break;
        made[nmade++] = p;
        if ((rc = ism.be->type_create(ISM_COMBINER_CONTIGUOUS, &qn, NULL, &p, &pq)))
            break;
        made[nmade++] = pq;
        bl[k] = 1, disp[k] = (ptrdiff_t)u->off, ts[k++] = pq;
        if (rest)
            bl[k] = (int)rest, disp[k] = (ptrdiff_t)(u->off + q * PIECE * sz), ts[k++] = kv;
    }
    ism_vh s = 0;
    if (!rc) {
        int ints[1] = {k};
        /* the struct's arrays follow ints[0]: blocklengths after the count */
        int *si = malloc(sizeof(int) * (size_t)(k + 1));
        if (!si) {
            rc = ISM_ERR_NO_MEM;
        } else {
            si[0] = ints[0];
            for (int i = 0; i < k; i++)
                si[1 + i] = bl[i];
            rc = ism.be->type_create(ISM_COMBINER_STRUCT, si, disp, ts, &s);
            free(si);
        }
    }
    if (!rc) {
        ptrdiff_t a[2] = {(ptrdiff_t)m->lb, (ptrdiff_t)(m->ub - m->lb)};
        rc = ism.be->type_create(ISM_COMBINER_RESIZED, NULL, a, &s, out);
        ism.be->type_free(&s);
    }
    for (int i = 0; i < nmade; i++)
        ism.be->type_free(&made[i]);
    free(bl);
    free(disp);
    free(ts);
    free(made);
    return rc;
}
