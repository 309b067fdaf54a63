/* patterns.h (patterns): what the pattern helpers share inside the library: the one-line
 * error report every public function gives before it returns an error code.
 */
#ifndef ISM_PATTERNS_INTERNAL_H
#define ISM_PATTERNS_INTERNAL_H

#include "isthmus_patterns.h"

/* Prints "isthmus patterns: <message>" on stderr and returns rc. */
int pat_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
