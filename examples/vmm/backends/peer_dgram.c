/* SPDX-License-Identifier: MIT */
/*
 * lcvmm-peer: the reference VMM's built-in peer (peer.c) as a process
 * that QEMU guests can reach through QEMU's `-netdev dgram` transport
 * (QEMU 7.2 and later), so the same guest meets the same peer under QEMU
 * and under the VMM.
 *
 * The transport is plain UDP: each datagram carries exactly one Ethernet
 * frame (no FCS, no length prefix, unlike `-netdev stream`). QEMU sends
 * the guest's frames from its local address to its remote address; this
 * tool listens on the latter and sends the peer's replies to the former:
 *
 *   lcvmm-peer --listen 127.0.0.1:5556 --remote 127.0.0.1:5555 &
 *   qemu-system-i386 ... \
 *     -netdev dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=5555,\
 *             remote.type=inet,remote.host=127.0.0.1,remote.port=5556 \
 *     -device e1000,netdev=n0
 *
 * On start it prints the address it listens on (useful with port 0); on
 * SIGINT or SIGTERM it prints the peer's counters and exits 0.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"
#include "net_util.h"

#define PROG "lcvmm-peer"
/* Anything a UDP datagram can carry, so an oversize frame arrives whole
 * and the peer counts it as dropped instead of seeing a truncated one. */
#define DGRAM_MAX 65536

typedef struct endpoint {
    struct sockaddr_storage addr;
    socklen_t len;
} endpoint;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: " PROG " --listen HOST:PORT --remote HOST:PORT [--ip A.B.C.D]\n"
        "\n"
        "Runs the VMM's built-in peer (ARP, ICMP echo, UDP echo on port 7)\n"
        "over QEMU's -netdev dgram transport: one Ethernet frame per UDP\n"
        "datagram. Frames arrive on --listen; replies go to --remote\n"
        "(QEMU's local address). --ip sets the peer's address (10.0.2.2).\n"
        "IPv6 hosts go in brackets: [::1]:5556.\n");
}

/* --listen or --remote into an address (net_parse_endpoint, dgram.c);
 * family is AF_UNSPEC or the other endpoint's. 0, or -1 after printing
 * why. */
static int parse_endpoint(const char *what, const char *s, int family,
                          endpoint *ep)
{
    char why[300];

    if (net_parse_endpoint(s, family, &ep->addr, &ep->len, why, sizeof why)) {
        fprintf(stderr, PROG ": --%s %s\n", what, why);
        return -1;
    }
    return 0;
}

static void print_endpoint(FILE *f, const endpoint *ep)
{
    char host[NI_MAXHOST], port[NI_MAXSERV];

    if (getnameinfo((const struct sockaddr *)&ep->addr, ep->len, host,
                    sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV)) {
        fputs("?", f);
        return;
    }
    if (ep->addr.ss_family == AF_INET6)
        fprintf(f, "[%s]:%s", host, port);
    else
        fprintf(f, "%s:%s", host, port);
}

static int open_socket(endpoint *listen_ep)
{
    int fd = socket(listen_ep->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        perror(PROG ": socket");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&listen_ep->addr, listen_ep->len) < 0) {
        fprintf(stderr, PROG ": bind ");
        print_endpoint(stderr, listen_ep);
        fprintf(stderr, ": %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    /* With port 0 the kernel picked one: report the real address. */
    listen_ep->len = sizeof listen_ep->addr;
    getsockname(fd, (struct sockaddr *)&listen_ep->addr, &listen_ep->len);
    return fd;
}

/* Stop on SIGINT and SIGTERM, but only inside ppoll(), so a signal cannot
 * slip in between testing `stop` and going to sleep. */
static void setup_signals(sigset_t *wait_mask)
{
    struct sigaction sa = { 0 };
    sigset_t block;

    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, wait_mask);
    sigdelset(wait_mask, SIGINT);
    sigdelset(wait_mask, SIGTERM);
}

/* Hand every queued reply to QEMU. A send can fail (nobody listening
 * yet); the frame is lost as on a wire, and counted. */
static void send_replies(net_backend *be, int fd, const endpoint *remote,
                         uint64_t *send_errors)
{
    uint8_t frame[NET_FRAME_MAX];
    size_t n;

    while ((n = net_rx(be, frame, sizeof frame)) != 0)
        if (sendto(fd, frame, n, 0, (const struct sockaddr *)&remote->addr,
                   remote->len) != (ssize_t)n)
            (*send_errors)++;
}

static int serve(net_backend *be, int fd, const endpoint *remote,
                 const sigset_t *wait_mask, uint64_t *send_errors)
{
    static uint8_t buf[DGRAM_MAX];

    while (!stop) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        ssize_t n;

        if (ppoll(&pfd, 1, NULL, wait_mask) < 0) {
            if (errno == EINTR)
                continue;
            perror(PROG ": ppoll");
            return -1;
        }
        n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED)
                continue;
            perror(PROG ": recv");
            return -1;
        }
        net_tx(be, buf, (size_t)n);     /* bad sizes are counted there */
        send_replies(be, fd, remote, send_errors);
    }
    return 0;
}

static void print_stats(const net_stats *s, uint64_t send_errors)
{
    printf(PROG ": tx_frames=%llu tx_dropped=%llu arp_replies=%llu "
           "icmp_replies=%llu udp_replies=%llu ignored=%llu "
           "rx_frames=%llu rx_dropped=%llu send_errors=%llu\n",
           (unsigned long long)s->tx_frames,
           (unsigned long long)s->tx_dropped,
           (unsigned long long)s->arp_replies,
           (unsigned long long)s->icmp_replies,
           (unsigned long long)s->udp_replies,
           (unsigned long long)s->ignored,
           (unsigned long long)s->rx_frames,
           (unsigned long long)s->rx_dropped,
           (unsigned long long)send_errors);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "remote", required_argument, NULL, 'r' },
        { "ip", required_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *listen_arg = NULL, *remote_arg = NULL, *ip = NULL;
    endpoint listen_ep, remote_ep;
    sigset_t wait_mask;
    uint64_t send_errors = 0;
    char err[256];
    net_backend *be;
    int c, fd, rc;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen_arg = optarg; break;
        case 'r': remote_arg = optarg; break;
        case 'i': ip = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || !listen_arg || !remote_arg) {
        usage(stderr);
        return 2;
    }
    if (parse_endpoint("listen", listen_arg, AF_UNSPEC, &listen_ep) ||
        parse_endpoint("remote", remote_arg, listen_ep.addr.ss_family,
                       &remote_ep))
        return 2;
    be = net_peer_create(ip, err, sizeof err);
    if (!be) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    fd = open_socket(&listen_ep);
    if (fd < 0) {
        net_destroy(be);
        return 1;
    }
    setup_signals(&wait_mask);

    printf(PROG ": listening on ");
    print_endpoint(stdout, &listen_ep);
    printf(", replying to ");
    print_endpoint(stdout, &remote_ep);
    printf(", peer %s\n", ip ? ip : "10.0.2.2");
    fflush(stdout);

    rc = serve(be, fd, &remote_ep, &wait_mask, &send_errors);
    print_stats(&be->stats, send_errors);
    close(fd);
    net_destroy(be);
    return rc ? 1 : 0;
}
