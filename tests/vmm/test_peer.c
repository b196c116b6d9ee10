/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_peer.c: the built-in peer (examples/vmm/backends/peer.c)
 * and --net parsing (net.c).
 *
 * The peer must answer ARP, ICMP echo and UDP echo exactly (fields and
 * checksums checked with an independent checksum), and treat every frame
 * as hostile: each truncation of a valid frame and each malformed header
 * is ignored and counted, never answered and never read out of bounds
 * (frames are passed in heap buffers of their exact size so the address
 * sanitizer sees any overread).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../unit/harness.h"
#include "net.h"
#include "net_frames.h"
#include "boot_srv.h"

static uint8_t frame[2048];
static uint8_t reply[NET_FRAME_MAX];

static net_backend *peer(void)
{
    char err[128] = "";
    net_backend *be = net_peer_create(NULL, err, sizeof err);

    ck_assert_msg(be != NULL, "%s", err);
    return be;
}

/* tx from a heap copy of exactly len bytes. */
static int tx_exact(net_backend *be, const uint8_t *f, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    int rc;

    ck_assert_ptr_nonnull(copy);
    memcpy(copy, f, len);
    rc = net_tx(be, copy, len);
    free(copy);
    return rc;
}

/* Reverse direction: what the peer's answers to the guest look like. */
static nf_addr from_peer(void)
{
    nf_addr a = { nf_peer_mac, nf_guest_mac, nf_peer_ip, nf_guest_ip };
    return a;
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

/* --- ARP --------------------------------------------------------------- */

START_TEST(arp_request_gets_reply)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer();
    size_t n = nf_arp_request(frame, &a, nf_peer_ip);

    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    n = net_rx(be, reply, sizeof reply);
    /* Padded to the Ethernet minimum, like a real NIC sends it. */
    ck_assert_uint_eq(n, 60);
    nf_check_arp_reply(reply, n, nf_peer_mac, nf_peer_ip, nf_guest_mac,
                       nf_guest_ip);
    for (size_t i = 42; i < 60; i++)
        ck_assert_uint_eq(reply[i], 0);
    ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 0);
    ck_assert_uint_eq(be->stats.arp_replies, 1);
    ck_assert_uint_eq(be->stats.tx_frames, 1);
    ck_assert_uint_eq(be->stats.tx_bytes, 42);
    ck_assert_uint_eq(be->stats.rx_frames, 1);
    ck_assert_uint_eq(be->stats.rx_bytes, 60);
    ck_assert_uint_eq(be->stats.ignored, 0);
    ck_assert_str_eq(be->ops->name, "peer");
    ck_assert_int_eq(be->ops->poll_fd(be), -1);
    net_destroy(be);
}
END_TEST

/* ARP for other hosts, ARP replies, and other hardware or protocol
 * types are none of the peer's business. Each case: byte offset within
 * the ARP packet and the value put there. */
START_TEST(arp_not_for_us_is_ignored)
{
    static const struct { size_t off; uint8_t v; } cases[] = {
        { 27, 3 },          /* tpa 10.0.2.3: another host */
        { 7, 2 },           /* op: a reply */
        { 7, 3 },           /* op: RARP request */
        { 1, 6 },           /* htype: IEEE 802 */
        { 2, 0x86 },        /* ptype: not IPv4 */
        { 4, 8 },           /* hlen */
        { 5, 16 },          /* plen */
        { 8, 0x53 },        /* sha: a group address */
    };
    net_backend *be = peer();
    nf_addr a = nf_to_peer();

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = nf_arp_request(frame, &a, nf_peer_ip);

        frame[NF_ETH + cases[i].off] = cases[i].v;
        ck_assert_int_eq(tx_exact(be, frame, n), 0);
        ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 0);
        ck_assert_uint_eq(be->stats.ignored, i + 1);
    }
    ck_assert_uint_eq(be->stats.arp_replies, 0);
    net_destroy(be);
}
END_TEST

/* --- ICMP echo ----------------------------------------------------------- */

/* Data sizes from none to the most a 1514-byte frame holds, odd ones
 * included (the checksum's padding case). */
