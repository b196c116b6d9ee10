/* examples/guests/lib/console.c: the 16550 console and a printf subset.
 *
 * Output goes to COM1 (docs/vmm.md: "Guests poll LSR bit 5 before each
 * THR write"). The LSR poll is bounded: a UART that never reports an
 * empty holding register must not hang the guest, so after the bound
 * the byte is written anyway. */
#include "guest.h"

#define UART_THR 0   /* transmit holding register (DLAB=0) */
#define UART_IER 1   /* interrupt enable (DLAB=0) */
#define UART_DLL 0   /* divisor latch low (DLAB=1) */
#define UART_DLM 1   /* divisor latch high (DLAB=1) */
#define UART_FCR 2   /* FIFO control */
#define UART_LCR 3   /* line control: bit 7 DLAB */
#define UART_MCR 4   /* modem control */
#define UART_LSR 5   /* line status: bit 5 THRE */
#define LSR_THRE 0x20
#define LSR_POLL_BOUND 100000

void uart_init(void)
{
    outb(LCVMM_COM1_PORT + UART_IER, 0x00);   /* no UART interrupts: we poll */
    outb(LCVMM_COM1_PORT + UART_LCR, 0x80);   /* DLAB=1 */
    outb(LCVMM_COM1_PORT + UART_DLL, 0x01);   /* 115200 baud */
    outb(LCVMM_COM1_PORT + UART_DLM, 0x00);
    outb(LCVMM_COM1_PORT + UART_LCR, 0x03);   /* 8N1, DLAB=0 */
    outb(LCVMM_COM1_PORT + UART_FCR, 0x07);   /* FIFOs on, both cleared */
    outb(LCVMM_COM1_PORT + UART_MCR, 0x03);   /* DTR, RTS */
}

void uart_putc(char c)
{
    for (uint32_t i = 0; i < LSR_POLL_BOUND; i++)
        if (inb(LCVMM_COM1_PORT + UART_LSR) & LSR_THRE)
            break;
    outb(LCVMM_COM1_PORT + UART_THR, (uint8_t)c);
}

void uart_puts(const char *s)
{
    while (*s) {
        if (*s == '\n')
            uart_putc('\r');
        uart_putc(*s++);
    }
}

/* Digits of v in base (10 or 16), most significant first, into buf;
 * returns the count. Hex uses shifts only, so 64-bit values print on
 * i386 without libgcc; decimal uses unsigned long (native width). */
static int fmt_hex(char *buf, unsigned long long v)
{
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 0xf];
        v >>= 4;
    } while (v);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

static int fmt_dec(char *buf, unsigned long v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

static void emit(const char *digits, int n, bool neg, int width, bool zero)
{
    int len = n + (neg ? 1 : 0);
    if (neg && zero)
        uart_putc('-');
    for (; width > len; width--)
        uart_putc(zero ? '0' : ' ');
    if (neg && !zero)
        uart_putc('-');
    for (int i = 0; i < n; i++)
        uart_putc(digits[i]);
}

void vprintf(const char *fmt, va_list ap)
{
    char buf[24];
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            if (*fmt == '\n')
                uart_putc('\r');
            uart_putc(*fmt);
            continue;
        }
        fmt++;
        bool zero = false;
        int width = 0, longs = 0;
        if (*fmt == '0') {
            zero = true;
            fmt++;
        }
        while (*fmt >= '0' && *fmt <= '9')
            width = width * 10 + (*fmt++ - '0');
        while (*fmt == 'l') {
            longs++;
            fmt++;
        }
        switch (*fmt) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            int len = (int)strlen(s);
            for (; width > len; width--)
                uart_putc(' ');
            uart_puts(s);
            break;
        }
        case 'c':
            uart_putc((char)va_arg(ap, int));
            break;
        case 'd': {
            long v = longs ? va_arg(ap, long) : va_arg(ap, int);
            unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
            emit(buf, fmt_dec(buf, u), v < 0, width, zero);
            break;
        }
        case 'u': {
            unsigned long v = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
            emit(buf, fmt_dec(buf, v), false, width, zero);
            break;
        }
        case 'x': {
            unsigned long long v = longs >= 2 ? va_arg(ap, unsigned long long)
                                 : longs ? va_arg(ap, unsigned long)
                                         : va_arg(ap, unsigned);
            emit(buf, fmt_hex(buf, v), false, width, zero);
            break;
        }
        case 'p':
            uart_puts("0x");
            emit(buf, fmt_hex(buf, (uintptr_t)va_arg(ap, void *)), false, width, zero);
            break;
        case '%':
            uart_putc('%');
            break;
        case '\0':
            return;
        default:
            uart_putc('%');
            uart_putc(*fmt);
            break;
        }
    }
}

void printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

void fail(uint32_t code, const char *fmt, ...)
{
    va_list ap;
    uart_puts("error: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    uart_puts("\n");
    debug_exit(code);
}

void debug_exit(uint32_t code)
{
    /* docs/vmm.md: a 32-bit OUT to 0xF4 ends the VM with this code
     * (lcvmm exits 0 for code 0, else code*2+1; QEMU's isa-debug-exit
     * with iosize=4 always code*2+1). IOPL=3 makes this legal at CPL 3
     * too. If nothing ends the VM, spin: HLT
     * would fault at CPL 3. */
    outl(LCVMM_DEBUG_EXIT_PORT, code);
    for (;;)
        cpu_pause();
}
