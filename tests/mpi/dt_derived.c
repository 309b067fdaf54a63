/*
 * dt_derived: every derived-datatype constructor's type travels intact between every
 * pair of ranks (so both same-site and cross-site pairs), eager and rendezvous.
 *  - Types built on MPI_INT: contiguous, vector with stride, hvector, indexed with holes
 *    and blocks out of address order, hindexed, indexed_block, hindexed_block, resized
 *    (larger extent, and a negative lower bound), subarray (C and Fortran order), darray
 *    (block x cyclic), nested (vector of indexed), struct of a vector and an int, dup.
 *    The test knows each type's int positions independently (a list written by hand), so
 *    every covered int must hold the sender's value and every hole must stay untouched.
 *  - Counts 3 (eager) and one making > 64 KiB (rendezvous across sites).
 *  - Receive into a different, type-compatible datatype: send the type, receive plain
 *    MPI_INT; send MPI_INT, receive the type.
 *  - MPI_Get_count / MPI_Get_elements with the type, including a message that ends
 *    inside an element (count MPI_UNDEFINED, elements exact).
 *  - Truncation: 3 elements into room for 2 gives MPI_ERR_TRUNCATE (small messages).
 *  - A struct of char, double, int[3] and short (holes and mixed types) and the pair
 *    type MPI_DOUBLE_INT, both compared member-wise.
 *  - MPI_Bcast of each type from rank 0 (holes at the receivers stay untouched).
 * Works for any size >= 1.
 */
#include "check.h"
#include <stddef.h>
#include <string.h>

#define MAXIDX 64

typedef struct tcase {
    const char *name;
    MPI_Datatype t;
    int origin;   /* ints between the buffer start and the pointer passed to MPI */
    int ext;      /* extent in ints */
    int n;        /* ints per element, in type-map order */
    int idx[MAXIDX];
} tcase;

static int rank, size;

static int val(int src, int pos) { return src * 1000003 + pos * 7 + 1; }

static void add(tcase *c, int i) { c->idx[c->n++] = i; }

static void commit(tcase *c)
{
    CHECK_RC(MPI_Type_commit(&c->t), c->name);
    int sz = 0;
    MPI_Aint lb = 0, ext = 0;
    MPI_Type_size(c->t, &sz);
    MPI_Type_get_extent(c->t, &lb, &ext);
    CHECK(sz == c->n * 4, "%s: size %d, expected %d", c->name, sz, c->n * 4);
    CHECK(ext == c->ext * 4, "%s: extent %ld, expected %d", c->name, (long)ext, c->ext * 4);
}

