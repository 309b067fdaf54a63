/* loss.c: the Bernoulli and Gilbert-Elliott loss models described in loss.h. */
#include "loss.h"

void ism_le_loss_none(ism_le_loss *m)
{
    *m = (ism_le_loss){.kind = ISM_LE_LOSS_NONE};
}

void ism_le_loss_bernoulli(ism_le_loss *m, double p)
{
    *m = (ism_le_loss){.kind = p > 0 ? ISM_LE_LOSS_BERNOULLI : ISM_LE_LOSS_NONE, .p = p};
}

void ism_le_loss_ge(ism_le_loss *m, double p, double r, double loss_bad, double loss_good)
{
    *m = (ism_le_loss){.kind = ISM_LE_LOSS_GE, .p = p, .r = r,
                       .loss_bad = loss_bad, .loss_good = loss_good};
}

int ism_le_loss_drop(ism_le_loss *m, ism_le_prng *g)
{
    switch (m->kind) {
    case ISM_LE_LOSS_BERNOULLI:
        return ism_le_prng_chance(g, m->p);
    case ISM_LE_LOSS_GE: {
        /* The packet sees the current state; then the chain takes one step. */
        int drop = ism_le_prng_chance(g, m->bad ? m->loss_bad : m->loss_good);
        if (m->bad)
            m->bad = !ism_le_prng_chance(g, m->r);
        else
            m->bad = ism_le_prng_chance(g, m->p);
        return drop;
    }
    case ISM_LE_LOSS_NONE:
        break;
    }
    return 0;
}

double ism_le_loss_mean(const ism_le_loss *m)
{
    switch (m->kind) {
    case ISM_LE_LOSS_BERNOULLI:
        return m->p;
    case ISM_LE_LOSS_GE:
        if (m->p + m->r <= 0)
            return m->loss_good;
        return (m->p * m->loss_bad + m->r * m->loss_good) / (m->p + m->r);
    case ISM_LE_LOSS_NONE:
        break;
    }
    return 0;
}
