/*
 * comm_groups: groups, communicator construction, attributes and names.
 *  - Groups: MPI_Comm_group of world; incl, excl, range_incl, range_excl (with negative
 *    strides), union, intersection, difference; sizes, ranks (MPI_UNDEFINED outside),
 *    translate_ranks (with MPI_PROC_NULL), compare (IDENT, SIMILAR, UNEQUAL); freeing.
 *  - Communicators: split by parity, reversed split (key -rank), split with
 *    MPI_UNDEFINED (gets MPI_COMM_NULL), create from a group of every third rank,
 *    create with disjoint groups per rank (halves), create_group of the odd ranks only
 *    (the even ranks are busy elsewhere), 24 create_groups in a row on one tag with
 *    pseudo-random subsets, split_type MPI_COMM_TYPE_SHARED (also asked
 *    by one rank while the others pass MPI_UNDEFINED) and the isthmus site split; Comm_compare of each with world; then on each new communicator:
 *    a ring of Sendrecv, Allreduce of ranks, Bcast from the last rank, Barrier, and
 *    MPI_Comm_group matching the expected members.
 *  - Attributes: a keyval with copy and delete callbacks; the copy runs on dup (value
 *    incremented), the delete on free and on overwrite, counted exactly; a keyval with
 *    MPI_COMM_NULL_COPY_FN is not copied; MPI_Comm_free_keyval while in use; predefined
 *    attributes on world and on a duplicate (MPI_TAG_UB >= 32767); Comm_set_name/get_name.
 *  - Datatype attributes: copy on Type_dup, delete on Type_free and Type_delete_attr, also
 *    on a predefined type.
 *  - Error classes with MPI_ERRORS_RETURN: bad group rank, bad keyval.
 */
#include "check.h"
#include <string.h>

static int rank, size;

static void basic_ops(MPI_Comm c, const char *what, const int *expect_world, int n)
{
    int r, s;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &s);
    CHECK(s == n, "%s: size %d, expected %d", what, s, n);
    MPI_Group g, wg;
    MPI_Comm_group(c, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < n && i < s; i++) {
        int w = -1;
        MPI_Group_translate_ranks(g, 1, &i, wg, &w);
        CHECK(w == expect_world[i], "%s: rank %d is world %d, expected %d", what, i, w,
              expect_world[i]);
    }
    CHECK(expect_world[r] == rank, "%s: my rank %d maps to world %d, I am %d", what, r,
          expect_world[r], rank);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    int token = r * 10 + 1, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (r + 1) % s, 5, &got, 1, MPI_INT, (r - 1 + s) % s, 5, c,
                 MPI_STATUS_IGNORE);
    CHECK(got == ((r - 1 + s) % s) * 10 + 1, "%s: ring got %d", what, got);
    int sum = -1;
    MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == s * (s - 1) / 2, "%s: allreduce %d", what, sum);
    int b = r == s - 1 ? 4242 + s : -1;
    MPI_Bcast(&b, 1, MPI_INT, s - 1, c);
    CHECK(b == 4242 + s, "%s: bcast %d", what, b);
    MPI_Barrier(c);
}

