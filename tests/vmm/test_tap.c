/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_tap.c: the TAP backend (examples/vmm/backends/tap.c)
 * against the real kernel.
 *
 * Each test case runs in its own forked process (Check's default) and
 * first moves that process into a fresh network namespace
 * (unshare(CLONE_NEWNET)), so the TAP interface, its address and the UDP
 * socket exist only there and vanish with the process: nothing is left
 * on the host. In the namespace the kernel side of "lctap0" gets
 * 10.0.2.2/24 and plays the peer; the test plays the guest (10.0.2.15)
 * through the backend: ARP, ICMP echo, and UDP to a socket it opens.
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and /dev/net/tun. Without
 * them it prints "1..0 # SKIP <reason>" and exits 77, which Meson counts
 * as skipped (this test uses the exitcode protocol for that reason; the
 * TAP lines it prints when it runs are still counted per case by
 * scripts/summarize.py).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/harness.h"
#include "net.h"
#include "net_frames.h"

#define IFNAME "lctap0"
#define TIMEOUT_MS 2000

static uint8_t frame[NET_FRAME_MAX];
static uint8_t buf[NET_FRAME_MAX];

/* The kernel's side of the interface. */
static uint8_t kernel_mac[6];

/* --- namespace and interface setup -------------------------------------- */

static void set_addr(int s, unsigned long req, const char *ip)
{
    struct ifreq ifr;
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, IFNAME);
    sin->sin_family = AF_INET;
    ck_assert_int_eq(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
    ck_assert_msg(ioctl(s, req, &ifr) == 0, "ioctl %lx %s: %s", req, ip,
                  strerror(errno));
}

/* 10.0.2.2/24 on IFNAME, up; remember its MAC. */
static void configure_interface(void)
{
    struct ifreq ifr;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(s, 0);
    set_addr(s, SIOCSIFADDR, "10.0.2.2");
    set_addr(s, SIOCSIFNETMASK, "255.255.255.0");
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, IFNAME);
    ck_assert_int_eq(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
    ifr.ifr_flags |= IFF_UP;
    ck_assert_msg(ioctl(s, SIOCSIFFLAGS, &ifr) == 0, "SIOCSIFFLAGS: %s",
                  strerror(errno));
    ck_assert_int_eq(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
    memcpy(kernel_mac, ifr.ifr_hwaddr.sa_data, 6);
    close(s);
}

/* A fresh namespace holding IFNAME, configured; the backend on it. */
static net_backend *setup(void)
{
    char err[160] = "";
    net_backend *be;

    ck_assert_msg(unshare(CLONE_NEWNET) == 0, "unshare: %s", strerror(errno));
    be = net_tap_create(IFNAME, err, sizeof err);
    ck_assert_msg(be != NULL, "%s", err);
    configure_interface();
    return be;
}

/* The guest talking to the kernel's side. */
static nf_addr to_kernel(void)
{
    nf_addr a = { nf_guest_mac, kernel_mac, nf_guest_ip, nf_peer_ip };
    return a;
}

static nf_addr from_kernel(void)
{
    nf_addr a = { kernel_mac, nf_guest_mac, nf_peer_ip, nf_guest_ip };
    return a;
}

/* --- the guest's side ---------------------------------------------------- */

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Answer the kernel when it asks who has the guest's address (it needs
 * the guest's MAC to send the echo replies). */
static void answer_arp(net_backend *be, const uint8_t *f, size_t len)
{
    const uint8_t *r = f + NF_ETH;
    uint8_t out[42];

    if (len < NF_ETH + 28 || nf_be16(f + 12) != 0x0806 ||
        nf_be16(r + 6) != 1 || memcmp(r + 24, nf_guest_ip, 4))
        return;
    memcpy(out, r + 8, 6);
    memcpy(out + 6, nf_guest_mac, 6);
    nf_put16(out + 12, 0x0806);
    memcpy(out + NF_ETH, r, 6);                 /* htype .. plen */
    nf_put16(out + NF_ETH + 6, 2);
    memcpy(out + NF_ETH + 8, nf_guest_mac, 6);
    memcpy(out + NF_ETH + 14, nf_guest_ip, 4);
    memcpy(out + NF_ETH + 18, r + 8, 10);       /* requester's sha, spa */
    ck_assert_int_eq(net_tx(be, out, sizeof out), 0);
}

typedef bool (*frame_match)(const uint8_t *f, size_t len);

/*
 * Poll the backend's descriptor until a frame that `match` accepts
 * arrives (its length), or TIMEOUT_MS pass (0). Other frames (the
 * kernel's IPv6 router solicitations, MLD reports, ARP requests) are
 * skipped; ARP requests for the guest are answered.
 */
static size_t wait_frame(net_backend *be, uint8_t *out, frame_match match)
{
    long deadline = now_ms() + TIMEOUT_MS;
    struct pollfd pfd = { .fd = be->ops->poll_fd(be), .events = POLLIN };

    ck_assert_int_ge(pfd.fd, 0);
    for (;;) {
        size_t n;
        long left;

        while ((n = net_rx(be, out, NET_FRAME_MAX)) != 0) {
            if (match(out, n))
                return n;
            answer_arp(be, out, n);
        }
        left = deadline - now_ms();
        if (left <= 0)
            return 0;
        poll(&pfd, 1, (int)left);
    }
}

static bool is_ipv4_proto(const uint8_t *f, size_t len, uint8_t proto)
{
    return len >= NF_L4 && nf_be16(f + 12) == 0x0800 &&
           f[NF_ETH + 9] == proto && !memcmp(f + NF_ETH + 16, nf_guest_ip, 4);
}

static bool is_arp_reply(const uint8_t *f, size_t len)
{
    return len >= NF_ETH + 28 && nf_be16(f + 12) == 0x0806 &&
           nf_be16(f + NF_ETH + 6) == 2;
}

static bool is_icmp(const uint8_t *f, size_t len)
{
    return is_ipv4_proto(f, len, 1);
}

static bool is_udp(const uint8_t *f, size_t len)
{
    return is_ipv4_proto(f, len, 17);
}

/* --- tests --------------------------------------------------------------- */

START_TEST(kernel_answers_arp)
{
    net_backend *be = setup();
    nf_addr a = to_kernel();
    size_t n = nf_arp_request(frame, &a, nf_peer_ip);

    ck_assert_str_eq(be->ops->name, "tap");
    ck_assert_int_eq(net_tx(be, frame, n), 0);
    n = wait_frame(be, buf, is_arp_reply);
    ck_assert_msg(n > 0, "no ARP reply within %d ms", TIMEOUT_MS);
    nf_check_arp_reply(buf, n, kernel_mac, nf_peer_ip, nf_guest_mac,
                       nf_guest_ip);
    ck_assert_uint_eq(be->stats.tx_frames, 1);
    ck_assert_uint_eq(be->stats.tx_bytes, 42);
    ck_assert_uint_ge(be->stats.rx_frames, 1);
    net_destroy(be);
}
END_TEST

START_TEST(kernel_answers_ping)
{
    net_backend *be = setup();
    nf_addr a = to_kernel(), r = from_kernel();
    uint8_t data[57];
    size_t n;

    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 3 + 1);
    n = nf_icmp_echo(frame, &a, 0x4c43, 1, data, sizeof data);
    ck_assert_int_eq(net_tx(be, frame, n), 0);
    n = wait_frame(be, buf, is_icmp);
    ck_assert_msg(n > 0, "no echo reply within %d ms", TIMEOUT_MS);
    nf_check_echo_reply(buf, n, &r, 0x4c43, 1, data, sizeof data);
    net_destroy(be);
}
END_TEST

/* A datagram to a socket on 10.0.2.2:7 in the namespace, echoed back by
 * the test: both directions of UDP through the backend. */
START_TEST(udp_both_ways)
{
    net_backend *be = setup();
    nf_addr a = to_kernel(), r = from_kernel();
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7) };
    struct sockaddr_in from;
    socklen_t flen = sizeof from;
    struct pollfd pfd;
    static const uint8_t data[] = "hello from the guest!";   /* odd length */
    uint8_t got[64];
    ssize_t got_len;
    size_t n;
    int s;

    s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(s, 0);
    inet_pton(AF_INET, "10.0.2.2", &sin.sin_addr);
    ck_assert_msg(bind(s, (struct sockaddr *)&sin, sizeof sin) == 0,
                  "bind 10.0.2.2:7: %s", strerror(errno));

    n = nf_udp(frame, &a, 40007, 7, data, sizeof data, true);
    ck_assert_int_eq(net_tx(be, frame, n), 0);
    pfd.fd = s;
    pfd.events = POLLIN;
    ck_assert_msg(poll(&pfd, 1, TIMEOUT_MS) == 1, "datagram not delivered");
    got_len = recvfrom(s, got, sizeof got, 0, (struct sockaddr *)&from, &flen);
    ck_assert_int_eq(got_len, sizeof data);
    ck_assert_mem_eq(got, data, sizeof data);
    ck_assert_uint_eq(ntohs(from.sin_port), 40007);
    ck_assert_uint_eq(ntohl(from.sin_addr.s_addr), 0x0a00020f);

    ck_assert_int_eq(sendto(s, got, (size_t)got_len, 0,
                            (struct sockaddr *)&from, flen), got_len);
    n = wait_frame(be, buf, is_udp);
    ck_assert_msg(n > 0, "no UDP reply within %d ms", TIMEOUT_MS);
    nf_check_udp(buf, n, &r, 7, 40007, data, sizeof data);
    close(s);
    net_destroy(be);
}
END_TEST

