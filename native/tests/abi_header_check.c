/* abi_header_check.c: checks that native/include/mpi.h has the MPI 5.0 ABI shape.
 *
 * Needs no MPI library: it only includes the header and never calls an MPI function.
 * Layout and integer constants are checked at compile time; handle values are pointers
 * (not integer constant expressions), so they are checked at run time. Expected values
 * are those of the final MPI 5.0 ABI (MPI Forum mpi-abi-stubs, mpi.h at 305bbcf5).
 *
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -Inative/include \
 *      native/tests/abi_header_check.c -o abi_header_check && ./abi_header_check
 *
 * Prints "abi header check: OK" and exits 0, or prints each failure and exits 1.
 */
#include <mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- compile-time checks: layout and fixed-width types ---- */

_Static_assert(sizeof(MPI_Status) == 32, "MPI_Status must be 32 bytes");
_Static_assert(offsetof(MPI_Status, MPI_SOURCE) == 0, "MPI_SOURCE must be at offset 0");
_Static_assert(offsetof(MPI_Status, MPI_TAG) == 4, "MPI_TAG must be at offset 4");
_Static_assert(offsetof(MPI_Status, MPI_ERROR) == 8, "MPI_ERROR must be at offset 8");
_Static_assert(MPI_F_STATUS_SIZE * sizeof(MPI_Fint) == sizeof(MPI_Status),
               "Fortran status size must cover MPI_Status");
_Static_assert(sizeof(MPI_Aint) == sizeof(void *), "MPI_Aint must be pointer-sized");
_Static_assert(sizeof(MPI_Offset) == 8, "MPI_Offset must be 64-bit");
_Static_assert(sizeof(MPI_Count) == 8, "MPI_Count must be 64-bit");
_Static_assert(sizeof(MPI_Comm) == sizeof(void *), "handles must be pointers");

/* ---- compile-time checks: a sample of integer constants ---- */

_Static_assert(MPI_VERSION == 5 && MPI_SUBVERSION == 0, "MPI version must be 5.0");
_Static_assert(MPI_ABI_VERSION == 1 && MPI_ABI_SUBVERSION == 0, "ABI version must be 1.0");
_Static_assert(MPI_SUCCESS == 0, "MPI_SUCCESS");
_Static_assert(MPI_ANY_SOURCE == -1, "MPI_ANY_SOURCE");
_Static_assert(MPI_ANY_TAG == -2, "MPI_ANY_TAG");
_Static_assert(MPI_PROC_NULL == -3, "MPI_PROC_NULL");
_Static_assert(MPI_ROOT == -4, "MPI_ROOT");
_Static_assert(MPI_UNDEFINED == -32766, "MPI_UNDEFINED");
_Static_assert(MPI_ERR_TRUNCATE == 15, "MPI_ERR_TRUNCATE");
_Static_assert(MPI_ERR_NO_MEM == 39, "MPI_ERR_NO_MEM");
_Static_assert(MPI_ERR_UNSUPPORTED_OPERATION == 55, "MPI_ERR_UNSUPPORTED_OPERATION");
_Static_assert(MPI_ERR_PROC_ABORTED == 58, "MPI_ERR_PROC_ABORTED");
_Static_assert(MPI_ERR_ERRHANDLER == 61 && MPI_ERR_ABI == 62, "newest error classes");
_Static_assert(MPI_T_ERR_CANNOT_INIT == 1001 && MPI_T_ERR_PVAR_NO_ATOMIC == 1018,
               "MPI_T error classes");
_Static_assert(MPI_ERR_LASTCODE == 0x3fff, "MPI_ERR_LASTCODE");
_Static_assert(MPI_THREAD_SINGLE == 0 && MPI_THREAD_FUNNELED == 1024 &&
               MPI_THREAD_SERIALIZED == 2048 && MPI_THREAD_MULTIPLE == 4096, "thread levels");
_Static_assert(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED &&
               MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
               MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE, "thread levels are ordered");
_Static_assert(MPI_IDENT == 201 && MPI_UNEQUAL == 204, "comparison results");
_Static_assert(MPI_CART == 211 && MPI_GRAPH == 212 && MPI_DIST_GRAPH == 213, "topologies");
_Static_assert(MPI_COMBINER_NAMED == 101 && MPI_COMBINER_VALUE_INDEX == 117, "combiners");
_Static_assert(MPI_COMBINER_F90_REAL == 113 && MPI_COMBINER_F90_INTEGER == 115, "F90 combiners");
_Static_assert(MPI_LOCK_EXCLUSIVE == 301 && MPI_LOCK_SHARED == 302, "lock types");
_Static_assert(MPI_SEEK_CUR == 401 && MPI_SEEK_END == 402 && MPI_SEEK_SET == 403, "seek");
_Static_assert(MPI_TAG_UB == 501 && MPI_APPNUM == 505 && MPI_UNIVERSE_SIZE == 507,
               "comm keyvals");
