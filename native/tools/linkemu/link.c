/* link.c: composition of the per-direction models (see link.h). */
#include "link.h"

void ism_le_link_conf_default(ism_le_link_conf *c)
{
    *c = (ism_le_link_conf){.queue_bytes = 1 << 20, .burst_bytes = 1500,
                            .loss_kind = ISM_LE_LOSS_NONE, .mtu = 1500};
}

static void models_init(ism_le_link *l, const ism_le_link_conf *c, uint64_t now_ns)
{
    l->conf = *c;
    switch (c->loss_kind) {
    case ISM_LE_LOSS_BERNOULLI:
        ism_le_loss_bernoulli(&l->loss, c->loss_p);
        break;
    case ISM_LE_LOSS_GE:
        ism_le_loss_ge(&l->loss, c->loss_p, c->ge_r, c->ge_loss_bad, c->ge_loss_good);
        break;
    case ISM_LE_LOSS_NONE:
        ism_le_loss_none(&l->loss);
        break;
    }
    ism_le_tbucket_init(&l->tb, c->rate_Bps, c->burst_bytes, c->queue_bytes, now_ns);
    ism_le_delay_init(&l->delay, c->delay_ns, c->jitter_ns, c->reorder, c->reorder_p);
}

void ism_le_link_init(ism_le_link *l, const ism_le_link_conf *c, uint64_t seed, uint64_t now_ns)
{
    ism_le_prng_seed(&l->rng, seed);
    models_init(l, c, now_ns);
    l->st = (ism_le_link_stats){0};
}

void ism_le_link_reconf(ism_le_link *l, const ism_le_link_conf *c, uint64_t now_ns)
{
    models_init(l, c, now_ns);
}

int ism_le_link_corrupts(ism_le_link *l)
{
    return l->conf.corrupt > 0 && ism_le_prng_chance(&l->rng, l->conf.corrupt);
}

int ism_le_link_admit(ism_le_link *l, uint64_t now_ns, uint32_t bytes, uint64_t release_ns[2])
{
    l->st.in++;
    l->st.bytes_in += bytes;
    if (bytes > l->conf.mtu) {
        l->st.drop_mtu++;
        return 0;
    }
    if (ism_le_loss_drop(&l->loss, &l->rng)) {
        l->st.drop_loss++;
        return 0;
    }
    int copies = 1 + ism_le_prng_chance(&l->rng, l->conf.dup);
    int out = 0;
    for (int c = 0; c < copies; c++) {
        uint64_t sent;
        if (!ism_le_tbucket_admit(&l->tb, now_ns, bytes, &sent)) {
            l->st.drop_queue++;
            continue;
        }
        release_ns[out] = ism_le_delay_release(&l->delay, &l->rng, sent);
        if (release_ns[out] == sent && l->delay.delay_ns > 0 && l->delay.reorder_p > 0)
            l->st.reordered++; /* skipped the delay: overtakes what is in flight */
        out++;
    }
    if (out == 2)
        l->st.dup++;
    return out;
}
