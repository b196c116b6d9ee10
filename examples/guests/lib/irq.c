/* examples/guests/lib/irq.c: 8259A PICs and the 8254 PIT (long-mode
 * guests at CPL 0 with irq=1).
 *
 * The PICs are remapped so IRQ 0-7 arrive at vectors 0x20-0x27 and IRQ
 * 8-15 at 0x28-0x2f (ICW1..ICW4, Intel 8259A datasheet), everything
 * masked but the lines a driver attaches plus the cascade (IRQ 2). The
 * PIT's channel 0 ticks at 18.2 Hz as a watchdog for interrupt-driven
 * waits: a HLT that no device interrupt ends still wakes up, so every
 * wait stays bounded in time. */
#include "boot.h"
#include "guest.h"

#define PIC1_CMD LCVMM_PIC1_PORT
#define PIC1_DATA (LCVMM_PIC1_PORT + 1)
#define PIC2_CMD LCVMM_PIC2_PORT
#define PIC2_DATA (LCVMM_PIC2_PORT + 1)
#define PIC_EOI 0x20
#define PIC_READ_ISR 0x0b   /* OCW3: next read of the command port = ISR */
#define PIT_CH0 0x40
#define PIT_MODE 0x43

volatile uint32_t irq_ticks;
static irq_handler_t handlers[16];
static uint16_t irq_mask = 0xffff;
static bool initialised;

static void pic_write_mask(void)
{
    outb(PIC1_DATA, (uint8_t)irq_mask);
    outb(PIC2_DATA, (uint8_t)(irq_mask >> 8));
}

static void pit_tick(void) { irq_ticks++; }

void irq_init(void)
{
    outb(PIC1_CMD, 0x11);                 /* ICW1: init, ICW4 follows */
    outb(PIC2_CMD, 0x11);
    outb(PIC1_DATA, IRQ_VECTOR_BASE);     /* ICW2: vector base */
    outb(PIC2_DATA, IRQ_VECTOR_BASE + 8);
    outb(PIC1_DATA, 0x04);                /* ICW3: slave on IRQ 2 */
    outb(PIC2_DATA, 0x02);                /* ICW3: slave identity 2 */
    outb(PIC1_DATA, 0x01);                /* ICW4: 8086 mode, normal EOI */
    outb(PIC2_DATA, 0x01);
    irq_mask = 0xffff;
    pic_write_mask();

    /* PIT channel 0, lobyte/hibyte, mode 2 (rate generator), divisor
     * 65536 (written as 0): 1193182 / 65536 = 18.2 Hz. */
    outb(PIT_MODE, 0x34);
    outb(PIT_CH0, 0);
    outb(PIT_CH0, 0);
    initialised = true;
    irq_attach(0, pit_tick);
}

bool irq_enabled(void) { return initialised; }

void irq_attach(uint8_t line, irq_handler_t handler)
{
    line &= 15;
    handlers[line] = handler;
    irq_mask &= (uint16_t)~(1u << line);
    if (line >= 8)
        irq_mask &= (uint16_t)~(1u << 2);  /* the cascade */
    pic_write_mask();
}

static bool pic_in_service(uint16_t cmd_port, uint8_t bit)
{
    outb(cmd_port, PIC_READ_ISR);
    return inb(cmd_port) & (1u << bit);
}

/* Called by isr_dispatch (boot64.c) with the IRQ line. */
void isr_irq(uint8_t line);
void isr_irq(uint8_t line)
{
    /* IRQ 7 and 15 may be spurious: then the PIC's in-service bit is
     * clear and no EOI is due (except the cascade's on the master). */
    if (line == 7 && !pic_in_service(PIC1_CMD, 7))
        return;
    if (line == 15 && !pic_in_service(PIC2_CMD, 7)) {
        outb(PIC1_CMD, PIC_EOI);
        return;
    }
    if (handlers[line])
        handlers[line]();   /* reads and clears the device's cause */
    if (line >= 8)
        outb(PIC2_CMD, PIC_EOI);
    outb(PIC1_CMD, PIC_EOI);
}
