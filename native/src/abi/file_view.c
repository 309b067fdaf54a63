/* file_view.c (abi): views and file pointers: MPI_File_set_view/get_view, seek and
 * position (individual and shared), byte offsets and type extents. Only the "native"
 * data representation ("internal" is the same here): the sites of a job are homogeneous
 * (docs/design.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../contract/fileio.h"
#include "file.h"

static int keep_type(MPI_Datatype t, MPI_Datatype *out)
{
    if (ism_abi_dt_derived(t, 0) == NULL) { /* predefined */
        *out = t;
        return MPI_SUCCESS;
    }
    return PMPI_Type_dup(t, out);
}

/* What MPI 3.1 §13.3 forbids in an etype or filetype's type map: a negative
 * displacement, a decreasing one, and (in a file open for writing) overlapping data. */
static const char *map_problem(const ism_dt *d, int writable)
{
    const ism_tmap *m = ism_dt_map(d);
    for (int64_t i = 0; i < m->nblk; i++) {
        if (m->blk[i].off < 0)
            return "a negative displacement";
        if (i && m->blk[i].off < m->blk[i - 1].off)
            return "decreasing displacements";
        if (i && writable && m->blk[i].off < m->blk[i - 1].off + m->blk[i - 1].len)
            return "overlapping data in a file open for writing";
    }
    return NULL;
}

int PMPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                       const char *datarep, MPI_Info info)
{
    const char *fn = "MPI_File_set_view";
    ISM_FILE_ARG(fn, fh, f);
    ism_dt *e = ism_abi_dt_any(etype), *t = ism_abi_dt(filetype);
    if (!e || !t || e->size <= 0)
        return ism_abi_file_error(f, MPI_ERR_TYPE, fn, "invalid etype or filetype (a filetype "
                                  "must be committed; an etype must have data)");
    if (t->size % e->size)
        return ism_abi_file_error(f, MPI_ERR_TYPE, fn,
                                  "the filetype's %lld bytes are not a whole number of etypes "
                                  "(%lld bytes)", (long long)t->size, (long long)e->size);
    int writable = !(f->amode & MPI_MODE_RDONLY);
    const char *bad = map_problem(e, writable);
    if (bad || (bad = map_problem(t, writable)))
        return ism_abi_file_error(f, MPI_ERR_IO, fn, "the %s has %s", map_problem(e, writable)
                                  ? "etype" : "filetype", bad);
    if (!datarep || (strcasecmp(datarep, "native") && strcasecmp(datarep, "internal")))
        return ism_abi_file_error(f, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                                  "data representation '%s': isthmus supports \"native\" (and "
                                  "\"internal\", the same)", datarep ? datarep : "(null)");
    if (disp == MPI_DISPLACEMENT_CURRENT && !(f->amode & MPI_MODE_SEQUENTIAL))
        return ism_abi_file_error(f, MPI_ERR_ARG, fn,
                                  "MPI_DISPLACEMENT_CURRENT needs MPI_MODE_SEQUENTIAL");
    if (disp < 0 && disp != MPI_DISPLACEMENT_CURRENT)
        return ism_abi_file_error(f, MPI_ERR_ARG, fn, "displacement %lld < 0", (long long)disp);
    if (f->split)
        return ism_abi_file_error(f, MPI_ERR_OTHER, fn, "a split collective is active");
    PMPI_Barrier(f->comm); /* no rank still uses the old view's shared pointer */
    if (disp == MPI_DISPLACEMENT_CURRENT) {
        int64_t sp = 0;
        ism_abi_file_simple(f, ISM_FIO_FETCH_ADD, 0, &sp);
        disp = f->disp + sp * f->esize;
        PMPI_Barrier(f->comm); /* everyone has read it before the leader resets it */
    }
    MPI_Datatype ne, nt;
    int rc = keep_type(etype, &ne);
    if (!rc && (rc = keep_type(filetype, &nt)) && ism_abi_dt_derived(ne, 0))
        PMPI_Type_free(&ne);
    if (rc)
        return ism_abi_file_error(f, rc, fn, "cannot keep the view's types");
    if (ism_abi_dt_derived(f->etype, 0))
        PMPI_Type_free(&f->etype);
    if (ism_abi_dt_derived(f->filetype, 0))
        PMPI_Type_free(&f->filetype);
    f->etype = ne, f->filetype = nt;
    f->disp = disp;
    f->esize = e->size;
    f->fp = 0;
    int64_t res = 0;
    if (f->rank == f->leader)
        ism_abi_file_simple(f, ISM_FIO_SET_SHARED, 0, &res);
    (void)info; /* no view hints are used */
    return PMPI_Barrier(f->comm);
}
ISM_PMPI(File_set_view)

int PMPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                       char *datarep)
{
    ISM_FILE_ARG("MPI_File_get_view", fh, f);
    if (!disp || !etype || !filetype || !datarep)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_view", "NULL argument");
    *disp = f->disp;
    int rc = keep_type(f->etype, etype);
    if (!rc)
        rc = keep_type(f->filetype, filetype);
    strcpy(datarep, "native");
    return rc;
}
ISM_PMPI(File_get_view)

