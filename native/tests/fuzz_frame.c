/* fuzz_frame.c: fuzz target for ism_frame_decode(), the first code to touch WAN bytes.
 *
 * Owns the properties decode must keep on arbitrary input: it never reads past n, it
 * only returns known codes, and whatever it accepts re-encodes to the same 48 bytes.
 * Built as a libFuzzer target with clang; with -DISM_FUZZ_STANDALONE it gets its own
 * deterministic driver (fixed seeds + 200000 mutated inputs) so CTest can run it anywhere.
 */
#include "../src/contract/frame.h"
#include "../src/wan/crc32c.h"
#include "../src/wan/linkhdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t decoded_ok; /* how many inputs decode accepted, to prove the driver reaches it */
static size_t link_ok;    /* the same for link headers */

static void fail(const char *what, size_t size)
{
    fprintf(stderr, "fuzz_frame: property violated: %s (input of %zu bytes)\n", what, size);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ism_frame_hdr h;
    int rc = ism_frame_decode(data, size, &h);
    if (rc != 0 && rc != ISM_FRAME_ESHORT && rc != ISM_FRAME_EMAGIC && rc != ISM_FRAME_EVERSION &&
        rc != ISM_FRAME_ETYPE && rc != ISM_FRAME_ELEN)
        fail("decode returned an undocumented code", size);
    if (ism_frame_strerror(rc) == NULL)
        fail("strerror returned NULL", size);
    if ((rc == ISM_FRAME_ESHORT) != (size < ISM_FRAME_HDR_SIZE))
        fail("ESHORT does not match the input length", size);

    /* Payload bytes after the header must never influence the verdict. */
    if (size > ISM_FRAME_HDR_SIZE) {
        ism_frame_hdr h2;
        if (ism_frame_decode(data, ISM_FRAME_HDR_SIZE, &h2) != rc)
            fail("verdict depends on bytes past the header", size);
    }

    if (rc == 0) {
        decoded_ok++;
        if (h.magic != ISM_FRAME_MAGIC || h.version != ISM_FRAME_VERSION || h.type < 1 ||
            h.type > ISM_F_TYPE_MAX || h.len > ISM_FRAME_MAX_PAYLOAD)
            fail("accepted header has an invalid field", size);
        if (ism_frame_type_name(h.type) == NULL || strcmp(ism_frame_type_name(h.type), "UNKNOWN") == 0)
            fail("accepted type has no name", size);
        uint8_t out[ISM_FRAME_HDR_SIZE];
        ism_frame_encode(&h, out);
        if (memcmp(out, data, ISM_FRAME_HDR_SIZE) != 0)
            fail("re-encoding an accepted header changed its bytes", size);
        ism_frame_hdr again;
        if (ism_frame_decode(out, sizeof out, &again) != 0 || memcmp(&again, &h, sizeof h) != 0)
            fail("decode(encode(h)) != h", size);
    }

    /* The link header in front of gateway-to-gateway frames: same properties. */
    ism_link_hdr lh;
    int lrc = ism_link_hdr_decode(data, size, &lh);
    if (lrc != 0 && lrc != ISM_LINK_ESHORT && lrc != ISM_LINK_EMAGIC && lrc != ISM_LINK_EFLAGS &&
        lrc != ISM_LINK_EACK)
        fail("link header decode returned an undocumented code", size);
    if ((lrc == ISM_LINK_ESHORT) != (size < ISM_LINK_HDR_SIZE))
        fail("link ESHORT does not match the input length", size);
    if (lrc == 0) {
        link_ok++;
        uint8_t lout[ISM_LINK_HDR_SIZE];
        ism_link_hdr_encode(&lh, lout);
        if (memcmp(lout, data, ISM_LINK_HDR_SIZE) != 0 || lh.ack == 0 ||
            (lh.flags & ~ISM_LINK_FLAGS_KNOWN))
            fail("accepted link header does not re-encode to its bytes", size);
    }

    /* The CRC covers the same bytes in the frame path; splitting must not matter. */
    if (size > 0) {
        size_t cut = data[0] % size;
        uint32_t one = ism_crc32c(0, data, size);
        uint32_t two = ism_crc32c(ism_crc32c(0, data, cut), data + cut, size - cut);
        if (one != two)
            fail("incremental CRC32C differs from one-shot", size);
    }
    return 0;
}

#ifdef ISM_FUZZ_STANDALONE

