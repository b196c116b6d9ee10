/* SPDX-License-Identifier: MIT */
/*
 * The board: the devices of the reference VMM's platform, each a
 * descriptor with the ranges it decodes, and their init list. The
 * addresses are the platform's (lcvmm/platform.h, shared with the
 * guests); docs/vmm.md, "The platform a guest sees", describes them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lcvmm/platform.h"
#include "vmm.h"

/* ---- PCI configuration mechanism #1 and its host bridge ---------------- */

/* The host bridge's port state: the configuration space and, at 0xCF9,
 * the reset control register a PC's chipset has there (PIIX3/PIIX4 "RC",
 * Intel ICH "Reset Control Register": bit 1 SYS_RST selects a hard reset,
 * bit 2 RST_CPU going from 0 to 1 resets the system, bit 3 FULL_RST).
 * Linux's reboot=pci and SeaBIOS's reset use it. A reset ends the VM or,
 * with --reboot, reboots it (vmm_request_reset). */
typedef struct pci_host {
    vmm *vm;
    uint8_t rcr;
} pci_host;

#define RCR_SYS_RST  0x02
#define RCR_RST_CPU  0x04
#define RCR_FULL_RST 0x08

/* Configuration cycles from several vCPUs: one at a time (vm->pci_lock),
 * as the 0xCF8 latch is one register of the host bridge. */
static void pci_cfg_bus(void *opaque, uint64_t off, unsigned size, bool w,
                        uint64_t *val)
{
    pci_host *h = opaque;
    vmm *vm = h->vm;
    uint32_t v = (uint32_t)*val;
    bool reset = false;

    pthread_mutex_lock(&vm->pci_lock);
    if (off == LCVMM_RESET_CONTROL_PORT - LCVMM_PCI_CONFIG_ADDR && size == 1) {
        /* RST_CPU is not stored: it reads 0, so every write with it set
         * is the 0-to-1 edge */
        if (w) {
            reset = v & RCR_RST_CPU;
            h->rcr = (uint8_t)(v & (RCR_SYS_RST | RCR_FULL_RST));
        } else {
            v = h->rcr;
        }
    } else {
        pci_access(vm->pci, (unsigned)off, size, w, &v);
    }
    pthread_mutex_unlock(&vm->pci_lock);
    if (!w)
        *val = v;
    if (reset)
        vmm_request_reset(vm, LCVMM_EXIT_OK, "guest reset the machine");
}

static int pci_host_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    uint8_t host_bridge[64] = {
        0x86, 0x80, 0x37, 0x12,         /* 8086:1237 (i440FX) */
        [0x0a] = 0x00, [0x0b] = 0x06,   /* class 06/00: host bridge */
    };
    pci_host *h;
    /* With firmware: the subsystem QEMU gives its boards (1af4:1100),
     * which SeaBIOS's qemu_detect() requires before it reads fw_cfg */
    if (vm->fw) {
        host_bridge[0x2c] = 0xf4; host_bridge[0x2d] = 0x1a;
        host_bridge[0x2e] = 0x00; host_bridge[0x2f] = 0x11;
    }

    h = calloc(1, sizeof *h);
    vm->pci = pci_create();
    if (!h || !vm->pci) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->vm = vm;
    dev->state = h;             /* the handler's opaque: it takes pci_lock */
    if (pci_add_function(vm->pci, LCVMM_PCI_HOST_DEV, host_bridge,
                         (pci_bar_info){ 0, false }, 0, 0, NULL)) {
        snprintf(err, errlen, "cannot add the PCI host bridge");
        return -1;
    }
    /* the PAM registers (0x59-0x5F) map shadow RAM or ROM (firmware.c) */
    if (vm->fw)
        pci_set_cfg_hook(vm->pci, LCVMM_PCI_HOST_DEV, vmm_fw_host_cfg_write,
                         vm);
    return 0;
}

static void pci_host_exit(vmm *vm, vmm_device *dev)
{
    free(dev->state);
    pci_destroy(vm->pci);
    vm->pci = NULL;
}

static const vmm_device_ops pci_host_device = {
    .name = "pci-cfg",
    .ranges = { { false, LCVMM_PCI_CONFIG_ADDR, LCVMM_PCI_CONFIG_PORTS,
                  pci_cfg_bus } },
    .init = pci_host_init,
    .exit = pci_host_exit,
};

/* ---- 16550 UART on COM1: the console ----------------------------------- */

/* The UART's registers are one state machine: one vCPU at a time. */
static pthread_mutex_t uart_lock = PTHREAD_MUTEX_INITIALIZER;

static void uart_bus(void *opaque, uint64_t off, unsigned size, bool w,
                     uint64_t *val)
{
    uint8_t v = (uint8_t)*val;
    (void)size;
    pthread_mutex_lock(&uart_lock);
    uart_access(opaque, (unsigned)off, w, &v);
    pthread_mutex_unlock(&uart_lock);
    if (!w)
        *val = v;
}

static int uart_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    (void)vm;
    dev->state = uart_create(stdout);
    if (!dev->state) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static void uart_exit(vmm *vm, vmm_device *dev)
{
    (void)vm;
    uart_destroy(dev->state);
}

static const vmm_device_ops uart_device = {
    .name = "uart",
    .ranges = { { false, LCVMM_COM1_PORT, LCVMM_UART_PORTS, uart_bus } },
    .init = uart_init,
    .exit = uart_exit,
};

/* ---- the debug exit port ---------------------------------------------- */

static void debug_exit(void *opaque, uint64_t off, unsigned size, bool w,
                       uint64_t *val)
{
    (void)off; (void)size;
    if (w)
        vmm_request_stop(opaque, LCVMM_EXIT_GUEST((uint32_t)*val),
                         "guest wrote %#llx to the debug exit port",
                         (unsigned long long)*val);
}

static const vmm_device_ops debug_exit_device = {
    .name = "debug-exit",
    .ranges = { { false, LCVMM_DEBUG_EXIT_PORT, LCVMM_DEBUG_EXIT_PORTS,
                  debug_exit } },
};

/* ---- delay ports ------------------------------------------------------ */

/* Port 0x80 (POST codes, and the delay port of the paper's section-4
 * OUT 0x80 workaround) and 0xED (the other delay port BIOSes use, as in
 * the paper's section-4 PCI sequence): accepted and ignored, as on a PC
 * without a POST card. */
static void sink(void *opaque, uint64_t off, unsigned size, bool w,
                 uint64_t *val)
{
    (void)opaque; (void)off; (void)size; (void)w; (void)val;
}

static const vmm_device_ops delay_ports_device = {
    .name = "delay",
    .ranges = { { false, LCVMM_POST_PORT, 1, sink },
                { false, LCVMM_DELAY_PORT, 1, sink } },
};

/* ---- the init list ------------------------------------------------------ */

/* In init order: the PCI host first, since the NIC attaches to its bus. */
const vmm_device_ops *const vmm_board[] = {
    &pci_host_device,
    &uart_device,
    &debug_exit_device,
    &delay_ports_device,
    &vmm_nic_device,
    &vmm_cmos_device,
    &vmm_fw_cfg_device,
    &vmm_i8042_device,
    &vmm_debugcon_device,
    NULL,
};
