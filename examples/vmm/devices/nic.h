/* SPDX-License-Identifier: MIT */
/*
 * The two NIC models of the reference VMM and what they share.
 *
 *   pcnet.c  AMD PCnet-PCI II (Am79C970A) in 16-bit I/O mode, as Linux
 *            pcnet32 drives it: APROM, RDP, RAP, reset and BDP ports in a
 *            32-byte I/O BAR; CSRs and BCRs behind RAP; init block;
 *            software style 2 (32-bit) descriptors.
 *   e1000.c  Intel 82540EM over a 128 KiB MMIO BAR: the legacy descriptor
 *            subset a simple driver needs (see e1000.c's header).
 *
 * Both are pure models: register access in, DMA and interrupt line and
 * backend frames out (dev.h, backends/net.h). The VMM serialises calls
 * into one device (one lock per device).
 *
 * The NIC optimizations of Sugerman et al. ("Virtualizing I/O
 * devices on VMware Workstation's hosted VMM", section 3.3) are options,
 * each counted in nic_stats:
 *   latch_fast   accesses that only latch state (the PCnet RAP, the e1000
 *                registers with plain memory semantics) are flagged by
 *                nic_access_is_latch() so the VMM can handle them on its
 *                fast path: as KVM coalesced PIO/MMIO writes that never
 *                leave the kernel, drained in order at the next exit;
 *                nic_coalesced_ranges() is the wider set the VMM may
 *                defer (the e1000's as QEMU's).
 *   send_combine queue up to 3 transmits (left in the guest's TX ring,
 *                descriptors still owned by the device) until the next
 *                exit that is not a transmit kick, the next timer tick, or
 *                the third one, then send them together and raise one
 *                interrupt for the batch; with combine_adaptive only while
 *                send_combine.h's rate-based policy finds batches filling.
 *   irq_coalesce drive the interrupt line only when its level changes
 *                (each KVM_IRQ_LINE is a VM ioctl, about 5 us here), and
 *                raise one interrupt for everything one access completes.
 *
 * One more of our own, beyond the paper's three:
 *   direct       a page of the BAR whose registers have memory semantics
 *                for the device (the e1000's receive ring registers: RDT
 *                only hands descriptors over, and the chip reads it when
 *                it needs one) is backed by host memory the VMM may map
 *                into the guest (nic_direct_page(), a KVM memory slot):
 *                the guest's writes there neither exit nor trap. The
 *                model takes them in at each access, each receive try and
 *                each tick, and stores what it changes itself (RDH) back.
 */
#ifndef VMM_NIC_H
#define VMM_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../backends/net.h"
#include "dev.h"

typedef enum nic_model { NIC_NONE = 0, NIC_PCNET, NIC_E1000 } nic_model;

typedef struct nic_options {
    bool latch_fast;
    bool send_combine;
    bool irq_coalesce;
    unsigned combine_max;       /* transmits queued at most; default 3 */
    /* Hold transmits only when the policy of send_combine.h says it pays
     * (false: hold every one, the unconditional combining of old). */
    bool combine_adaptive;
    /* The policy's clock and its period (the timer tick) in its units:
     * nanoseconds on KVM, guest instructions on Unicorn. A NULL clock
     * reads 0, on which the adaptive policy never holds. */
    uint64_t (*clock)(void *opaque);
    void *clock_opaque;
    uint64_t combine_period;
    /* The world switches so far (every vCPU's exits), read at each kick
     * with clock_opaque: the adaptive policy then combines only kicks
     * that cost switches (send_combine.h, question 3). NULL: not
     * counted, every kick taken to cost one. */
    uint64_t (*switches)(void *opaque);
    /* The VMM runs exit pairs itself (libcluster's pairs or static
     * clusters): an index register's write (PCnet RAP) is then cheaper
     * as the first half of a pair than deferred (nic_coalesced_ranges). */
    bool pairs_in_vmm;
    /* Back the model's direct page with host memory (nic_direct_page) */
    bool direct;
} nic_options;

