/* gpu_check.c: mla_gpu_check [model [profile]]: the GPU-vs-reference comparison as a plain program
 * (the GPU machine has no cmocka). Exit 0 pass, 1 fail, 77 no device. */
#include <stdio.h>

#include "gpu_compare.h"

int main(int argc, char **argv)
{
    return gpu_compare_run(stdout, argc > 1 ? argv[1] : NULL, argc > 2 ? argv[2] : NULL);
}
