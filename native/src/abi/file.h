/* file.h (abi): MPI-IO across sites, shared by abi/file*.c.
 *
 * A file lives at one site: the site of the communicator's rank 0, or the one the info
 * key "isthmus_file_site" names. Ranks at that site read and write it with POSIX calls
 * (io/posix.c); ranks elsewhere send their requests through the gateways to the file
 * agent in that site's gateway 0 (core/fileio.c, gateway/fileagent.c), which runs the
 * same POSIX calls. Collective forms gather a remote site's pieces at that site's
 * leader first, merge adjacent ones, and send them in frames of ISTHMUS_CHUNK bytes
 * with a window of them in flight (file_coll.c). docs/design.md, "MPI-IO across sites".
 */
#ifndef ISM_ABI_FILE_H
#define ISM_ABI_FILE_H

#include "../io/posix.h"
#include "abi.h"

#define ISM_FILE_MAGIC 0x46494c45u

typedef struct ism_file {
    uint32_t magic;
    MPI_Comm comm;       /* a private duplicate of the opening communicator */
    MPI_Comm sitecomm;   /* its members at this site (gathering before the WAN) */
    int site;            /* where the file lives */
    int rank, size;      /* in comm */
    int leader;          /* the rank of comm acting for the file's site: its lowest member
                            there, else rank 0 (through the agent) */
    int here;            /* this rank is at that site: POSIX calls */
    int fd, sfd;         /* here: the file and the shared pointer's side file */
    uint32_t handle;     /* elsewhere: the agent's handle */
    int amode, atomic;
    char *path, *shfp;   /* absolute at the file's site */
    MPI_Info info;       /* hints given (a copy), MPI_INFO_NULL if none */
    ism_errh *errh;
    /* the view */
    MPI_Offset disp;
    MPI_Datatype etype, filetype;
    int64_t esize;
    MPI_Offset fp;       /* individual file pointer, in etypes */
    /* a split collective begun and not yet ended */
    int split;
    MPI_Status split_st;
} ism_file;

/* The file argument of an entry point: f, or the call returns MPI_ERR_FILE. */
#define ISM_FILE_ARG(fn, fh, f)                                                                    \
    ISM_CHECK_INIT(fn);                                                                            \
    ism_file *f = ism_abi_file(fh);                                                                \
    if (!f)                                                                                        \
        return ism_abi_file_error(NULL, MPI_ERR_FILE, fn, "invalid file handle");

/* A query of one field: MPI_<name>(fh, type *out) gives expr (of the file f). */
#define ISM_FILE_GETTER(name, type, expr)                                                          \
    int PMPI_##name(MPI_File fh, type *out)                                                        \
    {                                                                                              \
        ISM_FILE_ARG("MPI_" #name, fh, f);                                                         \
        if (!out)                                                                                  \
            return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_" #name, "NULL result argument");       \
        *out = (expr);                                                                             \
        return MPI_SUCCESS;                                                                        \
    }                                                                                              \
    ISM_PMPI(name)

/* file.c */
ism_file *ism_abi_file(MPI_File fh);
/* Raise code on the file's error handler (f NULL: the default of MPI_FILE_NULL). */
int ism_abi_file_error(ism_file *f, int code, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The MPI error class of -errno. */
int ism_abi_file_errno_class(int64_t neg_errno);

/* file_access.c: the data path */
typedef struct ism_fseg_list {
    ism_io_seg *seg;
    uint32_t n, cap;
    int64_t bytes;
} ism_fseg_list;
/* The file segments of nbytes of data at position pos (etypes) of the view. */
int ism_abi_file_segments(const ism_file *f, MPI_Offset pos, int64_t nbytes, ism_fseg_list *out);
/* Move data to (write) or from the segments; *done: the bytes moved (reads stop at the
 * end of the file). Returns an MPI error class. */
int ism_abi_file_move(ism_file *f, const ism_io_seg *seg, uint32_t n, char *data, int write,
                      int64_t *done);
/* One operation on the file at its site (op of contract/fileio.h without a payload): result
 * or -errno in *res. */
int ism_abi_file_simple(ism_file *f, int op, int64_t arg, int64_t *res);
/* Pack count × dt from buf (write) or get room for them (read): *data is the contiguous
 * bytes, *tmp what to free (NULL when *data is the user's buffer). */
int ism_abi_file_buffer(const void *buf, int64_t count, ism_dt *dt, int write, char **data,
                        char **tmp);
void ism_abi_file_status(MPI_Status *st, int64_t bytes);

/* file_coll.c: the collective data path (every member of f's communicator calls it) */
int ism_abi_file_coll(ism_file *f, ism_fseg_list *segs, char *data, int write, int64_t *done);

#endif