typedef struct nic_stats {
    uint64_t reg_reads, reg_writes;
    uint64_t latch_accesses;    /* accesses nic_access_is_latch() covers */
    uint64_t tx_frames, rx_frames;
    uint64_t rx_no_buffer;      /* frames left waiting: no free RX desc */
    uint64_t tx_combined;       /* transmits that waited for a batch */
    uint64_t tx_batches;        /* batches sent by send combining */
    uint64_t tx_batched;        /* kicks those batches served */
    uint64_t combine_tries;     /* adaptive combining tried */
    uint64_t combine_failures;  /* ... and given up: it did not pay */
    uint64_t combine_rechecks;  /* set aside a while to count switches */
    uint64_t combine_cheap;     /* not tried: the kicks cost fewer world
                                 * switches than a batch would (clusters
                                 * ran them) */
    uint64_t irq_raised;        /* line driven high */
    uint64_t irq_line_calls;    /* calls to vm_irq.set */
    uint64_t irq_suppressed;    /* level unchanged, call elided */
    uint64_t guest_errors;
    uint64_t resets;
    uint64_t dma_errors;        /* DMA that reached no RAM (master aborts) */
    uint64_t direct_updates;    /* registers the guest wrote in the direct
                                 * page, taken in by the model */
    uint64_t direct_bus;        /* accesses to the direct page that came
                                 * through nic_access() (not mapped, or a
                                 * libcluster run) */
} nic_stats;

typedef struct nic nic;

/* Create a model. `mac` is the address in the PROM/EEPROM. The DMA,
 * IRQ and backend are borrowed and must outlive the NIC. */
nic *nic_create(nic_model model, const uint8_t mac[6], const vm_dma *dma,
                const vm_irq *irq, net_backend *be,
                const nic_options *opt);
void nic_destroy(nic *n);

nic_model nic_model_of(const nic *n);
const char *nic_model_name(nic_model m);
/* "pcnet" or "e1000" (also "am79c970a", "82540em"); NIC_NONE otherwise. */
nic_model nic_model_parse(const char *s);

/* PCI identity of the function and its one BAR. */
typedef struct nic_pci_id {
    uint16_t vendor, device, subsys_vendor, subsys;
    uint8_t  revision, class_code, subclass, prog_if;
    bool     bar_is_io;         /* PCnet: I/O BAR0; e1000: memory BAR0 */
    uint32_t bar_size;          /* 32 (I/O) or 0x20000 (MMIO) */
} nic_pci_id;
void nic_pci_identity(nic_model m, nic_pci_id *id);

/* A register access at `offset` within the BAR (1, 2 or 4 bytes;
 * 8-byte MMIO accesses are split by the caller). Reads store into *val.
 * Unaligned or out-of-range accesses read as all ones and are ignored on
 * write, with a guest error. */
void nic_access(nic *n, uint32_t offset, unsigned size, bool is_write,
                uint32_t *val);

/* True if a write of this size to `offset` only latches state: no
 * interrupt, DMA or transmit can follow from it by itself, and a later
 * read returns what was written. Used by the VMM's fast path. */
bool nic_access_is_latch(const nic *n, uint32_t offset, unsigned size);

/* The byte ranges, within the BAR, for which nic_access_is_latch() holds
 * for all aligned writes: fills up to `max` (offset, length) pairs and
 * returns how many. */
unsigned nic_latch_ranges(const nic *n, uint32_t (*ranges)[2], unsigned max);

/* Receive what the backend has waiting, as far as the guest has given
 * receive descriptors. Called by the NIC itself after every access and by
 * the VMM when the backend signals frames (TAP) and at its ticks. What the
 * guest cannot take stays held in the chip (nic_rx_pending()), so the
 * backend's descriptor stops being readable. */
void nic_poll_rx(nic *n);

