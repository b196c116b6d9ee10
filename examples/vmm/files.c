/* SPDX-License-Identifier: MIT */
/*
 * examples/vmm/files.c: the files a user names (a multiboot image,
 * --bios, --rom) read whole, with the checks a mistaken path needs: a
 * FIFO never blocks, a directory or device is named as such, a size out
 * of range says what it should have been.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm.h"

uint8_t *vmm_read_file(const char *path, size_t min, size_t max,
                       const char *what, bool pages, size_t *len,
                       char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    uint8_t *buf = NULL;
    struct stat st;
    size_t got = 0;
    int saved;

    if (fd < 0) {
        saved = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(saved));
        errno = saved;
        return NULL;
    }
    /* only a regular file has a size that means something and a read
     * that cannot block (a FIFO, a directory or /dev/zero has neither) */
    if (fstat(fd, &st)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path,
                 S_ISFIFO(st.st_mode) ? "a FIFO" :
                 S_ISDIR(st.st_mode) ? "a directory" :
                 S_ISCHR(st.st_mode) ? "a character device" :
                 S_ISBLK(st.st_mode) ? "a block device" :
                 S_ISSOCK(st.st_mode) ? "a socket" : "not a file");
    } else if (st.st_size <= 0) {
        snprintf(err, errlen, "%s: empty file; %s has %zu to %zu bytes",
                 path, what, min, max);
    } else if ((uint64_t)st.st_size < min || (uint64_t)st.st_size > max) {
        snprintf(err, errlen, "%s: %lld bytes; %s has %zu to %zu", path,
                 (long long)st.st_size, what, min, max);
    } else if (pages) {
        /* page-aligned: the back end maps it as guest memory */
        buf = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED) {
            buf = NULL;
            snprintf(err, errlen, "%s: out of memory", path);
        }
    } else if (!(buf = malloc((size_t)st.st_size))) {
        snprintf(err, errlen, "%s: out of memory", path);
    }
    if (buf) {
        while (got < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got != (size_t)st.st_size) {
            snprintf(err, errlen, "%s: read error (%zu of %lld bytes)", path,
                     got, (long long)st.st_size);
            vmm_free_file(buf, (size_t)st.st_size, pages);
            buf = NULL;
        } else {
            *len = got;
        }
    }
    close(fd);
    errno = 0;
    return buf;
}

void vmm_free_file(uint8_t *buf, size_t len, bool pages)
{
    if (!buf)
        return;
    if (pages)
        munmap(buf, len);
    else
        free(buf);
}
