/* examples/guests/net.c: the echo workload of the NIC guests.
 *
 * Guest 10.0.2.15 with the NIC's MAC; the peer 10.0.2.2 answers ARP,
 * ICMP echo and UDP echo on port 7 (docs/vmm.md, "Network"). The
 * workload: one ARP request, one ICMP echo, then N UDP echo exchanges
 * whose payloads (18..size bytes, from the PRNG) start with a sequence
 * number; every reply is checked byte for byte and folded into an
 * FNV-1a checksum of all reply payloads, which depends only on the
 * command line (not on the NIC, the MAC or the VMM). Nothing from the
 * network is trusted: lengths are checked before use, unrelated frames
 * are dropped (ARP requests for us are answered) and every wait is
 * bounded. */
#include "net.h"

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_ARP 0x0806
#define IPPROTO_ICMP 1
#define IPPROTO_UDP 17
#define UDP_ECHO_PORT 7
#define UDP_LOCAL_PORT 40007
#define ICMP_ID 0x4c43          /* "LC" */
#define ICMP_PAYLOAD 56
#define MAX_STRAY_FRAMES 256    /* unrelated frames tolerated per wait */

static const uint8_t guest_ip[4] = {10, 0, 2, 15};
static const uint8_t peer_ip[4] = {10, 0, 2, 2};
static const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static uint8_t peer_mac[6];
static uint8_t tx_frame[ETH_FRAME_MAX] __attribute__((aligned(16)));
static uint8_t rx_frame[2048] __attribute__((aligned(16)));
static uint8_t payload[1500];
static uint16_t ip_id;
static uint32_t stray_frames;

/* ---- byte order ---- */
static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void put32(uint8_t *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v);
}

/* ---- waiting ---- */
void net_wait_begin(const struct nic *nic, struct net_wait *w)
{
    w->steps = 0;
    w->tick0 = nic->irq_mode ? irq_ticks : 0;
    w->tsc0 = rdtsc();
}

bool net_wait_step(const struct nic *nic, struct net_wait *w)
{
    if (nic->irq_mode) {
        if (irq_ticks - w->tick0 > NET_IRQ_WAIT_TICKS || ++w->steps > NET_IRQ_WAKEUPS)
            return false;
        /* Interrupts are off outside this window, so the caller's check
         * of the rings and this HLT cannot race with the handler. */
        cpu_sti_hlt();
        cpu_cli();
        return true;
    }
    if (++w->steps > NET_POLL_BOUND || rdtsc() - w->tsc0 > NET_WAIT_TSC)
        return false;
    nic->poll();
    return true;
}

/* ---- frame building ---- */
static uint32_t eth_header(const uint8_t *dst, const struct nic *nic, uint16_t type)
{
    memcpy(tx_frame, dst, 6);
    memcpy(tx_frame + 6, nic->mac, 6);
    put16(tx_frame + 12, type);
    return 14;
}

/* IPv4 header at tx_frame + 14 for a payload of len bytes. */
static void ip_header(uint8_t proto, uint32_t len)
{
    uint8_t *ip = tx_frame + 14;
    ip[0] = 0x45;                       /* version 4, IHL 5 */
    ip[1] = 0;
    put16(ip + 2, 20 + len);
    put16(ip + 4, ip_id++);
    put16(ip + 6, 0x4000);              /* DF */
    ip[8] = 64;                         /* TTL */
    ip[9] = proto;
    put16(ip + 10, 0);
    memcpy(ip + 12, guest_ip, 4);
    memcpy(ip + 16, peer_ip, 4);
    put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
}

/* batch=: while set, frames are staged (nic->stage) for one post. */
static bool staging, staging_fill;

static bool send_frame(struct nic *nic, uint32_t len)
{
    if (len < ETH_FRAME_MIN) {
        memset(tx_frame + len, 0, ETH_FRAME_MIN - len);
        len = ETH_FRAME_MIN;
    }
    if (staging)
        return nic->stage(tx_frame, len, staging_fill);
    return nic->send(tx_frame, len);
}

/* The folded sum over the UDP pseudo-header and the datagram (RFC 768). */
static uint16_t udp_sum(const uint8_t *src, const uint8_t *dst,
                        const uint8_t *udp, uint32_t len)
{
    uint8_t pseudo[12];
    memcpy(pseudo, src, 4);
    memcpy(pseudo + 4, dst, 4);
    pseudo[8] = 0;
    pseudo[9] = IPPROTO_UDP;
    put16(pseudo + 10, len);
    return csum_fold(csum_add(csum_add(0, pseudo, 12), udp, len));
}