/* "Next exit" or "timer tick" of send combining: send whatever is
 * queued. Also called by the VMM before it stops. */
void nic_flush(nic *n);

/* Does send combining hold transmits back? Safe without the device lock
 * (a hint: the caller then takes the lock and calls nic_flush()), so the
 * VMM's exit path locks only when there is something to send. */
bool nic_tx_pending(const nic *n);

/* Transmit kicks the guest has given so far (safe without the lock):
 * the VMM sends held frames before re-entering the guest when no kick
 * came since it last did, so consecutive kicks, even each in its own
 * exit, fill one batch. */
uint64_t nic_kick_count(const nic *n);

/* Is a received frame held in the chip? (Under the device lock.) A frame
 * the guest cannot take yet is taken from the backend and held, as in the
 * chip's FIFO, and the backend's next ones wait in the host behind it (its
 * descriptor out of the VMM's poll set, as QEMU's can_receive() leaves
 * them), instead of keeping a level-triggered descriptor readable. */
bool nic_rx_pending(const nic *n);

/* Does the held frame wait for receive descriptors, with the receiver on
 * and bus mastering allowed, as the model found at its last try? (Under
 * the device lock.) The VMM's I/O thread ticks while this or
 * nic_tx_pending() holds: the PCnet polls its ring then, and a guest that
 * returns descriptors through a coalesced write (e1000 RDT) gets them used
 * without an exit. A frame held while the receiver is off needs no tick:
 * only a register access or bus mastering turns it on. */
bool nic_rx_waits_ring(const nic *n);

/* The byte ranges within the BAR whose writes the VMM may defer (KVM
 * coalesced zones): the latch ranges, or for the e1000 the wider set
 * QEMU coalesces (e1000.c). Writes there are replayed in order at the
 * next exit or I/O-thread tick, and a waiting frame received then. */
unsigned nic_coalesced_ranges(const nic *n, uint32_t (*ranges)[2],
                              unsigned max);

/* Changes whenever nic_coalesced_ranges() would answer differently (the
 * adaptive policy switched combining on or off: while it is on, the
 * e1000's transmit kick, TDT, is deferred too, so a streaming guest's
 * kicks stay in the kernel until the next exit or tick, the paper's
 * "delay the actual transmission until the next ... switch to the host
 * world"). Safe without the device lock; the VMM re-registers its zones
 * at the next exit when it changed. */
unsigned nic_coalesced_gen(const nic *n);
/* A model's state that nic_coalesced_ranges() depends on changed (the
 * PCnet's CSR0.INEA): bump nic_coalesced_gen. Under the lock. */
void nic_coalesced_changed(nic *n);

/* Are transmit kicks being deferred (nic_coalesced_gen)? Under the lock:
 * the VMM's I/O thread ticks while they are. */
bool nic_kicks_deferred(const nic *n);

/* PCI bus-master enable (command register bit 2): without it the NIC
 * does no DMA, as real hardware cannot. */
void nic_set_bus_master(nic *n, bool enabled);

/* The PCI Status register bits the function raised: Received Master
 * Abort after a DMA reached no RAM (nic_dma_read). Returns them and
 * clears those set in `w1c` (the register's write-1-to-clear bits). */
#define NIC_PCI_STATUS_RMA 0x2000u
uint16_t nic_pci_status(nic *n, uint16_t w1c);

/* The direct page (nic_options.direct): its offset within the BAR and
 * the host memory behind it, NIC_DIRECT_SIZE bytes, page-aligned, which
 * the VMM may map into the guest at the BAR's address plus that offset
 * while the BAR decodes. An access through nic_access() there has the
 * same memory semantics. False if the model has none or the option is
 * off (or the page could not be allocated). */
#define NIC_DIRECT_SIZE 4096u
bool nic_direct_page(const nic *n, uint32_t *offset, void **hva);

const nic_stats *nic_get_stats(const nic *n);

#endif /* VMM_NIC_H */
