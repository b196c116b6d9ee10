/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/net_frames.h: build the frames a guest sends (ARP request,
 * ICMP echo request, UDP datagram) and check the answers, for the network
 * backend tests. The checksum here is written independently of the
 * backends' net_util.h so a bug there cannot hide itself.
 */
#ifndef LC_TEST_NET_FRAMES_H
#define LC_TEST_NET_FRAMES_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NF_ETH 14
#define NF_IP 20
#define NF_L4 (NF_ETH + NF_IP)  /* ICMP/UDP header offset, no IP options */

static const uint8_t nf_guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t nf_peer_mac[6] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };
static const uint8_t nf_bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t nf_guest_ip[4] = { 10, 0, 2, 15 };
static const uint8_t nf_peer_ip[4] = { 10, 0, 2, 2 };

/* Who sends to whom: Ethernet and IPv4 addresses. */
typedef struct nf_addr {
    const uint8_t *smac, *dmac, *sip, *dip;
} nf_addr;

/* The guest talking to the built-in peer. */
static inline nf_addr nf_to_peer(void)
{
    nf_addr a = { nf_guest_mac, nf_peer_mac, nf_guest_ip, nf_peer_ip };
    return a;
}

static inline uint16_t nf_be16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline void nf_put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Plain RFC 1071 sum of `len` bytes (odd tail padded), not folded. */
static inline uint32_t nf_sum(const uint8_t *p, size_t len)
{
    uint32_t s = 0;

    for (size_t i = 0; i < len; i++)
        s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
    return s;
}

static inline uint16_t nf_fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

static inline uint16_t nf_csum(const uint8_t *p, size_t len)
{
    return nf_fold(nf_sum(p, len));
}

/* The UDP checksum over the pseudo-header and the datagram (RFC 768). */
static inline uint16_t nf_udp_csum(const uint8_t *sip, const uint8_t *dip,
                                   const uint8_t *udp, size_t len)
{
    return nf_fold(nf_sum(sip, 4) + nf_sum(dip, 4) + 17 + (uint32_t)len +
                   nf_sum(udp, len));
}

static inline size_t nf_eth(uint8_t *f, const nf_addr *a, unsigned type)
{
    memcpy(f, a->dmac, 6);
    memcpy(f + 6, a->smac, 6);
    nf_put16(f + 12, type);
    return NF_ETH;
}

/* An ARP request (RFC 826), broadcast, for tpa from smac/sip: 42 bytes. */
static inline size_t nf_arp_request(uint8_t *f, const nf_addr *a,
                                    const uint8_t *tpa)
{
    nf_addr b = *a;
    uint8_t *r = f + NF_ETH;

    b.dmac = nf_bcast_mac;
    nf_eth(f, &b, 0x0806);
    nf_put16(r, 1);
    nf_put16(r + 2, 0x0800);
    r[4] = 6;
    r[5] = 4;
    nf_put16(r + 6, 1);
    memcpy(r + 8, a->smac, 6);
    memcpy(r + 14, a->sip, 4);
    memset(r + 18, 0, 6);
    memcpy(r + 24, tpa, 4);
    return NF_ETH + 28;
}

/* Recompute the IPv4 header checksum of frame f (after edits). */
static inline void nf_fix_ip_csum(uint8_t *f)
{
    uint8_t *h = f + NF_ETH;
    size_t hlen = (size_t)(h[0] & 0xf) * 4;

    nf_put16(h + 10, 0);
    nf_put16(h + 10, nf_csum(h, hlen));
}

/* Ethernet + IPv4 header (no options) for l4len bytes of proto. */
static inline void nf_ip_header(uint8_t *f, const nf_addr *a, uint8_t proto,
                                size_t l4len)
{
    uint8_t *h = f + NF_ETH;

    nf_eth(f, a, 0x0800);
    memset(h, 0, NF_IP);
    h[0] = 0x45;
    nf_put16(h + 2, (unsigned)(NF_IP + l4len));
    nf_put16(h + 4, 0x1234);
    nf_put16(h + 6, 0x4000);    /* DF: allowed, it is not a fragment */
    h[8] = 64;
    h[9] = proto;
    memcpy(h + 12, a->sip, 4);
    memcpy(h + 16, a->dip, 4);
    nf_fix_ip_csum(f);
}

/* An ICMP echo request (RFC 792) with n data bytes. */
static inline size_t nf_icmp_echo(uint8_t *f, const nf_addr *a, unsigned id,
                                  unsigned seq, const uint8_t *data, size_t n)
{
    uint8_t *m = f + NF_L4;

    nf_ip_header(f, a, 1, 8 + n);
    m[0] = 8;
    m[1] = 0;
    nf_put16(m + 2, 0);
    nf_put16(m + 4, id);
    nf_put16(m + 6, seq);
    if (n)
        memcpy(m + 8, data, n);
    nf_put16(m + 2, nf_csum(m, 8 + n));
    return NF_L4 + 8 + n;
}

