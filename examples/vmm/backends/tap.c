/* SPDX-License-Identifier: MIT */
/*
 * The TAP backend: the guest's frames go to a Linux TAP interface and the
 * kernel's come back (Documentation/networking/tuntap.rst).
 *
 * The device is opened with IFF_TAP (Ethernet frames, not IP packets) and
 * IFF_NO_PI (no 4-byte packet information prefix), so one read() or
 * write() is exactly one frame as net.h defines it, and the descriptor,
 * non-blocking, carries frames as fd.c does for any such descriptor.
 *
 * The interface is created if missing and, not being persistent (no
 * TUNSETPERSIST), disappears when the descriptor is closed. Configuring
 * it (address, up) is the host administrator's business, as with QEMU's
 * and kvmtool's TAP backends.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "net.h"
#include "net_util.h"

#define TUN_PATH "/dev/net/tun"

/* Why TUNSETIFF failed, in terms of what to do about it. */
static const char *tunsetiff_hint(int err)
{
    switch (err) {
    case EPERM:
    case EACCES:
        return " (needs CAP_NET_ADMIN)";
    case EBUSY:
        return " (in use by another process, or exists as a TUN device)";
    case EINVAL:
        return " (invalid interface name?)";
    default:
        return "";
    }
}

net_backend *net_tap_create(const char *ifname, char *err, size_t errlen)
{
    struct ifreq ifr;
    int fd, e;

    if (!ifname || !*ifname) {
        net_set_err(err, errlen, "tap: missing interface name");
        return NULL;
    }
    if (strlen(ifname) >= IFNAMSIZ) {
        net_set_err(err, errlen, "tap: interface name '%s' too long "
                    "(at most %d characters)", ifname, IFNAMSIZ - 1);
        return NULL;
    }
    fd = open(TUN_PATH, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        net_set_err(err, errlen, "tap: cannot open " TUN_PATH ": %s%s",
                    strerror(e),
                    e == ENOENT ? " (no tun driver: modprobe tun)" :
                    e == EACCES || e == EPERM ? " (needs root)" : "");
        return NULL;
    }
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        e = errno;
        net_set_err(err, errlen, "tap: TUNSETIFF %s: %s%s", ifname,
                    strerror(e), tunsetiff_hint(e));
        close(fd);
        return NULL;
    }
    return net_fd_create("tap", fd, err, errlen);   /* frames: fd.c */
}