/* The checksum to send; 0 is sent as 0xffff (0 means "none"). */
static uint16_t udp_checksum(const uint8_t *src, const uint8_t *dst,
                             const uint8_t *udp, uint32_t len)
{
    uint16_t c = udp_sum(src, dst, udp, len);
    return c ? c : 0xffff;
}

/* A received datagram's checksum: with the checksum field included the
 * folded complement is 0. */
static bool udp_checksum_ok(const uint8_t *src, const uint8_t *dst,
                            const uint8_t *udp, uint32_t len)
{
    return udp_sum(src, dst, udp, len) == 0;
}

/* ---- receiving ---- */

/* Answer an ARP request for our address (a peer may ask before it
 * replies). */
static void maybe_answer_arp(struct nic *nic, const uint8_t *f, uint32_t len)
{
    const uint8_t *arp = f + 14;
    if (len < 42 || get16(f + 12) != ETHERTYPE_ARP || get16(arp + 6) != 1 ||
        memcmp(arp + 24, guest_ip, 4))
        return;
    uint32_t n = eth_header(arp + 8, nic, ETHERTYPE_ARP);
    uint8_t *r = tx_frame + n;
    put16(r, 1);                /* hardware: Ethernet */
    put16(r + 2, ETHERTYPE_IPV4);
    r[4] = 6;
    r[5] = 4;
    put16(r + 6, 2);            /* reply */
    memcpy(r + 8, nic->mac, 6);
    memcpy(r + 14, guest_ip, 4);
    memcpy(r + 18, arp + 8, 6);
    memcpy(r + 24, arp + 14, 4);
    send_frame(nic, n + 28);
}

/* A received IPv4 packet from the peer to us: checks the header and
 * returns the protocol payload and its length, or NULL. */
static const uint8_t *ip_payload(const uint8_t *f, uint32_t len, uint8_t proto,
                                 uint32_t *plen)
{
    const uint8_t *ip = f + 14;
    if (len < 14 + 20 || get16(f + 12) != ETHERTYPE_IPV4)
        return NULL;
    uint32_t ihl = (ip[0] & 0xf) * 4u;
    uint32_t total = get16(ip + 2);
    if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl || 14 + total > len ||
        ip[9] != proto || (get16(ip + 6) & 0x3fff) != 0 ||  /* no fragments */
        memcmp(ip + 12, peer_ip, 4) || memcmp(ip + 16, guest_ip, 4) ||
        csum_fold(csum_add(0, ip, ihl)) != 0)
        return NULL;
    *plen = total - ihl;
    return ip + ihl;
}

typedef bool (*frame_match_t)(struct nic *nic, const uint8_t *f, uint32_t len, void *ctx);

/* Wait (bounded) for a frame that match() accepts; other frames are
 * dropped (ARP requests for us answered). Returns false on time-out. */
static bool await_frame(struct nic *nic, frame_match_t match, void *ctx, const char *what)
{
    struct net_wait w;
    uint32_t strays = 0;
    net_wait_begin(nic, &w);
    for (;;) {
        uint32_t len = nic->recv(rx_frame, sizeof rx_frame);
        if (len) {
            if (match(nic, rx_frame, len, ctx))
                return true;
            maybe_answer_arp(nic, rx_frame, len);
            stray_frames++;
            if (++strays > MAX_STRAY_FRAMES) {
                printf("error: %s: too many unrelated frames\n", what);
                return false;
            }
            continue;
        }
        if (!net_wait_step(nic, &w)) {
            printf("error: %s: timed out\n", what);
            return false;
        }
    }
}

/* ---- ARP ---- */
static bool match_arp_reply(struct nic *nic, const uint8_t *f, uint32_t len, void *ctx)
{
    const uint8_t *arp = f + 14;
    (void)ctx;
    if (len < 42 || get16(f + 12) != ETHERTYPE_ARP || get16(arp) != 1 ||
        get16(arp + 2) != ETHERTYPE_IPV4 || arp[4] != 6 || arp[5] != 4 ||
        get16(arp + 6) != 2 || memcmp(arp + 14, peer_ip, 4) ||
        memcmp(arp + 24, guest_ip, 4) || memcmp(arp + 18, nic->mac, 6))
        return false;
    memcpy(peer_mac, arp + 8, 6);
    return true;
}

