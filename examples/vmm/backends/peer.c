/* SPDX-License-Identifier: MIT */
/*
 * The built-in peer: a small host on the guest's Ethernet segment, at
 * 10.0.2.2 (or the address given) with MAC 52:55:0a:00:02:02, that
 * answers
 *
 *   ARP requests for its address       (RFC 826)
 *   ICMP echo requests to its address  (RFC 792)
 *   UDP datagrams to its port 7        (RFC 768; the echo service, RFC 862)
 *
 * and nothing else. It lets guests exercise a NIC end to end (ARP, then
 * ping or UDP echo) without a host network, and its answers do not depend
 * on timing, so a guest prints the same with clustering off and on.
 *
 * Every frame is hostile input from the guest: each field is checked
 * before it is used and lengths come from the headers (an IP datagram's
 * total length, not the frame length, since NICs pad short frames to 60
 * bytes). Whatever the peer does not answer (malformed, not for it, a
 * protocol it does not speak, a bad checksum, a fragment) counts once in
 * stats.ignored, silently, as RFC 1122 asks of hosts.
 *
 * Replies wait in a bounded FIFO (PEER_QUEUE frames) until the NIC pulls
 * them with rx(); when it is full a new reply is dropped and counted in
 * stats.rx_dropped. Frames from the guest go through the shared transmit
 * path (fault.c), where a test can make the peer busy, lose or reorder
 * them (fault=).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "boot_srv.h"
#include "net.h"
#include "net_util.h"

#define PEER_QUEUE 256
#define PEER_DEFAULT_IP "10.0.2.2"

/* Ethernet (DIX) header: destination, source, EtherType. */
#define ETH_HLEN 14
#define ETH_ZLEN 60             /* minimum frame without FCS */
#define ETH_P_IPV4 0x0800
#define ETH_P_ARP 0x0806
#define ETH_P_IPV6 0x86dd

/* ARP for IPv4 over Ethernet (RFC 826): 28 bytes after the Ethernet
 * header. */
#define ARP_LEN 28
#define ARP_HTYPE_ETHER 1
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY 2

/* IPv4 (RFC 791). */
#define IP_HLEN 20              /* without options */
#define IP_PROTO_ICMP 1
#define IP_PROTO_UDP 17
#define IP_FLAG_MF 0x2000
#define IP_FRAG_OFFSET 0x1fff
#define IP_TTL 64

/* ICMP (RFC 792) and UDP (RFC 768) headers are both 8 bytes. */
#define ICMP_HLEN 8
#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8
#define UDP_HLEN 8
#define UDP_PORT_ECHO 7

static const uint8_t peer_mac[6] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };
static const uint8_t broadcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

typedef struct peer_frame {
    uint16_t len;
    uint8_t data[NET_FRAME_MAX];
} peer_frame;

typedef struct peer {
    net_backend be;
    uint8_t ip[4];              /* network order */
    dhcp_config dhcp;           /* the lease it offers (boot_srv.h) */
    tftp_server *tftp;          /* tftp=DIR, or NULL */
    uint16_t ip_id;             /* identification of the datagrams we send */
    unsigned head, count;       /* FIFO of replies */
    peer_frame q[PEER_QUEUE];
    net_txq txq;                /* frames from the guest (net.h) */
    net_rxq rxq;                /* replies on their way to the NIC */
} peer;

/* A parsed, validated IPv4 datagram addressed to the peer. */
typedef struct ip_packet {
    const uint8_t *eth;         /* the frame */
    const uint8_t *hdr;         /* IP header */
    const uint8_t *payload;     /* after header and options */
    size_t payload_len;         /* from the total length field */
} ip_packet;

static peer *to_peer(net_backend *be)
{
    return (peer *)be;
}

static bool mac_is_multicast(const uint8_t *mac)
{
    return mac[0] & 1;          /* I/G bit; includes broadcast */
}

static bool ip_is_ours(const peer *p, const uint8_t *ip)
{
    return !memcmp(ip, p->ip, 4);
}

