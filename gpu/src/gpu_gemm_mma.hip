/* gpu_gemm_mma.hip: the bf16 projection GEMM on tensor cores (NVIDIA mma.sync m16n8k16, fp32
 * accumulation), gpu_gemm_bf16's default where its 16-byte copies fit (gpu_gemm_mma_fits);
 * MLA_GPU_GEMM_MMA=0 keeps the SIMT kernel.
 *
 * Tiles as gpu_gemm_mma.h: a block of 8 warps owns 128 x 128 of Y; 32-deep k slices of X and W rows
 * (both K-major: the "row.col" MMA takes W's rows as B's columns) come in by cp.async, 4 stages, 3
 * slices in flight while one is used.
 * Batch invariance: one tile shape for every call and every output's k16 steps in order from k = 0
 * (past k zero-filled), no split-K: Y[i, j] depends on X row i, W row j and k alone, not on m or on
 * which other rows share the call. Edges: rows past m / n and k past k are zero-filled copies; stores
 * are guarded. */
#include "gpu_dtype.h"
#include "gpu_internal.h"

#if defined(MLA_GPU_HIP)

/* AMD: no MFMA version yet; gpu_gemm_bf16 keeps the SIMT kernel there. */
extern "C" int gpu_gemm_mma_fits(const gpu_gemm_args *a)
{
    (void)a;
    return 0;
}
extern "C" mla_status gpu_gemm_bf16_mma(hipStream_t st, const gpu_gemm_args *a)
{
    (void)st;
    (void)a;
    return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: the tensor-core GEMM is NVIDIA-only");
}

#else

#include "gpu_gemm_mma.h"

#define GG_BK 32 /* bf16 k of a slice */

__global__ void __launch_bounds__(GG_THREADS, 2) k_gemm_bf16_mma(gpu_gemm_args a, int pair)
{
    extern __shared__ __align__(128) uint8_t gg_mem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
    int tm, tn;
    gg_tile(tm, tn);
    const int m0 = tm * GG_BM, n0 = tn * GG_BN, ntk = (a.k + GG_BK - 1) / GG_BK;
    const uint16_t *x = a.x + (int64_t)blockIdx.z * a.x_bs + (int64_t)m0 * a.ldx;
    const uint16_t *w = a.w + (int64_t)blockIdx.z * a.w_bs + (int64_t)n0 * a.ldw;
    const uint32_t sx = tc_smem(gg_mem), sw = sx + GG_NST * GG_STAGE;

    /* slice kt -> stage kt % GG_NST, commit group kt (an empty group past the last slice keeps the count) */
    auto issue = [&](int kt) {
        if (kt < ntk) {
            const int st = kt % GG_NST, k0 = kt * GG_BK;
            gg_load(sx + st * GG_STAGE, (const uint8_t *)(x + k0), 2 * a.ldx, a.m - m0, 2 * (a.k - k0), tid);
            gg_load(sw + st * GG_STAGE, (const uint8_t *)(w + k0), 2 * a.ldw, a.n - n0, 2 * (a.k - k0), tid);
        }
        tc_commit();
    };
#pragma unroll
    for (int s = 0; s < GG_NST - 1; s++) issue(s);

    uint32_t a_lane, b_lane;
    gg_lanes(lane, wm, wn, a_lane, b_lane);

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

    for (int kt = 0; kt < ntk; kt++) {
        tc_wait<GG_NST - 2>(); /* groups 0 .. kt complete: slice kt has landed (this thread's copies) */
        __syncthreads();       /* ... everyone's; and everyone is done with slice kt - 1, whose stage refills now */
        issue(kt + GG_NST - 1);
        const uint32_t ax = sx + (kt % GG_NST) * GG_STAGE, bx = sw + (kt % GG_NST) * GG_STAGE;
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            uint32_t af[4][4], bf[2][4];
            gg_frags(ax, bx, a_lane, b_lane, ks, af, bf);
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
                    tc_mma(acc[mt][nt], af[mt], bf[nt >> 1][2 * (nt & 1)], bf[nt >> 1][2 * (nt & 1) + 1]);
        }
    }
    tc_wait<0>(); /* no copy outlives the block (the trailing groups are empty) */

    /* C fragment: c0 c1 at (g, 2t .. 2t + 1), c2 c3 at (g + 8, ...) of each 16 x 8 tile */
    const int g = lane >> 2, t = lane & 3;
    const int64_t ybase = (int64_t)blockIdx.z * a.y_bs;
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = m0 + wm * 64 + mt * 16 + g + 8 * h;
            if (row >= a.m) continue;
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const int col = n0 + wn * 32 + nt * 8 + 2 * t;
                if (col < a.n)
                    gg_store(a.y, a.y_f32, ybase + (int64_t)row * a.ldy + col, acc[mt][nt][2 * h],
                             acc[mt][nt][2 * h + 1], col + 1 < a.n, pair);
            }
        }
}

extern "C" int gpu_gemm_mma_fits(const gpu_gemm_args *a)
{
    return ((uintptr_t)a->x % 16 == 0) && ((uintptr_t)a->w % 16 == 0) && a->ldx % 8 == 0 && a->ldw % 8 == 0 &&
           a->x_bs % 8 == 0 && a->w_bs % 8 == 0;
}

extern "C" mla_status gpu_gemm_bf16_mma(hipStream_t st, const gpu_gemm_args *a)
{
    if (a->m <= 0 || a->n <= 0) return MLA_OK;
    if (!gpu_gemm_mma_fits(a))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: tensor-core GEMM: x, w need 16-byte alignment and ldx, ldw, "
                                               "x_bs, w_bs multiples of 8 (have %lld, %lld, %lld, %lld)",
                          (long long)a->ldx, (long long)a->ldw, (long long)a->x_bs, (long long)a->w_bs);
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_gemm_bf16_mma),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, GG_SHM));
        attr = 1;
    }
    const int esz = a->y_f32 ? 4 : 2;
    const int pair = (uintptr_t)a->y % (2 * esz) == 0 && a->ldy % 2 == 0 && a->y_bs % 2 == 0;
    dim3 grid((a->n + GG_BN - 1) / GG_BN, (a->m + GG_BM - 1) / GG_BM, a->batch > 0 ? a->batch : 1);
    k_gemm_bf16_mma<<<grid, GG_THREADS, GG_SHM, st>>>(*a, pair);
    MLA_HIP_LAUNCHED("k_gemm_bf16_mma");
    return MLA_OK;
}

#endif
