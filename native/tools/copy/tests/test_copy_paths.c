/* test_copy_paths.c: the served directory's boundary and the temporary file (paths.h) on
 * a real directory tree: lexical refusals (control characters included), symbolic links
 * that leave the directory (refused) or stay inside (followed), where a file lands for
 * each destination form, that a committed file has its name, mtime and mode (masked by
 * the receiver's umask) while a discarded one leaves nothing, that a second copy to the
 * same target is refused as busy, what a resumable copy keeps, and that a partial file
 * planted by someone else (a hard link to a file outside, another owner's file, a FIFO)
 * is refused and left as it was; directories made on the way stay inside. Runs under ASan/UBSan in the sanitizer build. */
#define _GNU_SOURCE
#include "paths.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                 \
            failures++;                                                                          \
        }                                                                                        \
    } while (0)

static void norm(const char *in, int ok, const char *want, int want_hint)
{
    char out[ICP_MAX_PATH + 1];
    int hint = -1;
    const char *why = NULL;
    int rc = icp_path_normalize(in, out, sizeof out, &hint, &why);
    CHECK((rc == 0) == ok, "normalize('%s') -> %d (%s)", in, rc, why ? why : "");
    if (ok && rc == 0)
        CHECK(!strcmp(out, want) && hint == want_hint, "normalize('%s') = '%s' hint %d", in, out, hint);
}

static int resolve(int root, const char *path, const char *src, const char *want_rel)
{
    char p[ICP_MAX_PATH + 1], msg[512] = "";
    int hint;
    const char *why;
    if (icp_path_normalize(path, p, sizeof p, &hint, &why) != 0)
        return ICP_S_PATH;
    icp_target t;
    int st = icp_target_resolve(root, p, hint, src, 1, &t, msg, sizeof msg);
    if (st == ICP_OK && want_rel)
        CHECK(!strcmp(t.rel, want_rel), "'%s' resolved to '%s', want '%s'", path, t.rel, want_rel);
    if (st != ICP_OK)
        CHECK(msg[0] != 0, "'%s': a refusal without a message", path);
    icp_target_close(&t);
    return st;
}

