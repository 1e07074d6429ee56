/* gpu_gemm_mma.h: what the tensor-core GEMMs share (gpu_gemm_mma.hip: bf16, gpu_gemm_fp8_mma.hip: block
 * fp8; NVIDIA only). A block of 8 warps owns a 128 x 128 tile of Y, each warp 64 x 32 of it. Operands
 * come as slices of 128 K-major rows x 64 bytes (32 bf16 or 64 e4m3 along k) in GG_NST cp.async stages.
 * The 16-byte chunks of a row are XOR-swizzled by row bits 1-2, so the 8 rows an ldmatrix phase reads
 * fall in 8 different bank groups. A k step is 32 bytes of every row: one m16n8k16 bf16 or one m16n8k32
 * e4m3 MMA per 16 x 8 tile, with the same ldmatrix fragments (b16 pairs). */
#ifndef MLA_GPU_GEMM_MMA_H
#define MLA_GPU_GEMM_MMA_H

#include "gpu_dtype.h"
#include "gpu_gemm_tile.h"
#include "gpu_mma.h"

/* One operand's slice: rows [0, rows) of src (ld bytes apart; left bytes of k from src's column), two
 * chunks a thread; chunks past the rows or past k are zero-filled (valid bytes 0 reads nothing, so the
 * source then points at the slice's first byte, which exists). */
__device__ __forceinline__ void gg_load(uint32_t dst, const uint8_t *src, int64_t ld, int rows, int left, int tid)
{
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int e = tid + i * GG_THREADS, r = e >> 2, c = e & 3, valid = gg_valid(r, c, rows, left);
        tc_cp<16>(dst + gg_off(r, c), valid ? src + r * ld + 16 * c : src, valid);
    }
}

/* This block's output tile (gg_tile_of). */
__device__ __forceinline__ void gg_tile(int &tm, int &tn)
{
    gg_tile_of(blockIdx.y * gridDim.x + blockIdx.x, gridDim.x, gridDim.y, tm, tn);
}

/* The warp's fragments of k step ks from the stage at ax (X) and bx (W): 4 m-tiles, 2 pairs of n-tiles. */
__device__ __forceinline__ void gg_frags(uint32_t ax, uint32_t bx, uint32_t a_lane, uint32_t b_lane, int ks,
                                         uint32_t (&af)[4][4], uint32_t (&bf)[2][4])
{
#pragma unroll
    for (int mt = 0; mt < 4; mt++) tc_ldsm4(af[mt], ax + (a_lane ^ (ks << 5)) + mt * 16 * 64);
#pragma unroll
    for (int np = 0; np < 2; np++) tc_ldsm4(bf[np], bx + (b_lane ^ (ks << 5)) + np * 16 * 64);
}

/* Y[o], Y[o + 1] (the second when two) as f32 or bf16 (gd_f32_to_bf16: RNE, NaN kept, as the SIMT
 * kernels); pair: a 4- or 8-byte store is aligned at every even column. */
__device__ __forceinline__ void gg_store(void *yv, int f32, int64_t o, float v0, float v1, bool two, int pair)
{
    if (f32) {
        float *y = (float *)yv + o;
        if (two && pair) {
            *reinterpret_cast<float2 *>(y) = make_float2(v0, v1);
        } else {
            y[0] = v0;
            if (two) y[1] = v1;
        }
    } else {
        uint16_t *y = (uint16_t *)yv + o;
        const uint16_t b0 = gd_f32_to_bf16(v0), b1 = gd_f32_to_bf16(v1);
        if (two && pair) {
            *reinterpret_cast<uint32_t *>(y) = b0 | (uint32_t)b1 << 16;
        } else {
            y[0] = b0;
            if (two) y[1] = b1;
        }
    }
}

#endif
