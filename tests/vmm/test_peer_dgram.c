/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_peer_dgram.c: lcvmm-peer (examples/vmm/backends/
 * peer_dgram.c), the built-in peer over QEMU's -netdev dgram transport.
 *
 * The test plays QEMU: it runs the tool as a child process with
 * `--listen 127.0.0.1:0 --remote 127.0.0.1:<our port>`, reads the port
 * the tool reports, sends it Ethernet frames one per UDP datagram and
 * checks the replies that come back the same way; at the end SIGTERM
 * makes the tool print its counters, which are checked too.
 *
 * Usage: test_peer_dgram PATH-TO-lcvmm-peer (Meson passes it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/harness.h"
#include "net.h"
#include "net_frames.h"

#define TIMEOUT_MS 2000

static const char *tool_path;
static uint8_t frame[2048];
static uint8_t reply[2048];

typedef struct tool {
    pid_t pid;
    int out;                    /* its stdout */
    int err;                    /* its stderr, or -1 if inherited */
} tool;

/* Run the tool with args (NULL-terminated, without argv[0]). It dies with
 * us (PR_SET_PDEATHSIG) so a failing test cannot leave it running. */
static void spawn(tool *t, const char *const *args, bool capture_err)
{
    int out[2], err[2] = { -1, -1 };
    const char *argv[8] = { tool_path };

    for (int i = 0; args[i]; i++) {
        ck_assert_int_lt(i + 1, 7);
        argv[i + 1] = args[i];
    }
    ck_assert_int_eq(pipe(out), 0);
    if (capture_err)
        ck_assert_int_eq(pipe(err), 0);
    t->pid = fork();
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(out[1], 1);
        if (capture_err)
            dup2(err[1], 2);
        execv(tool_path, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", tool_path, strerror(errno));
        _exit(127);
    }
    close(out[1]);
    t->out = out[0];
    t->err = -1;
    if (capture_err) {
        close(err[1]);
        t->err = err[0];
    }
}

/* Read from fd until EOF, a newline (if `line`) or the timeout. */
static size_t read_text(int fd, char *buf, size_t cap, bool line)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    size_t n = 0;

    while (n + 1 < cap && poll(&pfd, 1, TIMEOUT_MS) == 1) {
        ssize_t r = read(fd, buf + n, line ? 1 : cap - 1 - n);

        if (r <= 0)
            break;
        n += (size_t)r;
        if (line && buf[n - 1] == '\n')
            break;
    }
    buf[n] = 0;
    return n;
}

static int wait_exit(tool *t)
{
    int status;

    ck_assert_int_eq(waitpid(t->pid, &status, 0), t->pid);
    close(t->out);
    if (t->err >= 0)
        close(t->err);
    ck_assert_msg(WIFEXITED(status), "tool died with status %#x", status);
    return WEXITSTATUS(status);
}

/* Our "QEMU" socket on 127.0.0.1, any port. */
static int open_qemu_side(unsigned *port)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t len = sizeof sin;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(s, 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sin, sizeof sin), 0);
    ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sin, &len), 0);
    *port = ntohs(sin.sin_port);
    return s;
}

/* Start the tool replying to our port; returns the port it listens on. */
static unsigned start_peer(tool *t, unsigned our_port, const char *ip)
{
    char remote[32], line[256];
    const char *args[7] = { "--listen", "127.0.0.1:0", "--remote", remote };
    const char *p;
    unsigned port;

    snprintf(remote, sizeof remote, "127.0.0.1:%u", our_port);
    if (ip) {
        args[4] = "--ip";
        args[5] = ip;
    }
    spawn(t, args, false);
    read_text(t->out, line, sizeof line, true);
    p = strstr(line, "listening on 127.0.0.1:");
    ck_assert_msg(p && sscanf(p, "listening on 127.0.0.1:%u", &port) == 1,
                  "unexpected first line: '%s'", line);
    ck_assert_msg(strstr(line, remote) != NULL, "%s", line);
    return port;
}

