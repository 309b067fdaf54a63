/* loader.c: dlopen of the vendor backend plugin.
 *
 * RTLD_DEEPBIND makes the plugin, and the vendor libmpi it pulls in, resolve MPI_*
 * against the vendor first, never against libisthmus's MPI_* with their different ABI;
 * RTLD_LOCAL keeps the vendor's symbols out of the global namespace.
 */
#define _GNU_SOURCE
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
/* ThreadSanitizer's and AddressSanitizer's dlopen refuse RTLD_DEEPBIND
 * (google/sanitizers#611: a library bound to itself first would call libc around the
 * sanitizer's interceptors). dlmopen into the base namespace is the same load and is not
 * intercepted. Here the plugin is itself built with the sanitizer, so its runtime precedes
 * libc in its scope and the vendor's calls to libc still reach the interceptors. (With
 * ISM_SANITIZE, a program built by isthmus-cc then runs under the vendor's launcher with
 * LD_PRELOAD of libasan.so.) */
static void *open_plugin(const char *path)
{
    return dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}
#else
static void *open_plugin(const char *path)
{
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}
#endif

const char *ism_backend_vendor(void)
{
    const char *v = getenv("ISTHMUS_MPI");
    if (v && *v)
        return v;
    if (getenv("OMPI_COMM_WORLD_SIZE"))
        return "openmpi";
    if (getenv("PMI_RANK") || getenv("PMI_FD") || getenv("HYDI_CONTROL_FD") || getenv("PMI_SIZE"))
        return "mpich";
    return NULL;
}

/* A program that refers to `environ` has its own copy of it (a copy relocation), which
 * libc keeps up to date; libc's original, which the vendor libraries see under
 * RTLD_DEEPBIND, keeps the start-up value. Open MPI then edits a stale environment and
 * frees memory it does not own (a crash in MPI_Init). So the original is pointed at the
 * live one when the vendor is loaded, and again before MPI_Finalize (setenv may have moved
 * it). isthmus-cc also compiles with -mno-direct-extern-access where the compiler has it,
 * which avoids the copy in the first place. */
static char ***vendor_environ;

void ism_backend_sync_environ(void)
{
    if (vendor_environ && vendor_environ != &environ)
        *vendor_environ = environ;
}

static void share_environ(void *h)
{
    vendor_environ = (char ***)dlsym(h, "environ");
    ism_backend_sync_environ();
}

const ism_backend *ism_backend_load(const char *dir, const char *vendor, char *err, size_t errlen)
{
    const char *tries[2] = {vendor, NULL};
    char path[4200], why[1024] = "";
    if (vendor && strcmp(vendor, "openmpi") && strcmp(vendor, "mpich")) {
        snprintf(err, errlen, "ISTHMUS_MPI=%s is not a known vendor MPI (use openmpi or mpich)",
                 vendor);
        return NULL;
    }
    if (!vendor) {
        tries[0] = "openmpi";
        tries[1] = "mpich";
    }
    for (int i = 0; i < 2 && tries[i]; i++) {
        snprintf(path, sizeof path, "%s/isthmus-backend-%s.so", dir, tries[i]);
        void *h = open_plugin(path);
        if (!h) {
            if (!why[0])
                snprintf(why, sizeof why, "%s", dlerror());
            continue;
        }
        share_environ(h);
        ism_backend_get_fn get = (ism_backend_get_fn)dlsym(h, ISM_BACKEND_SYMBOL);
        const ism_backend *be = get ? get() : NULL;
        if (!be || be->abi != ISM_BACKEND_ABI) {
            snprintf(err, errlen, "backend %s is from another isthmus version; rebuild and "
                     "reinstall isthmus", path);
            return NULL;
        }
        return be;
    }
    int mpich = vendor && !strcmp(vendor, "mpich");
    snprintf(err, errlen,
             "cannot load the %s backend from %s (%s). Install that MPI (Debian: apt install %s) "
             "and rebuild isthmus, or choose the other with ISTHMUS_MPI=%s",
             vendor ? vendor : "openmpi or mpich", dir, why,
             mpich ? "mpich libmpich-dev" : "openmpi-bin libopenmpi-dev",
             mpich ? "openmpi" : "mpich");
    return NULL;
}
