/* fwd.c: the forwarding loop described in fwd.h. */
#include "fwd.h"

#include "conf.h"
#include "corrupt.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* Packets read from one device before the loop looks at the others and the clock. */
#define READ_BATCH 32

uint64_t ism_le_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int route(const ism_le_fwd *f, const unsigned char *pkt, size_t len, int src)
{
    if (len < 20 || (pkt[0] >> 4) != 4)
        return -1;
    uint32_t dst = (uint32_t)pkt[16] << 24 | (uint32_t)pkt[17] << 16 | (uint32_t)pkt[18] << 8 | pkt[19];
    if ((dst & 0xffffff00u) != f->subnet)
        return -1;
    int j = (int)(dst & 0xff) - 1;
    if (j < 0 || j >= f->nsites || j == src)
        return -1;
    return j;
}

static void admit(ism_le_fwd *f, uint32_t slot, int src, uint64_t now)
{
    ism_le_pkt_meta *m = &f->q.meta[slot];
    int dst = route(f, ism_le_pktq_buf(&f->q, slot), m->len, src);
    if (dst < 0) {
        f->unroutable++;
        ism_le_pktq_release(&f->q, slot);
        return;
    }
    int li = src * f->nsites + dst;
    ism_le_link *l = &f->links[li];
    uint64_t rel[2];
    int n = ism_le_link_admit(l, now, m->len, rel);
    m->dst = (uint16_t)dst;
    m->link = (uint16_t)li;
    if (n == 0) {
        ism_le_pktq_release(&f->q, slot);
        return;
    }
    ism_le_pktq_push(&f->q, slot, rel[0]);
    l->st.queued++;
    if (n == 2) {
        int64_t copy = ism_le_pktq_alloc(&f->q);
        if (copy < 0) {
            l->st.drop_pool++;
            return;
        }
        memcpy(ism_le_pktq_buf(&f->q, (uint32_t)copy), ism_le_pktq_buf(&f->q, slot), m->len);
        f->q.meta[copy] = *m;
        ism_le_pktq_push(&f->q, (uint32_t)copy, rel[1]);
        l->st.queued++;
    }
    /* after the duplicate was taken: one copy carries the flipped bit */
    if (ism_le_link_corrupts(l) && ism_le_corrupt(ism_le_pktq_buf(&f->q, slot), m->len, &l->rng))
        l->st.corrupted++;
}

/* One command line (fwd.h). */
static void command(ism_le_fwd *f, char *line)
{
    unsigned i, j;
    int off = 0;
    char err[512];
    if (sscanf(line, "link %u:%u:%n", &i, &j, &off) != 2 || off == 0) {
        printf("error link: expected 'link I:J:SPEC', got '%.200s'\n", line);
    } else if (i >= (unsigned)f->nsites || j >= (unsigned)f->nsites || i == j) {
        printf("error link: no direction %u -> %u between %d sites\n", i, j, f->nsites);
    } else {
        ism_le_link_conf c;
        ism_le_link_conf_default(&c);
        if (ism_le_conf_parse(line + off, &c, err, sizeof err) < 0) {
            printf("error link: %s\n", err);
        } else {
            ism_le_link_reconf(&f->links[i * (unsigned)f->nsites + j], &c, ism_le_now_ns());
            printf("ok link %u:%u\n", i, j);
        }
    }
    fflush(stdout);
}

/* Read what the control descriptor has; run every whole line. -1 at its end. */
static int control(ism_le_fwd *f)
{
    ssize_t n = read(f->ctl_fd, f->ctl_buf + f->ctl_len, sizeof f->ctl_buf - 1 - f->ctl_len);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0)
        return -1;
    f->ctl_len += (size_t)n;
    f->ctl_buf[f->ctl_len] = '\0';
    char *start = f->ctl_buf, *nl;
    while ((nl = strchr(start, '\n')) != NULL) {
        *nl = '\0';
        if (nl > start && nl[-1] == '\r')
            nl[-1] = '\0';
        if (*start)
            command(f, start);
        start = nl + 1;
    }
    f->ctl_len -= (size_t)(start - f->ctl_buf);
    memmove(f->ctl_buf, start, f->ctl_len);
    if (f->ctl_len == sizeof f->ctl_buf - 1) { /* a line longer than the buffer */
        printf("error link: command longer than %zu characters\n", sizeof f->ctl_buf - 2);
        fflush(stdout);
        f->ctl_len = 0;
    }
    return 0;
}

