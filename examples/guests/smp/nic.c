/* examples/guests/smp/nic.c: guest-smp-nic, every processor driving the
 * e1000 at once.
 *
 * One NIC, one pair of rings, shared by all processors under a spin lock
 * (a driver's transmit and receive locks in one): each processor, n
 * times, takes the lock, sends a UDP datagram to the peer's echo port
 * from a source port of its own (40100 + cpu) with its own sequence
 * number and payload (from a PRNG seeded per processor), waits for the
 * echo by polling (each step an ICR read: a device exit), checks it byte
 * for byte and in order, and releases the lock. Lock hand-overs happen
 * between exchanges, so each processor's frames interleave with the
 * others' on the wire while every one of them is counted per processor.
 * The BSP resolves the peer's MAC with ARP before starting the APs. The
 * driver is a minimal one (the bring-up of ../e1000.c, polling only);
 * the result lines depend only on the command line. */
#include "hw/e1000_regs.h"
#include "smp.h"

#define RING 8
#define BUFSZ 2048
#define UDP_ECHO_PORT 7
#define UDP_PORT_BASE 40100
#define FRAME_MAX 1514

static struct e1000_rx_desc rx_ring[RING] __attribute__((aligned(128)));
static struct e1000_tx_desc tx_ring[RING] __attribute__((aligned(128)));
static uint8_t rx_buf[RING][BUFSZ] __attribute__((aligned(16)));
static uint8_t tx_buf[RING][BUFSZ] __attribute__((aligned(16)));
static unsigned rx_next, tx_next;
static uintptr_t mmio;
static uint8_t mac[6], peer_mac[6];
static const uint8_t my_ip[4] = {10, 0, 2, 15}, peer_ip[4] = {10, 0, 2, 2};
static struct spinlock nic_lock;
static uint32_t size_max;
static uint32_t exchanges;

struct cpu_result {
    uint32_t ok, mismatch, strays, hash;
    uint16_t ip_id;
} __attribute__((aligned(64)));
static struct cpu_result res[SMP_MAX_CPUS];

static uint32_t rd(uint32_t r) { return mmio_read32(mmio + r); }
static void wr(uint32_t r, uint32_t v) { mmio_write32(mmio + r, v); }

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* ---- the driver (caller holds nic_lock, or runs alone) ---- */

static bool send(const uint8_t *f, uint32_t len)
{
    volatile struct e1000_tx_desc *d = &tx_ring[tx_next];
    uint64_t t0 = rdtsc();

    if (len < 60) {
        memset(tx_buf[tx_next] + len, 0, 60 - len);
    }
    while (d->cmd && !(d->status & E1000_TXD_STA_DD))
        if (rdtsc() - t0 > SMP_WAIT_TSC)
            return false;
    memcpy(tx_buf[tx_next], f, len);
    d->addr = (uintptr_t)tx_buf[tx_next];
    d->length = (uint16_t)(len < 60 ? 60 : len);
    d->cso = d->css = 0;
    d->special = 0;
    d->status = 0;
    d->cmd = E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS | E1000_TXD_CMD_RS;
    tx_next = (tx_next + 1) % RING;
    barrier();
    wr(E1000_TDT, tx_next);
    return true;
}

/* One received frame into buf (at most BUFSZ), or 0. */
static uint32_t recv(uint8_t *buf)
{
    volatile struct e1000_rx_desc *d = &rx_ring[rx_next];
    if (!(d->status & E1000_RXD_STA_DD))
        return 0;
    barrier();
    uint32_t len = d->length;
    bool good = (d->status & E1000_RXD_STA_EOP) && !d->errors && len <= BUFSZ;
    if (good)
        memcpy(buf, rx_buf[rx_next], len);
    d->status = 0;
    barrier();
    wr(E1000_RDT, rx_next);
    rx_next = (rx_next + 1) % RING;
    return good ? len : 0;
}