int main(void)
{
    norm("a/./b//c/", 1, "a/b/c", 1);
    norm("", 1, "", 1);
    norm(".", 1, "", 1);
    norm("x.bin", 1, "x.bin", 0);
    norm("d/.", 1, "d", 1);
    norm("..", 0, "", 0);
    norm("a/../b", 0, "", 0);
    norm("/etc/passwd", 0, "", 0);
    norm("...", 1, "...", 0);
    norm("a\nb", 0, "", 0);
    norm("e\x1b[31mvil", 0, "", 0);
    norm("dir\x07/x", 0, "", 0);
    norm("tab\there", 0, "", 0);
    norm("del\x7f", 0, "", 0);
    norm("caf\xc3\xa9/na\xc3\xafve.txt", 1, "caf\xc3\xa9/na\xc3\xafve.txt", 0); /* UTF-8 is fine */
    CHECK(icp_name_problem("data.bin") == NULL, "a plain name");
    CHECK(icp_name_problem("a\x1b" "b") && strstr(icp_name_problem("a\x1b" "b"), "control"),
          "a name with ESC");
    CHECK(icp_name_problem("a\nb") != NULL, "a name with a newline");
    CHECK(icp_name_problem("a/b") != NULL && icp_name_problem("..") != NULL, "'/' and '..'");

    char tmpl[] = "/tmp/icp-paths-XXXXXX";
    char *top = mkdtemp(tmpl);
    if (!top)
        return perror("mkdtemp"), 1;
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/root", top);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/root/sub", top);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/outside", top);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/outside/secret", top);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    snprintf(p, sizeof p, "%s/root/out", top);
    snprintf(q, sizeof q, "%s/outside", top);
    CHECK(symlink(q, p) == 0, "symlink out");
    snprintf(p, sizeof p, "%s/root/inner", top);
    CHECK(symlink("sub", p) == 0, "symlink inner");
    snprintf(p, sizeof p, "%s/root/up", top);
    CHECK(symlink("..", p) == 0, "symlink up");
    snprintf(p, sizeof p, "%s/root", top);
    int root = open(p, O_PATH | O_DIRECTORY);
    CHECK(root >= 0, "open root");

    CHECK(resolve(root, "", "f.bin", "f.bin") == ICP_OK, "root");
    CHECK(resolve(root, "sub", "f.bin", "sub/f.bin") == ICP_OK, "into a directory");
    CHECK(resolve(root, "sub/g.bin", "f.bin", "sub/g.bin") == ICP_OK, "renamed");
    CHECK(resolve(root, "inner/", "f.bin", "inner/f.bin") == ICP_OK, "a link inside");
    CHECK(resolve(root, "out", "f.bin", NULL) == ICP_S_PATH, "a link out");
    CHECK(resolve(root, "out/x", "f.bin", NULL) == ICP_S_PATH, "through a link out");
    CHECK(resolve(root, "up/x", "f.bin", NULL) == ICP_S_PATH, "a link to ..");
    CHECK(resolve(root, "../x", "f.bin", NULL) == ICP_S_PATH, "..");
    CHECK(resolve(root, "nodir/x", "f.bin", NULL) == ICP_S_NOENT, "missing parent");
    CHECK(resolve(root, "sub/", "..", NULL) == ICP_S_PATH, "a source name of ..");
    int fd = icp_open_beneath(root, "out/secret", O_RDONLY);
    CHECK(fd < 0 && errno == EXDEV, "reading through a link out: fd %d errno %d", fd, errno);
    fd = icp_open_beneath(root, "inner", O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0, "a link inside opens");
    if (fd >= 0)
        close(fd);

    /* directories made on the way (many-file puts): inside only, through no link out */
    char msg[512];
    struct stat ms;
    CHECK(icp_mkdirs_beneath(root, "new/deeper/deepest", msg, sizeof msg) == ICP_OK, "%s", msg);
    snprintf(p, sizeof p, "%s/root/new/deeper/deepest", top);
    CHECK(stat(p, &ms) == 0 && S_ISDIR(ms.st_mode), "the directories were made");
    CHECK(icp_mkdirs_beneath(root, "new/deeper", msg, sizeof msg) == ICP_OK, "again: %s", msg);
    CHECK(icp_mkdirs_beneath(root, "inner/made", msg, sizeof msg) == ICP_OK, "a link inside: %s", msg);
    CHECK(icp_mkdirs_beneath(root, "out/made", msg, sizeof msg) == ICP_S_PATH && strstr(msg, "leaves"),
          "through a link out: %s", msg);
    CHECK(icp_mkdirs_beneath(root, "up/made", msg, sizeof msg) == ICP_S_PATH, "through a link to ..");
    snprintf(p, sizeof p, "%s/outside/made", top);
    CHECK(access(p, F_OK) != 0, "a directory was made outside through a link");
    snprintf(p, sizeof p, "%s/made", top);
    CHECK(access(p, F_OK) != 0, "a directory was made above the root through a link");
    snprintf(p, sizeof p, "%s/root/sub/plain", top);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    CHECK(icp_mkdirs_beneath(root, "sub/plain/x", msg, sizeof msg) == ICP_S_TYPE, "a file on the way: %s", msg);

    /* commit: name, mode, mtime; discard: nothing left */
    icp_target t, t2;
    uint64_t have = 99;
    CHECK(icp_target_resolve(root, "sub/done.bin", 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(icp_target_open_tmp(&t, 0, 100, &have, msg, sizeof msg) == ICP_OK && have == 0, "%s", msg);
    CHECK(write(t.fd, "abc", 3) == 3, "write");
    /* a second copy to the same target is refused while the first holds the lock */
    CHECK(icp_target_resolve(root, "sub/done.bin", 0, "x", 1, &t2, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(icp_target_open_tmp(&t2, 0, 100, &have, msg, sizeof msg) == ICP_S_BUSY, "second copy: %s", msg);
    icp_target_close(&t2);
    CHECK(icp_target_commit(&t, 0640, 0, 1600000000, msg, sizeof msg) == ICP_OK, "%s", msg);
    icp_target_close(&t);
    struct stat st;
    snprintf(p, sizeof p, "%s/root/sub/done.bin", top);
    CHECK(stat(p, &st) == 0 && st.st_size == 3 && (st.st_mode & 0777) == 0640 &&
              st.st_mtime == 1600000000, "committed file");
    snprintf(p, sizeof p, "%s/root/sub/.done.bin.icp-partial", top);
    CHECK(access(p, F_OK) != 0, "a committed copy left its partial file");
    /* the mode the peer asked for, masked by the receiver's umask; no set-id bits */
    static const unsigned modes[][3] = {{0777, 027, 0750}, {0666, 022, 0644}, {04755, 0, 0755},
                                        {0600, 077, 0600}};
    for (int i = 0; i < 4; i++) {
        CHECK(icp_target_resolve(root, "sub/mode.bin", 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
        CHECK(icp_target_open_tmp(&t, 0, 100, &have, msg, sizeof msg) == ICP_OK, "%s", msg);
        CHECK(icp_target_commit(&t, modes[i][0], modes[i][1], 0, msg, sizeof msg) == ICP_OK, "%s", msg);
        icp_target_close(&t);
        snprintf(p, sizeof p, "%s/root/sub/mode.bin", top);
        CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == modes[i][2], "mode %o umask %o -> %o, want %o",
              modes[i][0], modes[i][1], st.st_mode & 07777, modes[i][2]);
    }
    CHECK(icp_target_resolve(root, "sub/gone.bin", 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(icp_target_open_tmp(&t, 0, 100, &have, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(write(t.fd, "abc", 3) == 3, "write");
    icp_target_close(&t);
    snprintf(p, sizeof p, "%s/root/sub/.gone.bin.icp-partial", top);
    CHECK(access(p, F_OK) != 0, "a discarded copy left its partial file");
    snprintf(p, sizeof p, "%s/root/sub/gone.bin", top);
    CHECK(access(p, F_OK) != 0, "a discarded copy got the target's name");

    /* resume: a failed copy keeps its bytes; the next one with resume finds them, one
     * without empties the file, and a partial longer than the file is not offered */
    CHECK(icp_target_resolve(root, "sub/part.bin", 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(icp_target_open_tmp(&t, 1, 100, &have, msg, sizeof msg) == ICP_OK && have == 0, "%s", msg);
    CHECK(write(t.fd, "12345", 5) == 5, "write");
    icp_target_close(&t);
    snprintf(p, sizeof p, "%s/root/sub/.part.bin.icp-partial", top);
    CHECK(access(p, F_OK) == 0, "a resumable copy's partial file was removed");
    CHECK(icp_target_resolve(root, "sub/part.bin", 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(icp_target_open_tmp(&t, 1, 100, &have, msg, sizeof msg) == ICP_OK && have == 5, "have %llu",
          (unsigned long long)have);
    icp_target_close(&t);
    CHECK(icp_target_resolve(root, "sub/part.bin", 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
    CHECK(icp_target_open_tmp(&t, 1, 4, &have, msg, sizeof msg) == ICP_OK && have == 0, "longer: %llu",
          (unsigned long long)have);
    icp_target_close(&t);
    CHECK(access(p, F_OK) != 0, "an emptied partial file was kept");

    /* planted partial files: a hard link to a file outside, a file of another owner, a
     * FIFO; each is refused (with or without resume) and left exactly as it was */
    snprintf(q, sizeof q, "%s/outside/victim", top);
    int vfd = open(q, O_CREAT | O_WRONLY, 0644);
    CHECK(vfd >= 0 && write(vfd, "precious\n", 9) == 9, "victim");
    close(vfd);
    snprintf(p, sizeof p, "%s/root/sub/.hl.bin.icp-partial", top);
    CHECK(link(q, p) == 0, "plant a hard link: %s", strerror(errno));
    snprintf(p, sizeof p, "%s/root/sub/.own.bin.icp-partial", top);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    int chowned = chown(p, 12345, 12345) == 0; /* needs root; else that case is skipped */
    snprintf(p, sizeof p, "%s/root/sub/.fifo.bin.icp-partial", top);
    CHECK(mkfifo(p, 0600) == 0, "plant a FIFO");
    static const struct { const char *path, *why; } planted[] = {
        {"sub/hl.bin", "2 hard links"}, {"sub/own.bin", "belongs to uid 12345"},
        {"sub/fifo.bin", "not a regular file"}};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && !chowned) {
            fprintf(stderr, "test_copy_paths: not root: the other owner's partial file is not tried\n");
            continue;
        }
        for (int resume = 0; resume < 2; resume++) {
            msg[0] = 0;
            CHECK(icp_target_resolve(root, planted[i].path, 0, "x", 1, &t, msg, sizeof msg) == ICP_OK, "%s", msg);
            int st2 = icp_target_open_tmp(&t, resume, 100, &have, msg, sizeof msg);
            CHECK(st2 == ICP_S_PATH && strstr(msg, planted[i].why) && t.fd < 0,
                  "%s (resume %d): status %d: %s", planted[i].path, resume, st2, msg);
            icp_target_close(&t);
        }
    }
    CHECK(stat(q, &st) == 0 && st.st_size == 9 && (st.st_mode & 07777) == 0644 && st.st_nlink == 2,
          "the victim changed: size %lld mode %o links %ju", (long long)st.st_size,
          st.st_mode & 07777, (uintmax_t)st.st_nlink);
    snprintf(p, sizeof p, "%s/root/sub/.fifo.bin.icp-partial", top);
    CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode), "the planted FIFO is left alone");
    close(root);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", top);
    if (failures)
        fprintf(stderr, "test_copy_paths: %d failure(s)\n", failures);
    else
        printf("test_copy_paths: ok\n");
    return failures != 0;
}
