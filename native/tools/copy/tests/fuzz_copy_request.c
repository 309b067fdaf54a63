/* fuzz_copy_request.c: fuzz target for what `isthmus-copy serve` does once a client has
 * authenticated: request.c with paths.c, xfer.c, proto.c, log.c and the TCP side of
 * stream.c. The input is the byte stream a client sends (REQ, START, DATA, END, RESULT,
 * ERROR, and anything else), fed over a socket pair into icp_serve_request, against a
 * served directory rebuilt for each input: files to get, a partial file to resume, a
 * symbolic link out of the directory, an absolute one, one that stays inside, a hard
 * link planted under a partial file's name that leads out, a FIFO; and sessions of
 * many-file puts (inline data, checks, directories made on the way) and of many-file
 * gets (a LIST of the served directory with its traps, inline gets).
 * Properties checked besides memory safety: nothing outside the served directory
 * changes (the planted link's target keeps its bytes, mode and link count, nothing new
 * appears there); no file in the served directory gets a name with a control character
 * or a mode beyond 0777 & ~umask; every log line is escaped; every message the server
 * sends is well-formed and one a server may send (a listing's entries decode, with
 * normalised paths, and the link out is listed as refused, never as a file); no file
 * descriptor is left open.
 * Built as a libFuzzer target with clang; with -DISM_FUZZ_STANDALONE a deterministic
 * driver (seeds with their expected outcome, then mutations) runs it under CTest, and
 * `--seeds DIR` writes the seeds out as a corpus for libFuzzer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "request.h"
#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define UMASK 022
#define FUZZ_MAX_INPUT (128u << 10) /* what surely fits in a socket pair's buffer */
#define VICTIM "precious\n"

static char top[64], served[128], outside[128], victim[160];
static int root = -1;
static uint8_t *scratch;
static uint8_t a_txt[] = "hello, served file\n";
static uint8_t b_bin[4000], c_bin[3000]; /* c.bin's first 1000 bytes wait as a partial file */
static char *last_log;                   /* the last input's log, for the driver */
static size_t last_log_len;

_Noreturn static void fail(const char *what)
{
    fprintf(stderr, "fuzz_copy_request: property violated: %s\n", what);
    if (last_log)
        fprintf(stderr, "log:\n%s", last_log);
    abort();
}

static void write_file(const char *rel, const uint8_t *b, size_t n, mode_t mode)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", served, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, b, n) != (ssize_t)n || fchmod(fd, mode) != 0)
        fail("building the served directory");
    close(fd);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb, (void)flag;
    return f->level == 0 ? 0 : remove(p);
}

