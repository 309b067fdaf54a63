/* backend.h: the table of vendor-MPI operations isthmus needs, implemented once per
 * vendor (backend_vendor.c compiled against that vendor's mpi.h) and loaded with
 * dlopen(RTLD_LOCAL|RTLD_DEEPBIND) so the vendor's MPI_* symbols never meet ours.
 *
 * Vendor handles (Open MPI: pointers, MPICH: ints) travel as ism_vh. Every function
 * returns 0 or an MPI *standard ABI* error class: the backend translates the vendor's
 * error codes, so nothing above this layer knows the vendor's constants.
 */
#ifndef ISM_BACKEND_H
#define ISM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../common/dt_consts.h"

#define ISM_BACKEND_ABI 7

/* MPI_IN_PLACE's value in the standard ABI, the sign of an in-place all-to-all in the core
 * and the backend (the other collectives still take a NULL send buffer for it). */
#define ISM_IN_PLACE ((const void *)1)

typedef uintptr_t ism_vh;
#define ISM_VSLOT 16 /* bytes that hold any vendor handle (int or pointer) */

/* Completion information of a vendor operation, in vendor-neutral form. */
typedef struct ism_vstatus {
    int source; /* rank in the vendor communicator, or ISM_VSRC_PROC_NULL */
    int tag;    /* user tag, or ISM_VTAG_ANY for a PROC_NULL completion */
    int error;  /* ABI error class */
    int cancelled;
    size_t bytes;
} ism_vstatus;

/* Sentinels passed to and returned from the backend (translated to the vendor's). */
#define ISM_VSRC_ANY (-1)
#define ISM_VSRC_PROC_NULL (-3)
#define ISM_VTAG_ANY (-2)

/* Predefined datatypes and ops are indexed by their ABI handle value minus a base. */
#define ISM_DT_BASE 0x200
#define ISM_DT_COUNT 0x100
#define ISM_OP_BASE 0x20
#define ISM_OP_COUNT 0x20

/* The vendor's tools interface (MPI_T), for its variables behind isthmus's own (ABI 4,
 * backend_mpit.c). Indices, enumerations, sessions and handles are the vendor's, as
 * opaque pointers; datatypes come back as standard ABI handle values (0: a type with no
 * ABI name), and bind, scope, verbosity and class as the standard ABI's constants. An
 * object a variable is bound to is given as a pointer to the vendor handle. Errors are
 * the standard ABI's MPI_T error codes. */
typedef struct ism_backend_t {
    int (*init)(void);
    int (*finalize)(void);
    int (*cvar_num)(int *n);
    int (*cvar_info)(int i, char *name, int *nlen, int *verb, int *abi_dt, void **et,
                     char *desc, int *dlen, int *bind, int *scope);
    int (*cvar_alloc)(int i, void *obj, void **h, int *count);
    int (*cvar_free)(void **h);
    int (*cvar_read)(void *h, void *buf);
    int (*cvar_write)(void *h, const void *buf);
    int (*pvar_num)(int *n);
    int (*pvar_info)(int i, char *name, int *nlen, int *verb, int *cls, int *abi_dt, void **et,
                     char *desc, int *dlen, int *bind, int *ro, int *cont, int *atomic);
    int (*session_create)(void **s);
    int (*session_free)(void **s);
    int (*pvar_alloc)(void *s, int i, void *obj, void **h, int *count);
    int (*pvar_free)(void *s, void **h);
    int (*pvar_op)(void *s, int op, void *h, void *buf); /* op: 0 start 1 stop 2 read 3 write
                                                            4 reset 5 readreset */
    int (*cat_num)(int *n);
    int (*cat_info)(int i, char *name, int *nlen, char *desc, int *dlen, int *ncv, int *npv,
                    int *ncat);
    int (*cat_members)(int i, int what, int len, int *out); /* what: 0 cvars 1 pvars 2 cats */
    int (*cat_changed)(int *stamp);
    int (*enum_info)(void *et, int *n, char *name, int *nlen);
    int (*enum_item)(void *et, int i, int *value, char *name, int *nlen);
} ism_backend_t;

