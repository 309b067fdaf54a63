/*
 * type_wide: datatypes whose constructor arguments pass INT_MAX (the MPI-4 _c
 * constructors), with little data, so it runs in the ordinary suite.
 *
 * Each type's extent passes 2^31 bytes but it holds only a few bytes of data; its buffers
 * are allocations of about 3 GB of which only the data's pages are ever touched. For
 *   A = Type_vector_c(2, 4, 3000000001, MPI_BYTE)          two blocks 3 GB apart
 *   B = Type_create_subarray_c(1, {3e9}, {6}, {3e9 - 10})  6 bytes at the far end
 *   C = Type_indexed_c(2, {3, 2}, {2200000000, 5}, MPI_BYTE)
 * every rank checks the sizes and extents (_c queries), the large-count envelope and
 * contents (the MPI-4 layout: the counts in array_of_large_counts; the int queries refuse
 * the type, as MPICH does), then sends one element to a far and a near peer (across sites
 * and within one in a 2-site run) and receives it once as plain bytes and once as the
 * same type, checking every byte and that nothing else was written; rank 0 then
 * broadcasts one element of each to all. Types of 2^31 bytes and more are also checked
 * for their sizes without moving them: Type_contiguous_c(2^31 + 11, MPI_BYTE) and an int
 * contiguous of 4 x 2^30 bytes (MPI_Type_size says MPI_UNDEFINED, the _c form the size),
 * and a Type_create_darray_c of 3e9 bytes over the ranks (each owns its block).
 */
#include "check.h"
#include <limits.h>
#include <stdint.h>
#include <string.h>

#if MPI_VERSION >= 4
#define G 3000000000LL

typedef struct wide {
    const char *name;
    MPI_Datatype t;
    MPI_Count lb, extent, tlb, text; /* expected bounds */
    int n;              /* data bytes */
    MPI_Count off[8];   /* where data byte k sits */
    int combiner;       /* expected envelope */
    MPI_Count ni, nl;
    MPI_Count counts[8]; /* expected array_of_large_counts */
    int ints[4];
} wide;

static unsigned char val(int k, int salt) { return (unsigned char)(17 + 29 * k + 3 * salt); }

static unsigned char *room(MPI_Count n)
{
    unsigned char *b = malloc((size_t)n);
    CHECK(b != NULL, "no %lld bytes of address space", (long long)n);
    if (!b)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return b;
}

static void check_envelope(wide *w)
{
    MPI_Count ni = -1, na = -1, nl = -1, nt = -1;
    int comb = -1;
    CHECK_RC(MPI_Type_get_envelope_c(w->t, &ni, &na, &nl, &nt, &comb), "get_envelope_c");
    CHECK(comb == w->combiner && ni == w->ni && na == 0 && nl == w->nl && nt == 1,
          "%s: envelope_c combiner %d ni %lld na %lld nl %lld nt %lld", w->name, comb,
          (long long)ni, (long long)na, (long long)nl, (long long)nt);
    int ints[8] = {0};
    MPI_Aint addrs[1];
    MPI_Count counts[8] = {0};
    MPI_Datatype old = MPI_DATATYPE_NULL;
    CHECK_RC(MPI_Type_get_contents_c(w->t, 8, 1, 8, 1, ints, addrs, counts, &old),
             "get_contents_c");
    CHECK(old == MPI_BYTE, "%s: the old type is not MPI_BYTE", w->name);
    for (int i = 0; i < w->nl && i < 8; i++)
        CHECK(counts[i] == w->counts[i], "%s: large count %d is %lld, not %lld", w->name, i,
              (long long)counts[i], (long long)w->counts[i]);
    for (int i = 0; i < w->ni && i < 4; i++)
        CHECK(ints[i] == w->ints[i], "%s: integer %d is %d, not %d", w->name, i, ints[i],
              w->ints[i]);
    /* the int queries cannot describe it */
    int a = 0, b = 0, c = 0;
    int rc = MPI_Type_get_envelope(w->t, &a, &b, &c, &comb);
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Type_get_envelope described a large-count type", w->name);
}