static const size_t sizes[] = { 0, 1, 2, 3, 7, 56, 255, 1000, 1471, 1472 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

START_TEST(icmp_echo_gets_reply)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer(), r = from_peer();
    uint8_t data[1472];
    size_t n;

    for (size_t i = 0; i < NSIZES; i++) {
        pattern(data, sizes[i], (unsigned)i);
        n = nf_icmp_echo(frame, &a, 0xbeef, (unsigned)i + 1, data, sizes[i]);
        ck_assert_int_eq(tx_exact(be, frame, n), 0);
        n = net_rx(be, reply, sizeof reply);
        ck_assert_uint_eq(n, NF_L4 + 8 + sizes[i] < 60 ? 60
                                                        : NF_L4 + 8 + sizes[i]);
        nf_check_echo_reply(reply, n, &r, 0xbeef, (unsigned)i + 1, data,
                            sizes[i]);
        ck_assert_uint_eq(reply[NF_ETH + 1], 0);    /* TOS copied */
    }
    ck_assert_uint_eq(be->stats.icmp_replies, NSIZES);
    ck_assert_uint_eq(be->stats.ignored, 0);
    net_destroy(be);
}
END_TEST

/* IP options are skipped by IHL; the reply has none. */
START_TEST(icmp_echo_with_ip_options)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer(), r = from_peer();
    uint8_t data[32], opt[sizeof frame];
    size_t n;

    pattern(data, sizeof data, 9);
    n = nf_icmp_echo(frame, &a, 7, 8, data, sizeof data);
    /* Insert 4 bytes of NOP options (RFC 791 option type 1). */
    memcpy(opt, frame, NF_L4);
    memset(opt + NF_L4, 1, 4);
    memcpy(opt + NF_L4 + 4, frame + NF_L4, n - NF_L4);
    opt[NF_ETH] = 0x46;
    nf_put16(opt + NF_ETH + 2, (unsigned)(n - NF_ETH + 4));
    nf_fix_ip_csum(opt);
    ck_assert_int_eq(tx_exact(be, opt, n + 4), 0);
    n = net_rx(be, reply, sizeof reply);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_eq(reply[NF_ETH], 0x45);
    nf_check_echo_reply(reply, n, &r, 7, 8, data, sizeof data);
    net_destroy(be);
}
END_TEST

/* --- UDP echo ------------------------------------------------------------ */

START_TEST(udp_echo_gets_reply)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer(), r = from_peer();
    uint8_t data[1472];
    size_t n;

    for (int csum = 0; csum < 2; csum++) {
        for (size_t i = 0; i < NSIZES; i++) {
            pattern(data, sizes[i], (unsigned)i + 50);
            n = nf_udp(frame, &a, 40000 + (unsigned)i, 7, data, sizes[i],
                       csum);
            ck_assert_int_eq(tx_exact(be, frame, n), 0);
            n = net_rx(be, reply, sizeof reply);
            ck_assert_uint_gt(n, 0);
            nf_check_udp(reply, n, &r, 7, 40000 + (unsigned)i, data,
                         sizes[i]);
            /* The peer always computes the checksum. */
            ck_assert_uint_ne(nf_be16(reply + NF_L4 + 6), 0);
        }
    }
    ck_assert_uint_eq(be->stats.udp_replies, 2 * NSIZES);
    ck_assert_uint_eq(be->stats.ignored, 0);
    net_destroy(be);
}
END_TEST

/* Short frames arrive padded to 60 bytes with junk: the IP total length
 * and the UDP length decide, not the frame length. */
START_TEST(padded_frames_use_header_lengths)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer(), r = from_peer();
    const uint8_t data[3] = { 'a', 'b', 'c' };
    size_t n;

    n = nf_icmp_echo(frame, &a, 1, 2, data, 3);
    ck_assert_uint_lt(n, 60);
    memset(frame + n, 0xa5, 60 - n);
    ck_assert_int_eq(tx_exact(be, frame, 60), 0);
    n = net_rx(be, reply, sizeof reply);
    nf_check_echo_reply(reply, n, &r, 1, 2, data, 3);

    n = nf_udp(frame, &a, 1234, 7, data, 3, true);
    memset(frame + n, 0x5a, 60 - n);
    ck_assert_int_eq(tx_exact(be, frame, 60), 0);
    n = net_rx(be, reply, sizeof reply);
    nf_check_udp(reply, n, &r, 7, 1234, data, 3);

    /* A UDP length shorter than the IP payload: the rest is not data. */
    n = nf_udp(frame, &a, 1234, 7, data, 3, false);
    nf_put16(frame + NF_L4 + 4, 8 + 1);
    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    n = net_rx(be, reply, sizeof reply);
    nf_check_udp(reply, n, &r, 7, 1234, data, 1);
    ck_assert_uint_eq(be->stats.ignored, 0);
    net_destroy(be);
}
END_TEST