/* RFC 1122 3.2.1.3: a source address that is zero, limited broadcast or
 * multicast (class D) or reserved (class E) cannot have sent the
 * datagram, and answering it would flood or loop. */
static bool ip_is_valid_source(const uint8_t *ip)
{
    static const uint8_t zero[4];

    return memcmp(ip, zero, 4) && ip[0] < 224;
}

/* --- the reply queue -------------------------------------------------- */

/*
 * A slot at the tail of the queue for a reply of `len` bytes (padded to
 * the Ethernet minimum with zeros), or NULL when the queue is full (the
 * reply is dropped and counted).
 */
static uint8_t *reply_alloc(peer *p, size_t len)
{
    peer_frame *f;

    if (p->count == PEER_QUEUE) {
        p->be.stats.rx_offered++;
        p->be.stats.rx_dropped++;
        return NULL;
    }
    f = &p->q[(p->head + p->count) % PEER_QUEUE];
    f->len = (uint16_t)(len < ETH_ZLEN ? ETH_ZLEN : len);
    memset(f->data, 0, f->len);
    return f->data;
}

static void reply_commit(peer *p)
{
    p->count++;
}

/* Ethernet header of a reply: back to whoever sent the request. */
static void eth_reply_header(uint8_t *out, const uint8_t *req, uint16_t type)
{
    memcpy(out, req + 6, 6);
    memcpy(out + 6, peer_mac, 6);
    net_put16(out + 12, type);
}

/* --- ARP (RFC 826) ------------------------------------------------------ */

/*
 * The reply to a request for our address: sender and target swap and
 * our MAC goes in as the sender hardware address. Anything else (replies,
 * requests for other addresses, other hardware or protocol types) is
 * ignored; the peer never needs to resolve anyone, since it only replies
 * to the Ethernet source of what it receives.
 */
static bool handle_arp(peer *p, const uint8_t *f, size_t len)
{
    const uint8_t *a = f + ETH_HLEN;
    uint8_t *out, *r;

    if (len < ETH_HLEN + ARP_LEN)
        return false;
    if (net_get16(a) != ARP_HTYPE_ETHER || net_get16(a + 2) != ETH_P_IPV4 ||
        a[4] != 6 || a[5] != 4 || net_get16(a + 6) != ARP_OP_REQUEST)
        return false;
    /* sha (a + 8) must be a station, not a group address: we answer it. */
    if (mac_is_multicast(a + 8) || !ip_is_ours(p, a + 24))
        return false;

    out = reply_alloc(p, ETH_HLEN + ARP_LEN);
    if (!out)
        return true;            /* answered, but the reply was dropped */
    eth_reply_header(out, f, ETH_P_ARP);
    r = out + ETH_HLEN;
    net_put16(r, ARP_HTYPE_ETHER);
    net_put16(r + 2, ETH_P_IPV4);
    r[4] = 6;
    r[5] = 4;
    net_put16(r + 6, ARP_OP_REPLY);
    memcpy(r + 8, peer_mac, 6);         /* sha: us */
    memcpy(r + 14, p->ip, 4);           /* spa: us */
    memcpy(r + 18, a + 8, 6);           /* tha: the requester */
    memcpy(r + 24, a + 14, 4);          /* tpa: the requester */
    reply_commit(p);
    p->be.stats.arp_replies++;
    return true;
}

/* --- IPv4 (RFC 791) ----------------------------------------------------- */

/*
 * Validate the IPv4 header of frame f and fill pkt. The datagram must be
 * well formed (version 4, 5 <= IHL, header within the total length, total
 * length within the frame, a header checksum that verifies), whole (not a
 * fragment: the peer does not reassemble), to our address from a valid
 * source.
 */
