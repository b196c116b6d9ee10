/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/fault_preload.c: a test hook loaded with LD_PRELOAD into
 * lcvmm to make KVM refuse guest memory (mem_faults.py).
 *
 *   LCFAULT_MEMSLOT=N[+][:ERRNO]
 *
 * fails the N-th KVM_SET_USER_MEMORY_REGION ioctl of the process (1 is
 * the first; with '+' that one and every later one) with ERRNO (default
 * ENOMEM), as the kernel does when it cannot pin or account the memory
 * (ENOMEM), the slot overlaps another (EEXIST) or the region is malformed
 * (EINVAL). Every other ioctl goes to the C library unchanged. The hook
 * knows nothing of lcvmm: what the VMM does with the error is the test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef int ioctl_fn(int, unsigned long, ...);

static atomic_ulong calls;

static bool should_fail(int *err)
{
    const char *spec = getenv("LCFAULT_MEMSLOT");
    unsigned long n, call;
    char *end;

    if (!spec || !*spec)
        return false;
    n = strtoul(spec, &end, 10);
    call = atomic_fetch_add(&calls, 1) + 1;
    *err = ENOMEM;
    if (*end == '+') {
        end++;
        if (call < n)
            return false;
    } else if (call != n) {
        return false;
    }
    if (*end == ':')
        *err = atoi(end + 1);
    return true;
}

int ioctl(int fd, unsigned long req, ...)
{
    static ioctl_fn *next;
    va_list ap;
    void *arg;
    int err;

    va_start(ap, req);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (req == KVM_SET_USER_MEMORY_REGION && should_fail(&err)) {
        errno = err;
        return -1;
    }
    if (!next)
        next = (ioctl_fn *)dlsym(RTLD_NEXT, "ioctl");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    return next(fd, req, arg);
}
