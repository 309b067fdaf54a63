/* prio.c: parsing and applying thread scheduling priorities (see prio.h). */
#include "prio.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int ism_prio_parse(const char *s, int *policy, int *value)
{
    char *end;
    long v;
    *value = 0;
    if (strcmp(s, "normal") == 0) {
        *policy = SCHED_OTHER;
        return 0;
    }
    const char *colon = strchr(s, ':');
    if (!colon)
        return -1;
    errno = 0;
    v = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || errno)
        return -1;
    if (strncmp(s, "fifo:", 5) == 0 || strncmp(s, "rr:", 3) == 0) {
        *policy = s[0] == 'f' ? SCHED_FIFO : SCHED_RR;
        if (v < sched_get_priority_min(*policy) || v > sched_get_priority_max(*policy))
            return -1;
    } else if (strncmp(s, "nice:", 5) == 0) {
        *policy = SCHED_OTHER;
        if (v < -20 || v > 19)
            return -1;
    } else {
        return -1;
    }
    *value = (int)v;
    return 0;
}

int ism_prio_apply(int policy, int value)
{
    struct sched_param sp = {.sched_priority = policy == SCHED_OTHER ? 0 : value};
    if (sched_setscheduler(0, policy, &sp) != 0)
        return errno;
    if (policy == SCHED_OTHER && setpriority(PRIO_PROCESS, 0, value) != 0)
        return errno;
    return 0;
}

int ism_prio_set(const char *who, const char *spec)
{
    int policy, value;
    if (ism_prio_parse(spec, &policy, &value) != 0) {
        fprintf(stderr, "%s: --priority '%s': expected %s\n", who, spec, ISM_PRIO_SYNTAX);
        return -1;
    }
    int e = ism_prio_apply(policy, value);
    if (e) {
        fprintf(stderr, "%s: --priority %s: %s%s\n", who, spec, strerror(e),
                e == EPERM ? " (real-time priorities and negative nice values need root or CAP_SYS_NICE)" : "");
        return -1;
    }
    return 0;
}