static void groups(void)
{
    MPI_Group w, evens, odds, u, in, d, r1, r2;
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    int gs, gr;
    MPI_Group_size(w, &gs);
    MPI_Group_rank(w, &gr);
    CHECK(gs == size && gr == rank, "world group size %d rank %d", gs, gr);
    int ne = (size + 1) / 2, *ev = malloc(sizeof(int) * size);
    for (int i = 0; i < ne; i++)
        ev[i] = 2 * i;
    MPI_Group_incl(w, ne, ev, &evens);
    MPI_Group_excl(w, ne, ev, &odds);
    MPI_Group_size(evens, &gs);
    CHECK(gs == ne, "evens size %d", gs);
    MPI_Group_rank(evens, &gr);
    CHECK(gr == (rank % 2 ? MPI_UNDEFINED : rank / 2), "evens rank %d", gr);
    MPI_Group_rank(odds, &gr);
    CHECK(gr == (rank % 2 ? rank / 2 : MPI_UNDEFINED), "odds rank %d", gr);
    MPI_Group_union(odds, evens, &u);
    MPI_Group_size(u, &gs);
    CHECK(gs == size, "union size %d", gs);
    int res;
    MPI_Group_compare(u, w, &res);
    CHECK(res == (size > 2 ? MPI_SIMILAR : size == 2 ? MPI_SIMILAR : MPI_IDENT),
          "union vs world: %d", res);
    /* union keeps the first group's order: odds first */
    int zero = 0, t = -1;
    MPI_Group_translate_ranks(u, 1, &zero, w, &t);
    CHECK(t == (size > 1 ? 1 : 0), "union rank 0 is world %d", t);
    MPI_Group_intersection(w, evens, &in);
    MPI_Group_compare(in, evens, &res);
    CHECK(res == MPI_IDENT, "intersection(world, evens) vs evens: %d", res);
    MPI_Group_difference(w, evens, &d);
    MPI_Group_compare(d, odds, &res);
    CHECK(res == MPI_IDENT, "difference(world, evens) vs odds: %d", res);
    MPI_Group_compare(evens, odds, &res);
    CHECK(res == MPI_UNEQUAL || size == 1, "evens vs odds: %d", res);
    /* ranges: (size-1 .. 0 step -2) and its complement */
    int range[1][3] = {{size - 1, 0, -2}};
    MPI_Group_range_incl(w, 1, range, &r1);
    MPI_Group_range_excl(w, 1, range, &r2);
    int n1, n2;
    MPI_Group_size(r1, &n1);
    MPI_Group_size(r2, &n2);
    CHECK(n1 == (size + 1) / 2 && n1 + n2 == size, "range sizes %d %d", n1, n2);
    int q[2] = {0, MPI_PROC_NULL}, out[2];
    MPI_Group_translate_ranks(r1, 2, q, w, out);
    CHECK(out[0] == size - 1 && out[1] == MPI_PROC_NULL, "range_incl first %d %d", out[0],
          out[1]);
    /* errors come back with MPI_ERRORS_RETURN */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad = size, cls = -1;
    MPI_Group x;
    int rc = MPI_Group_incl(w, 1, &bad, &x);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "Group_incl with rank %d: class %d", bad, cls);
    void *v;
    int flag;
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &v, &flag);
    MPI_Error_class(rc, &cls);
    /* MPI_ERR_KEYVAL (MPICH, isthmus); Open MPI 4.1 says MPI_ERR_OTHER */
    CHECK(cls == MPI_ERR_KEYVAL || cls == MPI_ERR_OTHER, "get_attr with a bad keyval: class %d",
          cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Group *all[] = {&w, &evens, &odds, &u, &in, &d, &r1, &r2};
    for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
        MPI_Group_free(all[i]);
    CHECK(w == MPI_GROUP_NULL, "Group_free sets MPI_GROUP_NULL");
    free(ev);
}