/* SIGTERM; the counters it prints; it must exit 0. */
static void stop_peer(tool *t, char *stats, size_t cap)
{
    ck_assert_int_eq(kill(t->pid, SIGTERM), 0);
    read_text(t->out, stats, cap, false);
    ck_assert_int_eq(wait_exit(t), 0);
}

static void send_to(int s, unsigned port, const uint8_t *f, size_t len)
{
    struct sockaddr_in sin = { .sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port) };

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(sendto(s, f, len, 0, (struct sockaddr *)&sin, sizeof sin),
                     (ssize_t)len);
}

/* The next datagram (one frame) within the timeout, or 0. */
static size_t receive(int s, uint8_t *buf, size_t cap)
{
    struct pollfd pfd = { .fd = s, .events = POLLIN };
    ssize_t n;

    if (poll(&pfd, 1, TIMEOUT_MS) != 1)
        return 0;
    n = recv(s, buf, cap, 0);
    ck_assert_int_gt(n, 0);
    return (size_t)n;
}

static nf_addr from_peer(const uint8_t *ip)
{
    nf_addr a = { nf_peer_mac, nf_guest_mac, ip, nf_guest_ip };
    return a;
}

START_TEST(dgram_answers_arp_icmp_udp)
{
    static const uint8_t data[] = "echo me, odd length";
    nf_addr a = nf_to_peer(), r = from_peer(nf_peer_ip);
    unsigned our_port, port;
    char stats[512];
    tool t;
    size_t n;
    int s = open_qemu_side(&our_port);

    port = start_peer(&t, our_port, NULL);

    n = nf_arp_request(frame, &a, nf_peer_ip);
    send_to(s, port, frame, n);
    n = receive(s, reply, sizeof reply);
    ck_assert_msg(n > 0, "no ARP reply");
    nf_check_arp_reply(reply, n, nf_peer_mac, nf_peer_ip, nf_guest_mac,
                       nf_guest_ip);

    n = nf_icmp_echo(frame, &a, 0x1234, 9, data, sizeof data);
    send_to(s, port, frame, n);
    n = receive(s, reply, sizeof reply);
    ck_assert_msg(n > 0, "no echo reply");
    nf_check_echo_reply(reply, n, &r, 0x1234, 9, data, sizeof data);

    n = nf_udp(frame, &a, 5555, 7, data, sizeof data, true);
    send_to(s, port, frame, n);
    n = receive(s, reply, sizeof reply);
    ck_assert_msg(n > 0, "no UDP reply");
    nf_check_udp(reply, n, &r, 7, 5555, data, sizeof data);

    stop_peer(&t, stats, sizeof stats);
    ck_assert_msg(strstr(stats, "tx_frames=3 tx_dropped=0 arp_replies=1 "
                         "icmp_replies=1 udp_replies=1 ignored=0 "
                         "rx_frames=3 rx_dropped=0 send_errors=0\n"),
                  "stats: %s", stats);
    close(s);
}
END_TEST

/* Runts, giants, empty datagrams and junk are counted and do not stop
 * the tool from answering what follows. */
START_TEST(dgram_survives_hostile_datagrams)
{
    nf_addr a = nf_to_peer();
    unsigned our_port, port;
    char stats[512];
    tool t;
    size_t n;
    int s = open_qemu_side(&our_port);

    port = start_peer(&t, our_port, NULL);
    memset(frame, 0xee, sizeof frame);
    send_to(s, port, frame, 0);
    send_to(s, port, frame, 5);
    send_to(s, port, frame, 2000);
    memcpy(frame, nf_peer_mac, 6);
    frame[6] = 0x52;
    nf_put16(frame + 12, 0x0800);
    send_to(s, port, frame, 60);

    n = nf_arp_request(frame, &a, nf_peer_ip);
    send_to(s, port, frame, n);
    n = receive(s, reply, sizeof reply);
    ck_assert_msg(n > 0, "no ARP reply after the junk");
    nf_check_arp_reply(reply, n, nf_peer_mac, nf_peer_ip, nf_guest_mac,
                       nf_guest_ip);

    stop_peer(&t, stats, sizeof stats);
    ck_assert_msg(strstr(stats, "tx_frames=2 tx_dropped=3 arp_replies=1 "
                         "icmp_replies=0 udp_replies=0 ignored=1 "),
                  "stats: %s", stats);
    close(s);
}
END_TEST

