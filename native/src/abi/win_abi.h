/* win_abi.h: what the abi/ files share about windows (abi/win.c, abi/rma.c, abi/attr.c). */
#ifndef ISM_ABI_WIN_H
#define ISM_ABI_WIN_H

#include "abi.h"
#include "../core/win.h"

/* the live window behind a handle, or NULL */
ism_win *ism_abi_win(MPI_Win h);
/* raise code on the window's error handler (NULL: MPI_COMM_WORLD's) with msg */
int ism_abi_win_error(ism_win *w, int code, const char *fn, const char *msg);
/* raise a core error rc with the reason the core recorded */
int ism_abi_win_fail(ism_win *w, int rc, const char *fn);
/* attr.c: run the delete callbacks of w's attributes (MPI_Win_free) */
int ism_abi_win_attr_delete_all(ism_win *w);

#endif