static void comms(void)
{
    int *m = malloc(sizeof(int) * size);
    MPI_Comm par, rev, undef, third, halves, odd, shared, site;
    int n;
    /* parity */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &par);
    n = 0;
    for (int i = rank % 2; i < size; i += 2)
        m[n++] = i;
    basic_ops(par, "parity split", m, n);
    /* reversed */
    MPI_Comm_split(MPI_COMM_WORLD, 7, size - rank, &rev);
    for (int i = 0; i < size; i++)
        m[i] = size - 1 - i;
    basic_ops(rev, "reversed split", m, size);
    int res;
    MPI_Comm_compare(rev, MPI_COMM_WORLD, &res);
    CHECK(res == (size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "reversed vs world: %d", res);
    /* only rank 0 opts in */
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 3 : MPI_UNDEFINED, 0, &undef);
    CHECK((rank == 0) == (undef != MPI_COMM_NULL), "MPI_UNDEFINED gives MPI_COMM_NULL");
    if (undef != MPI_COMM_NULL) {
        m[0] = 0;
        basic_ops(undef, "single split", m, 1);
        MPI_Comm_free(&undef);
    }
    /* create: every third rank */
    MPI_Group w, g3, gh;
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    int range[1][3] = {{0, size - 1, 3}};
    MPI_Group_range_incl(w, 1, range, &g3);
    MPI_Comm_create(MPI_COMM_WORLD, g3, &third);
    CHECK((rank % 3 == 0) == (third != MPI_COMM_NULL), "Comm_create membership");
    if (third != MPI_COMM_NULL) {
        n = 0;
        for (int i = 0; i < size; i += 3)
            m[n++] = i;
        basic_ops(third, "create every third", m, n);
        MPI_Comm_free(&third);
    }
    /* create with disjoint groups: the lower and the upper half */
    int h = size / 2, lo = rank < h;
    int hr[1][3] = {{lo ? 0 : h, lo ? h - 1 : size - 1, 1}};
    if (h > 0) {
        MPI_Group_range_incl(w, 1, hr, &gh);
        MPI_Comm_create(MPI_COMM_WORLD, gh, &halves);
        n = 0;
        for (int i = hr[0][0]; i <= hr[0][1]; i++)
            m[n++] = i;
        basic_ops(halves, "create halves", m, n);
        MPI_Comm_free(&halves);
        MPI_Group_free(&gh);
    }
    /* create_group: only the odd ranks take part; the evens do a barrier among
     * themselves meanwhile */
    if (rank % 2) {
        MPI_Group go;
        int r2[1][3] = {{1, size - 1, 2}};
        MPI_Group_range_incl(w, 1, r2, &go);
        MPI_Comm_create_group(MPI_COMM_WORLD, go, 77, &odd);
        n = 0;
        for (int i = 1; i < size; i += 2)
            m[n++] = i;
        basic_ops(odd, "create_group odds", m, n);
        MPI_Comm_free(&odd);
        MPI_Group_free(&go);
    } else {
        MPI_Barrier(par);
    }
    /* split_type */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    CHECK(shared != MPI_COMM_NULL, "split_type shared gave MPI_COMM_NULL");
    char me[MPI_MAX_PROCESSOR_NAME], *names = malloc((size_t)MPI_MAX_PROCESSOR_NAME * size);
    int len;
    MPI_Get_processor_name(me, &len);
    int ssz;
    MPI_Comm_size(shared, &ssz);
    MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  shared);
    for (int i = 0; i < ssz; i++)
        CHECK(strcmp(names + (size_t)i * MPI_MAX_PROCESSOR_NAME, me) == 0,
              "shared comm holds another node (%s vs %s)", names + (size_t)i * MPI_MAX_PROCESSOR_NAME,
              me);
    MPI_Comm_free(&shared);
    free(names);
    /* only one rank asks for a split type, the others pass MPI_UNDEFINED */
    for (int root = 0; root < size; root++) {
        MPI_Comm one;
        MPI_Comm_split_type(MPI_COMM_WORLD, rank == root ? MPI_COMM_TYPE_SHARED : MPI_UNDEFINED,
                            0, MPI_INFO_NULL, &one);
        CHECK((rank == root) == (one != MPI_COMM_NULL), "split_type with MPI_UNDEFINED elsewhere");
        if (one != MPI_COMM_NULL) {
            int os;
            MPI_Comm_size(one, &os);
            CHECK(os == 1, "split_type alone: size %d", os);
            MPI_Comm_free(&one);
        }
    }
    /* create_group in a loop, one tag, a different subset each time: a member that is
     * fast into the next call must not disturb one still creating the previous */
    {
        MPI_Group wg;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        int *members = malloc(sizeof(int) * (size_t)size);
        unsigned seed = 12345;
        for (int it = 0; it < 24; it++) {
            int n = 0, in = 0;
            for (int r = 0; r < size; r++) {
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) & 1) {
                    members[n++] = r;
                    in |= r == rank;
                }
            }
            if (!in)
                continue;
            MPI_Group sub;
            MPI_Comm cg;
            MPI_Group_incl(wg, n, members, &sub);
            MPI_Comm_create_group(MPI_COMM_WORLD, sub, 5, &cg);
            int one = 1, cnt = 0;
            MPI_Allreduce(&one, &cnt, 1, MPI_INT, MPI_SUM, cg);
            CHECK(cnt == n, "create_group loop %d: %d members answered, want %d", it, cnt, n);
            MPI_Comm_free(&cg);
            MPI_Group_free(&sub);
        }
        free(members);
        MPI_Group_free(&wg);
    }
