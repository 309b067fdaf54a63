/*
 * rma_pairtype: one-sided operations whose datatypes are the value-index pair types of
 * MPI_MINLOC/MPI_MAXLOC (MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT, MPI_SHORT_INT, MPI_2INT),
 * predefined and inside derived types, on the "far" peer (another site on a multi-site
 * run). Most pair types have padding (a double and an int take 16 bytes, their data 12),
 * so what is packed for the wire and what sits in the window differ:
 * - MPI_Accumulate MAXLOC of 8 MPI_DOUBLE_INT (predefined, padded);
 * - MPI_Accumulate MAXLOC with a vector of MPI_LONG_DOUBLE_INT (MPICH's acc_pairtype);
 * - MPI_Accumulate MINLOC with a contiguous type of MPI_SHORT_INT (value and index apart);
 * - MPI_Accumulate MAXLOC with a vector of MPI_2INT (no padding);
 * - MPI_Get_accumulate MAXLOC with a vector of MPI_DOUBLE_INT: the old values come back;
 * - MPI_Put and MPI_Get of MPI_DOUBLE_INT;
 * - MPI_Accumulate with MPI_REPLACE and MPI_Fetch_and_op with MPI_NO_OP on MPI_DOUBLE_INT
 *   (Open MPI 4.1.4 alone loses the last pairs of the first and fetches wrong ones between
 *   ranks of one node: isthmus must not).
 * Every rank is the far target of exactly one rank (peer_far_from), so the expected window
 * contents are known. Works for any size >= 1.
 */
#include "check.h"
#include <stddef.h>
#include <string.h>

typedef struct { double v; int i; } di_t;
typedef struct { long double v; int i; } ldi_t;
typedef struct { short v; int i; } si_t;
typedef struct { int v; int i; } ii_t;

/* the window: one region per case, at byte offsets (displacement unit 1) */
typedef struct {
    di_t acc_di[8];   /* accumulate MAXLOC, predefined */
    ldi_t acc_ldi[25]; /* accumulate MAXLOC, vector(5, 3, 5) */
    si_t acc_si[8];   /* accumulate MINLOC, contiguous(4) x 2 */
    ii_t acc_ii[8];   /* accumulate MAXLOC, vector(4, 1, 2) */
    di_t gacc_di[8];  /* get-accumulate MAXLOC, vector(4, 1, 2) */
    di_t put_di[3];   /* put */
    di_t get_di[3];   /* get, and a fetch-and-op with MPI_NO_OP */
    di_t rep_di[3];   /* accumulate MPI_REPLACE */
} region;

#define OFF(f) ((MPI_Aint)offsetof(region, f))

