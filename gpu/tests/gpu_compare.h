/* gpu_compare.h: the GPU-vs-reference comparison shared by mla_gpu_check (plain program) and
 * test_gpu (cmocka); gpu_compare_kill runs the same gates with a faulted reference under test. */
#ifndef MLA_GPU_COMPARE_H
#define MLA_GPU_COMPARE_H

#include <stdio.h>

#include "mla/backend.h"

#define GPU_COMPARE_SEED 12345u /* the tokens' seed every recorded run used */

/* Runs every case with the GPU engine, prints a table to log. Returns 0 all gates pass, 1 a gate failed
 * or an engine errored, 77 no GPU device. only_model / only_profile: NULL for all. tok_seed: the
 * script's tokens. (gpu_compare_gpu.c) */
int gpu_compare_run(FILE *log, const char *only_model, const char *only_profile, unsigned tok_seed);

/* Every case with dut as the engine under test against the reference, dut_faults (MLA_FAULT bits)
 * planted in dut alone (the cases that plant every fault in both engines are then skipped). Returns
 * the number of failed cases, or -1 when no case matches only_model / only_profile. (gpu_compare.c) */
int gpu_compare_cases(FILE *log, const mla_backend_ops *dut, unsigned dut_faults, const char *only_model,
                      const char *only_profile, unsigned tok_seed);

#endif
