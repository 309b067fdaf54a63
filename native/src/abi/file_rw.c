/* file_rw.c (abi): the MPI-IO data calls (explicit offsets, individual, shared and ordered
 * file pointers; blocking, nonblocking, collective and split collective forms) and the
 * view and pointer calls. Every form goes through access(): checks, position, segments,
 * then file_access.c or file_coll.c.
 *
 * Nonblocking forms finish their transfer before they return and give a completed
 * request: correct (MPI allows completion at any time up to the wait), without overlap.
 * Split collectives run the collective at _begin and hand over its status at _end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../contract/fileio.h"
#include "file.h"

enum { A_WRITE = 1, A_COLL = 2, A_AT = 4, A_INDIV = 8, A_SHARED = 16, A_ORDERED = 32 };

static int check_access(ism_file *f, int how, MPI_Offset off, const void *buf, int64_t count,
                        ism_dt *dt, const char *fn)
{
    if (!dt)
        return ism_abi_file_error(f, MPI_ERR_TYPE, fn, "invalid or uncommitted datatype");
    if (count < 0)
        return ism_abi_file_error(f, MPI_ERR_COUNT, fn, "count %lld < 0", (long long)count);
    if (!buf && count > 0 && dt->size > 0)
        return ism_abi_file_error(f, MPI_ERR_BUFFER, fn, "NULL buffer");
    if ((how & A_WRITE) && (f->amode & MPI_MODE_RDONLY))
        return ism_abi_file_error(f, MPI_ERR_READ_ONLY, fn, "the file was opened read-only");
    if (!(how & A_WRITE) && (f->amode & MPI_MODE_WRONLY))
        return ism_abi_file_error(f, MPI_ERR_ACCESS, fn, "the file was opened write-only");
    if ((how & (A_AT | A_INDIV)) && (f->amode & MPI_MODE_SEQUENTIAL))
        return ism_abi_file_error(f, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                                  "only shared file pointers in MPI_MODE_SEQUENTIAL");
    if ((how & A_AT) && off < 0)
        return ism_abi_file_error(f, MPI_ERR_ARG, fn, "offset %lld < 0", (long long)off);
    if (((int64_t)count * dt->size) % f->esize)
        return ism_abi_file_error(f, MPI_ERR_TYPE, fn,
                                  "%lld bytes are not a whole number of etypes (%lld bytes)",
                                  (long long)count * dt->size, (long long)f->esize);
    return MPI_SUCCESS;
}

/* Where an ordered access of inc etypes starts: the shared pointer moved once for all. */
static int ordered_pos(ism_file *f, int64_t inc, MPI_Offset *pos)
{
    int64_t before = 0, total = 0, base = 0;
    PMPI_Exscan(&inc, &before, 1, MPI_INT64_T, MPI_SUM, f->comm);
    PMPI_Allreduce(&inc, &total, 1, MPI_INT64_T, MPI_SUM, f->comm);
    if (f->rank == 0)
        before = 0; /* Exscan leaves rank 0's undefined */
    int rc = MPI_SUCCESS;
    if (f->rank == 0)
        rc = ism_abi_file_simple(f, ISM_FIO_FETCH_ADD, total, &base);
    if (rc)
        base = -EIO;
    PMPI_Bcast(&base, 1, MPI_INT64_T, 0, f->comm);
    if (base < 0)
        return ism_abi_file_errno_class(base);
    *pos = base + before;
    return MPI_SUCCESS;
}

static int position(ism_file *f, int how, MPI_Offset off, int64_t nbytes, MPI_Offset *pos)
{
    if (how & A_AT) {
        *pos = off;
    } else if (how & A_INDIV) {
        *pos = f->fp;
    } else if (how & A_ORDERED) {
        return ordered_pos(f, nbytes / f->esize, pos);
    } else {
        int64_t r = 0;
        int rc = ism_abi_file_simple(f, ISM_FIO_FETCH_ADD, nbytes / f->esize, &r);
        if (rc || r < 0)
            return rc ? rc : ism_abi_file_errno_class(r);
        *pos = r;
    }
    return MPI_SUCCESS;
}

