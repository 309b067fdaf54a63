/*
 * check.h - tiny self-checking harness shared by the MPI test programs.
 *
 * Header-only (everything is static inline) so each test is one .c file
 * built with nothing but an MPI compiler wrapper.  Uses only the standard
 * MPI-3.1 C API, so the same programs run on any vendor MPI and on isthmus.
 *
 *   CHECK(cond, fmt, ...)   record a failure (rank, file, line, message),
 *                           printed to stderr at once, if cond is false.
 *   CHECK_RC(rc, what)      CHECK that an MPI return code is MPI_SUCCESS.
 *   check_finish(name)      sum failures over MPI_COMM_WORLD; rank 0 prints
 *                           "<name>: OK" or "<name>: FAILED (n failures)".
 *                           Returns 0 on OK, 1 otherwise (on every rank).
 *
 *   check_tmp_path(tag, path, n)  a file name in $TMPDIR (or /tmp) unique to this
 *                           job, chosen by rank 0 and the same on every rank.
 *
 * Peer helpers (placement across sites is unknown to the tests, so "far"
 * is defined generically; on a 2-site run with ranks split in halves it is
 * a cross-site pair):
 *   peer_far_to(r,n)   = (r + n/2) % n         rank r sends "far" to this
 *   peer_far_from(r,n) = (r - n/2 + n) % n     and receives "far" from this
 *   peer_near(r,n)     = r^1, or r itself for the last rank of an odd size
 *                        (the near relation is symmetric: to == from).
 */
#ifndef ISTHMUS_TESTS_MPI_CHECK_H
#define ISTHMUS_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef CHECK_MAX_PRINTED
#define CHECK_MAX_PRINTED 50 /* per rank; later failures are only counted */
#endif

static int check_failures_ = 0;

static inline int check_rank_(void)
{
    int init = 0, fin = 0, rank = -1;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline void check_fail_(const char *file, int line, const char *cond,
                               const char *fmt, ...)
{
    check_failures_++;
    if (check_failures_ > CHECK_MAX_PRINTED) {
        if (check_failures_ == CHECK_MAX_PRINTED + 1)
            fprintf(stderr, "[rank %d] %s: further failures not printed\n",
                    check_rank_(), file);
        return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] %s:%d: CHECK(%s) failed: %s\n", check_rank_(),
            file, line, cond, msg);
    fflush(stderr);
}

/* CHECK(cond, fmt, args...) -- fmt is mandatory (C11 needs >= 1 variadic
 * argument, so the format string is part of __VA_ARGS__). */
#define CHECK(cond, ...)                                                      \
    ((cond) ? (void)0 : check_fail_(__FILE__, __LINE__, #cond, __VA_ARGS__))

static inline const char *check_errstr_(int rc, char *buf)
{
    int len = 0;
    buf[0] = '\0';
    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS)
        snprintf(buf, MPI_MAX_ERROR_STRING, "error code %d", rc);
    return buf;
}

#define CHECK_RC(rc, what)                                                    \
    do {                                                                      \
        int check_rc_ = (rc);                                                 \
        if (check_rc_ != MPI_SUCCESS) {                                       \
            char check_buf_[MPI_MAX_ERROR_STRING + 1];                        \
            check_fail_(__FILE__, __LINE__, what, "MPI returned %d (%s)",     \
                        check_rc_, check_errstr_(check_rc_, check_buf_));     \
        }                                                                     \
    } while (0)

static inline int check_failures(void) { return check_failures_; }

static inline int check_finish(const char *name)
{
    int local = check_failures_, total = 0, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("%s: OK\n", name);
        else
            printf("%s: FAILED (%d failures)\n", name, total);
        fflush(stdout);
    }
    return total == 0 ? 0 : 1;
}

static inline void check_tmp_path(const char *tag, char *path, int n)
{
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, (size_t)n, "%s/%s-%ld.dat", dir, tag, (long)getpid());
    MPI_Bcast(path, n, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static inline int peer_far_to(int r, int n) { return (r + n / 2) % n; }
static inline int peer_far_from(int r, int n) { return (r - n / 2 + n) % n; }
static inline int peer_near(int r, int n)
{
    int p = r ^ 1;
    return p < n ? p : r;
}

/* An MPI_T counter of isthmus's (e.g. isthmus_rank_rma_direct_ops) read through the tools
 * interface, or -1 when the MPI has no such counter (a plain vendor). */
static inline long long check_pvar_counter(const char *name)
{
    int i, count = 0, prov;
    unsigned long long v = 0;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &i) != MPI_SUCCESS) {
        MPI_T_finalize();
        return -1;
    }
    CHECK_RC(MPI_T_pvar_session_create(&s), "pvar session");
    CHECK_RC(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count), "pvar handle");
    CHECK_RC(MPI_T_pvar_read(s, h, &v), "pvar read");
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    MPI_T_finalize();
    return (long long)v;
}

#endif /* ISTHMUS_TESTS_MPI_CHECK_H */
