/* nbc.c: nonblocking collectives as coroutines.
 *
 * MPI_Ibcast and friends run the same two-level algorithm as the blocking call, on a
 * stack of their own (ucontext). Wherever that algorithm would wait (ism_idle(), called
 * by every wait loop when a progress round found nothing) it yields back to the caller,
 * so the MPI_I* call returns at once and the collective advances whenever the program
 * enters MPI: MPI_Test/Wait on any request, probes, and every other wait. A rank that
 * keeps receiving point-to-point messages while it tests an MPI_Ibarrier (the NBX
 * pattern) therefore never blocks its peers.
 *
 * Collectives on one communicator run one at a time, in the order they were started:
 * MPI requires every rank to start them in the same order, so their site-local vendor
 * collectives and cross-site messages (on the communicator's collective context) pair
 * up the same way on every rank. A blocking collective, or a communicator constructor,
 * on a communicator with collectives still pending first completes them (ism_nbc_drain).
 */
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "core.h"

#define NBC_STACK (512u * 1024u)
#define NBC_MAX 4096
#define NBC_ARGS 256

struct ism_nbc {
    ucontext_t uc;
    void *stack;
    void *fiber; /* ThreadSanitizer's handle of the stack, or NULL */
    int (*fn)(void *args);
    ism_comm *comm;
    ism_req *req;
    int rc, started, finished;
    int creating; /* a communicator creation that has not yet issued its vendor call */
    struct ism_nbc *next;
    _Alignas(16) unsigned char args[NBC_ARGS];
};

/* ThreadSanitizer follows each thread's stack: a coroutine's stack must be announced to it
 * as a fiber, and every switch made known, or its shadow stack goes wrong and a later
 * report crashes it (seen with the thread tests' MPI_Iallreduce). */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define FIBER_NEW() __tsan_create_fiber(0)
#define FIBER_FREE(f) __tsan_destroy_fiber(f)
#define FIBER_TO(f) __tsan_switch_to_fiber((f), 0)
#define FIBER_SELF() __tsan_get_current_fiber()
#else
#define FIBER_NEW() NULL
#define FIBER_FREE(f) ((void)(f))
#define FIBER_TO(f) ((void)(f))
#define FIBER_SELF() NULL
#endif

ism_nbc *ism_nbc_cur;
/* the program's context that resumed the running coroutine (any thread's, under the core
 * lock, which a coroutine never gives up: core/mt.c) */
static ucontext_t sched;
static void *sched_fiber;
static ism_nbc *head, *tail;
static int count;
int ism_nbc_next_creates;

static void body(unsigned lo, unsigned hi)
{
    ism_nbc *n = (ism_nbc *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
    n->rc = n->fn(n->args);
    n->finished = 1;
    FIBER_TO(sched_fiber);
    /* Resume the scheduler here rather than by returning to uc_link: under ThreadSanitizer
     * this function's own exit hook would run after the switch above and pop a frame off
     * the resuming thread's shadow stack (one per finished collective, until that stack
     * underflows and TSan crashes in its next stack capture) */
    setcontext(&sched);
    ism_die("setcontext failed finishing a nonblocking collective");
}

/* First pending collective on c, or NULL. */
static ism_nbc *first_on(const ism_comm *c)
{
    for (ism_nbc *n = head; n; n = n->next)
        if (n->comm == c)
            return n;
    return NULL;
}

static void unlink_nbc(ism_nbc *n)
{
    ism_nbc **p = &head, *prev = NULL;
    while (*p && *p != n) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p)
        return;
    *p = n->next;
    if (tail == n)
        tail = prev;
    count--;
}

/* Run n until it yields or finishes; on finishing, complete its request. */
static int step(ism_nbc *n)
{
    if (!n->started) {
        if (getcontext(&n->uc))
            ism_die("getcontext failed starting a nonblocking collective");
        n->uc.uc_stack.ss_sp = n->stack;
        n->uc.uc_stack.ss_size = NBC_STACK;
        n->uc.uc_link = &sched;
        uintptr_t p = (uintptr_t)n;
        makecontext(&n->uc, (void (*)(void))body, 2, (unsigned)(p & 0xffffffffu),
                    (unsigned)(p >> 32));
        n->started = 1;
        n->fiber = FIBER_NEW();
    }
    ism_nbc_cur = n;
    sched_fiber = FIBER_SELF();
    FIBER_TO(n->fiber);
    if (swapcontext(&sched, &n->uc))
        ism_die("swapcontext failed running a nonblocking collective");
    ism_nbc_cur = NULL;
    if (!n->finished)
        return 0;
    FIBER_FREE(n->fiber);
    unlink_nbc(n);
    ism_remote_add(-1);
    n->req->st.error = n->rc;
    ism_req_complete(n->req, n->rc);
    free(n->stack);
    free(n);
    return 1;
}

