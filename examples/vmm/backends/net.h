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
 * Transmit accounting: every frame the NIC hands to net_tx() ends in
 * exactly one of stats.tx_frames (the host took it), stats.tx_dropped
 * (lost, counted) or stats.tx_queued (waiting in the backend now), so
 * tx_offered == tx_frames + tx_dropped + tx_queued at any moment; a host
 * that is busy (EAGAIN, ENOBUFS) delays frames, it does not lose them
 * (fault.c). Faults can be injected for tests (fault=, net_fault).
 *
 * A backend that receives asynchronously (TAP) has a `poll_fd`: the
 * VMM's I/O thread polls it and, when readable, lets the NIC pull (under
 * the device lock). The peer produces its replies inside tx(), so the NIC
 * pulls them at the end of the same register access.
 */
#ifndef VMM_NET_H
#define VMM_NET_H

#include <stdbool.h>
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
    /* transmit accounting (above) */
    uint64_t tx_offered;          /* frames handed to net_tx() */
    uint64_t tx_queued;           /* waiting now: host busy, or reordered */
    uint64_t tx_retries;          /* attempts the host answered busy */
    uint64_t tx_short;            /* short writes (in tx_dropped too) */
    uint64_t faults;              /* faults injected (fault=) */
    /* peer only: what it answered */
    uint64_t arp_replies, icmp_replies, udp_replies, ignored;
    /* receive accounting: every frame the host offered (read from the
     * TAP, or made by the peer) is rx_frames (handed to the NIC),
     * rx_dropped (lost, counted) or rx_queued (held back here now) */
    uint64_t rx_offered;
    uint64_t rx_queued;
    uint64_t rx_faults;           /* receive faults injected (rxfault=) */
} net_stats;

/*
 * Fault injection, a test hook (--net ...,fault=KIND:P%,fault-seed=N):
 * per send attempt, with probability P% each, the host answers EAGAIN or
 * ENOBUFS (the frame waits and is sent again), takes half the frame
 * (short: dropped), loses it on the wire (drop) or the frame is held back
 * and sent after the next one (reorder). Deterministic for a seed.
 */
enum {
    NET_FAULT_NONE = 0, NET_FAULT_EAGAIN, NET_FAULT_ENOBUFS,
    NET_FAULT_SHORT, NET_FAULT_DROP, NET_FAULT_REORDER, NET_FAULT_KINDS
};

typedef struct net_fault {
    bool on;
    bool seeded;
    uint32_t ppm[NET_FAULT_KINDS];  /* per million attempts */
    uint64_t seed;
    uint64_t state;                 /* the generator (net_txq_set_faults) */
} net_fault;

/* Add one "KIND:PERCENT" item, or set the seed; 0, or -1 with a message. */
int net_fault_add(net_fault *f, const char *item, char *err, size_t errlen);
int net_fault_seed(net_fault *f, const char *s, char *err, size_t errlen);
const char *net_fault_kind_name(int kind);

/* The transmit path the backends share (fault.c): a bounded backlog for
 * frames the host refused for now, and the injected faults. */
#define NET_TXQ_MAX 64
#define NET_TXQ_MAX_STR "64"

typedef struct net_txq_frame {
    uint16_t len;
    uint8_t data[NET_FRAME_MAX];
} net_txq_frame;

typedef struct net_txq {
    net_fault fault;
    net_txq_frame q[NET_TXQ_MAX];
    unsigned head, count;
    net_txq_frame held_frame;       /* reorder: sent after the next one */
    bool held;
    unsigned held_polls;
    uint32_t reported;              /* kinds of loss already reported */
} net_txq;

/* A backend's raw send: the bytes the host took (len when whole), or
 * -errno. */
typedef long net_send_fn(net_backend *be, const uint8_t *frame, size_t len);

/* The backend's tx(): accounts the frame and sends it through `send`
 * (0: taken or queued, -1: dropped, counted). */
int  net_txq_tx(net_backend *be, net_txq *q, net_send_fn *send,
                const uint8_t *frame, size_t len);