#if MPI_VERSION >= 4
    /* MPI 4.0 hardware splits: HW_GUIDED without the resource key gives MPI_COMM_NULL,
     * with "mpi_shared_memory" the shared-memory split; HW_UNGUIDED gives a proper subset
     * (or MPI_COMM_NULL) and names its resource in the info */
    {
        MPI_Comm g = MPI_COMM_WORLD, u = MPI_COMM_WORLD, sh;
        int shs = -1, gs = -2, us = -1, flag = 0;
        char res[64] = "";
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &sh);
        MPI_Comm_size(sh, &shs);
        MPI_Comm_free(&sh);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &g);
        CHECK(g == MPI_COMM_NULL, "HW_GUIDED with MPI_INFO_NULL gave a communicator");
        MPI_Info in;
        MPI_Info_create(&in);
        MPI_Info_set(in, "mpi_hw_resource_type", "mpi_shared_memory");
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, in, &g);
        CHECK(g != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory gave MPI_COMM_NULL");
        if (g != MPI_COMM_NULL) {
            MPI_Comm_size(g, &gs);
            CHECK(gs == shs, "HW_GUIDED mpi_shared_memory: size %d, shared split %d", gs, shs);
            MPI_Comm_free(&g);
        }
        MPI_Info_free(&in);
        MPI_Info_create(&in);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, in, &u);
        if (u != MPI_COMM_NULL) {
            MPI_Comm_size(u, &us);
            CHECK(us < size, "HW_UNGUIDED: size %d is not a proper subset of %d", us, size);
            MPI_Info_get(in, "mpi_hw_resource_type", (int)sizeof res - 1, res, &flag);
            CHECK(flag && res[0], "HW_UNGUIDED did not name its resource in the info");
            MPI_Comm_free(&u);
        }
        MPI_Info_free(&in);
    }
#endif
#ifdef ISTHMUS_COMM_TYPE_SITE
    MPI_Comm_split_type(MPI_COMM_WORLD, ISTHMUS_COMM_TYPE_SITE, rank, MPI_INFO_NULL, &site);
    const char *mysite = getenv("ISTHMUS_SITE");
    int sid = mysite ? atoi(mysite) : 0, ss, smin = -1, smax = -1;
    MPI_Comm_size(site, &ss);
    MPI_Allreduce(&sid, &smin, 1, MPI_INT, MPI_MIN, site);
    MPI_Allreduce(&sid, &smax, 1, MPI_INT, MPI_MAX, site);
    CHECK(smin == smax, "site comm spans sites %d..%d", smin, smax);
    int total = 0;
    MPI_Allreduce(&ss, &total, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    CHECK(total >= 1, "site comm size %d", ss);
    MPI_Comm_free(&site);
#else
    (void)site;
#endif
    MPI_Group_free(&g3);
    MPI_Group_free(&w);
    MPI_Comm_free(&par);
    MPI_Comm_free(&rev);
    CHECK(rev == MPI_COMM_NULL, "Comm_free sets MPI_COMM_NULL");
    free(m);
}

static int copies, deletes;

static int copy_fn(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)c;
    (void)kv;
    CHECK(extra == &copies, "extra_state passed to copy");
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int kv, void *val, void *extra)
{
    (void)c;
    (void)kv;
    (void)val;
    CHECK(extra == &copies, "extra_state passed to delete");
    deletes++;
    return MPI_SUCCESS;
}

static int tcopies, tdeletes;

static int tcopy_fn(MPI_Datatype t, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)kv;
    (void)extra;
    tcopies++;
    *(void **)out = (char *)in + 10;
    *flag = 1;
    return MPI_SUCCESS;
}

