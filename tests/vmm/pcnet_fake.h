/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/pcnet_fake.h: the PCnet's indirect registers and its style 2
 * buffer byte count, as a driver reaches them on the fake platform
 * (nic_fake.h); test_pcnet.c and test_nic_dma.c share them.
 */
#ifndef TEST_PCNET_FAKE_H
#define TEST_PCNET_FAKE_H

#include "hw/pcnet_regs.h"
#include "nic_fake.h"

/* CSR r through the address port (RAP), then the data port (RDP). */
static inline void csr_w(fake *f, unsigned r, uint16_t v)
{
    reg_wr(f, PCNET_RAP, 2, r);
    reg_wr(f, PCNET_RDP, 2, v);
}

static inline uint16_t csr_r(fake *f, unsigned r)
{
    reg_wr(f, PCNET_RAP, 2, r);
    return (uint16_t)reg_rd(f, PCNET_RDP, 2);
}

/* A descriptor's BCNT: the two's complement of the length in 12 bits,
 * the top four bits ones (Am79C970A, TMD1/RMD1). */
static inline uint16_t bcnt(size_t len)
{
    return (uint16_t)(0xf000 | ((0x1000 - len) & 0x0fff));
}

#endif /* TEST_PCNET_FAKE_H */
