/* admit.c: the pending connections' budget and whom a newcomer displaces (admit.h). A
 * list under one mutex: it holds at most twice the budget (ism_admit_wait_room), so a
 * linear scan costs less than the accept it follows. */
#define _GNU_SOURCE
#include "admit.h"

#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

void ism_admit_init(ism_admit *a, int budget)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->left, NULL);
    a->budget = budget > 0 ? budget : 1;
}

void ism_admit_destroy(ism_admit *a)
{
    pthread_cond_destroy(&a->left);
    pthread_mutex_destroy(&a->mu);
}

static void set_addr(ism_admit_entry *e, const struct sockaddr *sa, socklen_t salen)
{
    e->alen = 0;
    if (sa && sa->sa_family == AF_INET && salen >= sizeof(struct sockaddr_in)) {
        memcpy(e->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        e->alen = 4;
    } else if (sa && sa->sa_family == AF_INET6 && salen >= sizeof(struct sockaddr_in6)) {
        memcpy(e->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        e->alen = 16;
    }
}

static int same_addr(const ism_admit_entry *x, const ism_admit_entry *y)
{
    return x->alen == y->alen && memcmp(x->addr, y->addr, x->alen) == 0;
}

static int count_addr(const ism_admit *a, const ism_admit_entry *of)
{
    int n = 0;
    for (const ism_admit_entry *e = a->head; e; e = e->next)
        n += !e->dropped && same_addr(e, of);
    return n;
}

/* The oldest pending entry of the address holding the most (held: mu). */
static ism_admit_entry *victim(ism_admit *a)
{
    ism_admit_entry *v = NULL;
    int most = 0;
    for (ism_admit_entry *e = a->head; e; e = e->next) {
        if (e->dropped)
            continue;
        int n = count_addr(a, e);
        if (n > most || (n == most && e->seq < v->seq))
            v = e, most = n;
    }
    return v;
}

int ism_admit_enter(ism_admit *a, ism_admit_entry *e, int fd, const struct sockaddr *sa,
                    socklen_t salen)
{
    e->fd = fd;
    e->dropped = 0;
    set_addr(e, sa, salen);
    pthread_mutex_lock(&a->mu);
    int dropped = 0;
    if (a->pending >= a->budget) {
        ism_admit_entry *v = victim(a);
        if (v) {
            v->dropped = 1;
            a->pending--;
            shutdown(v->fd, SHUT_RDWR); /* its thread's next wait fails at once */
            dropped = 1;
        }
    }
    e->seq = ++a->seq;
    e->next = a->head;
    a->head = e;
    a->pending++;
    a->entries++;
    pthread_mutex_unlock(&a->mu);
    return dropped;
}

int ism_admit_leave(ism_admit *a, ism_admit_entry *e)
{
    pthread_mutex_lock(&a->mu);
    ism_admit_entry **p = &a->head;
    while (*p && *p != e)
        p = &(*p)->next;
    if (*p)
        *p = e->next;
    int dropped = e->dropped;
    if (!dropped)
        a->pending--;
    a->entries--;
    pthread_cond_broadcast(&a->left);
    pthread_mutex_unlock(&a->mu);
    return dropped ? -1 : 0;
}

void ism_admit_wait_room(ism_admit *a)
{
    pthread_mutex_lock(&a->mu);
    while (a->entries >= 2 * a->budget)
        pthread_cond_wait(&a->left, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

void ism_admit_drain(ism_admit *a)
{
    pthread_mutex_lock(&a->mu);
    for (ism_admit_entry *e = a->head; e; e = e->next) {
        if (!e->dropped) {
            e->dropped = 1;
            a->pending--;
            shutdown(e->fd, SHUT_RDWR);
        }
    }
    while (a->entries > 0)
        pthread_cond_wait(&a->left, &a->mu);
    pthread_mutex_unlock(&a->mu);
}