static int tdelete_fn(MPI_Datatype t, int kv, void *val, void *extra)
{
    (void)t;
    (void)kv;
    (void)val;
    (void)extra;
    tdeletes++;
    return MPI_SUCCESS;
}

static void type_attributes(void)
{
    static char base[16];
    int kv, flag;
    void *v;
    MPI_Type_create_keyval(tcopy_fn, tdelete_fn, &kv, NULL);
    MPI_Datatype t, d;
    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_set_attr(t, kv, base);
    MPI_Type_get_attr(t, kv, &v, &flag);
    CHECK(flag && v == base, "type attribute");
    MPI_Type_dup(t, &d);
    CHECK(tcopies == 1, "Type_dup ran %d copies", tcopies);
    MPI_Type_get_attr(d, kv, &v, &flag);
    CHECK(flag && v == base + 10, "copied type attribute");
    MPI_Type_free(&d);
    CHECK(tdeletes == 1, "Type_free ran %d deletes", tdeletes);
    MPI_Type_delete_attr(t, kv);
    CHECK(tdeletes == 2, "Type_delete_attr ran %d deletes", tdeletes);
    MPI_Type_get_attr(t, kv, &v, &flag);
    CHECK(!flag, "type attribute still there");
    MPI_Type_free(&t);
    /* predefined types carry attributes too */
    MPI_Type_set_attr(MPI_DOUBLE, kv, base + 1);
    MPI_Type_get_attr(MPI_DOUBLE, kv, &v, &flag);
    CHECK(flag && v == base + 1, "attribute on MPI_DOUBLE");
    MPI_Type_delete_attr(MPI_DOUBLE, kv);
    MPI_Type_free_keyval(&kv);
    CHECK(kv == MPI_KEYVAL_INVALID, "Type_free_keyval resets the handle");
}

static void attributes(void)
{
    int kv, kvn, flag;
    void *v;
    char base[4];
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &copies);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kvn, NULL);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_attr(c, kv, base);
    MPI_Comm_set_attr(c, kvn, base + 2);
    MPI_Comm_get_attr(c, kv, &v, &flag);
    CHECK(flag && v == base, "get_attr after set");
    MPI_Comm_set_attr(c, kv, base + 1); /* overwrite: deletes the old value */
    CHECK(deletes == 1, "overwrite ran %d deletes", deletes);
    MPI_Comm d;
    MPI_Comm_dup(c, &d);
    CHECK(copies == 1, "dup ran %d copies", copies);
    MPI_Comm_get_attr(d, kv, &v, &flag);
    CHECK(flag && v == base + 2, "copied value");
    MPI_Comm_get_attr(d, kvn, &v, &flag);
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN attribute was copied");
    MPI_Comm_free_keyval(&kv); /* still in use by c and d */
    CHECK(kv == MPI_KEYVAL_INVALID, "free_keyval resets the handle");
    MPI_Comm_free(&d);
    CHECK(deletes == 2, "free ran %d deletes in all", deletes);
    MPI_Comm_delete_attr(c, kvn);
    MPI_Comm_get_attr(c, kvn, &v, &flag);
    CHECK(!flag, "attribute still there after delete_attr");
    MPI_Comm_free(&c);
    CHECK(deletes == 3, "free ran %d deletes in all", deletes);
    MPI_Comm_free_keyval(&kvn);
    /* predefined */
    int *tub;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tub, &flag);
    CHECK(flag && *tub >= 32767, "MPI_TAG_UB");
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_get_attr(c, MPI_TAG_UB, &tub, &flag);
    CHECK(flag && *tub >= 32767, "MPI_TAG_UB on a duplicate");
    int *wg;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &wg, &flag);
    CHECK(!flag || *wg == 0 || *wg == 1, "MPI_WTIME_IS_GLOBAL");
    /* names */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0, "world name %s", name);
    MPI_Comm_set_name(c, "my duplicate");
    MPI_Comm_get_name(c, name, &len);
    CHECK(strcmp(name, "my duplicate") == 0 && len == 12, "set name: %s", name);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    groups();
    comms();
    attributes();
    type_attributes();
    int rc = check_finish("comm_groups");
    MPI_Finalize();
    return rc;
}
