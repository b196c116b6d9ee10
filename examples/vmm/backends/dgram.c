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
 * any other address are not delivered) and non-blocking; from there its
 * frames move as TAP's do (fd.c).
 */
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"
#include "net_util.h"

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
    return net_fd_create("dgram", fd, err, errlen);     /* frames: fd.c */
}
