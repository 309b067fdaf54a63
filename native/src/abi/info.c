/* info.c (abi): MPI_Info objects (ordered key/value lists of strings), MPI_INFO_ENV, and
 * the hints cached on communicators (MPI_Comm_set_info/get_info, and the info argument of
 * MPI_Comm_dup_with_info): the recognized ones are kept and reported, others ignored.
 */
#define _DEFAULT_SOURCE /* gethostname */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "abi.h"
#include "../coll/coll.h"

typedef struct kv {
    char *key, *val;
} kv;

typedef struct info {
    int n, cap;
    kv *e;
} info;

static info env_info; /* MPI_INFO_ENV: filled on first use */

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

/* ---- the execution environment (MPI 4.0 §11.4.1): MPI_INFO_ENV and MPI_Info_create_env
 * describe how the program was started, so they hold the same before MPI_Init, after it
 * and after MPI_Finalize: command and argv (from the arguments given, else from
 * /proc/self/cmdline), maxprocs (the job's application ranks: `isthmus run`'s layout,
 * else the vendor launcher's size, else 1), host, arch and wdir (the working directory
 * at the first query). thread_level is left out: no launcher option requests one. */

static int kv_add(info *in, const char *key, const char *val)
{
    if (in->n == in->cap) {
        int cap = in->cap ? 2 * in->cap : 8;
        kv *e = realloc(in->e, sizeof *e * (size_t)cap);
        if (!e)
            return -1;
        in->e = e;
        in->cap = cap;
    }
    in->e[in->n].key = dupstr(key);
    in->e[in->n].val = dupstr(val);
    if (!in->e[in->n].key || !in->e[in->n].val) {
        free(in->e[in->n].key);
        free(in->e[in->n].val);
        return -1;
    }
    in->n++;
    return 0;
}

/* The application ranks of the job, as the launcher announced them; 0 if unknown. */
static long job_ranks(void)
{
    const char *r = getenv("ISTHMUS_SITE_RANKS"); /* `isthmus run`: "2,2,1" */
    if (r && *r) {
        long sum = 0;
        for (const char *p = r; *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0)
                return 0;
            sum += v;
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',')
                return 0;
        }
        return sum;
    }
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && atol(v) > 0)
            return atol(v);
    }
    return 1; /* started without a launcher: a singleton */
}

/* command and argv from argc/argv, or from /proc/self/cmdline when argv is absent. */
static int env_command(info *in, int argc, char **argv)
{
    char cmdline[8192], *args[256];
    if (argc <= 0 || !argv || !argv[0]) {
        argc = 0;
        FILE *f = fopen("/proc/self/cmdline", "r");
        size_t n = f ? fread(cmdline, 1, sizeof cmdline - 1, f) : 0;
        if (f)
            fclose(f);
        cmdline[n] = 0;
        for (size_t i = 0; i < n && argc < 256; i += strlen(cmdline + i) + 1)
            args[argc++] = cmdline + i;
        argv = args;
    }
    if (argc <= 0)
        return 0;
    if (kv_add(in, "command", argv[0]))
        return -1;
    if (argc < 2)
        return 0;
    char joined[MPI_MAX_INFO_VAL];
    size_t len = 0;
    joined[0] = 0;
    for (int i = 1; i < argc && argv[i]; i++) {
        int w = snprintf(joined + len, sizeof joined - len, "%s%s", i > 1 ? " " : "", argv[i]);
        if (w < 0 || (size_t)w >= sizeof joined - len)
            break; /* longer than an info value may be: the arguments that fit */
        len += (size_t)w;
    }
    return kv_add(in, "argv", joined);
}

