/* fuzz_fail.c: how every harness reports a violated property (fuzz.h), in both builds. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

void ism_fuzz_fail(const char *harness, const char *what, size_t size)
{
    fprintf(stderr, "%s: property violated: %s (input of %zu bytes)\n", harness, what, size);
    abort();
}
