/* glue.h (fortran): what the generated entry points (bindings.c) use to turn Fortran
 * arguments into C ones: the sentinels' addresses, booleans, strings, statuses, handles
 * that the program frees, work to do when a request completes (pending.c), and the
 * mpi_f08 choice buffers (cdesc.c). Internal to libisthmus_fortran.
 */
#ifndef ISM_FORTRAN_GLUE_H
#define ISM_FORTRAN_GLUE_H

#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "../src/abi/fortran.h"

/* pmpi_x_ is the entry point; mpi_x_ (and MPI_X_f08) a weak alias a profiler replaces */
#define ISM_F_WEAK(name, target) extern __typeof__(target) name __attribute__((weak, alias(#target)));
#define ISM_F_ALIAS(name, target) extern __typeof__(target) name __attribute__((alias(#target)));

/* The Fortran sentinels: COMMON blocks of mpif.h and both modules (args.c defines them),
 * recognised by their addresses. */
extern MPI_Fint mpi_fortran_bottom_, mpi_fortran_in_place_, mpi_fortran_buffer_automatic_;
extern MPI_Fint mpi_fortran_status_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint mpi_fortran_statuses_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint mpi_fortran_errcodes_ignore_[1], mpi_fortran_unweighted_[1];
extern MPI_Fint mpi_fortran_weights_empty_[1];
extern char mpi_fortran_argv_null_[1], mpi_fortran_argvs_null_[1];

static inline void *ism_f_buf(const void *p)
{
    if (p == &mpi_fortran_bottom_)
        return MPI_BOTTOM;
    if (p == &mpi_fortran_in_place_)
        return MPI_IN_PLACE;
    if (p == &mpi_fortran_buffer_automatic_)
        return MPI_BUFFER_AUTOMATIC;
    return (void *)p;
}

static inline MPI_Status *ism_f_status(MPI_Fint *s)
{
    return s == mpi_fortran_status_ignore_ ? MPI_STATUS_IGNORE : (MPI_Status *)s;
}

static inline MPI_Status *ism_f_statuses(MPI_Fint *s)
{
    return s == mpi_fortran_statuses_ignore_ ? MPI_STATUSES_IGNORE : (MPI_Status *)s;
}

static inline int *ism_f_weights(const MPI_Fint *w)
{
    if (w == mpi_fortran_unweighted_)
        return MPI_UNWEIGHTED;
    if (w == mpi_fortran_weights_empty_)
        return MPI_WEIGHTS_EMPTY;
    return (int *)w;
}

/* gfortran's LOGICAL: 0 is .FALSE., 1 is .TRUE.; C takes any non-zero as true */
#define ISM_F_TRUE 1
#define ISM_F_FALSE 0
static inline int ism_f_bool(MPI_Fint v) { return v != ISM_F_FALSE; }
static inline MPI_Fint ism_f_logical(int v) { return v ? ISM_F_TRUE : ISM_F_FALSE; }

static inline size_t ism_f_min(size_t a, size_t b) { return a < b ? a : b; }

/* Strings: a C copy of a Fortran string without its trailing blanks (and leading ones
 * too if lead), malloc'ed (NULL: no memory); a C string into a Fortran one, blank-padded
 * or cut to its length. */
char *ism_f_cstr(const char *s, size_t len, int lead);
void ism_f_fstr(char *f, size_t flen, const char *c);

/* n elements of size bytes: stack (room for cap of them) when they fit, else malloc;
 * NULL only when malloc fails (n <= 0 gives stack, or a 1-element allocation). */
void *ism_f_alloc(long n, size_t size, void *stack, long cap);
int ism_f_nomem(const char *fn);
/* The number of ranks a w-collective's type array has one entry for: the receive side,
 * or ISM_F_SEND's, of comm's group (the remote group of an intercommunicator) or, with
 * ISM_F_NEIGHBORS, of its topology's neighbours. */
enum { ISM_F_SEND = 1, ISM_F_NEIGHBORS = 2 };
int ism_f_peers(MPI_Comm comm, int side);
/* An attribute's value as Fortran sees it: the integer a Fortran program stored, or for
 * the predefined attributes (a pointer to an int in C) the int itself. */
MPI_Aint ism_f_attr(int keyval, void *v);
/* MPI-1's INTEGER results of address-sized values: an error if v does not fit. */
int ism_f_to_int(const char *fn, MPI_Aint v, MPI_Fint *out);

/* ---- requests: what must happen when one completes (pending.c) ---- */
extern int ism_f_npending;
void ism_f_settle(MPI_Fint request);
/* After a call that may free the handle *f (request completion, MPI_Comm_free, ...):
 * store the handle's new integer now; a handle that became null gives its old integer
 * back, and a request first runs what was waiting for it. */
static inline void ism_f_store(MPI_Fint *f, MPI_Fint now, MPI_Fint null)
{
    if (*f >= 0x1000 && now == null) {
        if (ism_f_npending)
            ism_f_settle(*f);
        ism_abi_f_forget(*f);
    }
    *f = now;
}
/* Work waiting for the request of an integer to complete (or be freed); its memory
 * comes with the work, so keeping it never fails. */
typedef struct ism_f_waiter {
    MPI_Fint request;
    void (*done)(struct ism_f_waiter *w);
    struct ism_f_waiter *next;
} ism_f_waiter;
/* Run w->done(w) when the request of integer *request completes; at once if the call
 * failed (rc) or gave no request. */
void ism_f_keep(int rc, const MPI_Fint *request, ism_f_waiter *w);
/* n elements of size bytes that ism_f_keep_free frees when the request completes
 * (arrays a nonblocking collective reads until then); NULL: no memory */
void *ism_f_kept_alloc(long n, size_t size);
void ism_f_keep_free(int rc, const MPI_Fint *request, void *p);
/* MPI_Comm_idup: a cell for the new communicator (NULL: no memory), whose integer goes
 * to *f when the request completes */
MPI_Comm *ism_f_comm_cell(void);
void ism_f_keep_comm(int rc, const MPI_Fint *request, MPI_Fint *f, MPI_Comm *cell);

/* ---- mpi_f08 choice buffers (cdesc.c) ---- */
enum {
    ISM_F08_IN = 1,      /* the call reads the buffer */
    ISM_F08_OUT = 2,     /* the call writes it */
    ISM_F08_PERSIST = 4, /* a persistent request keeps it: no temporary copy possible */
};

/* What a C call gets for a TYPE(*), DIMENSION(..) buffer: the address and, for a
 * buffer that holds (count, type), possibly a datatype describing a noncontiguous
 * section (count 1); or a contiguous copy of the section, written back when done. */
typedef struct ism_f08_buf {
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    MPI_Datatype made;          /* a datatype made here, freed after the call */
    struct ism_f08_copy *copy;  /* the contiguous image and where it goes back, or NULL */
} ism_f08_buf;

/* what ism_f08_done leaves alone: a buffer not yet converted when an earlier one failed */
#define ISM_F08_BUF_INIT {NULL, 0, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, NULL}

int ism_f08_triple(const CFI_cdesc_t *d, MPI_Count count, MPI_Datatype type, int flags,
                   const char *fn, ism_f08_buf *b);
int ism_f08_image(const CFI_cdesc_t *d, int flags, const char *fn, ism_f08_buf *b);
/* After the call (rc): free what was made; write a copy back now (request NULL) or when
 * the request of integer *request completes. */
void ism_f08_done(ism_f08_buf *b, int rc, const MPI_Fint *request);
/* The address of a buffer's first element (MPI_BOTTOM for the sentinel). */
void *ism_f08_addr(const CFI_cdesc_t *d);

#endif
