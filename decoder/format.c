/* SPDX-License-Identifier: MIT */
/*
 * decoder/format.c: Intel-syntax text for logs, tests and the demo.
 * Not on any hot path: it decodes again with Zydis.
 */
#include <string.h>

#include <Zydis/Zydis.h>

#include "insn.h"

lc_status lcd_format(const lc_insn_info *info, uint64_t rip, char *buf,
                     size_t size)
{
    ZydisDecoder dec;
    ZydisFormatter fmt;
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand zo[ZYDIS_MAX_OPERAND_COUNT];
    ZydisMachineMode zm;
    ZydisStackWidth sw;
    ZyanStatus st;

    if (!info || !buf || size == 0)
        return LC_ERR_INVAL;
    buf[0] = '\0';
    if (info->length == 0 || info->length > LC_INSN_MAX_LEN ||
        (unsigned)info->mode >= LC_MODE_COUNT_)
        return LC_ERR_INVAL;

    switch (info->mode) {
    case LC_MODE_REAL:
    case LC_MODE_VM86:
        zm = ZYDIS_MACHINE_MODE_REAL_16; sw = ZYDIS_STACK_WIDTH_16; break;
    case LC_MODE_PROT16:
        zm = ZYDIS_MACHINE_MODE_LEGACY_16; sw = ZYDIS_STACK_WIDTH_16; break;
    case LC_MODE_PROT32:
        zm = ZYDIS_MACHINE_MODE_LEGACY_32; sw = ZYDIS_STACK_WIDTH_32; break;
    case LC_MODE_COMPAT16:
        zm = ZYDIS_MACHINE_MODE_LONG_COMPAT_16; sw = ZYDIS_STACK_WIDTH_16; break;
    case LC_MODE_COMPAT32:
        zm = ZYDIS_MACHINE_MODE_LONG_COMPAT_32; sw = ZYDIS_STACK_WIDTH_32; break;
    default:
        zm = ZYDIS_MACHINE_MODE_LONG_64; sw = ZYDIS_STACK_WIDTH_64; break;
    }
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, zm, sw)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, info->bytes, info->length,
                                             &zi, zo)) ||
        !ZYAN_SUCCESS(ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL)))
        return LC_ERR_DECODE_INVALID;
    st = ZydisFormatterFormatInstruction(&fmt, &zi, zo,
                                         zi.operand_count_visible, buf, size,
                                         rip, NULL);
    if (!ZYAN_SUCCESS(st)) {
        buf[size - 1] = '\0';
        return LC_ERR_RANGE;
    }
    return LC_OK;
}
