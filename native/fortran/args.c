/* args.c (fortran): the Fortran sentinels' storage and the argument conversions the
 * generated entry points share: strings, temporary arrays, peer counts, attribute values,
 * MPI-1's INTEGER addresses.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

/* COMMON /MPI_FORTRAN_x/ of mpif.h and the modules: only their addresses matter. A
 * program that names a common block defines it itself, and these references then
 * resolve to the program's copy (the library reaches them through its GOT). */
#define COMMON __attribute__((aligned(32))) /* as gfortran aligns common blocks (up to 32) */
COMMON MPI_Fint mpi_fortran_bottom_, mpi_fortran_in_place_, mpi_fortran_buffer_automatic_;
COMMON MPI_Fint mpi_fortran_status_ignore_[MPI_F_STATUS_SIZE];
COMMON MPI_Fint mpi_fortran_statuses_ignore_[MPI_F_STATUS_SIZE];
COMMON MPI_Fint mpi_fortran_errcodes_ignore_[1], mpi_fortran_unweighted_[1];
COMMON MPI_Fint mpi_fortran_weights_empty_[1];
COMMON char mpi_fortran_argv_null_[1], mpi_fortran_argvs_null_[1];

/* C code that receives a Fortran status compares it with these (mpi.h). */
__attribute__((constructor)) static void point_c_at_fortran_ignores(void)
{
    MPI_F_STATUS_IGNORE = mpi_fortran_status_ignore_;
    MPI_F_STATUSES_IGNORE = mpi_fortran_statuses_ignore_;
    MPI_F08_STATUS_IGNORE = (MPI_F08_status *)mpi_fortran_status_ignore_;
    MPI_F08_STATUSES_IGNORE = (MPI_F08_status *)mpi_fortran_statuses_ignore_;
}

char *ism_f_cstr(const char *s, size_t len, int lead)
{
    while (len > 0 && s[len - 1] == ' ')
        len--;
    while (lead && len > 0 && *s == ' ') {
        s++;
        len--;
    }
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

void ism_f_fstr(char *f, size_t flen, const char *c)
{
    size_t n = strnlen(c, flen);
    memcpy(f, c, n);
    memset(f + n, ' ', flen - n);
}

void *ism_f_alloc(long n, size_t size, void *stack, long cap)
{
    if (stack && n <= cap)
        return stack;
    return malloc(size * (size_t)(n > 0 ? n : 1));
}

int ism_f_nomem(const char *fn)
{
    return ism_abi_f_error(MPI_ERR_NO_MEM, fn, "out of memory converting the Fortran arguments");
}

int ism_f_peers(MPI_Comm comm, int side)
{
    int inter = 0, n = 0, topo = MPI_UNDEFINED, send = side & ISM_F_SEND;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 0;
    if (inter) {
        PMPI_Comm_remote_size(comm, &n);
        return n;
    }
    if (side & ISM_F_NEIGHBORS)
        PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        int ndims = 0;
        PMPI_Cartdim_get(comm, &ndims);
        return 2 * ndims;
    }
    if (topo == MPI_GRAPH) {
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &n);
        return n;
    }
    if (topo == MPI_DIST_GRAPH) {
        int in = 0, out = 0, weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        return send ? out : in;
    }
    PMPI_Comm_size(comm, &n);
    return n;
}

MPI_Aint ism_f_attr(int keyval, void *v)
{
    switch (keyval) {
    case MPI_TAG_UB:
    case MPI_HOST:
    case MPI_IO:
    case MPI_WTIME_IS_GLOBAL:
    case MPI_APPNUM:
    case MPI_UNIVERSE_SIZE:
    case MPI_LASTUSEDCODE:
    /* a window's: C gives pointers to them, Fortran the values (MPI_WIN_BASE is the
     * address itself in both) */
    case MPI_WIN_DISP_UNIT:
    case MPI_WIN_CREATE_FLAVOR:
    case MPI_WIN_MODEL:
        return v ? *(int *)v : 0;
    case MPI_WIN_SIZE:
        return v ? *(MPI_Aint *)v : 0;
    default:
        return (MPI_Aint)(intptr_t)v;
    }
}

int ism_f_to_int(const char *fn, MPI_Aint v, MPI_Fint *out)
{
    if (v < INT32_MIN || v > INT32_MAX) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "the value %lld does not fit the default INTEGER of this MPI-1 routine; "
                 "use its MPI-2 form, which returns INTEGER(KIND=MPI_ADDRESS_KIND)",
                 (long long)v);
        return ism_abi_f_error(MPI_ERR_ARG, fn, msg);
    }
    *out = (MPI_Fint)v;
    return MPI_SUCCESS;
}