static bool ip_parse(const peer *p, const uint8_t *f, size_t len,
                     ip_packet *pkt)
{
    const uint8_t *h = f + ETH_HLEN;
    size_t avail = len - ETH_HLEN, hlen, total;

    if (avail < IP_HLEN)
        return false;
    if (h[0] >> 4 != 4)
        return false;
    hlen = (size_t)(h[0] & 0xf) * 4;
    total = net_get16(h + 2);
    if (hlen < IP_HLEN || hlen > total || total > avail)
        return false;
    if (net_csum(h, hlen) != 0)
        return false;
    if (net_get16(h + 6) & (IP_FLAG_MF | IP_FRAG_OFFSET))
        return false;
    if (!ip_is_ours(p, h + 16) || !ip_is_valid_source(h + 12))
        return false;
    pkt->eth = f;
    pkt->hdr = h;
    pkt->payload = h + hlen;
    pkt->payload_len = total - hlen;
    return true;
}

/*
 * Start an IPv4 reply to pkt carrying `payload_len` bytes of protocol
 * `proto`: Ethernet and IP headers (no options: RFC 1122 3.2.2.6 only
 * says SHOULD about reflecting record-route and timestamp options, and
 * the peer drops them), header checksum filled in. Returns the frame, its
 * payload at out + ETH_HLEN + IP_HLEN, or NULL when the queue is full.
 */
static uint8_t *ip_reply_start(peer *p, const ip_packet *pkt, uint8_t proto,
                               size_t payload_len)
{
    uint8_t *out = reply_alloc(p, ETH_HLEN + IP_HLEN + payload_len);
    uint8_t *h;

    if (!out)
        return NULL;
    eth_reply_header(out, pkt->eth, ETH_P_IPV4);
    h = out + ETH_HLEN;
    h[0] = 0x45;                        /* version 4, IHL 5 */
    h[1] = pkt->hdr[1];                 /* same type of service */
    net_put16(h + 2, (uint16_t)(IP_HLEN + payload_len));
    net_put16(h + 4, p->ip_id++);
    net_put16(h + 6, 0);                /* no flags, offset 0 */
    h[8] = IP_TTL;
    h[9] = proto;
    memcpy(h + 12, p->ip, 4);
    memcpy(h + 16, pkt->hdr + 12, 4);
    net_put16(h + 10, net_csum(h, IP_HLEN));
    return out;
}

/* --- ICMP (RFC 792) ----------------------------------------------------- */

/*
 * An echo request becomes an echo reply: type 0, the same identifier,
 * sequence number and data, the checksum recomputed over the whole ICMP
 * message. Requests with a bad checksum are ignored.
 */
static bool handle_icmp(peer *p, const ip_packet *pkt)
{
    const uint8_t *icmp = pkt->payload;
    size_t n = pkt->payload_len;
    uint8_t *out, *r;

    if (n < ICMP_HLEN || icmp[0] != ICMP_ECHO_REQUEST || icmp[1] != 0)
        return false;
    if (net_csum(icmp, n) != 0)
        return false;

    out = ip_reply_start(p, pkt, IP_PROTO_ICMP, n);
    if (!out)
        return true;
    r = out + ETH_HLEN + IP_HLEN;
    memcpy(r, icmp, n);
    r[0] = ICMP_ECHO_REPLY;
    net_put16(r + 2, 0);
    net_put16(r + 2, net_csum(r, n));
    reply_commit(p);
    p->be.stats.icmp_replies++;
    return true;
}

/* --- UDP (RFC 768) ------------------------------------------------------ */

static bool handle_tftp(peer *p, const ip_packet *pkt, const uint8_t *udp,
                        size_t n);

/* The UDP checksum: over the pseudo-header (source, destination, zero,
 * protocol, UDP length), then the datagram. */
static uint16_t udp_csum(const uint8_t *src, const uint8_t *dst,
                         const uint8_t *udp, size_t len)
{
    uint8_t pseudo[12];

    memcpy(pseudo, src, 4);
    memcpy(pseudo + 4, dst, 4);
    pseudo[8] = 0;
    pseudo[9] = IP_PROTO_UDP;
    net_put16(pseudo + 10, (uint16_t)len);
    return net_csum_fold(net_csum_add(net_csum_add(0, pseudo, 12), udp, len));
}

