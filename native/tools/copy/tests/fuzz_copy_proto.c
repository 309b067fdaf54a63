/* fuzz_copy_proto.c: fuzz target for isthmus-copy's message decoders (proto.h) and its
 * request-path rules (paths.h), the code that reads bytes from an authenticated but
 * untrusted peer. The first input byte picks the decoder; the rest is its input.
 * Properties checked besides memory safety: a body that decodes re-encodes to exactly
 * the same bytes (no field is ignored, nothing trailing is accepted), and a path that
 * is accepted is relative, has no "." or ".." component and normalises to itself, and
 * so is the path of every listing entry accepted (the client builds local paths from
 * them).
 * Built as a libFuzzer target with clang; with -DISM_FUZZ_STANDALONE a deterministic
 * driver (seeds + mutations) runs it under CTest.
 */
#include "paths.h"
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { K_PRE, K_HDR, K_REQ, K_RSP, K_START, K_END, K_RESULT, K_ERROR, K_ENTRY, K_PATH, K_N };
static size_t accepted[K_N], refused[K_N];

static void fail(const char *what, size_t size)
{
    fprintf(stderr, "fuzz_copy_proto: property violated: %s (input of %zu bytes)\n", what, size);
    abort();
}

static void same(const uint8_t *in, size_t n, const uint8_t *out, size_t m, const char *what)
{
    if (n != m || memcmp(in, out, n) != 0)
        fail(what, n);
}

