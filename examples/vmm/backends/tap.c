/* SPDX-License-Identifier: MIT */
/*
 * The TAP backend: the guest's frames go to a Linux TAP interface and the
 * kernel's come back (Documentation/networking/tuntap.rst).
 *
 * The device is opened with IFF_TAP (Ethernet frames, not IP packets) and
 * IFF_NO_PI (no 4-byte packet information prefix), so one read() or
 * write() is exactly one frame as net.h defines it. The descriptor is
 * non-blocking: the VMM polls it (poll_fd) and the NIC pulls frames with
 * rx() until it returns 0.
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
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "net.h"
#include "net_util.h"

#define TUN_PATH "/dev/net/tun"

/* The largest frame the kernel can hand us is bounded by the interface
 * MTU, which an administrator may raise past 1500; reads go through a
 * buffer big enough for any so an oversize frame is dropped whole rather
 * than truncated into something that looks valid. */
#define TAP_READ_MAX 65536

typedef struct tap {
    net_backend be;
    int fd;
    uint8_t rbuf[TAP_READ_MAX];
    net_txq txq;                /* frames to write (net.h) */
    net_rxq rxq;                /* frames read, on their way to the NIC */
} tap;

static tap *to_tap(net_backend *be)
{
    return (tap *)be;
}

/* One write() is one frame (IFF_NO_PI). EAGAIN (the interface's queue is
 * full) and ENOBUFS make the shared path (fault.c) keep the frame and
 * write it again later; EIO (the interface is down) and the rest lose it,
 * counted, as an unplugged wire would. */
static long tap_send(net_backend *be, const uint8_t *frame, size_t len)
{
    ssize_t n;

    do
        n = write(to_tap(be)->fd, frame, len);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -(long)errno : (long)n;
}

static int tap_tx(net_backend *be, const uint8_t *frame, size_t len)
{
    return net_txq_tx(be, &to_tap(be)->txq, tap_send, frame, len);
}

/* The next frame the kernel has for us (net_recv_fn). */
static size_t tap_recv(net_backend *be, uint8_t *buf, size_t cap)
{
    tap *t = to_tap(be);

    for (;;) {
        ssize_t n = read(t->fd, t->rbuf, sizeof t->rbuf);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 0;           /* EAGAIN: nothing waiting */
        }
        if (n == 0)
            return 0;
        be->stats.rx_offered++;
        /* Frames outside what net.h allows (oversize after an MTU change,
         * or larger than the caller's buffer) are dropped, not cut. */
        if ((size_t)n < NET_FRAME_MIN || (size_t)n > NET_FRAME_MAX ||
            !buf || (size_t)n > cap) {
            be->stats.rx_dropped++;
            continue;
        }
        memcpy(buf, t->rbuf, (size_t)n);
        return (size_t)n;
    }
}

/* A frame waits in the kernel (net_ready_fn; only with rxfault= on). */
static bool tap_ready(net_backend *be)
{
    struct pollfd p = { to_tap(be)->fd, POLLIN, 0 };

    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static size_t tap_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    tap *t = to_tap(be);

    net_txq_poll(be, &t->txq, tap_send);    /* what waited for the host */
    return net_rxq_rx(be, &t->rxq, tap_recv, tap_ready, buf, cap);
}

static int tap_poll_fd(net_backend *be)
{
    return to_tap(be)->fd;
}

static void tap_destroy(net_backend *be)
{
    tap *t = to_tap(be);

    net_txq_fini(be, &t->txq);
    net_rxq_fini(be, &t->rxq);
    close(t->fd);
    free(t);
}

static const net_backend_ops tap_ops = {
    .name = "tap",
    .tx = tap_tx,
    .rx = tap_rx,
    .poll_fd = tap_poll_fd,
    .destroy = tap_destroy,
};

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
    tap *t;
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
    t = calloc(1, sizeof *t);
    if (!t) {
        net_set_err(err, errlen, "tap: out of memory");
        close(fd);
        return NULL;
    }
    t->be.ops = &tap_ops;
    t->be.txq = &t->txq;
    t->be.rxq = &t->rxq;
    t->fd = fd;
    return &t->be;
}
