/* nb.h: a nonblocking collective in flight (nb.c runs it, nb_start.c composes it). */
#ifndef ISM_COLL_NB_H
#define ISM_COLL_NB_H

#include "coll.h"

#define NB_PHASES 6
/* The tags of collectives in flight: above every other tag isthmus sends on a
 * communicator's collective context or vcoll (core.h's TAG_*, below 16; the Cartesian
 * neighbourhood exchanges' 100 + direction, abi/topo.c), and at most 32766, below the
 * least MPI_TAG_UB (32767) the standard allows a vendor. A collective's tag is
 * NB_TAG0 + its sequence number mod NB_TAGS; one started NB_TAGS after the oldest still
 * in flight on its communicator is refused. */
#define NB_TAG0 16384
#define NB_TAGS 16383

typedef struct nb_post {
    ism_req *r;   /* to another site */
    ism_vh v;     /* inside the site (vendor) */
    int64_t want; /* a receive's bytes; -1: a send */
    int done;
} nb_post;

/* One transfer of a phase of direct transfers (ism_coll_nb_direct): a message to or from
 * a communicator rank, or a local copy, on buffers named by address. */
typedef struct nb_xfer {
    int kind;   /* ISM_CA_SEND, ISM_CA_RECV or ISM_CA_COPY (from a to b) */
    int peer;   /* the communicator rank (not for a copy) */
    char *a, *b;
    int64_t len;
} nb_xfer;

/* A block of the program's buffer that arrives packed, unpacked when the collective
 * completes. */
typedef struct nb_unpack {
    ism_dt *dt;
    void *buf;
    int64_t count;
    char *bytes;
} nb_unpack;

struct ism_coll_nb;
typedef struct nb_phase {
    ism_coll_act *act; /* the built schedule, cut to size (NULL: none) */
    int *rend;         /* round i is act[rend[i-1] .. rend[i]) */
    int nact, nround;
    int nslot;
    int64_t slen[ISM_SL_MAX]; /* bytes of each slot */
    int built;       /* a schedule was built; else the phase only passes in on to out */
    int lvl;         /* ISM_LVL_INTRA: among this site's members */
    ism_coll_view v;
    char *in, *out;  /* its input and result (NULL: none here, or a temporary) */
    int64_t bytes;
    int stage_in;    /* in overlaps out and the schedule cannot read it in place */
    char *slot[ISM_SL_MAX];
    int direct;      /* a phase of direct transfers: one round of xf, no schedule */
    nb_xfer *xf;
    int nxf;
    /* a direct phase whose transfers depend on what earlier phases received: called when
     * the phase begins, it sets them (ism_coll_nb_set_direct) */
    int (*prep)(struct ism_coll_nb *nb, struct nb_phase *ph);
    /* a phase that is one vendor collective over the site (ism_coll_nb_vendor) */
    int (*vstart)(void *ext, ism_vh *req);
} nb_phase;

struct ism_coll_nb {
    ism_comm *c;
    ism_req *req;
    uint32_t seq;
    int tag;
    int nph, cur, rd; /* phases, the one running, its round (-1: not begun) */
    nb_phase ph[NB_PHASES];
    nb_post *post;    /* what the running round posted */
    int npost, cappost, left;
    ism_coll_redop red;
    ism_dt **held;    /* derived types held until completion */
    int nheld, capheld;
    char *tmp;        /* the phases' temporaries */
    int64_t tmplen;
    char *own;        /* a buffer of the composition's (a partial result, packed data) */
    nb_unpack *unp;   /* what is unpacked into the program's buffers at the end */
    int nunp, capunp;
    int *wan;         /* the members of the phase among sites */
    void *ext;        /* a composition's state for its prep phases, freed by ext_free */
    void (*ext_free)(void *);
    int rc;
    void (*ended)(void *); /* told when it has completed (a persistent request's run) */
    void *ended_arg;
    struct ism_coll_nb *next;
};

/* A new collective in flight on c (its tag from c's next sequence number, which it takes
 * even when it fails), NULL when out of memory or its tag is still in use on c. */
ism_coll_nb *ism_coll_nb_new(ism_comm *c);
/* Appends a phase: collective coll at level lvl over v (root: a member index), on bytes
 * of elements of esize bytes; in and out as ism_coll_exec takes them. */
