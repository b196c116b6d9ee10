/* SPDX-License-Identifier: MIT */
/*
 * The MC146818A real-time clock and its CMOS RAM as a PC has them
 * (ports 0x70/0x71): the index register (bit 7 disables NMI and is
 * ignored here), 128 bytes of CMOS, the clock read from the host's wall
 * clock on every read (BCD or binary, 12 or 24 hours as status register
 * B asks), status A with the update-in-progress bit never set (an update
 * takes no time here), C read-to-clear, D with the valid-RAM bit. The
 * memory-size bytes are those SeaBIOS reads when fw_cfg has no
 * etc/e820 (src/fw/paravirt.c: 0x30/0x31 KiB above 1 MiB, 0x34/0x35 64 KiB
 * units above 16 MiB). Not modelled: the periodic, alarm and update
 * interrupts (IRQ 8), setting the clock (writes to the time registers
 * are stored and read back as the host's time).
 */
#include <stdlib.h>
#include <string.h>

#include "fwdev.h"

struct cmos {
    uint8_t index;
    uint8_t ram[128];
    time_t (*now)(void);
};

static time_t host_now(void)
{
    return time(NULL);
}

cmos *cmos_create(uint64_t ram, unsigned ncpus, time_t (*now)(void))
{
    cmos *c = calloc(1, sizeof *c);
    uint64_t kib, high;

    if (!c)
        return NULL;
    c->now = now ? now : host_now;
    c->ram[CMOS_STATUS_A] = 0x26;       /* 32.768 kHz base, 1024 Hz rate */
    c->ram[CMOS_STATUS_B] = CMOS_RTC_B_24H;
    c->ram[CMOS_STATUS_D] = CMOS_RTC_D_VRT;
    c->ram[CMOS_BASEMEM_LO] = 640 & 0xff;
    c->ram[CMOS_BASEMEM_LO + 1] = 640 >> 8;
    kib = ram > (1u << 20) ? (ram - (1u << 20)) >> 10 : 0;
    if (kib > 0xffff)
        kib = 0xffff;
    c->ram[CMOS_EXTMEM_LO] = c->ram[CMOS_EXTMEM2_LO] = (uint8_t)kib;
    c->ram[CMOS_EXTMEM_LO + 1] = c->ram[CMOS_EXTMEM2_LO + 1] =
        (uint8_t)(kib >> 8);
    high = ram > (16u << 20) ? (ram - (16u << 20)) >> 16 : 0;
    if (high > 0xffff)
        high = 0xffff;
    c->ram[CMOS_HIGHMEM_LO] = (uint8_t)high;
    c->ram[CMOS_HIGHMEM_LO + 1] = (uint8_t)(high >> 8);
    c->ram[CMOS_NR_CPUS_M1] = (uint8_t)(ncpus ? ncpus - 1 : 0);
    return c;
}

void cmos_destroy(cmos *c)
{
    free(c);
}

static uint8_t clock_field(const cmos *c, unsigned v)
{
    if (c->ram[CMOS_STATUS_B] & CMOS_RTC_B_BIN)
        return (uint8_t)v;
    return (uint8_t)(((v / 10) % 10) << 4 | (v % 10));
}

static uint8_t clock_read(const cmos *c, unsigned reg)
{
    time_t t = c->now();
    struct tm tm;
    unsigned h;

    gmtime_r(&t, &tm);
    switch (reg) {
    case CMOS_SECONDS: return clock_field(c, (unsigned)tm.tm_sec);
    case CMOS_MINUTES: return clock_field(c, (unsigned)tm.tm_min);
    case CMOS_HOURS:
        h = (unsigned)tm.tm_hour;
        if (c->ram[CMOS_STATUS_B] & CMOS_RTC_B_24H)
            return clock_field(c, h);
        /* 12-hour mode: 1..12, bit 7 PM */
        return (uint8_t)(clock_field(c, h % 12 ? h % 12 : 12) |
                         (h >= 12 ? 0x80 : 0));
    case CMOS_WEEKDAY: return clock_field(c, (unsigned)tm.tm_wday + 1);
    case CMOS_DAY:     return clock_field(c, (unsigned)tm.tm_mday);
    case CMOS_MONTH:   return clock_field(c, (unsigned)tm.tm_mon + 1);
    case CMOS_YEAR:    return clock_field(c, (unsigned)(tm.tm_year % 100));
    default:           /* CMOS_CENTURY */
        return clock_field(c, (unsigned)(1900 + tm.tm_year) / 100);
    }
}

void cmos_access(cmos *c, unsigned offset, bool is_write, uint8_t *val)
{
    unsigned r;

    if (offset == 0) {
        if (is_write)
            c->index = *val & 0x7f;     /* bit 7: NMI mask, not modelled */
        else
            *val = 0xff;                /* the index port is write-only */
        return;
    }
    r = c->index;
    if (is_write) {
        switch (r) {
        case CMOS_STATUS_A:             /* UIP (bit 7) is read-only */
            c->ram[r] = (uint8_t)((*val & 0x7f) | (c->ram[r] & 0x80));
            break;
        case CMOS_STATUS_C: case CMOS_STATUS_D:     /* read-only */
            break;
        default:
            c->ram[r] = *val;
            break;
        }
        return;
    }
    switch (r) {
    case CMOS_SECONDS: case CMOS_MINUTES: case CMOS_HOURS: case CMOS_WEEKDAY:
    case CMOS_DAY: case CMOS_MONTH: case CMOS_YEAR: case CMOS_CENTURY:
        *val = clock_read(c, r);
        break;
    case CMOS_STATUS_C:                 /* interrupt flags: read clears */
        *val = c->ram[r];
        c->ram[r] = 0;
        break;
    default:
        *val = c->ram[r];
        break;
    }
}
