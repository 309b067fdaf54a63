/* test_coll_shm_ring.c: the shared-memory channel of the collective executor
 * (src/coll/shm_ring.c) without MPI. In one process: a receive before the send finds
 * nothing; messages come out in their numbers' order and no sooner; a full ring refuses
 * the next send until the reader frees a cell; a send or receive out of turn waits; a
 * message of the wrong length is consumed and reported, not copied; a message longer
 * than a cell is refused. Across two processes (fork, a MAP_SHARED page): 200000
 * messages of every length from 0 to a cell, each checked byte for byte, while the
 * writer runs ahead as far as the ring lets it. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/coll/coll.h"
#include "check.h"

#define NMSG 200000

static int64_t len_of(uint64_t seq) { return (int64_t)((seq * 2654435761u) % (ISM_SHM_CELL + 1)); }

static void fill(char *b, uint64_t seq, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        b[i] = (char)(seq * 31 + (uint64_t)i * 7);
}

static void single_process(ism_shm_chan *ch)
{
    char in[ISM_SHM_CELL + 8], out[ISM_SHM_CELL + 8];
    int64_t got = -5;
    CHECK(ism_shm_chan_recv(ch, 0, out, 8, &got) == 0, "a receive before any send");
    CHECK(ism_shm_chan_send(ch, 1, in, 8) == 0, "message 1 before message 0 is refused");
    for (uint64_t k = 0; k < ISM_SHM_NCELL; k++) {
        fill(in, k, 100);
        CHECK(ism_shm_chan_send(ch, k, in, 100) == 1, "send %llu into a ring with room",
              (unsigned long long)k);
    }
    CHECK(ism_shm_chan_send(ch, ISM_SHM_NCELL, in, 100) == 0, "a full ring refuses");
    CHECK(!ism_shm_chan_room(ch), "a full ring has no room");
    CHECK(ism_shm_chan_recv(ch, 1, out, 100, &got) == 0, "receive 1 before receive 0 waits");
    char want[100];
    fill(want, 0, 100);
    CHECK(ism_shm_chan_recv(ch, 0, out, 100, &got) == 1 && got == 100 && !memcmp(out, want, 100),
          "message 0 arrives whole");
    CHECK(ism_shm_chan_room(ch), "a freed cell is room");
    fill(in, ISM_SHM_NCELL, 100);
    CHECK(ism_shm_chan_send(ch, ISM_SHM_NCELL, in, 100) == 1, "a freed cell takes the next");
    memset(out, 0x5a, sizeof out);
    CHECK(ism_shm_chan_recv(ch, 1, out, 64, &got) == 1 && got == 100, "a wrong length is reported");
    CHECK((unsigned char)out[0] == 0x5a, "and not copied");
    for (uint64_t k = 2; k <= ISM_SHM_NCELL; k++) {
        fill(want, k, 100);
        CHECK(ism_shm_chan_recv(ch, k, out, 100, &got) == 1 && !memcmp(out, want, 100),
              "message %llu in order", (unsigned long long)k);
    }
    CHECK(ism_shm_chan_send(ch, ISM_SHM_NCELL + 1, in, ISM_SHM_CELL + 1) == -1,
          "longer than a cell is refused");
    CHECK(ism_shm_chan_send(ch, ISM_SHM_NCELL + 1, in, 0) == 1 &&
              ism_shm_chan_recv(ch, ISM_SHM_NCELL + 1, out, 0, &got) == 1 && got == 0,
          "an empty message");
}

static void two_processes(ism_shm_chan *ch)
{
    pid_t pid = fork();
    if (pid == 0) { /* the writer */
        static char buf[ISM_SHM_CELL];
        for (uint64_t k = 0; k < NMSG; k++) {
            int64_t l = len_of(k);
            fill(buf, k, l);
            while (ism_shm_chan_send(ch, k, buf, l) == 0)
                ;
        }
        _exit(0);
    }
    static char out[ISM_SHM_CELL], want[ISM_SHM_CELL];
    int bad = 0;
    for (uint64_t k = 0; k < NMSG; k++) {
        int64_t got = -1, l = len_of(k);
        while (!ism_shm_chan_recv(ch, k, out, l, &got))
            ;
        fill(want, k, l);
        if (got != l || memcmp(out, want, (size_t)l))
            bad++;
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(bad == 0, "%d of %d messages differ", bad, NMSG);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer exited %d", st);
}

int main(void)
{
    size_t len = ism_shm_chan_size();
    CHECK(len >= sizeof(ism_shm_chan), "size");
    ism_shm_chan *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ism_shm_chan *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || b == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    single_process(a);
    two_processes(b);
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("test_coll_shm_ring: ok\n");
    return failures != 0;
}
