/* file.c (abi): MPI-IO files as objects: open, close, delete, hints, group, access mode,
 * atomicity, size, sync and error handlers (file.h says where a file lives). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../contract/fileio.h"
#include "file.h"

static ism_errh *default_errh = &ism_errh_return; /* MPI 3.1 §13.7: MPI_ERRORS_RETURN */
static unsigned opened;                           /* side files' names stay unique */

ism_file *ism_abi_file(MPI_File fh)
{
    if ((uintptr_t)fh < 0x1000)
        return NULL;
    ism_file *f = (ism_file *)fh;
    return f->magic == ISM_FILE_MAGIC ? f : NULL;
}

int ism_abi_file_error(ism_file *f, int code, const char *fn, const char *fmt, ...)
{
    ism_errh *e = f ? f->errh : default_errh;
    if (code == MPI_SUCCESS || e->kind == 1)
        return code;
    if (e->kind == 3) {
        MPI_File h = f ? (MPI_File)f : MPI_FILE_NULL;
        ism_abi_errh_call(e, &h, &code);
        return code;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ism_abi_raise_errh(e, code, fn, msg); /* fatal: says why and aborts */
}

int ism_abi_file_errno_class(int64_t r)
{
    switch ((int)-r) {
    case 0:
        return MPI_SUCCESS;
    case ENOENT:
    case ENOTDIR:
        return MPI_ERR_NO_SUCH_FILE;
    case EACCES:
    case EPERM:
        return MPI_ERR_ACCESS;
    case EEXIST:
        return MPI_ERR_FILE_EXISTS;
    case ENOSPC:
        return MPI_ERR_NO_SPACE;
    case EDQUOT:
        return MPI_ERR_QUOTA;
    case EROFS:
        return MPI_ERR_READ_ONLY;
    case ENAMETOOLONG:
    case EISDIR:
    case EINVAL:
        return MPI_ERR_BAD_FILE;
    case ETXTBSY:
    case EBUSY:
        return MPI_ERR_FILE_IN_USE;
    default:
        return MPI_ERR_IO;
    }
}

static int site_named(const char *name)
{
    for (int s = 0; s < ism.lay.nsites; s++)
        if (!strcmp(ism_site_name(s), name))
            return s;
    return -1;
}

/* The site an info names with "isthmus_file_site" (-2: names none there is), or -1. */
static int info_site(MPI_Info info)
{
    if (info == MPI_INFO_NULL)
        return -1;
    char v[256];
    int flag = 0;
    if (PMPI_Info_get_string(info, "isthmus_file_site", &(int){sizeof v}, v, &flag) || !flag)
        return -1;
    int s = site_named(v);
    return s >= 0 ? s : -2;
}

static int amode_problem(int amode)
{
    int rd = !!(amode & MPI_MODE_RDONLY), rw = !!(amode & MPI_MODE_RDWR),
        wr = !!(amode & MPI_MODE_WRONLY);
    if (rd + rw + wr != 1)
        return 1;
    if (rd && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
        return 1;
    return rw && (amode & MPI_MODE_SEQUENTIAL);
}

static int open_flags(int amode, int creator)
{
    int fl = amode & MPI_MODE_RDONLY ? O_RDONLY : amode & MPI_MODE_WRONLY ? O_WRONLY : O_RDWR;
    if (creator && (amode & MPI_MODE_CREATE))
        fl |= O_CREAT;
    if (creator && (amode & MPI_MODE_EXCL))
        fl |= O_EXCL;
    return fl;
}

/* Open the file at its site, here or through the agent; -errno on failure. */
static int64_t open_one(ism_file *f, int flags)
{
    if (f->here)
        return ism_io_open(f->path, flags, f->shfp, &f->fd, &f->sfd);
    size_t pl = strlen(f->path), sl = strlen(f->shfp);
    unsigned char *p = malloc(4 + pl + sl);
    if (!p)
        return -ENOMEM;
    p[0] = (unsigned char)pl, p[1] = (unsigned char)(pl >> 8), p[2] = (unsigned char)(pl >> 16),
    p[3] = (unsigned char)(pl >> 24);
    memcpy(p + 4, f->path, pl);
    memcpy(p + 4 + pl, f->shfp, sl);
    int64_t res = -EIO;
    int rc = ism_fio_call(f->site, 0, ISM_FIO_OPEN, (uint64_t)flags, p, 4 + pl + sl, NULL, 0,
                          NULL, 0, &res);
    free(p);
    if (rc)
        return -ETIMEDOUT;
    if (res >= 0)
        f->handle = (uint32_t)res;
    return res < 0 ? res : 0;
}

/* close the handle at the file's site; flags as ISM_FIO_CLOSE's b */
static int64_t close_one(ism_file *f, int flags)
{
    int64_t res = 0;
    if (f->here) {
        if ((flags & 1) && unlink(f->path))
            res = -errno;
        if ((flags & 2) && *f->shfp)
            unlink(f->shfp);
        ism_io_close(f->fd, f->sfd);
        f->fd = f->sfd = -1;
    } else if (ism_fio_call(f->site, f->handle, ISM_FIO_CLOSE, (uint64_t)flags, NULL, 0, NULL, 0,
                            NULL, 0, &res)) {
        res = -ETIMEDOUT;
    }
    return res;
}

/* The leader's path (absolute at the file's site when it is there) and side file. */
static int name_file(ism_file *f, const char *filename, char **path, char **shfp)
{
    if (!strncmp(filename, "ufs:", 4) || !strncmp(filename, "nfs:", 4))
        filename += 4; /* ROMIO's file-system prefixes: the file system is the site's */
    char cwd[4096];
    if (filename[0] != '/' && f->here && getcwd(cwd, sizeof cwd)) {
        if (asprintf(path, "%s/%s", cwd, filename) < 0)
            return -ENOMEM;
    } else if (!(*path = strdup(filename))) {
        return -ENOMEM;
    }
    const char *slash = strrchr(*path, '/');
    int dlen = slash ? (int)(slash - *path + 1) : 0;
    if (asprintf(shfp, "%.*s.%s.isthmus-shfp-%d-%d-%u", dlen, *path, *path + dlen, ism.grank,
                 (int)getpid(), opened++) < 0)
        return -ENOMEM;
    return 0;
}

/* The leader names and opens the file (creating it if asked) and tells everyone: the
 * others open it only when the leader could. Returns -errno of the leader's open. */
static int64_t open_at_leader(ism_file *f, const char *filename)
{
    int64_t hdr[3] = {0, 0, 0}; /* result, path length, side file length */
    char *path = NULL, *shfp = NULL;
    if (f->rank == f->leader) {
        hdr[0] = name_file(f, filename, &path, &shfp);
        if (!hdr[0]) {
            f->path = path, f->shfp = shfp;
            hdr[0] = open_one(f, open_flags(f->amode, 1));
            hdr[1] = (int64_t)strlen(path), hdr[2] = (int64_t)strlen(shfp);
        }
    }
    PMPI_Bcast(hdr, 3, MPI_INT64_T, f->leader, f->comm);
    if (hdr[0] < 0)
        return hdr[0];
    if (f->rank != f->leader) {
        f->path = calloc(1, (size_t)hdr[1] + 1);
        f->shfp = calloc(1, (size_t)hdr[2] + 1);
        if (!f->path || !f->shfp)
            ism_die("site %s rank %d: out of memory opening a file", ism_site_name(ism.lay.site),
                    ism.grank);
    }
    PMPI_Bcast(f->path, (int)hdr[1], MPI_CHAR, f->leader, f->comm);
    PMPI_Bcast(f->shfp, (int)hdr[2], MPI_CHAR, f->leader, f->comm);
    return 0;
}

static void file_free(ism_file *f)
{
    if (f->sitecomm != MPI_COMM_NULL)
        PMPI_Comm_free(&f->sitecomm);
    if (f->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&f->comm);
    if (f->info != MPI_INFO_NULL)
        PMPI_Info_free(&f->info);
    if (ism_abi_dt_derived(f->etype, 0))
        PMPI_Type_free(&f->etype);
    if (ism_abi_dt_derived(f->filetype, 0))
        PMPI_Type_free(&f->filetype);
    free(f->path);
    free(f->shfp);
    f->magic = 0;
    free(f);
}

static int open_file(ism_file *f, const char *filename, MPI_Info info)
{
    int rc = PMPI_Comm_rank(f->comm, &f->rank);
    PMPI_Comm_size(f->comm, &f->size);
    ism_comm *c = ism_abi_comm(f->comm);
    int site[2] = {info_site(info), c->site_of[0]}; /* rank 0's choice is everyone's */
    PMPI_Bcast(site, 2, MPI_INT, 0, f->comm);
    if (site[0] == -2)
        return MPI_ERR_INFO_VALUE;
    f->site = site[0] >= 0 ? site[0] : site[1];
    f->here = ism.lay.site == f->site;
    f->leader = 0;
    for (int r = c->size - 1; r >= 0; r--)
        if (c->site_of[r] == f->site)
            f->leader = r;
    rc = PMPI_Comm_split(f->comm, ism.lay.site, f->rank, &f->sitecomm);
    if (rc)
        return rc;
    int64_t res = open_at_leader(f, filename);
    if (res < 0)
        return ism_abi_file_errno_class(res);
    int mine = MPI_SUCCESS, worst = MPI_SUCCESS;
    if (f->rank != f->leader)
        mine = ism_abi_file_errno_class(open_one(f, open_flags(f->amode, 0)));
    PMPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, f->comm);
    if (worst) {
        if (!mine)
            close_one(f, f->rank == f->leader ? 2 : 0);
        return worst;
    }
    if (f->amode & MPI_MODE_APPEND) {
        int64_t size = 0;
        ism_abi_file_simple(f, ISM_FIO_SIZE, 0, &size);
        f->fp = size > 0 ? size : 0;
        if (f->rank == f->leader)
            ism_abi_file_simple(f, ISM_FIO_SET_SHARED, f->fp, &res);
        PMPI_Barrier(f->comm);
    }
    return info != MPI_INFO_NULL ? PMPI_Info_dup(info, &f->info) : MPI_SUCCESS;
}

int PMPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    ISM_CHECK_INIT("MPI_File_open");
    const char *fn = "MPI_File_open";
    ism_comm *c = ism_abi_comm(comm);
    if (!c || c->is_inter)
        return ism_abi_file_error(NULL, MPI_ERR_COMM, fn, "%s",
                                  c ? "an intercommunicator" : "invalid communicator");
    if (!filename || !fh)
        return ism_abi_file_error(NULL, MPI_ERR_ARG, fn, "NULL file name or handle");
    if (amode_problem(amode))
        return ism_abi_file_error(NULL, MPI_ERR_AMODE, fn,
                                  "access mode %#x: exactly one of RDONLY, RDWR, WRONLY; "
                                  "no CREATE or EXCL with RDONLY; no SEQUENTIAL with RDWR",
                                  (unsigned)amode);
    ism_file *f = calloc(1, sizeof *f);
    if (!f)
        return ism_abi_file_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    f->magic = ISM_FILE_MAGIC;
    f->fd = f->sfd = -1;
    f->amode = amode;
    f->errh = default_errh;
    f->comm = f->sitecomm = MPI_COMM_NULL;
    f->info = MPI_INFO_NULL;
    f->etype = f->filetype = MPI_BYTE;
    f->esize = 1;
    int rc = PMPI_Comm_dup(comm, &f->comm);
    if (!rc)
        rc = open_file(f, filename, info);
    if (rc) {
        file_free(f);
        *fh = MPI_FILE_NULL;
        return ism_abi_file_error(NULL, rc, fn, "cannot open '%s'", filename);
    }
    *fh = (MPI_File)f;
    return MPI_SUCCESS;
}
ISM_PMPI(File_open)