static int env_fill(info *in, int argc, char **argv)
{
    static char wdir[4096]; /* the working directory at the first query */
    if (!wdir[0] && !getcwd(wdir, sizeof wdir))
        wdir[0] = 0;
    char host[256] = "", procs[32];
    gethostname(host, sizeof host - 1);
    struct utsname u;
    snprintf(procs, sizeof procs, "%ld", job_ranks());
    if (env_command(in, argc, argv) || kv_add(in, "maxprocs", procs))
        return -1;
    if (host[0] && kv_add(in, "host", host))
        return -1;
    if (uname(&u) == 0 && kv_add(in, "arch", u.machine))
        return -1;
    if (wdir[0] && kv_add(in, "wdir", wdir))
        return -1;
    return 0;
}

static void info_clear(info *in)
{
    for (int i = 0; i < in->n; i++) {
        free(in->e[i].key);
        free(in->e[i].val);
    }
    free(in->e);
    memset(in, 0, sizeof *in);
}

static info *info_of(MPI_Info h)
{
    if (h == MPI_INFO_ENV) {
        if (!env_info.n && env_fill(&env_info, 0, NULL))
            info_clear(&env_info); /* out of memory: empty, tried again next time */
        return &env_info;
    }
    if ((uintptr_t)h < 0x1000)
        return NULL;
    return (info *)h;
}

static int find(const info *in, const char *key)
{
    for (int i = 0; i < in->n; i++)
        if (!strcmp(in->e[i].key, key))
            return i;
    return -1;
}

#define INFO_ARG(fn, h, out)                                                                       \
    info *out = info_of(h);                                                                        \
    if (!out)                                                                                      \
        return ism_abi_error(NULL, MPI_ERR_INFO, fn, "invalid info object");

static int key_arg(const char *fn, const char *key)
{
    if (!key || !*key || strlen(key) >= MPI_MAX_INFO_KEY)
        return ism_abi_error(NULL, MPI_ERR_INFO_KEY, fn,
                             "the key is empty, NULL or longer than %d characters",
                             MPI_MAX_INFO_KEY - 1);
    return MPI_SUCCESS;
}

int PMPI_Info_create(MPI_Info *out)
{
    info *in = calloc(1, sizeof *in);
    if (!in)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Info_create", "out of memory");
    *out = (MPI_Info)in;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_create)

int PMPI_Info_set(MPI_Info h, const char *key, const char *value)
{
    INFO_ARG("MPI_Info_set", h, in);
    int rc = key_arg("MPI_Info_set", key);
    if (rc)
        return rc;
    if (in == &env_info)
        return ism_abi_error(NULL, MPI_ERR_INFO, "MPI_Info_set", "MPI_INFO_ENV is read-only");
    if (!value || strlen(value) >= MPI_MAX_INFO_VAL)
        return ism_abi_error(NULL, MPI_ERR_INFO_VALUE, "MPI_Info_set",
                             "the value is NULL or longer than %d characters",
                             MPI_MAX_INFO_VAL - 1);
    char *v = dupstr(value);
    if (!v)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Info_set", "out of memory");
    int i = find(in, key);
    if (i >= 0) {
        free(in->e[i].val);
        in->e[i].val = v;
        return MPI_SUCCESS;
    }
    if (in->n == in->cap) {
        int cap = in->cap ? 2 * in->cap : 8;
        kv *e = realloc(in->e, sizeof *e * (size_t)cap);
        if (!e) {
            free(v);
            return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Info_set", "out of memory");
        }
        in->e = e;
        in->cap = cap;
    }
    in->e[in->n].key = dupstr(key);
    in->e[in->n].val = v;
    if (!in->e[in->n].key) {
        free(v);
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Info_set", "out of memory");
    }
    in->n++;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_set)

int PMPI_Info_delete(MPI_Info h, const char *key)
{
    INFO_ARG("MPI_Info_delete", h, in);
    int rc = key_arg("MPI_Info_delete", key);
    if (rc)
        return rc;
    int i = find(in, key);
    if (i < 0 || in == &env_info)
        return ism_abi_error(NULL, MPI_ERR_INFO_NOKEY, "MPI_Info_delete", "no key \"%s\"", key);
    free(in->e[i].key);
    free(in->e[i].val);
    memmove(in->e + i, in->e + i + 1, sizeof *in->e * (size_t)(in->n - i - 1));
    in->n--;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_delete)