/* --- hostile input ------------------------------------------------------- */

/* Every proper prefix of a valid frame: too short for tx below 14 bytes,
 * ignored from 14 on; never answered. */
static void send_truncations(net_backend *be, const uint8_t *f, size_t len)
{
    uint64_t ignored = be->stats.ignored, dropped = be->stats.tx_dropped;

    for (size_t cut = 0; cut < len; cut++) {
        int rc = tx_exact(be, f, cut);

        ck_assert_int_eq(rc, cut < NET_FRAME_MIN ? -1 : 0);
        ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 0);
    }
    ck_assert_uint_eq(be->stats.tx_dropped - dropped, NET_FRAME_MIN);
    ck_assert_uint_eq(be->stats.ignored - ignored, len - NET_FRAME_MIN);
}

START_TEST(truncations_are_ignored)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer();
    uint8_t data[41];
    size_t n;

    pattern(data, sizeof data, 3);
    n = nf_arp_request(frame, &a, nf_peer_ip);
    send_truncations(be, frame, n);
    n = nf_icmp_echo(frame, &a, 1, 1, data, sizeof data);
    send_truncations(be, frame, n);
    n = nf_udp(frame, &a, 999, 7, data, sizeof data, true);
    send_truncations(be, frame, n);
    n = nf_udp(frame, &a, 999, 7, data, sizeof data, false);
    send_truncations(be, frame, n);
    ck_assert_uint_eq(be->stats.arp_replies + be->stats.icmp_replies +
                      be->stats.udp_replies, 0);
    net_destroy(be);
}
END_TEST

typedef void (*mutation)(uint8_t *f, size_t *len);

static void m_version6(uint8_t *f, size_t *len)
{
    (void)len;
    f[NF_ETH] = 0x65;
    nf_fix_ip_csum(f);
}
static void m_ihl(uint8_t *f, size_t *len, unsigned ihl)
{
    (void)len;
    f[NF_ETH] = (uint8_t)(0x40 | ihl);
    /* The checksum over what the IHL claims (valid only for IHL >= 5). */
    nf_put16(f + NF_ETH + 10, 0);
    if (ihl)
        nf_put16(f + NF_ETH + 10, nf_csum(f + NF_ETH, ihl * 4));
}
static void m_ihl0(uint8_t *f, size_t *len) { m_ihl(f, len, 0); }
static void m_ihl4(uint8_t *f, size_t *len) { m_ihl(f, len, 4); }
static void m_ihl15(uint8_t *f, size_t *len) { m_ihl(f, len, 15); }
static void m_total_short(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_ETH + 2, 19);       /* less than the header */
    nf_fix_ip_csum(f);
}
static void m_total_long(uint8_t *f, size_t *len)
{
    nf_put16(f + NF_ETH + 2, (unsigned)(*len - NF_ETH + 1));
    nf_fix_ip_csum(f);
}
static void m_total_max(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_ETH + 2, 0xffff);
    nf_fix_ip_csum(f);
}
static void m_ip_csum(uint8_t *f, size_t *len)
{
    (void)len;
    f[NF_ETH + 10] ^= 0x40;
}
static void m_more_fragments(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_ETH + 6, 0x2000);
    nf_fix_ip_csum(f);
}
static void m_fragment_offset(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_ETH + 6, 0x0001);
    nf_fix_ip_csum(f);
}
static void m_wrong_dst_ip(uint8_t *f, size_t *len)
{
    (void)len;
    f[NF_ETH + 19] = 3;
    nf_fix_ip_csum(f);
}
static void m_bcast_src_ip(uint8_t *f, size_t *len)
{
    (void)len;
    memset(f + NF_ETH + 12, 0xff, 4);
    nf_fix_ip_csum(f);
}
static void m_zero_src_ip(uint8_t *f, size_t *len)
{
    (void)len;
    memset(f + NF_ETH + 12, 0, 4);
    nf_fix_ip_csum(f);
}
static void m_other_dst_mac(uint8_t *f, size_t *len)
{
    (void)len;
    f[5] ^= 0x10;
}
static void m_multicast_dst_mac(uint8_t *f, size_t *len)
{
    static const uint8_t mc[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
    (void)len;
    memcpy(f, mc, 6);
}
static void m_group_src_mac(uint8_t *f, size_t *len)
{
    (void)len;
    f[6] |= 1;
}
static void m_ethertype_ipv6(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + 12, 0x86dd);
}
static void m_ethertype_vlan(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + 12, 0x8100);
}
static void m_proto_tcp(uint8_t *f, size_t *len)
{
    (void)len;
    f[NF_ETH + 9] = 6;
    nf_fix_ip_csum(f);
}
static void m_l4_csum(uint8_t *f, size_t *len)
{
    (void)len;
    f[NF_L4 + 7] ^= 0x01;       /* ICMP data byte 0 / UDP checksum low */
}
static void m_l4_payload_bit(uint8_t *f, size_t *len)
{
    f[*len - 1] ^= 0x80;        /* checksum no longer matches */
}
static void m_l4_too_short(uint8_t *f, size_t *len)
{
    /* Only 7 bytes of ICMP/UDP header. */
    nf_put16(f + NF_ETH + 2, NF_IP + 7);
    nf_fix_ip_csum(f);
    *len = NF_L4 + 7;
}