static void cleanup(void)
{
    nftw(top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    rmdir(top);
}

static void setup_once(void)
{
    if (root >= 0)
        return;
    signal(SIGPIPE, SIG_IGN);
    umask(UMASK);
    strcpy(top, "/tmp/fuzz-copy-XXXXXX");
    if (!mkdtemp(top))
        fail("mkdtemp");
    atexit(cleanup);
    snprintf(served, sizeof served, "%s/served", top);
    snprintf(outside, sizeof outside, "%s/outside", top);
    snprintf(victim, sizeof victim, "%s/victim", outside);
    mkdir(served, 0755);
    mkdir(outside, 0755);
    int fd = open(victim, O_WRONLY | O_CREAT, 0644);
    if (fd < 0 || write(fd, VICTIM, strlen(VICTIM)) != (ssize_t)strlen(VICTIM))
        fail("creating the victim");
    close(fd);
    root = open(served, O_PATH | O_DIRECTORY | O_CLOEXEC);
    scratch = malloc(ICP_MAX_DATA);
    for (size_t i = 0; i < sizeof b_bin; i++)
        b_bin[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof c_bin; i++)
        c_bin[i] = (uint8_t)(i * 13 + 1);
    if (root < 0 || !scratch)
        fail("setting up");
}

/* The served directory as every input finds it. */
static void reset_served(void)
{
    char p[256], q[256];
    nftw(served, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    write_file("a.txt", a_txt, sizeof a_txt - 1, 0644);
    snprintf(p, sizeof p, "%s/sub", served);
    mkdir(p, 0755);
    write_file("sub/b.bin", b_bin, sizeof b_bin, 0640);
    write_file(".c.bin.icp-partial", c_bin, 1000, 0600);
    snprintf(p, sizeof p, "%s/out", served);
    if (symlink("../outside", p) != 0)
        fail("symlink out");
    snprintf(p, sizeof p, "%s/inner", served);
    if (symlink("sub", p) != 0)
        fail("symlink inner");
    snprintf(p, sizeof p, "%s/abs", served);
    if (symlink(outside, p) != 0)
        fail("symlink abs");
    snprintf(p, sizeof p, "%s/.h.bin.icp-partial", served);
    if (link(victim, p) != 0)
        fail("planting the hard link");
    snprintf(q, sizeof q, "%s/fifo", served);
    if (mkfifo(q, 0644) != 0)
        fail("mkfifo");
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            return 1;
    return 0;
}

static int check_entry(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)flag;
    if (f->level > 0 && has_control(p + f->base))
        fail("a file in the served directory has a control character in its name");
    if (S_ISREG(sb->st_mode) && (sb->st_mode & 07777 & ~(0777 & ~UMASK)))
        fail("a file in the served directory has a mode beyond 0777 & ~umask");
    return 0;
}

static void check_dirs(void)
{
    struct stat st;
    char b[64] = "";
    int fd = open(victim, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (stat(victim, &st) != 0 || n != (ssize_t)strlen(VICTIM) || memcmp(b, VICTIM, (size_t)n) ||
        (st.st_mode & 07777) != 0644 || st.st_nlink != 2)
        fail("the file outside the served directory changed (bytes, mode or links)");
    DIR *d = opendir(outside);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    if (entries != 1)
        fail("something appeared outside the served directory");
    nftw(served, check_entry, 16, FTW_PHYS);
}

static void check_log(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if ((c < 0x20 && c != '\n') || c == 0x7F ||
            (c == 0xC2 && i + 1 < n && (unsigned char)t[i + 1] >= 0x80 && (unsigned char)t[i + 1] <= 0x9F))
            fail("a control character reached the log");
        if ((i == 0 || t[i - 1] == '\n') && strncmp(t + i, "isthmus-copy serve: ", 20) != 0)
            fail("a log line that the server did not begin");
    }
}

/* A DATA message, which may be part of a listing: if it decodes as entries (a file's
 * bytes rarely do), they must be sound: the link out never listed as a file. */
static int check_listing(const uint8_t *b, uint32_t len)
{
    static icp_entry e;
    const char *why = NULL;
    size_t used = 0;
    for (size_t at = 0; at < len; at += used) {
        if (icp_entry_decode(b + at, len - at, &e, &used, &why) != 0)
            return 1; /* file data */
        if (e.kind == ICP_E_FILE && (!strncmp(e.path, "out/", 4) || !strncmp(e.path, "abs/", 4) ||
                                     !strcmp(e.path, "out") || !strcmp(e.path, "abs")))
            fail("a listing offered a file through the link out as a file");
    }
    return 1;
}

/* What the server wrote: whole messages, well-formed, of the kinds a server sends. */
static void check_output(int fd)
{
    static uint8_t out[FUZZ_MAX_INPUT * 4];
    size_t n = 0;
    for (ssize_t r; n < sizeof out && (r = read(fd, out + n, sizeof out - n)) > 0;)
        n += (size_t)r;
    static icp_rsp rsp;
    static icp_result res;
    static char msg[ICP_MAX_MSG + 1];
    for (size_t at = 0; at < n;) {
        int type;
        uint32_t len;
        const char *why = NULL;
        if (n - at < ICP_HDR || icp_hdr_decode(out + at, &type, &len, &why) != 0 ||
            n - at - ICP_HDR < len)
            fail("the server sent a malformed or cut message header");
        const uint8_t *b = out + at + ICP_HDR;
        icp_end e;
        uint32_t st;
        int ok = type == ICP_RSP      ? icp_rsp_decode(b, len, &rsp, &why) == 0
                 : type == ICP_DATA   ? check_listing(b, len)
                 : type == ICP_END    ? icp_end_decode(b, len, &e, &why) == 0
                 : type == ICP_RESULT ? icp_result_decode(b, len, &res, &why) == 0
                 : type == ICP_ERROR  ? icp_error_decode(b, len, &st, msg, &why) == 0
                                      : 0;
        if (!ok)
            fail("the server sent a malformed message, or a client's");
        at += ICP_HDR + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    setup_once();
    reset_served();
    int fds_before = count_fds();
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
        fail("socketpair");
    int big = 1 << 20;
    setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sp[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    size_t sent = 0;
    while (sent < size) {
        ssize_t r = send(sp[0], data + sent, size - sent, MSG_DONTWAIT);
        if (r <= 0)
            break;
        sent += (size_t)r;
    }
    if (sent < size) { /* this kernel's buffers are smaller: not an input we can run */
        close(sp[0]);
        close(sp[1]);
        return 0;
    }
    shutdown(sp[0], SHUT_WR); /* the client says nothing more */
    icp_stream s;
    memset(&s, 0, sizeof s);
    s.fd = sp[1];
    s.tmo_ms = 2000;
    snprintf(s.peer, sizeof s.peer, "fuzz-client:1");
    free(last_log);
    last_log = NULL;
    FILE *log = open_memstream(&last_log, &last_log_len);
    icp_log_to(log);
    icp_serve_request(&s, root, UMASK, scratch);
    icp_log_to(NULL);
    fclose(log);
    close(sp[1]);
    check_output(sp[0]);
    close(sp[0]);
    check_log(last_log, last_log_len);
    check_dirs();
    if (count_fds() != fds_before)
        fail("a file descriptor was left open");
    return 0;
}

#ifdef ISM_FUZZ_STANDALONE
#include "../../../tests/fuzz_driver.h"

typedef struct seed {
    uint8_t b[8192];
    size_t n;
    const char *expect; /* in the log after this seed ran */
} seed;

static void add(seed *o, int type, const void *body, size_t n)
{
    icp_hdr_encode(o->b + o->n, type, (uint32_t)n);
    memcpy(o->b + o->n + ICP_HDR, body, n);
    o->n += ICP_HDR + n;
}

static void sha(const uint8_t *b, size_t n, uint8_t out[ICP_SHA])
{
    unsigned int l = 0;
    EVP_Digest(b, n, out, &l, EVP_sha256(), NULL);
}

static void req(seed *o, int op, int flags, const char *name, const char *path, uint64_t size,
                uint32_t mode, uint64_t have, const uint8_t *have_sha)
{
    static icp_req q;
    uint8_t b[ICP_MAX_BODY];
    memset(&q, 0, sizeof q);
    q.op = (uint8_t)op;
    q.flags = (uint8_t)flags;
    q.size = size;
    q.mode = mode;
    q.mtime = op == ICP_PUT ? 1700000000 : 0;
    q.have = have;
    if (have_sha)
        memcpy(q.have_sha, have_sha, ICP_SHA);
    snprintf(q.name, sizeof q.name, "%s", name);
    snprintf(q.path, sizeof q.path, "%s", path);
    add(o, ICP_REQ, b, icp_req_encode(&q, b));
}

/* A put's messages after REQ: START, the data from offset, END. */
static void put_data(seed *o, const uint8_t *file, size_t n, uint64_t start)
{
    uint8_t b[64];
    add(o, ICP_START, b, icp_u64_encode(start, b));
    add(o, ICP_DATA, file + start, n - start);
    icp_end e = {n, {0}};
    sha(file, n, e.sha);
    add(o, ICP_END, b, icp_end_encode(&e, b));
}

/* An inline put's messages after REQ: the data and END, no START. */
static void inline_data(seed *o, const uint8_t *file, size_t n)
{
    uint8_t b[64];
    add(o, ICP_DATA, file, n);
    icp_end e = {n, {0}};
    sha(file, n, e.sha);
    add(o, ICP_END, b, icp_end_encode(&e, b));
}

static void result_ok(seed *o, const uint8_t *file, size_t n)
{
    icp_result r;
    memset(&r, 0, sizeof r);
    sha(file, n, r.sha);
    uint8_t b[ICP_MAX_MSG + 64];
    add(o, ICP_RESULT, b, icp_result_encode(&r, b));
}

static int make_seeds(seed *s)
{
    uint8_t h[ICP_SHA];
    int k = 0;
    req(&s[k], ICP_PUT, 0, "n.bin", "", sizeof c_bin, 0777, 0, NULL);
    put_data(&s[k], c_bin, sizeof c_bin, 0);
    s[k++].expect = "put n.bin: 3000 bytes";
    req(&s[k], ICP_PUT, ICP_F_RESUME, "c.bin", "c.bin", sizeof c_bin, 0644, 0, NULL);
    put_data(&s[k], c_bin, sizeof c_bin, 1000);
    s[k++].expect = "put c.bin resumed at byte 1000";
    req(&s[k], ICP_GET, 0, "", "a.txt", 0, 0, 0, NULL);
    result_ok(&s[k], a_txt, sizeof a_txt - 1);
    s[k++].expect = "get a.txt: 19 bytes";
    sha(b_bin, 1000, h);
    req(&s[k], ICP_GET, ICP_F_RESUME, "", "sub/b.bin", 0, 0, 1000, h);
    result_ok(&s[k], b_bin, sizeof b_bin);
    s[k++].expect = "get sub/b.bin resumed at byte 1000";
    req(&s[k], ICP_PUT, 0, "x.bin", "out/x.bin", 10, 0644, 0, NULL);
    s[k++].expect = "refused out/x.bin: bad path";
    req(&s[k], ICP_PUT, 0, "h.bin", "", 10, 0644, 0, NULL);
    s[k++].expect = "has 2 hard links";
    req(&s[k], ICP_GET, 0, "", "fifo", 0, 0, 0, NULL);
    s[k++].expect = "refused fifo: wrong file type";
    req(&s[k], ICP_PUT, 0, "e\x1bvil", "", 10, 0644, 0, NULL);
    s[k++].expect = "contains a control character";
    req(&s[k], ICP_PUT, 0, "i.bin", "inner/", sizeof a_txt - 1, 0666, 0, NULL);
    put_data(&s[k], a_txt, sizeof a_txt - 1, 0);
    s[k++].expect = "put inner/i.bin: 19 bytes";
    req(&s[k], ICP_GET, 0, "", "abs/victim", 0, 0, 0, NULL);
    s[k++].expect = "refused abs/victim: bad path";
    req(&s[k], ICP_PUT, 0, "d.bin", "", 5, 0644, 0, NULL);
    add(&s[k], ICP_START, "\0\0\0\0\0\0\0\0", 8);
    add(&s[k], ICP_DATA, "abcde", 5);
    icp_end bad = {5, {0}}; /* all-zero: not the digest of "abcde" */
    uint8_t eb[8 + ICP_SHA];
    add(&s[k], ICP_END, eb, icp_end_encode(&bad, eb));
    s[k++].expect = "put d.bin failed, nothing stored: SHA-256";
    /* a session (many-file puts): inline puts that make directories, a check of a file
     * already in place, an inline put through the link out (refused, its data dropped,
     * the session goes on), another inline put */
    int ses = ICP_F_SESSION | ICP_F_INLINE | ICP_F_MKDIRS;
    req(&s[k], ICP_PUT, ses, "deep.bin", "s/new/deep.bin", sizeof a_txt - 1, 0644, 0, NULL);
    inline_data(&s[k], a_txt, sizeof a_txt - 1);
    sha(a_txt, sizeof a_txt - 1, h);
    req(&s[k], ICP_PUT, ICP_F_SESSION | ICP_F_CHECK, "a.txt", "a.txt", sizeof a_txt - 1, 0644, 0, h);
    req(&s[k], ICP_PUT, ses, "y.bin", "out/made/y.bin", sizeof a_txt - 1, 0644, 0, NULL);
    inline_data(&s[k], a_txt, sizeof a_txt - 1);
    req(&s[k], ICP_PUT, ses, "e2.bin", "e2.bin", 3000, 0600, 0, NULL);
    inline_data(&s[k], c_bin, sizeof c_bin);
    s[k++].expect = "session of 2 copies (3019 bytes, ";
    req(&s[k], ICP_PUT, ICP_F_INLINE | ICP_F_MKDIRS, "z.bin", "abs/q/z.bin", 5, 0644, 0, NULL);
    inline_data(&s[k], (const uint8_t *)"abcde", 5);
    s[k++].expect = "refused abs/q/z.bin: bad path";
    req(&s[k], ICP_PUT, ICP_F_INLINE | ICP_F_MKDIRS, "y.bin", "m/x.bin", 5, 0644, 0, NULL);
    inline_data(&s[k], (const uint8_t *)"abcde", 5);
    s[k++].expect = "must end in the file's name";
    /* a many-file get: the served directory listed (its links out refused, the fifo
     * skipped), then inline gets, one through the link out (refused: the session goes
     * on), and a classic get of the last */
    req(&s[k], ICP_LIST, ICP_F_SESSION, "", "", 0, 0, 0, NULL);
    req(&s[k], ICP_GET, ICP_F_SESSION | ICP_F_INLINE, "", "a.txt", 0, 0, 0, NULL);
    req(&s[k], ICP_GET, ICP_F_SESSION | ICP_F_INLINE, "", "out/victim", 0, 0, 0, NULL);
    req(&s[k], ICP_GET, ICP_F_SESSION | ICP_F_INLINE, "", "inner/b.bin", 0, 0, 0, NULL);
    req(&s[k], ICP_GET, ICP_F_SESSION, "", "sub/b.bin", 0, 0, 0, NULL);
    result_ok(&s[k], b_bin, sizeof b_bin);
    s[k++].expect = "session of 3 copies (8019 bytes, ";
    req(&s[k], ICP_LIST, 0, "", "out", 0, 0, 0, NULL);
    s[k++].expect = "refused out: bad path";
    req(&s[k], ICP_LIST, 0, "", "sub/b.bin", 0, 0, 0, NULL);
    s[k++].expect = "list sub/b.bin: 1 files";
    req(&s[k], ICP_GET, 0, "", "sub", 0, 0, 0, NULL);
    s[k++].expect = "refused sub: a directory";
    return k;
}

static void write_seeds(const char *dir, const seed *s, int n)
{
    for (int i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/seed-%02d", dir, i);
        FILE *f = fopen(p, "wb");
        if (!f || fwrite(s[i].b, 1, s[i].n, f) != s[i].n)
            fail("writing a seed");
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    static seed seeds[32];
    setup_once();
    int nseeds = make_seeds(seeds);
    if (argc > 2 && !strcmp(argv[1], "--seeds")) {
        write_seeds(argv[2], seeds, nseeds);
        return 0;
    }
    long iters = argc > 1 ? atol(argv[1]) : 5000;
    for (int i = 0; i < nseeds; i++) {
        ism_fuzz_run(seeds[i].b, seeds[i].n);
        if (!last_log || !strstr(last_log, seeds[i].expect)) {
            fprintf(stderr, "seed %d: expected '%s' in the log\n", i, seeds[i].expect);
            fail("a seed did not have its expected outcome");
        }
    }
    /* the mode of seed 0's 0777 file: masked by the umask */
    ism_fuzz_run(seeds[0].b, seeds[0].n);
    struct stat st;
    char p[256];
    snprintf(p, sizeof p, "%s/n.bin", served);
    if (stat(p, &st) != 0 || (st.st_mode & 07777) != (0777 & ~UMASK))
        fail("a put of mode 0777 was not masked by the umask");
    long done = 0, refused = 0, failed = 0;
    static uint8_t buf[sizeof seeds[0].b + 64];
    for (long it = 0; it < iters; it++) {
        const seed *s = &seeds[ism_fuzz_rng() % (uint64_t)nseeds];
        size_t n = s->n;
        memcpy(buf, s->b, n);
        for (int m = 0, muts = 1 + (int)(ism_fuzz_rng() % 4); m < muts; m++) {
            uint64_t x = ism_fuzz_rng();
            if (x % 5 == 0 && n > ICP_HDR) /* the request's fields, in its first 80 bytes */
                buf[ICP_HDR + (x >> 8) % 80 % (n - ICP_HDR)] = (uint8_t)(x >> 24);
            else
                n = ism_fuzz_mutate(buf, n, sizeof buf, 0);
        }
        ism_fuzz_run(buf, n);
        if (strstr(last_log, "sha256 verified"))
            done++;
        else if (strstr(last_log, ": refused "))
            refused++;
        else
            failed++;
    }
    printf("fuzz_copy_request: %d seeds with their expected outcomes; %ld mutated inputs: %ld "
           "copies done, %ld refused, %ld failed otherwise\n",
           nseeds, iters, done, refused, failed);
    if (iters >= 1000 && (!done || !refused || !failed))
        fail("the driver never reached one of the outcomes");
    free(last_log);
    free(scratch);
    close(root);
    return 0;
}
#endif