int PMPI_Info_get(MPI_Info h, const char *key, int valuelen, char *value, int *flag)
{
    INFO_ARG("MPI_Info_get", h, in);
    int rc = key_arg("MPI_Info_get", key);
    if (rc)
        return rc;
    if (valuelen < 0)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Info_get", "valuelen %d is negative",
                             valuelen);
    int i = find(in, key);
    *flag = i >= 0;
    if (i >= 0) {
        /* at most valuelen characters, plus the terminating NUL (MPI 3.1 §9.2) */
        strncpy(value, in->e[i].val, (size_t)valuelen);
        value[valuelen] = 0;
    }
    return MPI_SUCCESS;
}
ISM_PMPI(Info_get)

int PMPI_Info_get_string(MPI_Info h, const char *key, int *buflen, char *value, int *flag)
{
    INFO_ARG("MPI_Info_get_string", h, in);
    int rc = key_arg("MPI_Info_get_string", key);
    if (rc)
        return rc;
    int i = find(in, key);
    *flag = i >= 0;
    if (i < 0)
        return MPI_SUCCESS;
    int need = (int)strlen(in->e[i].val) + 1;
    if (*buflen > 0) {
        strncpy(value, in->e[i].val, (size_t)*buflen - 1);
        value[*buflen - 1] = 0;
    }
    *buflen = need;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_get_string)

int PMPI_Info_get_valuelen(MPI_Info h, const char *key, int *valuelen, int *flag)
{
    INFO_ARG("MPI_Info_get_valuelen", h, in);
    int rc = key_arg("MPI_Info_get_valuelen", key);
    if (rc)
        return rc;
    int i = find(in, key);
    *flag = i >= 0;
    if (i >= 0)
        *valuelen = (int)strlen(in->e[i].val);
    return MPI_SUCCESS;
}
ISM_PMPI(Info_get_valuelen)

int PMPI_Info_get_nkeys(MPI_Info h, int *nkeys)
{
    INFO_ARG("MPI_Info_get_nkeys", h, in);
    *nkeys = in->n;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_get_nkeys)

int PMPI_Info_get_nthkey(MPI_Info h, int n, char *key)
{
    INFO_ARG("MPI_Info_get_nthkey", h, in);
    if (n < 0 || n >= in->n)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Info_get_nthkey",
                             "key number %d is outside 0..%d", n, in->n - 1);
    snprintf(key, MPI_MAX_INFO_KEY, "%s", in->e[n].key);
    return MPI_SUCCESS;
}
ISM_PMPI(Info_get_nthkey)

int PMPI_Info_dup(MPI_Info h, MPI_Info *newinfo)
{
    INFO_ARG("MPI_Info_dup", h, in);
    MPI_Info n;
    int rc = PMPI_Info_create(&n);
    for (int i = 0; !rc && i < in->n; i++)
        rc = PMPI_Info_set(n, in->e[i].key, in->e[i].val);
    if (rc)
        return rc;
    *newinfo = n;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_dup)

int PMPI_Info_free(MPI_Info *h)
{
    info *in = h ? info_of(*h) : NULL;
    if (!in || in == &env_info)
        return ism_abi_error(NULL, MPI_ERR_INFO, "MPI_Info_free",
                             in ? "MPI_INFO_ENV cannot be freed" : "invalid info object");
    for (int i = 0; i < in->n; i++) {
        free(in->e[i].key);
        free(in->e[i].val);
    }
    free(in->e);
    free(in);
    *h = MPI_INFO_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_free)

