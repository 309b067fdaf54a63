/* check.h: the noise tests' assertion macro (prints the failing expression and counts). */
#ifndef ISM_NOISE_CHECK_H
#define ISM_NOISE_CHECK_H
#include <stdio.h>
static int check_failures;
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)
#endif
