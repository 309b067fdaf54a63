/* cc.c: the registry of congestion controllers (see cc.h). */
#include <string.h>

#include "cc.h"

const ism_udp_cc_ops *ism_udp_cc_find(const char *name)
{
    if (name == NULL || strcmp(name, "bbr") == 0)
        return &ism_udp_cc_bbr;
    if (strcmp(name, "reno") == 0)
        return &ism_udp_cc_reno;
    return NULL;
}
