/* SPDX-License-Identifier: MIT */
/*
 * The dgram backend: one Ethernet frame per UDP datagram, between a local
 * and a remote address, as QEMU's `-netdev dgram` (QEMU 7.2 and later)
 * carries them: no FCS, no length prefix. With lcvmm-peer at the other
 * end (peer_dgram.c) the guest meets the same peer as under QEMU, in
 * another process, its replies arriving while the guest runs: the way to
 * compare the two VMMs' network paths like for like (the built-in peer
 * answers inside the exit that transmits).
 *
 *   lcvmm ... --net dgram,local=127.0.0.1:5555,remote=127.0.0.1:5556
 *   lcvmm-peer --listen 127.0.0.1:5556 --remote 127.0.0.1:5555
 *
 * The socket is bound to `local`, connected to `remote` (datagrams from
 * any other address are not delivered) and non-blocking: the VMM polls
 * it (poll_fd) as it polls TAP, and the NIC pulls frames with rx() until
 * it returns 0. A send the kernel refuses for now (EAGAIN, ENOBUFS) is
 * kept and retried (fault.c's queue); ECONNREFUSED (nobody at `remote`
 * yet, an ICMP port unreachable) loses the frame, counted, as a wire
 * with nobody at the other end would.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"
#include "net_util.h"

/* Anything a UDP datagram can carry: an oversize frame arrives whole and
 * is dropped, counted, instead of looking valid cut short. */
#define DGRAM_READ_MAX 65536

typedef struct dgram {
    net_backend be;
    int fd;
    uint8_t rbuf[DGRAM_READ_MAX];
    net_txq txq;
    net_rxq rxq;
} dgram;

static dgram *to_dgram(net_backend *be)
{
    return (dgram *)be;
}

static long dgram_send(net_backend *be, const uint8_t *frame, size_t len)
{
    ssize_t n;

    do
        n = send(to_dgram(be)->fd, frame, len, 0);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -(long)errno : (long)n;
}

static int dgram_tx(net_backend *be, const uint8_t *frame, size_t len)
{
    return net_txq_tx(be, &to_dgram(be)->txq, dgram_send, frame, len);
}

static size_t dgram_recv(net_backend *be, uint8_t *buf, size_t cap)
{
    dgram *d = to_dgram(be);

    for (;;) {
        ssize_t n = recv(d->fd, d->rbuf, sizeof d->rbuf, MSG_TRUNC);

        if (n < 0) {
            if (errno == EINTR || errno == ECONNREFUSED)
                continue;       /* a port unreachable for an earlier send */
            return 0;           /* EAGAIN: nothing waiting */
        }
        be->stats.rx_offered++;
        if ((size_t)n < NET_FRAME_MIN || (size_t)n > NET_FRAME_MAX ||
            (size_t)n > sizeof d->rbuf || !buf || (size_t)n > cap) {
            be->stats.rx_dropped++;
            continue;
        }
        memcpy(buf, d->rbuf, (size_t)n);
        return (size_t)n;
    }
}

static bool dgram_ready(net_backend *be)
{
    struct pollfd p = { to_dgram(be)->fd, POLLIN, 0 };

    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static size_t dgram_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    dgram *d = to_dgram(be);

    net_txq_poll(be, &d->txq, dgram_send);
    return net_rxq_rx(be, &d->rxq, dgram_recv, dgram_ready, buf, cap);
}

static int dgram_poll_fd(net_backend *be)
{
    return to_dgram(be)->fd;
}

static void dgram_destroy(net_backend *be)
{
    dgram *d = to_dgram(be);

    net_txq_fini(be, &d->txq);
    net_rxq_fini(be, &d->rxq);
    close(d->fd);
    free(d);
}

static const net_backend_ops dgram_ops = {
    .name = "dgram",
    .tx = dgram_tx,
    .rx = dgram_rx,
    .poll_fd = dgram_poll_fd,
    .destroy = dgram_destroy,
};

int net_parse_endpoint(const char *s, int family,
                       struct sockaddr_storage *addr, socklen_t *len,
                       char *err, size_t errlen)
{
    struct addrinfo hints = { 0 }, *res;
    char host[256];
    const char *colon = s ? strrchr(s, ':') : NULL, *h = s;
    size_t hlen;
    int rc;

    if (!colon || !colon[1]) {
        net_set_err(err, errlen, "%s: expected HOST:PORT", s ? s : "");
        return -1;
    }
    hlen = (size_t)(colon - s);
    if (hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
        h = s + 1;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof host) {
        net_set_err(err, errlen, "%s: bad host", s);
        return -1;
    }
    memcpy(host, h, hlen);
    host[hlen] = 0;
    hints.ai_family = family;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc) {
        net_set_err(err, errlen, "%s: %s", s, gai_strerror(rc));
        return -1;
    }
    if (res->ai_addrlen > sizeof *addr) {
        freeaddrinfo(res);
        net_set_err(err, errlen, "%s: address too long", s);
        return -1;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

net_backend *net_dgram_create(const char *local, const char *remote,
                              char *err, size_t errlen)
{
    struct sockaddr_storage la, ra;
    socklen_t llen, rlen;
    char why[300];
    dgram *d;
    int fd, e;

    if (net_parse_endpoint(local, AF_UNSPEC, &la, &llen, why, sizeof why)) {
        net_set_err(err, errlen, "dgram: local=%s", why);
        return NULL;
    }
    if (net_parse_endpoint(remote, la.ss_family, &ra, &rlen, why,
                           sizeof why)) {
        net_set_err(err, errlen, "dgram: remote=%s", why);
        return NULL;
    }
    fd = socket(la.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        net_set_err(err, errlen, "dgram: socket: %s", strerror(errno));
        return NULL;
    }
    if (bind(fd, (struct sockaddr *)&la, llen) < 0) {
        e = errno;
        net_set_err(err, errlen, "dgram: cannot bind local=%s: %s", local,
                    strerror(e));
        close(fd);
        return NULL;
    }
    if (connect(fd, (struct sockaddr *)&ra, rlen) < 0) {
        e = errno;
        net_set_err(err, errlen, "dgram: cannot connect to remote=%s: %s",
                    remote, strerror(e));
        close(fd);
        return NULL;
    }
    d = calloc(1, sizeof *d);
    if (!d) {
        net_set_err(err, errlen, "dgram: out of memory");
        close(fd);
        return NULL;
    }
    d->be.ops = &dgram_ops;
    d->be.txq = &d->txq;
    d->be.rxq = &d->rxq;
    d->fd = fd;
    return &d->be;
}