int ism_coll_nb_phase(ism_coll_nb *nb, int coll, int lvl, const ism_coll_view *v, int root,
                      int64_t bytes, int64_t esize, int commute, char *in, char *out);
/* The same for a collective of blocks (allgather, reduce-scatter): a member's block of block bytes, or
 * per-member blocks blk (read now only); total: all the blocks, what select.c chooses by. */
int ism_coll_nb_phase_blocks(ism_coll_nb *nb, int coll, int lvl, const ism_coll_view *v,
                             int64_t block, const int64_t *blk, int64_t total, int64_t esize,
                             int commute, char *in, char *out);
/* A phase of one local action on len bytes: kind ISM_CA_COPY (to = from) or ISM_CA_RED
 * (to = from op to, with nb's op). */
int ism_coll_nb_local(ism_coll_nb *nb, int kind, char *from, char *to, int64_t len);
/* A scatter over v from member root: member l gets cnt[l] bytes of in (read at the root
 * only, the blocks in member order) into out. */
int ism_coll_nb_scatter(ism_coll_nb *nb, const ism_coll_view *v, int root, const int64_t *cnt,
                        char *in, char *out);
/* A phase of n direct transfers (copied), all in one round: the receives, the sends,
 * then the local copies. For exchanges whose blocks lie anywhere in the program's
 * buffers (the v- and w-forms), each pair's message going straight between them. */
int ism_coll_nb_direct(ism_coll_nb *nb, const nb_xfer *x, int n);
/* A direct phase whose transfers prep sets when the phase begins (after every earlier
 * phase has completed), from what they received. */
int ism_coll_nb_direct_later(ism_coll_nb *nb, int (*prep)(ism_coll_nb *, nb_phase *));
/* Sets the n transfers (copied) of a direct phase, in ism_coll_nb_direct's order. */
int ism_coll_nb_set_direct(nb_phase *ph, const nb_xfer *x, int n);
/* A phase that is one nonblocking collective of the vendor's over the communicator's
 * members at this site: vstart(nb->ext, &req) issues it when the phase begins, and the
 * phase ends when the request completes. Only as a collective's first phase, which begins
 * in the MPI_I* call itself: every member then issues its vendor collectives in the
 * program's order, as the vendor requires (a later phase begins when earlier ones end,
 * at a different time on each member). nb->ext keeps what the call reads until then. */
int ism_coll_nb_vendor(ism_coll_nb *nb, int (*vstart)(void *ext, ism_vh *req));
/* At the end, count elements of dt unpacked from bytes into buf (a non-contiguous
 * block, received packed). */
int ism_coll_nb_unpack_later(ism_coll_nb *nb, ism_dt *dt, void *buf, int64_t count, char *bytes);
/* The phases of an alltoallw through each site's hub (nb_hub.c) for its blocks to and
 * from other sites smaller than hub_max bytes: local, the other transfers (copied: those
 * among this site's members, and the larger blocks straight), first; the vectors as
 * ism_coll_ialltoallw64's, src where the outgoing blocks are read. */
int ism_coll_nb_hub_alltoallw(ism_coll_nb *nb, const void *src, const int64_t *scnt,
                              const int64_t *sdsp, ism_dt *const *st, void *rbuf,
                              const int64_t *rcnt, const int64_t *rdsp, ism_dt *const *rt,
                              int root, int64_t hub_max, const nb_xfer *local, int nlocal);
/* A buffer of count elements of dt as packed bytes: the buffer itself for a contiguous
 * type (its offset included: MPI_BOTTOM), else own (filled from buf when fill), unpacked
 * into buf when the collective ends (unpack; NULL: out of memory). A type's layout may
 * differ between members where only its signature must agree (bcast, allgather), so every
 * member takes the engine alike. */
char *ism_coll_nb_packed(ism_coll_nb *nb, ism_dt *dt, void *buf, int64_t count, int fill,
                         int unpack, char *own);
/* dt (a derived type) held until nb completes: MPI lets the program free it meanwhile. */
int ism_coll_nb_hold(ism_coll_nb *nb, ism_dt *dt);
/* Starts nb (holding hold, a derived type, until it completes) and gives its request;
 * on an error nb is freed. */
int ism_coll_nb_launch(ism_coll_nb *nb, ism_dt *hold, ism_req **out);
/* Frees nb, never launched. */
void ism_coll_nb_discard(ism_coll_nb *nb);

#endif