/* Read up to READ_BATCH packets from site src. Returns -1 on a fatal read error. */
static int drain(ism_le_fwd *f, int src)
{
    for (int k = 0; k < READ_BATCH; k++) {
        int64_t slot = ism_le_pktq_alloc(&f->q);
        unsigned char scratch[64];
        unsigned char *buf = slot >= 0 ? ism_le_pktq_buf(&f->q, (uint32_t)slot) : scratch;
        size_t cap = slot >= 0 ? f->q.bufsize : sizeof scratch;
        ssize_t n = read(f->tun_fd[src], buf, cap);
        if (n < 0) {
            if (slot >= 0)
                ism_le_pktq_release(&f->q, (uint32_t)slot);
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            fprintf(stderr, "isthmus-linkemu: reading the device of site %d: %s\n", src,
                    strerror(errno));
            return -1;
        }
        if (slot < 0) {
            /* Pool exhausted: the packet is read (so the device drains) and dropped. */
            int dst = route(f, buf, (size_t)n, src);
            if (dst >= 0) {
                f->links[src * f->nsites + dst].st.in++;
                f->links[src * f->nsites + dst].st.drop_pool++;
            } else {
                f->unroutable++;
            }
            continue;
        }
        f->q.meta[slot].len = (uint32_t)n;
        admit(f, (uint32_t)slot, src, ism_le_now_ns());
    }
    return 0;
}

static void deliver_due(ism_le_fwd *f)
{
    const ism_le_pktq_entry *e;
    uint64_t now = ism_le_now_ns();
    while ((e = ism_le_pktq_peek(&f->q)) != NULL && e->release_ns <= now) {
        uint64_t late = now - e->release_ns;
        f->late_sum_ns += late;
        f->late_n++;
        if (late > f->late_max_ns)
            f->late_max_ns = late;
        uint32_t slot = ism_le_pktq_pop(&f->q);
        ism_le_pkt_meta *m = &f->q.meta[slot];
        ism_le_link *l = &f->links[m->link];
        l->st.queued--;
        if (write(f->tun_fd[m->dst], ism_le_pktq_buf(&f->q, slot), m->len) == (ssize_t)m->len) {
            l->st.delivered++;
            l->st.bytes_delivered += m->len;
        } else {
            f->write_errors++;
        }
        ism_le_pktq_release(&f->q, slot);
        now = ism_le_now_ns();
    }
}

