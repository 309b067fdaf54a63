/* test_handles.c: the table that gives handles their integers (abi/handles.c), without
 * MPI_Init: round trips, predefined handles unchanged, a freed integer reused, and every
 * remaining handle still found after many removals (the hash's backward-shift deletion);
 * and the status conversions between C, Fortran arrays and TYPE(MPI_Status)
 * (abi/fortran.c).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../src/abi/fortran.h"
#include "check.h"

#define N 20000

int main(void)
{
    /* distinct addresses standing in for core objects, scattered at random so that the
     * hash has clusters to keep intact (consecutive ones hash without any collision) */
    static char arena[16 * 8 * N];
    static char *objs[N];
    static MPI_Fint ints[N];
    static int pick[8 * N];
    for (int i = 0; i < 8 * N; i++)
        pick[i] = i;
    srand(12345);
    for (int i = 0; i < N; i++) {
        int j = i + rand() % (8 * N - i), t = pick[i];
        pick[i] = pick[j];
        pick[j] = t;
        objs[i] = arena + 16 * pick[i];
    }

    CHECK(PMPI_Comm_c2f(MPI_COMM_WORLD) == (MPI_Fint)(uintptr_t)MPI_COMM_WORLD,
          "predefined handles are their own integers");
    CHECK(PMPI_Type_f2c(PMPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "MPI_DOUBLE round trip");
    int base = ism_abi_f_live();
    for (int i = 0; i < N; i++) {
        ints[i] = PMPI_Request_c2f((MPI_Request)objs[i]);
        CHECK(ints[i] >= 0x1000, "handle %d got integer %d", i, ints[i]);
    }
    CHECK(ism_abi_f_live() == base + N, "live %d", ism_abi_f_live());
    for (int i = 0; i < N; i++) {
        CHECK(PMPI_Request_c2f((MPI_Request)objs[i]) == ints[i], "handle %d: same integer", i);
        CHECK(PMPI_Request_f2c(ints[i]) == (MPI_Request)objs[i], "handle %d: round trip", i);
    }
    /* forget every third handle, in an order that leaves holes all over the hash */
    for (int i = 0; i < N; i += 3)
        ism_abi_f_forget(ints[i]);
    CHECK(ism_abi_f_live() == base + N - (N + 2) / 3, "live %d after forgetting",
          ism_abi_f_live());
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) {
            CHECK(PMPI_Request_f2c(ints[i]) == NULL, "forgotten integer %d still maps", ints[i]);
            continue;
        }
        CHECK(PMPI_Request_c2f((MPI_Request)objs[i]) == ints[i], "handle %d lost its integer", i);
    }
    /* a new handle takes a forgotten integer instead of growing the table */
    static char fresh[16];
    MPI_Fint f = PMPI_Comm_c2f((MPI_Comm)fresh);
    CHECK(f >= 0x1000 && f < 0x1000 + N, "reused integer %d", f);
    CHECK(PMPI_Comm_f2c(f) == (MPI_Comm)fresh, "reused integer round trip");
    /* forgetting twice, or an integer never given out, changes nothing */
    int live = ism_abi_f_live();
    ism_abi_f_forget(ints[0]);
    ism_abi_f_forget(0x7fffff);
    ism_abi_f_forget((MPI_Fint)(uintptr_t)MPI_COMM_WORLD);
    CHECK(ism_abi_f_live() == live, "live %d, want %d", ism_abi_f_live(), live);
    CHECK(PMPI_Comm_f2c(0x7fffff) == NULL, "an integer never given out is no handle");
    /* one object handed out as two handles (a datatype, and the same datatype from
     * MPI_Type_get_contents): its integer stays until both are freed */
    static char shared[16];
    MPI_Fint a = ism_abi_f_hold(PMPI_Type_c2f((MPI_Datatype)shared));
    MPI_Fint b = ism_abi_f_hold(PMPI_Type_c2f((MPI_Datatype)shared));
    CHECK(a == b, "the same object, the same integer");
    live = ism_abi_f_live();
    ism_abi_f_forget(a);
    CHECK(PMPI_Type_f2c(b) == (MPI_Datatype)shared, "the second handle still names it");
    CHECK(ism_abi_f_live() == live, "live %d, want %d", ism_abi_f_live(), live);
    ism_abi_f_forget(b);
    CHECK(PMPI_Type_f2c(b) == NULL, "gone with the last handle");
    CHECK(ism_abi_f_live() == live - 1, "live %d, want %d", ism_abi_f_live(), live - 1);
    /* statuses: the same eight integers in all three forms */
    MPI_Status c = {3, 4, 5, {6, 7, 8, 9, 10}}, back;
    MPI_Fint fs[MPI_F_STATUS_SIZE];
    MPI_F08_status f08, f08b;
    CHECK(PMPI_Status_c2f(&c, fs) == MPI_SUCCESS && fs[MPI_F_SOURCE] == 3 && fs[MPI_F_TAG] == 4 &&
              fs[MPI_F_ERROR] == 5 && fs[7] == 10, "MPI_Status_c2f");
    CHECK(PMPI_Status_f2f08(fs, &f08) == MPI_SUCCESS && f08.MPI_SOURCE == 3 && f08.MPI_TAG == 4,
          "MPI_Status_f2f08");
    CHECK(PMPI_Status_f082c(&f08, &back) == MPI_SUCCESS && back.MPI_ERROR == 5 &&
              back.MPI_internal[4] == 10, "MPI_Status_f082c");
    CHECK(PMPI_Status_c2f08(&back, &f08b) == MPI_SUCCESS && f08b.MPI_internal[0] == 6,
          "MPI_Status_c2f08");
    for (int i = 0; i < MPI_F_STATUS_SIZE; i++)
        fs[i] = -1;
    CHECK(PMPI_Status_f082f(&f08b, fs) == MPI_SUCCESS && fs[0] == 3 && fs[7] == 10,
          "MPI_Status_f082f");
    CHECK(PMPI_Status_f2c(fs, &back) == MPI_SUCCESS && back.MPI_TAG == 4, "MPI_Status_f2c");
    CHECK((void *)MPI_F_STATUS_IGNORE != (void *)MPI_F_STATUSES_IGNORE &&
              MPI_F_STATUS_IGNORE != NULL, "the Fortran ignores are distinct addresses");
    if (failures)
        fprintf(stderr, "test_handles: %d failures\n", failures);
    return failures != 0;
}