int PMPI_File_close(MPI_File *fh)
{
    if (!fh)
        return ism_abi_file_error(NULL, MPI_ERR_ARG, "MPI_File_close", "NULL handle");
    ISM_FILE_ARG("MPI_File_close", *fh, f);
    if (f->split)
        return ism_abi_file_error(f, MPI_ERR_OTHER, "MPI_File_close",
                                  "a split collective is still active");
    PMPI_Barrier(f->comm); /* every rank's accesses are done before anyone unlinks */
    int64_t res = 0;
    if (f->rank != f->leader)
        close_one(f, 0);
    PMPI_Barrier(f->comm);
    if (f->rank == f->leader)
        res = close_one(f, 2 | ((f->amode & MPI_MODE_DELETE_ON_CLOSE) ? 1 : 0));
    PMPI_Bcast(&res, 1, MPI_INT64_T, f->leader, f->comm);
    file_free(f);
    *fh = MPI_FILE_NULL;
    return res < 0 ? ism_abi_file_error(NULL, ism_abi_file_errno_class(res), "MPI_File_close",
                                        "cannot delete the file on close")
                   : MPI_SUCCESS;
}
ISM_PMPI(File_close)

int PMPI_File_delete(const char *filename, MPI_Info info)
{
    ISM_CHECK_INIT("MPI_File_delete");
    if (!filename)
        return ism_abi_file_error(NULL, MPI_ERR_ARG, "MPI_File_delete", "NULL file name");
    int site = info_site(info);
    if (site == -2)
        return ism_abi_file_error(NULL, MPI_ERR_INFO_VALUE, "MPI_File_delete",
                                  "isthmus_file_site names no site of this job");
    if (!strncmp(filename, "ufs:", 4) || !strncmp(filename, "nfs:", 4))
        filename += 4;
    int64_t res = 0;
    if (site < 0 || site == ism.lay.site)
        res = unlink(filename) ? -errno : 0;
    else if (ism_fio_call(site, 0, ISM_FIO_DELETE, 0, filename, strlen(filename), NULL, 0, NULL,
                          0, &res))
        res = -ETIMEDOUT;
    if (res < 0)
        return ism_abi_file_error(NULL, ism_abi_file_errno_class(res), "MPI_File_delete",
                                  "cannot delete '%s': %s", filename, strerror((int)-res));
    return MPI_SUCCESS;
}
ISM_PMPI(File_delete)

