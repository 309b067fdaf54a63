/* test_copy_log.c: what reaches a log line or an error message (log.h): control
 * characters, C1 controls, malformed UTF-8 (overlong forms, surrogates, beyond
 * U+10FFFF, cut sequences) and the backslash come out escaped, well-formed printable
 * UTF-8 unchanged, a line is never cut inside an escape, and one icp_log call writes
 * exactly one line whatever the text holds. */
#define _GNU_SOURCE
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void esc(const char *in, const char *want)
{
    char out[256];
    size_t n = icp_escape(in, out, sizeof out);
    if (strcmp(out, want) != 0 || n != strlen(want)) {
        fprintf(stderr, "FAILED: escape of '%s' gave '%s', want '%s'\n", in, out, want);
        failures++;
    }
}

int main(void)
{
    esc("plain text: 10.0.0.1:41998", "plain text: 10.0.0.1:41998");
    esc("a\nb\tc\rd", "a\\nb\\tc\\rd");
    esc("\x1b[31mred", "\\x1b[31mred");
    esc("back\\slash", "back\\\\slash");
    esc("bell\x07 del\x7f", "bell\\x07 del\\x7f");
    esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    esc("csi\xc2\x9b" "2J", "csi\\xc2\\x9b2J");                  /* C1 control U+009B */
    esc("nbsp\xc2\xa0", "nbsp\xc2\xa0");                         /* U+00A0 is printable */
    esc("\xff\xfe", "\\xff\\xfe");                               /* never in UTF-8 */
    esc("\xc0\xaf", "\\xc0\\xaf");                               /* overlong '/' */
    esc("\xe0\x80\xaf", "\\xe0\\x80\\xaf");                      /* overlong, 3 bytes */
    esc("\xed\xa0\x80", "\\xed\\xa0\\x80");                      /* a surrogate */
    esc("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");                 /* U+10FFFF */
    esc("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");             /* beyond it */
    esc("cut\xe2\x82", "cut\\xe2\\x82");                         /* a sequence cut short */
    esc("\x80lone", "\\x80lone");                                /* a lone continuation */

    /* a small buffer: cut before an escape that does not fit, never inside it */
    char small[6];
    icp_escape("ab\x1b" "cd", small, sizeof small);
    if (strcmp(small, "ab")) {
        fprintf(stderr, "FAILED: cut inside an escape: '%s'\n", small);
        failures++;
    }

    /* one call, one line, whatever the peer put in its text */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    icp_log_to(f);
    icp_log("serve: ", "%s: put %s", "10.0.0.2:5000", "x\nserve: 10.9.9.9:1: put forged\x1b[2K");
    icp_log_to(NULL);
    icp_log("serve: ", "nowhere");
    fclose(f);
    const char *want = "serve: 10.0.0.2:5000: put x\\nserve: 10.9.9.9:1: put forged\\x1b[2K\n";
    if (!text || strcmp(text, want) != 0) {
        fprintf(stderr, "FAILED: log line '%s', want '%s'\n", text ? text : "(none)", want);
        failures++;
    }
    free(text);
    if (failures)
        fprintf(stderr, "test_copy_log: %d failure(s)\n", failures);
    else
        printf("test_copy_log: ok\n");
    return failures != 0;
}