static void check_path(const uint8_t *d, size_t n)
{
    static char in[ICP_MAX_PATH + 64], out[ICP_MAX_PATH + 1], again[ICP_MAX_PATH + 1];
    if (n >= sizeof in)
        n = sizeof in - 1;
    memcpy(in, d, n);
    in[n] = 0;
    int hint;
    const char *why = NULL;
    if (icp_path_normalize(in, out, sizeof out, &hint, &why) != 0) {
        if (!why)
            fail("a path was refused without a reason", n);
        refused[K_PATH]++;
        return;
    }
    accepted[K_PATH]++;
    if (out[0] == '/' || strstr(out, "//"))
        fail("an accepted path is absolute or has an empty component", n);
    for (const char *p = out; *p;) {
        size_t k = strcspn(p, "/");
        if ((k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
            fail("an accepted path has a '.' or '..' component", n);
        p += k + (p[k] == '/');
    }
    if (out[0] && out[strlen(out) - 1] == '/')
        fail("an accepted path ends in '/'", n);
    int hint2;
    if (icp_path_normalize(out, again, sizeof again, &hint2, &why) != 0 || strcmp(out, again))
        fail("normalising is not idempotent", n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int k = data[0] % K_N;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    static uint8_t out[ICP_MAX_BODY + ICP_MAX_MSG];
    const char *why = NULL;
    int ok = -1;
    switch (k) {
    case K_PRE:
        if (n >= ICP_PREAMBLE) {
            int t = icp_preamble_decode(d, &why);
            ok = t < 0 ? -1 : 0;
            if (t >= 0) {
                icp_preamble_encode(out, (char)t);
                same(d, ICP_PREAMBLE, out, ICP_PREAMBLE, "preamble round trip");
            }
        }
        break;
    case K_HDR:
        if (n >= ICP_HDR) {
            int type;
            uint32_t len;
            ok = icp_hdr_decode(d, &type, &len, &why);
            if (ok == 0) {
                if (len > ICP_MAX_DATA || (type != ICP_DATA && len > ICP_MAX_BODY))
                    fail("header accepted a body longer than its type allows", n);
                icp_hdr_encode(out, type, len);
                same(d, ICP_HDR, out, ICP_HDR, "header round trip");
            }
        }
        break;
    case K_REQ: {
        static icp_req r;
        ok = icp_req_decode(d, n, &r, &why);
        if (ok == 0)
            same(d, n, out, icp_req_encode(&r, out), "request round trip");
        break;
    }
    case K_RSP: {
        static icp_rsp r;
        ok = icp_rsp_decode(d, n, &r, &why);
        if (ok == 0)
            same(d, n, out, icp_rsp_encode(&r, out), "response round trip");
        break;
    }
    case K_START: {
        uint64_t v;
        ok = icp_u64_decode(d, n, &v, &why);
        if (ok == 0)
            same(d, n, out, icp_u64_encode(v, out), "START round trip");
        break;
    }
    case K_END: {
        icp_end e;
        ok = icp_end_decode(d, n, &e, &why);
        if (ok == 0)
            same(d, n, out, icp_end_encode(&e, out), "END round trip");
        break;
    }
    case K_RESULT: {
        static icp_result r;
        ok = icp_result_decode(d, n, &r, &why);
        if (ok == 0)
            same(d, n, out, icp_result_encode(&r, out), "RESULT round trip");
        break;
    }
    case K_ERROR: {
        uint32_t st;
        static char msg[ICP_MAX_MSG + 1];
        ok = icp_error_decode(d, n, &st, msg, &why);
        if (ok == 0)
            same(d, n, out, icp_error_encode(st, msg, out), "ERROR round trip");
        break;
    }
    case K_ENTRY: {
        static icp_entry e;
        size_t used = 0;
        ok = icp_entry_decode(d, n, &e, &used, &why);
        if (ok == 0) {
            if (used > n || used != ICP_ENTRY_HDR + strlen(e.path))
                fail("an entry's length is not its header and path", n);
            same(d, used, out, icp_entry_encode(&e, out), "listing entry round trip");
            if (e.path[0]) {
                static char norm[ICP_MAX_PATH + 1];
                int hint;
                const char *w2 = NULL;
                if (e.path[0] == '/' || icp_path_normalize(e.path, norm, sizeof norm, &hint, &w2) ||
                    strcmp(norm, e.path))
                    fail("a listing entry's path is accepted that is not a normalised one", n);
            }
        }
        break;
    }
    default:
        check_path(d, n);
        return 0;
    }
    if (ok == 0)
        accepted[k]++;
    else
        refused[k]++;
    if (ok != 0 && n >= (k == K_PRE ? ICP_PREAMBLE : k == K_HDR ? ICP_HDR : 0) && !why)
        fail("a refusal without a reason", n);
    return 0;
}

#ifdef ISM_FUZZ_STANDALONE

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    enum { NSEEDS = 14, SEEDMAX = 1400 };
    static uint8_t seeds[NSEEDS][SEEDMAX];
    size_t len[NSEEDS];
    /* one valid input per decoder (a PUT and a GET request), and paths */
    seeds[0][0] = K_PRE;
    icp_preamble_encode(seeds[0] + 1, 'u');
    len[0] = 1 + ICP_PREAMBLE;
    seeds[1][0] = K_HDR;
    icp_hdr_encode(seeds[1] + 1, ICP_DATA, 1000);
    len[1] = 1 + ICP_HDR;
    static icp_req q;
    q.op = ICP_PUT;
    q.size = 12345;
    q.mode = 0644;
    q.mtime = 1700000000;
    strcpy(q.name, "data.bin");
    strcpy(q.path, "runs/today/");
    seeds[2][0] = K_REQ;
    len[2] = 1 + icp_req_encode(&q, seeds[2] + 1);
    memset(&q, 0, sizeof q);
    q.op = ICP_GET;
    q.flags = ICP_F_RESUME;
    q.have = 4096;
    q.have_sha[0] = 0xab;
    strcpy(q.path, "runs/today/data.bin");
    seeds[3][0] = K_REQ;
    len[3] = 1 + icp_req_encode(&q, seeds[3] + 1);
    static icp_rsp r;
    r.status = ICP_S_PATH;
    r.size = 77;
    r.offset = 5;
    r.sha[31] = 1;
    strcpy(r.path, "a/b");
    strcpy(r.msg, "paths with '..' are refused");
    seeds[4][0] = K_RSP;
    len[4] = 1 + icp_rsp_encode(&r, seeds[4] + 1);
    icp_end e = {99, {1, 2, 3}};
    seeds[5][0] = K_END;
    len[5] = 1 + icp_end_encode(&e, seeds[5] + 1);
    static icp_result res;
    res.status = ICP_S_CHECKSUM;
    strcpy(res.msg, "digests differ");
    seeds[6][0] = K_RESULT;
    len[6] = 1 + icp_result_encode(&res, seeds[6] + 1);
    seeds[7][0] = K_ERROR;
    len[7] = 1 + icp_error_encode(ICP_S_IO, "disk full", seeds[7] + 1);
    seeds[8][0] = K_PATH;
    strcpy((char *)seeds[8] + 1, "a/./b//c/../d/");
    len[8] = 1 + strlen((char *)seeds[8] + 1);
    seeds[9][0] = K_PATH;
    strcpy((char *)seeds[9] + 1, "x/y.z/.hidden/file");
    len[9] = 1 + strlen((char *)seeds[9] + 1);
    seeds[10][0] = K_START;
    len[10] = 1 + icp_u64_encode(123456, seeds[10] + 1);
    memset(&q, 0, sizeof q);
    q.op = ICP_LIST;
    q.flags = ICP_F_SESSION;
    strcpy(q.path, "runs/out");
    seeds[11][0] = K_REQ;
    len[11] = 1 + icp_req_encode(&q, seeds[11] + 1);
    static icp_entry en = {ICP_E_FILE, ICP_W_NONE, 0640, 4096, 1700000000, "sub/dir/result.dat"};
    seeds[12][0] = K_ENTRY;
    len[12] = 1 + icp_entry_encode(&en, seeds[12] + 1);
    static icp_entry en2 = {ICP_E_REFUSED, ICP_W_LINK_OUT, 0, 0, 0, "a/evil"};
    seeds[13][0] = K_ENTRY;
    len[13] = 1 + icp_entry_encode(&en2, seeds[13] + 1);
    for (int s = 0; s < NSEEDS; s++)
        LLVMFuzzerTestOneInput(seeds[s], len[s]);
    static uint8_t buf[SEEDMAX + 64];
    /* the request flags of many-file puts: which go together (proto.h) */
    static const struct { int op, flags, sha, ok; } fl[] = {
        {ICP_PUT, ICP_F_SESSION | ICP_F_INLINE | ICP_F_MKDIRS, 0, 1},
        {ICP_PUT, ICP_F_SESSION | ICP_F_CHECK, 1, 1},
        {ICP_PUT, ICP_F_SESSION | ICP_F_RESUME | ICP_F_MKDIRS, 0, 1},
        {ICP_GET, ICP_F_SESSION | ICP_F_RESUME, 0, 1},
        {ICP_PUT, ICP_F_INLINE | ICP_F_RESUME, 0, 0},
        {ICP_PUT, ICP_F_INLINE | ICP_F_CHECK, 0, 0},
        {ICP_PUT, ICP_F_CHECK | ICP_F_MKDIRS, 1, 0},
        {ICP_PUT, ICP_F_INLINE, 1, 0}, /* a digest that only a check carries */
        {ICP_GET, ICP_F_SESSION | ICP_F_INLINE, 0, 1},
        {ICP_GET, ICP_F_INLINE | ICP_F_RESUME, 0, 0},
        {ICP_GET, ICP_F_MKDIRS, 0, 0},
        {ICP_LIST, ICP_F_SESSION, 0, 1},
        {ICP_LIST, ICP_F_RESUME, 0, 0},
        {ICP_LIST, ICP_F_INLINE, 0, 0},
        {ICP_PUT, ICP_F_ALL + 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        icp_req w, got;
        memset(&w, 0, sizeof w);
        w.op = (uint8_t)fl[i].op;
        w.flags = (uint8_t)fl[i].flags;
        w.have_sha[3] = (uint8_t)fl[i].sha;
        strcpy(w.path, "a/b");
        const char *why = NULL;
        size_t n = icp_req_encode(&w, buf);
        if ((icp_req_decode(buf, n, &got, &why) == 0) != fl[i].ok) {
            fprintf(stderr, "fuzz_copy_proto: op %d flags %#x\n", fl[i].op, fl[i].flags);
            fail(fl[i].ok ? "flags that go together were refused"
                          : "flags that do not go together were accepted", n);
        }
    }
    static const char *frag[] = {"..", ".", "/", "//", "../", "a", "\\"};
    for (long it = 0; it < iters; it++) {
        int s = (int)(rng() % NSEEDS);
        size_t n = len[s];
        memcpy(buf, seeds[s], n);
        int muts = 1 + (int)(rng() % 4);
        for (int m = 0; m < muts && n > 1; m++) {
            uint64_t x = rng();
            size_t at = 1 + (size_t)(rng() % (n - 1));
            switch (x % 5) {
            case 0: buf[at] ^= (uint8_t)(1u << (x >> 8) % 8); break;
            case 1: buf[at] = (uint8_t)(x >> 16); break;
            case 2: n = 1 + (size_t)(rng() % n); break;
            case 3: { /* path fragments where they hurt */
                const char *f = frag[(x >> 8) % 7];
                size_t fl = strlen(f);
                if (at + fl <= SEEDMAX)
                    memcpy(buf + at, f, fl), n = at + fl > n ? at + fl : n;
                break;
            }
            default:
                if (n + 8 < SEEDMAX) {
                    for (int i = 0; i < 8; i++)
                        buf[n + i] = (uint8_t)rng();
                    n += 1 + rng() % 8;
                }
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_copy_proto: %ld inputs;", iters + NSEEDS);
    static const char *names[K_N] = {"preamble", "header", "REQ",   "RSP",   "START",
                                     "END",      "RESULT", "ERROR", "entry", "path"};
    for (int k = 0; k < K_N; k++)
        printf(" %s %zu/%zu", names[k], accepted[k], accepted[k] + refused[k]);
    printf(" accepted\n");
    for (int k = 0; k < K_N; k++)
        if (!accepted[k] || !refused[k])
            fail("the driver never reached both outcomes of a decoder", 0);
    return 0;
}
#endif
