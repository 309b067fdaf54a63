/*
 * dt_legacy: the MPI-1 functions and bound markers that MPI 3.0 removed, which older
 * applications still use (isthmus keeps them, as MPICH does; Open MPI 4.1 does not build
 * this program, run_vendor.sh skips it there).
 *  - MPI_Address gives what MPI_Get_address gives.
 *  - MPI_Type_hvector, MPI_Type_hindexed and MPI_Type_struct build the same types as
 *    their MPI_Type_create_* replacements (size, extent, and the packed bytes).
 *  - MPI_LB/MPI_UB: { (LB,-3), 4 x BYTE at 0, (UB,6) } has size 4, lb -3, extent 9,
 *    true lb 0, true extent 4 (MPI_Type_lb/ub/extent and MPI_Type_get_extent agree);
 *    several markers of a kind take the least LB and the greatest UB; one LB marker alone
 *    at 10 gives lb 10, ub 0 (extent -10); a UB marker alone sets the extent of a struct
 *    (the MPI-1 way to pad a struct to its C size), and a contiguous type of marked types
 *    strides by that extent.
 *  - Such a padded struct goes to the far peer (across sites when there are several):
 *    3 elements land at their extent, the bytes between them untouched.
 *  - MPI_Type_get_name(MPI_LB) is "MPI_LB".
 *  - MPI_Errhandler_create/set/get: a handler set on a communicator is called with
 *    MPI_ERR_RANK for a send to a bad rank, and MPI_Errhandler_get returns it.
 * Works for any size >= 1.
 */
#include "check.h"
#include <stddef.h>
#include <string.h>

static int rank, size;

static void bounds(MPI_Datatype t, const char *what, int size_want, MPI_Aint lb_want,
                   MPI_Aint extent_want)
{
    int sz = -1;
    MPI_Aint lb = -99, ub = -99, ext = -99, glb = -99, gext = -99;
    CHECK_RC(MPI_Type_size(t, &sz), what);
    CHECK_RC(MPI_Type_lb(t, &lb), what);
    CHECK_RC(MPI_Type_ub(t, &ub), what);
    CHECK_RC(MPI_Type_extent(t, &ext), what);
    CHECK_RC(MPI_Type_get_extent(t, &glb, &gext), what);
    CHECK(sz == size_want, "%s: size %d, expected %d", what, sz, size_want);
    CHECK(lb == lb_want && glb == lb_want, "%s: lb %ld (get_extent %ld), expected %ld", what,
          (long)lb, (long)glb, (long)lb_want);
    CHECK(ext == extent_want && gext == extent_want,
          "%s: extent %ld (get_extent %ld), expected %ld", what, (long)ext, (long)gext,
          (long)extent_want);
    CHECK(ub == lb_want + extent_want, "%s: ub %ld, expected %ld", what, (long)ub,
          (long)(lb_want + extent_want));
}

static void same_type(MPI_Datatype a, MPI_Datatype b, const char *what)
{
    int sa = -1, sb = -2;
    MPI_Aint la, ea, lb, eb;
    MPI_Type_size(a, &sa);
    MPI_Type_size(b, &sb);
    MPI_Type_get_extent(a, &la, &ea);
    MPI_Type_get_extent(b, &lb, &eb);
    CHECK(sa == sb && la == lb && ea == eb,
          "%s: size/lb/extent %d/%ld/%ld, the MPI-2 constructor gives %d/%ld/%ld", what, sa,
          (long)la, (long)ea, sb, (long)lb, (long)eb);
    int src[64];
    for (int i = 0; i < 64; i++)
        src[i] = 1000 + i;
    char pa[512], pb[512];
    int posa = 0, posb = 0;
    MPI_Type_commit(&a);
    MPI_Type_commit(&b);
    CHECK_RC(MPI_Pack(src, 1, a, pa, sizeof pa, &posa, MPI_COMM_SELF), what);
    CHECK_RC(MPI_Pack(src, 1, b, pb, sizeof pb, &posb, MPI_COMM_SELF), what);
    CHECK(posa == posb && memcmp(pa, pb, (size_t)posa) == 0, "%s: packed bytes differ", what);
    MPI_Type_free(&a);
    MPI_Type_free(&b);
}

static void constructors(void)
{
    double x[2];
    MPI_Aint a1 = 0, a2 = 0;
    CHECK_RC(MPI_Address(&x[1], &a1), "MPI_Address");
    MPI_Get_address(&x[1], &a2);
    CHECK(a1 == a2 && a1 != 0, "MPI_Address %ld, MPI_Get_address %ld", (long)a1, (long)a2);

    MPI_Datatype t1, t2;
    CHECK_RC(MPI_Type_hvector(3, 2, 20, MPI_INT, &t1), "MPI_Type_hvector");
    MPI_Type_create_hvector(3, 2, 20, MPI_INT, &t2);
    same_type(t1, t2, "MPI_Type_hvector");

    int bl[3] = {2, 1, 3};
    MPI_Aint disp[3] = {8, 0, 40};
    CHECK_RC(MPI_Type_hindexed(3, bl, disp, MPI_INT, &t1), "MPI_Type_hindexed");
    MPI_Type_create_hindexed(3, bl, disp, MPI_INT, &t2);
    same_type(t1, t2, "MPI_Type_hindexed");

    MPI_Datatype types[3] = {MPI_INT, MPI_SHORT, MPI_INT};
    CHECK_RC(MPI_Type_struct(3, bl, disp, types, &t1), "MPI_Type_struct");
    MPI_Type_create_struct(3, bl, disp, types, &t2);
    same_type(t1, t2, "MPI_Type_struct");
}