static bool arp_resolve(struct nic *nic)
{
    static const uint8_t zero_mac[6];
    uint32_t n = eth_header(broadcast, nic, ETHERTYPE_ARP);
    uint8_t *r = tx_frame + n;
    put16(r, 1);
    put16(r + 2, ETHERTYPE_IPV4);
    r[4] = 6;
    r[5] = 4;
    put16(r + 6, 1);            /* request */
    memcpy(r + 8, nic->mac, 6);
    memcpy(r + 14, guest_ip, 4);
    memcpy(r + 18, zero_mac, 6);
    memcpy(r + 24, peer_ip, 4);
    if (!send_frame(nic, n + 28)) {
        printf("error: arp: transmit ring stuck\n");
        return false;
    }
    return await_frame(nic, match_arp_reply, NULL, "arp 10.0.2.2");
}

/* ---- ICMP echo ---- */
struct echo_expect {
    const uint8_t *data;     /* the payload sent */
    uint32_t len;
    uint32_t seq;
    uint32_t *hash;          /* running checksum of replies */
    bool mismatch;           /* a reply with our seq but wrong content */
};

static bool match_icmp_reply(struct nic *nic, const uint8_t *f, uint32_t len, void *ctx)
{
    struct echo_expect *e = ctx;
    uint32_t plen;
    const uint8_t *icmp = ip_payload(f, len, IPPROTO_ICMP, &plen);
    (void)nic;
    if (!icmp || plen < 8 || icmp[0] != 0 || icmp[1] != 0 ||
        get16(icmp + 4) != ICMP_ID || get16(icmp + 6) != e->seq)
        return false;
    if (csum_fold(csum_add(0, icmp, plen)) != 0 || plen - 8 != e->len ||
        memcmp(icmp + 8, e->data, e->len))
        e->mismatch = true;
    else
        *e->hash = fnv1a(*e->hash, icmp + 8, plen - 8);
    return true;
}

static bool icmp_echo(struct nic *nic, struct prng *rng, uint32_t *hash, bool *ok)
{
    uint32_t n = eth_header(peer_mac, nic, ETHERTYPE_IPV4);
    uint8_t *icmp = tx_frame + n + 20;
    icmp[0] = 8;                /* echo request */
    icmp[1] = 0;
    put16(icmp + 2, 0);
    put16(icmp + 4, ICMP_ID);
    put16(icmp + 6, 1);
    for (uint32_t i = 0; i < ICMP_PAYLOAD; i++)
        payload[i] = (uint8_t)prng_next(rng);
    memcpy(icmp + 8, payload, ICMP_PAYLOAD);
    put16(icmp + 2, csum_fold(csum_add(0, icmp, 8 + ICMP_PAYLOAD)));
    ip_header(IPPROTO_ICMP, 8 + ICMP_PAYLOAD);
    if (!send_frame(nic, n + 20 + 8 + ICMP_PAYLOAD)) {
        printf("error: icmp: transmit ring stuck\n");
        return false;
    }
    struct echo_expect e = {payload, ICMP_PAYLOAD, 1, hash, false};
    if (!await_frame(nic, match_icmp_reply, &e, "icmp echo 10.0.2.2"))
        return false;
    *ok = !e.mismatch;
    if (e.mismatch)
        printf("error: icmp echo reply differs from the request\n");
    return true;
}

/* ---- UDP echo ---- */
static bool match_udp_reply(struct nic *nic, const uint8_t *f, uint32_t len, void *ctx)
{
    struct echo_expect *e = ctx;
    uint32_t plen;
    const uint8_t *udp = ip_payload(f, len, IPPROTO_UDP, &plen);
    (void)nic;
    if (!udp || plen < 8 + 4 || get16(udp) != UDP_ECHO_PORT ||
        get16(udp + 2) != UDP_LOCAL_PORT)
        return false;
    uint32_t ulen = get16(udp + 4);
    if (ulen < 8 + 4 || ulen > plen)
        return false;
    uint32_t seq = get32(udp + 8);
    if (seq != e->seq)
        return false;           /* a late or duplicated reply: drop it */
    if ((get16(udp + 6) && !udp_checksum_ok(peer_ip, guest_ip, udp, ulen)) ||
        ulen - 8 != e->len || memcmp(udp + 8, e->data, e->len))
        e->mismatch = true;
    else
        *e->hash = fnv1a(*e->hash, udp + 8, ulen - 8);
    return true;
}

/* Build and queue the datagram of exchange `seq` (its payload is `data`,
 * len bytes, starting with the sequence number). */