typedef struct ism_backend {
    int abi;
    const char *vendor; /* "openmpi" or "mpich" */
    ism_vh comm_world, comm_self, comm_null, request_null, datatype_null, op_null;
    ism_vh dt[ISM_DT_COUNT]; /* 0 where the vendor lacks the type */
    ism_vh op[ISM_OP_COUNT];
    void *in_place; /* the vendor's MPI_IN_PLACE */
    int vendor_tag_ub;

    int (*init_thread)(int *argc, char ***argv, int required, int *provided);
    int (*finalize)(void);
    int (*abort)(ism_vh comm, int code);
    int (*get_processor_name)(char *name, int *len);
    int (*get_library_version)(char *ver, int *len);
    double (*wtime)(void);
    double (*wtick)(void);

    int (*comm_rank)(ism_vh comm, int *rank);
    int (*comm_size)(ism_vh comm, int *size);
    int (*comm_split)(ism_vh comm, int color, int key, ism_vh *out); /* color<0: undefined */
    int (*comm_dup)(ism_vh comm, ism_vh *out);
    /* Nonblocking dup: the vendor writes the new communicator into *slot (storage for one
     * vendor MPI_Comm, ISM_VSLOT bytes, alive until req completes); comm_idup_take then
     * turns it into a handle with errors returned. */
    int (*comm_idup)(ism_vh comm, void *slot, ism_vh *req);
    int (*comm_idup_take)(const void *slot, ism_vh *out);
    int (*comm_free)(ism_vh *comm);
    int (*type_size)(ism_vh dt, int *size);
    int (*type_extent)(ism_vh dt, ptrdiff_t *lb, ptrdiff_t *extent);
    int (*type_true_extent)(ism_vh dt, ptrdiff_t *lb, ptrdiff_t *extent);

    int (*send)(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm);
    int (*ssend)(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm);
    int (*rsend)(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm);
    int (*recv)(void *buf, int count, ism_vh dt, int src, int tag, ism_vh comm, ism_vstatus *st);
    int (*sendrecv)(const void *sbuf, int scount, ism_vh sdt, int dst, int stag, void *rbuf,
                    int rcount, ism_vh rdt, int src, int rtag, ism_vh comm, ism_vstatus *st);
    int (*isend)(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm, ism_vh *req);
    int (*issend)(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm, ism_vh *req);
    int (*irsend)(const void *buf, int count, ism_vh dt, int dst, int tag, ism_vh comm, ism_vh *req);
    int (*irecv)(void *buf, int count, ism_vh dt, int src, int tag, ism_vh comm, ism_vh *req);
    int (*wait)(ism_vh *req, ism_vstatus *st);
    int (*test)(ism_vh *req, int *flag, ism_vstatus *st);
    /* reqs: n vendor requests (request_null allowed); sts may be NULL */
    int (*waitall)(int n, ism_vh *reqs, ism_vstatus *sts);
    int (*testsome)(int n, ism_vh *reqs, int *outcount, int *idx, ism_vstatus *sts);
    int (*cancel)(ism_vh *req);
    int (*request_free)(ism_vh *req);
    int (*iprobe)(int src, int tag, ism_vh comm, int *flag, ism_vstatus *st);
    int (*probe)(int src, int tag, ism_vh comm, ism_vstatus *st);
    /* matched probe: *msg receives a vendor MPI_Message */
    int (*improbe)(int src, int tag, ism_vh comm, int *flag, ism_vh *msg, ism_vstatus *st);
    int (*imrecv)(void *buf, int count, ism_vh dt, ism_vh *msg, ism_vh *req);

    /* the one blocking collective: start-up, before any isthmus collective can be pending
     * (site-local phases use the nonblocking forms below: core/coll.c says why) */
    int (*allgather)(const void *sbuf, int scount, ism_vh sdt, void *rbuf, int rcount, ism_vh rdt,
                     ism_vh comm);
    int (*reduce_local)(const void *in, void *inout, int count, ism_vh dt, ism_vh op);
    /* non-blocking forms, so that a rank waiting in a site-local phase keeps draining
     * frames from its gateway (sbuf NULL: in place) */
    int (*ibarrier)(ism_vh comm, ism_vh *req);
    int (*ibcast)(void *buf, int count, ism_vh dt, int root, ism_vh comm, ism_vh *req);
    int (*ireduce)(const void *sbuf, void *rbuf, int count, ism_vh dt, ism_vh op, int root,
                   ism_vh comm, ism_vh *req);
    int (*iallgather)(const void *sbuf, int scount, ism_vh sdt, void *rbuf, int rcount,
                      ism_vh rdt, ism_vh comm, ism_vh *req);
    int (*iallreduce)(const void *sbuf, void *rbuf, int count, ism_vh dt, ism_vh op,
                      ism_vh comm, ism_vh *req);
    /* the prefix reductions and the reduce-scatter with per-member counts (ABI 3): the
     * vendor's own, selectable inside a site like the others (coll/twolevel.c) */
    int (*iscan)(const void *sbuf, void *rbuf, int count, ism_vh dt, ism_vh op, ism_vh comm,
                 ism_vh *req);
    int (*iexscan)(const void *sbuf, void *rbuf, int count, ism_vh dt, ism_vh op, ism_vh comm,
                   ism_vh *req);
    int (*ireduce_scatter)(const void *sbuf, void *rbuf, const int *rcounts, ism_vh dt,
                           ism_vh op, ism_vh comm, ism_vh *req);

    /* communicator of the members of comm whose ranks are ranks[0..n), in that order;
     * collective over those members only (MPI_Comm_create_group) */
    int (*comm_create_group)(ism_vh comm, const int *ranks, int n, int tag, ism_vh *out);
    /* typed packing with the vendor's own engine (MPI_Pack/MPI_Unpack on MPI_COMM_SELF) */
    int (*vpack)(const void *in, int count, ism_vh dt, void *out, int outsize, int *pos);
    int (*vunpack)(const void *in, int insize, int *pos, void *out, int count, ism_vh dt);
    int (*gatherv)(const void *sbuf, int scount, ism_vh sdt, void *rbuf, const int *rcounts,
                   const int *displs, ism_vh rdt, int root, ism_vh comm);
    int (*scatterv)(const void *sbuf, const int *scounts, const int *displs, ism_vh sdt,
                    void *rbuf, int rcount, ism_vh rdt, int root, ism_vh comm);
    /* displacements in bytes, one type per peer (MPI_Alltoallw) */
    int (*alltoallw)(const void *sbuf, /* in place: ISM_IN_PLACE, as ialltoallw */ const int *scounts, const int *sdispls, const ism_vh *sdts,
                     void *rbuf, const int *rcounts, const int *rdispls, const ism_vh *rdts,
                     ism_vh comm);
    /* the all-to-all's in-place sign is ISM_IN_PLACE, not NULL: a NULL send buffer is
     * MPI_BOTTOM, whose data lie at the types' absolute addresses */
    int (*ialltoallw)(const void *sbuf, const int *scounts, const int *sdispls,
                      const ism_vh *sdts, void *rbuf, const int *rcounts, const int *rdispls,
                      const ism_vh *rdts, ism_vh comm, ism_vh *req, void **hold);
    /* *hold: free() it once the request has completed */
    int (*igatherv)(const void *sbuf, int scount, ism_vh sdt, void *rbuf, const int *rcounts,
                    const int *displs, ism_vh rdt, int root, ism_vh comm, ism_vh *req);
    int (*iallgatherv)(const void *sbuf, int scount, ism_vh sdt, void *rbuf, const int *rcounts,
                       const int *displs, ism_vh rdt, ism_vh comm, ism_vh *req);
    int (*iscatterv)(const void *sbuf, const int *scounts, const int *displs, ism_vh sdt,
                     void *rbuf, int rcount, ism_vh rdt, int root, ism_vh comm, ism_vh *req);
    /* Derived datatypes: the same constructor called on the vendor. The combiner and
     * the arrays are in standard ABI terms and laid out as MPI_Type_get_contents returns
     * them (common/dt_consts.h); types are vendor handles. */
    int (*type_create)(int combiner, const int *ints, const ptrdiff_t *aints,
                       const ism_vh *types, ism_vh *out);
    int (*type_commit)(ism_vh *dt);
    int (*type_free)(ism_vh *dt);
    const ism_backend_t *t; /* the vendor's MPI_T (ABI 4) */

    /* One-sided communication (ABI 5): the vendor window over a site's members
     * (core/win.c). Windows travel as ism_vh; target ranks are vendor ranks in the
     * window's communicator; displacements are in the target's displacement units. */
    int (*win_create)(void *base, int64_t size, int disp_unit, ism_vh comm, ism_vh *win);
    int (*win_free)(ism_vh *win);
    /* what: ISM_VWIN_* below; rank only for the per-target ones */
    int (*win_sync)(int what, int rank, ism_vh win);
    int (*put)(const void *o, int on, ism_vh odt, int rank, int64_t disp, int tn, ism_vh tdt,
               ism_vh win);
    int (*get)(void *o, int on, ism_vh odt, int rank, int64_t disp, int tn, ism_vh tdt,
               ism_vh win);
    int (*accumulate)(const void *o, int on, ism_vh odt, int rank, int64_t disp, int tn,
                      ism_vh tdt, ism_vh op, ism_vh win);
    /* o NULL: MPI_NO_OP's origin (nothing to send) */
    int (*get_accumulate)(const void *o, int on, ism_vh odt, void *r, int rn, ism_vh rdt,
                          int rank, int64_t disp, int tn, ism_vh tdt, ism_vh op, ism_vh win);
    int (*compare_and_swap)(const void *o, const void *cmp, void *r, ism_vh dt, int rank,
                            int64_t disp, ism_vh win);
    /* MPI_Win_allocate_shared (disp unit 1) and MPI_Win_shared_query (rank
     * ISM_VSRC_PROC_NULL: the first member with memory) */
    int (*win_allocate_shared)(int64_t size, ism_vh comm, void **base, ism_vh *win);
    int (*win_shared_query)(ism_vh win, int rank, int64_t *size, void **base);
    /* Dynamic windows (ABI 6): MPI_Win_create_dynamic over a site's members and the
     * memory this process attaches to it; a target displacement is an address there */
    int (*win_create_dynamic)(ism_vh comm, ism_vh *win);
    int (*win_attach)(ism_vh win, void *base, int64_t size);
    int (*win_detach)(ism_vh win, const void *base);
    /* (ABI 7) how many of comm's members share this process's node, as the vendor sees
     * it (MPI_Comm_split_type MPI_COMM_TYPE_SHARED): collective over comm */
    int (*comm_node_size)(ism_vh comm, int *n);
    /* (ABI 7) 1: this vendor's one-sided calls are faster on memory of its own
     * MPI_Win_allocate_shared than on memory handed to its MPI_Win_create (Open MPI 4.1,
     * not MPICH 4.0: bench/notebook/rma.md). No longer read by the core: since puts and
     * gets there are isthmus's memmove (core/rma_direct.c) both vendors take that road;
     * kept for the ABI's layout */
    int win_shm_faster;
} ism_backend;

enum { ISM_VWIN_LOCK_ALL = 1, ISM_VWIN_UNLOCK_ALL, ISM_VWIN_FLUSH, ISM_VWIN_FLUSH_ALL,
       ISM_VWIN_FLUSH_LOCAL, ISM_VWIN_FLUSH_LOCAL_ALL, ISM_VWIN_SYNC };

/* Every backend plugin exports this one symbol. */
typedef const ism_backend *(*ism_backend_get_fn)(void);
#define ISM_BACKEND_SYMBOL "ism_backend_get"

#endif
