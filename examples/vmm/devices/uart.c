/* SPDX-License-Identifier: MIT */
/*
 * A 16550A UART as a console: transmit only. The transmitter is always
 * ready (LSR.THRE|TEMT), so a guest polling LSR before each THR write
 * (as BIOSes and early consoles do) sees it idle at once. Receive never
 * has data; interrupts are not raised (IER is stored and read back).
 * Divisor latch, LCR, MCR and SCR are plain storage as on the chip.
 */
#include <stdlib.h>

#include "platform.h"

enum { THR = 0, IER = 1, IIR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6,
       SCR = 7 };
#define LCR_DLAB 0x80
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define IIR_NONE 0x01
#define LINE_MAX_ 256

struct uart {
    FILE *out;
    uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
    char line[LINE_MAX_];
    unsigned len;
    uint64_t bytes;
};

uart *uart_create(FILE *out)
{
    uart *u = calloc(1, sizeof *u);
    if (u) {
        u->out = out;
        u->dll = 12;            /* 9600 baud after reset, as firmware sets */
    }
    return u;
}

static void flush_line(uart *u)
{
    if (u->len) {
        fwrite(u->line, 1, u->len, u->out);
        fflush(u->out);
        u->len = 0;
    }
}

void uart_destroy(uart *u)
{
    if (u) {
        flush_line(u);
        free(u);
    }
}

uint64_t uart_bytes_out(const uart *u)
{
    return u->bytes;
}

static void put(uart *u, uint8_t c)
{
    u->bytes++;
    if (c == '\r')
        return;
    u->line[u->len++] = (char)c;
    if (c == '\n' || u->len == LINE_MAX_)
        flush_line(u);
}

void uart_access(uart *u, unsigned off, bool w, uint8_t *v)
{
    bool dlab = u->lcr & LCR_DLAB;

    switch (off & 7) {
    case THR:
        if (dlab) { if (w) u->dll = *v; else *v = u->dll; }
        else if (w) put(u, *v);
        else *v = 0;                       /* RBR: no data */
        break;
    case IER:
        if (dlab) { if (w) u->dlm = *v; else *v = u->dlm; }
        else if (w) u->ier = *v & 0x0f;
        else *v = u->ier;
        break;
    case IIR:
        if (w) u->fcr = *v;                /* FCR */
        else *v = IIR_NONE | ((u->fcr & 1) ? 0xc0 : 0);
        break;
    case LCR: if (w) u->lcr = *v; else *v = u->lcr; break;
    case MCR: if (w) u->mcr = *v & 0x1f; else *v = u->mcr; break;
    case LSR: if (!w) *v = LSR_THRE | LSR_TEMT; break;
    case MSR: if (!w) *v = 0xb0; break;    /* DCD, DSR, CTS */
    case SCR: if (w) u->scr = *v; else *v = u->scr; break;
    }
}