static int build_cases(tcase *cs)
{
    int k = 0;
    tcase *c;

    c = &cs[k++];
    c->name = "contiguous";
    MPI_Type_contiguous(5, MPI_INT, &c->t);
    c->ext = 5;
    for (int i = 0; i < 5; i++)
        add(c, i);

    c = &cs[k++];
    c->name = "vector";
    MPI_Type_vector(3, 2, 4, MPI_INT, &c->t);
    c->ext = 10;
    for (int b = 0; b < 3; b++)
        add(c, 4 * b), add(c, 4 * b + 1);

    c = &cs[k++];
    c->name = "hvector";
    MPI_Type_create_hvector(3, 1, 12, MPI_INT, &c->t);
    c->ext = 7;
    add(c, 0), add(c, 3), add(c, 6);

    c = &cs[k++];
    c->name = "indexed";
    {
        int bl[] = {2, 1, 3}, d[] = {5, 0, 9};
        MPI_Type_indexed(3, bl, d, MPI_INT, &c->t);
    }
    c->ext = 12;
    add(c, 5), add(c, 6), add(c, 0), add(c, 9), add(c, 10), add(c, 11);
    MPI_Datatype indexed = c->t;

    c = &cs[k++];
    c->name = "hindexed";
    {
        int bl[] = {1, 2};
        MPI_Aint d[] = {16, 0};
        MPI_Type_create_hindexed(2, bl, d, MPI_INT, &c->t);
    }
    c->ext = 5;
    add(c, 4), add(c, 0), add(c, 1);

    c = &cs[k++];
    c->name = "indexed_block";
    {
        int d[] = {6, 0, 3};
        MPI_Type_create_indexed_block(3, 2, d, MPI_INT, &c->t);
    }
    c->ext = 8;
    add(c, 6), add(c, 7), add(c, 0), add(c, 1), add(c, 3), add(c, 4);

    c = &cs[k++];
    c->name = "hindexed_block";
    {
        MPI_Aint d[] = {8, 0};
        MPI_Type_create_hindexed_block(2, 1, d, MPI_INT, &c->t);
    }
    c->ext = 3;
    add(c, 2), add(c, 0);

    c = &cs[k++];
    c->name = "resized";
    {
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 3, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, 20, &c->t);
        MPI_Type_free(&v); /* the resized type keeps what it needs */
    }
    c->ext = 5;
    add(c, 0), add(c, 3);

    c = &cs[k++];
    c->name = "resized_neg_lb";
    {
        MPI_Datatype v;
        MPI_Type_contiguous(2, MPI_INT, &v);
        MPI_Type_create_resized(v, -4, 16, &c->t);
        MPI_Type_free(&v);
    }
    c->origin = 1;
    c->ext = 4;
    add(c, 0), add(c, 1);

    c = &cs[k++];
    c->name = "subarray_c";
    {
        int sz[] = {4, 6}, sub[] = {2, 3}, st[] = {1, 2};
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &c->t);
    }
    c->ext = 24;
    for (int r = 1; r <= 2; r++)
        for (int col = 2; col <= 4; col++)
            add(c, r * 6 + col);

    c = &cs[k++];
    c->name = "subarray_fortran";
    {
        int sz[] = {4, 6}, sub[] = {2, 3}, st[] = {1, 2};
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &c->t);
    }
    c->ext = 24;
    for (int j = 2; j <= 4; j++)
        for (int i = 1; i <= 2; i++)
            add(c, i + 4 * j);

    c = &cs[k++];
    c->name = "darray_block_cyclic";
    {
        /* 4x6 on a 2x2 grid, rows by block, columns cyclic(2); process 3 = coords (1,1):
         * rows 2-3, columns 2-3 (process column 0 has 0,1,4,5) */
        int gs[] = {4, 6}, di[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            da[] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {2, 2};
        MPI_Type_create_darray(4, 3, 2, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &c->t);
    }
    c->ext = 24;
    for (int r = 2; r <= 3; r++)
        for (int col = 2; col <= 3; col++)
            add(c, r * 6 + col);

    c = &cs[k++];
    c->name = "darray_rank0";
    {
        int gs[] = {4, 6}, di[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            da[] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {2, 2};
        MPI_Type_create_darray(4, 0, 2, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &c->t);
    }
    c->ext = 24;
    for (int r = 0; r <= 1; r++) {
        int cols[] = {0, 1, 4, 5};
        for (int j = 0; j < 4; j++)
            add(c, r * 6 + cols[j]);
    }

    c = &cs[k++];
    c->name = "nested_vector_of_indexed";
    MPI_Type_vector(2, 1, 2, indexed, &c->t);
    c->ext = 36;
    {
        int in[] = {5, 6, 0, 9, 10, 11};
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 6; j++)
                add(c, 24 * b + in[j]);
    }

    c = &cs[k++];
    c->name = "struct_vector_int";
    {
        MPI_Datatype v;
        MPI_Type_vector(3, 2, 4, MPI_INT, &v);
        int bl[] = {1, 1};
        MPI_Aint d[] = {0, 48};
        MPI_Datatype ts[] = {v, MPI_INT};
        MPI_Type_create_struct(2, bl, d, ts, &c->t);
        MPI_Type_free(&v);
    }
    c->ext = 13;
    for (int b = 0; b < 3; b++)
        add(c, 4 * b), add(c, 4 * b + 1);
    add(c, 12);

    c = &cs[k++];
    c->name = "dup_of_vector";
    {
        MPI_Datatype v;
        MPI_Type_vector(3, 2, 4, MPI_INT, &v);
        MPI_Type_dup(v, &c->t);
        MPI_Type_free(&v);
    }
    c->ext = 10;
    for (int b = 0; b < 3; b++)
        add(c, 4 * b), add(c, 4 * b + 1);

    for (int i = 0; i < k; i++)
        commit(&cs[i]);
    return k;
}