_Static_assert(MPI_WIN_BASE == 601 && MPI_WIN_MODEL == 605, "window keyvals");
_Static_assert(MPI_KEYVAL_INVALID == 0, "MPI_KEYVAL_INVALID");
_Static_assert(MPI_DISPLACEMENT_CURRENT == -1, "MPI_DISPLACEMENT_CURRENT");
_Static_assert(MPI_BSEND_OVERHEAD == 512, "MPI_BSEND_OVERHEAD");
_Static_assert(MPI_MAX_PROCESSOR_NAME == 256 && MPI_MAX_ERROR_STRING == 512, "string sizes");
_Static_assert(MPI_MAX_INFO_KEY == 256 && MPI_MAX_INFO_VAL == 1024 &&
               MPI_MAX_PORT_NAME == 1024 && MPI_MAX_OBJECT_NAME == 128 &&
               MPI_MAX_DATAREP_STRING == 128 && MPI_MAX_LIBRARY_VERSION_STRING == 8192 &&
               MPI_MAX_STRINGTAG_LEN == 1024 && MPI_MAX_PSET_NAME_LEN == 1024,
               "string sizes");

/* ---- run-time checks: handle values ---- */

static int failures;

static void expect_handle(const char *name, uintptr_t got, uintptr_t want)
{
    if (got != want) {
        printf("FAIL: %s is 0x%llx, expected 0x%llx\n", name, (unsigned long long)got,
               (unsigned long long)want);
        failures++;
    }
}

static void expect_ptr(const char *name, const void *got, uintptr_t want)
{
    expect_handle(name, (uintptr_t)got, want);
}

#define EXPECT_HANDLE(h, v) expect_handle(#h, (uintptr_t)(h), (uintptr_t)(v))

struct handle_entry {
    const char *name;
    uintptr_t value;
    const char *alias_of; /* non-NULL: documented alias, must equal that handle */
};

#define H(x) { #x, (uintptr_t)(x), NULL }
#define ALIAS(x, target) { #x, (uintptr_t)(x), #target }

/* Every predefined datatype handle in the header. */
static const struct handle_entry datatypes[] = {
    H(MPI_DATATYPE_NULL),
    H(MPI_AINT), H(MPI_COUNT), H(MPI_OFFSET), H(MPI_PACKED),
    H(MPI_SHORT), H(MPI_INT), H(MPI_LONG), H(MPI_LONG_LONG),
    ALIAS(MPI_LONG_LONG_INT, MPI_LONG_LONG),
    H(MPI_UNSIGNED_SHORT), H(MPI_UNSIGNED), H(MPI_UNSIGNED_LONG), H(MPI_UNSIGNED_LONG_LONG),
    H(MPI_FLOAT), H(MPI_C_FLOAT_COMPLEX),
    ALIAS(MPI_C_COMPLEX, MPI_C_FLOAT_COMPLEX),
    H(MPI_CXX_FLOAT_COMPLEX), H(MPI_DOUBLE), H(MPI_C_DOUBLE_COMPLEX), H(MPI_CXX_DOUBLE_COMPLEX),
    H(MPI_LOGICAL), H(MPI_INTEGER), H(MPI_REAL), H(MPI_COMPLEX), H(MPI_DOUBLE_PRECISION),
    H(MPI_DOUBLE_COMPLEX), H(MPI_CHARACTER),
    H(MPI_LONG_DOUBLE), H(MPI_C_LONG_DOUBLE_COMPLEX), H(MPI_CXX_LONG_DOUBLE_COMPLEX),
    H(MPI_FLOAT_INT), H(MPI_DOUBLE_INT), H(MPI_LONG_INT), H(MPI_2INT), H(MPI_SHORT_INT),
    H(MPI_LONG_DOUBLE_INT), H(MPI_2REAL), H(MPI_2DOUBLE_PRECISION), H(MPI_2INTEGER),
    H(MPI_C_BOOL), H(MPI_CXX_BOOL), H(MPI_WCHAR),
    H(MPI_INT8_T), H(MPI_UINT8_T), H(MPI_CHAR), H(MPI_SIGNED_CHAR), H(MPI_UNSIGNED_CHAR),
    H(MPI_BYTE), H(MPI_INT16_T), H(MPI_UINT16_T), H(MPI_INT32_T), H(MPI_UINT32_T),
    H(MPI_INT64_T), H(MPI_UINT64_T),
    H(MPI_LOGICAL1), H(MPI_INTEGER1),
    H(MPI_LOGICAL2), H(MPI_INTEGER2), H(MPI_REAL2),
    H(MPI_LOGICAL4), H(MPI_INTEGER4), H(MPI_REAL4), H(MPI_COMPLEX4),
    H(MPI_LOGICAL8), H(MPI_INTEGER8), H(MPI_REAL8), H(MPI_COMPLEX8),
    H(MPI_LOGICAL16), H(MPI_INTEGER16), H(MPI_REAL16), H(MPI_COMPLEX16),
    H(MPI_COMPLEX32),
};

