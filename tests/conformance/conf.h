/*
 * conf.h - shared declarations of the combinatorial MPI conformance suite.
 *
 * One program runs every test over tests x communicators x datatypes x
 * counts.  A combination is described by a struct ctx (the test, the
 * communicator kind and its handle, the datatype, the count); a test is a
 * function that runs one combination and reports each failure with
 * cx_fail(), which prints the exact combination.
 *
 *   comms.c   the communicator kinds (build, free, names)
 *   types.c   the datatypes (build, free, names, which reductions apply)
 *   data.c    buffers with sentinel holes, byte patterns, reduction values
 *   t_p2p.c   point-to-point tests
 *   t_coll.c  collective tests (blocking and nonblocking)
 *   t_topo.c  neighborhood collectives on the topology kinds
 *   main.c    options, combination selection, summary
 */
#ifndef ISTHMUS_CONFORMANCE_CONF_H
#define ISTHMUS_CONFORMANCE_CONF_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* ---- communicators (comms.c) ------------------------------------------- */
enum { CK_INTRA = 0, CK_INTER = 1 };
enum { TOPO_NONE = 0, TOPO_CART = 1, TOPO_GRAPH = 2 };

struct comm_kind {
    const char *name;
    const char *what;
    int inter; /* CK_INTER: an intercommunicator */
    int topo;  /* TOPO_*                         */
};

extern const struct comm_kind comm_kinds[];
extern const int n_comm_kinds;

/* Builds every kind (collective over MPI_COMM_WORLD).  comms[k] is
 * MPI_COMM_NULL on ranks that are not members; avail[k] is 0 (same on every
 * rank) when the kind cannot be built here, with the reason in why[k]. */
void comms_build(MPI_Comm *comms, int *avail, char why[][160]);
void comms_free(MPI_Comm *comms);

/* ---- datatypes (types.c) ----------------------------------------------- */
enum red_class { RED_NONE = 0, RED_ARITH = 1, RED_PAIR = 2 };

/* element kinds for reductions (value access) */
enum ekind {
    EK_NONE, EK_SCHAR, EK_UCHAR, EK_SHORT, EK_USHORT, EK_INT, EK_UINT, EK_LONG,
    EK_ULONG, EK_LLONG, EK_ULLONG, EK_FLOAT, EK_DOUBLE, EK_LDOUBLE, EK_I8, EK_I16,
    EK_I32, EK_I64, EK_U8, EK_U16, EK_U32, EK_U64,
    EK_FLOAT_INT, EK_DOUBLE_INT, EK_LONG_INT, EK_2INT, EK_SHORT_INT, EK_LDOUBLE_INT
};

struct type_def {
    const char *name;
    MPI_Datatype dt; /* built by types_build() */
    int red;         /* enum red_class */
    int ek;          /* enum ekind (reductions only) */
    int derived;     /* 1: freed by types_free() */
};

extern struct type_def type_defs[];
extern const int n_type_defs;
void types_build(void);
void types_free(void);

/* ---- one combination ---------------------------------------------------- */
struct test_def;

struct ctx {
    const struct test_def *test;
    int tid; /* index of the test */
    const struct comm_kind *ck;
    int cid; /* index of the comm kind */
    const struct type_def *ty;
    int count;
    MPI_Comm comm;
    int rank, size;    /* in the (local group of the) communicator */
    int inter, rsize;  /* remote group size of an intercommunicator */
    int side;          /* 0/1: which group of an intercommunicator */
    int wrank;         /* rank in MPI_COMM_WORLD */
    MPI_Aint lb, extent, true_lb, true_extent;
    int tsize;         /* MPI_Type_size */
    int fails;
};

/* prints "FAIL test=.. comm=.. type=.. count=.. rank=..: what" */
void cx_fail(struct ctx *cx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#define CX_RC(cx, rc, what)                                                   \
    do {                                                                      \
        int rc_ = (rc);                                                       \
        if (rc_ != MPI_SUCCESS)                                               \
            cx_fail((cx), "%s returned %d", (what), rc_);                     \
    } while (0)

/* ---- tests -------------------------------------------------------------- */
enum {
    TF_INTER = 1,   /* also runs on intercommunicators */
    TF_RED = 2,     /* needs a type with reductions (RED_ARITH or RED_PAIR) */
    TF_TOPO = 4,    /* only on topology kinds */
};

struct test_def {
    const char *name;
    const char *group; /* p2p, coll, topo */
    int flags;
    void (*run)(struct ctx *cx);
};

/* a test function that calls a shared implementation with fixed arguments */
#define TEST_FN(name, body)                                                   \
    static void name(struct ctx *cx) { body; }

extern const struct test_def p2p_tests[];
extern const int n_p2p_tests;
extern const struct test_def coll_tests[];
extern const int n_coll_tests;
extern const struct test_def topo_tests[];
extern const int n_topo_tests;

/* ---- buffers (data.c) --------------------------------------------------- */
#define SENT_SEND 0x5a /* sentinel of send buffers   */
#define SENT_RECV 0xa5 /* sentinel of receive buffers */

struct buf {
    unsigned char *mem; /* whole allocation: slack, data span, slack */
    size_t len;
    char *ptr;          /* the buffer to pass to MPI (element 0)   */
    MPI_Aint nelem;
};

/* room for nelem elements of the ctx type, every byte = sentinel */
void buf_init(struct ctx *cx, struct buf *b, MPI_Aint nelem, int sentinel);
void buf_free(struct buf *b);
/* unpack the pattern of `seed` into elements [off, off+n) (holes untouched) */
void buf_fill(struct ctx *cx, struct buf *b, MPI_Aint off, int n, uint32_t seed);
/* compare whole allocations; prints the first difference; 1 if equal */
int buf_same(struct ctx *cx, const struct buf *got, const struct buf *want, const char *what);
/* element address of element i */
char *buf_elem(struct ctx *cx, const struct buf *b, MPI_Aint i);

uint32_t seed_of(const struct ctx *cx, int salt, int src_side, int src, int dst);

/* reductions: values 1..11 (exact in any type and order) */
/* elements [off, off+n) get the values of element indices vbase.. */
void red_set(struct ctx *cx, struct buf *b, MPI_Aint off, int n, MPI_Aint vbase, int side,
             int rank, int salt);
/* combine the contribution of (side,rank,salt) for value indices vbase..
 * into acc (first: initialise) */
void red_acc(struct ctx *cx, long double *accv, long *acci, int n, MPI_Aint vbase, int first,
             int side, int rank, int salt, MPI_Op op);
/* compare elements [off,off+n) of b with acc; slack outside untouched */
int red_check(struct ctx *cx, const struct buf *b, MPI_Aint off, int n, const long double *accv,
              const long *acci, const char *what);
MPI_Op red_op(const struct ctx *cx, int salt);
const char *op_name(MPI_Op op);

#endif