/* Buffer holding count elements of c, with a margin of holes at the end. */
static int buf_ints(const tcase *c, int count) { return c->origin + count * c->ext + 8; }

static void check_typed(const tcase *c, const int *buf, int count, int src, const char *what,
                        int peer)
{
    int nb = buf_ints(c, count), bad = 0;
    char *covered = calloc((size_t)nb, 1);
    for (int k = 0; k < count; k++)
        for (int j = 0; j < c->n; j++)
            covered[c->origin + k * c->ext + c->idx[j]] = 1;
    for (int p = 0; p < nb && bad < 3; p++) {
        int want = covered[p] ? val(src, p) : -1;
        if (buf[p] != want) {
            CHECK(0, "%s %s count %d from %d: int %d is %d, expected %d", c->name, what, count,
                  peer, p, buf[p], want);
            bad++;
        }
    }
    free(covered);
}

static void exchange(const tcase *c, int count)
{
    int nb = buf_ints(c, count);
    int *sbuf = malloc(sizeof(int) * (size_t)nb);
    int *rbuf = malloc(sizeof(int) * (size_t)nb * (size_t)size);
    int *flat = malloc(sizeof(int) * (size_t)(count * c->n) * (size_t)size);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * 4 * (size_t)size);
    MPI_Status *st = malloc(sizeof(MPI_Status) * 4 * (size_t)size);
    for (int p = 0; p < nb; p++)
        sbuf[p] = val(rank, p);
    for (int p = 0; p < nb * size; p++)
        rbuf[p] = -1;
    int nr = 0;
    /* typed -> typed, and typed -> MPI_INT (a compatible signature) from every rank */
    for (int q = 0; q < size; q++) {
        MPI_Irecv(rbuf + (size_t)q * nb + c->origin, count, c->t, q, 1, MPI_COMM_WORLD, &rq[nr++]);
        MPI_Irecv(flat + (size_t)q * count * c->n, count * c->n, MPI_INT, q, 2, MPI_COMM_WORLD,
                  &rq[nr++]);
    }
    for (int q = 0; q < size; q++) {
        MPI_Isend(sbuf + c->origin, count, c->t, q, 1, MPI_COMM_WORLD, &rq[nr++]);
        MPI_Isend(sbuf + c->origin, count, c->t, q, 2, MPI_COMM_WORLD, &rq[nr++]);
    }
    CHECK_RC(MPI_Waitall(nr, rq, st), c->name);
    for (int q = 0; q < size; q++) {
        int cnt = -1, el = -1;
        MPI_Get_count(&st[2 * q], c->t, &cnt);
        MPI_Get_elements(&st[2 * q], c->t, &el);
        CHECK(cnt == count && el == count * c->n, "%s: from %d Get_count %d Get_elements %d, "
              "expected %d %d", c->name, q, cnt, el, count, count * c->n);
        MPI_Get_count(&st[2 * q + 1], MPI_INT, &cnt);
        CHECK(cnt == count * c->n, "%s: from %d as MPI_INT Get_count %d", c->name, q, cnt);
        check_typed(c, rbuf + (size_t)q * nb, count, q, "typed", q);
        int bad = 0;
        for (int k = 0; k < count && bad < 3; k++)
            for (int j = 0; j < c->n && bad < 3; j++) {
                int got = flat[(size_t)q * count * c->n + k * c->n + j];
                int want = val(q, c->origin + k * c->ext + c->idx[j]);
                if (got != want) {
                    CHECK(0, "%s received as MPI_INT from %d: element %d.%d is %d, expected %d",
                          c->name, q, k, j, got, want);
                    bad++;
                }
            }
    }
    /* MPI_INT -> typed: the far peer sends plain ints into our type */
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int *plain = malloc(sizeof(int) * (size_t)(count * c->n));
    for (int i = 0; i < count * c->n; i++)
        plain[i] = val(rank, 0) + i;
    for (int p = 0; p < nb; p++)
        rbuf[p] = -1;
    MPI_Irecv(rbuf + c->origin, count, c->t, from, 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(plain, count * c->n, MPI_INT, to, 3, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, st);
    int bad = 0;
    for (int k = 0; k < count && bad < 3; k++)
        for (int j = 0; j < c->n && bad < 3; j++) {
            int got = rbuf[c->origin + k * c->ext + c->idx[j]];
            int want = val(from, 0) + k * c->n + j;
            if (got != want) {
                CHECK(0, "%s: MPI_INT from %d unpacked into element %d.%d: %d, expected %d",
                      c->name, from, k, j, got, want);
                bad++;
            }
        }
    free(plain);
    free(sbuf);
    free(rbuf);
    free(flat);
    free(rq);
    free(st);
}

