/* exec.c: the executor. It runs one member's schedule on isthmus point-to-point (the
 * communicator's collective context, so no message of a collective ever matches a
 * program's receive) and applies reductions to packed bytes.
 *
 * A round's actions run in order: sends and receives are posted, reductions and copies
 * done at once; then the executor waits for everything the round posted, in isthmus's
 * progress loop, whose idle step yields to the program inside a nonblocking collective
 * (core/nbc.c). So one schedule serves the blocking, nonblocking and persistent forms,
 * and a rank waiting here keeps serving its gateway. Peers at this site are reached on
 * the communicator's second vendor communicator (vcoll, made by the caller), peers at
 * other sites through the gateways.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define MSG_MAX ((int64_t)1 << 30) /* longer sends and receives travel in pieces */

/* ---- reductions on packed bytes ---- */

ism_dt *ism_coll_basic_of(ism_dt *dt)
{
    if (dt->contig)
        return dt;
    const ism_tmap *m = ism_dt_map(dt);
    if (!m || m->nrun < 1)
        return NULL;
    int k = m->run[0].kind;
    for (int64_t i = 1; i < m->nrun; i++)
        if (m->run[i].kind != k)
            return NULL;
    const ism_kind *ki = ism_kind_info(k);
    if (!ki || !ki->size || k < 0 || k >= ISM_DT_COUNT || !ism.be->dt[k])
        return NULL;
    ism_dt *b = &ism_dt_table[k];
    return b->contig && b->size == ki->size ? b : NULL;
}

void ism_coll_redop_init(ism_coll_redop *r, ism_op *op, ism_dt *dt)
{
    memset(r, 0, sizeof *r);
    r->op = op;
    r->dt = dt;
    if (op)
        r->basic = op->user ? (dt->contig ? dt : NULL) : ism_coll_basic_of(dt);
}

void ism_coll_redop_free(ism_coll_redop *r)
{
    free(r->raw[0]);
    free(r->raw[1]);
    r->raw[0] = r->raw[1] = NULL;
    r->scrlen = 0;
}

int ism_coll_apply(ism_coll_redop *r, const void *in, void *inout, int64_t len)
{
    ism_dt *b = r->basic;
    if (b) {
        const char *i = in;
        char *io = inout;
        for (int64_t n = len / b->size; n > 0;) {
            int k = n > (1 << 28) ? 1 << 28 : (int)n;
            int rc = ism_op_apply(r->op, i - b->contig_off, io - b->contig_off, k, b);
            if (rc)
                return rc;
            i += (int64_t)k * b->size;
            io += (int64_t)k * b->size;
            n -= k;
        }
        return 0;
    }
    /* any other type: both operands into the type's own layout, the op, and back */
    int64_t n = len / r->dt->size;
    if (n > r->scrlen) {
        ism_coll_redop_free(r);
        for (int j = 0; j < 2; j++)
            if (!(r->raw[j] = ism_dt_elems(r->dt, (size_t)n, &r->scr[j]))) {
                ism_coll_redop_free(r);
                return ISM_ERR_NO_MEM;
            }
        r->scrlen = n;
    }
    ism_dt_unpack(r->dt, in, r->scr[0], (int)n);
    ism_dt_unpack(r->dt, inout, r->scr[1], (int)n);
    int rc = ism_op_apply(r->op, r->scr[0], r->scr[1], (int)n, r->dt);
    if (!rc)
        ism_dt_pack(r->dt, r->scr[1], (int)n, inout);
    return rc;
}

/* ---- posting and waiting ---- */

typedef struct reqset {
    ism_req **r;
    int64_t *want; /* bytes a receive must bring, -1 for a send */
    int n, cap;
} reqset;

static int reqs_add(reqset *q, ism_req *r, int64_t want)
{
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 16;
        ism_req **nr = realloc(q->r, sizeof *nr * (size_t)cap);
        int64_t *nw = nr ? realloc(q->want, sizeof *nw * (size_t)cap) : NULL;
        if (nr)
            q->r = nr;
        if (!nr || !nw)
            return ISM_ERR_NO_MEM;
        q->want = nw;
        q->cap = cap;
    }
    q->r[q->n] = r;
    q->want[q->n++] = want;
    return 0;
}

