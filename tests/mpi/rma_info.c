/*
 * rma_info: a window's hints (MPI 4.1 §12.2.7) and many windows at once.
 * MPI_Win_get_info reports every hint isthmus recognizes, with the value given at
 * creation or by MPI_Win_set_info, else its default (MPICH's: no_locks, same_size,
 * same_disp_unit and alloc_shared_noncontig "false", accumulate_ordering
 * "rar,raw,war,waw", accumulate_ops "same_op_no_op"); a key it does not know, or a value a
 * hint does not take, is ignored; MPI_INFO_NULL is refused. Then argv[1] windows (20 if
 * not given, at most 1000) are held at once and used, as MPICH's rma/window_allocation does: under
 * isthmus each costs the vendor one window and one communicator duplicate, so MPICH (2046
 * context ids) no longer runs out at 681 (test_rma.py runs 1000; the other runs fewer, as
 * MPICH on one oversubscribed site takes 50 ms a window, alone too). Works for any size.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { NWIN_MAX = 1000 };

static void expect(MPI_Win w, const char *key, const char *want)
{
    MPI_Info in;
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    CHECK_RC(MPI_Win_get_info(w, &in), "MPI_Win_get_info");
    MPI_Info_get(in, key, MPI_MAX_INFO_VAL, v, &flag);
    if (want)
        CHECK(flag && !strcmp(v, want), "hint %s: %s, expected \"%s\"", key,
              flag ? v : "(not set)", want);
    else
        CHECK(!flag, "key %s reported (\"%s\"), expected it ignored", key, v);
    MPI_Info_free(&in);
}

/* the first window's size at rank r (at most 64 bytes for up to 6 ranks) */
static MPI_Aint wsize_of(int r) { return (MPI_Aint)sizeof(int) * (1 + 2 * (r % 6)) + (r % 2) * 3; }

static unsigned char pattern(int t, MPI_Aint i) { return (unsigned char)(0x5a ^ (t * 7 + i)); }

static void set(MPI_Win w, const char *key, const char *val)
{
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, key, val);
    CHECK_RC(MPI_Win_set_info(w, in), "MPI_Win_set_info");
    MPI_Info_free(&in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nwin = argc > 1 ? atoi(argv[1]) : 20;
    if (nwin < 2 || nwin > NWIN_MAX)
        nwin = NWIN_MAX;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* a hint given at creation, the others at their defaults */
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, "no_locks", "true");
    MPI_Info_set(in, "isthmus_no_such_hint", "1");
    int *base;
    MPI_Win w;
    /* sizes differ by rank, not always a multiple of 8 bytes: under isthmus a member's lock
     * word follows its window's bytes, so where it is differs by member */
    MPI_Aint wsize = wsize_of(rank);
    CHECK_RC(MPI_Win_allocate(wsize, sizeof(int), in, MPI_COMM_WORLD, &base, &w),
             "MPI_Win_allocate with hints");
    MPI_Info_free(&in);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    expect(w, "no_locks", "true");
    expect(w, "accumulate_ordering", "rar,raw,war,waw");
    expect(w, "accumulate_ops", "same_op_no_op");
    expect(w, "same_size", "false");
    expect(w, "same_disp_unit", "false");
    expect(w, "alloc_shared_noncontig", "false");
    expect(w, "isthmus_no_such_hint", NULL);

    /* set later; a value a hint does not take leaves it as it was */
    set(w, "no_locks", "false");
    expect(w, "no_locks", "false");
    set(w, "accumulate_ordering", "rar,waw");
    expect(w, "accumulate_ordering", "rar,waw");
    set(w, "accumulate_ordering", "raw,sideways");
    expect(w, "accumulate_ordering", "rar,waw");
    set(w, "accumulate_ordering", "none");
    expect(w, "accumulate_ordering", "none");
    set(w, "accumulate_ops", "same_op");
    expect(w, "accumulate_ops", "same_op");
    set(w, "accumulate_ops", "any_op");
    expect(w, "accumulate_ops", "same_op");
    set(w, "same_size", "true");
    expect(w, "same_size", "true");
    set(w, "same_disp_unit", "maybe");
    expect(w, "same_disp_unit", "false");
    /* MPI_INFO_NULL is refused (MPICH: MPI_ERR_ARG, Open MPI: MPI_ERR_INFO) */
    int rc = MPI_Win_set_info(w, MPI_INFO_NULL), cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_INFO || cls == MPI_ERR_ARG, "set_info(MPI_INFO_NULL): class %d", cls);
    expect(w, "same_size", "true");

    /* the hints change no guarantee: locks and ordered accumulates still work */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w);
    *base = 0;
    MPI_Win_unlock(rank, w);
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1;
    for (int t = 0; t < size; t++) {
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w);
        CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT, t, 0, 1, MPI_INT, MPI_SUM, w), "accumulate");
        MPI_Win_unlock(t, w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w);
    CHECK(*base == size, "counter %d after %d accumulates", *base, size);
    MPI_Win_unlock(rank, w);
    MPI_Barrier(MPI_COMM_WORLD);

    /* every rank overwrites every window whole under an exclusive lock, all with the
     * target's pattern: a lock word taken at the wrong place would show in its bytes */
    for (int t = 0; t < size; t++) {
        MPI_Aint n = wsize_of(t);
        unsigned char pat[64];
        for (MPI_Aint i = 0; i < n; i++)
            pat[i] = pattern(t, i);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w);
        CHECK_RC(MPI_Put(pat, (int)n, MPI_BYTE, t, 0, (int)n, MPI_BYTE, w), "put whole window");
        MPI_Win_unlock(t, w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w);
    for (MPI_Aint i = 0; i < wsize; i++)
        if (((unsigned char *)base)[i] != pattern(rank, i)) {
            CHECK(0, "window byte %ld is %d, expected %d", (long)i, ((unsigned char *)base)[i],
                  pattern(rank, i));
            break;
        }
    MPI_Win_unlock(rank, w);
    MPI_Win_free(&w);

    /* many windows at once, each one used */
    static MPI_Win many[NWIN_MAX];
    static int *bases[NWIN_MAX];
    int made = 0;
    for (; made < nwin; made++) {
        MPI_Info hint;
        MPI_Info_create(&hint);
        if (made % 2)
            MPI_Info_set(hint, "alloc_shared_noncontig", "true");
        rc = MPI_Win_allocate(sizeof(int), sizeof(int), hint, MPI_COMM_WORLD, &bases[made],
                              &many[made]);
        MPI_Info_free(&hint);
        CHECK(rc == MPI_SUCCESS, "window %d of %d could not be made", made, nwin);
        if (rc)
            break;
        *bases[made] = -1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int right = (rank + 1) % size;
    for (int i = 0; i < made; i++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, many[i]);
        MPI_Put(&i, 1, MPI_INT, right, 0, 1, MPI_INT, many[i]);
        MPI_Win_unlock(right, many[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int wrong = 0;
    for (int i = 0; i < made; i++) {
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, many[i]);
        wrong += *bases[i] != i;
        MPI_Win_unlock(rank, many[i]);
    }
    CHECK(wrong == 0, "%d of %d windows hold the wrong value", wrong, made);
    if (made == nwin)
        expect(many[1], "alloc_shared_noncontig", "true");
    for (int i = 0; i < made; i++)
        MPI_Win_free(&many[i]);

    return check_finish("rma_info") + MPI_Finalize();
}
