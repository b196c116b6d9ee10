/* SPDX-License-Identifier: MIT */
/*
 * libcluster/names.c: status strings, version, mode and name helpers.
 * All tables are const and generated from the public X-macro lists.
 */
#include <cluster/cluster.h>

#define LC_STR_(x) #x
#define LC_XSTR_(x) LC_STR_(x)

const char *lc_strerror(lc_status status)
{
    switch (status) {
#define LC_STATUS_MSG_(name, value, msg) case name: return msg;
    LC_STATUS_LIST(LC_STATUS_MSG_)
#undef LC_STATUS_MSG_
    default:
        return "unknown status";
    }
}

const char *lc_status_name(lc_status status)
{
    switch (status) {
#define LC_STATUS_NAME_(name, value, msg) case name: return #name;
    LC_STATUS_LIST(LC_STATUS_NAME_)
#undef LC_STATUS_NAME_
    default:
        return "LC_ERR_UNKNOWN";
    }
}

uint32_t lc_version(void)
{
    return ((uint32_t)LC_VERSION_MAJOR << 16) |
           ((uint32_t)LC_VERSION_MINOR << 8) | LC_VERSION_PATCH;
}

const char *lc_version_string(void)
{
    return LC_XSTR_(LC_VERSION_MAJOR) "." LC_XSTR_(LC_VERSION_MINOR) "."
           LC_XSTR_(LC_VERSION_PATCH);
}

lc_cpu_mode lc_cpu_mode_of(const lc_cpu_state *s)
{
    const lc_segment *cs = &s->seg[LC_CS];

    if (!(s->cr0 & LC_CR0_PE))
        return LC_MODE_REAL;
    if (s->efer & LC_EFER_LMA) {
        if (cs->l)
            return LC_MODE_LONG64;
        return cs->db ? LC_MODE_COMPAT32 : LC_MODE_COMPAT16;
    }
    if (s->rflags & LC_RFLAGS_VM)
        return LC_MODE_VM86;
    return cs->db ? LC_MODE_PROT32 : LC_MODE_PROT16;
}

static const char *const mode_names[LC_MODE_COUNT_] = {
    [LC_MODE_REAL] = "real",       [LC_MODE_VM86] = "vm86",
    [LC_MODE_PROT16] = "prot16",   [LC_MODE_PROT32] = "prot32",
    [LC_MODE_COMPAT16] = "compat16", [LC_MODE_COMPAT32] = "compat32",
    [LC_MODE_LONG64] = "long64",
};

const char *lc_cpu_mode_name(lc_cpu_mode mode)
{
    if ((unsigned)mode >= LC_MODE_COUNT_)
        return "invalid";
    return mode_names[mode];
}

unsigned lc_cpu_mode_bits(lc_cpu_mode mode)
{
    switch (mode) {
    case LC_MODE_PROT32:
    case LC_MODE_COMPAT32:
        return 32;
    case LC_MODE_LONG64:
        return 64;
    default:
        return 16;
    }
}

static const char *const exit_kind_names[LC_EXIT_KIND_COUNT_] = {
    [LC_EXIT_IO] = "io",          [LC_EXIT_MMIO] = "mmio",
    [LC_EXIT_TRACED] = "traced",  [LC_EXIT_CPUID] = "cpuid",
    [LC_EXIT_HLT] = "hlt",        [LC_EXIT_DR_ACCESS] = "dr_access",
    [LC_EXIT_RDMSR] = "rdmsr",    [LC_EXIT_WRMSR] = "wrmsr",
    [LC_EXIT_VMREAD] = "vmread",  [LC_EXIT_VMWRITE] = "vmwrite",
    [LC_EXIT_VMCALL] = "vmcall",
};

const char *lc_exit_kind_name(lc_exit_kind kind)
{
    if ((unsigned)kind >= LC_EXIT_KIND_COUNT_ || !exit_kind_names[kind])
        return "invalid";
    return exit_kind_names[kind];
}

static const char *const stop_names[LC_STOP_REASON_COUNT_] = {
    [LC_STOP_NONE] = "none",           [LC_STOP_END] = "end",
    [LC_STOP_TERMINATOR] = "terminator", [LC_STOP_FAULT] = "fault",
    [LC_STOP_IRQ] = "irq",             [LC_STOP_BUDGET] = "budget",
    [LC_STOP_BACKEDGES] = "backedges", [LC_STOP_SMC] = "smc",
    [LC_STOP_COHERENCY] = "coherency", [LC_STOP_CALLBACK] = "callback",
    [LC_STOP_HALT] = "halt",           [LC_STOP_UNSUPPORTED] = "unsupported",
};

const char *lc_stop_reason_name(lc_stop_reason reason)
{
    if ((unsigned)reason >= LC_STOP_REASON_COUNT_)
        return "invalid";
    return stop_names[reason];
}