/*
 * A datagram to port 7 comes back with addresses and ports swapped and
 * the same data. Its length is the UDP length field, which may be less
 * than the IP payload (extra bytes are ignored) but not more. A checksum
 * of 0 means the sender computed none (allowed over IPv4); otherwise it
 * must verify. Datagrams to other ports are ignored (a full host would
 * send ICMP port unreachable; the peer stays silent).
 */
static bool handle_udp(peer *p, const ip_packet *pkt)
{
    const uint8_t *udp = pkt->payload;
    const uint8_t *src = pkt->hdr + 12, *dst = pkt->hdr + 16;
    size_t n;
    uint16_t sum;
    uint8_t *out, *r;

    if (pkt->payload_len < UDP_HLEN)
        return false;
    n = net_get16(udp + 4);
    if (n < UDP_HLEN || n > pkt->payload_len)
        return false;
    if (net_get16(udp + 6) != 0 && udp_csum(src, dst, udp, n) != 0)
        return false;
    /* Port 0 is not a port one can answer (RFC 768: the source port is
     * optional and 0 when unused). */
    if (net_get16(udp + 2) != UDP_PORT_ECHO)
        return handle_tftp(p, pkt, udp, n);
    if (net_get16(udp) == 0)
        return false;

    out = ip_reply_start(p, pkt, IP_PROTO_UDP, n);
    if (!out)
        return true;
    r = out + ETH_HLEN + IP_HLEN;
    memcpy(r, udp + 2, 2);              /* source port: theirs was dest */
    memcpy(r + 2, udp, 2);
    net_put16(r + 4, (uint16_t)n);
    net_put16(r + 6, 0);
    memcpy(r + UDP_HLEN, udp + UDP_HLEN, n - UDP_HLEN);
    sum = udp_csum(p->ip, src, r, n);
    /* RFC 768: a computed 0 is sent as all ones (0 means none). */
    net_put16(r + 6, sum ? sum : 0xffff);
    reply_commit(p);
    p->be.stats.udp_replies++;
    return true;
}

/* --- network boot: DHCP, TFTP, the IPv6 router answer (boot_srv.h) --- */

/* A UDP datagram from the peer to `dst_mac`/`dst_ip`. */
static bool udp_send(peer *p, const uint8_t *dst_mac, const uint8_t *dst_ip,
                     uint16_t sport, uint16_t dport, const uint8_t *data,
                     size_t n)
{
    uint8_t *out = reply_alloc(p, ETH_HLEN + IP_HLEN + UDP_HLEN + n);
    uint8_t *h, *u;
    uint16_t sum;

    if (!out)
        return true;
    memcpy(out, dst_mac, 6);
    memcpy(out + 6, peer_mac, 6);
    net_put16(out + 12, ETH_P_IPV4);
    h = out + ETH_HLEN;
    h[0] = 0x45;
    net_put16(h + 2, (uint16_t)(IP_HLEN + UDP_HLEN + n));
    net_put16(h + 4, p->ip_id++);
    h[8] = IP_TTL;
    h[9] = IP_PROTO_UDP;
    memcpy(h + 12, p->ip, 4);
    memcpy(h + 16, dst_ip, 4);
    net_put16(h + 10, net_csum(h, IP_HLEN));
    u = h + IP_HLEN;
    net_put16(u, sport);
    net_put16(u + 2, dport);
    net_put16(u + 4, (uint16_t)(UDP_HLEN + n));
    memcpy(u + UDP_HLEN, data, n);
    sum = udp_csum(p->ip, dst_ip, u, UDP_HLEN + n);
    net_put16(u + 6, sum ? sum : 0xffff);
    reply_commit(p);
    p->be.stats.udp_replies++;
    return true;
}