/* The view position (etypes) of the first data byte at or after file byte `at`. */
static MPI_Offset view_pos_of(const ism_file *f, int64_t at)
{
    const ism_tmap *m = ism_dt_map(ism_abi_dt_any(f->filetype));
    int64_t ext = m->ub - m->lb, rel = at - f->disp;
    if (rel <= 0 || ext <= 0)
        return 0;
    int64_t tiles = rel / ext, in = rel % ext, bytes = tiles * m->size;
    for (int64_t b = 0; b < m->nblk; b++) {
        int64_t s = m->blk[b].off, z = s + m->blk[b].len;
        bytes += in >= z ? m->blk[b].len : in > s ? in - s : 0;
    }
    return (bytes + f->esize - 1) / f->esize;
}

static int end_pos(ism_file *f, MPI_Offset *pos)
{
    int64_t size = 0;
    int rc = ism_abi_file_simple(f, ISM_FIO_SIZE, 0, &size);
    if (rc || size < 0)
        return rc ? rc : ism_abi_file_errno_class(size);
    *pos = view_pos_of(f, size);
    return MPI_SUCCESS;
}

static int new_pos(ism_file *f, MPI_Offset cur, MPI_Offset offset, int whence, MPI_Offset *out,
                   const char *fn)
{
    MPI_Offset base = 0;
    if (whence == MPI_SEEK_CUR)
        base = cur;
    else if (whence == MPI_SEEK_END) {
        int rc = end_pos(f, &base);
        if (rc)
            return ism_abi_file_error(f, rc, fn, "cannot read the size at site %s",
                                      ism_site_name(f->site));
    } else if (whence != MPI_SEEK_SET)
        return ism_abi_file_error(f, MPI_ERR_ARG, fn, "whence %d is none of MPI_SEEK_SET, "
                                  "MPI_SEEK_CUR, MPI_SEEK_END", whence);
    if (base + offset < 0)
        return ism_abi_file_error(f, MPI_ERR_ARG, fn, "the new position %lld is negative",
                                  (long long)(base + offset));
    *out = base + offset;
    return MPI_SUCCESS;
}

int PMPI_File_seek(MPI_File fh, MPI_Offset offset, int whence)
{
    ISM_FILE_ARG("MPI_File_seek", fh, f);
    if (f->amode & MPI_MODE_SEQUENTIAL)
        return ism_abi_file_error(f, MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_seek",
                                  "no individual file pointer in MPI_MODE_SEQUENTIAL");
    return new_pos(f, f->fp, offset, whence, &f->fp, "MPI_File_seek");
}
ISM_PMPI(File_seek)

ISM_FILE_GETTER(File_get_position, MPI_Offset, f->fp)

int PMPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset)
{
    ISM_FILE_ARG("MPI_File_get_position_shared", fh, f);
    if (!offset)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_position_shared", "NULL offset");
    int64_t r = 0;
    int rc = ism_abi_file_simple(f, ISM_FIO_FETCH_ADD, 0, &r);
    if (rc || r < 0)
        return ism_abi_file_error(f, rc ? rc : ism_abi_file_errno_class(r),
                                  "MPI_File_get_position_shared",
                                  "cannot read the shared file pointer at site %s",
                                  ism_site_name(f->site));
    *offset = r;
    return MPI_SUCCESS;
}
ISM_PMPI(File_get_position_shared)

int PMPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence)
{
    const char *fn = "MPI_File_seek_shared";
    ISM_FILE_ARG(fn, fh, f);
    int64_t cur = 0, res = 0;
    MPI_Offset to = 0;
    PMPI_Barrier(f->comm); /* every earlier shared access has moved the pointer */
    int rc = MPI_SUCCESS;
    if (f->rank == f->leader) {
        if (whence == MPI_SEEK_CUR)
            rc = ism_abi_file_simple(f, ISM_FIO_FETCH_ADD, 0, &cur);
        if (!rc)
            rc = new_pos(f, cur, offset, whence, &to, fn);
        if (!rc)
            rc = ism_abi_file_simple(f, ISM_FIO_SET_SHARED, to, &res);
        if (!rc && res < 0)
            rc = ism_abi_file_errno_class(res);
    }
    PMPI_Bcast(&rc, 1, MPI_INT, f->leader, f->comm);
    return rc ? ism_abi_file_error(f, rc, fn, "cannot move the shared file pointer") : MPI_SUCCESS;
}
ISM_PMPI(File_seek_shared)

int PMPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp)
{
    ISM_FILE_ARG("MPI_File_get_byte_offset", fh, f);
    if (!disp || offset < 0)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_byte_offset",
                                  "NULL result or negative offset");
    ism_fseg_list s;
    int rc = ism_abi_file_segments(f, offset, 1, &s);
    if (rc)
        return ism_abi_file_error(f, rc, "MPI_File_get_byte_offset", "cannot map the view");
    *disp = s.seg[0].off;
    free(s.seg);
    return MPI_SUCCESS;
}
ISM_PMPI(File_get_byte_offset)

int PMPI_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent)
{
    ISM_FILE_ARG("MPI_File_get_type_extent", fh, f);
    if (!extent)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_type_extent", "NULL extent");
    MPI_Aint lb;
    return PMPI_Type_get_extent(datatype, &lb, extent); /* native: as in memory */
}
ISM_PMPI(File_get_type_extent)
