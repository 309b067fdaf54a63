/* info.c (abi): MPI_Info objects (ordered key/value lists of strings), MPI_INFO_ENV, and
 * the hints cached on communicators (MPI_Comm_set_info/get_info, and the info argument of
 * MPI_Comm_dup_with_info): the recognized ones are kept and reported, others ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "abi.h"

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

static info *info_of(MPI_Info h)
{
    if (h == MPI_INFO_ENV) {
        if (!env_info.n && ism.initialized) {
            static char n[16], lvl[32];
            snprintf(n, sizeof n, "%d", ism.gsize);
            snprintf(lvl, sizeof lvl, "%s",
                     ism.thread_level == MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
                     : ism.thread_level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                     : ism.thread_level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                                                 : "MPI_THREAD_SINGLE");
            const char *keys[] = {"maxprocs", "thread_level", "host"};
            const char *vals[] = {n, lvl, ism.procname};
            env_info.e = calloc(3, sizeof(kv));
            for (int i = 0; env_info.e && i < 3; i++) {
                env_info.e[i].key = dupstr(keys[i]);
                env_info.e[i].val = dupstr(vals[i]);
                env_info.n = env_info.cap = i + 1;
            }
        }
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

/* MPI 4.0: an info object describing the execution environment (what MPI_INFO_ENV holds),
 * also before MPI_Init; argc/argv add nothing isthmus reports. */
int PMPI_Info_create_env(int argc, char *argv[], MPI_Info *info)
{
    (void)argc;
    (void)argv;
    if (!info)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Info_create_env", "info is NULL");
    return PMPI_Info_dup(MPI_INFO_ENV, info);
}
ISM_PMPI(Info_create_env)
