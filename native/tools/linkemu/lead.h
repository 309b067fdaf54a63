/* lead.h: how long before a packet's release the forwarder stops sleeping and polls.
 *
 * A timer wakeup on a VM comes late by tens of microseconds, so the forwarder arms its
 * timer `lead` early and polls the rest of the way. A fixed lead of 50 us spun away up to
 * half a core at 1 Gbit/s (a release every 72 us), CPU the emulated job then lacked
 * (bench/notebook/link-emulator.md, "Link emulator: polling mode"). The adaptive lead follows the
 * measured lateness of the timer wakeups: their smoothed mean plus twice their smoothed
 * deviation plus 2 us (gains 1/8 and 1/4, as TCP's RTO follows the RTT), never more than
 * the configured maximum, and the maximum until 8 wakeups have been measured. */
#ifndef ISM_LE_LEAD_H
#define ISM_LE_LEAD_H

#include <stdint.h>

typedef struct {
    uint64_t max_ns;     /* the most the forwarder polls before a release (--spin-us) */
    int adaptive;        /* 0: always max_ns */
    double mean_ns, dev_ns;
    uint64_t samples;
} ism_le_lead;

void ism_le_lead_init(ism_le_lead *l, uint64_t max_ns, int adaptive);
/* A timer wakeup came `late_ns` after the time the timer was armed for. */
void ism_le_lead_sample(ism_le_lead *l, uint64_t late_ns);
uint64_t ism_le_lead_ns(const ism_le_lead *l);

#endif
