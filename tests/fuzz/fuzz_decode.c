/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_decode.c: arbitrary bytes to the decoder and formatter.
 * First byte picks the mode; the rest is code, given with its exact
 * length so any overread is an ASan report.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lc_insn_info info;
    char text[128];
    uint64_t t;

    if (size < 1)
        return 0;
    lc_cpu_mode mode = (lc_cpu_mode)(data[0] % LC_MODE_COUNT_);
    const uint8_t *code = data + 1;
    size_t n = size - 1;

    /* Walk the buffer as the translator does: instruction after
     * instruction until one fails. */
    for (size_t off = 0; off < n;) {
        uint8_t *exact = malloc(n - off);
        if (!exact)
            return 0;
        memcpy(exact, code + off, n - off);
        lc_status st = lc_decode(mode, exact, n - off, &info);
        free(exact);
        if (st != LC_OK)
            break;
        if (info.length == 0 || info.length > n - off ||
            info.length > LC_INSN_MAX_LEN || info.exit_class >= LC_CLASS_COUNT_)
            abort();
        lc_insn_format(&info, 0x1000 + off, text, sizeof text);
        lc_insn_branch_target(&info, 0xfff0 + off, &t);
        off += info.length;
    }
    return 0;
}
