/* SPDX-License-Identifier: MIT */
/*
 * examples/paper/paper_examples.c: every code example of Agesen et al.
 * (Software Techniques for Avoiding Hardware Virtualization Exits, USENIX
 * ATC 2012, sections 3, 4, 5, 6 and 8), encoded.
 *
 * The paper prints operands in Intel order (destination first) with AT&T
 * register spelling: "MOV %dx,$0xcfc" is mov dx,0xcfc and "MOV
 * 4(%ecx),%esi" is mov [ecx+4],esi. The bytes below were produced with
 * GNU as from that reading. `paper_exits` is the paper's asterisk.
 * Figure 2 (Windows ME) is not reproduced in the paper's text, so it is
 * not here.
 */
#include <string.h>

#include "paper_examples.h"

#define I(text, op, cls, star, ...) \
    { text, sizeof((const uint8_t[]){ __VA_ARGS__ }), { __VA_ARGS__ }, \
      LC_OP_##op, LC_CLASS_##cls, star }
#define N(arr) (sizeof(arr) / sizeof((arr)[0]))

/* Section 3: a Linux PAE guest writes a 64-bit PTE as two 32-bit stores. */
static const paper_insn pae_pair[] = {
    I("MOV 4(%ecx),%esi  ; top half of PTE", MOV, WEAK, 1, 0x89, 0x71, 0x04),
    I("MOV (%ecx),%ebx   ; bottom half",     MOV, WEAK, 1, 0x89, 0x19),
};

/* Section 4: 16-bit BIOS, PCI configuration access. */
static const paper_insn bios[] = {
    I("OUT %eax,%dx",   OUT,  STRONG,     1, 0x66, 0xef),
    I("OUT $0xed,%al",  OUT,  STRONG,     1, 0xe6, 0xed),
    I("MOV %dx,$0xcfc", MOV,  GAP_FILLER, 0, 0xba, 0xfc, 0x0c),
    I("MOV %al,%cl",    MOV,  GAP_FILLER, 0, 0x88, 0xc8),
    I("AND %al,$0x3",   AND,  GAP_FILLER, 0, 0x24, 0x03),
    I("ADD %dl,%al",    ADD,  GAP_FILLER, 0, 0x00, 0xc2),
    I("XCHG %ecx,%eax", XCHG, GAP_FILLER, 0, 0x66, 0x91),
    I("XCHG %ah,%al",   XCHG, GAP_FILLER, 0, 0x86, 0xc4),
    I("IN %al,%dx",     IN,   STRONG,     1, 0xec),
    I("XCHG %al,%ah",   XCHG, GAP_FILLER, 0, 0x86, 0xe0),
    I("XOR %cl,%cl",    XOR,  GAP_FILLER, 0, 0x30, 0xc9),
    I("JMP %bx",        JMP,  GAP_FILLER, 0, 0xff, 0xe3),
};

/* Section 4: Linux's OUT 0x80 chipset-timing workaround. */
static const paper_insn out80[] = {
    I("IN %al,%dx",    IN,  STRONG,     1, 0xec),
    I("OUT $0x80,%al", OUT, STRONG,     1, 0xe6, 0x80),
    I("MOV %al,%cl",   MOV, GAP_FILLER, 0, 0x88, 0xc8),
    I("MOV %dl,$0xc0", MOV, GAP_FILLER, 0, 0xb2, 0xc0),
    I("OUT %al,%dx",   OUT, STRONG,     1, 0xee),
    I("OUT $0x80,%al", OUT, STRONG,     1, 0xe6, 0x80),
    I("OUT %al,%dx",   OUT, STRONG,     1, 0xee),
    I("OUT $0x80,%al", OUT, STRONG,     1, 0xe6, 0x80),
};

/* Section 4: Windows XP context switch reprogramming debug registers. */
static const paper_insn passmark[] = {
    I("MOVDR %dr2,%ebx",     MOV_DR, STRONG, 1, 0x0f, 0x23, 0xd3),
    I("MOVDR %dr3,%ecx",     MOV_DR, STRONG, 1, 0x0f, 0x23, 0xd9),
    I("MOV %ebx,0x308(%edi)", MOV,   WEAK,   0, 0x8b, 0x9f, 0x08, 0x03, 0x00, 0x00),
    I("MOV %ecx,0x30c(%edi)", MOV,   WEAK,   0, 0x8b, 0x8f, 0x0c, 0x03, 0x00, 0x00),
    I("MOVDR %dr6,%ebx",     MOV_DR, STRONG, 1, 0x0f, 0x23, 0xf3),
    I("MOVDR %dr7,%ecx",     MOV_DR, STRONG, 1, 0x0f, 0x23, 0xf9),
};

/* Section 5: SUSE Linux Enterprise Server 10, weakly exiting stores. */
static const paper_insn sles[] = {
    I("MOV -0x201000(%rax),%edx",   MOV, WEAK, 1, 0x89, 0x90, 0x00, 0xf0, 0xdf, 0xff),
    I("MOV %eax,-0x7fc4215c(8*%rsi)", MOV, WEAK, 0, 0x8b, 0x04, 0xf5, 0xa4, 0xde, 0x3b, 0x80),
    I("AND %eax,$0xffff",          AND, GAP_FILLER, 0, 0x25, 0xff, 0xff, 0x00, 0x00),
    I("SUB %rax,%rcx",             SUB, GAP_FILLER, 0, 0x48, 0x29, 0xc8),
    I("MOV -0x200ff0(%rax),%r8d",  MOV, WEAK, 1, 0x44, 0x89, 0x80, 0x10, 0xf0, 0xdf, 0xff),
    I("MOV %eax,-0x7fc4215c(8*%rsi)", MOV, WEAK, 0, 0x8b, 0x04, 0xf5, 0xa4, 0xde, 0x3b, 0x80),
    I("MOV %edx,0x60(%rsp)",       MOV, WEAK, 0, 0x8b, 0x54, 0x24, 0x60),
    I("AND %eax,$0xffff",          AND, GAP_FILLER, 0, 0x25, 0xff, 0xff, 0x00, 0x00),
    I("SUB %rax,%rcx",             SUB, GAP_FILLER, 0, 0x48, 0x29, 0xc8),
    I("MOV -0x201000(%rax),%edi",  MOV, WEAK, 1, 0x89, 0xb8, 0x00, 0xf0, 0xdf, 0xff),
    I("MOV %eax,-0x7fc4215c(8*%rsi)", MOV, WEAK, 0, 0x8b, 0x04, 0xf5, 0xa4, 0xde, 0x3b, 0x80),
    I("AND %eax,$0xffff",          AND, GAP_FILLER, 0, 0x25, 0xff, 0xff, 0x00, 0x00),
    I("SUB %rax,%rcx",             SUB, GAP_FILLER, 0, 0x48, 0x29, 0xc8),
    I("MOV -0x200ff0(%rax),%edx",  MOV, WEAK, 1, 0x89, 0x90, 0x10, 0xf0, 0xdf, 0xff),
    I("MOV %rax,0x21f1a1(%rip)",   MOV, WEAK, 0, 0x48, 0x8b, 0x05, 0xa1, 0xf1, 0x21, 0x00),
};

/* Section 6.1/6.2: a forward branch inside a cluster (16-bit code). */
static const paper_insn fwd_branch[] = {
    I("IN %ax,%dx",            IN,   STRONG,     1, 0xed),
    I("AND 0xd0,$0xfffffeff",  AND,  WEAK,       0, 0x81, 0x26, 0xd0, 0x00, 0xff, 0xfe),
    I("TEST %ax,$0x20",        TEST, GAP_FILLER, 0, 0xa9, 0x20, 0x00),
    I("JNZ 0x6",               JCC,  GAP_FILLER, 0, 0x75, 0x06),
    I("OR 0xd0,$0x100",        OR,   WEAK,       0, 0x81, 0x0e, 0xd0, 0x00, 0x00, 0x01),
    I("MOV %cx,$0xff",         MOV,  GAP_FILLER, 0, 0xb9, 0xff, 0x00),
    I("IN %ax,%dx",            IN,   STRONG,     1, 0xed),
};

/* Section 6.3: two polling loops, then OUTs (32-bit code). */
static const paper_insn loops[] = {
    I("IN %al,%dx",          IN,   STRONG,     1, 0xec),
    I("TEST %al,$0x8",       TEST, GAP_FILLER, 0, 0xa8, 0x08),
    I("JNZ 0xfb",            JCC,  GAP_FILLER, 0, 0x75, 0xfb),
    I("IN %al,%dx",          IN,   STRONG,     1, 0xec),
    I("TEST %al,$0x8",       TEST, GAP_FILLER, 0, 0xa8, 0x08),
    I("JNZ 0xfb",            JCC,  GAP_FILLER, 0, 0x75, 0xfb),
    I("MOV %dx,%bx",         MOV,  GAP_FILLER, 0, 0x66, 0x89, 0xda),
    I("MOV %al,0x18(%esp)",  MOV,  WEAK,       0, 0x8a, 0x44, 0x24, 0x18),
    I("OUT %al,%dx",         OUT,  STRONG,     1, 0xee),
    I("INC %dx",             INC,  GAP_FILLER, 0, 0x66, 0x42),
    I("MOV %al,0x1c(%esp)",  MOV,  WEAK,       0, 0x8a, 0x44, 0x24, 0x1c),
    I("OUT %al,%dx",         OUT,  STRONG,     1, 0xee),
    I("MOV %al,0x20(%esp)",  MOV,  WEAK,       0, 0x8a, 0x44, 0x24, 0x20),
    I("OUT %al,%dx",         OUT,  STRONG,     1, 0xee),
};

/* Section 6.3: Windows 7, one exiting store and a backedge to it. */
static const paper_insn win7[] = {
    I("MOV (%rcx),%rdx", MOV, WEAK,       1, 0x48, 0x89, 0x11),
    I("ADD %rcx,$0x8",   ADD, GAP_FILLER, 0, 0x48, 0x83, 0xc1, 0x08),
    I("DEC %r9",         DEC, GAP_FILLER, 0, 0x49, 0xff, 0xc9),
    I("JNZ -0xc",        JCC, GAP_FILLER, 0, 0x75, 0xf4),
};

/* Section 8: Hyper-V inner VMM; clustering saves two of three exits. */
static const paper_insn hyperv[] = {
    I("VMREAD %r9,%rax   ; Exit qualification", VMREAD, STRONG, 1, 0x41, 0x0f, 0x78, 0xc1),
    I("MOV %eax,$0x2400",                       MOV, GAP_FILLER, 0, 0xb8, 0x00, 0x24, 0x00, 0x00),
    I("VMREAD %r10,%rax  ; Physical address",   VMREAD, STRONG, 1, 0x41, 0x0f, 0x78, 0xc2),
    I("MOV %eax,$0x4408",                       MOV, GAP_FILLER, 0, 0xb8, 0x08, 0x44, 0x00, 0x00),
    I("VMREAD %rax,%rax  ; IDT vectoring",      VMREAD, STRONG, 1, 0x0f, 0x78, 0xc0),
};

/* Section 8: VMware inner VMM, run on every nested exit. */
static const paper_insn vmware[] = {
    I("VMREAD -0x22222a(%rip),%rbx ; RIP",      VMREAD, STRONG, 1, 0x0f, 0x78, 0x1d, 0xd6, 0xdd, 0xdd, 0xff),
    I("VMREAD -0x222209(%rip),%rcx ; RSP",      VMREAD, STRONG, 1, 0x0f, 0x78, 0x0d, 0xf7, 0xdd, 0xdd, 0xff),
    I("VMREAD %rdx,%rdx ; RFLAGS",              VMREAD, STRONG, 1, 0x0f, 0x78, 0xd2),
    I("VMREAD -0x1f229b(%rip),%rbp ; Intr blocking", VMREAD, STRONG, 1, 0x0f, 0x78, 0x2d, 0x65, 0xdd, 0xe0, 0xff),
    I("VMREAD %rdi,%rdi ; Exit reason",         VMREAD, STRONG, 1, 0x0f, 0x78, 0xff),
    I("VMREAD %rsi,%rsi ; IDT vectoring",       VMREAD, STRONG, 1, 0x0f, 0x78, 0xf6),
    I("VMREAD %rbx,%rax ; CS rights",           VMREAD, STRONG, 1, 0x0f, 0x78, 0xc3),
    I("ADD %eax,$0x2",                          ADD, GAP_FILLER, 0, 0x83, 0xc0, 0x02),
    I("VMREAD %rbp,%rax ; SS rights",           VMREAD, STRONG, 1, 0x0f, 0x78, 0xc5),
    I("TEST %edi,%edi",                         TEST, GAP_FILLER, 0, 0x85, 0xff),
    I("JNZ 0x24",                               JCC, GAP_FILLER, 0, 0x75, 0x24),
    I("MOV %eax,$0x4404",                       MOV, GAP_FILLER, 0, 0xb8, 0x04, 0x44, 0x00, 0x00),
    I("VMREAD %rax,%rax ; Interrupt info",      VMREAD, STRONG, 1, 0x0f, 0x78, 0xc0),
};

const paper_example paper_examples[] = {
    { "pae-pte-pair", "3",   "Linux PAE: 64-bit PTE written as two 32-bit halves",
      LC_MODE_PROT32, pae_pair, N(pae_pair) },
    { "bios-pci",     "4",   "16-bit BIOS PCI config access: OUT, OUT, IN",
      LC_MODE_REAL, bios, N(bios) },
    { "out80",        "4",   "Linux OUT 0x80 timing workaround",
      LC_MODE_PROT32, out80, N(out80) },
    { "passmark-dr",  "4",   "Windows XP context switch: debug registers",
      LC_MODE_PROT32, passmark, N(passmark) },
    { "sles-weak",    "5",   "SLES 10: weakly exiting device stores",
      LC_MODE_LONG64, sles, N(sles) },
    { "fwd-branch",   "6.1", "IN, forward branch, IN (methods 1 and 2)",
      LC_MODE_REAL, fwd_branch, N(fwd_branch) },
    { "poll-loops",   "6.3", "two polling loops, then OUTs (method 3)",
      LC_MODE_PROT32, loops, N(loops) },
    { "win7-loop",    "6.3", "Windows 7: single exit and a backedge",
      LC_MODE_LONG64, win7, N(win7) },
    { "hyperv-vmread", "8",  "Hyper-V inner VMM: three VMREADs",
      LC_MODE_LONG64, hyperv, N(hyperv) },
    { "vmware-vmread", "8",  "VMware inner VMM: nine VMREADs per nested exit",
      LC_MODE_LONG64, vmware, N(vmware) },
};

const size_t paper_examples_count = N(paper_examples);

const paper_example *paper_example_find(const char *name)
{
    for (size_t i = 0; i < paper_examples_count; i++)
        if (!strcmp(paper_examples[i].name, name))
            return &paper_examples[i];
    return NULL;
}

size_t paper_example_bytes(const paper_example *ex, uint8_t *dst, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < ex->count; i++) {
        if (n + ex->insns[i].len > cap)
            return 0;
        memcpy(dst + n, ex->insns[i].bytes, ex->insns[i].len);
        n += ex->insns[i].len;
    }
    return n;
}