static void arm(int tfd, uint64_t at_ns, uint64_t *armed)
{
    if (*armed == at_ns)
        return;
    struct itimerspec its = {0};
    if (at_ns) {
        its.it_value.tv_sec = (time_t)(at_ns / 1000000000ull);
        its.it_value.tv_nsec = (long)(at_ns % 1000000000ull);
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    *armed = at_ns;
}

void ism_le_fwd_print_stats(const ism_le_fwd *f, FILE *out)
{
    fprintf(out, "{\"unroutable\": %llu, \"write_errors\": %llu, \"late_mean_ns\": %.0f, "
            "\"late_max_ns\": %llu, \"spun_ns\": %llu, \"wake_late_mean_ns\": %.0f, "
            "\"lead_ns\": %llu, \"links\": [",
            (unsigned long long)f->unroutable, (unsigned long long)f->write_errors,
            f->late_n ? (double)f->late_sum_ns / (double)f->late_n : 0.0,
            (unsigned long long)f->late_max_ns, (unsigned long long)f->spun_ns,
            f->lead.mean_ns, (unsigned long long)ism_le_lead_ns(&f->lead));
    int first = 1;
    for (int i = 0; i < f->nsites; i++) {
        for (int j = 0; j < f->nsites; j++) {
            if (i == j)
                continue;
            const ism_le_link_stats *s = &f->links[i * f->nsites + j].st;
            fprintf(out, "%s{\"from\": %d, \"to\": %d, \"in\": %llu, \"delivered\": %llu, "
                    "\"dup\": %llu, \"reordered\": %llu, \"drop_loss\": %llu, \"drop_queue\": %llu, "
                    "\"drop_mtu\": %llu, \"drop_pool\": %llu, \"corrupted\": %llu, \"bytes_in\": %llu, "
                    "\"bytes_delivered\": %llu, \"queued\": %llu}", first ? "" : ", ", i, j,
                    (unsigned long long)s->in, (unsigned long long)s->delivered,
                    (unsigned long long)s->dup, (unsigned long long)s->reordered,
                    (unsigned long long)s->drop_loss,
                    (unsigned long long)s->drop_queue, (unsigned long long)s->drop_mtu,
                    (unsigned long long)s->drop_pool, (unsigned long long)s->corrupted,
                    (unsigned long long)s->bytes_in,
                    (unsigned long long)s->bytes_delivered, (unsigned long long)s->queued);
            first = 0;
        }
    }
    fprintf(out, "]}\n");
    fflush(out);
}

int ism_le_fwd_run(ism_le_fwd *f)
{
    int rc = -1;
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGUSR1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (ep < 0 || tfd < 0 || sfd < 0) {
        fprintf(stderr, "isthmus-linkemu: epoll/timerfd/signalfd: %s\n", strerror(errno));
        goto out;
    }
    /* Event ids: 0..nsites-1 are the sites' devices, then the timer, then signals. */
    int added = 0;
    for (int i = 0; i < f->nsites + 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN};
        int fd = i < f->nsites ? f->tun_fd[i] : i == f->nsites ? tfd : sfd;
        ev.data.u32 = i < f->nsites ? (uint32_t)i : ISM_LE_MAX_SITES + (uint32_t)(i - f->nsites);
        added += epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
    }
    if (added != f->nsites + 2) {
        fprintf(stderr, "isthmus-linkemu: epoll_ctl: %s\n", strerror(errno));
        goto out;
    }
    /* Commands, if the control descriptor can be polled (not /dev/null, not a file). */
    struct epoll_event cev = {.events = EPOLLIN, .data.u32 = ISM_LE_MAX_SITES + 2};
    if (f->ctl_fd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, f->ctl_fd, &cev) < 0)
        f->ctl_fd = -1;

    uint64_t armed = 0;
    for (;;) {
        deliver_due(f);
        /* Sleep until `lead` before the next release, then poll without sleeping, so the
         * release is not late by a timer's wakeup latency and arrivals are still read
         * (and timestamped) while we wait. */
        const ism_le_pktq_entry *next = ism_le_pktq_peek(&f->q);
        int timeout = -1;
        uint64_t now = ism_le_now_ns(), lead = ism_le_lead_ns(&f->lead);
        if (next && next->release_ns <= now + lead)
            timeout = 0;
        else
            arm(tfd, next ? next->release_ns - lead : 0, &armed);
        uint64_t sleeping_for = timeout < 0 ? armed : 0;
        struct epoll_event evs[ISM_LE_MAX_SITES + 3];
        int n = epoll_wait(ep, evs, ISM_LE_MAX_SITES + 3, timeout);
        if (timeout == 0)
            f->spun_ns += ism_le_now_ns() - now;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "isthmus-linkemu: epoll_wait: %s\n", strerror(errno));
            goto out;
        }
        for (int k = 0; k < n; k++) {
            uint32_t id = evs[k].data.u32;
            if (id < ISM_LE_MAX_SITES) {
                if (drain(f, (int)id) < 0)
                    goto out;
            } else if (id == ISM_LE_MAX_SITES) {
                uint64_t ticks, woke = ism_le_now_ns();
                if (read(tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                    goto out;
                if (sleeping_for && woke >= sleeping_for)
                    ism_le_lead_sample(&f->lead, woke - sleeping_for);
                armed = 0;
            } else if (id == ISM_LE_MAX_SITES + 2) {
                if (control(f) < 0) { /* the controller went away: links stay as they are */
                    epoll_ctl(ep, EPOLL_CTL_DEL, f->ctl_fd, NULL);
                    f->ctl_fd = -1;
                }
            } else {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGUSR1) {
                        ism_le_fwd_print_stats(f, stdout);
                    } else {
                        rc = 0;
                        goto out;
                    }
                }
            }
        }
    }
out:
    if (ep >= 0)
        close(ep);
    if (tfd >= 0)
        close(tfd);
    if (sfd >= 0)
        close(sfd);
    return rc;
}