START_TEST(dgram_other_address)
{
    static const uint8_t ip[4] = { 192, 168, 7, 1 };
    nf_addr a = nf_to_peer(), r = from_peer(ip);
    unsigned our_port, port;
    char stats[512];
    tool t;
    size_t n;
    int s = open_qemu_side(&our_port);

    port = start_peer(&t, our_port, "192.168.7.1");
    n = nf_arp_request(frame, &a, ip);
    send_to(s, port, frame, n);
    n = receive(s, reply, sizeof reply);
    ck_assert_msg(n > 0, "no ARP reply");
    nf_check_arp_reply(reply, n, nf_peer_mac, ip, nf_guest_mac, nf_guest_ip);

    a.dip = ip;
    n = nf_icmp_echo(frame, &a, 1, 2, NULL, 0);
    send_to(s, port, frame, n);
    n = receive(s, reply, sizeof reply);
    ck_assert_msg(n > 0, "no echo reply");
    nf_check_echo_reply(reply, n, &r, 1, 2, NULL, 0);
    stop_peer(&t, stats, sizeof stats);
    close(s);
}
END_TEST

/* Bad command lines: exit 2 and say why on stderr. */
static void expect_usage_error(const char *const *args, const char *msg)
{
    char text[1024];
    tool t;

    spawn(&t, args, true);
    read_text(t.err, text, sizeof text, false);
    ck_assert_int_eq(wait_exit(&t), 2);
    ck_assert_msg(strstr(text, msg) != NULL, "stderr: %s", text);
}

START_TEST(dgram_bad_command_lines)
{
    static const char *const none[] = { NULL };
    static const char *const no_remote[] = { "--listen", "127.0.0.1:0", NULL };
    static const char *const no_port[] = { "--listen", "127.0.0.1",
                                           "--remote", "127.0.0.1:1", NULL };
    static const char *const bad_ip[] = { "--listen", "127.0.0.1:0",
                                          "--remote", "127.0.0.1:1",
                                          "--ip", "10.0.2", NULL };
    static const char *const extra[] = { "--listen", "127.0.0.1:0",
                                         "--remote", "127.0.0.1:1", "x", NULL };
    static const char *const help[] = { "--help", NULL };
    char text[1024];
    tool t;

    expect_usage_error(none, "usage: lcvmm-peer --listen HOST:PORT");
    expect_usage_error(no_remote, "usage:");
    expect_usage_error(no_port, "--listen 127.0.0.1: expected HOST:PORT");
    expect_usage_error(bad_ip, "peer: invalid IPv4 address '10.0.2'");
    expect_usage_error(extra, "usage:");

    spawn(&t, help, false);
    read_text(t.out, text, sizeof text, false);
    ck_assert_int_eq(wait_exit(&t), 0);
    ck_assert_ptr_nonnull(strstr(text, "-netdev dgram"));
}
END_TEST

static Suite *dgram_suite(void)
{
    Suite *s = suite_create("peer_dgram");
    TCase *tc = tcase_create("peer_dgram");

    tcase_add_test(tc, dgram_answers_arp_icmp_udp);
    tcase_add_test(tc, dgram_survives_hostile_datagrams);
    tcase_add_test(tc, dgram_other_address);
    tcase_add_test(tc, dgram_bad_command_lines);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH-TO-lcvmm-peer\n", argv[0]);
        return 99;              /* Meson: hard error */
    }
    tool_path = argv[1];
    signal(SIGPIPE, SIG_IGN);
    return lc_test_run(dgram_suite());
}