/* UDP only */
static void m_udp_port(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_L4 + 2, 9);
    nf_put16(f + NF_L4 + 6, 0);
}
static void m_udp_src_port0(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_L4, 0);
    nf_put16(f + NF_L4 + 6, 0);
}
static void m_udp_len_long(uint8_t *f, size_t *len)
{
    nf_put16(f + NF_L4 + 4, (unsigned)(*len - NF_L4 + 1));
    nf_put16(f + NF_L4 + 6, 0);
}
static void m_udp_len_short(uint8_t *f, size_t *len)
{
    (void)len;
    nf_put16(f + NF_L4 + 4, 7);
    nf_put16(f + NF_L4 + 6, 0);
}

/* ICMP only */
static void m_icmp_type(uint8_t *f, size_t *len)
{
    f[NF_L4] = 0;               /* an echo reply: not answered */
    nf_put16(f + NF_L4 + 2, 0);
    nf_put16(f + NF_L4 + 2, nf_csum(f + NF_L4, *len - NF_L4));
}
static void m_icmp_code(uint8_t *f, size_t *len)
{
    f[NF_L4 + 1] = 1;
    nf_put16(f + NF_L4 + 2, 0);
    nf_put16(f + NF_L4 + 2, nf_csum(f + NF_L4, *len - NF_L4));
}

static const mutation ip_mutations[] = {
    m_version6, m_ihl0, m_ihl4, m_ihl15, m_total_short, m_total_long,
    m_total_max, m_ip_csum, m_more_fragments, m_fragment_offset,
    m_wrong_dst_ip, m_bcast_src_ip, m_zero_src_ip, m_other_dst_mac,
    m_multicast_dst_mac, m_group_src_mac, m_ethertype_ipv6,
    m_ethertype_vlan, m_proto_tcp, m_l4_payload_bit, m_l4_too_short,
};
static const mutation udp_mutations[] = {
    m_l4_csum, m_udp_port, m_udp_src_port0, m_udp_len_long, m_udp_len_short,
};
static const mutation icmp_mutations[] = {
    m_l4_csum, m_icmp_type, m_icmp_code,
};
#define COUNT(a) (sizeof a / sizeof a[0])

typedef size_t (*builder)(uint8_t *f);

static size_t build_icmp(uint8_t *f)
{
    static const uint8_t data[5] = { 1, 2, 3, 4, 5 };
    nf_addr a = nf_to_peer();
    return nf_icmp_echo(f, &a, 3, 4, data, sizeof data);
}

static size_t build_udp(uint8_t *f)
{
    static const uint8_t data[5] = { 1, 2, 3, 4, 5 };
    nf_addr a = nf_to_peer();
    return nf_udp(f, &a, 5000, 7, data, sizeof data, true);
}

/* Apply each mutation to a fresh valid frame: ignored, once each. The
 * unmutated frame is answered, so the mutation is what matters. */
static void check_mutations(net_backend *be, builder build,
                            const mutation *m, size_t count)
{
    uint64_t ignored = be->stats.ignored;
    size_t n = build(frame);

    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    ck_assert_uint_gt(net_rx(be, reply, sizeof reply), 0);
    for (size_t i = 0; i < count; i++) {
        n = build(frame);
        m[i](frame, &n);
        ck_assert_int_eq(tx_exact(be, frame, n), 0);
        ck_assert_msg(net_rx(be, reply, sizeof reply) == 0,
                      "mutation %zu was answered", i);
        ck_assert_uint_eq(be->stats.ignored - ignored, i + 1);
    }
}