/* Send what waits (the backend calls it from rx(), which the NIC calls
 * after every register access and the I/O thread when frames arrive). */
void net_txq_poll(net_backend *be, net_txq *q, net_send_fn *send);
/* At destroy: what still waits is counted as dropped. */
void net_txq_fini(net_backend *be, net_txq *q);
void net_txq_set_faults(net_txq *q, const net_fault *f);

/*
 * Receive faults, the same test hook on the other direction
 * (--net ...,rxfault=KIND:P%): per frame the host offers, with
 * probability P% each, `drop` loses it before the NIC sees it (counted
 * in rx_dropped), `reorder` hands the next waiting frame over first (when
 * none waits, nothing is reordered), and `eagain` answers one receive
 * poll with "nothing waiting" while a frame waits (only for a backend
 * whose frames wait in a file descriptor the VMM polls: TAP). The draws
 * come from their own generator, seeded from fault-seed.
 */
typedef struct net_rxq {
    net_fault fault;
    net_txq_frame held_frame;       /* reorder: after the one behind it */
    bool held;
} net_rxq;

/* A backend's raw receive: the next frame the host offers into buf (cap
 * bytes), its length, or 0 when none waits. It counts rx_offered for
 * every frame it takes from the host and rx_dropped for those it cannot
 * hand over; net_rxq_rx counts the rest. */
typedef size_t net_recv_fn(net_backend *be, uint8_t *buf, size_t cap);
/* Does a frame wait in the host (for recv to take)? Asked only while
 * receive faults are on, so that their draws are per frame, not per poll:
 * how often the NIC polls (its ticks, a frame it holds) then changes
 * nothing in which frames a seed drops. */
typedef bool net_ready_fn(net_backend *be);

/* The receive kinds valid for a backend: eagain only with a poll_fd. */
int  net_rxq_check(const net_fault *f, bool has_fd, char *err, size_t errlen);
void net_rxq_set_faults(net_rxq *q, const net_fault *f);
/* The backend's rx(): the next frame for the NIC, through the faults. */
size_t net_rxq_rx(net_backend *be, net_rxq *q, net_recv_fn *recv,
                  net_ready_fn *ready, uint8_t *buf, size_t cap);
/* At destroy: a held frame is counted as dropped. */
void net_rxq_fini(net_backend *be, net_rxq *q);

struct net_backend {
    const net_backend_ops *ops;
    net_stats stats;
    /* The shared transmit path, or NULL for a backend without one (then
     * faults cannot be injected into it). */
    net_txq *txq;
    /* The shared receive stage, or NULL (then no rxfault=). */
    net_rxq *rxq;
};

static inline int net_tx(net_backend *be, const uint8_t *f, size_t len)
{
    return be->ops->tx(be, f, len);
}

static inline size_t net_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    return be->ops->rx(be, buf, cap);
}

/* The descriptor the VMM polls for received frames, or -1: a backend that
 * answers synchronously (the built-in peer) has none, whether or not it
 * has the hook. The same over the backend's life. */
static inline int net_poll_fd(net_backend *be)
{
    return be->ops->poll_fd ? be->ops->poll_fd(be) : -1;
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

/*
 * One frame per UDP datagram between `local` and `remote` ("HOST:PORT",
 * "[V6HOST]:PORT"), QEMU's -netdev dgram transport; lcvmm-peer answers
 * there (dgram.c). On error returns NULL with the reason in err.
 */
net_backend *net_dgram_create(const char *local, const char *remote,
                              char *err, size_t errlen);

/* Parse a --net argument: "peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE]",
 * "tap,ifname=NAME", "dgram,local=HOST:PORT,remote=HOST:PORT"; all take
 * the test hooks ",fault=KIND:P%" and
 * ",rxfault=KIND:P%" (each repeated for several kinds) and
 * ",fault-seed=N". */
net_backend *net_backend_from_arg(const char *arg, char *err, size_t errlen);

static inline void net_destroy(net_backend *be)
{
    if (be)
        be->ops->destroy(be);
}

#endif /* VMM_NET_H */
