/* fuzz.h: what a fuzz harness of isthmus provides, for the two ways it is run.
 *
 * A harness defines LLVMFuzzerTestOneInput() (the libFuzzer entry point) and its seeds:
 * well-formed inputs that reach deep into the code under test (a whole handshake, a
 * valid frame), from which mutations start. With clang's libFuzzer (a build configured
 * with CC=clang -DISM_FUZZ_LIBFUZZER=ON, as scripts/test.sh does) it is coverage-guided;
 * with any compiler, fuzz_main.c gives it a deterministic driver (the seeds, then
 * mutations of them from a fixed-seed generator) that CTest runs, and that writes the
 * seeds out as the libFuzzer run's starting corpus (--write-seeds DIR).
 */
#ifndef ISM_FUZZ_H
#define ISM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct ism_fuzz_seed {
    const uint8_t *data;
    size_t size;
} ism_fuzz_seed;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The harness's seeds (may be built on first call; they live until exit). */
size_t ism_fuzz_seeds(const ism_fuzz_seed **out);

/* Optional: what the deterministic driver prints at its end (how many inputs reached
 * the interesting paths), so a driver that never gets past the first check shows. */
void ism_fuzz_report(void) __attribute__((weak));

/* Property violated: prints what and the input's size, then aborts (a crash for both
 * drivers, so the input is kept). */
void ism_fuzz_fail(const char *harness, const char *what, size_t size) __attribute__((noreturn));

#endif
