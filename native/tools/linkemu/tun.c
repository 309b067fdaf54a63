/* tun.c: TUN device creation and addressing inside a named network namespace (tun.h).
 * Uses setns(2) into the namespace, TUNSETIFF, and the classic interface ioctls on a
 * socket made inside the namespace; then returns to the emulator's own namespace. The
 * TUN descriptor stays bound to the device, which stays in the site's namespace. */
#include "tun.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int set_flags_up(int sock, const char *ifname, char *err, size_t errlen)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0 ||
        (ifr.ifr_flags |= IFF_UP | IFF_RUNNING, ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)) {
        snprintf(err, errlen, "cannot bring up %s: %s", ifname, strerror(errno));
        return -1;
    }
    return 0;
}

static int set_inet(int sock, const char *ifname, unsigned long req, uint32_t v,
                    const char *what, char *err, size_t errlen)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(v)};
    memcpy(&ifr.ifr_addr, &sin, sizeof sin);
    if (ioctl(sock, req, &ifr) < 0) {
        snprintf(err, errlen, "cannot set the %s of %s: %s", what, ifname, strerror(errno));
        return -1;
    }
    return 0;
}

/* Everything that must happen inside the namespace. Returns the TUN fd or -1. */
static int open_inside(const char *ifname, uint32_t addr, uint32_t mtu, char *err, size_t errlen)
{
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open /dev/net/tun: %s (load the tun module: modprobe tun)",
                 strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        snprintf(err, errlen, "TUNSETIFF %s: %s", ifname, strerror(errno));
        close(fd);
        return -1;
    }
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct ifreq mr;
    memset(&mr, 0, sizeof mr);
    snprintf(mr.ifr_name, IFNAMSIZ, "%s", ifname);
    mr.ifr_mtu = (int)mtu;
    int rc = 0;
    if (ioctl(sock, SIOCSIFMTU, &mr) < 0) {
        snprintf(err, errlen, "cannot set MTU %u on %s: %s", mtu, ifname, strerror(errno));
        rc = -1;
    }
    /* The kernel queues packets for the emulator here; 500 (the TUN default) overflowed
     * while the emulator was off the CPU, as loss nobody asked for. */
    struct ifreq qr;
    memset(&qr, 0, sizeof qr);
    snprintf(qr.ifr_name, IFNAMSIZ, "%s", ifname);
    qr.ifr_qlen = ISM_LE_TUN_TXQLEN;
    if (rc == 0 && ioctl(sock, SIOCSIFTXQLEN, &qr) < 0) {
        snprintf(err, errlen, "cannot set the queue length of %s: %s", ifname, strerror(errno));
        rc = -1;
    }
    if (rc == 0)
        rc = set_inet(sock, ifname, SIOCSIFADDR, addr, "address", err, errlen);
    if (rc == 0)
        rc = set_inet(sock, ifname, SIOCSIFNETMASK, 0xffffff00u, "netmask", err, errlen);
    if (rc == 0)
        rc = set_flags_up(sock, ifname, err, errlen);
    if (rc == 0)
        rc = set_flags_up(sock, "lo", err, errlen);
    close(sock);
    if (rc < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int ism_le_tun_open(const char *netns, const char *ifname, uint32_t addr, uint32_t mtu,
                    char *err, size_t errlen)
{
    char path[512];
    snprintf(path, sizeof path, "/var/run/netns/%s", netns);
    int target = open(path, O_RDONLY | O_CLOEXEC);
    if (target < 0) {
        snprintf(err, errlen, "cannot open namespace %s: %s (create it with: ip netns add %s)",
                 path, strerror(errno), netns);
        return -1;
    }
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) {
        snprintf(err, errlen, "cannot open /proc/self/ns/net: %s", strerror(errno));
        close(target);
        return -1;
    }
    int fd = -1;
    if (setns(target, CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "cannot enter namespace %s: %s (needs root or CAP_SYS_ADMIN)",
                 netns, strerror(errno));
    } else {
        fd = open_inside(ifname, addr, mtu, err, errlen);
        if (setns(home, CLONE_NEWNET) < 0) {
            snprintf(err, errlen, "cannot return to the original namespace: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
            fd = -1;
        }
    }
    close(target);
    close(home);
    return fd;
}