static void markers(void)
{
    MPI_Datatype t;
    int bl3[3] = {1, 4, 1};
    MPI_Aint d3[3] = {-3, 0, 6};
    MPI_Datatype ty3[3] = {MPI_LB, MPI_BYTE, MPI_UB};
    CHECK_RC(MPI_Type_struct(3, bl3, d3, ty3, &t), "struct {LB,BYTE,UB}");
    bounds(t, "{(LB,-3), 4 x BYTE, (UB,6)}", 4, -3, 9);
    MPI_Aint tlb = -99, text = -99;
    MPI_Type_get_true_extent(t, &tlb, &text);
    CHECK(tlb == 0 && text == 4, "true lb/extent %ld/%ld, expected 0/4", (long)tlb, (long)text);
    MPI_Datatype c;
    MPI_Type_contiguous(2, t, &c);
    bounds(c, "contiguous(2) of it", 8, -3, 18);
    MPI_Type_free(&c);
    MPI_Type_free(&t);

    int bl5[5] = {1, 1, 2, 1, 1};
    MPI_Aint d5[5] = {4, -2, 0, 12, 20};
    MPI_Datatype ty5[5] = {MPI_LB, MPI_LB, MPI_INT, MPI_UB, MPI_UB};
    CHECK_RC(MPI_Type_create_struct(5, bl5, d5, ty5, &t), "two LB and two UB");
    bounds(t, "two LB (4, -2), two UB (12, 20)", 8, -2, 22);
    MPI_Type_free(&t);

    int one = 1;
    MPI_Aint ten = 10;
    MPI_Datatype lbt = MPI_LB;
    CHECK_RC(MPI_Type_create_struct(1, &one, &ten, &lbt, &t), "{(LB,10)}");
    bounds(t, "{(LB,10)}", 0, 10, -10);
    MPI_Type_free(&t);

    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    CHECK_RC(MPI_Type_get_name(MPI_LB, name, &len), "MPI_Type_get_name(MPI_LB)");
    CHECK(strcmp(name, "MPI_LB") == 0 && len == 6, "MPI_LB is named \"%s\"", name);
    CHECK_RC(MPI_Type_get_name(MPI_UB, name, &len), "MPI_Type_get_name(MPI_UB)");
    CHECK(strcmp(name, "MPI_UB") == 0, "MPI_UB is named \"%s\"", name);
}

/* The MPI-1 idiom: pad a struct type to the C struct's size with an MPI_UB marker. */
struct rec {
    double d;
    int i;
    char tag;
};

static void padded_struct_across(void)
{
    int bl[4] = {1, 1, 1, 1};
    MPI_Aint disp[4] = {offsetof(struct rec, d), offsetof(struct rec, i),
                        offsetof(struct rec, tag), sizeof(struct rec)};
    MPI_Datatype ty[4] = {MPI_DOUBLE, MPI_INT, MPI_CHAR, MPI_UB}, t;
    CHECK_RC(MPI_Type_struct(4, bl, disp, ty, &t), "padded struct");
    CHECK_RC(MPI_Type_commit(&t), "commit padded struct");
    bounds(t, "struct rec with MPI_UB", (int)(sizeof(double) + sizeof(int) + 1), 0,
           (MPI_Aint)sizeof(struct rec));

    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    struct rec out[3], in[3];
    memset(out, 0x11, sizeof out);
    memset(in, 0x5a, sizeof in);
    for (int k = 0; k < 3; k++)
        out[k].d = rank + k * 0.5, out[k].i = rank * 100 + k, out[k].tag = (char)('a' + k);
    CHECK_RC(MPI_Sendrecv(out, 3, t, to, 7, in, 3, t, from, 7, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE),
             "sendrecv padded struct");
    for (int k = 0; k < 3; k++) {
        CHECK(in[k].d == from + k * 0.5 && in[k].i == from * 100 + k &&
                  in[k].tag == (char)('a' + k),
              "element %d from rank %d: %g %d %c", k, from, in[k].d, in[k].i, in[k].tag);
        const unsigned char *p = (const unsigned char *)&in[k];
        for (size_t b = offsetof(struct rec, tag) + 1; b < sizeof(struct rec); b++)
            CHECK(p[b] == 0x5a, "element %d: padding byte %zu written (0x%02x)", k, b, p[b]);
    }
    MPI_Type_free(&t);
}

static int handler_calls, handler_class;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

static void errhandlers(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Errhandler eh, got = MPI_ERRHANDLER_NULL;
    CHECK_RC(MPI_Errhandler_create(count_errors, &eh), "MPI_Errhandler_create");
    CHECK_RC(MPI_Errhandler_set(dup, eh), "MPI_Errhandler_set");
    CHECK_RC(MPI_Errhandler_get(dup, &got), "MPI_Errhandler_get");
    CHECK(got == eh, "MPI_Errhandler_get returned another handler");
    int v = 0;
    int rc = MPI_Send(&v, 1, MPI_INT, size + 5, 0, dup);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(handler_calls == 1 && handler_class == MPI_ERR_RANK && cls == MPI_ERR_RANK,
          "send to rank %d: handler called %d times with class %d, returned class %d",
          size + 5, handler_calls, handler_class, cls);
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    constructors();
    markers();
    padded_struct_across();
    errhandlers();
    int rc = check_finish("dt_legacy");
    MPI_Finalize();
    return rc;
}
