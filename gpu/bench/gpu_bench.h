/* gpu_bench.h: what mla_gpu_bench's two parts share (gpu_bench.hip: the attention kernels and main;
 * gpu_bench_gemm.hip: --gemm): the timing environment, device calls and allocations that exit on
 * failure (3), the ceilings the percentages are of, the hash that makes random inputs. */
#ifndef MLA_GPU_BENCH_H
#define MLA_GPU_BENCH_H

#include "gpu_dtype.h"
#include "gpu_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define CEIL_GBS 4144.0
#define CEIL_TFLOPS 784.0

#define BN_CHECK(call)                                                                             \
    do {                                                                                           \
        hipError_t e_ = (call);                                                                    \
        if (e_ != hipSuccess) {                                                                    \
            fprintf(stderr, "mla_gpu_bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    hipGetErrorString(e_));                                                        \
            exit(3);                                                                               \
        }                                                                                          \
    } while (0)

/* Deterministic uniform [-1, 1) from (seed, index): the same on host and device. */
MLA_HD float bn_uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

typedef struct bench_env {
    hipStream_t st;
    hipEvent_t e0, e1;
    void *flush; /* written before each timed launch so inputs come from HBM, not L2 */
    size_t flush_bytes;
    int n_sm;
    int reps;
} bench_env;

typedef mla_status (*launch_fn)(hipStream_t st, const void *args);

void *dev_alloc(size_t bytes);
void *host_alloc(size_t bytes);
/* Median of env->reps timed launches (ms), after two warm-up launches. */
float time_launch(bench_env *env, launch_fn fn, const void *args);
/* --gemm (gpu_bench_gemm.hip): 0, or 1 when a check failed */
int bench_gemm(bench_env *env);

#endif