static int access(const char *fn, MPI_File fh, int how, MPI_Offset off, void *buf,
                  int64_t count, MPI_Datatype datatype, MPI_Status *status)
{
    ISM_CHECK_INIT(fn);
    ism_file *f = ism_abi_file(fh);
    if (!f)
        return ism_abi_file_error(NULL, MPI_ERR_FILE, fn, "invalid file handle");
    ism_dt *dt = ism_abi_dt(datatype);
    int rc = check_access(f, how, off, buf, count, dt, fn);
    if (rc)
        return rc;
    int64_t nbytes = (int64_t)count * dt->size, done = 0;
    MPI_Offset pos = 0;
    ism_fseg_list segs = {0};
    char *data = NULL, *tmp = NULL;
    rc = position(f, how, off, nbytes, &pos);
    if (!rc)
        rc = ism_abi_file_segments(f, pos, nbytes, &segs);
    if (!rc)
        rc = ism_abi_file_buffer(buf, count, dt, how & A_WRITE, &data, &tmp);
    if (!rc && (how & (A_COLL | A_ORDERED)))
        rc = ism_abi_file_coll(f, &segs, data, how & A_WRITE, &done);
    else if (!rc)
        rc = ism_abi_file_move(f, segs.seg, segs.n, data, how & A_WRITE, &done);
    if (!rc && tmp && !(how & A_WRITE))
        ism_dt_unpack_bytes(dt, tmp, (size_t)done, buf);
    free(tmp);
    free(segs.seg);
    if (rc)
        return ism_abi_file_error(f, rc, fn, "%s %lld bytes at site %s failed",
                                  how & A_WRITE ? "writing" : "reading", (long long)nbytes,
                                  ism_site_name(f->site));
    if (how & A_INDIV)
        f->fp = pos + done / f->esize;
    ism_abi_file_status(status, done);
    return MPI_SUCCESS;
}

