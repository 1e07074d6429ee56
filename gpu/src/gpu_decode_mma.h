/* gpu_decode_mma.h: what the tensor-core decode kernels share (gpu_decode_mma.hip: mma.sync;
 * gpu_decode_wg.hip: wgmma): the launch geometry and the query staging. NVIDIA only. */
#ifndef MLA_GPU_DECODE_MMA_H
#define MLA_GPU_DECODE_MMA_H

#include "gpu_internal.h"

/* Shapes every block of one launch shares, computed on the host. */
typedef struct dm_geom {
    int lp;       /* C + R rounded up to 16 (the MMA k step); pad columns are zero in Q and K */
    int ldk;      /* row stride of Q and K tiles in bf16 elements: 8 (mod 64), so 8 rows of an ldmatrix hit 8 bank groups */
    int rb;       /* raw (fp8) row stride in bytes, a multiple of 16 */
    float q_div;  /* an fp8 query's q_scale (1 otherwise): Q holds q / q_div, the codes */
    float s_mul;  /* softmax scale x log2(e) x q_div x k_scale: scores in base 2 */
    float o_mul;  /* k_scale of an fp8 cache (1 otherwise) */
    int p_split;  /* MLA_GPU_MMA_P=split: P as bf16 hi + lo (two PV products, ~fp32 P) instead of bf16(P) */
} dm_geom;

/* The geometry of one launch (host). */
dm_geom dm_geometry(const gpu_decode_args *a);

/* Element e of query row (t, h) as the kernels stage it: q_absorbed | q_pe over q_div, zero past the
 * heads and columns; bf16 values already, so rounding it to bf16 is exact (NUMERICS.md). */
__device__ __forceinline__ float dm_q(const gpu_decode_args &a, const dm_geom &g, int t, int h, int e)
{
    const int C = a.kv.codec.c, L = C + a.kv.codec.r;
    if (h >= a.h || e >= L) return 0.0f;
    return (e < C ? a.q_abs[((int64_t)t * a.h + h) * C + e] : a.q_pe[((int64_t)t * a.h + h) * (L - C) + e - C]) / g.q_div;
}

/* The wgmma decode (gpu_decode_wg.hip): 64 heads a block, bf16 cache of C 512 + R 64. */
int gpu_decode_wg_fits(const gpu_kv_desc *kv, int h);
mla_status gpu_attn_decode_wg(hipStream_t st, const gpu_decode_args *a, const dm_geom &g);

#endif
