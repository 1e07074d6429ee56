/* gpu_decode_wg.h: the steps of the 64-head wgmma decode (gpu_decode_wg.hip), kept apart so that
 * another schedule of the same tiles computes the same values by the same code (the overlapped one of
 * 2026-12-02 did, bit for bit, and was removed as slower: gpu/bench/KERNELS.md "wg ovl"): the block's
 * part of the keys, the Q staging, S of a 32-key half, the scale, mask and row maximum of a half, the
 * rescale, P of a half rounded to bf16 and its row sums, O's rescale, O += P V over 256 output columns,
 * the row sums' reduction and the output. Shapes and layouts: gpu_decode_wg.hip's header. NVIDIA only
 * (sm_90a); include under !MLA_GPU_HIP. */
#ifndef MLA_GPU_DECODE_WG_H
#define MLA_GPU_DECODE_WG_H

#include "gpu_decode_mma.h"

#define WD_THREADS 256
#define WD_HM 64                    /* heads a block */
#define WD_P (WD_NK / 64 * WD_ATOM) /* P: 64 heads x 64 keys, one atom */
#define WD_NST 2

/* Shared memory: 1024 bytes of alignment slack, Q, the stages, P, 2 x 64 floats of row maxima (the
 * overlapped kernel: the rescale factors) and 2 x 64 of row sums. */
#define WD_SHM (1024 + WD_TILE * (1 + WD_NST) + WD_P + 2 * 2 * WD_HM * 4)

/* The block's work: decode token t, heads [h0, h0 + 64), keys [j0, j1) of split sp in ntiles tiles. */
typedef struct wd_part {
    int t, h0, sp, slot, j0, j1, ntiles;
} wd_part;

/* The grid: dm_grid's of 64-head groups. */
__device__ __forceinline__ wd_part wd_part_of(const gpu_decode_args &a)
{
    wd_part p;
    const dm_heads b = dm_heads_of<WD_HM>(a.h);
    p.t = b.t;
    p.h0 = b.h0;
    p.sp = blockIdx.z;
    const gpu_seq s = a.seqs[a.tok_seq[p.t]];
    p.slot = s.slot;
    kv_split_rows(s, p.t, a.causal_plus, a.splits, a.split_len, p.sp, &p.j0, &p.j1);
    p.ntiles = (p.j1 - p.j0 + WD_NK - 1) / WD_NK;
    return p;
}

/* Q (64 heads x 576) into the swizzled tile qs, eight columns at a time, by all WD_THREADS threads. */
__device__ __forceinline__ void wd_stage_q(const gpu_decode_args &a, const dm_geom &g, const wd_part &p, uint8_t *qs)
{
    for (int i = threadIdx.x; i < WD_HM * WD_L / 8; i += WD_THREADS) {
        const int r = i / (WD_L / 8), e = i % (WD_L / 8) * 8;
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = tc_pack(dm_q(a, g, p.t, p.h0 + r, e + 2 * k), dm_q(a, g, p.t, p.h0 + r, e + 2 * k + 1));
        *reinterpret_cast<uint4 *>(qs + wd_off(r, e)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

/* S (issued, not committed; sc's old values unread) of the 64 heads against 32 keys (sc[16]:
 * m64n32k16, dk at the half's first row) or 64 (sc[32]: m64n64k16, dk at the tile's first row), 36 k16
 * steps over C + R in order. */
template <int N> __device__ __forceinline__ void wd_s(float (&sc)[N], uint64_t dq, uint64_t dk)
{
    if constexpr (N == 32) /* the first k16 step writes sc (scale-d 0): no zeroing before */
        wg_m64n64_ss<0>(sc, dq, dk);
    else
        wg_m64_ss<0, 0>(sc, dq, dk);
#pragma unroll
    for (int ks = 1; ks < WD_L / 16; ks++) {
        const uint32_t off = ks / 4 * WD_ATOM + ks % 4 * 32;
        if constexpr (N == 32)
            wg_m64n64_ss(sc, wg_desc_add(dq, off), wg_desc_add(dk, off));
        else
            wg_m64_ss(sc, wg_desc_add(dq, off), wg_desc_add(dk, off));
    }
}

/* Half hf (keys [32 hf, 32 hf + 32)) of a tile's scores: scaled to base 2 in place, keys at or past n
 * -inf; mx: the maxima of the thread's two rows over the half (the four lanes of a row reduced).
 * sc[4 j + e] is key 32 hf + 8 j + 2 tq + (e % 2) of row row0 + 8 (e / 2). */
__device__ __forceinline__ void wd_half_max(float (&sc)[16], int hf, int tq, int n, float s_mul, float (&mx)[2])
{
    mx[0] = mx[1] = -INFINITY;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        const int key = 32 * hf + 8 * (i / 4) + 2 * tq + (i % 2);
        sc[i] = key < n ? sc[i] * s_mul : -INFINITY;
        mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], sc[i]);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
}

/* The online softmax's step for one row: the new running maximum from the halves' maxima m0, m1 and
 * the factor that rescales what came before (0 on the first tile, m_run = -inf). */
__device__ __forceinline__ float wd_rescale(float &m_run, float m0, float m1)
{
    const float mn = fmaxf(m_run, fmaxf(m0, m1));
    const float corr = tc_ex2(m_run - mn);
    m_run = mn;
    return corr;
}

/* P of half hf: the row sums l (one accumulator per half and row) rescaled by corr, then
 * p = exp2(s - m_run) added in key order and stored rounded to bf16 at P's place in the swizzled
 * 64 x 64 tile ps. One straight run of code (no branch between the rescale and the sums), so both
 * kernels compile the same arithmetic. */
__device__ __forceinline__ void wd_half_p(const float (&sc)[16], int hf, const float (&m_run)[2], const float (&corr)[2],
                                          float (&l)[2], uint8_t *ps, int row0, int tq)
{
#pragma unroll
    for (int r = 0; r < 2; r++) l[r] *= corr[r];
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const float p0 = tc_ex2(sc[4 * j + 2 * r] - m_run[r]), p1 = tc_ex2(sc[4 * j + 2 * r + 1] - m_run[r]);
            l[r] += p0 + p1;
            *reinterpret_cast<uint32_t *>(ps + wg_sw128(row0 + 8 * r, 32 * hf + 8 * j + 2 * tq)) = tc_pack(p0, p1);
        }
}