/* The nonblocking forms: the access, then a completed request carrying its status. */
static int iaccess(const char *fn, MPI_File fh, int how, MPI_Offset off, void *buf,
                   int64_t count, MPI_Datatype datatype, MPI_Request *request)
{
    if (!request)
        return ism_abi_file_error(ism_abi_file(fh), MPI_ERR_REQUEST, fn, "NULL request");
    MPI_Status st;
    int rc = access(fn, fh, how, off, buf, count, datatype, &st);
    if (rc)
        return rc;
    ism_req *r = ism_req_alloc(ISM_RQ_DONE);
    if (!r)
        return ism_abi_file_error(ism_abi_file(fh), MPI_ERR_NO_MEM, fn, "out of memory");
    r->done = 1;
    r->st.source = MPI_PROC_NULL;
    r->st.tag = MPI_ANY_TAG;
    r->st.bytes = (size_t)(uint32_t)st.MPI_internal[0] | (size_t)(uint32_t)st.MPI_internal[1] << 32;
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

static int split_begin(const char *fn, MPI_File fh, int how, MPI_Offset off, void *buf,
                       int64_t count, MPI_Datatype datatype)
{
    ism_file *f = ism_abi_file(fh);
    if (f && f->split)
        return ism_abi_file_error(f, MPI_ERR_OTHER, fn,
                                  "a split collective is already active on this file");
    int rc = access(fn, fh, how, off, buf, count, datatype, f ? &f->split_st : NULL);
    if (!rc)
        f->split = 1;
    return rc;
}

static int split_end(const char *fn, MPI_File fh, MPI_Status *status)
{
    ISM_CHECK_INIT(fn);
    ism_file *f = ism_abi_file(fh);
    if (!f)
        return ism_abi_file_error(NULL, MPI_ERR_FILE, fn, "invalid file handle");
    if (!f->split)
        return ism_abi_file_error(f, MPI_ERR_OTHER, fn, "no split collective was begun");
    f->split = 0;
    if (status != MPI_STATUS_IGNORE)
        *status = f->split_st;
    return MPI_SUCCESS;
}

/* Each entry macro's first argument is the function's name without MPI_ (the name
 * scripts/mpi_api.py looks for); cq is const for the writes. A macro named *_C makes the
 * large-count form (name_c, an MPI_Count count): the same body, whose count is 64-bit. */
#define RW_ENTRY(fname, how, cq, ct)                                                               \
    int PMPI_##fname(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype,                   \
                     MPI_Status *status)                                                           \
    {                                                                                              \
        return access("MPI_" #fname, fh, how, 0, (void *)buf, count, datatype, status);            \
    }                                                                                              \
    ISM_PMPI(fname)
#define RW_AT_ENTRY(fname, how, cq, ct)                                                            \
    int PMPI_##fname(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,                       \
                     MPI_Datatype datatype, MPI_Status *status)                                    \
    {                                                                                              \
        return access("MPI_" #fname, fh, how, offset, (void *)buf, count, datatype, status);       \
    }                                                                                              \
    ISM_PMPI(fname)
#define IRW_ENTRY(fname, how, cq, ct)                                                              \
    int PMPI_##fname(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype,                   \
                     MPI_Request *request)                                                         \
    {                                                                                              \
        return iaccess("MPI_" #fname, fh, how, 0, (void *)buf, count, datatype, request);          \
    }                                                                                              \
    ISM_PMPI(fname)
#define IRW_AT_ENTRY(fname, how, cq, ct)                                                           \
    int PMPI_##fname(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,                       \
                     MPI_Datatype datatype, MPI_Request *request)                                  \
    {                                                                                              \
        return iaccess("MPI_" #fname, fh, how, offset, (void *)buf, count, datatype, request);     \
    }                                                                                              \
    ISM_PMPI(fname)
#define BEGIN_ENTRY(fname, how, cq, ct)                                                            \
    int PMPI_##fname(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype)                   \
    {                                                                                              \
        return split_begin("MPI_" #fname, fh, how, 0, (void *)buf, count, datatype);               \
    }                                                                                              \
    ISM_PMPI(fname)
#define BEGIN_AT_ENTRY(fname, how, cq, ct)                                                         \
    int PMPI_##fname(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,                       \
                     MPI_Datatype datatype)                                                        \
    {                                                                                              \
        return split_begin("MPI_" #fname, fh, how, offset, (void *)buf, count, datatype);          \
    }                                                                                              \
    ISM_PMPI(fname)
#define RW(name, how, cq) RW_ENTRY(name, how, cq, int)
#define RW_C(name, how, cq) RW_ENTRY(name##_c, how, cq, MPI_Count)
#define RW_AT(name, how, cq) RW_AT_ENTRY(name, how, cq, int)
#define RW_AT_C(name, how, cq) RW_AT_ENTRY(name##_c, how, cq, MPI_Count)
#define IRW(name, how, cq) IRW_ENTRY(name, how, cq, int)
#define IRW_C(name, how, cq) IRW_ENTRY(name##_c, how, cq, MPI_Count)
#define IRW_AT(name, how, cq) IRW_AT_ENTRY(name, how, cq, int)
#define IRW_AT_C(name, how, cq) IRW_AT_ENTRY(name##_c, how, cq, MPI_Count)
#define BEGIN(name, how, cq) BEGIN_ENTRY(name, how, cq, int)
#define BEGIN_C(name, how, cq) BEGIN_ENTRY(name##_c, how, cq, MPI_Count)
#define BEGIN_AT(name, how, cq) BEGIN_AT_ENTRY(name, how, cq, int)
#define BEGIN_AT_C(name, how, cq) BEGIN_AT_ENTRY(name##_c, how, cq, MPI_Count)
#define END(name, cq)                                                                              \
    int PMPI_##name(MPI_File fh, cq void *buf, MPI_Status *status)                                 \
    {                                                                                              \
        (void)buf;                                                                                 \
        return split_end("MPI_" #name, fh, status);                                                \
    }                                                                                              \
    ISM_PMPI(name)

#define W A_WRITE
RW_AT(File_read_at, A_AT, )
RW_AT_C(File_read_at, A_AT, )
RW_AT(File_write_at, A_AT | W, const)
RW_AT_C(File_write_at, A_AT | W, const)
RW_AT(File_read_at_all, A_AT | A_COLL, )
RW_AT_C(File_read_at_all, A_AT | A_COLL, )
RW_AT(File_write_at_all, A_AT | A_COLL | W, const)
RW_AT_C(File_write_at_all, A_AT | A_COLL | W, const)
RW(File_read, A_INDIV, )
RW_C(File_read, A_INDIV, )
RW(File_write, A_INDIV | W, const)
RW_C(File_write, A_INDIV | W, const)
RW(File_read_all, A_INDIV | A_COLL, )
RW_C(File_read_all, A_INDIV | A_COLL, )
RW(File_write_all, A_INDIV | A_COLL | W, const)
RW_C(File_write_all, A_INDIV | A_COLL | W, const)
RW(File_read_shared, A_SHARED, )
RW_C(File_read_shared, A_SHARED, )
RW(File_write_shared, A_SHARED | W, const)
RW_C(File_write_shared, A_SHARED | W, const)
RW(File_read_ordered, A_ORDERED, )
RW_C(File_read_ordered, A_ORDERED, )
RW(File_write_ordered, A_ORDERED | W, const)
RW_C(File_write_ordered, A_ORDERED | W, const)
IRW_AT(File_iread_at, A_AT, )
IRW_AT_C(File_iread_at, A_AT, )
IRW_AT(File_iwrite_at, A_AT | W, const)
IRW_AT_C(File_iwrite_at, A_AT | W, const)
IRW_AT(File_iread_at_all, A_AT | A_COLL, )
IRW_AT_C(File_iread_at_all, A_AT | A_COLL, )
IRW_AT(File_iwrite_at_all, A_AT | A_COLL | W, const)
IRW_AT_C(File_iwrite_at_all, A_AT | A_COLL | W, const)
IRW(File_iread, A_INDIV, )
IRW_C(File_iread, A_INDIV, )
IRW(File_iwrite, A_INDIV | W, const)
IRW_C(File_iwrite, A_INDIV | W, const)
IRW(File_iread_all, A_INDIV | A_COLL, )
IRW_C(File_iread_all, A_INDIV | A_COLL, )
IRW(File_iwrite_all, A_INDIV | A_COLL | W, const)
IRW_C(File_iwrite_all, A_INDIV | A_COLL | W, const)
IRW(File_iread_shared, A_SHARED, )
IRW_C(File_iread_shared, A_SHARED, )
IRW(File_iwrite_shared, A_SHARED | W, const)
IRW_C(File_iwrite_shared, A_SHARED | W, const)
BEGIN(File_read_all_begin, A_INDIV | A_COLL, )
BEGIN_C(File_read_all_begin, A_INDIV | A_COLL, )
END(File_read_all_end, )
BEGIN(File_write_all_begin, A_INDIV | A_COLL | A_WRITE, const)
BEGIN_C(File_write_all_begin, A_INDIV | A_COLL | A_WRITE, const)
END(File_write_all_end, const)
BEGIN(File_read_ordered_begin, A_ORDERED, )
BEGIN_C(File_read_ordered_begin, A_ORDERED, )
END(File_read_ordered_end, )
BEGIN(File_write_ordered_begin, A_ORDERED | A_WRITE, const)
BEGIN_C(File_write_ordered_begin, A_ORDERED | A_WRITE, const)
END(File_write_ordered_end, const)
BEGIN_AT(File_read_at_all_begin, A_AT | A_COLL, )
BEGIN_AT_C(File_read_at_all_begin, A_AT | A_COLL, )
END(File_read_at_all_end, )
BEGIN_AT(File_write_at_all_begin, A_AT | A_COLL | A_WRITE, const)
BEGIN_AT_C(File_write_at_all_begin, A_AT | A_COLL | A_WRITE, const)
END(File_write_at_all_end, const)