/* A UDP datagram (RFC 768) with n data bytes, checksummed or not (0). */
static inline size_t nf_udp(uint8_t *f, const nf_addr *a, unsigned sport,
                            unsigned dport, const uint8_t *data, size_t n,
                            bool csum)
{
    uint8_t *u = f + NF_L4;

    nf_ip_header(f, a, 17, 8 + n);
    nf_put16(u, sport);
    nf_put16(u + 2, dport);
    nf_put16(u + 4, (unsigned)(8 + n));
    nf_put16(u + 6, 0);
    if (n)
        memcpy(u + 8, data, n);
    if (csum) {
        uint16_t s = nf_udp_csum(a->sip, a->dip, u, 8 + n);
        nf_put16(u + 6, s ? s : 0xffff);
    }
    return NF_L4 + 8 + n;
}

/*
 * Check that frame f (len bytes) is an IPv4 datagram of `proto` from
 * a->sip/smac to a->dip/dmac with a valid header; returns its payload and
 * sets *plen from the total length.
 */
static inline const uint8_t *nf_check_ip(const uint8_t *f, size_t len,
                                         const nf_addr *a, uint8_t proto,
                                         size_t *plen)
{
    const uint8_t *h = f + NF_ETH;
    size_t hlen, total;

    ck_assert_uint_ge(len, NF_L4);
    ck_assert_mem_eq(f, a->dmac, 6);
    ck_assert_mem_eq(f + 6, a->smac, 6);
    ck_assert_uint_eq(nf_be16(f + 12), 0x0800);
    ck_assert_uint_eq(h[0] >> 4, 4);
    hlen = (size_t)(h[0] & 0xf) * 4;
    total = nf_be16(h + 2);
    ck_assert_uint_ge(hlen, NF_IP);
    ck_assert_uint_ge(total, hlen);
    ck_assert_uint_le(NF_ETH + total, len);
    ck_assert_uint_eq(nf_csum(h, hlen), 0);
    ck_assert_uint_eq(nf_be16(h + 6) & 0x3fff, 0);   /* not a fragment */
    ck_assert_uint_gt(h[8], 0);
    ck_assert_uint_eq(h[9], proto);
    ck_assert_mem_eq(h + 12, a->sip, 4);
    ck_assert_mem_eq(h + 16, a->dip, 4);
    *plen = total - hlen;
    return h + hlen;
}

/* Check an ICMP echo reply to (id, seq, data[n]). */
static inline void nf_check_echo_reply(const uint8_t *f, size_t len,
                                       const nf_addr *a, unsigned id,
                                       unsigned seq, const uint8_t *data,
                                       size_t n)
{
    size_t plen;
    const uint8_t *m = nf_check_ip(f, len, a, 1, &plen);

    ck_assert_uint_eq(plen, 8 + n);
    ck_assert_uint_eq(m[0], 0);
    ck_assert_uint_eq(m[1], 0);
    ck_assert_uint_eq(nf_csum(m, plen), 0);
    ck_assert_uint_eq(nf_be16(m + 4), id);
    ck_assert_uint_eq(nf_be16(m + 6), seq);
    if (n)
        ck_assert_mem_eq(m + 8, data, n);
}

/* Check a UDP datagram sport -> dport carrying data[n]. */
static inline void nf_check_udp(const uint8_t *f, size_t len,
                                const nf_addr *a, unsigned sport,
                                unsigned dport, const uint8_t *data, size_t n)
{
    size_t plen;
    const uint8_t *u = nf_check_ip(f, len, a, 17, &plen);

    ck_assert_uint_eq(plen, 8 + n);
    ck_assert_uint_eq(nf_be16(u), sport);
    ck_assert_uint_eq(nf_be16(u + 2), dport);
    ck_assert_uint_eq(nf_be16(u + 4), 8 + n);
    if (nf_be16(u + 6))
        ck_assert_uint_eq(nf_udp_csum(a->sip, a->dip, u, 8 + n), 0);
    if (n)
        ck_assert_mem_eq(u + 8, data, n);
}

/* Check an ARP reply (RFC 826) from sha/spa to tha/tpa. */
static inline void nf_check_arp_reply(const uint8_t *f, size_t len,
                                      const uint8_t *sha, const uint8_t *spa,
                                      const uint8_t *tha, const uint8_t *tpa)
{
    const uint8_t *r = f + NF_ETH;

    ck_assert_uint_ge(len, NF_ETH + 28);
    ck_assert_mem_eq(f, tha, 6);
    ck_assert_mem_eq(f + 6, sha, 6);
    ck_assert_uint_eq(nf_be16(f + 12), 0x0806);
    ck_assert_uint_eq(nf_be16(r), 1);
    ck_assert_uint_eq(nf_be16(r + 2), 0x0800);
    ck_assert_uint_eq(r[4], 6);
    ck_assert_uint_eq(r[5], 4);
    ck_assert_uint_eq(nf_be16(r + 6), 2);
    ck_assert_mem_eq(r + 8, sha, 6);
    ck_assert_mem_eq(r + 14, spa, 4);
    ck_assert_mem_eq(r + 18, tha, 6);
    ck_assert_mem_eq(r + 24, tpa, 4);
}

#endif /* LC_TEST_NET_FRAMES_H */