/* A DHCP request: from 0.0.0.0 (or the client's address) to the limited
 * broadcast or to us, UDP port 67. Checked like ip_parse, but those
 * addresses are what a client without a lease uses. The answer goes to
 * the Ethernet broadcast and 255.255.255.255 (RFC 2131 4.1: allowed
 * whatever the broadcast flag says). */
static bool handle_dhcp(peer *p, const uint8_t *f, size_t len)
{
    static const uint8_t bcast_ip[4] = { 255, 255, 255, 255 };
    const uint8_t *h = f + ETH_HLEN, *u;
    size_t hlen, total, n;
    uint8_t reply[DHCP_REPLY_MAX];

    if (len < ETH_HLEN + IP_HLEN || h[0] >> 4 != 4 || h[9] != IP_PROTO_UDP)
        return false;
    hlen = (size_t)(h[0] & 0xf) * 4;
    total = net_get16(h + 2);
    if (hlen < IP_HLEN || hlen + UDP_HLEN > total || total > len - ETH_HLEN ||
        net_csum(h, hlen) || (net_get16(h + 6) & (IP_FLAG_MF | IP_FRAG_OFFSET)))
        return false;
    if (memcmp(h + 16, bcast_ip, 4) && !ip_is_ours(p, h + 16))
        return false;
    u = h + hlen;
    n = net_get16(u + 4);
    if (net_get16(u + 2) != DHCP_SERVER_PORT ||
        net_get16(u) != DHCP_CLIENT_PORT || n < UDP_HLEN || n > total - hlen)
        return false;
    if (net_get16(u + 6) && udp_csum(h + 12, h + 16, u, n))
        return false;
    n = dhcp_reply(&p->dhcp, u + UDP_HLEN, n - UDP_HLEN, reply);
    if (!n)
        return false;
    return udp_send(p, broadcast_mac, bcast_ip, DHCP_SERVER_PORT,
                    DHCP_CLIENT_PORT, reply, n);
}

/* A datagram for the TFTP server (port 69 or a transfer's port). */
static bool handle_tftp(peer *p, const ip_packet *pkt, const uint8_t *udp,
                        size_t n)
{
    uint8_t reply[TFTP_REPLY_MAX];
    uint16_t from;
    size_t r;

    if (!p->tftp || net_get16(udp) == 0)
        return false;
    r = tftp_input(p->tftp, net_get16(udp), net_get16(udp + 2),
                   udp + UDP_HLEN, n - UDP_HLEN, reply, &from);
    if (!r)
        return false;
    return udp_send(p, pkt->eth + 6, pkt->hdr + 12, from, net_get16(udp),
                    reply, r);
}

/* IPv6 (RFC 8200) router solicitation (RFC 4861 6.3.7): answered with a
 * router advertisement without prefixes, M and O flags clear: "no
 * stateful or stateless configuration here", which ends iPXE's IPv6
 * configuration at once instead of after its solicitation timeouts. */
