/* examples/guests/smp/smp.h: several processors in the long-mode guests.
 *
 * The bootstrap processor starts the application processors as a PC's
 * firmware does, with INIT and two STARTUP IPIs through its local APIC's
 * interrupt command register (Intel SDM vol. 3A, 8.4 "Multiple-Processor
 * (MP) Initialization"); each AP comes up through ap_boot.S into 64-bit
 * mode at CPL 0 on the BSP's GDT, IDT and page tables, and runs the
 * guest's function. The guests of this folder are each one scenario of
 * docs/vmm.md, "SMP guests". */
#ifndef GUEST_SMP_H
#define GUEST_SMP_H

#define SMP_MAX_CPUS 8          /* lcvmm's VMM_MAX_VCPUS */
#define SMP_MAX_APS (SMP_MAX_CPUS - 1)

#ifndef __ASSEMBLER__
#include "guest.h"

/* The local APIC, at its reset base (SDM 10.4.1); the long-mode stub
 * maps the top GiB uncached. */
#define LAPIC_BASE 0xfee00000u
#define LAPIC_ID 0x020
#define LAPIC_SVR 0x0f0
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
#define LAPIC_SVR_ENABLE 0x100
#define ICR_INIT 0x00000500u
#define ICR_STARTUP 0x00000600u
#define ICR_LEVEL_ASSERT 0x00004000u
#define ICR_PENDING 0x00001000u     /* delivery status: send pending */
#define ICR_ALL_BUT_SELF 0x000c0000u

/* A test-and-test-and-set spin lock (LOCK XCHG). */
struct spinlock {
    volatile uint32_t v;
};
void spin_lock(struct spinlock *l);
void spin_unlock(struct spinlock *l);

static inline uint32_t atomic_load32(const volatile uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void atomic_store32(volatile uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline uint32_t atomic_add32(volatile uint32_t *p, uint32_t v)
{
    return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}

/* What an AP runs once it is in 64-bit mode: smp_fn(cpu), cpu = 1..n-1.
 * It returns its exit code (EXIT_OK ...); the AP then halts for good. */
typedef int (*smp_fn)(unsigned cpu);

/* BSP: start cpus-1 APs (INIT, STARTUP, STARTUP to all but self) running
 * fn, and wait (bounded) until each has checked in. Prints an error and
 * returns false if some did not come. */
bool smp_start(unsigned cpus, smp_fn fn);
/* BSP: wait (bounded in time) until every AP returned from fn; the worst
 * of their exit codes, or EXIT_TIMEOUT. */
int smp_join(void);
/* args->cpus checked (1..SMP_MAX_CPUS); prints what is wrong. */
bool smp_cpus_ok(const struct guest_args *args);
/* A generous bound for waits between processors, in TSC cycles (about
 * 20-30 s: CPL 0 code is emulated and slow on the project's KVM). */
#define SMP_WAIT_TSC (64ull << 30)
#endif

#endif