/* ---- hints on communicators ----
 * The hints isthmus recognizes are MPI 4.0's four assertions (§7.4.4), booleans that
 * default to "false"; isthmus accepts and reports them but does not yet use them to
 * take shortcuts. Any other key, and a value other than true/false, is ignored, as
 * MPI 4.0 allows; MPI_Comm_get_info gives every recognized hint with the value in effect
 * (as MPICH does). c->hints holds only the hints set to a value other than the default. */
static const char *const comm_hints[] = {"mpi_assert_no_any_tag", "mpi_assert_no_any_source",
                                         "mpi_assert_exact_length",
                                         "mpi_assert_allow_overtaking"};
#define NHINTS ((int)(sizeof comm_hints / sizeof comm_hints[0]))

static int parse_bool(const char *v)
{
    while (*v == ' ')
        v++;
    size_t n = strlen(v);
    while (n && v[n - 1] == ' ')
        n--;
    if (n == 4 && !strncasecmp(v, "true", 4))
        return 1;
    if (n == 5 && !strncasecmp(v, "false", 5))
        return 0;
    return -1;
}

static int hint_value(const ism_comm *c, int k)
{
    const info *h = c->hints;
    return h && find(h, comm_hints[k]) >= 0;
}

static int hints_store(ism_comm *c, const int *val)
{
    MPI_Info n = MPI_INFO_NULL;
    for (int k = 0; k < NHINTS; k++) {
        if (!val[k])
            continue;
        int rc = n == MPI_INFO_NULL ? PMPI_Info_create(&n) : MPI_SUCCESS;
        if (rc || (rc = PMPI_Info_set(n, comm_hints[k], "true"))) {
            if (n != MPI_INFO_NULL)
                PMPI_Info_free(&n);
            return rc;
        }
    }
    ism_abi_hints_free(c);
    c->hints = n == MPI_INFO_NULL ? NULL : (void *)n;
    return MPI_SUCCESS;
}

int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info h)
{
    ISM_CHECK_INIT("MPI_Comm_set_info");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_set_info", "invalid communicator");
    INFO_ARG("MPI_Comm_set_info", h, in);
    /* isthmus's own: the collective algorithms (coll/select.c); a bad value is an error,
     * since a program that names an algorithm wants that one */
    for (int i = 0; i < in->n; i++) {
        const char *why = NULL;
        int rc = ism_coll_hint(c, in->e[i].key, in->e[i].val, &why);
        if (rc < 0)
            return ism_abi_error(c, rc == -ISM_ERR_NO_MEM ? MPI_ERR_NO_MEM : MPI_ERR_INFO_VALUE,
                                 "MPI_Comm_set_info", "%s", why ? why : "out of memory");
    }
    /* hints info does not mention keep their values (MPI 4.0 §7.4.4) */
    int val[NHINTS];
    for (int k = 0; k < NHINTS; k++) {
        val[k] = hint_value(c, k);
        int i = find(in, comm_hints[k]);
        int b = i >= 0 ? parse_bool(in->e[i].val) : -1;
        if (b >= 0)
            val[k] = b;
    }
    return hints_store(c, val);
}
ISM_PMPI(Comm_set_info)

static void add_coll_hint(void *arg, const char *k, const char *v)
{
    PMPI_Info_set(*(MPI_Info *)arg, k, v);
}

int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    ISM_CHECK_INIT("MPI_Comm_get_info");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_get_info", "invalid communicator");
    if (!info_used)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Comm_get_info", "info_used is NULL");
    MPI_Info n;
    int rc = PMPI_Info_create(&n);
    for (int k = 0; !rc && k < NHINTS; k++)
        rc = PMPI_Info_set(n, comm_hints[k], hint_value(c, k) ? "true" : "false");
    if (!rc)
        ism_coll_hints_each(c, add_coll_hint, &n);
    if (rc) {
        PMPI_Info_free(&n);
        return rc;
    }
    *info_used = n;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_get_info)