/* O (this warpgroup's 64 x 256 accumulator) times its rows' rescale factors; skipped where no row of
 * the warp moved its maximum (corr 1: the same O, 128 multiplies a thread a tile saved). */
__device__ __forceinline__ void wd_scale_o(float (&o)[128], const float (&corr)[2])
{
    if (__all_sync(0xffffffffu, corr[0] == 1.0f && corr[1] == 1.0f)) return;
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] *= corr[(i / 2) % 2];
}

/* O += P V (issued, not committed): 4 m64n256k16, P K-major at dp, V N-major at dv (the warpgroup's 256
 * columns of the cache tile). */
__device__ __forceinline__ void wd_pv(float (&o)[128], uint64_t dp, uint64_t dv)
{
#pragma unroll
    for (int kk = 0; kk < WD_NK / 16; kk++) wg_m64n256_ss_tb(o, wg_desc_add(dp, kk * 32), wg_desc_add(dv, kk * 16 * WG_ATOM_ROW));
}

/* A half's row sums over the four lanes of each row, into red (64 floats, one a row). */
__device__ __forceinline__ void wd_put_l(float (&l)[2], float *red, int row0, int tq)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        if (tq == 0) red[row0 + 8 * r] = l[r];
    }
}

/* The split's normalized output of warpgroup wg's 256 columns and (wg 0) the LSE; red_l: the row sums of
 * keys [0, 32) and [32, 64) of every tile, 64 floats each. */
__device__ __forceinline__ void wd_store(const gpu_decode_args &a, const dm_geom &g, const wd_part &p, int wg, int row0,
                                         int tq, const float (&o)[128], const float (&m_run)[2], const float *red_l)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int h = p.h0 + row0 + 8 * r;
        if (h >= a.h) continue;
        const float l = red_l[row0 + 8 * r] + red_l[WD_HM + row0 + 8 * r];
        const int64_t pi = ((int64_t)p.t * a.h + h) * a.splits + p.sp;
        const float f = l > 0.0f ? g.o_mul / l : 0.0f;
        float *dst = a.part_o + pi * WD_C + 256 * wg;
#pragma unroll
        for (int j = 0; j < 32; j++)
            *reinterpret_cast<float2 *>(dst + 8 * j + 2 * tq) = make_float2(o[4 * j + 2 * r] * f, o[4 * j + 2 * r + 1] * f);
        if (wg == 0 && tq == 0) a.part_lse[pi] = l > 0.0f ? (m_run[r] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

#endif
