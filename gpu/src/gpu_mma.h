/* gpu_mma.h: the NVIDIA tensor-core and async-copy instructions the mma kernels use (inline PTX,
 * sm_80+; mma.sync m16n8k16 bf16 with fp32 accumulation, ldmatrix, cp.async). Fragment layouts
 * (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane = 4 g + t; A (16x16, row) a0 (g, 2t..2t+1),
 * a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..); B (16x8, col) b0 (k 2t.., n g), b1 (k 2t + 8..);
 * C c0 c1 (g, 2t..2t+1), c2 c3 (g + 8, 2t..). Include only under MLA_GPU_CUDA. */
#ifndef MLA_GPU_MMA_H
#define MLA_GPU_MMA_H

#include <stdint.h>

__device__ __forceinline__ uint32_t tc_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* cp.async of CH bytes (16: through L2 only); valid 0 writes CH zero bytes and reads nothing. */
template <int CH> __device__ __forceinline__ void tc_cp(uint32_t dst, const void *src, int valid)
{
    if (CH == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(CH), "r"(valid));
}
/* 2^x by the special-function unit alone (ex2.approx.ftz; 2^-inf = 0, 2^0 = 1). exp2f is the same
 * MUFU.EX2 with a rescaling around it for results below 2^-126 (a compare, two predicated multiplies and
 * predicate moves: ncu of the wgmma prefill, 2026-12-04, ~5 instructions a score); here those flush to
 * zero (reference/NUMERICS.md). */
__device__ __forceinline__ float tc_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ void tc_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void tc_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
/* Wait until at most N commit groups are pending. */
template <int N> __device__ __forceinline__ void tc_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void tc_ldsm4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void tc_ldsm2(uint32_t (&r)[2], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void tc_ldsm4_t(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* d += a (16x16, row) . b (16x8, col) */
__device__ __forceinline__ void tc_mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* d += a (16x32 e4m3fn, row) . b (32x8, col); sm_89+. Fragments as m16n8k16's with four codes a register
 * along k: a0 (g, 4t..4t+3), a1 (g + 8, ..), a2 (g, 4t + 16..), a3 (g + 8, 4t + 16..); b0 (k 4t.., n g),
 * b1 (k 4t + 16..). So ldmatrix's b16 pairs load them as they load bf16 (a 16-byte chunk: 16 codes). */
__device__ __forceinline__ void tc_mma_e4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats -> bf16x2 (lo in the low half), round to nearest even. */
__device__ __forceinline__ uint32_t tc_pack(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

#endif