/* A message ending inside an element, and a truncated one. */
static void partial_and_truncate(const tcase *c)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    int n = c->n + 1; /* one element and one int */
    int *plain = malloc(sizeof(int) * (size_t)(3 * c->n));
    int *buf = malloc(sizeof(int) * (size_t)buf_ints(c, 3));
    for (int i = 0; i < 3 * c->n; i++)
        plain[i] = i;
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Irecv(buf + c->origin, 3, c->t, from, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(plain, n, MPI_INT, to, 4, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, st);
    int cnt = 0, el = 0;
    MPI_Get_count(&st[0], c->t, &cnt);
    MPI_Get_elements(&st[0], c->t, &el);
    CHECK(cnt == MPI_UNDEFINED && el == n, "%s: %d ints received: Get_count %d (expected "
          "MPI_UNDEFINED), Get_elements %d (expected %d)", c->name, n, cnt, el, n);
    /* truncation: 3 elements sent, room for 2 */
    MPI_Irecv(buf + c->origin, 2, c->t, from, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(plain, 3 * c->n, MPI_INT, to, 5, MPI_COMM_WORLD, &rq[1]);
    int rc = MPI_Wait(&rq[0], &st[0]);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "%s: truncated receive from %d returned class %d", c->name,
          from, cls);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    free(plain);
    free(buf);
}

static void bcast(const tcase *c, int count)
{
    int nb = buf_ints(c, count);
    int *buf = malloc(sizeof(int) * (size_t)nb);
    for (int p = 0; p < nb; p++)
        buf[p] = rank == 0 ? val(0, p) : -1;
    CHECK_RC(MPI_Bcast(buf + c->origin, count, c->t, 0, MPI_COMM_WORLD), c->name);
    if (rank != 0)
        check_typed(c, buf, count, 0, "bcast", 0);
    free(buf);
}

typedef struct rec {
    char c;
    double d;
    int i[3];
    short s;
} rec;

