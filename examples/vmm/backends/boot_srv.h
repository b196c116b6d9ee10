/* SPDX-License-Identifier: MIT */
/*
 * The network-boot services of the built-in peer (peer.c): a DHCP server
 * for one client (dhcp.c) with the IPv6 router answer iPXE waits for, and
 * a TFTP server reading files from one directory (tftp.c). Pure message
 * logic: the peer parses and builds the Ethernet, IP and UDP headers.
 * Every request is hostile input: lengths are checked before each field
 * is read, and nothing outside the served directory is ever opened.
 */
#ifndef VMM_BOOT_SRV_H
#define VMM_BOOT_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- DHCP (RFC 2131, options RFC 2132) ------------------------------- */

#define DHCP_SERVER_PORT 67
#define DHCP_CLIENT_PORT 68
#define DHCP_FILE_MAX 127

typedef struct dhcp_config {
    uint8_t server[4];          /* the peer: server id, router, next server */
    uint8_t client[4];          /* the one address it leases */
    uint8_t netmask[4];
    char bootfile[DHCP_FILE_MAX + 1];   /* "" for none */
} dhcp_config;

/* The reply (the UDP payload) to a BOOTREQUEST `req` of `len` bytes in
 * `out` (at least DHCP_REPLY_MAX bytes); its length, or 0 if there is
 * none (not a DISCOVER or a REQUEST for our address, malformed). */
#define DHCP_REPLY_MAX 576
size_t dhcp_reply(const dhcp_config *c, const uint8_t *req, size_t len,
                  uint8_t *out);

/* ---- TFTP (RFC 1350; blksize RFC 2348, tsize RFC 2349) --------------- */

#define TFTP_PORT 69
#define TFTP_BLKSIZE_MAX 1468   /* 1500-byte MTU - IP - UDP - 4 */
#define TFTP_REPLY_MAX (4 + TFTP_BLKSIZE_MAX)

typedef struct tftp_server tftp_server;
/* Serve regular files from `dir`; NULL with the reason in err. */
tftp_server *tftp_create(const char *dir, char *err, size_t errlen);
void tftp_destroy(tftp_server *t);
/* A datagram from the client's `port` to the peer's `to_port` (69 for a
 * request, the transfer's own port after that). The reply payload goes
 * to `out` (TFTP_REPLY_MAX bytes), sent from *from_port; returns its
 * length, 0 for no reply. */
size_t tftp_input(tftp_server *t, uint16_t port, uint16_t to_port,
                  const uint8_t *msg, size_t len, uint8_t *out,
                  uint16_t *from_port);
/* Counters: requests, files served whole, blocks sent, errors sent,
 * blocks sent again (a repeated ACK, late: the block was lost). */
typedef struct tftp_stats {
    uint64_t requests, files, blocks, errors, resent;
} tftp_stats;
const tftp_stats *tftp_get_stats(const tftp_server *t);

#endif /* VMM_BOOT_SRV_H */
