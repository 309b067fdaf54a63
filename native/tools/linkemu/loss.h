/* loss.h: packet loss models of one link direction: none, Bernoulli (independent loss
 * with probability p), and Gilbert-Elliott (a two-state Markov chain, Good and Bad, with
 * a loss probability per state; losses come in bursts while the chain sits in Bad).
 *
 * Gilbert-Elliott parameters, per packet: p = P(Good -> Bad), r = P(Bad -> Good),
 * loss_bad and loss_good = loss probability in each state. Stationary P(Bad) = p/(p+r),
 * mean loss = (p*loss_bad + r*loss_good)/(p+r); with loss_bad = 1 and loss_good = 0
 * (Gilbert's model) the mean loss burst is 1/r packets. */
#ifndef ISM_LE_LOSS_H
#define ISM_LE_LOSS_H

#include "prng.h"

typedef enum { ISM_LE_LOSS_NONE, ISM_LE_LOSS_BERNOULLI, ISM_LE_LOSS_GE } ism_le_loss_kind;

typedef struct {
    ism_le_loss_kind kind;
    double p;          /* Bernoulli: loss probability; GE: P(Good -> Bad) */
    double r;          /* GE: P(Bad -> Good) */
    double loss_bad;   /* GE: loss probability in Bad */
    double loss_good;  /* GE: loss probability in Good */
    int bad;           /* GE: current state (starts Good) */
} ism_le_loss;

void ism_le_loss_none(ism_le_loss *m);
void ism_le_loss_bernoulli(ism_le_loss *m, double p);
void ism_le_loss_ge(ism_le_loss *m, double p, double r, double loss_bad, double loss_good);

/* Decide the fate of one packet: 1 = drop it. Advances the model by one packet. */
int ism_le_loss_drop(ism_le_loss *m, ism_le_prng *g);

/* The model's long-run loss probability (for reports and tests). */
double ism_le_loss_mean(const ism_le_loss *m);

#endif
