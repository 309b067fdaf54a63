/* prio.h: scheduling priority of the calling thread, from "fifo:N", "rr:N", "nice:N" or
 * "normal" (used by the injector, and by probes that must not share their cpu with
 * ordinary processes). On Linux both calls below act on the calling thread only. */
#ifndef ISM_NOISE_PRIO_H
#define ISM_NOISE_PRIO_H

/* Parse a priority; 0, or -1 when malformed or out of range. Pure, for tests. */
int ism_prio_parse(const char *s, int *policy, int *value);
/* Apply a parsed priority to the calling thread; 0 or an errno value. */
int ism_prio_apply(int policy, int value);
/* Apply one given as text; prints "<who>: --priority ...: reason" and returns -1 on error. */
int ism_prio_set(const char *who, const char *spec);

#define ISM_PRIO_SYNTAX "fifo:1-99, rr:1-99, nice:-20..19 or normal"

#endif