START_TEST(tap_limits_and_idle)
{
    net_backend *be = setup();
    char err[160];

    memset(frame, 0, sizeof frame);
    ck_assert_int_eq(net_tx(be, frame, NET_FRAME_MIN - 1), -1);
    ck_assert_int_eq(net_tx(be, frame, NET_FRAME_MAX + 1), -1);
    ck_assert_uint_eq(be->stats.tx_dropped, 2);
    ck_assert_uint_eq(be->stats.tx_frames, 0);
    ck_assert_int_ge(be->ops->poll_fd(be), 0);
    /* Non-blocking: nothing waiting (or only the kernel's own chatter)
     * returns promptly. */
    while (net_rx(be, buf, sizeof buf))
        ;

    /* The same interface twice is refused with a reason. */
    err[0] = 0;
    ck_assert_ptr_null(net_tap_create(IFNAME, err, sizeof err));
    ck_assert_str_eq(err, "tap: TUNSETIFF " IFNAME ": Device or resource "
                     "busy (in use by another process, or exists as a TUN "
                     "device)");
    /* Names the kernel cannot take. */
    ck_assert_ptr_null(net_tap_create("abcdefghijklmnop", err, sizeof err));
    ck_assert_str_eq(err, "tap: interface name 'abcdefghijklmnop' too long "
                     "(at most 15 characters)");
    ck_assert_ptr_null(net_tap_create("", err, sizeof err));
    ck_assert_str_eq(err, "tap: missing interface name");
    net_destroy(be);

    /* Through --net parsing. */
    be = net_backend_from_arg("tap,ifname=lctap1", err, sizeof err);
    ck_assert_msg(be != NULL, "%s", err);
    ck_assert_str_eq(be->ops->name, "tap");
    net_destroy(be);
}
END_TEST