static void fill(region *r, int owner)
{
    memset(r, 0, sizeof *r);
    for (int k = 0; k < 8; k++) {
        r->acc_di[k] = (di_t){10.0 + k, -1};
        r->acc_si[k] = (si_t){(short)(1000 + k), -1};
        r->acc_ii[k] = (ii_t){10 + k, -1};
        r->gacc_di[k] = (di_t){owner * 1000.0 + k, owner};
    }
    for (int k = 0; k < 25; k++)
        r->acc_ldi[k] = (ldi_t){0.0L, 0};
    for (int k = 0; k < 3; k++)
        r->get_di[k] = (di_t){owner + 0.25 * k, 50 + owner + k};
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int far = peer_far_to(rank, size), src = peer_far_from(rank, size);
    /* whether far and src share my node (under isthmus: my site) */
    MPI_Comm node;
    MPI_Group wg, ng;
    int far_local, src_local, ranks[2] = {far, src}, in_node[2];
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(node, &ng);
    MPI_Group_translate_ranks(wg, 2, ranks, ng, in_node);
    far_local = in_node[0] != MPI_UNDEFINED;
    src_local = in_node[1] != MPI_UNDEFINED;
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    MPI_Comm_free(&node);
    region *mem;
    MPI_Win win;
    MPI_Win_allocate(sizeof(region), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    fill(mem, rank);
    MPI_Win_unlock(rank, win);

    MPI_Datatype ldi_vec, si_contig, ii_vec, di_vec;
    MPI_Type_vector(5, 3, 5, MPI_LONG_DOUBLE_INT, &ldi_vec);
    MPI_Type_contiguous(4, MPI_SHORT_INT, &si_contig);
    MPI_Type_vector(4, 1, 2, MPI_2INT, &ii_vec);
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE_INT, &di_vec);
    MPI_Type_commit(&ldi_vec);
    MPI_Type_commit(&si_contig);
    MPI_Type_commit(&ii_vec);
    MPI_Type_commit(&di_vec);

    /* origins: larger values than the target's for MAXLOC at even k, smaller at odd k */
    di_t o_di[8], o_gacc[4], r_gacc[4], o_put[3], r_get[3];
    ldi_t o_ldi[25];
    si_t o_si[8];
    ii_t o_ii[4];
    for (int k = 0; k < 8; k++) {
        o_di[k] = (di_t){k % 2 ? 0.5 : 100.0 + k, 100 + rank};
        o_si[k] = (si_t){(short)(k % 2 ? 2000 : 7 + k), 100 + rank};
    }
    for (int k = 0; k < 25; k++)
        o_ldi[k] = (ldi_t){1.0L + k, 1 + rank};
    for (int k = 0; k < 4; k++) {
        o_ii[k] = (ii_t){k % 2 ? 0 : 50 + k, 100 + rank};
        o_gacc[k] = (di_t){k % 2 ? -1.0 : 1e9 + k, 100 + rank};
        r_gacc[k] = (di_t){-7.0, -7};
    }
    for (int k = 0; k < 3; k++) {
        o_put[k] = (di_t){rank + 0.5 * k, 70 + rank + k};
        r_get[k] = (di_t){-7.0, -7};
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, far, 0, win);
    CHECK_RC(MPI_Accumulate(o_di, 8, MPI_DOUBLE_INT, far, OFF(acc_di), 8, MPI_DOUBLE_INT,
                            MPI_MAXLOC, win), "Accumulate MAXLOC of 8 MPI_DOUBLE_INT");
    CHECK_RC(MPI_Accumulate(o_ldi, 1, ldi_vec, far, OFF(acc_ldi), 1, ldi_vec, MPI_MAXLOC, win),
             "Accumulate MAXLOC, vector of MPI_LONG_DOUBLE_INT");
    /* Open MPI 4.1.4 alone corrupts MPI_SHORT_INT between two ranks of one node; isthmus
     * refuses it there with Open MPI inside a site (MPI_ERR_UNSUPPORTED_OPERATION), and must
     * get it right between sites and with MPICH */
    int si_rc = MPI_Accumulate(o_si, 8, MPI_SHORT_INT, far, OFF(acc_si), 2, si_contig,
                               MPI_MINLOC, win), si_cls = MPI_SUCCESS;
    MPI_Error_class(si_rc, &si_cls);
    int si_refused = si_rc != MPI_SUCCESS && si_cls == MPI_ERR_UNSUPPORTED_OPERATION && far_local;
    if (!si_refused)
        CHECK_RC(si_rc, "Accumulate MINLOC, contiguous MPI_SHORT_INT");
    CHECK_RC(MPI_Accumulate(o_ii, 4, MPI_2INT, far, OFF(acc_ii), 1, ii_vec, MPI_MAXLOC, win),
             "Accumulate MAXLOC, vector of MPI_2INT");
    CHECK_RC(MPI_Get_accumulate(o_gacc, 4, MPI_DOUBLE_INT, r_gacc, 4, MPI_DOUBLE_INT, far,
                                OFF(gacc_di), 1, di_vec, MPI_MAXLOC, win),
             "Get_accumulate MAXLOC, vector of MPI_DOUBLE_INT");
    CHECK_RC(MPI_Put(o_put, 3, MPI_DOUBLE_INT, far, OFF(put_di), 3, MPI_DOUBLE_INT, win),
             "Put of 3 MPI_DOUBLE_INT");
    CHECK_RC(MPI_Get(r_get, 3, MPI_DOUBLE_INT, far, OFF(get_di), 3, MPI_DOUBLE_INT, win),
             "Get of 3 MPI_DOUBLE_INT");
    CHECK_RC(MPI_Accumulate(o_put, 3, MPI_DOUBLE_INT, far, OFF(rep_di), 3, MPI_DOUBLE_INT,
                            MPI_REPLACE, win), "Accumulate MPI_REPLACE of 3 MPI_DOUBLE_INT");
    di_t r_fop = {-7.0, -7};
    CHECK_RC(MPI_Fetch_and_op(NULL, &r_fop, MPI_DOUBLE_INT, far, OFF(get_di) + sizeof(di_t) * 2,
                              MPI_NO_OP, win), "Fetch_and_op MPI_NO_OP of MPI_DOUBLE_INT");
    MPI_Win_unlock(far, win);

    for (int k = 0; k < 4; k++) /* the far rank's values before: element 2k of gacc_di */
        CHECK(r_gacc[k].v == far * 1000.0 + 2 * k && r_gacc[k].i == far,
              "get-accumulate fetched %d: (%g, %d), wanted (%g, %d)", k, r_gacc[k].v,
              r_gacc[k].i, far * 1000.0 + 2 * k, far);
    CHECK(r_fop.v == far + 0.5 && r_fop.i == 52 + far, "fetch-and-op: (%g, %d), wanted (%g, %d)",
          r_fop.v, r_fop.i, far + 0.5, 52 + far);
    for (int k = 0; k < 3; k++)
        CHECK(r_get[k].v == far + 0.25 * k && r_get[k].i == 50 + far + k,
              "get %d: (%g, %d), wanted (%g, %d)", k, r_get[k].v, r_get[k].i, far + 0.25 * k,
              50 + far + k);

    /* my window, after my source's operations; whether it refused the MPI_SHORT_INT one */
    int src_refused = 0;
    MPI_Sendrecv(&si_refused, 1, MPI_INT, far, 0, &src_refused, 1, MPI_INT, src, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int k = 0; k < 8; k++) {
        di_t want = k % 2 ? (di_t){10.0 + k, -1} : (di_t){100.0 + k, 100 + src};
        CHECK(mem->acc_di[k].v == want.v && mem->acc_di[k].i == want.i,
              "MPI_DOUBLE_INT %d: (%g, %d), wanted (%g, %d)", k, mem->acc_di[k].v,
              mem->acc_di[k].i, want.v, want.i);
        /* my source refused it (see above) only if it is on my node */
        si_t ws = k % 2 || (src_refused && src_local) ? (si_t){(short)(1000 + k), -1}
                                                      : (si_t){(short)(7 + k), 100 + src};
        CHECK(mem->acc_si[k].v == ws.v && mem->acc_si[k].i == ws.i,
              "MPI_SHORT_INT %d: (%d, %d), wanted (%d, %d)", k, mem->acc_si[k].v,
              mem->acc_si[k].i, ws.v, ws.i);
        /* vector(4, 1, 2): elements 0, 2, 4, 6 get origin elements 0..3 */
        int hit = k % 2 == 0, j = k / 2;
        ii_t wi = hit && j % 2 == 0 ? (ii_t){50 + j, 100 + src} : (ii_t){10 + k, -1};
        CHECK(mem->acc_ii[k].v == wi.v && mem->acc_ii[k].i == wi.i,
              "MPI_2INT %d: (%d, %d), wanted (%d, %d)", k, mem->acc_ii[k].v, mem->acc_ii[k].i,
              wi.v, wi.i);
        di_t wg = hit && j % 2 == 0 ? (di_t){1e9 + j, 100 + src} : (di_t){rank * 1000.0 + k, rank};
        CHECK(mem->gacc_di[k].v == wg.v && mem->gacc_di[k].i == wg.i,
              "get-accumulate target %d: (%g, %d), wanted (%g, %d)", k, mem->gacc_di[k].v,
              mem->gacc_di[k].i, wg.v, wg.i);
    }
    /* vector(5, 3, 5): elements 5b..5b+2 get the origin's elements at the same places */
    for (int k = 0; k < 25; k++) {
        int hit = k % 5 < 3;
        long double wv = hit ? 1.0L + k : 0.0L; /* the origin is the same vector */
        int wi = hit ? 1 + src : 0;
        CHECK(mem->acc_ldi[k].v == wv && mem->acc_ldi[k].i == wi,
              "MPI_LONG_DOUBLE_INT %d: (%Lg, %d), wanted (%Lg, %d)", k, mem->acc_ldi[k].v,
              mem->acc_ldi[k].i, wv, wi);
    }
    for (int k = 0; k < 3; k++) {
        CHECK(mem->put_di[k].v == src + 0.5 * k && mem->put_di[k].i == 70 + src + k,
              "put %d: (%g, %d), wanted (%g, %d)", k, mem->put_di[k].v, mem->put_di[k].i,
              src + 0.5 * k, 70 + src + k);
        CHECK(mem->rep_di[k].v == src + 0.5 * k && mem->rep_di[k].i == 70 + src + k,
              "replace %d: (%g, %d), wanted (%g, %d)", k, mem->rep_di[k].v, mem->rep_di[k].i,
              src + 0.5 * k, 70 + src + k);
    }
    MPI_Win_unlock(rank, win);

    MPI_Type_free(&ldi_vec);
    MPI_Type_free(&si_contig);
    MPI_Type_free(&ii_vec);
    MPI_Type_free(&di_vec);
    MPI_Win_free(&win);
    int rc = check_finish("rma_pairtype");
    MPI_Finalize();
    return rc;
}
