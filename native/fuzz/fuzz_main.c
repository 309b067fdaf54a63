/* fuzz_main.c: the deterministic driver for harnesses built without libFuzzer (fuzz.h).
 *
 *   <harness>_smoke [N]             the seeds, then N mutated inputs (default 20000)
 *   <harness>_smoke FILE|DIR ...    those inputs (a crash libFuzzer saved, a corpus)
 *   <harness>_smoke --write-seeds DIR   the seeds as files, libFuzzer's starting corpus
 *
 * Mutations: bit flips, byte sets, inserts, deletes and splices of two seeds, from a
 * xorshift generator with a fixed seed, so a failure reproduces on every run and every
 * machine. Every input goes through an exactly-sized heap copy, so ASan sees any read
 * past its end. An input that makes the harness abort is written to ./fuzz-crash-input
 * first, to be run again (and kept as a regression seed).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#define FUZZ_MAX_INPUT 65536

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static const uint8_t *current;
static size_t current_size;

static void keep_input(int sig)
{
    int fd = open("fuzz-crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        (void)!write(fd, current, current_size);
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void run_one(const uint8_t *data, size_t size)
{
    current = data;
    current_size = size;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) {
        perror("fuzz driver");
        exit(2);
    }
    if (size)
        memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
}

static size_t mutate(uint8_t *buf, size_t n, const ism_fuzz_seed *seeds, size_t nseeds)
{
    int rounds = 1 + (int)(rng() % 4);
    for (int r = 0; r < rounds; r++) {
        switch (rng() % 5) {
        case 0: /* flip a bit */
            if (n)
                buf[rng() % n] ^= (uint8_t)(1u << (rng() % 8));
            break;
        case 1: /* set a byte to an interesting value */
            if (n) {
                static const uint8_t v[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 2, 64};
                buf[rng() % n] = v[rng() % sizeof v];
            }
            break;
        case 2: /* insert random bytes */
            if (n < FUZZ_MAX_INPUT - 16) {
                size_t at = n ? rng() % (n + 1) : 0, k = 1 + rng() % 8;
                memmove(buf + at + k, buf + at, n - at);
                for (size_t i = 0; i < k; i++)
                    buf[at + i] = (uint8_t)rng();
                n += k;
            }
            break;
        case 3: /* delete bytes */
            if (n) {
                size_t at = rng() % n, k = 1 + rng() % 8;
                if (k > n - at)
                    k = n - at;
                memmove(buf + at, buf + at + k, n - at - k);
                n -= k;
            }
            break;
        default: { /* splice: the tail of another seed */
            const ism_fuzz_seed *o = &seeds[rng() % nseeds];
            if (o->size) {
                size_t at = n ? rng() % n : 0, from = rng() % o->size, k = o->size - from;
                if (at + k > FUZZ_MAX_INPUT)
                    k = FUZZ_MAX_INPUT - at;
                memcpy(buf + at, o->data + from, k);
                n = at + k;
            }
        }
        }
    }
    return n;
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
        return 1;
    }
    static uint8_t buf[FUZZ_MAX_INPUT];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    run_one(buf, n);
    return 0;
}

static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    DIR *d = opendir(path);
    if (!d)
        return 1;
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        bad |= run_file(p);
    }
    closedir(d);
    return bad;
}

static int write_seeds(const char *dir, const ism_fuzz_seed *seeds, size_t n)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz driver: mkdir %s: %s\n", dir, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/seed-%03zu", dir, i);
        FILE *f = fopen(p, "wb");
        if (!f || fwrite(seeds[i].data, 1, seeds[i].size, f) != seeds[i].size) {
            fprintf(stderr, "fuzz driver: writing %s failed\n", p);
            if (f)
                fclose(f);
            return 1;
        }
        fclose(f);
    }
    printf("%zu seeds written to %s\n", n, dir);
    return 0;
}

int main(int argc, char **argv)
{
    const ism_fuzz_seed *seeds;
    size_t nseeds = ism_fuzz_seeds(&seeds);
    signal(SIGABRT, keep_input);
    signal(SIGSEGV, keep_input);
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
        return write_seeds(argv[2], seeds, nseeds);
    if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9')) {
        int bad = 0;
        for (int i = 1; i < argc; i++)
            bad |= run_path(argv[i]);
        return bad;
    }
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    for (size_t i = 0; i < nseeds; i++)
        run_one(seeds[i].data, seeds[i].size);
    static uint8_t buf[FUZZ_MAX_INPUT];
    for (long i = 0; i < iters && nseeds; i++) {
        const ism_fuzz_seed *s = &seeds[rng() % nseeds];
        size_t n = s->size < FUZZ_MAX_INPUT ? s->size : FUZZ_MAX_INPUT;
        memcpy(buf, s->data, n);
        n = mutate(buf, n, seeds, nseeds);
        run_one(buf, n);
    }
    printf("%zu seeds and %ld mutated inputs: no property violated\n", nseeds, iters);
    if (ism_fuzz_report)
        ism_fuzz_report();
    return 0;
}
