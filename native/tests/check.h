/* check.h: the CHECK macro of the C unit tests (native/tests and the tools' tests):
 * count a failure in `failures`, say where and why, keep going (so one run reports every
 * broken property). */
#ifndef ISM_TESTS_CHECK_H
#define ISM_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            failures++;                                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                     \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
        }                                                                                       \
    } while (0)

#endif