int ism_nbc_poll(void)
{
    int done = 0;
    if (ism_nbc_cur || !head)
        return 0;
    for (ism_nbc *n = head, *next; n; n = next) {
        next = n->next;
        if (first_on(n->comm) != n)
            continue; /* an earlier collective on the same communicator goes first */
        if (step(n)) {
            done++;
            next = head; /* n is gone and its successor may now run: start over */
        }
    }
    return done;
}

void ism_nbc_yield(void)
{
    ism_nbc *n = ism_nbc_cur;
    FIBER_TO(sched_fiber);
    if (swapcontext(&n->uc, &sched))
        ism_die("swapcontext failed in a nonblocking collective");
}

int ism_nbc_start(ism_comm *c, int (*fn)(void *), const void *args, size_t len, ism_req **out)
{
    int creates = ism_nbc_next_creates;
    ism_nbc_next_creates = 0;
    if (len > NBC_ARGS)
        return ISM_ERR_INTERN;
    if (count >= NBC_MAX)
        return ISM_ERR_NO_MEM; /* the ABI layer says why */
    ism_nbc *n = calloc(1, sizeof *n);
    ism_req *r = ism_req_alloc(ISM_RQ_NBC);
    void *stack = malloc(NBC_STACK);
    if (!n || !r || !stack) {
        free(n);
        free(stack);
        ism_req_free(r);
        return ISM_ERR_NO_MEM;
    }
    memcpy(n->args, args, len);
    n->fn = fn;
    n->comm = c;
    n->req = r;
    n->stack = stack;
    n->creating = creates;
    r->comm = c;
    r->st.source = ISM_ANY_SOURCE;
    r->st.tag = ISM_ANY_TAG;
    if (tail)
        tail->next = n;
    else
        head = n;
    tail = n;
    count++;
    /* the program's blocking calls must keep serving us: the fast paths that block in
     * the vendor are taken only when no cross-site work is pending */
    ism_remote_add(1);
    *out = r;
    if (first_on(c) == n && !ism_nbc_cur)
        step(n); /* as far as it goes without waiting */
    return 0;
}

void ism_nbc_drain(ism_comm *c)
{
    unsigned spins = 0;
    if (ism_nbc_cur)
        return; /* a collective's own inner calls */
    while (first_on(c)) {
        if (!ism_nbc_poll() && !ism_progress())
            ism_idle(&spins);
    }
}

int ism_nbc_pending(void) { return count; }

void ism_nbc_creation_issued(void)
{
    if (ism_nbc_cur)
        ism_nbc_cur->creating = 0;
}

/* Open MPI 4.1 lets a blocking communicator creation on parent P go ahead only while no
 * creation is pending on a parent with a lower vendor context id, spinning meanwhile in
 * the vendor's own progress, which does not run isthmus's coroutines. A member whose
 * MPI_Comm_idup coroutine on another communicator had not yet reached the vendor's
 * MPI_Comm_idup (it agrees on the context id first, queued behind the collectives started
 * before it) would then never issue it, while every member that had issued it waited
 * forever (tests/mpi/comm_idup.c part 3: idups of world, then MPI_Comm_split of a
 * duplicate, hung 1 run in 12). So before a blocking vendor creation on vendor
 * communicator v, the program's idups started so far on other communicators are driven
 * until each has issued its vendor call; the vendor's spin then completes them. Under
 * Open MPI alone an idup issues its vendor call at once, so this asks nothing more of the
 * program than the vendor does whenever every member started those idups before the
 * blocking creation. Idups of v itself are not waited for: Open MPI lets creations on one
 * parent proceed together, and MPICH's comm/comm_create_group_idup starts them in either
 * order (part 5). MPICH does not hold creations back, so there this returns at once. */
static int unissued_elsewhere(ism_vh v)
{
    for (ism_nbc *n = head; n; n = n->next)
        if (n->creating && n->comm->vcomm != v)
            return 1;
    return 0;
}

void ism_nbc_settle_creations(ism_vh v)
{
    unsigned spins = 0;
    if (ism_nbc_cur || strcmp(ism.be->vendor, "openmpi"))
        return;
    while (unissued_elsewhere(v))
        if (!ism_nbc_poll() && !ism_progress())
            ism_idle(&spins);
}

void *ism_nbc_cur_args(void) { return ism_nbc_cur ? ism_nbc_cur->args : NULL; }
