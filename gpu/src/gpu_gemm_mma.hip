/* gpu_gemm_mma.hip: the bf16 projection GEMM on tensor cores (NVIDIA mma.sync m16n8k16, fp32
 * accumulation), gpu_gemm_bf16's default where its 16-byte copies fit (gpu_gemm_mma_fits);
 * MLA_GPU_GEMM_MMA=0 keeps the SIMT kernel.
 *
 * A block of 8 warps owns a 128 x 128 tile of Y; 32-deep k slices of X and W rows (both K-major: the
 * "row.col" MMA takes W's rows as B's columns) come in by cp.async, 4 stages, 3 slices in flight while
 * one is used. Rows are 64 bytes with their 16-byte chunks XOR-swizzled by row bits 1-2, so the 8 rows
 * an ldmatrix phase reads fall in 8 different bank groups. Each warp owns 64 x 32 of the tile.
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

#include "gpu_mma.h"

#define GG_BM 128
#define GG_BN 128
#define GG_BK 32
#define GG_NST 4
#define GG_THREADS 256
#define GG_GROUP 8                             /* m-tiles a raster group (L2 reuse only) */
#define GG_STAGE (GG_BM * GG_BK * 2)           /* bytes of one operand's slice (BM == BN) */
#define GG_SHM (GG_NST * 2 * GG_STAGE)         /* 64 KB */

/* Byte offset of 16-byte chunk c (k 8c .. 8c + 7) of row r in a slice. */
__device__ __forceinline__ uint32_t gg_off(int r, int c) { return r * 64 + ((c ^ ((r >> 1) & 3)) << 4); }

/* One operand's slice: rows [0, rows) of src (row stride ld, k from src's column, k_left of them), two
 * chunks a thread; chunks past the rows or past k are zero-filled (valid bytes 0 reads nothing, so the
 * source then points at the slice's first element, which exists). */
__device__ __forceinline__ void gg_load(uint32_t dst, const uint16_t *src, int64_t ld, int rows, int k_left, int tid)
{
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int e = tid + i * GG_THREADS, r = e >> 2, c = e & 3;
        const int valid = r < rows ? 2 * max(0, min(8, k_left - 8 * c)) : 0;
        tc_cp<16>(dst + gg_off(r, c), valid ? src + r * ld + 8 * c : src, valid);
    }
}

/* Grid block -> output tile: GG_GROUP m-tiles down each n column in turn, so the blocks of a wave share
 * rows of X and W in L2. Which block computes a tile does not change its values. */
__device__ __forceinline__ void gg_tile(int &tm, int &tn)
{
    const int pid = blockIdx.y * gridDim.x + blockIdx.x, width = GG_GROUP * gridDim.x;
    const int first = pid / width * GG_GROUP, size = min((int)gridDim.y - first, GG_GROUP), local = pid % width;
    tm = first + local % size;
    tn = local / size;
}

/* Y[o], Y[o + 1] (the second when two); pair: one 4- or 8-byte store is aligned for every even column. */
__device__ __forceinline__ void gg_store(const gpu_gemm_args &a, int64_t o, float v0, float v1, bool two, int pair)
{
    if (a.y_f32) {
        float *y = (float *)a.y + o;
        if (two && pair) {
            *reinterpret_cast<float2 *>(y) = make_float2(v0, v1);
        } else {
            y[0] = v0;
            if (two) y[1] = v1;
        }
    } else {
        uint16_t *y = (uint16_t *)a.y + o;
        const uint16_t b0 = gd_f32_to_bf16(v0), b1 = gd_f32_to_bf16(v1); /* RNE, NaN kept: as the SIMT kernel */
        if (two && pair) {
            *reinterpret_cast<uint32_t *>(y) = b0 | (uint32_t)b1 << 16;
        } else {
            y[0] = b0;
            if (two) y[1] = b1;
        }
    }
}

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
            gg_load(sx + st * GG_STAGE, x + k0, a.ldx, a.m - m0, a.k - k0, tid);
            gg_load(sw + st * GG_STAGE, w + k0, a.ldw, a.n - n0, a.k - k0, tid);
        }
        tc_commit();
    };
#pragma unroll
    for (int s = 0; s < GG_NST - 1; s++) issue(s);

    /* ldmatrix row addresses of this lane (k16 step 0; step 1 is chunk ^ 2, i.e. byte offset ^ 32).
     * A x4: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) = a0..a3. B x4 over W
     * rows: (n 0-7, k 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15) = b0 b1 of two n-tiles. Rows of a
     * lane differ by multiples of 16 across m-tiles and n-pairs, so the swizzle bits are the lane's. */
    const int swz = (lane >> 1) & 3;
    const uint32_t a_lane = (wm * 64 + (lane & 15)) * 64 + (((lane >> 4) ^ swz) << 4);
    const uint32_t b_lane = (wn * 32 + (lane & 7) + ((lane >> 4) << 3)) * 64 + ((((lane >> 3) & 1) ^ swz) << 4);

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
#pragma unroll
            for (int mt = 0; mt < 4; mt++) tc_ldsm4(af[mt], ax + (a_lane ^ (ks << 5)) + mt * 16 * 64);
#pragma unroll
            for (int np = 0; np < 2; np++) tc_ldsm4(bf[np], bx + (b_lane ^ (ks << 5)) + np * 16 * 64);
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
                    gg_store(a, ybase + (int64_t)row * a.ldy + col, acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1],
                             col + 1 < a.n, pair);
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