#define IP6_HLEN 40
#define IP6_PROTO_ICMP6 58
#define ICMP6_RS 133
#define ICMP6_RA 134
static bool handle_ipv6(peer *p, const uint8_t *f, size_t len)
{
    const uint8_t *h = f + ETH_HLEN;
    uint8_t *out, *o, *icmp;
    uint32_t sum;
    size_t plen;
    uint8_t src[16] = { 0xfe, 0x80 }, pseudo[40];
    static const uint8_t unspec[16];
    static const uint8_t all_nodes[16] = { 0xff, 2, [15] = 1 };
    const uint8_t *dst;

    if (len < ETH_HLEN + IP6_HLEN + 8 || h[0] >> 4 != 6 || h[6] !=
        IP6_PROTO_ICMP6 || h[7] != 255)
        return false;
    plen = net_get16(h + 4);
    if (plen < 8 || plen > len - ETH_HLEN - IP6_HLEN ||
        h[IP6_HLEN] != ICMP6_RS || h[IP6_HLEN + 1] != 0)
        return false;
    /* the checksum over the pseudo-header and the message */
    memcpy(pseudo, h + 8, 32);
    memset(pseudo + 32, 0, 8);
    pseudo[35] = (uint8_t)plen; pseudo[34] = (uint8_t)(plen >> 8);
    pseudo[39] = IP6_PROTO_ICMP6;
    if (net_csum_fold(net_csum_add(net_csum_add(0, pseudo, 40),
                                   h + IP6_HLEN, plen)))
        return false;
    /* our link-local address from our MAC (modified EUI-64) */
    src[8] = peer_mac[0] ^ 2; src[9] = peer_mac[1]; src[10] = peer_mac[2];
    src[11] = 0xff; src[12] = 0xfe; src[13] = peer_mac[3];
    src[14] = peer_mac[4]; src[15] = peer_mac[5];
    dst = memcmp(h + 8, unspec, 16) ? h + 8 : all_nodes;
    out = reply_alloc(p, ETH_HLEN + IP6_HLEN + 16 + 8);
    if (!out)
        return true;
    memcpy(out, f + 6, 6);          /* back to the solicitor's MAC */
    memcpy(out + 6, peer_mac, 6);
    net_put16(out + 12, ETH_P_IPV6);
    o = out + ETH_HLEN;
    o[0] = 0x60;
    net_put16(o + 4, 16 + 8);
    o[6] = IP6_PROTO_ICMP6;
    o[7] = 255;                     /* RFC 4861: hop limit 255 */
    memcpy(o + 8, src, 16);
    memcpy(o + 24, dst, 16);
    icmp = o + IP6_HLEN;
    icmp[0] = ICMP6_RA;
    icmp[4] = 64;                   /* cur hop limit; flags 0 */
    /* router lifetime 0: not a default router; reachable, retrans 0 */
    icmp[16] = 1;                   /* source link-layer address option */
    icmp[17] = 1;
    memcpy(icmp + 18, peer_mac, 6);
    memcpy(pseudo, o + 8, 32);
    memset(pseudo + 32, 0, 8);
    pseudo[35] = 24;
    pseudo[39] = IP6_PROTO_ICMP6;
    sum = net_csum_add(net_csum_add(0, pseudo, 40), icmp, 24);
    net_put16(icmp + 2, net_csum_fold(sum));
    reply_commit(p);
    p->be.stats.icmp_replies++;
    return true;
}

static bool handle_ipv4(peer *p, const uint8_t *f, size_t len)
{
    ip_packet pkt;

    if (handle_dhcp(p, f, len))
        return true;
    if (!ip_parse(p, f, len, &pkt))
        return false;
    switch (pkt.hdr[9]) {
    case IP_PROTO_ICMP:
        return handle_icmp(p, &pkt);
    case IP_PROTO_UDP:
        return handle_udp(p, &pkt);
    default:
        return false;
    }
}

/* --- the backend --------------------------------------------------------- */

/* Dispatch one frame; false if the peer does not answer it. */
static bool handle_frame(peer *p, const uint8_t *f, size_t len)
{
    const uint8_t *dst = f, *src = f + 6;

    /* For us: our MAC, broadcast (ARP requests, DHCP), or IPv6's
     * all-routers group (router solicitations). Other multicast is not
     * for us; a group source address is invalid on Ethernet. */
    static const uint8_t all_routers_mac[6] = { 0x33, 0x33, 0, 0, 0, 2 };
    if (memcmp(dst, peer_mac, 6) && memcmp(dst, broadcast_mac, 6) &&
        memcmp(dst, all_routers_mac, 6))
        return false;
    if (mac_is_multicast(src))
        return false;
    switch (net_get16(f + 12)) {
    case ETH_P_ARP:
        return handle_arp(p, f, len);
    case ETH_P_IPV4:
        return handle_ipv4(p, f, len);
    case ETH_P_IPV6:
        return handle_ipv6(p, f, len);
    default:
        return false;           /* VLAN tags, LLC lengths ... */
    }
}

/* The peer "receives" the frame: it answers what it answers. Never busy
 * itself; the shared path (fault.c) may say it was, for tests. */