START_TEST(malformed_headers_are_ignored)
{
    net_backend *be = peer();

    check_mutations(be, build_icmp, ip_mutations, COUNT(ip_mutations));
    check_mutations(be, build_udp, ip_mutations, COUNT(ip_mutations));
    check_mutations(be, build_icmp, icmp_mutations, COUNT(icmp_mutations));
    check_mutations(be, build_udp, udp_mutations, COUNT(udp_mutations));
    ck_assert_uint_eq(be->stats.ignored,
                      2 * COUNT(ip_mutations) + COUNT(icmp_mutations) +
                      COUNT(udp_mutations));
    ck_assert_uint_eq(be->stats.icmp_replies, 2);
    ck_assert_uint_eq(be->stats.udp_replies, 2);
    net_destroy(be);
}
END_TEST

/* xorshift32: the same "random" frames on every run. */
static uint32_t rnd(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Random and randomly damaged frames: never a crash, every frame either
 * answered (with valid checksums) or ignored. */
START_TEST(random_frames)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer(), r = from_peer();
    uint32_t x = 12345;
    unsigned answered = 0;

    for (int i = 0; i < 20000; i++) {
        size_t n;

        switch (rnd(&x) % 4) {
        case 0: n = nf_arp_request(frame, &a, nf_peer_ip); break;
        case 1: n = build_icmp(frame); break;
        case 2: n = build_udp(frame); break;
        default:
            n = NET_FRAME_MIN + rnd(&x) % 200;
            for (size_t j = 0; j < n; j++)
                frame[j] = (uint8_t)rnd(&x);
            memcpy(frame, nf_peer_mac, 6);
            frame[6] = 0x52;
            nf_put16(frame + 12, rnd(&x) & 1 ? 0x0800 : 0x0806);
            break;
        }
        /* Damage a few bytes (or none). */
        for (unsigned k = rnd(&x) % 4; k; k--) {
            size_t at = rnd(&x) % n;

            frame[at] ^= (uint8_t)(1u << (rnd(&x) % 8));
        }
        ck_assert_int_eq(tx_exact(be, frame, n), 0);
        n = net_rx(be, reply, sizeof reply);
        if (n && nf_be16(reply + 12) == 0x0800) {
            size_t plen;
            const uint8_t *l4;

            r.dmac = reply;     /* whoever sent it */
            r.dip = reply + NF_ETH + 16;
            l4 = nf_check_ip(reply, n, &r, reply[NF_ETH + 9], &plen);
            if (reply[NF_ETH + 9] == 1)
                ck_assert_uint_eq(nf_csum(l4, plen), 0);
            else
                ck_assert_uint_eq(nf_udp_csum(r.sip, r.dip, l4, plen), 0);
        }
        answered += n != 0;
    }
    ck_assert_uint_eq(be->stats.tx_frames, 20000);
    ck_assert_uint_eq(be->stats.arp_replies + be->stats.icmp_replies +
                      be->stats.udp_replies, answered);
    ck_assert_uint_eq(answered + be->stats.ignored, 20000);
    ck_assert_uint_gt(answered, 1000);
    ck_assert_uint_gt(be->stats.ignored, 1000);
    net_destroy(be);
}
END_TEST

START_TEST(tx_size_limits)
{
    net_backend *be = peer();

    memset(frame, 0, sizeof frame);
    ck_assert_int_eq(tx_exact(be, frame, NET_FRAME_MIN - 1), -1);
    ck_assert_int_eq(tx_exact(be, frame, NET_FRAME_MAX + 1), -1);
    ck_assert_int_eq(net_tx(be, NULL, 60), -1);
    ck_assert_uint_eq(be->stats.tx_dropped, 3);
    ck_assert_uint_eq(be->stats.tx_frames, 0);
    ck_assert_int_eq(tx_exact(be, frame, NET_FRAME_MIN), 0);
    ck_assert_int_eq(tx_exact(be, frame, NET_FRAME_MAX), 0);
    ck_assert_uint_eq(be->stats.tx_frames, 2);
    ck_assert_uint_eq(be->stats.ignored, 2);
    ck_assert_uint_eq(be->stats.tx_dropped, 3);
    net_destroy(be);
}
END_TEST

/* --- the reply queue --------------------------------------------------- */

/* 300 requests without a pull: 256 replies kept, 44 dropped and counted;
 * they come out in order, and the queue takes replies again after. */