static bool nic_init(void)
{
    struct pci_dev pci;

    if (!pci_find_mmio(E1000_VENDOR_ID, E1000_DEVICE_ID, "e1000", &pci, &mmio))
        return false;
    pci_enable(&pci, PCI_CMD_MEM | PCI_CMD_MASTER);
    wr(E1000_IMC, 0xffffffff);
    wr(E1000_CTRL, rd(E1000_CTRL) | E1000_CTRL_RST);
    for (int i = 0; i < 100000 && (rd(E1000_CTRL) & E1000_CTRL_RST); i++)
        ;
    wr(E1000_IMC, 0xffffffff);
    (void)rd(E1000_ICR);
    wr(E1000_CTRL, rd(E1000_CTRL) | E1000_CTRL_SLU | E1000_CTRL_ASDE);
    for (uint8_t i = 0; i < 3; i++) {
        wr(E1000_EERD, (uint32_t)i << E1000_EERD_ADDR_SHIFT | E1000_EERD_START);
        uint32_t v = 0;
        for (int t = 0; t < 100000 && !(v & E1000_EERD_DONE); t++)
            v = rd(E1000_EERD);
        if (!(v & E1000_EERD_DONE))
            return false;
        mac[2 * i] = (uint8_t)(v >> E1000_EERD_DATA_SHIFT);
        mac[2 * i + 1] = (uint8_t)(v >> (E1000_EERD_DATA_SHIFT + 8));
    }
    wr(E1000_RAL(0), (uint32_t)mac[0] | (uint32_t)mac[1] << 8 |
                     (uint32_t)mac[2] << 16 | (uint32_t)mac[3] << 24);
    wr(E1000_RAH(0), (uint32_t)mac[4] | (uint32_t)mac[5] << 8 | E1000_RAH_AV);
    for (int i = 0; i < RING; i++)
        rx_ring[i] = (struct e1000_rx_desc){.addr = (uintptr_t)rx_buf[i]};
    barrier();
    wr(E1000_RDBAL, (uint32_t)(uintptr_t)rx_ring);
    wr(E1000_RDBAH, 0);
    wr(E1000_RDLEN, sizeof rx_ring);
    wr(E1000_RDH, 0);
    wr(E1000_RDT, RING - 1);
    wr(E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_BSIZE(0) |
                   E1000_RCTL_SECRC);
    wr(E1000_TDBAL, (uint32_t)(uintptr_t)tx_ring);
    wr(E1000_TDBAH, 0);
    wr(E1000_TDLEN, sizeof tx_ring);
    wr(E1000_TDH, 0);
    wr(E1000_TDT, 0);
    wr(E1000_TIPG, 10 | 8 << 10 | 6 << 20);
    wr(E1000_TCTL, E1000_TCTL_EN | E1000_TCTL_PSP | E1000_TCTL_CT(0x0f) |
                   E1000_TCTL_COLD(0x40));
    return true;
}

/* Poll (bounded) for a frame that match() takes; others are dropped. */
static bool await(uint8_t *buf, bool (*match)(const uint8_t *, uint32_t, void *),
                  void *ctx, uint32_t *strays)
{
    uint64_t t0 = rdtsc();
    while (rdtsc() - t0 < SMP_WAIT_TSC) {
        uint32_t len = recv(buf);
        if (len) {
            if (match(buf, len, ctx))
                return true;
            ++*strays;
            continue;
        }
        (void)rd(E1000_ICR);            /* a poll step: one device exit */
    }
    return false;
}

/* ---- ARP (the BSP, alone) ---- */

static bool arp_match(const uint8_t *f, uint32_t len, void *ctx)
{
    (void)ctx;
    if (len < 42 || get16(f + 12) != 0x0806 || get16(f + 20) != 2 ||
        memcmp(f + 28, peer_ip, 4))
        return false;
    memcpy(peer_mac, f + 22, 6);
    return true;
}

static bool arp_resolve(void)
{
    static uint8_t f[60], buf[BUFSZ];
    uint32_t strays = 0;
    memset(f, 0xff, 6);
    memcpy(f + 6, mac, 6);
    put16(f + 12, 0x0806);
    put16(f + 14, 1);
    put16(f + 16, 0x0800);
    f[18] = 6;
    f[19] = 4;
    put16(f + 20, 1);
    memcpy(f + 22, mac, 6);
    memcpy(f + 28, my_ip, 4);
    memset(f + 32, 0, 6);
    memcpy(f + 38, peer_ip, 4);
    return send(f, 42) && await(buf, arp_match, NULL, &strays);
}

/* ---- one processor's exchanges ---- */

struct expect {
    unsigned cpu;
    uint32_t seq, len;
    const uint8_t *data;
};

