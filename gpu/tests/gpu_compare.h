/* gpu_compare.h: the GPU-vs-reference comparison shared by mla_gpu_check (plain program) and
 * test_gpu (cmocka). */
#ifndef MLA_GPU_COMPARE_H
#define MLA_GPU_COMPARE_H

#include <stdio.h>

#define GPU_COMPARE_SEED 12345u /* the tokens' seed every recorded run used */

/* Runs every case, prints a table to log. Returns 0 all gates pass, 1 a gate failed or an engine
 * errored, 77 no GPU device. only_model / only_profile: NULL for all. tok_seed: the script's tokens. */
int gpu_compare_run(FILE *log, const char *only_model, const char *only_profile, unsigned tok_seed);

#endif