START_TEST(queue_is_bounded_and_ordered)
{
    net_backend *be = peer();
    uint8_t sip[4] = { 10, 0, 0, 0 };
    nf_addr a = nf_to_peer();
    size_t n;

    a.sip = sip;
    for (unsigned i = 0; i < 300; i++) {
        sip[2] = (uint8_t)(i >> 8);
        sip[3] = (uint8_t)i;
        n = nf_arp_request(frame, &a, nf_peer_ip);
        ck_assert_int_eq(tx_exact(be, frame, n), 0);
    }
    ck_assert_uint_eq(be->stats.arp_replies, 256);
    ck_assert_uint_eq(be->stats.rx_dropped, 44);
    ck_assert_uint_eq(be->stats.ignored, 0);
    for (unsigned i = 0; i < 256; i++) {
        n = net_rx(be, reply, sizeof reply);
        ck_assert_uint_eq(n, 60);
        ck_assert_uint_eq(reply[NF_ETH + 26], i >> 8);  /* tpa */
        ck_assert_uint_eq(reply[NF_ETH + 27], i & 0xff);
    }
    ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 0);

    n = nf_arp_request(frame, &a, nf_peer_ip);
    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 60);
    ck_assert_uint_eq(be->stats.rx_frames, 257);
    net_destroy(be);
}
END_TEST

/* A buffer smaller than the frame loses the frame (counted) rather than
 * receiving a truncated one. */
START_TEST(rx_buffer_too_small)
{
    net_backend *be = peer();
    nf_addr a = nf_to_peer();
    size_t n = nf_arp_request(frame, &a, nf_peer_ip);

    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    ck_assert_uint_eq(net_rx(be, reply, 59), 0);
    ck_assert_uint_eq(be->stats.rx_dropped, 1);
    ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 0);
    net_destroy(be);
}
END_TEST

/* --- creation and --net parsing ------------------------------------------ */

START_TEST(peer_create_checks_address)
{
    static const char *bad[] = { "10.0.2", "10.0.2.256", "10.0.2.2 ",
                                 "0x0a.0.2.2", "", "peer" };
    static const char *not_unicast[] = { "0.0.0.0", "255.255.255.255",
                                         "224.0.0.1", "240.0.0.1" };
    char err[128];
    net_backend *be;

    for (size_t i = 0; i < COUNT(bad); i++) {
        err[0] = 0;
        ck_assert_ptr_null(net_peer_create(bad[i], err, sizeof err));
        ck_assert_msg(strstr(err, "peer: invalid IPv4 address") != NULL,
                      "%s: %s", bad[i], err);
    }
    for (size_t i = 0; i < COUNT(not_unicast); i++) {
        err[0] = 0;
        ck_assert_ptr_null(net_peer_create(not_unicast[i], err, sizeof err));
        ck_assert_msg(strstr(err, "not a unicast address") != NULL, "%s", err);
    }
    /* No error buffer is fine too. */
    ck_assert_ptr_null(net_peer_create("bad", NULL, 0));
    be = net_peer_create("10.0.2.2", NULL, 0);
    ck_assert_ptr_nonnull(be);
    net_destroy(be);
    net_destroy(NULL);
}
END_TEST

/* A peer at another address answers for it, not for 10.0.2.2. */
static void check_answers_for(net_backend *be, const uint8_t *ip)
{
    nf_addr a = nf_to_peer();
    size_t n;

    n = nf_arp_request(frame, &a, nf_peer_ip);
    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    ck_assert_uint_eq(net_rx(be, reply, sizeof reply), 0);
    n = nf_arp_request(frame, &a, ip);
    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    n = net_rx(be, reply, sizeof reply);
    nf_check_arp_reply(reply, n, nf_peer_mac, ip, nf_guest_mac, nf_guest_ip);
    a.dip = ip;
    n = nf_icmp_echo(frame, &a, 1, 1, NULL, 0);
    ck_assert_int_eq(tx_exact(be, frame, n), 0);
    ck_assert_uint_gt(net_rx(be, reply, sizeof reply), 0);
}

/* TFTP (backends/tftp.c): a duplicate ACK gets nothing at once (the
 * Sorcerer's Apprentice), but one repeated TFTP_RESEND_MS or more after
 * the next block went out means that block was lost: it goes again. */
