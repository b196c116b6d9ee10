/* examples/guests/lib/util.c: memory and string helpers, checksums, the
 * PRNG and the command line. */
#include "guest.h"

/* GCC may emit calls to memcpy/memset/memmove/memcmp even when
 * freestanding; these are those. String instructions keep them short
 * (one emulated instruction per iteration at CPL 0 at worst). */
void *memcpy(void *dst, const void *src, size_t n)
{
    void *d = dst;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    void *d = dst;
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d <= s || d >= s + n)
        return memcpy(dst, src, n);
    while (n--)
        d[n] = s[n];
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
    const uint8_t *p = data;
    /* Big-endian 16-bit words; an odd last byte is padded with zero. */
    while (len > 1) {
        sum += (uint32_t)p[0] << 8 | p[1];
        p += 2;
        len -= 2;
        if (sum & 0x80000000u)
            sum = (sum & 0xffff) + (sum >> 16);
    }
    if (len)
        sum += (uint32_t)p[0] << 8;
    return sum;
}

uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

uint32_t fnv1a(uint32_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x01000193u;
    return h;
}

void prng_seed(struct prng *p, uint32_t seed)
{
    p->s = seed ? seed : 0x9e3779b9u;
}

uint32_t prng_next(struct prng *p)
{
    uint32_t x = p->s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return p->s = x;
}

uint32_t prng_range(struct prng *p, uint32_t lo, uint32_t hi)
{
    return lo + prng_next(p) % (hi - lo + 1);
}

/* ---- command line ---- */

/* A decimal or 0x-hex number ending at a space or NUL; false otherwise. */
static bool parse_number(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    bool any = false;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        for (s += 2; *s && *s != ' '; s++, any = true) {
            char c = *s;
            uint32_t d = c >= '0' && c <= '9' ? (uint32_t)(c - '0')
                       : c >= 'a' && c <= 'f' ? (uint32_t)(c - 'a' + 10)
                       : c >= 'A' && c <= 'F' ? (uint32_t)(c - 'A' + 10)
                                              : 16;
            if (d > 15 || v >> 28)
                return false;
            v = v << 4 | d;
        }
    } else {
        for (; *s && *s != ' '; s++, any = true) {
            if (*s < '0' || *s > '9' || v > 429496728u)
                return false;
            v = v * 10 + (uint32_t)(*s - '0');
        }
    }
    *out = v;
    return any;
}

bool cmdline_get(const char *cmdline, const char *key, uint32_t *value)
{
    if (!cmdline)
        return false;
    size_t klen = strlen(key);
    const char *p = cmdline;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!memcmp(p, key, klen) && p[klen] == '=')
            return parse_number(p + klen + 1, value);
        while (*p && *p != ' ')
            p++;
    }
    return false;
}

bool args_parse(const char *cmdline, struct guest_args *a)
{
    static const char *const keys[] = {"n", "cpl", "irq", "size", "seed",
                                       "burst", "linux", "batch", "cpus"};
    uint32_t *const vals[] = {&a->n, &a->cpl, &a->irq, &a->size, &a->seed,
                              &a->burst, &a->linux_seq, &a->batch, &a->cpus};
    bool ok = true;

    a->n = guest_info.default_n;
    a->cpl = 0;
    a->irq = 1;
    a->size = 1000;
    a->seed = 0x2545f491u;
    a->burst = 1;
    a->linux_seq = 0;
    a->batch = 0;
    a->cpus = 1;
    if (!cmdline)
        return true;
    /* Each word: a known key=number, or reported and ignored. The
     * Multiboot command line of some loaders starts with the image
     * path; a word without '=' is skipped quietly. */
    for (const char *p = cmdline; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *w = p;
        while (*p && *p != ' ' && *p != '=')
            p++;
        size_t len = (size_t)(p - w);
        if (*p != '=') {
            while (*p && *p != ' ')
                p++;
            continue;
        }
        p++;
        bool known = false;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            if (strlen(keys[i]) == len && !memcmp(w, keys[i], len)) {
                known = true;
                if (!parse_number(p, vals[i])) {
                    printf("cmdline: bad number for %s\n", keys[i]);
                    ok = false;
                }
            }
        }
        if (!known) {
            char name[24];
            size_t n = len < sizeof name - 1 ? len : sizeof name - 1;
            memcpy(name, w, n);
            name[n] = 0;
            printf("cmdline: ignoring unknown key '%s'\n", name);
        }
        while (*p && *p != ' ')
            p++;
    }
    if (a->cpl != 0 && a->cpl != 3) {
        printf("cmdline: cpl must be 0 or 3\n");
        ok = false;
    }
    if (a->irq > 1) {
        printf("cmdline: irq must be 0 or 1\n");
        ok = false;
    }
    return ok;
}
