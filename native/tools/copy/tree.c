/* tree.c: the file list of a many-file copy (tree.h). */
#define _GNU_SOURCE
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "paths.h"

int icp_utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2
                : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0 || (n == 1 && *p < 0xC2))
            return 0;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80)
                return 0;
    }
    return 1;
}

void icp_item_fail(icp_item *it, int state, const char *fmt, ...)
{
    char b[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    free(it->err);
    it->err = strdup(b);
    it->state = state;
}

icp_item *icp_list_push(icp_list *l, const char *src, const char *rel)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        icp_item *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return NULL;
        l->v = v;
        l->cap = cap;
    }
    icp_item *it = &l->v[l->n];
    memset(it, 0, sizeof *it);
    it->src = strdup(src);
    it->rel = strdup(rel);
    if (!it->src || !it->rel) {
        free(it->src);
        free(it->rel);
        return NULL;
    }
    l->n++;
    return it;
}

/* One entry at src (lstat'ed as st) with the remote path rel; directories recurse. */
static int add_entry(icp_list *l, const char *src, const char *rel, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(src, &st) != 0) {
        snprintf(err, errlen, "%s: %s", src, strerror(errno));
        return -1;
    }
    int link = S_ISLNK(st.st_mode);
    if (link && stat(src, &st) != 0)
        st.st_mode = 0; /* a dangling link: skipped below */
    if (S_ISDIR(st.st_mode) && !link) {
        DIR *d = opendir(src);
        if (!d) {
            icp_item *it = icp_list_push(l, src, rel);
            if (!it)
                goto nomem;
            icp_item_fail(it, ICP_IT_FAILED, "cannot read the directory: %s", strerror(errno));
            return 0;
        }
        struct dirent *e;
        int rc = 0;
        while (rc == 0 && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *s2 = NULL, *r2 = NULL;
            if (asprintf(&s2, "%s/%s", src, e->d_name) < 0 ||
                asprintf(&r2, "%s%s%s", rel, *rel ? "/" : "", e->d_name) < 0)
                rc = -1, snprintf(err, errlen, "out of memory listing %s", src);
            else
                rc = add_entry(l, s2, r2, err, errlen);
            free(s2);
            free(r2);
        }
        closedir(d);
        return rc;
    }
    icp_item *it = icp_list_push(l, src, rel);
    if (!it)
        goto nomem;
    const char *bad = NULL;
    char norm[ICP_MAX_PATH + 1];
    int hint;
    if (!icp_utf8_ok(rel))
        bad = "is not UTF-8";
    else if (strlen(rel) > ICP_MAX_PATH || icp_path_normalize(rel, norm, sizeof norm, &hint, &bad) != 0)
        bad = bad ? bad : "is too long";
    if (bad) {
        icp_item_fail(it, ICP_IT_FAILED, "its path %s", bad);
    } else if (S_ISDIR(st.st_mode)) {
        icp_item_fail(it, ICP_IT_SKIPPED, "a symbolic link to a directory (not followed)");
    } else if (!S_ISREG(st.st_mode)) {
        icp_item_fail(it, ICP_IT_SKIPPED, "not a regular file%s", link ? " (a dangling link)" : "");
    } else {
        it->size = (uint64_t)st.st_size;
        it->mode = st.st_mode & 0777;
        it->mtime = st.st_mtim.tv_sec;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory listing %s", src);
    return -1;
}

int icp_list_add(icp_list *l, const char *arg, int keep_path, char *err, size_t errlen)
{
    char b[ICP_MAX_PATH + 1], norm[ICP_MAX_PATH + 1];
    const char *why = NULL;
    int hint;
    snprintf(b, sizeof b, "%s", arg);
    size_t n = strlen(b);
    while (n > 1 && b[n - 1] == '/')
        b[--n] = 0;
    const char *rel;
    if (keep_path) {
        if (icp_path_normalize(b, norm, sizeof norm, &hint, &why) != 0) {
            snprintf(err, errlen, "%s: %s", arg, why);
            return -1;
        }
        rel = norm;
    } else {
        const char *slash = strrchr(b, '/');
        rel = slash ? slash + 1 : b;
        /* "dir/", "dir/." or ".": its contents, as rsync reads a trailing slash */
        if (!strcmp(rel, ".") || !strcmp(rel, "..") || (arg[0] && arg[strlen(arg) - 1] == '/'))
            rel = "";
    }
    if (!*rel) {
        struct stat st;
        if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: %s", arg, "names no file to copy");
            return -1;
        }
    }
    return add_entry(l, arg, rel, err, errlen);
}

int icp_list_add_from(icp_list *l, const char *listfile, char *err, size_t errlen)
{
    FILE *f = strcmp(listfile, "-") ? fopen(listfile, "r") : stdin;
    if (!f) {
        snprintf(err, errlen, "%s: %s", listfile, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    int rc = 0, no = 0;
    while (rc == 0 && (k = getline(&line, &cap, f)) >= 0) {
        no++;
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r'))
            line[--k] = 0;
        if (!k)
            continue;
        char e2[900];
        if (icp_list_add(l, line, 1, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "%s line %d: %s", listfile, no, e2);
            rc = -1;
        }
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

static int by_size(const void *a, const void *b)
{
    const icp_item *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return strcmp(x->rel, y->rel);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int icp_list_sort(icp_list *l, char *err, size_t errlen)
{
    qsort(l->v, l->n, sizeof *l->v, by_size);
    /* the same remote path twice would be two copies racing for one name */
    char **names = malloc((l->n ? l->n : 1) * sizeof *names);
    if (!names) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < l->n; i++)
        names[i] = l->v[i].rel;
    qsort(names, l->n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 1; i < l->n && !rc; i++)
        if (!strcmp(names[i - 1], names[i])) {
            snprintf(err, errlen, "two sources would both go to %s", names[i]);
            rc = -1;
        }
    free(names);
    return rc;
}

void icp_list_free(icp_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].src);
        free(l->v[i].rel);
        free(l->v[i].err);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}
