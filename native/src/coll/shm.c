/* shm.c: the shared-memory channels of a communicator's members at one site: one
 * segment with a channel (shm_ring.c) for each ordered pair, mapped by every member at
 * the first schedule that runs inside the site, and unmapped with the communicator.
 *
 * Mapping is collective over the site's members, as the vendor duplicate it runs on
 * (vcoll, made just before): the first member creates the segment under a fresh name
 * and sends the name with the vendor's broadcast; the others open it; a vendor
 * allreduce then tells everyone whether every member has it, and the name is unlinked,
 * so nothing is left in /dev/shm even if the job dies later. The segment's pages are
 * reserved when it is made (posix_fallocate), so a full /dev/shm means no channels,
 * not a SIGBUS in the middle of a collective. If any member failed (no
 * /dev/shm, too little room) or has ISTHMUS_COLL_SHM=0, nobody uses the channels: the
 * choice of channel must be the same at both ends of every message.
 *
 * Only members on one node may share the segment: the first member sends its node's
 * name (the vendor's processor name, as MPI_COMM_TYPE_SHARED uses) with the segment's,
 * and a member on another node counts as failed without opening anything. A site of
 * several nodes then runs its collectives over the vendor (its TCP transport between
 * nodes), even where the nodes happen to see one /dev/shm (emulated nodes on one host),
 * and a segment name never resolves to an unrelated segment on another node's /dev/shm.
 */
#define _POSIX_C_SOURCE 200809L /* shm_open, ftruncate */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll.h"


static int shm_wanted(void)
{
    return ism_core_knob(ISM_K_COLL_SHM, 1) != 0;
}

static void *map_new(char *name, size_t n, size_t len)
{
    static unsigned serial;
    snprintf(name, n, "/isthmus-coll-%ld-%u", (long)getpid(),
             __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED));
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return NULL;
    /* the pages reserved now: a tmpfs that fills up later (a container's small
     * /dev/shm, many communicators) would otherwise kill us with SIGBUS at a write */
    void *p = ftruncate(fd, (off_t)len) == 0 && posix_fallocate(fd, 0, (off_t)len) == 0
                  ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(name);
        return NULL;
    }
    return p; /* zero-filled: every head and tail starts at 0 */
}

static void *map_old(const char *name, size_t len)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

int ism_coll_shm_get(ism_comm *c, ism_coll_shm **out)
{
    ism_coll_comm *st = ism_coll_state(c);
    *out = NULL;
    if (!st)
        return ISM_ERR_NO_MEM;
    if (st->shm_tried) {
        *out = st->shm;
        return 0;
    }
    int n = c->lsize, me = c->lrank;
    if (n < 2 || n > ISM_SHM_MEMBERS || !c->vcoll) { /* the same at every member */
        st->shm_tried = 1;
        return 0;
    }
    size_t len = (size_t)n * (size_t)n * sizeof(ism_shm_chan);
    struct {
        char name[64];
        char node[sizeof ism.procname];
    } m;
    char *name = m.name;
    memset(&m, 0, sizeof m);
    void *p = NULL;
    int fail = !shm_wanted();
    if (me == 0) {
        memcpy(m.node, ism.procname, sizeof m.node - 1);
        if (!fail && !(p = map_new(name, sizeof m.name, len)))
            name[0] = 0;
    }
    ism_vh r = 0;
    int rc = ism_vwait(ism.be->ibcast(&m, (int)sizeof m, ISM_DT_BYTE->v, 0, c->vcoll, &r), &r);
    if (!rc && me != 0 && strncmp(m.node, ism.procname, sizeof m.node - 1) != 0)
        fail = 1; /* another node: its /dev/shm is not ours, whatever it holds */
    if (!rc && me != 0 && !fail && name[0])
        p = map_old(name, len);
    ism_coll_shm *s = calloc(1, sizeof *s);
    uint64_t *seq = calloc(2 * (size_t)n, sizeof *seq);
    fail = fail || !p || !s || !seq; /* decided before anyone commits to the channels */
    int any_fail = 1;
    if (!rc) {
        r = 0;
        rc = ism_vwait(ism.be->iallreduce(&fail, &any_fail, 1, ISM_DT_INT->v, ISM_OP_MAX->v,
                                          c->vcoll, &r),
                       &r);
    }
    if (me == 0 && name[0])
        shm_unlink(name); /* everyone who will ever open it has */
    if (rc || any_fail) {
        if (p)
            munmap(p, len);
        free(s);
        free(seq);
        st->shm_tried = !rc;
        return rc;
    }
    s->n = n;
    s->me = me;
    s->ch = p;
    s->len = len;
    s->seq = seq;
    st->shm = s;
    st->shm_tried = 1;
    *out = s;
    return 0;
}

void ism_coll_shm_free(ism_coll_shm *s)
{
    if (!s)
        return;
    munmap(s->ch, s->len);
    free(s->seq);
    free(s);
}