void ism_abi_hints_free(ism_comm *c)
{
    if (c->hints) {
        MPI_Info h = (MPI_Info)c->hints;
        PMPI_Info_free(&h);
        c->hints = NULL;
    }
}

/* ---- hints on windows ----
 * MPI 4.0 §12.2.1's window hints, with their defaults as MPICH reports them: a window's
 * info in use holds every one of them, with the value set at creation or by
 * MPI_Win_set_info, else the default. isthmus keeps every guarantee whatever the hints
 * say (ordered accumulates, locks always available), so a hint only changes what
 * MPI_Win_get_info reports. A key not listed, or a value that is not one the hint takes,
 * is ignored (as MPICH does; MPI allows it). */
enum { WH_BOOL, WH_ORDER, WH_OPS };
static const struct {
    const char *key, *def;
    int kind;
} win_hints[] = {
    {"no_locks", "false", WH_BOOL},
    {"accumulate_ordering", "rar,raw,war,waw", WH_ORDER},
    {"accumulate_ops", "same_op_no_op", WH_OPS},
    {"same_size", "false", WH_BOOL},
    {"same_disp_unit", "false", WH_BOOL},
    {"alloc_shared_noncontig", "false", WH_BOOL},
};
#define NWHINTS ((int)(sizeof win_hints / sizeof win_hints[0]))

/* "none", or a comma-separated list of rar, raw, war and waw */
static int ordering_ok(const char *v)
{
    if (!strcmp(v, "none"))
        return 1;
    for (;;) {
        if (strncmp(v, "rar", 3) && strncmp(v, "raw", 3) && strncmp(v, "war", 3) &&
            strncmp(v, "waw", 3))
            return 0;
        v += 3;
        if (!*v)
            return 1;
        if (*v++ != ',')
            return 0;
    }
}

static int win_hint_ok(int k, const char *v)
{
    switch (win_hints[k].kind) {
    case WH_BOOL:
        return parse_bool(v) >= 0;
    case WH_ORDER:
        return ordering_ok(v);
    default:
        return !strcmp(v, "same_op") || !strcmp(v, "same_op_no_op");
    }
}

int ism_abi_win_hints(const char *fn, MPI_Info given, MPI_Info prev, MPI_Info *out)
{
    const info *in = NULL;
    if (given != MPI_INFO_NULL) {
        INFO_ARG(fn, given, g);
        in = g;
    }
    MPI_Info n;
    int rc = prev != MPI_INFO_NULL ? PMPI_Info_dup(prev, &n) : PMPI_Info_create(&n);
    for (int k = 0; !rc && k < NWHINTS; k++) {
        int i = in ? find(in, win_hints[k].key) : -1;
        if (i >= 0 && win_hint_ok(k, in->e[i].val))
            rc = PMPI_Info_set(n, win_hints[k].key,
                               win_hints[k].kind == WH_BOOL
                                   ? (parse_bool(in->e[i].val) ? "true" : "false")
                                   : in->e[i].val);
        else if (prev == MPI_INFO_NULL)
            rc = PMPI_Info_set(n, win_hints[k].key, win_hints[k].def);
    }
    if (rc) {
        PMPI_Info_free(&n);
        return ism_abi_error(NULL, rc, fn, "cannot record the window's hints");
    }
    *out = n;
    return MPI_SUCCESS;
}

/* MPI 4.0: the execution environment as MPI_INFO_ENV holds it, also before MPI_Init and
 * after MPI_Finalize; command and argv come from argc/argv when given. */
int PMPI_Info_create_env(int argc, char *argv[], MPI_Info *info_out)
{
    if (!info_out)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Info_create_env", "info is NULL");
    info *in = calloc(1, sizeof *in);
    if (!in || env_fill(in, argc, argv)) {
        if (in)
            info_clear(in);
        free(in);
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Info_create_env", "out of memory");
    }
    *info_out = (MPI_Info)in;
    return MPI_SUCCESS;
}
ISM_PMPI(Info_create_env)