/* Without CAP_NET_ADMIN the error says so. The capability is dropped in
 * this forked test process only (Check's default CK_FORK). */
START_TEST(tap_needs_cap_net_admin)
{
    struct __user_cap_header_struct hdr = {
        .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[2];
    char err[160] = "";

    ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
    ck_assert_int_eq(syscall(SYS_capget, &hdr, data), 0);
    data[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
    ck_assert_int_eq(syscall(SYS_capset, &hdr, data), 0);

    ck_assert_ptr_null(net_tap_create("lctap9", err, sizeof err));
    ck_assert_str_eq(err, "tap: TUNSETIFF lctap9: Operation not permitted "
                     "(needs CAP_NET_ADMIN)");
}
END_TEST

/* --- skip detection ------------------------------------------------------- */

/*
 * Why this host cannot run the tests, or NULL if it can. The decisive
 * probe (namespace, then TAP device) runs in a child so this process
 * keeps its namespace.
 */
static const char *skip_reason(char *why, size_t len)
{
    int pfd[2], status;
    ssize_t n;
    pid_t pid;

    if (geteuid() != 0)
        return "not root (needs CAP_NET_ADMIN in a new network namespace)";
    if (access("/dev/net/tun", R_OK | W_OK) != 0) {
        snprintf(why, len, "/dev/net/tun: %s", strerror(errno));
        return why;
    }
    if (pipe(pfd) != 0)
        return "pipe failed";
    pid = fork();
    if (pid == 0) {
        char err[160] = "";
        net_backend *be = NULL;

        if (unshare(CLONE_NEWNET) != 0)
            snprintf(err, sizeof err, "unshare(CLONE_NEWNET): %s",
                     strerror(errno));
        else if (!(be = net_tap_create(IFNAME, err, sizeof err)) && !*err)
            strcpy(err, "cannot create a TAP device");
        net_destroy(be);
        if (write(pfd[1], err, strlen(err)) < 0)
            _exit(1);
        _exit(0);
    }
    close(pfd[1]);
    n = read(pfd[0], why, len - 1);
    close(pfd[0]);
    waitpid(pid, &status, 0);
    if (n > 0) {
        why[n] = 0;
        return why;
    }
    return NULL;
}

static Suite *tap_suite(void)
{
    Suite *s = suite_create("tap");
    TCase *tc = tcase_create("tap");

    tcase_add_test(tc, kernel_answers_arp);
    tcase_add_test(tc, kernel_answers_ping);
    tcase_add_test(tc, udp_both_ways);
    tcase_add_test(tc, tap_limits_and_idle);
    tcase_add_test(tc, tap_needs_cap_net_admin);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    char why[256];
    const char *reason = skip_reason(why, sizeof why);

    if (reason) {
        /* TAP's "skip everything" plan, readable as is in the log. */
        printf("1..0 # SKIP %s\n", reason);
        return 77;
    }
    return lc_test_run(tap_suite());
}