START_TEST(tftp_resends_lost_block)
{
    char dir[] = "/tmp/lc-tftp-XXXXXX", path[64], err[128];
    static const uint8_t rrq[] = "\0\1f\0octet";
    uint8_t file[1500], out[1024], ack[4] = { 0, 4, 0, 0 };
    uint16_t from;
    tftp_server *t;
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f", dir);
    for (unsigned i = 0; i < sizeof file; i++)
        file[i] = (uint8_t)i;
    ck_assert_ptr_nonnull(f = fopen(path, "wb"));
    ck_assert_uint_eq(fwrite(file, 1, sizeof file, f), sizeof file);
    fclose(f);
    ck_assert_ptr_nonnull(t = tftp_create(dir, err, sizeof err));

    /* no options: block 1 at once, from the transfer's own port */
    ck_assert_uint_eq(tftp_input(t, 2000, 69, rrq, sizeof rrq, out, &from),
                      4 + 512);
    ck_assert_uint_eq(out[3], 1);
    /* ACK 0 again at once: a delayed duplicate, nothing */
    ck_assert_uint_eq(tftp_input(t, 2000, from, ack, 4, out, &from), 0);
    /* ... and after the client's timeout: block 1 was lost, again */
    usleep(600 * 1000);
    ck_assert_uint_eq(tftp_input(t, 2000, from, ack, 4, out, &from),
                      4 + 512);
    ck_assert_uint_eq(out[3], 1);
    ck_assert_mem_eq(out + 4, file, 512);
    ack[3] = 1;
    ck_assert_uint_eq(tftp_input(t, 2000, from, ack, 4, out, &from),
                      4 + 512);
    ck_assert_uint_eq(out[3], 2);
    ck_assert_uint_eq(tftp_input(t, 2000, from, ack, 4, out, &from), 0);
    ck_assert_uint_eq(tftp_get_stats(t)->resent, 1);
    tftp_destroy(t);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(net_arg_peer)
{
    static const uint8_t ip[4] = { 192, 168, 7, 1 };
    char err[128] = "";
    net_backend *be;

    be = net_backend_from_arg("peer", err, sizeof err);
    ck_assert_msg(be != NULL, "%s", err);
    ck_assert_str_eq(be->ops->name, "peer");
    net_destroy(be);

    be = net_backend_from_arg("peer,ip=192.168.7.1", err, sizeof err);
    ck_assert_msg(be != NULL, "%s", err);
    check_answers_for(be, ip);
    net_destroy(be);
}
END_TEST

START_TEST(net_arg_errors)
{
    static const struct { const char *arg, *msg; } cases[] = {
        { "", "empty network backend (valid: peer, tap, dgram)" },
        { "foo", "unknown network backend 'foo' (valid: peer, tap, dgram)" },
        { "Peer", "unknown network backend 'Peer' (valid: peer, tap, dgram)" },
        { ",ip=1.2.3.4", "unknown network backend '' (valid: peer, tap, dgram)" },
        { "peer,", "peer: empty option (usage: peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE])" },
        { "peer,ipx=1.2.3.4", "peer: unknown option 'ipx' (valid: ip, tftp, boot)" },
        { "peer,ifname=tap0", "peer: unknown option 'ifname' (valid: ip, tftp, boot)" },
        { "peer,ip", "peer: option 'ip' needs a value (usage: peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE])" },
        { "peer,ip=", "peer: option 'ip' needs a value (usage: peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE])" },
        { "peer,ip=1.2.3.4,ip=1.2.3.5", "peer: option 'ip' given twice" },
        { "peer,ip=1.2.3", "peer: invalid IPv4 address '1.2.3' (expected A.B.C.D)" },
        { "tap", "tap: missing ifname (use tap,ifname=NAME)" },
        { "tap,ifname=", "tap: option 'ifname' needs a value (usage: tap,ifname=NAME)" },
        { "tap,ip=1.2.3.4", "tap: unknown option 'ip' (valid: ifname)" },
        { "tap,ifname=abcdefghijklmnop",
          "tap: interface name 'abcdefghijklmnop' too long (at most 15 characters)" },
        { "dgram", "dgram: missing local (use dgram,local=HOST:PORT,remote=HOST:PORT)" },
        { "dgram,local=127.0.0.1:9",
          "dgram: missing remote (use dgram,local=HOST:PORT,remote=HOST:PORT)" },
        { "dgram,local=127.0.0.1,remote=127.0.0.1:9",
          "dgram: local=127.0.0.1: expected HOST:PORT" },
        { "dgram,ifname=x", "dgram: unknown option 'ifname' (valid: local, remote)" },
    };
    char err[160];

    for (size_t i = 0; i < COUNT(cases); i++) {
        strcpy(err, "(none)");
        ck_assert_ptr_null(net_backend_from_arg(cases[i].arg, err, sizeof err));
        ck_assert_str_eq(err, cases[i].msg);
    }
    ck_assert_ptr_null(net_backend_from_arg(NULL, err, sizeof err));
    ck_assert_str_eq(err, "empty network backend (valid: peer, tap, dgram)");
    /* A small error buffer is truncated, not overrun. */
    ck_assert_ptr_null(net_backend_from_arg("foo", err, 8));
    ck_assert_str_eq(err, "unknown");
}
END_TEST

/* A UDP port nothing listens on now (bound, read, closed). */
static unsigned free_udp_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Two dgram backends facing each other: a frame one sends is one
 * datagram the other receives, whole; oversize and runt datagrams are
 * dropped and counted; the descriptor polls readable while one waits. */
START_TEST(dgram_pair_carries_frames)
{
    unsigned pa = free_udp_port(), pb = free_udp_port();
    char arg_a[96], arg_b[96], err[160] = "";
    uint8_t frame[100], buf[NET_FRAME_MAX];
    net_backend *a, *b;
    struct pollfd p;

    snprintf(arg_a, sizeof arg_a,
             "dgram,local=127.0.0.1:%u,remote=127.0.0.1:%u", pa, pb);
    snprintf(arg_b, sizeof arg_b,
             "dgram,local=127.0.0.1:%u,remote=127.0.0.1:%u", pb, pa);
    a = net_backend_from_arg(arg_a, err, sizeof err);
    ck_assert_msg(a, "%s", err);
    b = net_backend_from_arg(arg_b, err, sizeof err);
    ck_assert_msg(b, "%s", err);
    ck_assert_uint_eq(net_rx(b, buf, sizeof buf), 0);     /* nothing yet */
    for (size_t i = 0; i < sizeof frame; i++)
        frame[i] = (uint8_t)(i * 7);
    ck_assert_int_eq(net_tx(a, frame, sizeof frame), 0);
    p = (struct pollfd){ net_poll_fd(b), POLLIN, 0 };
    ck_assert_int_eq(poll(&p, 1, 2000), 1);
    ck_assert_uint_eq(net_rx(b, buf, sizeof buf), sizeof frame);
    ck_assert_mem_eq(buf, frame, sizeof frame);
    ck_assert_uint_eq(b->stats.rx_offered, 1);
    ck_assert_uint_eq(a->stats.tx_frames, 1);
    /* a datagram too short to be a frame, from the right address */
    {
        struct sockaddr_in to = { .sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)pb),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct sockaddr_in from = to;
        int fd = socket(AF_INET, SOCK_DGRAM, 0);

        net_destroy(a);                 /* its port, for the stray sender */
        from.sin_port = htons((uint16_t)pa);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&from, sizeof from), 0);
        ck_assert_int_eq(sendto(fd, "runt", 4, 0, (struct sockaddr *)&to,
                                sizeof to), 4);
        ck_assert_int_eq(poll(&p, 1, 2000), 1);
        ck_assert_uint_eq(net_rx(b, buf, sizeof buf), 0);
        ck_assert_uint_eq(b->stats.rx_dropped, 1);
        close(fd);
    }
    net_destroy(b);
}
END_TEST

static Suite *peer_suite(void)
{
    Suite *s = suite_create("peer");
    TCase *tc = tcase_create("peer");

    tcase_add_test(tc, arp_request_gets_reply);
    tcase_add_test(tc, arp_not_for_us_is_ignored);
    tcase_add_test(tc, icmp_echo_gets_reply);
    tcase_add_test(tc, icmp_echo_with_ip_options);
    tcase_add_test(tc, udp_echo_gets_reply);
    tcase_add_test(tc, padded_frames_use_header_lengths);
    tcase_add_test(tc, truncations_are_ignored);
    tcase_add_test(tc, malformed_headers_are_ignored);
    tcase_add_test(tc, random_frames);
    tcase_add_test(tc, tx_size_limits);
    tcase_add_test(tc, queue_is_bounded_and_ordered);
    tcase_add_test(tc, rx_buffer_too_small);
    tcase_add_test(tc, peer_create_checks_address);
    tcase_add_test(tc, tftp_resends_lost_block);
    tcase_add_test(tc, net_arg_peer);
    tcase_add_test(tc, net_arg_errors);
    tcase_add_test(tc, dgram_pair_carries_frames);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return lc_test_run(peer_suite());
}
