/* SPDX-License-Identifier: MIT */
/*
 * Private helpers shared by the network backends (not part of net.h):
 * the Internet checksum, big-endian field access and IPv4 address parsing.
 */
#ifndef VMM_NET_UTIL_H
#define VMM_NET_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The Internet checksum (RFC 791 section 3.1, RFC 1071): the 16-bit ones'
 * complement of the ones' complement sum of the data taken as big-endian
 * 16-bit words, an odd last byte padded with zero.
 *
 * net_csum_add() accumulates into a 32-bit partial sum so a checksum can
 * span several pieces (the UDP pseudo-header, then the datagram); every
 * piece but the last must have an even length. net_csum_fold() folds the
 * carries and complements. A block that already holds its checksum sums
 * to 0xffff, so net_csum_fold() of it is 0: that is how checksums are
 * verified.
 */
uint32_t net_csum_add(uint32_t sum, const uint8_t *p, size_t len);
uint16_t net_csum_fold(uint32_t sum);

static inline uint16_t net_csum(const uint8_t *p, size_t len)
{
    return net_csum_fold(net_csum_add(0, p, len));
}

static inline uint16_t net_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void net_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/*
 * A dotted-quad IPv4 address ("10.0.2.2", exactly four decimal parts) into
 * out[4] in network order. False if it is not one.
 */
bool net_parse_ipv4(const char *s, uint8_t out[4]);

/*
 * "HOST:PORT" or "[V6HOST]:PORT" (numeric port) into a socket address of
 * `family` (AF_UNSPEC: either). 0, or -1 with the reason in err. Used by
 * the dgram backend and by lcvmm-peer (dgram.c).
 */
int net_parse_endpoint(const char *s, int family,
                       struct sockaddr_storage *addr, socklen_t *len,
                       char *err, size_t errlen);

/*
 * A backend over `fd`, non-blocking, one frame per read() and write()
 * (fd.c): TAP and dgram open their descriptor and hand it here, under
 * their `name` (static). It owns fd from here, closed on failure too.
 */
typedef struct net_backend net_backend;
net_backend *net_fd_create(const char *name, int fd, char *err, size_t errlen);

/* printf into err (errlen bytes, always terminated); no-op if err is NULL
 * or errlen is 0, so callers may pass no buffer. */
void net_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* VMM_NET_UTIL_H */
