/* lead.c: the forwarder's adaptive polling lead (lead.h). */
#include "lead.h"

#define WARMUP_SAMPLES 8
#define MARGIN_NS 2000.0

void ism_le_lead_init(ism_le_lead *l, uint64_t max_ns, int adaptive)
{
    *l = (ism_le_lead){.max_ns = max_ns, .adaptive = adaptive};
}

void ism_le_lead_sample(ism_le_lead *l, uint64_t late_ns)
{
    double x = (double)late_ns;
    if (l->samples++ == 0) {
        l->mean_ns = x;
        l->dev_ns = x / 2;
        return;
    }
    double d = x - l->mean_ns;
    l->dev_ns += ((d < 0 ? -d : d) - l->dev_ns) / 4;
    l->mean_ns += d / 8;
}

uint64_t ism_le_lead_ns(const ism_le_lead *l)
{
    if (!l->adaptive || l->samples < WARMUP_SAMPLES)
        return l->max_ns;
    double lead = l->mean_ns + 2 * l->dev_ns + MARGIN_NS;
    return lead < (double)l->max_ns ? (uint64_t)lead : l->max_ns;
}
