/* tun.h: the emulator's attachment to a site: a TUN device created inside the site's
 * network namespace (named by `ip netns add`, so /var/run/netns/<name>), given an IPv4
 * address, a /24 route (implied by the address) and an MTU, and brought up together with
 * the namespace's loopback device.
 *
 * The device is not persistent: it disappears when the emulator closes its descriptor,
 * so an emulator that dies, however it dies, leaves no device behind. */
#ifndef ISM_LE_TUN_H
#define ISM_LE_TUN_H

#include <stddef.h>
#include <stdint.h>

/* Packets the kernel may queue on a site's device before the emulator reads them. */
#define ISM_LE_TUN_TXQLEN 4000

/* Create device `ifname` in namespace `netns` with address addr (host byte order) /24
 * and the given MTU. Returns the non-blocking descriptor, or -1 with a message in err. */
int ism_le_tun_open(const char *netns, const char *ifname, uint32_t addr, uint32_t mtu,
                    char *err, size_t errlen);

#endif