/* xorshift64*: fixed seed, so a failure reproduces on every run and every machine. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Inputs go through an exactly-sized heap copy so ASan flags any read past `size`. */
static void run_one(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL) {
        perror("fuzz_frame: malloc");
        exit(2);
    }
    if (size)
        memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
}

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    run_one(buf, n);
    printf("fuzz_frame: %s (%zu bytes) ok\n", path, n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        int bad = 0;
        for (int i = 1; i < argc; i++)
            bad |= replay_file(argv[i]);
        return bad;
    }

    enum { NSEEDS = ISM_F_TYPE_MAX + 3, ITERS = 200000, MAXLEN = 96 };
    static uint8_t seeds[NSEEDS][ISM_FRAME_HDR_SIZE + 8];
    for (int t = 1; t <= ISM_F_TYPE_MAX; t++) {
        ism_frame_hdr h;
        ism_frame_init(&h, (enum ism_frame_type)t);
        h.len = (uint32_t)t * 4096u;
        h.src = -1;
        h.dst = t;
        h.tag = -t;
        h.a = (uint64_t)t << 40;
        h.b = ~(uint64_t)0;
        ism_frame_encode(&h, seeds[t - 1]);
        memset(seeds[t - 1] + ISM_FRAME_HDR_SIZE, 0xAB, 8);
    }
    ism_frame_hdr h;
    ism_frame_init(&h, ISM_F_DATA);
    h.len = ISM_FRAME_MAX_PAYLOAD;
    h.flags = 0xFFFF;
    ism_frame_encode(&h, seeds[NSEEDS - 2]); /* boundary: largest legal payload */
    ism_link_hdr lseed = {.flags = ISM_LINK_FLAG_CRC, .crc = 0x12345678u, .seq = 5, .ack = 9};
    ism_link_hdr_encode(&lseed, seeds[NSEEDS - 3]); /* a link header in front of a frame */
    memset(seeds[NSEEDS - 1], 0, sizeof seeds[0]);

    size_t total = 0;
    for (int s = 0; s < NSEEDS; s++)
        for (size_t n = 0; n <= sizeof seeds[0]; n++, total++)
            run_one(seeds[s], n);

    /* Offsets where a mutation flips the verdict: magic, version, type, len. */
    static const int hot[] = {0, 3, 4, 5, 24, 25, 26, 27};
    uint8_t buf[MAXLEN];
    for (int i = 0; i < ITERS; i++, total++) {
        uint64_t r = rng();
        size_t n;
        if (r % 4 == 0) {
            n = (size_t)(rng() % (MAXLEN + 1));
            for (size_t j = 0; j < n; j++)
                buf[j] = (uint8_t)rng();
        } else {
            const uint8_t *base = seeds[(r >> 8) % NSEEDS];
            n = ISM_FRAME_HDR_SIZE + (size_t)((r >> 16) % 9);
            if ((r >> 24) % 16 == 0)
                n = (size_t)((r >> 28) % ISM_FRAME_HDR_SIZE); /* truncated */
            memcpy(buf, base, n);
            int muts = 1 + (int)((r >> 32) % 4);
            for (int m = 0; m < muts && n > 0; m++) {
                uint64_t q = rng();
                size_t at = (q & 1) ? (size_t)hot[(q >> 1) % 8] : (size_t)((q >> 4) % n);
                if (at >= n)
                    continue;
                switch ((q >> 12) % 4) {
                case 0:
                    buf[at] ^= (uint8_t)(1u << ((q >> 16) % 8));
                    break;
                case 1:
                    buf[at] = (uint8_t)(q >> 24);
                    break;
                case 2:
                    buf[at] = (uint8_t)((q >> 24) % (ISM_F_TYPE_MAX + 2)); /* near type range */
                    break;
                default:
                    buf[at] = (q >> 24) & 1 ? 0xFF : 0x00;
                    break;
                }
            }
        }
        run_one(buf, n);
    }
    printf("fuzz_frame: %zu inputs, %zu accepted by decode, all properties held\n", total,
           decoded_ok);
    if (link_ok < 100) {
        fprintf(stderr, "fuzz_frame: only %zu link headers decoded\n", link_ok);
        return 1;
    }
    if (decoded_ok < 1000) {
        fprintf(stderr, "fuzz_frame: only %zu inputs decoded; the driver is not reaching the "
                        "success path\n",
                decoded_ok);
        return 1;
    }
    return 0;
}

#endif
