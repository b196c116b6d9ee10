/* SPDX-License-Identifier: MIT */
/*
 * A backend whose frames go through one non-blocking descriptor, one
 * frame per read() and per write(): a TAP interface opened with
 * IFF_TAP | IFF_NO_PI (tap.c), or a UDP socket connected to its peer,
 * one frame per datagram (dgram.c). Those files open the descriptor;
 * this one moves the frames. The VMM polls the descriptor (poll_fd) and
 * the NIC pulls frames with rx() until it returns 0.
 *
 * A write the host refuses for now (EAGAIN: the queue is full; ENOBUFS)
 * keeps the frame, written again later (fault.c's queue); any other error
 * loses it, counted, as an unplugged wire would (EIO: a TAP interface
 * down; ECONNREFUSED: nobody at a dgram's remote address yet).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "net_util.h"

/* Reads go through a buffer big enough for any frame the host may hand
 * us (a TAP interface's MTU raised past 1500, a UDP datagram of up to
 * 64 KiB), so an oversize frame is dropped whole rather than cut into
 * something that looks valid. */
#define FD_READ_MAX 65536

typedef struct fdbe {
    net_backend be;
    net_backend_ops ops;        /* fd_ops under the kind's name */
    int fd;
    uint8_t rbuf[FD_READ_MAX];
    net_txq txq;                /* frames to write (net.h) */
    net_rxq rxq;                /* frames read, on their way to the NIC */
} fdbe;

static fdbe *to_fd(net_backend *be)
{
    return (fdbe *)be;
}

static long fd_send(net_backend *be, const uint8_t *frame, size_t len)
{
    ssize_t n;

    do
        n = write(to_fd(be)->fd, frame, len);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -(long)errno : (long)n;
}

static int fd_tx(net_backend *be, const uint8_t *frame, size_t len)
{
    return net_txq_tx(be, &to_fd(be)->txq, fd_send, frame, len);
}

/* The next frame the host has for us (net_recv_fn). */
static size_t fd_recv(net_backend *be, uint8_t *buf, size_t cap)
{
    fdbe *f = to_fd(be);

    for (;;) {
        ssize_t n = read(f->fd, f->rbuf, sizeof f->rbuf);

        if (n < 0) {
            /* ECONNREFUSED: a port unreachable for an earlier datagram */
            if (errno == EINTR || errno == ECONNREFUSED)
                continue;
            return 0;           /* EAGAIN: nothing waiting */
        }
        if (n == 0)
            return 0;
        be->stats.rx_offered++;
        if ((size_t)n < NET_FRAME_MIN || (size_t)n > NET_FRAME_MAX ||
            !buf || (size_t)n > cap) {
            be->stats.rx_dropped++;
            continue;
        }
        memcpy(buf, f->rbuf, (size_t)n);
        return (size_t)n;
    }
}

/* A frame waits in the host (net_ready_fn; only with rxfault= on). */
static bool fd_ready(net_backend *be)
{
    struct pollfd p = { to_fd(be)->fd, POLLIN, 0 };

    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static size_t fd_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    fdbe *f = to_fd(be);

    net_txq_poll(be, &f->txq, fd_send);     /* what waited for the host */
    return net_rxq_rx(be, &f->rxq, fd_recv, fd_ready, buf, cap);
}

static int fd_poll_fd(net_backend *be)
{
    return to_fd(be)->fd;
}

static void fd_destroy(net_backend *be)
{
    fdbe *f = to_fd(be);

    net_txq_fini(be, &f->txq);
    net_rxq_fini(be, &f->rxq);
    close(f->fd);
    free(f);
}

static const net_backend_ops fd_ops = {
    .tx = fd_tx,
    .rx = fd_rx,
    .poll_fd = fd_poll_fd,
    .destroy = fd_destroy,
};

net_backend *net_fd_create(const char *name, int fd, char *err, size_t errlen)
{
    fdbe *f = calloc(1, sizeof *f);

    if (!f) {
        net_set_err(err, errlen, "%s: out of memory", name);
        close(fd);
        return NULL;
    }
    f->ops = fd_ops;
    f->ops.name = name;
    f->be.ops = &f->ops;
    f->be.txq = &f->txq;
    f->be.rxq = &f->rxq;
    f->fd = fd;
    return &f->be;
}
