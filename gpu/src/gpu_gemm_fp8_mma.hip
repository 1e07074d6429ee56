/* gpu_gemm_fp8_mma.hip: the block-fp8 GEMM on tensor cores (NVIDIA mma.sync m16n8k32 e4m3, sm_89+),
 * gpu_gemm_fp8's default where it fits (gpu_gemm_fp8_mma_fits: k a multiple of 128, 16-byte aligned
 * codes); MLA_GPU_GEMM_MMA=0 or MLA_GPU_GEMM_FP8_MMA=0 keep the SIMT kernel.
 *
 * The SIMT kernel's arithmetic on gpu_gemm_mma.h's tiles: per 128-wide k block (two 64-code slices) the
 * MMAs accumulate an fp32 partial from zero, which is then added to the output accumulator times the
 * row's activation scale and the tile's weight scale (a 128-column tile has one: n0 / 128), DeepSeek's
 * promotion interval (the tensor cores' fp8 sums keep fewer bits than fp32). Deterministic and batch
 * invariant as the bf16 kernel: one tile shape, k in order, no split-K. */
#include "gpu_dtype.h"
#include "gpu_internal.h"

#if defined(MLA_GPU_HIP)

extern "C" int gpu_gemm_fp8_mma_fits(const uint8_t *xq, const uint8_t *wq, int k)
{
    (void)xq;
    (void)wq;
    (void)k;
    return 0;
}
extern "C" mla_status gpu_gemm_fp8_mma(hipStream_t st, const uint8_t *xq, const float *xs, const uint8_t *wq,
                                       const float *ws, uint16_t *y, int64_t ldy, int m, int n, int k)
{
    (void)st, (void)xq, (void)xs, (void)wq, (void)ws, (void)y, (void)ldy, (void)m, (void)n, (void)k;
    return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: the tensor-core fp8 GEMM is NVIDIA-only");
}

#else

#include "gpu_gemm_mma.h"

typedef struct gf_args {
    const uint8_t *xq, *wq; /* [m, k], [n, k] codes */
    const float *xs, *ws;   /* [m, kb], [ceil(n / 128), kb] */
    uint16_t *y;
    int64_t ldy;
    int m, n, k, kb, pair;
} gf_args;

__global__ void __launch_bounds__(GG_THREADS, 1) k_gemm_fp8_mma(gf_args a)
{
    extern __shared__ __align__(128) uint8_t gf_mem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
    const int g = lane >> 2, t = lane & 3;
    int tm, tn;
    gg_tile(tm, tn);
    const int m0 = tm * GG_BM, n0 = tn * GG_BN, nsl = 2 * a.kb; /* 64-code slices, two a 128-block */
    const uint8_t *x = a.xq + (int64_t)m0 * a.k, *w = a.wq + (int64_t)n0 * a.k;
    const uint32_t sx = tc_smem(gf_mem), sw = sx + GG_NST * GG_STAGE;

    auto issue = [&](int s) { /* slice s -> stage s % GG_NST, commit group s (empty past the last) */
        if (s < nsl) {
            gg_load(sx + (s % GG_NST) * GG_STAGE, x + s * GG_ROW, a.k, a.m - m0, GG_ROW, tid);
            gg_load(sw + (s % GG_NST) * GG_STAGE, w + s * GG_ROW, a.k, a.n - n0, GG_ROW, tid);
        }
        tc_commit();
    };
#pragma unroll
    for (int s = 0; s < GG_NST - 1; s++) issue(s);
    uint32_t a_lane, b_lane;
    gg_lanes(lane, wm, wn, a_lane, b_lane);

    float acc[4][4][4], part[4][4][4], scx[4][2], scw = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

    for (int s = 0; s < nsl; s++) {
        if (!(s & 1)) { /* a new k block: its partial from zero, its scales fetched while the MMAs run */
            const int kb = s >> 1;
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) part[i][j][e] = 0.0f;
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = m0 + wm * 64 + mt * 16 + g + 8 * h;
                    scx[mt][h] = row < a.m ? a.xs[(int64_t)row * a.kb + kb] : 0.0f;
                }
            scw = a.ws[(int64_t)tn * a.kb + kb];
        }
        tc_wait<GG_NST - 2>(); /* slice s has landed (this thread's copies) */
        __syncthreads();       /* ... everyone's; slice s - 1's stage is free to refill */
        issue(s + GG_NST - 1);
        const uint32_t ax = sx + (s % GG_NST) * GG_STAGE, bx = sw + (s % GG_NST) * GG_STAGE;
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            uint32_t af[4][4], bf[2][4];
            gg_frags(ax, bx, a_lane, b_lane, ks, af, bf);
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
                    tc_mma_e4m3(part[mt][nt], af[mt], bf[nt >> 1][2 * (nt & 1)], bf[nt >> 1][2 * (nt & 1) + 1]);
        }
        if (s & 1) /* block done: the SIMT kernel's acc += part * sx * sw */
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[mt][nt][e] += part[mt][nt][e] * scx[mt][e >> 1] * scw;
    }
    tc_wait<0>();

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
                    gg_store(a.y, 0, (int64_t)row * a.ldy + col, acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1],
                             col + 1 < a.n, a.pair);
            }
        }
}

extern "C" int gpu_gemm_fp8_mma_fits(const uint8_t *xq, const uint8_t *wq, int k)
{
    return k % 128 == 0 && (uintptr_t)xq % 16 == 0 && (uintptr_t)wq % 16 == 0;
}

extern "C" mla_status gpu_gemm_fp8_mma(hipStream_t st, const uint8_t *xq, const float *xs, const uint8_t *wq,
                                       const float *ws, uint16_t *y, int64_t ldy, int m, int n, int k)
{
    if (m <= 0 || n <= 0) return MLA_OK;
    if (!gpu_gemm_fp8_mma_fits(xq, wq, k))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: tensor-core fp8 GEMM: k must be a multiple of 128 (have %d) "
                                               "and the codes 16-byte aligned", k);
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_gemm_fp8_mma),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, GG_SHM));
        attr = 1;
    }
    const gf_args a = {.xq = xq, .wq = wq, .xs = xs, .ws = ws, .y = y, .ldy = ldy, .m = m, .n = n, .k = k,
                       .kb = k / 128, .pair = (uintptr_t)y % 4 == 0 && ldy % 2 == 0};
    dim3 grid((n + GG_BN - 1) / GG_BN, (m + GG_BM - 1) / GG_BM, 1);
    k_gemm_fp8_mma<<<grid, GG_THREADS, GG_SHM, st>>>(a);
    MLA_HIP_LAUNCHED("k_gemm_fp8_mma");
    return MLA_OK;
}

#endif
