/* probe.h: isthmus-linkprobe's parts: the server (server.c) and the two client
 * measurements (rtt.c, tput.c), sharing the authenticated connection set-up (conn.c). */
#ifndef ISM_LINKPROBE_PROBE_H
#define ISM_LINKPROBE_PROBE_H

#include <stdint.h>

#include "auth.h"
#include "proto.h"

typedef struct lp_opts {
    char host[256];
    int port;
    ism_auth_key key;
    /* rtt */
    uint32_t size;
    int count, warmup;
    int interval_us;
    /* tput */
    int streams;
    uint32_t window;
    char cc[32];
    double duration, omit;
} lp_opts;

int64_t lp_now_ns(void);
/* Connect, authenticate and send the HELLO; returns the fd or -1 with err. */
int lp_connect(const lp_opts *o, const lp_hello *h, char *err, size_t errlen);
int lp_serve(const char *host, int port, const ism_auth_key *key);
int lp_rtt(const lp_opts *o);
int lp_tput(const lp_opts *o);

#endif
