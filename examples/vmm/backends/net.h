/* SPDX-License-Identifier: MIT */
/*
 * Network backends: where a NIC model's frames go and come from.
 *
 * One interface, several backends chosen at start (kvmtool's net/ in
 * spirit): the built-in peer (peer.c, the default: answers ARP, ICMP echo
 * and UDP echo inside the VMM process) and TAP (tap.c).
 *
 * Frames are whole Ethernet frames without FCS, 14 to NET_FRAME_MAX
 * bytes. The NIC pushes transmitted frames with net_tx() and pulls
 * received ones with net_rx() when it has a receive descriptor for them,
 * so a backend never drops a frame because the guest is slow; it queues
 * (bounded) and drops only when its own queue is full.
 *
 * A backend that receives asynchronously (TAP) has a `poll_fd`: the
 * VMM's I/O thread polls it and, when readable, lets the NIC pull (under
 * the device lock). The peer produces its replies inside tx(), so the NIC
 * pulls them at the end of the same register access.
 */
#ifndef VMM_NET_H
#define VMM_NET_H

#include <stddef.h>
#include <stdint.h>

#define NET_FRAME_MIN 14
#define NET_FRAME_MAX 1514

typedef struct net_backend net_backend;

typedef struct net_backend_ops {
    const char *name;
    /* Send one frame. 0 on success, -1 if dropped (counted). */
    int (*tx)(net_backend *be, const uint8_t *frame, size_t len);
    /* Take the next received frame into buf (cap bytes, at least
     * NET_FRAME_MAX). Returns its length, or 0 when none is waiting. */
    size_t (*rx)(net_backend *be, uint8_t *buf, size_t cap);
    /* A file descriptor to poll for readability, or -1 (frames are
     * produced synchronously by tx, as the peer does). */
    int (*poll_fd)(net_backend *be);
    void (*destroy)(net_backend *be);
} net_backend_ops;

typedef struct net_stats {
    uint64_t tx_frames, tx_bytes, tx_dropped;
    uint64_t rx_frames, rx_bytes, rx_dropped;
    /* peer only: what it answered */
    uint64_t arp_replies, icmp_replies, udp_replies, ignored;
} net_stats;

struct net_backend {
    const net_backend_ops *ops;
    net_stats stats;
};

static inline int net_tx(net_backend *be, const uint8_t *f, size_t len)
{
    return be->ops->tx(be, f, len);
}

static inline size_t net_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    return be->ops->rx(be, buf, cap);
}

/*
 * The built-in peer: a host at `ip` (network byte order in the usual
 * dotted form, e.g. "10.0.2.2") with MAC 52:55:0a:00:02:02 that answers
 * ARP requests for its address, ICMP echo requests and UDP datagrams to
 * port 7 (echo). Everything else is counted in stats.ignored. Replies are
 * queued (up to 256 frames) and taken with rx. On error returns NULL and
 * writes a message into err (errlen bytes).
 */
net_backend *net_peer_create(const char *ip, char *err, size_t errlen);
/* The same peer as a network-boot server too: DHCP leases the guest
 * 10.0.2.15 (the peer's /24, .15) with `bootfile` (NULL: none) and the
 * peer as next server; TFTP serves files from `tftp_dir` (NULL: none). */
net_backend *net_peer_create_boot(const char *ip, const char *tftp_dir,
                                  const char *bootfile, char *err,
                                  size_t errlen);

/*
 * A TAP device `ifname` (created if missing, needs CAP_NET_ADMIN), opened
 * with IFF_TAP | IFF_NO_PI and made non-blocking. On error returns NULL
 * with the reason in err.
 */
net_backend *net_tap_create(const char *ifname, char *err, size_t errlen);

/* Parse a --net argument: "peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE]",
 * "tap,ifname=NAME". */
net_backend *net_backend_from_arg(const char *arg, char *err, size_t errlen);

static inline void net_destroy(net_backend *be)
{
    if (be)
        be->ops->destroy(be);
}

#endif /* VMM_NET_H */