int ism_abi_file_simple(ism_file *f, int op, int64_t arg, int64_t *res)
{
    if (!f->here)
        return ism_fio_call(f->site, f->handle, op, (uint64_t)arg, NULL, 0, NULL, 0, NULL, 0, res)
                   ? MPI_ERR_IO
                   : MPI_SUCCESS;
    switch (op) {
    case ISM_FIO_SIZE:
        *res = ism_io_size(f->fd);
        break;
    case ISM_FIO_TRUNCATE:
        *res = ism_io_truncate(f->fd, arg);
        break;
    case ISM_FIO_PREALLOC:
        *res = ism_io_prealloc(f->fd, arg);
        break;
    case ISM_FIO_SYNC:
        *res = ism_io_sync(f->fd);
        break;
    case ISM_FIO_FETCH_ADD:
        *res = ism_io_fetch_add(f->sfd, arg);
        break;
    case ISM_FIO_SET_SHARED:
        *res = ism_io_set_shared(f->sfd, arg);
        break;
    default:
        *res = -EINVAL;
    }
    return MPI_SUCCESS;
}

/* A collective change of the file done once, by the leader; everyone returns its result. */
static int leader_does(ism_file *f, int op, int64_t arg, const char *fn)
{
    int64_t res = 0;
    int rc = MPI_SUCCESS;
    if (f->rank == f->leader)
        rc = ism_abi_file_simple(f, op, arg, &res);
    if (rc)
        res = -EIO;
    PMPI_Bcast(&res, 1, MPI_INT64_T, f->leader, f->comm);
    if (res < 0)
        return ism_abi_file_error(f, ism_abi_file_errno_class(res), fn, "%s at site %s",
                                  strerror((int)-res), ism_site_name(f->site));
    return MPI_SUCCESS;
}

int PMPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    ISM_FILE_ARG("MPI_File_get_size", fh, f);
    if (!size)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_size", "NULL size");
    int64_t res = 0;
    int rc = ism_abi_file_simple(f, ISM_FIO_SIZE, 0, &res);
    if (rc || res < 0)
        return ism_abi_file_error(f, rc ? rc : ism_abi_file_errno_class(res), "MPI_File_get_size",
                                  "cannot read the size at site %s", ism_site_name(f->site));
    *size = res;
    return MPI_SUCCESS;
}
ISM_PMPI(File_get_size)

int PMPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    ISM_FILE_ARG("MPI_File_set_size", fh, f);
    if (size < 0)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_set_size", "size %lld < 0",
                                  (long long)size);
    if (f->amode & MPI_MODE_RDONLY)
        return ism_abi_file_error(f, MPI_ERR_READ_ONLY, "MPI_File_set_size", "opened read-only");
    PMPI_Barrier(f->comm);
    return leader_does(f, ISM_FIO_TRUNCATE, size, "MPI_File_set_size");
}
ISM_PMPI(File_set_size)

int PMPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    ISM_FILE_ARG("MPI_File_preallocate", fh, f);
    if (size < 0)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_preallocate", "size %lld < 0",
                                  (long long)size);
    if (f->amode & MPI_MODE_RDONLY)
        return ism_abi_file_error(f, MPI_ERR_READ_ONLY, "MPI_File_preallocate",
                                  "opened read-only");
    return leader_does(f, ISM_FIO_PREALLOC, size, "MPI_File_preallocate");
}
ISM_PMPI(File_preallocate)

int PMPI_File_sync(MPI_File fh)
{
    ISM_FILE_ARG("MPI_File_sync", fh, f);
    if (f->amode & MPI_MODE_RDONLY) /* nothing to write back; still collective */
        return PMPI_Barrier(f->comm);
    PMPI_Barrier(f->comm);
    return leader_does(f, ISM_FIO_SYNC, 0, "MPI_File_sync");
}
ISM_PMPI(File_sync)

