/* loader.h: finding and loading a vendor backend plugin (used by libisthmus and by
 * isthmus-gateway alike). */
#ifndef ISM_BACKEND_LOADER_H
#define ISM_BACKEND_LOADER_H

#include <stddef.h>

#include "backend.h"

/* The vendor named by ISTHMUS_MPI, or guessed from the launcher's environment, or NULL. */
const char *ism_backend_vendor(void);

/* Load isthmus-backend-<vendor>.so from dir (vendor NULL: the first that loads of
 * openmpi, mpich). On failure returns NULL with a message naming cause and fix. */
const ism_backend *ism_backend_load(const char *dir, const char *vendor, char *err, size_t errlen);

/* Point the `environ` the vendor libraries see at the live environment (see loader.c). */
void ism_backend_sync_environ(void);

#endif