/* one element of w from src's buffer: as bytes into a plain buffer, then as w */
static void exchange(wide *w, unsigned char *sb, unsigned char *rb, int to, int from, int salt,
                     const char *how)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char plain[16];
    memset(plain, 0xee, sizeof plain);
    CHECK_RC(MPI_Sendrecv(sb, 1, w->t, to, 5, plain, w->n, MPI_BYTE, from, 5, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE),
             "Sendrecv to bytes");
    for (int k = 0; k < w->n; k++)
        CHECK(plain[k] == val(k, salt + from), "%s %s: byte %d from rank %d is %d, not %d",
              w->name, how, k, from, plain[k], val(k, salt + from));
    CHECK(plain[w->n] == 0xee, "%s %s: more than %d bytes arrived", w->name, how, w->n);
    for (int k = 0; k < w->n; k++)
        rb[w->off[k]] = 0;
    rb[w->tlb - 1] = 0x5a;
    rb[w->tlb + w->text] = 0x5a;
    MPI_Status st;
    CHECK_RC(MPI_Sendrecv(sb, 1, w->t, to, 6, rb, 1, w->t, from, 6, MPI_COMM_WORLD, &st),
             "Sendrecv to the type");
    for (int k = 0; k < w->n; k++)
        CHECK(rb[w->off[k]] == val(k, salt + from), "%s %s: element byte %d is %d, not %d",
              w->name, how, k, rb[w->off[k]], val(k, salt + from));
    CHECK(rb[w->tlb - 1] == 0x5a && rb[w->tlb + w->text] == 0x5a,
          "%s %s: a byte around the data was written", w->name, how);
    MPI_Count got = -1;
    CHECK_RC(MPI_Get_count_c(&st, w->t, &got), "Get_count_c");
    CHECK(got == 1, "%s %s: Get_count_c says %lld elements", w->name, how, (long long)got);
}

static void run(wide *w, int rank, int size)
{
    MPI_Count lb = -1, ext = -1, tlb = -1, text = -1, sz = -1;
    CHECK_RC(MPI_Type_commit(&w->t), "commit");
    CHECK_RC(MPI_Type_get_extent_c(w->t, &lb, &ext), "get_extent_c");
    CHECK_RC(MPI_Type_get_true_extent_c(w->t, &tlb, &text), "get_true_extent_c");
    CHECK_RC(MPI_Type_size_c(w->t, &sz), "size_c");
    CHECK(lb == w->lb && ext == w->extent && tlb == w->tlb && text == w->text && sz == w->n,
          "%s: lb %lld extent %lld true lb %lld true extent %lld size %lld", w->name,
          (long long)lb, (long long)ext, (long long)tlb, (long long)text, (long long)sz);
    int isz = -1;
    CHECK_RC(MPI_Type_size(w->t, &isz), "size");
    CHECK(isz == w->n, "%s: MPI_Type_size %d", w->name, isz);
    check_envelope(w);
    /* a byte of room on either side of the type's bounds */
    unsigned char *sbase = room(w->lb + w->extent + 2), *rbase = room(w->lb + w->extent + 2);
    unsigned char *sb = sbase + 1, *rb = rbase + 1;
    for (int k = 0; k < w->n; k++)
        sb[w->off[k]] = val(k, 10 + rank);
    exchange(w, sb, rb, peer_far_to(rank, size), peer_far_from(rank, size), 10, "far");
    int near = peer_near(rank, size);
    exchange(w, sb, rb, near, near, 10, "near");
    /* rank 0's element to everyone */
    CHECK_RC(MPI_Bcast(rank == 0 ? sb : rb, 1, w->t, 0, MPI_COMM_WORLD), "Bcast");
    for (int k = 0; rank != 0 && k < w->n; k++)
        CHECK(rb[w->off[k]] == val(k, 10), "%s: Bcast byte %d is %d", w->name, k, rb[w->off[k]]);
    free(sbase);
    free(rbase);
    MPI_Type_free(&w->t);
}