/* Every other predefined handle in the header. */
static const struct handle_entry others[] = {
    H(MPI_OP_NULL), H(MPI_SUM), H(MPI_MIN), H(MPI_MAX), H(MPI_PROD), H(MPI_BAND), H(MPI_BOR),
    H(MPI_BXOR), H(MPI_LAND), H(MPI_LOR), H(MPI_LXOR), H(MPI_MINLOC), H(MPI_MAXLOC),
    H(MPI_REPLACE), H(MPI_NO_OP),
    H(MPI_COMM_NULL), H(MPI_COMM_WORLD), H(MPI_COMM_SELF),
    H(MPI_GROUP_NULL), H(MPI_GROUP_EMPTY),
    H(MPI_WIN_NULL), H(MPI_FILE_NULL), H(MPI_SESSION_NULL),
    H(MPI_MESSAGE_NULL), H(MPI_MESSAGE_NO_PROC),
    H(MPI_INFO_NULL), H(MPI_INFO_ENV),
    H(MPI_ERRHANDLER_NULL), H(MPI_ERRORS_ARE_FATAL), H(MPI_ERRORS_RETURN), H(MPI_ERRORS_ABORT),
    H(MPI_REQUEST_NULL),
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct handle_entry *find(const struct handle_entry *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *a = t[i].name, *b = name;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == '\0' && *b == '\0')
            return &t[i];
    }
    return NULL;
}

/* Each handle must be nonzero and below 0x400; documented aliases must equal their
 * target; no two other entries may share a value. */
static void check_table(const char *what, const struct handle_entry *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (t[i].value == 0 || t[i].value >= 0x400) {
            printf("FAIL: %s handle %s = 0x%llx is not in (0, 0x400)\n", what, t[i].name,
                   (unsigned long long)t[i].value);
            failures++;
        }
        if (t[i].alias_of) {
            const struct handle_entry *target = find(t, n, t[i].alias_of);
            if (!target || target->alias_of || target->value != t[i].value) {
                printf("FAIL: %s should be an alias of %s\n", t[i].name, t[i].alias_of);
                failures++;
            }
            continue;
        }
        for (size_t j = i + 1; j < n; j++) {
            if (!t[j].alias_of && t[j].value == t[i].value) {
                printf("FAIL: %s handles %s and %s are both 0x%llx\n", what, t[i].name,
                       t[j].name, (unsigned long long)t[i].value);
                failures++;
            }
        }
    }
}

/* Predefined handles of different kinds must not collide either, so that a backend can
 * tell from the value alone which object a predefined handle names. */
static void check_across(void)
{
    for (size_t i = 0; i < COUNT_OF(others); i++) {
        for (size_t j = 0; j < COUNT_OF(datatypes); j++) {
            if (others[i].value == datatypes[j].value) {
                printf("FAIL: %s and %s are both 0x%llx\n", others[i].name, datatypes[j].name,
                       (unsigned long long)others[i].value);
                failures++;
            }
        }
    }
}

int main(void)
{
    EXPECT_HANDLE(MPI_COMM_NULL, 0x100);
    EXPECT_HANDLE(MPI_COMM_WORLD, 0x101);
    EXPECT_HANDLE(MPI_COMM_SELF, 0x102);
    EXPECT_HANDLE(MPI_DATATYPE_NULL, 0x200);
    EXPECT_HANDLE(MPI_INT, 0x209);
    EXPECT_HANDLE(MPI_DOUBLE, 0x214);
    EXPECT_HANDLE(MPI_BYTE, 0x247);
    EXPECT_HANDLE(MPI_CHAR, 0x243);
    EXPECT_HANDLE(MPI_CHARACTER, 0x21e);
    EXPECT_HANDLE(MPI_LOGICAL4, 0x2d0);
    EXPECT_HANDLE(MPI_SUM, 0x21);
    EXPECT_HANDLE(MPI_MAX, 0x23);
    EXPECT_HANDLE(MPI_REQUEST_NULL, 0x180);
    EXPECT_HANDLE(MPI_ERRORS_ARE_FATAL, 0x141);
    EXPECT_HANDLE(MPI_ERRORS_ABORT, 0x142);
    EXPECT_HANDLE(MPI_ERRORS_RETURN, 0x143);
    EXPECT_HANDLE(MPI_INFO_NULL, 0x130);
    EXPECT_HANDLE(MPI_GROUP_EMPTY, 0x109);

    expect_ptr("MPI_BOTTOM", MPI_BOTTOM, 0);
    expect_ptr("MPI_IN_PLACE", MPI_IN_PLACE, 1);
    expect_ptr("MPI_STATUS_IGNORE", MPI_STATUS_IGNORE, 0);
    expect_ptr("MPI_STATUSES_IGNORE", MPI_STATUSES_IGNORE, 0);
    expect_ptr("MPI_UNWEIGHTED", MPI_UNWEIGHTED, 10);
    expect_ptr("MPI_WEIGHTS_EMPTY", MPI_WEIGHTS_EMPTY, 11);

    check_table("datatype", datatypes, COUNT_OF(datatypes));
    check_table("predefined", others, COUNT_OF(others));
    check_across();

    if (failures) {
        printf("abi header check: %d failure(s)\n", failures);
        return 1;
    }
    printf("abi header check: OK\n");
    return 0;
}
