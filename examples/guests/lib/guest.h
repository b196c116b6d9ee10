/* examples/guests/lib/guest.h: the freestanding guest library.
 *
 * Everything a guest program needs, with no C library underneath: port
 * I/O and MMIO accessors, the console, PCI configuration mechanism #1,
 * the debug exit port, string helpers, the internet checksum, a PRNG and
 * the command line. Builds for x86-64 (long-mode guests) and i386 (the
 * PAE and BIOS guests); the platform is docs/vmm.md, "The platform a
 * guest sees". Only compiler-provided freestanding headers are used. */
#ifndef GUEST_H
#define GUEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ports, PCI slots and exit statuses of the platform, shared with the VMM. */
#include "lcvmm/platform.h"

/* ---- exit codes (the value written to the debug exit port) ---- */
enum {
    EXIT_OK = 0,
    EXIT_MISMATCH = 1,   /* a reply or read-back differed */
    EXIT_TIMEOUT = 2,    /* a bounded wait ran out */
    EXIT_NODEV = 3,      /* the device is missing or failed to initialise */
    EXIT_USAGE = 4,      /* bad command line */
    EXIT_FAULT = 0x7e,   /* unexpected CPU exception */
};

/* ---- port I/O: one IN/OUT instruction each, DX or imm8 port ---- */
static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint16_t inw(uint16_t port)
{
    uint16_t v;
    __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint32_t inl(uint16_t port)
{
    uint32_t v;
    __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}
static inline void outw(uint16_t port, uint16_t v)
{
    __asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}
static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

/* ---- MMIO: explicit 32-bit MOVs through a volatile access, never
 * merged, split or reordered by the compiler (the "memory" clobber also
 * orders them against descriptor writes in RAM; x86 keeps stores in
 * order, so no fence is needed for write-back RAM vs UC MMIO). ---- */
static inline uint32_t mmio_read32(uintptr_t addr)
{
    uint32_t v;
    __asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
static inline void mmio_write32(uintptr_t addr, uint32_t v)
{
    __asm__ volatile("movl %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}

/* Compiler barrier: orders plain memory accesses (descriptor fields). */
static inline void barrier(void) { __asm__ volatile("" ::: "memory"); }

/* The time-stamp counter (allowed at CPL 3: CR4.TSD is clear). Used
 * only to bound waits, never for results. */
static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

static inline void cpu_pause(void) { __asm__ volatile("pause"); }

/* CPL 0 only. */
static inline void cpu_cli(void) { __asm__ volatile("cli" ::: "memory"); }
/* STI's one-instruction interrupt shadow covers the HLT: an interrupt
 * that is already pending is taken only once HLT has started, so a
 * wake-up cannot be lost between the caller's check and the HLT. */
static inline void cpu_sti_hlt(void) { __asm__ volatile("sti; hlt" ::: "memory"); }

/* ---- debug exit (docs/vmm.md): a 32-bit OUT to LCVMM_DEBUG_EXIT_PORT
 * ends the VM ---- */
void debug_exit(uint32_t code) __attribute__((noreturn));

/* ---- console: 16550 UART at COM1 ---- */
void uart_init(void);
void uart_putc(char c);
void uart_puts(const char *s);
/* Subset: %s %c %d %u %x %lx %lu %ld %llx %p %%, with optional '0' flag
 * and width (e.g. %08x). */
void printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vprintf(const char *fmt, va_list ap);
/* Print "error: ..." and end the VM with code. */
void fail(uint32_t code, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

/* ---- PCI configuration mechanism #1: 0xCF8 address, 0xCFC data ---- */
#define PCI_VENDOR 0x00
#define PCI_COMMAND 0x04
#define PCI_CMD_IO 0x0001
#define PCI_CMD_MEM 0x0002
#define PCI_CMD_MASTER 0x0004
#define PCI_CLASS_REV 0x08
#define PCI_HEADER_TYPE 0x0e
#define PCI_BAR0 0x10
#define PCI_INTERRUPT_LINE 0x3c

struct pci_dev {
    uint8_t bus, dev, fn;
    uint16_t vendor, device;
    uint8_t irq_line;
};
uint32_t pci_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off);
uint16_t pci_read16(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off);
uint8_t pci_read8(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off);
void pci_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off, uint32_t v);
void pci_write16(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off, uint16_t v);
/* First function on bus 0 with vendor:device; false if none. */
bool pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out);
/* BAR n: the base address (I/O or memory, 64-bit BARs combined). */
uint64_t pci_bar(const struct pci_dev *d, int n, bool *is_io);
/* The first vendor:device function and its BAR0, which must be a memory
 * BAR below 4 GiB (as the e1000's is); prints what is wrong and returns
 * false otherwise. `name` names the device in the message. */
bool pci_find_mmio(uint16_t vendor, uint16_t device, const char *name,
                   struct pci_dev *out, uintptr_t *base);
/* Set bits in the command register (I/O / memory enable, bus master). */
void pci_enable(const struct pci_dev *d, uint16_t bits);

/* ---- memory and strings (also what GCC may call implicitly) ---- */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

/* ---- internet checksum (RFC 1071): ones'-complement sum of 16-bit
 * big-endian words; csum_add accumulates, csum_fold finishes. ---- */
uint32_t csum_add(uint32_t sum, const void *data, size_t len);
uint16_t csum_fold(uint32_t sum);

/* FNV-1a (32-bit) over bytes: the running checksum guests print. */
uint32_t fnv1a(uint32_t h, const void *data, size_t len);
#define FNV1A_INIT 0x811c9dc5u

/* ---- deterministic PRNG: xorshift32 (Marsaglia), never zero ---- */
struct prng {
    uint32_t s;
};
void prng_seed(struct prng *p, uint32_t seed);
uint32_t prng_next(struct prng *p);
/* Uniform-ish in [lo, hi] (modulo bias is irrelevant here). */
uint32_t prng_range(struct prng *p, uint32_t lo, uint32_t hi);

/* ---- command line: "key=value" words separated by spaces ---- */
struct guest_args {
    uint32_t n;     /* n=: repetitions / exchanges (default per guest) */
    uint32_t cpl;   /* cpl=0|3 (64-bit guests), default 0 */
    uint32_t irq;   /* irq=0|1, default 1 (forced 0 at cpl=3) */
    uint32_t size;  /* size=: largest UDP payload, default 1000 */
    uint32_t seed;  /* seed=: PRNG seed */
    uint32_t burst; /* burst=: NIC guests send this many frames before
                     * taking the replies (a streaming sender), default 1 */
    uint32_t linux_seq; /* linux=1: the e1000 guest's interrupt path and
                         * register accesses as Linux's e1000 driver's */
    uint32_t batch; /* batch=1|2: a burst's frames are built first, then
                     * handed to the NIC in one transmit loop, one kick
                     * per frame (net.h, nic.stage/post); default 0 */
    uint32_t cpus;  /* cpus=: processors the SMP guests start (smp/),
                     * default 1 */
};
/* Parse cmdline (may be NULL) into args; unknown keys are reported and
 * ignored, malformed numbers make it return false. */
bool args_parse(const char *cmdline, struct guest_args *args);
/* One key's value as a number: true if present and well formed. */
bool cmdline_get(const char *cmdline, const char *key, uint32_t *value);

/* ---- provided by the boot stub ---- */
extern char boot_cmdline[];        /* a copy of the Multiboot cmdline */
extern uint32_t boot_mb_magic;     /* EAX at entry */

/* ---- provided by each guest ---- */
struct guest_info {
    const char *name;   /* printed as guest=NAME */
    uint32_t default_n;
    bool pae;           /* 32-bit guests: enable PAE paging before main */
};
extern const struct guest_info guest_info;
int guest_main(const struct guest_args *args);

/* ---- interrupts (long-mode guests at CPL 0, irq=1) ---- */
typedef void (*irq_handler_t)(void);
/* PIT ticks (18.2 Hz) counted by the IRQ 0 handler once irq_init ran. */
extern volatile uint32_t irq_ticks;
#define PIT_HZ 18
/* Remap the PICs to 0x20/0x28, mask everything, start the PIT. */
void irq_init(void);
/* Route IRQ line to handler and unmask it (and the cascade if >= 8). */
void irq_attach(uint8_t line, irq_handler_t handler);
bool irq_enabled(void);    /* irq_init was called */

#endif