static int post(ism_comm *c, int peer, char *buf, int64_t len, int is_send, reqset *q)
{
    int64_t o = 0;
    do {
        int l = (int)(len - o < MSG_MAX ? len - o : MSG_MAX);
        ism_req *r = NULL;
        int rc = is_send ? ism_isend(buf + o, l, ISM_DT_BYTE, peer, TAG_SCHED, c, c->ctx + 1,
                                     ISM_MODE_STD, &r)
                         : ism_irecv(buf + o, l, ISM_DT_BYTE, peer, TAG_SCHED, c, c->ctx + 1, &r);
        if (rc)
            return rc;
        if ((rc = reqs_add(q, r, is_send ? -1 : l))) {
            ism_wait_free(r);
            return rc;
        }
        o += l;
    } while (o < len);
    return 0;
}

/* Every request of the round to completion (also after an error: their buffers are
 * about to be freed); the first error, or a receive that brought the wrong size. */
static int wait_all(reqset *q)
{
    unsigned spins = 0;
    int left = q->n, rc = 0;
    while (left) {
        int moved = 0;
        for (int i = 0; i < q->n; i++) {
            if (!q->r[i])
                continue;
            int flag = 0;
            ism_status st;
            memset(&st, 0, sizeof st);
            int e = ism_req_test(q->r[i], &flag, &st);
            if (!flag && !(e && q->r[i]->kind == ISM_RQ_VENDOR))
                continue;
            if (!e && q->want[i] >= 0 && (int64_t)st.bytes != q->want[i])
                e = ISM_ERR_TRUNCATE; /* both ends build the same sizes: a broken schedule */
            rc = rc ? rc : e;
            ism_req_free(q->r[i]);
            q->r[i] = NULL;
            left--;
            moved = 1;
        }
        if (left && !moved && !ism_progress())
            ism_idle(&spins);
    }
    q->n = 0;
    return rc;
}

/* ---- the executor ---- */

static int overlaps(const void *a, int64_t la, const void *b, int64_t lb)
{
    const char *x = a, *y = b;
    return la > 0 && lb > 0 && x < y + lb && y < x + la;
}

int ism_coll_exec(const ism_coll_sched *s, const ism_coll_view *v, ism_comm *c, const void *in,
                  void *out, ism_coll_redop *r)
{
    char *slot[ISM_SL_MAX] = {0};
    int64_t at[ISM_SL_MAX] = {0}, need = 0;
    int stage_in = in && out && !s->in_place_ok &&
                   overlaps(in, s->slot[ISM_SL_IN], out, s->slot[ISM_SL_OUT]);
    int temp_out = !out && s->slot[ISM_SL_OUT] > 0;
    /* one allocation for the temporaries, each 64-byte aligned */
    for (int k = 0; k < s->nslot; k++) {
        int mine = k >= ISM_SL_TMP || (k == ISM_SL_IN && stage_in) ||
                   (k == ISM_SL_OUT && temp_out);
        if (!mine)
            continue;
        at[k] = need;
        need += (s->slot[k] + 63) & ~(int64_t)63;
    }
    char *arena = need ? malloc((size_t)need) : NULL;
    if (need && !arena)
        return ISM_ERR_NO_MEM;
    for (int k = ISM_SL_TMP; k < s->nslot; k++)
        slot[k] = arena + at[k];
    slot[ISM_SL_IN] = stage_in ? arena + at[ISM_SL_IN] : (char *)(uintptr_t)in;
    slot[ISM_SL_OUT] = temp_out ? arena + at[ISM_SL_OUT] : out;
    if (stage_in)
        memcpy(slot[ISM_SL_IN], in, (size_t)s->slot[ISM_SL_IN]);

    reqset q = {0};
    int rc = 0;
    for (int rd = 0; rd < s->nround && !rc; rd++) {
        int lo = rd ? s->rend[rd - 1] : 0, hi = s->rend[rd];
        for (int i = lo; i < hi && !rc; i++) {
            const ism_coll_act *x = &s->act[i];
            switch (x->kind) {
            case ISM_CA_SEND:
            case ISM_CA_RECV:
                rc = post(c, v->members[x->peer], slot[x->a] + x->aoff, x->len,
                          x->kind == ISM_CA_SEND, &q);
                break;
            case ISM_CA_RED:
                rc = ism_coll_apply(r, slot[x->a] + x->aoff, slot[x->b] + x->boff, x->len);
                break;
            case ISM_CA_COPY:
                memmove(slot[x->b] + x->boff, slot[x->a] + x->aoff, (size_t)x->len);
                break;
            }
        }
        int rc2 = wait_all(&q);
        rc = rc ? rc : rc2;
    }
    free(q.r);
    free(q.want);
    free(arena);
    return rc;
}
