/* fortran.h (abi): what libisthmus offers its Fortran bindings (native/fortran/) beyond
 * the MPI C API: user functions that take integer handles, and giving back the integer of
 * a freed handle. Exported as ism_abi_f_* (exports.map) for the bindings' library only;
 * programs never call these.
 */
#ifndef ISM_ABI_FORTRAN_H
#define ISM_ABI_FORTRAN_H

#include <mpi.h>

/* A Fortran reduction function: its datatype argument is an integer handle. */
typedef void ism_abi_f_user_fn(void *in, void *inout, MPI_Fint *len, MPI_Fint *datatype);
int ism_abi_f_op_create(ism_abi_f_user_fn *fn, int commute, MPI_Op *op);

/* A Fortran error handler: the communicator or session arrives as an integer handle. */
typedef void ism_abi_f_errh_fn(MPI_Fint *handle, MPI_Fint *code);
int ism_abi_f_errhandler_create(const char *fn_name, ism_abi_f_errh_fn *fn,
                                MPI_Errhandler *errhandler);

/* Raise code through MPI_COMM_WORLD's error handler for a problem the bindings found
 * themselves (what fn was given, in msg); returns what the handler leaves. */
int ism_abi_f_error(int code, const char *fn, const char *msg);

/* handles.c: the bindings handed the program a new handle of integer h (returns h) */
MPI_Fint ism_abi_f_hold(MPI_Fint h);
/* the bindings saw a handle of integer h freed; once every handle handed out for its
 * object is, its integer may be reused. */
void ism_abi_f_forget(MPI_Fint h);
/* How many handles hold an integer now (for tests). */
int ism_abi_f_live(void);

#endif