static long peer_send(net_backend *be, const uint8_t *frame, size_t len)
{
    if (!handle_frame(to_peer(be), frame, len))
        be->stats.ignored++;
    return (long)len;
}

static int peer_tx(net_backend *be, const uint8_t *frame, size_t len)
{
    return net_txq_tx(be, &to_peer(be)->txq, peer_send, frame, len);
}

/* The next reply off the queue (net_recv_fn). */
static size_t peer_recv(net_backend *be, uint8_t *buf, size_t cap)
{
    peer *p = to_peer(be);

    while (p->count) {
        const peer_frame *f = &p->q[p->head];
        size_t len = f->len;

        p->head = (p->head + 1) % PEER_QUEUE;
        p->count--;
        be->stats.rx_offered++;
        /* net.h promises cap >= NET_FRAME_MAX; a caller that breaks that
         * loses the frame rather than getting a truncated one. */
        if (!buf || len > cap) {
            be->stats.rx_dropped++;
            continue;
        }
        memcpy(buf, f->data, len);
        return len;
    }
    return 0;
}

static bool peer_ready(net_backend *be)
{
    return to_peer(be)->count != 0;
}

static size_t peer_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    peer *p = to_peer(be);

    /* frames held back (busy host, reordering) go first: their replies
     * come back in this same pull when the NIC has buffers */
    net_txq_poll(be, &p->txq, peer_send);
    return net_rxq_rx(be, &p->rxq, peer_recv, peer_ready, buf, cap);
}

static int peer_poll_fd(net_backend *be)
{
    (void)be;
    return -1;                  /* replies are made synchronously by tx */
}

static void peer_destroy(net_backend *be)
{
    net_txq_fini(be, &to_peer(be)->txq);
    net_rxq_fini(be, &to_peer(be)->rxq);
    tftp_destroy(to_peer(be)->tftp);
    free(be);
}

static const net_backend_ops peer_ops = {
    .name = "peer",
    .tx = peer_tx,
    .rx = peer_rx,
    .poll_fd = peer_poll_fd,
    .destroy = peer_destroy,
};

net_backend *net_peer_create(const char *ip, char *err, size_t errlen)
{
    return net_peer_create_boot(ip, NULL, NULL, err, errlen);
}

net_backend *net_peer_create_boot(const char *ip, const char *tftp_dir,
                                  const char *bootfile, char *err,
                                  size_t errlen)
{
    uint8_t addr[4];
    peer *p;

    if (!ip)
        ip = PEER_DEFAULT_IP;
    if (!net_parse_ipv4(ip, addr)) {
        net_set_err(err, errlen, "peer: invalid IPv4 address '%s' "
                    "(expected A.B.C.D)", ip);
        return NULL;
    }
    /* The peer answers as this address: it must be one a host can have. */
    if (!ip_is_valid_source(addr)) {
        net_set_err(err, errlen, "peer: '%s' is not a unicast address", ip);
        return NULL;
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        net_set_err(err, errlen, "peer: out of memory");
        return NULL;
    }
    p->be.ops = &peer_ops;
    p->be.txq = &p->txq;
    p->be.rxq = &p->rxq;
    memcpy(p->ip, addr, 4);
    /* the lease: the guests' address (.15) on the peer's /24 */
    memcpy(p->dhcp.server, addr, 4);
    memcpy(p->dhcp.client, addr, 3);
    p->dhcp.client[3] = addr[3] == 15 ? 16 : 15;
    memset(p->dhcp.netmask, 255, 3);
    if (bootfile) {
        if (strlen(bootfile) > DHCP_FILE_MAX) {
            net_set_err(err, errlen, "peer: boot file name too long");
            free(p);
            return NULL;
        }
        strcpy(p->dhcp.bootfile, bootfile);
    }
    if (tftp_dir && !(p->tftp = tftp_create(tftp_dir, err, errlen))) {
        free(p);
        return NULL;
    }
    return &p->be;
}