ISM_FILE_GETTER(File_get_amode, int, f->amode)
ISM_FILE_GETTER(File_get_atomicity, int, f->atomic)

int PMPI_File_get_group(MPI_File fh, MPI_Group *group)
{
    ISM_FILE_ARG("MPI_File_get_group", fh, f);
    if (!group)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_group", "NULL group");
    return PMPI_Comm_group(f->comm, group);
}
ISM_PMPI(File_get_group)

int PMPI_File_set_atomicity(MPI_File fh, int flag)
{
    ISM_FILE_ARG("MPI_File_set_atomicity", fh, f);
    int all[2] = {flag != 0, -(flag != 0)}, got[2];
    PMPI_Allreduce(all, got, 2, MPI_INT, MPI_MAX, f->comm);
    if (got[0] != -got[1])
        return ism_abi_file_error(f, MPI_ERR_NOT_SAME, "MPI_File_set_atomicity",
                                  "the ranks passed different flags");
    f->atomic = flag != 0;
    return MPI_SUCCESS;
}
ISM_PMPI(File_set_atomicity)

int PMPI_File_set_info(MPI_File fh, MPI_Info info)
{
    ISM_FILE_ARG("MPI_File_set_info", fh, f);
    PMPI_Barrier(f->comm); /* collective: hints may only change together */
    if (info == MPI_INFO_NULL)
        return MPI_SUCCESS;
    if (f->info != MPI_INFO_NULL)
        PMPI_Info_free(&f->info);
    return PMPI_Info_dup(info, &f->info);
}
ISM_PMPI(File_set_info)

int PMPI_File_get_info(MPI_File fh, MPI_Info *info_used)
{
    ISM_FILE_ARG("MPI_File_get_info", fh, f);
    if (!info_used)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_info", "NULL info");
    int rc = f->info != MPI_INFO_NULL ? PMPI_Info_dup(f->info, info_used)
                                      : PMPI_Info_create(info_used);
    if (rc)
        return rc;
    /* what isthmus used: where the file lives, and the path there */
    PMPI_Info_set(*info_used, "isthmus_file_site", ism_site_name(f->site));
    PMPI_Info_set(*info_used, "filename", f->path);
    return MPI_SUCCESS;
}
ISM_PMPI(File_get_info)

int PMPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)
{
    ISM_CHECK_INIT("MPI_File_set_errhandler");
    ism_errh *e = ism_abi_errh(errhandler);
    ism_file *f = ism_abi_file(file);
    if (!f && file != MPI_FILE_NULL)
        return ism_abi_file_error(NULL, MPI_ERR_FILE, "MPI_File_set_errhandler",
                                  "invalid file handle");
    if (!e)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_set_errhandler",
                                  "invalid error handler");
    if (f)
        f->errh = e;
    else
        default_errh = e;
    return MPI_SUCCESS;
}
ISM_PMPI(File_set_errhandler)

int PMPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler)
{
    ISM_CHECK_INIT("MPI_File_get_errhandler");
    ism_file *f = ism_abi_file(file);
    if (!f && file != MPI_FILE_NULL)
        return ism_abi_file_error(NULL, MPI_ERR_FILE, "MPI_File_get_errhandler",
                                  "invalid file handle");
    if (!errhandler)
        return ism_abi_file_error(f, MPI_ERR_ARG, "MPI_File_get_errhandler", "NULL argument");
    *errhandler = ism_abi_errh_handle(f ? f->errh : default_errh);
    return MPI_SUCCESS;
}
ISM_PMPI(File_get_errhandler)

int PMPI_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    ISM_CHECK_INIT("MPI_File_create_errhandler");
    return ism_abi_errh_create("MPI_File_create_errhandler", (void (*)(void *, int *, ...))fn,
                               errhandler);
}
ISM_PMPI(File_create_errhandler)

int PMPI_File_call_errhandler(MPI_File fh, int errorcode)
{
    ISM_CHECK_INIT("MPI_File_call_errhandler");
    ism_file *f = ism_abi_file(fh);
    if (!f && fh != MPI_FILE_NULL)
        return ism_abi_file_error(NULL, MPI_ERR_FILE, "MPI_File_call_errhandler",
                                  "invalid file handle");
    ism_abi_file_error(f, errorcode, "MPI_File_call_errhandler", "error raised by the program");
    return MPI_SUCCESS;
}
ISM_PMPI(File_call_errhandler)
