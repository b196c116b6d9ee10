/* SPDX-License-Identifier: MIT */
/*
 * A TFTP server (RFC 1350) for the peer: read requests only, octet mode
 * (netascii is refused), one transfer at a time, with the block-size
 * (RFC 2348) and transfer-size (RFC 2349) options answered in an OACK
 * (RFC 2347). Each transfer gets a port of its own (the server's TID);
 * the client's ACK of block n brings block n + 1; a duplicate ACK is
 * ignored (RFC 1123 4.2.3.1: answering it is the Sorcerer's Apprentice
 * bug) unless it comes TFTP_RESEND_MS or more after block n + 1 went
 * out: then that block was lost (a NIC with no receive buffer free drops
 * it) and the client is repeating its ACK on its own timeout, so block
 * n + 1 goes again. The peer has no timer of its own, so the client's
 * retransmission is the clock (RFC 1350 leaves the timeout to both
 * sides); a delayed duplicate, sooner, still gets nothing. The block after the file's last full block is shorter than the
 * block size (possibly empty) and ends the transfer.
 *
 * File names are the client's: only names of [A-Za-z0-9._-] components
 * separated by '/', no component starting with '.', are looked up, below
 * the served directory, and only regular files are served.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "boot_srv.h"

#define OP_RRQ   1
#define OP_WRQ   2
#define OP_DATA  3
#define OP_ACK   4
#define OP_ERROR 5
#define OP_OACK  6
#define ERR_UNDEF    0
#define ERR_NOTFOUND 1
#define ERR_ACCESS   2
#define ERR_ILLEGAL  4
#define ERR_TID      5
#define FILE_MAX (64u << 20)
#define TID_FIRST 49152
#define TFTP_RESEND_MS 500

struct tftp_server {
    int dirfd;
    /* the transfer in progress */
    bool active;
    uint16_t client_port, tid, next_tid;
    uint8_t *data;
    size_t size;
    unsigned blksize;
    uint32_t sent;              /* last data block sent; 0: the OACK */
    uint64_t sent_ms;           /* when it went out (CLOCK_MONOTONIC) */
    tftp_stats stats;
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

tftp_server *tftp_create(const char *dir, char *err, size_t errlen)
{
    tftp_server *t = calloc(1, sizeof *t);

    if (!t) {
        snprintf(err, errlen, "tftp: out of memory");
        return NULL;
    }
    t->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t->dirfd < 0) {
        snprintf(err, errlen, "tftp: %s: %s", dir, strerror(errno));
        free(t);
        return NULL;
    }
    t->next_tid = TID_FIRST;
    return t;
}

static void end_transfer(tftp_server *t)
{
    free(t->data);
    t->data = NULL;
    t->active = false;
}

void tftp_destroy(tftp_server *t)
{
    if (!t)
        return;
    end_transfer(t);
    close(t->dirfd);
    free(t);
}

const tftp_stats *tftp_get_stats(const tftp_server *t)
{
    return &t->stats;
}

static size_t error_msg(tftp_server *t, uint8_t *out, uint16_t code,
                        const char *msg)
{
    size_t n = strlen(msg);
    out[0] = 0; out[1] = OP_ERROR;
    out[2] = (uint8_t)(code >> 8); out[3] = (uint8_t)code;
    memcpy(out + 4, msg, n + 1);
    t->stats.errors++;
    return 4 + n + 1;
}

static bool name_ok(const char *s)
{
    bool start = true;

    if (!*s || strlen(s) > 255)
        return false;
    for (; *s; s++) {
        if (*s == '/') {
            if (start)
                return false;       /* leading '/' or "//" */
            start = true;
            continue;
        }
        if (start && *s == '.')
            return false;           /* ".", "..", hidden files */
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' ||
              *s == '-'))
            return false;
        start = false;
    }
    return !start;
}

/* Read the whole file (O_NOFOLLOW on the last component, regular only). */
static int load(tftp_server *t, const char *name)
{
    struct stat st;
    int fd = openat(t->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > FILE_MAX ||
        !(t->data = malloc(st.st_size ? (size_t)st.st_size : 1))) {
        close(fd);
        return -1;
    }
    n = read(fd, t->data, (size_t)st.st_size);
    close(fd);
    if (n != st.st_size) {
        end_transfer(t);
        return -1;
    }
    t->size = (size_t)st.st_size;
    return 0;
}

static size_t data_block(tftp_server *t, uint32_t block, uint8_t *out)
{
    size_t off = (size_t)(block - 1) * t->blksize, n = 0;

    if (off < t->size)
        n = t->size - off < t->blksize ? t->size - off : t->blksize;
    out[0] = 0; out[1] = OP_DATA;
    out[2] = (uint8_t)(block >> 8); out[3] = (uint8_t)block;
    memcpy(out + 4, t->data + (off < t->size ? off : 0), n);
    t->stats.blocks++;
    return 4 + n;
}

