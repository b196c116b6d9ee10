/* examples/guests/net.h: the NIC interface the drivers implement and
 * the echo workload both NIC guests run over it. */
#ifndef GUEST_NET_H
#define GUEST_NET_H

#include "guest.h"

#define ETH_FRAME_MAX 1514   /* without FCS */
#define ETH_FRAME_MIN 60     /* shorter frames are zero-padded */

struct nic {
    const char *name;        /* printed as guest=NAME */
    uint8_t mac[6];
    bool irq_mode;           /* interrupts + HLT (else polling) */
    /* Queue one frame (ETH_FRAME_MIN <= len <= ETH_FRAME_MAX): false if
     * no transmit descriptor became free within the wait bound. */
    bool (*send)(const void *frame, uint32_t len);
    /* If a received frame is ready, copy up to max bytes of it to buf,
     * hand the descriptor back to the device and return the frame's
     * length; 0 if none is ready. Never waits. */
    uint32_t (*recv)(void *buf, uint32_t max);
    /* Poll mode: read (and acknowledge) the interrupt cause register, as
     * an interrupt handler would. Gives the device a register access per
     * wait iteration. */
    void (*poll)(void);
    /* Optional, batch=: a qdisc handing the driver a list of frames
     * (Linux's dev_hard_start_xmit loop over xmit_one). stage() copies a
     * frame into the next free transmit buffer (waiting, bounded, for
     * one) and, with fill set, writes its descriptor except OWN; post()
     * then, in one loop, gives each staged frame to the device and kicks
     * the transmitter, once per frame as pcnet32_start_xmit does. With
     * fill clear, post() writes the whole descriptor as start_xmit does
     * (length, misc, base, then status with OWN). */
    bool (*stage)(const void *frame, uint32_t len, bool fill);
    void (*post)(bool fill);
    /* Print the driver's error counters, if any (before the result). */
    void (*stats)(void);
};

/* A bounded wait. In poll mode each step calls nic->poll() (a register
 * read: the device gets an access per iteration) and the wait ends after
 * NET_WAIT_TSC time-stamp-counter cycles (about 3-5 s on 2-3 GHz hosts)
 * or, should the TSC not advance, NET_POLL_BOUND steps. A count alone
 * does not do: a step costs ~10 us where every register access exits
 * (KVM) and ~0.1 us under TCG. In interrupt mode each step is one
 * STI;HLT (interrupts otherwise stay off), bounded by NET_IRQ_WAIT_TICKS
 * PIT ticks and NET_IRQ_WAKEUPS wake-ups. */
#define NET_POLL_BOUND 200000000u
#define NET_WAIT_TSC (10ull << 30)
#define NET_IRQ_WAIT_TICKS (5 * PIT_HZ)
#define NET_IRQ_WAKEUPS 1000000u
struct net_wait {
    uint32_t steps;
    uint32_t tick0;
    uint64_t tsc0;
};
void net_wait_begin(const struct nic *nic, struct net_wait *w);
/* One wait step; false once the bound is exhausted. */
bool net_wait_step(const struct nic *nic, struct net_wait *w);

/* ARP for 10.0.2.2, one ICMP echo, then args->n UDP echo exchanges;
 * prints the result line and returns the exit code. */
int net_echo_workload(struct nic *nic, const struct guest_args *args);

#endif
