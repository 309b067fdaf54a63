/* conf.h: the emulator's command-line link settings. The CLI (python/isthmus/netemu)
 * turns human units into plain numbers, so this parser reads only numbers:
 *
 *   delay=NS jitter=NS reorder=0|1 reorderp=P rate=BYTES_PER_S queue=BYTES burst=BYTES
 *   loss=P ge=P/R/LOSS_BAD/LOSS_GOOD dup=P corrupt=P mtu=BYTES
 *
 * comma-separated, e.g. "delay=5000000,rate=12500000,queue=125000". Probabilities are
 * fractions in [0, 1]. `ge` selects Gilbert-Elliott loss (see loss.h) and overrides
 * `loss`. Unknown keys and out-of-range values are errors. */
#ifndef ISM_LE_CONF_H
#define ISM_LE_CONF_H

#include <stddef.h>

#include "link.h"

/* Parse spec into *c (which keeps its values for keys the spec does not name).
 * Returns 0, or -1 with a message in err. */
int ism_le_conf_parse(const char *spec, ism_le_link_conf *c, char *err, size_t errlen);

#endif
