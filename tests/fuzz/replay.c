/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/replay.c: a main() for the fuzz targets when libFuzzer is not
 * used (gcc builds, CI). Runs each file given on the command line, then
 * N pseudo-random inputs from a fixed seed (with structure: mostly zero
 * bytes, page-table-like words and real opcodes), so every CI run pushes
 * the targets through ASan and UBSan.
 *
 *   fuzz_X [--random N] [--seed S] [FILE...]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng;

static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const uint8_t snippets[][4] = {
    { 0xe6, 0x80 }, { 0xec }, { 0xee }, { 0xf3, 0x6e }, { 0x0f, 0xa2 },
    { 0x89, 0x08 }, { 0x8b, 0x00 }, { 0x75, 0xfe }, { 0xe2, 0xfe },
    { 0x0f, 0x23, 0xc0 }, { 0x0f, 0x78, 0xc0 }, { 0x48, 0x01, 0xc8 },
    { 0xd3, 0xe0 }, { 0xf7, 0xe1 }, { 0x50 }, { 0x58 }, { 0xff, 0xe0 },
    { 0x67, 0x8b, 0x07 }, { 0x66, 0xef }, { 0xf4 },
    /* calls, returns, indirect calls (translator/calls.c) */
    { 0xe8, 0x02, 0x00, 0x00 }, { 0xc3 }, { 0xff, 0xd0 }, { 0xc2, 0x04, 0x00 },
    { 0xeb, 0x03 },
};

/* Run one input file; -1 if it cannot be read. */
static int replay_file(const char *path)
{
    static uint8_t buf[1 << 20];
    FILE *fp = fopen(path, "rb");
    size_t len;

    if (!fp) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    len = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    LLVMFuzzerTestOneInput(buf, len);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every regular file of a folder, in name order; the number run or -1. */
static int replay_dir(const char *dir)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, by_name), done = 0;

    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", dir);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        if (ents[i]->d_name[0] != '.' &&
            snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name) <
                (int)sizeof path &&
            !stat(path, &st) && S_ISREG(st.st_mode)) {
            if (replay_file(path) < 0)
                done = -1;
            else if (done >= 0)
                done++;
        }
        free(ents[i]);
    }
    free(ents);
    return done;
}

int main(int argc, char **argv)
{
    long n = 2000;
    int files = 0;

    rng = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--random") && i + 1 < argc) {
            n = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            rng = strtoull(argv[++i], NULL, 0);
        } else {
            struct stat st;
            if (!stat(argv[i], &st) && S_ISDIR(st.st_mode)) {
                int n = replay_dir(argv[i]);
                if (n <= 0) {
                    /* a committed corpus that is empty or unreadable
                     * would make the replay test pass having run nothing */
                    fprintf(stderr, "replay: no input in %s\n", argv[i]);
                    return 2;
                }
                files += n;
            } else if (replay_file(argv[i]) < 0) {
                return 2;
            } else {
                files++;
            }
        }
    }
    for (long k = 0; k < n; k++) {
        size_t len = 1 + next() % 9000;
        uint8_t *b = malloc(len);
        if (!b)
            return 1;
        for (size_t i = 0; i < len;) {
            uint64_t r = next();
            switch (r % 5) {
            case 0:                         /* zeros */
                for (size_t z = (r >> 8) % 64; z && i < len; z--)
                    b[i++] = 0;
                break;
            case 1: {                       /* a real opcode */
                const uint8_t *s = snippets[(r >> 8) % (sizeof snippets /
                                                        sizeof snippets[0])];
                for (int j = 0; j < 4 && i < len; j++)
                    b[i++] = s[j];
                break;
            }
            case 2:                         /* page-table-like entry */
                for (int j = 0; j < 8 && i < len; j++)
                    b[i++] = j == 0 ? (uint8_t)((r >> 8) | 1) :
                             j == 1 ? (uint8_t)((r >> 16) & 0xf0) : 0;
                break;
            default:
                b[i++] = (uint8_t)(r >> 8);
                break;
            }
        }
        LLVMFuzzerTestOneInput(b, len);
        free(b);
    }
    printf("replayed %d files and %ld generated inputs\n", files, n);
    return 0;
}