static bool udp_send(struct nic *nic, uint32_t seq, const uint8_t *data, uint32_t len)
{
    uint32_t n = eth_header(peer_mac, nic, ETHERTYPE_IPV4);
    uint8_t *udp = tx_frame + n + 20;
    put16(udp, UDP_LOCAL_PORT);
    put16(udp + 2, UDP_ECHO_PORT);
    put16(udp + 4, 8 + len);
    put16(udp + 6, 0);
    memcpy(udp + 8, data, len);
    put16(udp + 6, udp_checksum(guest_ip, peer_ip, udp, 8 + len));
    ip_header(IPPROTO_UDP, 8 + len);
    if (!send_frame(nic, n + 20 + 8 + len)) {
        printf("error: udp %u: transmit ring stuck\n", seq);
        return false;
    }
    return true;
}

/* Wait for the reply of exchange `seq`: replies must come in the order
 * the requests were sent (a reply with another number is dropped, and
 * the wait then times out). */
static bool udp_await(struct nic *nic, uint32_t seq, const uint8_t *data, uint32_t len,
                      uint32_t *hash, bool *ok)
{
    struct echo_expect e = {data, len, seq, hash, false};
    if (!await_frame(nic, match_udp_reply, &e, "udp echo")) {
        printf("error: udp exchange %u (%u bytes): no reply\n", seq, len);
        return false;
    }
    *ok = !e.mismatch;
    if (e.mismatch)
        printf("error: udp exchange %u: reply differs from the request (%u bytes)\n",
               seq, len);
    return true;
}

/* burst=: a streaming sender queues up to NET_BURST_MAX datagrams before
 * it takes any reply. The PRNG is drawn in the same order as with one
 * datagram at a time, so the checksum does not depend on burst. */
#define NET_BURST_MAX 16
static uint8_t burst_payload[NET_BURST_MAX][1472];
static uint32_t burst_len[NET_BURST_MAX];

int net_echo_workload(struct nic *nic, const struct guest_args *args)
{
    struct prng rng;
    uint32_t hash = FNV1A_INIT, ok = 0, done = 0;
    uint32_t max = args->size < 18 ? 18 : args->size > 1472 ? 1472 : args->size;
    int rc = EXIT_OK;
    bool good;

    prng_seed(&rng, args->seed);
    if (!arp_resolve(nic)) {
        rc = EXIT_TIMEOUT;
        goto out;
    }
    printf("peer 10.0.2.2 is %02x:%02x:%02x:%02x:%02x:%02x\n", peer_mac[0],
           peer_mac[1], peer_mac[2], peer_mac[3], peer_mac[4], peer_mac[5]);
    if (!icmp_echo(nic, &rng, &hash, &good)) {
        rc = EXIT_TIMEOUT;
        goto out;
    }
    if (!good)
        rc = EXIT_MISMATCH;
    printf("icmp echo ok=%u\n", good ? 1u : 0u);

    uint32_t burst = args->burst < 1 ? 1 : args->burst > NET_BURST_MAX ? NET_BURST_MAX
                                                                     : args->burst;
    /* batch=1: the burst is staged, then posted in one transmit loop
     * that writes each descriptor (pcnet32_start_xmit per frame); batch=2:
     * the descriptors are written when staged and the loop only hands
     * them over and kicks. Drivers without stage/post send one by one. */
    bool batch = args->batch && nic->stage && nic->post;
    for (uint32_t seq = 1; seq <= args->n && rc != EXIT_TIMEOUT; seq += burst) {
        uint32_t k = args->n - seq + 1 < burst ? args->n - seq + 1 : burst;
        staging = batch;
        staging_fill = args->batch == 2;
        for (uint32_t i = 0; i < k; i++) {
            uint8_t *data = burst_payload[i];
            burst_len[i] = prng_range(&rng, 18, max);
            put32(data, seq + i);
            for (uint32_t j = 4; j < burst_len[i]; j++)
                data[j] = (uint8_t)prng_next(&rng);
            if (!udp_send(nic, seq + i, data, burst_len[i])) {
                rc = EXIT_TIMEOUT;
                k = i;
                break;
            }
        }
        staging = false;
        if (batch)
            nic->post(staging_fill);
        for (uint32_t i = 0; i < k; i++) {
            if (!udp_await(nic, seq + i, burst_payload[i], burst_len[i], &hash, &good)) {
                rc = EXIT_TIMEOUT;
                break;
            }
            done++;
            if (good)
                ok++;
            else
                rc = EXIT_MISMATCH;
        }
    }
out:
    if (nic->stats)
        nic->stats();
    if (stray_frames)
        printf("dropped %u unrelated frames\n", stray_frames);
    printf("guest=%s cpl=%u irq=%u exchanges=%u ok=%u checksum=0x%08x\n", nic->name,
           args->cpl, nic->irq_mode ? 1u : 0u, done, ok, hash);
    return rc;
}
