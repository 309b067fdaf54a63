/* test_copy_listing.c: the server's LIST (listing.h) on a real directory tree, over a
 * socket pair: every file below the listed directory once, with its size and mode, in
 * decodable entries; a link that stays inside listed as the file it names, a link out
 * (relative or absolute) as REFUSED, a link to a directory and a FIFO as SKIPPED (not
 * followed); a name with a control character listed escaped as REFUSED; a regular file
 * listed as one entry with no path; a listing beyond its bound refused with ICP_S_LIMIT
 * before anything was sent; a path through a link out refused as such. Runs under
 * ASan/UBSan in the sanitizer build. */
#define _GNU_SOURCE
#include "listing.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../../tests/check.h"
#include "proto.h"
#include "xfer.h"

static char top[64];

static void mk(const char *rel, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/served/%s", top, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    char b[64] = {0};
    for (size_t at = 0; fd >= 0 && at < n; at += sizeof b)
        if (write(fd, b, n - at < sizeof b ? n - at : sizeof b) < 0)
            break;
    if (fd < 0) {
        perror(p);
        exit(1);
    }
    close(fd);
}

static void sh(const char *fmt, const char *arg)
{
    char c[512];
    snprintf(c, sizeof c, fmt, top, arg);
    if (system(c) != 0) {
        fprintf(stderr, "setup failed: %s\n", c);
        exit(1);
    }
}

typedef struct listing {
    int rc;
    uint32_t status;
    char msg[ICP_MAX_MSG];
    icp_rsp rsp;
    icp_entry e[64];
    size_t n;
    size_t bytes; /* what the server wrote */
} listing;

/* LIST path with at most max entries; the answer read back from the socket pair. */
static void list(int root, const char *path, uint32_t max, listing *L)
{
    int sp[2];
    memset(L, 0, sizeof *L);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0)
        exit(1);
    icp_stream s;
    memset(&s, 0, sizeof s);
    s.fd = sp[1];
    s.tmo_ms = 2000;
    snprintf(s.peer, sizeof s.peer, "test:1");
    uint64_t files;
    L->rc = icp_serve_list(&s, root, path, max, &files, L->msg, sizeof L->msg, &L->status);
    close(sp[1]);
    static uint8_t out[1 << 20];
    size_t n = 0;
    for (ssize_t r; n < sizeof out && (r = read(sp[0], out + n, sizeof out - n)) > 0;)
        n += (size_t)r;
    close(sp[0]);
    L->bytes = n;
    for (size_t at = 0; at + ICP_HDR <= n;) {
        int type;
        uint32_t len;
        const char *why = NULL;
        CHECK(icp_hdr_decode(out + at, &type, &len, &why) == 0 && at + ICP_HDR + len <= n,
              "a malformed message from the listing");
        const uint8_t *b = out + at + ICP_HDR;
        if (type == ICP_RSP) {
            CHECK(icp_rsp_decode(b, len, &L->rsp, &why) == 0, "RSP: %s", why);
        } else {
            CHECK(type == ICP_DATA, "type %d after RSP", type);
            for (size_t k = 0, used = 0; k < len && L->n < 64; k += used)
                if (icp_entry_decode(b + k, len - k, &L->e[L->n++], &used, &why) != 0) {
                    CHECK(0, "an entry does not decode: %s", why);
                    break;
                }
        }
        at += ICP_HDR + len;
    }
}

static const icp_entry *find(const listing *L, const char *path)
{
    for (size_t i = 0; i < L->n; i++)
        if (!strcmp(L->e[i].path, path))
            return &L->e[i];
    return NULL;
}

