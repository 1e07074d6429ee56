/* gpu_gemm_tile.h: the tensor-core GEMMs' tile geometry (gpu_gemm_mma.h), as host-and-device functions so
 * that tests/test_gemm_tile.cpp checks on the host, in CI, that the copies' swizzle, the ldmatrix lane
 * addresses and the block raster agree. Layouts: gpu_gemm_mma.h's header. */
#ifndef MLA_GPU_GEMM_TILE_H
#define MLA_GPU_GEMM_TILE_H

#include "gpu_dtype.h"

#define GG_BM 128
#define GG_BN 128
#define GG_ROW 64 /* bytes of a slice row */
#define GG_NST 4
#define GG_THREADS 256
#define GG_GROUP 8                     /* m-tiles a raster group (L2 reuse only) */
#define GG_STAGE (GG_BM * GG_ROW)      /* bytes of one operand's slice (BM == BN) */
#define GG_SHM (GG_NST * 2 * GG_STAGE) /* 64 KB */

/* Byte offset of 16-byte chunk c of row r in a slice. */
MLA_HD uint32_t gg_off(int r, int c) { return r * 64 + ((c ^ ((r >> 1) & 3)) << 4); }

MLA_HD int gg_min(int a, int b)
{
#if defined(__CUDA_ARCH__)
    return min(a, b);
#else
    return a < b ? a : b;
#endif
}
MLA_HD int gg_max(int a, int b)
{
#if defined(__CUDA_ARCH__)
    return max(a, b);
#else
    return a > b ? a : b;
#endif
}

/* Bytes of chunk c of slice row r that exist (rows rows, left bytes of k from the slice's column on):
 * the rest of the chunk is zero-filled. */
MLA_HD int gg_valid(int r, int c, int rows, int left) { return r < rows ? gg_max(0, gg_min(16, left - 16 * c)) : 0; }

/* Block pid of a gx x gy grid -> output tile (tm, tn): GG_GROUP m-tiles down each n column in turn, so
 * the blocks of a wave share rows of X and W in L2. Which block computes a tile does not change its
 * values. */
MLA_HD void gg_tile_of(int pid, int gx, int gy, int &tm, int &tn)
{
    const int width = GG_GROUP * gx;
    const int first = pid / width * GG_GROUP, size = gg_min(gy - first, GG_GROUP), local = pid % width;
    tm = first + local % size;
    tn = local / size;
}

/* ldmatrix row addresses of a lane for k step 0 (step 1 is chunk ^ 2: byte offset ^ 32). A x4: matrices
 * (rows 0-7, chunk lo), (8-15, lo), (0-7, hi), (8-15, hi) = a0..a3; B x4 over W rows: (n 0-7, lo),
 * (0-7, hi), (8-15, lo), (8-15, hi) = b0 b1 of two n-tiles. A lane's rows differ by multiples of 16
 * across m-tiles and n-pairs, so its swizzle bits are its own. */
MLA_HD void gg_lanes(int lane, int wm, int wn, uint32_t &a, uint32_t &b)
{
    const int swz = (lane >> 1) & 3;
    a = (wm * 64 + (lane & 15)) * 64 + (((lane >> 4) ^ swz) << 4);
    b = (wn * 32 + (lane & 7) + ((lane >> 4) << 3)) * 64 + ((((lane >> 3) & 1) ^ swz) << 4);
}

#endif
