/* gpu_check.c: mla_gpu_check [model [profile [seed]]]: the GPU-vs-reference comparison as a plain
 * program (the GPU machine has no cmocka); model or profile "all" for every one, seed the tokens'.
 * Exit 0 pass, 1 fail, 2 bad arguments, 77 no device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_compare.h"

static const char *pick(int argc, char **argv, int i)
{
    return argc > i && strcmp(argv[i], "all") != 0 ? argv[i] : NULL;
}

int main(int argc, char **argv)
{
    unsigned long seed = GPU_COMPARE_SEED;
    if (argc > 3) {
        char *end = NULL;
        seed = strtoul(argv[3], &end, 10);
        if (!*argv[3] || *end || seed > 0xffffffffUL) {
            fprintf(stderr, "mla_gpu_check: seed '%s': expected a decimal integer below 2^32\n", argv[3]);
            return 2;
        }
    }
    if (argc > 4) {
        fprintf(stderr, "usage: mla_gpu_check [model|all [profile|all [seed]]]\n");
        return 2;
    }
    return gpu_compare_run(stdout, pick(argc, argv, 1), pick(argc, argv, 2), (unsigned)seed);
}
