/* SPDX-License-Identifier: MIT */
/*
 * What nic.c shares with the two models (pcnet.c, e1000.c): the NIC
 * object, the table of model operations, and the helpers every model uses
 * for DMA, the interrupt line, send combining and received frames.
 * Private to examples/vmm/devices/: the VMM sees only nic.h.
 *
 * Division of work. nic.c validates every access (range, size,
 * alignment), counts it, guards against re-entry, and after each access
 * that is not a latch lets the model receive (nic.h: "called by the NIC
 * itself after every access"). The model owns its registers, rings and
 * interrupt state; it computes its interrupt line in one function and
 * hands the level to nic_set_irq(), which implements irq_coalesce.
 */
#ifndef VMM_NIC_MODEL_H
#define VMM_NIC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nic.h"
#include "send_combine.h"

/* The shortest frame on the wire without its FCS: shorter ones are padded
 * by the sender (IEEE 802.3 minimum of 64 bytes with FCS). */
#define NIC_FRAME_PAD 60
#define NIC_FCS_LEN   4

typedef struct nic_model_ops {
    const char *name;           /* "pcnet", "e1000": guest error prefix */
    size_t state_size;          /* bytes of model state nic.c allocates */
    uint32_t bar_size;
    /* Power-on (hardware) reset of the model state. */
    void (*reset)(nic *n);
    /* One access already checked by nic.c: offset + size within the BAR,
     * size 1, 2 or 4, offset aligned to size. Reads store zero-extended
     * data into *val (nic.c masks to the size). */
    void (*read)(nic *n, uint32_t off, unsigned size, uint32_t *val);
    void (*write)(nic *n, uint32_t off, unsigned size, uint32_t val);
    bool (*is_latch)(const nic *n, uint32_t off, unsigned size);
    unsigned (*latch_ranges)(const nic *n, uint32_t (*ranges)[2],
                             unsigned max);
    /* Writes the VMM may defer (nic_coalesced_ranges); NULL: the latch
     * ranges. */
    unsigned (*coalesced_ranges)(const nic *n, uint32_t (*ranges)[2],
                                 unsigned max);
    /* coalesced_ranges() includes the transmit kick while nic_combining() */
    bool defers_kicks;
    /* Send what the guest's transmit ring holds (send combining decides
     * when; see nic_tx_kick). */
    void (*transmit)(nic *n);
    /* Take frames from the backend while the guest gives descriptors. */
    void (*poll_rx)(nic *n);
    /* Bus mastering was enabled again: do DMA work that waited for it. */
    void (*resume)(nic *n);
    /* The direct page (nic.h, nic_options.direct): its offset in the BAR,
     * and the model's intake of what the guest wrote there: for each of
     * its registers whose word in the page differs from the model's,
     * the write's effect, as through `write` (masks, side effects), and
     * the register's value stored back (nic_direct_fix). NULL: the model
     * has no direct page. */
    uint32_t direct_page;
    void (*direct_pull)(nic *n);
} nic_model_ops;

struct nic {
    nic_model model;
    const nic_model_ops *ops;
    uint8_t mac[6];
    const vm_dma *dma;          /* borrowed */
    const vm_irq *irq;          /* borrowed */
    net_backend *be;            /* borrowed; NULL: no network */
    nic_options opt;
    nic_stats stats;
    bool bus_master;            /* PCI command bit 2 */
    uint16_t pci_status;        /* PCI Status bits raised (nic_pci_status) */
    bool irq_level;             /* the level last given to nic_set_irq */
    bool busy;                  /* re-entrancy guard (cf. CVE-2021-3416) */
    unsigned tx_queued;         /* transmit kicks waiting for a batch */
    sc_config sc_cfg;           /* adaptive send combining */
    sc_state sc;
    unsigned coalesced_gen;     /* nic_coalesced_gen() */
    uint64_t kicks;             /* nic_kick_count() */
    uint64_t switches_fed;      /* opt.switches() given to the policy */
    /* One received frame taken from the backend and not yet placed in
     * guest memory ("in the chip's FIFO"): rx_len bytes, padded to
     * NIC_FRAME_PAD, followed by its 4-byte FCS once nic_rx_fcs() has
     * computed it (rx_fcs). */
    size_t rx_len;
    bool rx_fcs;
    bool rx_waiting;            /* counted in rx_no_buffer already */
    bool rx_ring_wait;          /* the model's last try: no descriptor */
    uint8_t rx_buf[NET_FRAME_MAX + NIC_FCS_LEN];
    void *state;                /* the model's, state_size bytes */
    /* The direct page, NIC_DIRECT_SIZE bytes (mmap: page-aligned, for a
     * KVM memory slot), or NULL. The guest's vCPUs write it while the
     * model runs: every access is atomic, and a value is read once. */
    uint8_t *direct;
};

