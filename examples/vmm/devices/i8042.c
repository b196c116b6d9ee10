/* SPDX-License-Identifier: MIT */
/*
 * A minimal i8042 keyboard controller with a keyboard that never has a
 * key pressed: enough for firmware's start-up (SeaBIOS src/hw/ps2port.c:
 * controller self test, command byte, keyboard reset and enable) to find
 * a keyboard and go on without waiting for time-outs. Status (0x64): bit
 * 0 output buffer full, bit 2 the system flag (set after self test), bit
 * 5 the byte is from the auxiliary port. Controller commands: 0x20 read
 * and 0x60 write the command byte, 0xAA self test (0x55), 0xAB and 0xA9
 * interface tests (0x00), 0xAD/0xAE keyboard off/on, 0xA7/0xA8 auxiliary
 * off/on, 0xD4 a byte for the auxiliary device (which is absent: the
 * controller answers 0xFE, "resend", as for a missing mouse), 0xFE pulse
 * the reset line. Keyboard commands on 0x60: 0xFF reset (ACK, 0xAA),
 * 0xF2 identify (ACK, 0xAB 0x83), 0xED and 0xF3 with their argument,
 * everything else ACK (0xFA). Output bytes wait in a small FIFO.
 */
#include <stdlib.h>
#include <string.h>

#include "fwdev.h"
#include "hw/i8042_regs.h"

#define Q 16
#define ST_OBF  I8042_ST_OBF
#define ST_SYS  I8042_ST_SYS
#define ST_AUX  I8042_ST_AUX

struct i8042 {
    uint8_t q[Q], qaux[Q];
    unsigned head, n;
    uint8_t status;
    uint8_t cmd_byte;
    uint8_t pending;        /* controller command waiting for its data byte */
    uint8_t kbd_pending;    /* keyboard command waiting for its argument */
    void (*reset)(void *);
    void *opaque;
};

i8042 *i8042_create(void (*reset)(void *), void *opaque)
{
    i8042 *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->cmd_byte = 0x61;     /* keyboard interrupt, system flag, translate */
    k->reset = reset;
    k->opaque = opaque;
    return k;
}

void i8042_destroy(i8042 *k)
{
    free(k);
}

static void push(i8042 *k, uint8_t v, bool aux)
{
    if (k->n == Q)
        return;                     /* overrun: the byte is lost */
    k->q[(k->head + k->n) % Q] = v;
    k->qaux[(k->head + k->n) % Q] = aux;
    k->n++;
}

static void controller_cmd(i8042 *k, uint8_t c)
{
    switch (c) {
    case 0x20: push(k, k->cmd_byte, false); break;
    case 0x60: case 0xD1: case 0xD2: case 0xD3: case 0xD4:
        k->pending = c;
        break;
    case 0xAA:
        k->status |= ST_SYS;
        push(k, 0x55, false);
        break;
    case 0xA9: case 0xAB: push(k, 0x00, false); break;
    case 0xAD: k->cmd_byte |= 0x10; break;
    case 0xAE: k->cmd_byte &= (uint8_t)~0x10; break;
    case 0xA7: k->cmd_byte |= 0x20; break;
    case 0xA8: k->cmd_byte &= (uint8_t)~0x20; break;
    case 0xFE:
        if (k->reset)
            k->reset(k->opaque);
        break;
    default: break;                 /* others: ignored */
    }
}

static void keyboard_byte(i8042 *k, uint8_t b)
{
    if (k->kbd_pending) {           /* the argument of 0xED or 0xF3 */
        k->kbd_pending = 0;
        push(k, 0xFA, false);
        return;
    }
    switch (b) {
    case 0xFF: push(k, 0xFA, false); push(k, 0xAA, false); break;
    case 0xF2: push(k, 0xFA, false); push(k, 0xAB, false);
               push(k, 0x83, false); break;
    case 0xED: case 0xF3: k->kbd_pending = b; push(k, 0xFA, false); break;
    default: push(k, 0xFA, false); break;
    }
}

static void data_write(i8042 *k, uint8_t v)
{
    uint8_t p = k->pending;

    k->pending = 0;
    switch (p) {
    case 0x60: k->cmd_byte = v; k->status = (uint8_t)((k->status & ~ST_SYS) |
                                                      (v & ST_SYS)); break;
    case 0xD1: break;               /* output port: A20 is always on */
    case 0xD2: push(k, v, false); break;
    case 0xD3: push(k, v, true); break;
    case 0xD4: push(k, 0xFE, true); break;  /* no mouse */
    default: keyboard_byte(k, v); break;
    }
}

void i8042_access(i8042 *k, unsigned offset, bool is_write, uint8_t *val)
{
    if (offset == 4) {
        if (is_write) {
            controller_cmd(k, *val);
        } else {
            uint8_t s = k->status;
            if (k->n)
                s |= ST_OBF | (k->qaux[k->head] ? ST_AUX : 0);
            *val = s;
        }
        return;
    }
    if (offset != 0) {
        if (!is_write)
            *val = 0xff;
        return;
    }
    if (is_write) {
        data_write(k, *val);
    } else if (k->n) {
        *val = k->q[k->head];
        k->head = (k->head + 1) % Q;
        k->n--;
    } else {
        *val = 0;
    }
}
