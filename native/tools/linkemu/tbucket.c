/* tbucket.c: the token bucket with a bounded FIFO queue described in tbucket.h. */
#include "tbucket.h"

void ism_le_tbucket_init(ism_le_tbucket *tb, double rate_Bps, double depth_bytes,
                         double limit_bytes, uint64_t now_ns)
{
    tb->rate_Bps = rate_Bps > 0 ? rate_Bps : 0;
    tb->depth = depth_bytes >= 1 ? depth_bytes : 1;
    tb->limit = limit_bytes >= 1 ? limit_bytes : 1;
    tb->tokens = tb->depth;
    tb->last_ns = now_ns;
}

static void refill(ism_le_tbucket *tb, uint64_t now_ns)
{
    if (now_ns > tb->last_ns) {
        tb->tokens += tb->rate_Bps * (double)(now_ns - tb->last_ns) * 1e-9;
        if (tb->tokens > tb->depth)
            tb->tokens = tb->depth;
        tb->last_ns = now_ns;
    }
}

double ism_le_tbucket_backlog(ism_le_tbucket *tb, uint64_t now_ns)
{
    if (tb->rate_Bps == 0)
        return 0;
    refill(tb, now_ns);
    return tb->tokens < 0 ? -tb->tokens : 0;
}

int ism_le_tbucket_admit(ism_le_tbucket *tb, uint64_t now_ns, uint32_t bytes,
                         uint64_t *depart_ns)
{
    if (tb->rate_Bps == 0) {
        *depart_ns = now_ns;
        return 1;
    }
    refill(tb, now_ns);
    double after = tb->tokens - (double)bytes;
    if (after < 0 && -after > tb->limit)
        return 0;
    tb->tokens = after;
    /* The packet's last byte leaves when the debt it ends is repaid. */
    double wait_ns = after < 0 ? -after / tb->rate_Bps * 1e9 : 0;
    *depart_ns = now_ns + (uint64_t)(wait_ns + 0.5);
    return 1;
}
