/* fail.c (patterns): the error line of the pattern helpers, so each failure says in one
 * line where and what (a rank, a site, a value and what is allowed).
 */
#include "patterns.h"

#include <stdarg.h>
#include <stdio.h>

int pat_fail(int rc, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "isthmus patterns: %s\n", line);
    return rc;
}