static bool udp_match(const uint8_t *f, uint32_t len, void *ctx)
{
    const struct expect *e = ctx;
    if (len < 42 || get16(f + 12) != 0x0800 || f[23] != 17 ||
        get16(f + 34) != UDP_ECHO_PORT || get16(f + 36) != UDP_PORT_BASE + e->cpu)
        return false;
    uint32_t ulen = get16(f + 38);
    if (ulen < 12 || 34 + ulen > len)
        return false;
    const uint8_t *p = f + 42;
    uint32_t seq = (uint32_t)get16(p) << 16 | get16(p + 2);
    if (seq != e->seq)
        return false;                   /* out of order: not ours now */
    if (ulen - 8 != e->len || memcmp(p, e->data, e->len))
        res[e->cpu].mismatch++;
    else
        res[e->cpu].hash = fnv1a(res[e->cpu].hash, p, e->len);
    return true;
}

static int run(unsigned cpu)
{
    struct cpu_result *r = &res[cpu];
    struct prng rng;
    static uint8_t frame[SMP_MAX_CPUS][FRAME_MAX], buf[SMP_MAX_CPUS][BUFSZ];
    uint8_t *f = frame[cpu];

    prng_seed(&rng, 0x2545f491u + cpu * 0x9e3779b9u);
    r->hash = FNV1A_INIT;
    for (uint32_t seq = 1; seq <= exchanges; seq++) {
        uint32_t len = prng_range(&rng, 18, size_max);
        uint8_t *p = f + 42;
        put16(p, seq >> 16);
        put16(p + 2, seq);
        for (uint32_t j = 4; j < len; j++)
            p[j] = (uint8_t)prng_next(&rng);
        memcpy(f, peer_mac, 6);
        memcpy(f + 6, mac, 6);
        put16(f + 12, 0x0800);
        uint8_t *ip = f + 14;
        ip[0] = 0x45;
        ip[1] = 0;
        put16(ip + 2, 28 + len);
        put16(ip + 4, r->ip_id++);
        put16(ip + 6, 0x4000);
        ip[8] = 64;
        ip[9] = 17;
        put16(ip + 10, 0);
        memcpy(ip + 12, my_ip, 4);
        memcpy(ip + 16, peer_ip, 4);
        put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
        uint8_t *udp = f + 34;
        put16(udp, UDP_PORT_BASE + cpu);
        put16(udp + 2, UDP_ECHO_PORT);
        put16(udp + 4, 8 + len);
        put16(udp + 6, 0);              /* no checksum (RFC 768) */
        struct expect e = {cpu, seq, len, p};

        spin_lock(&nic_lock);
        bool ok = send(f, 42 + len) && await(buf[cpu], udp_match, &e, &r->strays);
        spin_unlock(&nic_lock);
        if (!ok)
            return EXIT_TIMEOUT;
        r->ok++;
    }
    return r->mismatch ? EXIT_MISMATCH : EXIT_OK;
}

const struct guest_info guest_info = {.name = "smp-nic", .default_n = 20};

int guest_main(const struct guest_args *args)
{
    if (!smp_cpus_ok(args))
        return EXIT_USAGE;
    exchanges = args->n;
    size_max = args->size < 18 ? 18 : args->size > 1472 ? 1472 : args->size;
    if (!nic_init()) {
        printf("error: e1000 did not come up\n");
        return EXIT_NODEV;
    }
    if (!arp_resolve()) {
        printf("error: arp 10.0.2.2: no reply\n");
        return EXIT_TIMEOUT;
    }
    if (!smp_start(args->cpus, run))
        return EXIT_TIMEOUT;
    printf("smp: %u processors up\n", args->cpus);
    int rc = run(0);
    int aprc = smp_join();
    if (rc == EXIT_OK)
        rc = aprc;
    uint32_t total = 0;
    for (unsigned c = 0; c < args->cpus; c++) {
        printf("cpu=%u exchanges=%u ok=%u mismatch=%u checksum=0x%08x\n", c,
               exchanges, res[c].ok, res[c].mismatch, res[c].hash);
        total += res[c].ok;
        if (res[c].ok != exchanges && rc == EXIT_OK)
            rc = EXIT_MISMATCH;
    }
    printf("guest=smp-nic cpus=%u frames=%u\n", args->cpus, total);
    return rc;
}