extern const nic_model_ops nic_pcnet_ops;
extern const nic_model_ops nic_e1000_ops;

/* The direct page's word at BAR offset `off` (within the page), as the
 * guest left it. */
static inline uint32_t nic_direct_get(const nic *n, uint32_t off)
{
    return __atomic_load_n((const uint32_t *)(const void *)
                           (n->direct + (off - n->ops->direct_page)),
                           __ATOMIC_ACQUIRE);
}
/* The model changed a register of the direct page itself (the e1000's
 * RDH): the guest reads the new value there. No-op without the page. */
static inline void nic_direct_put(nic *n, uint32_t off, uint32_t v)
{
    if (n->direct)
        __atomic_store_n((uint32_t *)(void *)
                         (n->direct + (off - n->ops->direct_page)), v,
                         __ATOMIC_RELEASE);
}
/* The model took in `seen` from the page and holds `v` (masked, or the
 * write ignored): store v unless the guest wrote again meanwhile, whose
 * write the next intake takes. */
static inline void nic_direct_fix(nic *n, uint32_t off, uint32_t seen,
                                  uint32_t v)
{
    if (seen != v)
        __atomic_compare_exchange_n((uint32_t *)(void *)
                                    (n->direct + (off - n->ops->direct_page)),
                                    &seen, v, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
}

/* Report a guest error under the model's name and count it. */
void nic_guest_error(nic *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The model's interrupt output changed or may have changed: drive the
 * line (every call, or only on a level change with irq_coalesce). */
void nic_set_irq(nic *n, bool level);

/* DMA through vm_dma, refused (-1) while bus mastering is off. */
static inline bool nic_can_dma(const nic *n)
{
    return n->bus_master;
}
int nic_dma_read(nic *n, uint64_t gpa, void *buf, size_t len);
int nic_dma_write(nic *n, uint64_t gpa, const void *buf, size_t len);

/* The guest asked to transmit (PCnet CSR0.TDMD, e1000 TDT write): send
 * now, or with send_combine queue the kick until combine_max kicks or
 * nic_flush(). */
void nic_tx_kick(nic *n);
/* Transmit now for another reason (PCnet STRT, e1000 TCTL.EN): any queued
 * kicks are served by the same ring walk. */
void nic_tx_now(nic *n);
/* Is adaptive send combining holding transmits now (a model may then
 * let the VMM defer its kick register, nic_coalesced_ranges)? */
static inline bool nic_combining(const nic *n)
{
    return n->opt.send_combine && n->opt.combine_adaptive && n->sc.active;
}
/* A reset forgets queued kicks (the frames stay in guest memory). */
void nic_tx_cancel(nic *n);
/* Hand one gathered frame (at most NET_FRAME_MAX bytes: the models check
 * oversize themselves, each with its chip's error) to the backend,
 * padded with zeros to 60 bytes if `pad` (frame has room for it); a runt
 * below NET_FRAME_MIN is a guest error and dropped. Returns the length
 * sent, 0 if dropped. */
size_t nic_tx_frame(nic *n, uint8_t *frame, size_t len, bool pad);

/* The received frame waiting to be placed, pulling the next one from the
 * backend if none is held: its length without FCS (at least
 * NIC_FRAME_PAD), or 0 if the backend has nothing. */
size_t nic_rx_peek(nic *n);
/* Write the held frame's FCS after it in n->rx_buf (once per frame): a
 * model calls it only when the chip stores the FCS in guest memory, so a
 * frame whose FCS is stripped (e1000 RCTL.SECRC, as Linux sets it) costs
 * no CRC over its bytes. */
void nic_rx_fcs(nic *n);
/* The held frame must wait for receive descriptors (the receiver is on):
 * counts it in rx_no_buffer the first time and returns true then (e1000
 * raises RXO). A model that returns from poll_rx without calling it (its
 * receiver off) leaves the frame held without a tick to retry it. */
bool nic_rx_wait(nic *n);
/* The held frame was written to guest memory (counted) or dropped. */
void nic_rx_consume(nic *n);
void nic_rx_drop(nic *n);

/* Ethernet CRC-32 (reflected, polynomial 0xEDB88320) without the final
 * inversion: ~nic_crc32(p, len) is the FCS value; the PCnet logical
 * address filter uses its top 6 bits. */
uint32_t nic_crc32(const uint8_t *p, size_t len);

/* Little-endian loads and stores for descriptors and init blocks. */
static inline uint16_t nic_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t nic_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline void nic_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void nic_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif /* VMM_NIC_MODEL_H */
