/* test_admit.c: the pending connections' budget (admit.h) on socket pairs standing in
 * for accepted connections: whom a newcomer displaces when the budget is full (the
 * oldest of the address holding the most; never a lighter address's), that the one
 * displaced learns it at once (its socket reads end of file) and at leave, that leave
 * frees a place, and that drain and wait_room wait for the threads that still hold
 * entries. Runs under ASan/UBSan in the sanitizer build. */
#define _GNU_SOURCE
#include "admit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../../tests/check.h"

typedef struct conn {
    ism_admit_entry e;
    int fd[2]; /* fd[0] the server's end (registered), fd[1] the client's */
    const char *name;
} conn;

static void open_conn(conn *c, const char *name)
{
    c->name = name;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, c->fd) != 0)
        perror("socketpair");
}

static int enter4(ism_admit *a, conn *c, const char *ip)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(40000);
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return ism_admit_enter(a, &c->e, c->fd[0], (struct sockaddr *)&sa, sizeof sa);
}

/* Was c's server end shut down? (reading it returns end of file at once) */
static int was_shut(conn *c)
{
    struct pollfd p = {c->fd[0], POLLIN, 0};
    char b;
    return poll(&p, 1, 0) == 1 && recv(c->fd[0], &b, 1, MSG_DONTWAIT) == 0;
}

static void close_conn(conn *c)
{
    close(c->fd[0]);
    close(c->fd[1]);
}

static void test_who_is_displaced(void)
{
    ism_admit a;
    ism_admit_init(&a, 3);
    conn c[8];
    const char *names[] = {"A1", "A2", "B1", "C1", "B2", "C2", "A3", "D1"};
    for (int i = 0; i < 8; i++)
        open_conn(&c[i], names[i]);
    CHECK(enter4(&a, &c[0], "10.0.0.1") == 0, "A1 entered without displacing anyone");
    CHECK(enter4(&a, &c[1], "10.0.0.1") == 0, "A2 too");
    CHECK(enter4(&a, &c[2], "10.0.0.2") == 0, "B1 fills the budget");
    /* full: 10.0.0.1 holds the most, its oldest goes */
    CHECK(enter4(&a, &c[3], "10.0.0.3") == 1, "C1 displaced someone");
    CHECK(was_shut(&c[0]) && !was_shut(&c[1]) && !was_shut(&c[2]), "A1 (and only A1) shut down");
    CHECK(ism_admit_leave(&a, &c[0].e) == -1, "A1 learns at leave that it was dropped");
    /* A2, B1, C1: one each, the oldest goes */
    CHECK(enter4(&a, &c[4], "10.0.0.2") == 1, "B2 displaced someone");
    CHECK(was_shut(&c[1]) && !was_shut(&c[2]) && !was_shut(&c[3]), "A2, the oldest, shut down");
    /* B1, C1, B2: a newcomer from C displaces B's oldest, not its own address's */
    CHECK(enter4(&a, &c[5], "10.0.0.3") == 1, "C2 displaced someone");
    CHECK(was_shut(&c[2]) && !was_shut(&c[3]) && !was_shut(&c[4]), "B1 shut down, C1 kept");
    /* a handshake that ends frees its place: no one is displaced for the next one */
    CHECK(ism_admit_leave(&a, &c[3].e) == 0, "C1 left admitted");
    CHECK(enter4(&a, &c[6], "10.0.0.1") == 0, "A3 took C1's place");
    CHECK(!was_shut(&c[4]) && !was_shut(&c[5]) && !was_shut(&c[6]), "no one else shut down");
    CHECK(ism_admit_leave(&a, &c[1].e) == -1 && ism_admit_leave(&a, &c[2].e) == -1, "A2, B1");
    /* an IPv6 peer is another address than any IPv4 one */
    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof s6);
    s6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::1", &s6.sin6_addr);
    CHECK(ism_admit_enter(&a, &c[7].e, c[7].fd[0], (struct sockaddr *)&s6, sizeof s6) == 1, "D1");
    CHECK(was_shut(&c[4]), "B2, the oldest of three single addresses, shut down");
    CHECK(ism_admit_leave(&a, &c[4].e) == -1, "B2 dropped");
    for (int i = 5; i < 8; i++)
        CHECK(ism_admit_leave(&a, &c[i].e) == 0, "%s still admitted", c[i].name);
    CHECK(a.pending == 0 && a.entries == 0 && a.head == NULL, "empty: %d %d", a.pending, a.entries);
    for (int i = 0; i < 8; i++)
        close_conn(&c[i]);
    ism_admit_destroy(&a);
}

typedef struct holder {
    ism_admit *a;
    conn c;
    int left;
} holder;

/* A connection's thread: waits in "its handshake" until the socket ends, then leaves. */
static void *hold(void *arg)
{
    holder *h = arg;
    char b;
    while (recv(h->c.fd[0], &b, 1, 0) > 0)
        ;
    h->left = ism_admit_leave(h->a, &h->c.e);
    return NULL;
}

static void test_drain_and_wait_room(void)
{
    ism_admit a;
    ism_admit_init(&a, 2);
    holder h[3];
    pthread_t t[3];
    const char *ips[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
    for (int i = 0; i < 3; i++) {
        h[i].a = &a;
        h[i].left = 99;
        open_conn(&h[i].c, ips[i]);
        enter4(&a, &h[i].c, ips[i]);
        pthread_create(&t[i], NULL, hold, &h[i]);
    }
    /* the first was displaced; wait_room returns once fewer than 4 entries are left */
    ism_admit_wait_room(&a);
    CHECK(a.entries < 4, "wait_room returned with %d entries", a.entries);
    ism_admit_drain(&a);
    CHECK(a.entries == 0 && a.pending == 0, "drain left %d entries", a.entries);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(h[i].left == -1, "connection %d left with %d after the drain", i, h[i].left);
        close_conn(&h[i].c);
    }
    ism_admit_destroy(&a);
}

int main(void)
{
    test_who_is_displaced();
    test_drain_and_wait_room();
    if (failures)
        fprintf(stderr, "test_admit: %d checks failed\n", failures);
    else
        printf("test_admit: ok\n");
    return failures != 0;
}