static void mixed_struct_and_pairs(void)
{
    MPI_Datatype t;
    int bl[] = {1, 1, 3, 1};
    MPI_Aint d[] = {offsetof(rec, c), offsetof(rec, d), offsetof(rec, i), offsetof(rec, s)};
    MPI_Datatype ts[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Type_create_struct(4, bl, d, ts, &t);
    MPI_Type_commit(&t);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof(rec), "struct rec: lb %ld extent %ld, sizeof %zu",
          (long)lb, (long)ext, sizeof(rec));
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    for (int count = 4; count <= 8000; count *= 2000) {
        rec *s = malloc(sizeof(rec) * (size_t)count), *r = malloc(sizeof(rec) * (size_t)count);
        for (int k = 0; k < count; k++) {
            s[k].c = (char)('a' + (rank + k) % 26);
            s[k].d = rank * 0.5 + k * 0.25;
            for (int j = 0; j < 3; j++)
                s[k].i[j] = rank * 100000 + k * 3 + j;
            s[k].s = (short)(k - rank);
        }
        memset(r, 0x7f, sizeof(rec) * (size_t)count);
        MPI_Status st;
        MPI_Sendrecv(s, count, t, to, 6, r, count, t, from, 6, MPI_COMM_WORLD, &st);
        int bad = 0, cnt = 0;
        MPI_Get_count(&st, t, &cnt);
        CHECK(cnt == count, "struct rec: Get_count %d, expected %d", cnt, count);
        for (int k = 0; k < count && bad < 3; k++) {
            int ok = r[k].c == (char)('a' + (from + k) % 26) && r[k].d == from * 0.5 + k * 0.25 &&
                     r[k].s == (short)(k - from);
            for (int j = 0; j < 3; j++)
                ok &= r[k].i[j] == from * 100000 + k * 3 + j;
            if (!ok) {
                CHECK(0, "struct rec count %d from %d: element %d differs", count, from, k);
                bad++;
            }
        }
        free(s);
        free(r);
    }
    MPI_Type_free(&t);

    /* MPI_DOUBLE_INT: 12 bytes of data in a 16-byte struct */
    typedef struct { double v; int i; } di;
    for (int count = 5; count <= 10000; count *= 2000) {
        di *s = malloc(sizeof(di) * (size_t)count), *r = malloc(sizeof(di) * (size_t)count);
        for (int k = 0; k < count; k++)
            s[k].v = rank + k / 8.0, s[k].i = rank * 7 + k;
        memset(r, 0, sizeof(di) * (size_t)count);
        MPI_Status st;
        MPI_Sendrecv(s, count, MPI_DOUBLE_INT, to, 7, r, count, MPI_DOUBLE_INT, from, 7,
                     MPI_COMM_WORLD, &st);
        int cnt = 0, el = 0;
        MPI_Get_count(&st, MPI_DOUBLE_INT, &cnt);
        MPI_Get_elements(&st, MPI_DOUBLE_INT, &el);
        CHECK(cnt == count, "double_int: Get_count %d, expected %d", cnt, count);
        CHECK(el == count || el == 2 * count,
              "double_int: Get_elements %d, expected %d (or %d counting members)", el, count,
              2 * count);
        int bad = 0;
        for (int k = 0; k < count && bad < 3; k++)
            if (r[k].v != from + k / 8.0 || r[k].i != from * 7 + k) {
                CHECK(0, "double_int count %d from %d: element %d is (%g, %d)", count, from, k,
                      r[k].v, r[k].i);
                bad++;
            }
        free(s);
        free(r);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    tcase cs[20];
    memset(cs, 0, sizeof cs);
    int n = build_cases(cs);
    for (int i = 0; i < n; i++) {
        exchange(&cs[i], 3);
        /* more than 64 KiB of packed data: rendezvous across sites */
        exchange(&cs[i], 70000 / (cs[i].n * 4) + 1);
        partial_and_truncate(&cs[i]);
        bcast(&cs[i], 3);
        bcast(&cs[i], 70000 / (cs[i].n * 4) + 1);
    }
    mixed_struct_and_pairs();
    for (int i = 0; i < n; i++)
        MPI_Type_free(&cs[i].t);
    int rc = check_finish("dt_derived");
    MPI_Finalize();
    return rc;
}
