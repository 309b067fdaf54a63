/* log.h: isthmus-copy's messages on stderr: the server's log (one line per event) and
 * the client's errors. Their text carries names and messages that came from the peer,
 * so every line is escaped before it is written: control characters (C0, DEL, C1),
 * bytes that are not UTF-8 and the backslash become \n, \t, \r, \\ or \xNN, and no peer
 * can forge a line, move the cursor or recolour a terminal. Printable UTF-8 is kept.
 */
#ifndef ISM_COPY_LOG_H
#define ISM_COPY_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* The escaped form of in into out (always terminated; cut at a whole escape when out
 * is too small). Returns the length written. */
size_t icp_escape(const char *in, char *out, size_t outlen);

/* One line: prefix, then the formatted text escaped, then '\n' (whole lines under a
 * lock, so threads do not interleave). */
__attribute__((format(printf, 2, 3))) void icp_log(const char *prefix, const char *fmt, ...);

void icp_vlog(const char *prefix, const char *fmt, va_list ap);

/* Where icp_log writes (stderr until set; NULL: nowhere). */
void icp_log_to(FILE *f);

#endif
