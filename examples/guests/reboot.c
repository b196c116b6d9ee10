/* examples/guests/reboot.c: guest-reboot, a machine that resets and
 * boots again n times, every boot running exiting code the boots before
 * never ran.
 *
 * Run with lcvmm --reboot (docs/vmm.md, "Reset and reboot"): each reset
 * stops every vCPU, makes the devices and the vCPUs anew, loads this image
 * again and flushes libcluster's translations, keeping guest RAM as a warm
 * reset does. The guest keeps its state where the image does not reach:
 * a record at STATE_ADDR in RAM (a PC's CMOS would keep it too, but the
 * CMOS is part of lcvmm's firmware platform only). Boot k:
 *  - checks that the loader put the image back (a .data word the previous
 *    boot changed is at its initial value again) and that RAM survived
 *    (the record, and the previous boot's site still in place);
 *  - writes a new site at SITES + k * SITE_SIZE (wrapping within 1 MiB):
 *    `mov al, k; out 0x80, al; out 0xed, al; out 0x80, al; ret`, three
 *    exits, and calls it four times, so the site is translated (the
 *    engine translates a site at its third exit, paper section 5) and
 *    then runs as one cluster: every boot brings new exit sites;
 *  - resets the machine, alternating the chipset's reset control register
 *    (port 0xCF9, a hard reset) and a triple fault (an empty IDT and UD2:
 *    #UD, then #GP and #DF cannot be delivered either: shutdown, which a
 *    PC's chipset answers with a reset; INT3 instead of UD2 is an
 *    emulation failure on this project's software KVM, KVM_EXIT_INTERNAL_
 *    ERROR, not a shutdown).
 * After n reboots it prints its result line and ends through the debug
 * exit port. The checksum (FNV-1a over the sites written) depends only
 * on n: clustering on and off must print the same line. */
#include "guest.h"

#define STATE_ADDR  0x00800000u     /* 8 MiB: above the image, in -m 64 */
#define SITES       0x00900000u
#define SITE_SIZE   16u
#define SITE_WINDOW (1u << 20)
#define STATE_MAGIC 0x52424f54u     /* "RBOT" */
#define FRESH       0x46524553u     /* "FRES": the image's own value */

struct reboot_state {
    uint32_t magic;
    uint32_t boots;         /* boots before this one */
    uint32_t n;
    uint32_t checksum;
    uint32_t cf9, triple;   /* resets of each kind */
};

static volatile uint32_t image_word = FRESH;

const struct guest_info guest_info = { "reboot", 10, false };

static uint8_t *site_of(uint32_t k)
{
    return (uint8_t *)(uintptr_t)(SITES + (k * SITE_SIZE) % SITE_WINDOW);
}

static void site_code(uint32_t k, uint8_t code[SITE_SIZE])
{
    static const uint8_t tmpl[] = {
        0xb0, 0x00,             /* mov al, k */
        0xe6, 0x80,             /* out 0x80, al */
        0xe6, 0xed,             /* out 0xed, al */
        0xe6, 0x80,             /* out 0x80, al */
        0xc3,                   /* ret */
    };
    memset(code, 0xcc, SITE_SIZE);      /* int3 padding */
    memcpy(code, tmpl, sizeof tmpl);
    code[1] = (uint8_t)k;
}

static void __attribute__((noreturn)) triple_fault(void)
{
    static const struct { uint16_t limit; uint32_t base; }
        __attribute__((packed)) none = { 0, 0 };
    __asm__ volatile("lidt %0\n\tud2" : : "m"(none) : "memory");
    for (;;)
        __asm__ volatile("hlt");
}

int guest_main(const struct guest_args *args)
{
    struct reboot_state *st = (struct reboot_state *)(uintptr_t)STATE_ADDR;
    uint8_t code[SITE_SIZE];
    uint32_t k;

    if (image_word != FRESH)
        fail(EXIT_MISMATCH, "boot %u: the image was not loaded again",
             st->boots);
    image_word = 0;
    if (st->magic != STATE_MAGIC || st->n != args->n) {
        /* the first boot: RAM is as the VMM made it */
        memset(st, 0, sizeof *st);
        st->magic = STATE_MAGIC;
        st->n = args->n;
        st->checksum = FNV1A_INIT;
    } else if (st->boots) {
        site_code(st->boots - 1, code);
        if (memcmp(site_of(st->boots - 1), code, SITE_SIZE))
            fail(EXIT_MISMATCH, "boot %u: the previous boot's code is gone "
                 "(RAM not kept)", st->boots);
    }
    k = st->boots;
    if (k < 3 || k % 1000 == 0 || k == args->n)
        printf("boot %u\n", k);

    /* new exit sites for this boot */
    site_code(k, code);
    memcpy(site_of(k), code, SITE_SIZE);
    for (int i = 0; i < 4; i++)
        __asm__ volatile("call *%0" : : "r"(site_of(k)) : "eax", "memory");
    st->checksum = fnv1a(st->checksum, &k, sizeof k);
    st->checksum = fnv1a(st->checksum, code, SITE_SIZE);

    if (k == args->n) {
        printf("guest=reboot boots=%u cf9=%u triple=%u checksum=%08x\n",
               k, st->cf9, st->triple, st->checksum);
        st->magic = 0;          /* a new run starts afresh */
        debug_exit(EXIT_OK);
    }
    st->boots = k + 1;
    if (k % 2 == 0) {
        st->cf9++;
        outb(LCVMM_RESET_CONTROL_PORT, 0x02);   /* SYS_RST: a hard reset */
        outb(LCVMM_RESET_CONTROL_PORT, LCVMM_RESET_CONTROL_HARD);
    } else {
        st->triple++;
        triple_fault();
    }
    /* a VMM that reset nothing: say so (lcvmm without --reboot ends the
     * VM at the reset, before this) */
    fail(EXIT_MISMATCH, "boot %u: the reset did not happen", k);
}