/* The strings of a request: filename, mode, then option/value pairs. */
static size_t rrq(tftp_server *t, uint16_t port, const uint8_t *msg,
                  size_t len, uint8_t *out, uint16_t *from)
{
    const char *s[16];
    unsigned ns = 0;
    size_t i = 2;
    bool want_tsize = false;
    unsigned blksize = 0;
    uint8_t *o;

    t->stats.requests++;
    while (i < len && ns < 16) {
        const uint8_t *z = memchr(msg + i, 0, len - i);
        if (!z)
            return error_msg(t, out, ERR_ILLEGAL, "unterminated string");
        s[ns++] = (const char *)msg + i;
        i = (size_t)(z - msg) + 1;
    }
    if (ns < 2)
        return error_msg(t, out, ERR_ILLEGAL, "no file name or mode");
    if (strcasecmp(s[1], "octet"))
        return error_msg(t, out, ERR_ILLEGAL, "only octet mode");
    for (unsigned k = 2; k + 1 < ns; k += 2) {
        if (!strcasecmp(s[k], "blksize")) {
            char *e;
            unsigned long v = strtoul(s[k + 1], &e, 10);
            if (*s[k + 1] && !*e && v >= 8)     /* RFC 2348: 8..65464 */
                blksize = v > TFTP_BLKSIZE_MAX ? TFTP_BLKSIZE_MAX
                                               : (unsigned)v;
        } else if (!strcasecmp(s[k], "tsize")) {
            want_tsize = true;
        }                       /* other options: not acknowledged */
    }
    if (t->active)
        end_transfer(t);        /* a new request replaces the old one */
    if (!name_ok(s[0]) || load(t, s[0]))
        return error_msg(t, out, ERR_NOTFOUND, "file not found");
    t->active = true;
    t->client_port = port;
    t->tid = t->next_tid;
    t->next_tid = (uint16_t)(t->next_tid == 65535 ? TID_FIRST
                                                  : t->next_tid + 1);
    t->blksize = blksize ? blksize : 512;
    t->sent = 0;
    *from = t->tid;
    if (!blksize && !want_tsize) {
        t->sent = 1;
        t->sent_ms = now_ms();
        return data_block(t, 1, out);   /* no options: data at once */
    }   /* no options: data at once */
    out[0] = 0; out[1] = OP_OACK;
    o = out + 2;
    if (blksize)
        o += sprintf((char *)o, "blksize%c%u", 0, blksize) + 1;
    if (want_tsize)
        o += sprintf((char *)o, "tsize%c%zu", 0, t->size) + 1;
    return (size_t)(o - out);
}

size_t tftp_input(tftp_server *t, uint16_t port, uint16_t to_port,
                  const uint8_t *msg, size_t len, uint8_t *out,
                  uint16_t *from_port)
{
    uint16_t op;
    uint32_t block;

    *from_port = to_port;
    if (len < 2)
        return 0;
    op = (uint16_t)(msg[0] << 8 | msg[1]);
    if (to_port == TFTP_PORT) {
        if (op == OP_RRQ)
            return rrq(t, port, msg, len, out, from_port);
        if (op == OP_WRQ)
            return error_msg(t, out, ERR_ACCESS, "read only");
        return 0;
    }
    if (!t->active || to_port != t->tid)
        return 0;
    if (port != t->client_port)     /* RFC 1350 section 4: wrong TID */
        return error_msg(t, out, ERR_TID, "unknown transfer ID");
    if (op == OP_ERROR) {
        end_transfer(t);
        return 0;
    }
    if (op != OP_ACK || len < 4)
        return 0;
    /* the ACK must name the block sent last (16-bit numbers wrap for
     * files over 32 MiB at 512-byte blocks; 0 acknowledges the OACK) */
    block = (uint32_t)(msg[2] << 8 | msg[3]);
    if (t->sent && block == ((t->sent - 1) & 0xffff) &&
        now_ms() - t->sent_ms >= TFTP_RESEND_MS) {
        t->stats.resent++;      /* block `sent` was lost: again */
        t->sent_ms = now_ms();
        return data_block(t, t->sent, out);
    }
    if (block != (t->sent & 0xffff))
        return 0;               /* duplicate or stray: ignored */
    if (t->sent && (size_t)t->sent * t->blksize > t->size) {
        t->stats.files++;       /* the short block arrived: done */
        end_transfer(t);
        return 0;
    }
    t->sent++;
    t->sent_ms = now_ms();
    return data_block(t, t->sent, out);
}
