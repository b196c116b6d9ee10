/* A 20-line program built against the installed libcluster. */
#include <stdio.h>
#include <string.h>
#include <cluster/cluster.h>

static void map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{ (void)o; (void)gpa; (void)w; memset(m, 0, sizeof *m); }

int main(void)
{
    static const lc_vm_ops ops = { .size = sizeof ops, .gpa_map = map };
    const unsigned char out80[] = { 0xe6, 0x80 };
    lc_engine *e; lc_insn_info i;
    if (lc_engine_create(NULL, &ops, &e) != LC_OK) return 1;
    if (lc_decode(LC_MODE_PROT32, out80, 2, &i) != LC_OK) return 1;
    printf("libcluster %s: out 0x80,al is %s\n", lc_version_string(),
           lc_exit_class_name(i.exit_class));
    return lc_engine_destroy(e) != LC_OK || i.exit_class != LC_CLASS_STRONG;
}
