/* udp_check.h: the CHECK macro of the reliable-UDP tests: count a failure, say where and
 * why, keep going (so one run reports every broken property). */
#ifndef ISM_TESTS_UDP_CHECK_H
#define ISM_TESTS_UDP_CHECK_H

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