int main(void)
{
    strcpy(top, "/tmp/test-copy-listing-XXXXXX");
    if (!mkdtemp(top))
        return 1;
    sh("mkdir -p %s/served/d/sub/deeper %s/outside", top);
    sh("echo secret > %s/outside/s%s", "");
    mk("d/a", 100);
    mk("d/sub/b", 5000);
    mk("d/sub/deeper/c", 0);
    sh("ln -s ../../outside %s/served/d/out%s", "");
    {
        char c[512];
        snprintf(c, sizeof c, "ln -s %s/outside/s %s/served/d/abs", top, top);
        CHECK(system(c) == 0, "%s", c);
    }
    sh("ln -s sub/b %s/served/d/inner%s", "");
    sh("ln -s sub %s/served/d/subdir-link%s", "");
    sh("mkfifo %s/served/d/fifo%s", "");
    sh("touch \"%s/served/d/e$(printf '\\033')vil\"%s", "");
    char sv[128];
    snprintf(sv, sizeof sv, "%s/served", top);
    int root = open(sv, O_PATH | O_DIRECTORY);
    CHECK(root >= 0, "open %s", sv);

    listing L;
    list(root, "d", 100, &L);
    CHECK(L.rc == 0, "list d: %d %s", L.rc, L.msg);
    CHECK(L.rsp.status == ICP_OK && L.rsp.size == L.n && L.n == 9, "%llu entries announced, %zu read",
          (unsigned long long)L.rsp.size, L.n);
    const icp_entry *e;
    CHECK((e = find(&L, "a")) && e->kind == ICP_E_FILE && e->size == 100 && e->mode == 0640, "a");
    CHECK((e = find(&L, "sub/b")) && e->kind == ICP_E_FILE && e->size == 5000, "sub/b");
    CHECK((e = find(&L, "sub/deeper/c")) && e->kind == ICP_E_FILE && e->size == 0, "c");
    CHECK((e = find(&L, "inner")) && e->kind == ICP_E_FILE && e->size == 5000, "a link inside");
    CHECK((e = find(&L, "out")) && e->kind == ICP_E_REFUSED && e->why == ICP_W_LINK_OUT, "out");
    CHECK((e = find(&L, "abs")) && e->kind == ICP_E_REFUSED && e->why == ICP_W_LINK_OUT, "abs");
    CHECK((e = find(&L, "subdir-link")) && e->kind == ICP_E_SKIPPED && e->why == ICP_W_LINK_DIR,
          "a link to a directory");
    CHECK((e = find(&L, "fifo")) && e->kind == ICP_E_SKIPPED && e->why == ICP_W_NOT_REGULAR, "fifo");
    CHECK((e = find(&L, "e\\x1bvil")) && e->kind == ICP_E_REFUSED && e->why == ICP_W_BAD_NAME,
          "a control character");

    list(root, "d/sub/b", 100, &L);
    CHECK(L.rc == 0 && L.n == 1 && !L.e[0].path[0] && L.e[0].size == 5000, "a file's listing");

    /* the bound: 9 entries do not fit in 8; nothing is sent, the caller refuses */
    list(root, "d", 8, &L);
    CHECK(L.rc == -1 && L.status == ICP_S_LIMIT && L.bytes == 0, "over the bound: %d %u %zu",
          L.rc, L.status, L.bytes);
    CHECK(strstr(L.msg, "more than 8 entries") && strstr(L.msg, "subdirectories"), "%s", L.msg);
    list(root, "d", 9, &L);
    CHECK(L.rc == 0 && L.n == 9, "at the bound: %d %zu", L.rc, L.n);

    list(root, "d/out", 100, &L);
    CHECK(L.rc == -1 && L.status == ICP_S_PATH && strstr(L.msg, "leaves the served directory"),
          "through the link out: %s", L.msg);
    list(root, "nope", 100, &L);
    CHECK(L.rc == -1 && L.status == ICP_S_NOENT, "missing: %s", L.msg);

    close(root);
    sh("rm -rf %s%s", "");
    if (failures)
        fprintf(stderr, "test_copy_listing: %d failures\n", failures);
    else
        printf("test_copy_listing: ok\n");
    return failures != 0;
}