static void sizes_only(int rank, int size)
{
    MPI_Datatype t, g, h;
    MPI_Count sz = -1, lb = -1, ext = -1;
    int isz = 0;
    const MPI_Count big = ((MPI_Count)1 << 31) + 11;
    CHECK_RC(MPI_Type_contiguous_c(big, MPI_BYTE, &t), "contiguous_c");
    CHECK_RC(MPI_Type_commit(&t), "commit");
    CHECK_RC(MPI_Type_size_c(t, &sz), "size_c");
    CHECK_RC(MPI_Type_size(t, &isz), "size");
    CHECK_RC(MPI_Type_get_extent_c(t, &lb, &ext), "extent_c");
    CHECK(sz == big && ext == big && isz == MPI_UNDEFINED,
          "contiguous_c(2^31 + 11): size_c %lld extent %lld, Type_size %d", (long long)sz,
          (long long)ext, isz);
    MPI_Type_free(&t);
    /* int constructors can make a type of 4 GiB too */
    CHECK_RC(MPI_Type_contiguous(1 << 30, MPI_BYTE, &g), "contiguous");
    CHECK_RC(MPI_Type_contiguous(4, g, &h), "contiguous of 2^30");
    CHECK_RC(MPI_Type_commit(&h), "commit");
    CHECK_RC(MPI_Type_size_c(h, &sz), "size_c");
    CHECK_RC(MPI_Type_size(h, &isz), "size");
    CHECK(sz == (MPI_Count)4 << 30 && isz == MPI_UNDEFINED, "4 x 2^30: size_c %lld, size %d",
          (long long)sz, isz);
    MPI_Type_free(&g);
    MPI_Type_free(&h);
    /* darray_c: 3e9 bytes in blocks over the ranks */
    MPI_Count gs[] = {G};
    int dist[] = {MPI_DISTRIBUTE_BLOCK}, darg[] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[] = {size};
    CHECK_RC(MPI_Type_create_darray_c(size, rank, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_BYTE,
                                      &t),
             "darray_c");
    MPI_Count blk = (G + size - 1) / size, mine = G - rank * blk < blk ? G - rank * blk : blk;
    MPI_Count tlb = -1, text = -1;
    CHECK_RC(MPI_Type_size_c(t, &sz), "size_c");
    CHECK_RC(MPI_Type_get_extent_c(t, &lb, &ext), "extent_c");
    CHECK_RC(MPI_Type_get_true_extent_c(t, &tlb, &text), "true_extent_c");
    CHECK(sz == mine && lb == 0 && ext == G && tlb == rank * blk && text == mine,
          "darray_c: size %lld extent %lld true lb %lld (want %lld of %lld at %lld)",
          (long long)sz, (long long)ext, (long long)tlb, (long long)mine, (long long)G,
          (long long)(rank * blk));
    MPI_Count ni = 0, na = 0, nl = 0, nt = 0;
    int comb = 0;
    CHECK_RC(MPI_Type_get_envelope_c(t, &ni, &na, &nl, &nt, &comb), "envelope_c");
    CHECK(comb == MPI_COMBINER_DARRAY && ni == 7 && nl == 1 && na == 0 && nt == 1,
          "darray_c envelope: ni %lld nl %lld", (long long)ni, (long long)nl);
    MPI_Type_free(&t);
    /* a negative count is still refused */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Type_contiguous_c(-G, MPI_BYTE, &t), cls = 0;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "contiguous_c(-3e9): class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    wide a = {"vector_c", 0, 0, 3000000005LL, 0, 3000000005LL, 8,
              {0, 1, 2, 3, 3000000001LL, 3000000002LL, 3000000003LL, 3000000004LL},
              MPI_COMBINER_VECTOR, 0, 3, {2, 4, 3000000001LL}, {0}};
    CHECK_RC(MPI_Type_vector_c(2, 4, 3000000001LL, MPI_BYTE, &a.t), "vector_c");
    run(&a, rank, size);
    wide b = {"subarray_c", 0, 0, G, G - 10, 6, 6, {G - 10, G - 9, G - 8, G - 7, G - 6, G - 5},
              MPI_COMBINER_SUBARRAY, 2, 3, {G, 6, G - 10}, {1, MPI_ORDER_C}};
    MPI_Count sizes[] = {G}, subs[] = {6}, starts[] = {G - 10};
    CHECK_RC(MPI_Type_create_subarray_c(1, sizes, subs, starts, MPI_ORDER_C, MPI_BYTE, &b.t),
             "subarray_c");
    run(&b, rank, size);
    /* blocks in type-map order: 3 bytes at 2.2e9, then 2 at 5 */
    wide c = {"indexed_c", 0, 5, 2199999998LL, 5, 2199999998LL, 5,
              {2200000000LL, 2200000001LL, 2200000002LL, 5, 6},
              MPI_COMBINER_INDEXED, 0, 5, {2, 3, 2, 2200000000LL, 5}, {0}};
    MPI_Count bl[] = {3, 2}, disp[] = {2200000000LL, 5};
    CHECK_RC(MPI_Type_indexed_c(2, bl, disp, MPI_BYTE, &c.t), "indexed_c");
    run(&c, rank, size);
    sizes_only(rank, size);
#else
    if (rank == 0)
        printf("type_wide: skipped: the library implements MPI %d.%d\n", MPI_VERSION,
               MPI_SUBVERSION);
#endif
    int rc = check_finish("type_wide");
    MPI_Finalize();
    return rc;
}
