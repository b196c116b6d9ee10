/* SPDX-License-Identifier: MIT */
/*
 * A DHCP server for the one guest on the peer's segment (RFC 2131 with
 * the options of RFC 2132): a DHCPDISCOVER gets a DHCPOFFER of the
 * client address, a DHCPREQUEST for it a DHCPACK (anything else: no
 * answer, the client retries or gives up). The reply carries the server
 * identifier, lease time, subnet mask, router, the boot file (the BOOTP
 * `file` field and option 67) with the peer as next server (`siaddr`), and
 * iPXE's encapsulated option 175.176 "no ProxyDHCP": without it iPXE
 * waits seconds for a ProxyDHCP offer that will never come (iPXE
 * src/net/udp/dhcp.c, the discovery state's exit conditions).
 */
#include <string.h>

#include "boot_srv.h"

#define BOOTP_LEN     236       /* fixed part, before the magic cookie */
#define OP_REQUEST    1
#define OP_REPLY      2
#define OPT_PAD       0
#define OPT_MASK      1
#define OPT_ROUTER    3
#define OPT_REQ_IP    50
#define OPT_LEASE     51
#define OPT_OVERLOAD  52
#define OPT_TYPE      53
#define OPT_SERVER_ID 54
#define OPT_BOOTFILE  67
#define OPT_IPXE      175       /* iPXE's encapsulated options */
#define IPXE_NO_PXEDHCP 176
#define OPT_END       255
#define DISCOVER 1
#define OFFER    2
#define REQUEST  3
#define ACK      5

static const uint8_t cookie[4] = { 99, 130, 83, 99 };

/* Find option `tag` in the options area [p, end); NULL if absent or its
 * length runs past the end. */
static const uint8_t *find_opt(const uint8_t *p, const uint8_t *end,
                               uint8_t tag, uint8_t *len)
{
    while (p < end) {
        if (*p == OPT_PAD) {
            p++;
            continue;
        }
        if (*p == OPT_END || end - p < 2 || p[1] > end - p - 2)
            return NULL;
        if (*p == tag) {
            *len = p[1];
            return p + 2;
        }
        p += 2 + p[1];
    }
    return NULL;
}

static uint8_t *put_opt(uint8_t *o, uint8_t tag, const void *v, uint8_t n)
{
    o[0] = tag;
    o[1] = n;
    memcpy(o + 2, v, n);
    return o + 2 + n;
}

size_t dhcp_reply(const dhcp_config *c, const uint8_t *req, size_t len,
                  uint8_t *out)
{
    const uint8_t *opts = req + BOOTP_LEN + 4, *end = req + len, *v;
    uint8_t n, type, reply;
    uint8_t *o;
    static const uint8_t lease[4] = { 0, 1, 0x51, 0x80 };   /* 1 day */
    static const uint8_t ipxe[3] = { IPXE_NO_PXEDHCP, 1, 1 };
    size_t flen = strlen(c->bootfile);

    if (len < BOOTP_LEN + 4 || len > 1500 || req[0] != OP_REQUEST ||
        req[1] != 1 || req[2] != 6 || memcmp(req + BOOTP_LEN, cookie, 4))
        return 0;               /* not a BOOTREQUEST over Ethernet */
    if (!(v = find_opt(opts, end, OPT_TYPE, &n)) || n != 1)
        return 0;
    type = v[0];
    if (type == DISCOVER) {
        reply = OFFER;
    } else if (type == REQUEST) {
        /* the address asked for (option 50, or ciaddr when renewing) must
         * be the one we lease; a REQUEST naming another server is for
         * that server */
        const uint8_t *ip = find_opt(opts, end, OPT_REQ_IP, &n);
        const uint8_t *sid;
        uint8_t sn;
        if (ip && n == 4 ? memcmp(ip, c->client, 4) :
                           memcmp(req + 12, c->client, 4))
            return 0;
        sid = find_opt(opts, end, OPT_SERVER_ID, &sn);
        if (sid && (sn != 4 || memcmp(sid, c->server, 4)))
            return 0;
        reply = ACK;
    } else {
        return 0;               /* DECLINE, RELEASE, INFORM: no answer */
    }
    memset(out, 0, DHCP_REPLY_MAX);
    out[0] = OP_REPLY;
    out[1] = 1;
    out[2] = 6;
    memcpy(out + 4, req + 4, 4);        /* xid */
    memcpy(out + 10, req + 10, 2);      /* flags (broadcast bit) */
    memcpy(out + 16, c->client, 4);     /* yiaddr */
    memcpy(out + 20, c->server, 4);     /* siaddr: the next server */
    memcpy(out + 28, req + 28, 16);     /* chaddr */
    memcpy(out + 108, c->bootfile, flen);   /* file (128 bytes) */
    memcpy(out + BOOTP_LEN, cookie, 4);
    o = out + BOOTP_LEN + 4;
    o = put_opt(o, OPT_TYPE, &reply, 1);
    o = put_opt(o, OPT_SERVER_ID, c->server, 4);
    o = put_opt(o, OPT_LEASE, lease, 4);
    o = put_opt(o, OPT_MASK, c->netmask, 4);
    o = put_opt(o, OPT_ROUTER, c->server, 4);
    if (flen)
        o = put_opt(o, OPT_BOOTFILE, c->bootfile, (uint8_t)flen);
    o = put_opt(o, OPT_IPXE, ipxe, sizeof ipxe);
    *o++ = OPT_END;
    /* BOOTP's minimum message (RFC 1542 2.1: 300 bytes) */
    return (size_t)(o - out) < 300 ? 300 : (size_t)(o - out);
}
