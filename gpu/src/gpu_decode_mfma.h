/* gpu_decode_mfma.h: the AMD tensor-core decode (gpu_decode_mfma.hip: CDNA's v_mfma_f32_16x16x16 bf16,
 * wave64) written as host-and-device phases, so that a host emulation of the instruction runs the
 * kernel's own code in CI (gpu/tests/test_decode_mfma.cpp): every thread's phase between barriers, a
 * wave's MFMA steps through a wave type W (the device's one lane, or the test's 64 lanes at once).
 *
 * The layout assumed for v_mfma_f32_16x16x16bf16_1k (d = a . b + c, 16 x 16 x 16; AMD's matrix
 * instruction tables, as LLVM's and composable_kernel's users read them): lane l (0 .. 63) holds
 *   a: row l % 16, k = 4 (l / 16) .. + 3      (four bf16)
 *   b: column l % 16, k = 4 (l / 16) .. + 3   (four bf16)
 *   c, d: column l % 16, rows 4 (l / 16) .. + 3 (four f32)
 * Never run on an AMD GPU (none was available): the emulation proves the kernel against this layout,
 * not the layout against the hardware.
 *
 * A block of four waves owns one decode token, MF_HM heads and one KV split. Per key tile of g.nk keys
 * (mla_attn_tc_tile: the reference's tiles under attn_tc), in chunks of MF_KR rows widened to bf16:
 *   mf_s          S = Q K^T: waves 0 and 1 one 16-key block each of the chunk
 *   mf_sm_*       online softmax in base 2 over the tile, 16 threads a head
 *   mf_rescale, mf_pv   O *= corr, O += P V with P in bf16; wave w owns output dims 16 (w + 4 i) ..
 *                 + 15; at 64-key tiles the first chunk is read again (its rows held the second for S)
 *   mf_store      the split's normalized output and LSE, merged by the combine */
#ifndef MLA_GPU_DECODE_MFMA_H
#define MLA_GPU_DECODE_MFMA_H

#include <stdint.h>
#include <string.h>

#include "gpu_dtype.h"
#include "gpu_kv.h"

#define MF_LANES 64
#define MF_HM 16       /* heads a block: the MFMA's 16 rows */
#define MF_KR 32       /* cache rows in shared memory at a time */
#define MF_CMAX 512    /* kv_lora_rank, at most: 8 blocks of 16 output dims a wave */
#define MF_LMAX 576    /* kv_lora_rank + rope dim, at most */
#define MF_THREADS 256 /* four waves */
#define MF_PLD (64 + 8) /* row stride of P (bf16): keys of a tile of at most 64 */

/* What the kernel reads: gpu_decode_args' fields (the host copies them). */
typedef struct mf_args {
    const float *q_abs, *q_pe; /* [T, H, C], [T, H, R] */
    gpu_kv_desc kv;
    const int32_t *tok_seq;
    const gpu_seq *seqs;
    float *part_o, *part_lse; /* [T, H, S, C], [T, H, S] */
    int t, h, splits, split_len, causal_plus; /* split_len: gpu_decode_args' */
} mf_args;

/* Shapes every block of one launch shares. */
typedef struct mf_geom {
    int lp, ldk, nk; /* C + R rounded up to 16; Q / K row stride; keys a tile (32 or 64) */
    float q_div;     /* an fp8 query's q_scale (1 otherwise): Q holds q / q_div, the codes */
    float s_mul;     /* softmax scale x log2(e) x q_div x k_scale: scores in base 2 */
    float o_mul;     /* k_scale of a per-tensor fp8 cache (1 otherwise) */
} mf_geom;

MLA_HD mf_geom mf_geometry(const mla_kv_codec &k, int nk, float scale, float q_div)
{
    mf_geom g;
    g.lp = (k.c + k.r + 15) / 16 * 16;
    g.ldk = g.lp + 8; /* 16-byte rows, shifted a bank group a row */
    g.nk = nk;
    g.q_div = q_div > 0.0f ? q_div : 1.0f;
    g.o_mul = k.format == MLA_KV_FP8 ? k.k_scale : 1.0f;
    g.s_mul = scale * 1.4426950408889634f * g.q_div * g.o_mul;
    return g;
}

/* The kernel fits: C a multiple of 64 up to 512, C + R up to 576, any of the three row formats. */
MLA_HD int mf_fits(const mla_kv_codec &k, int h)
{
    return h >= 1 && k.c % 64 == 0 && k.c >= 64 && k.c <= MF_CMAX && k.c + k.r <= MF_LMAX &&
           (k.format == MLA_KV_BF16 || k.format == MLA_KV_FP8 || k.format == MLA_KV_FP8_DS);
}

/* The block's work: token t, heads [h0, h0 + 16), rows [j0, j1) of its sequence in ntiles tiles
 * (the split boundaries of every decode kernel). */
typedef struct mf_block {
    int t, h0, sp, slot, j0, j1, ntiles;
} mf_block;

MLA_HD mf_block mf_block_of(const mf_args &a, const mf_geom &g, int t, int hg, int sp)
{
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    mf_block b;
    b.t = t;
    b.h0 = hg * MF_HM;
    b.sp = sp;
    b.slot = s.slot;
    kv_split_rows(s, t, a.causal_plus, a.splits, a.split_len, sp, &b.j0, &b.j1);
    b.ntiles = (b.j1 - b.j0 + g.nk - 1) / g.nk;
    return b;
}

/* Shared memory of one block: Q [16][ldk], K [32][ldk], P [16][MF_PLD] bf16, then f32 scores [16][64],
 * m, l, corr [16] each. */
typedef struct mf_smem {
    uint16_t *Q, *K, *P;
    float *sc, *m_run, *l_run, *corr;
} mf_smem;

MLA_HD int mf_off_f32(int ldk) { return ((MF_HM + MF_KR) * ldk + MF_HM * MF_PLD + 1) / 2; } /* in floats */
MLA_HD int mf_shm_bytes(int ldk) { return 4 * (mf_off_f32(ldk) + MF_HM * 64 + 3 * MF_HM); }
MLA_HD mf_smem mf_smem_of(uint16_t *base, int ldk)
{
    mf_smem m;
    m.Q = base;
    m.K = base + MF_HM * ldk;
    m.P = base + (MF_HM + MF_KR) * ldk;
    m.sc = reinterpret_cast<float *>(base) + mf_off_f32(ldk);
    m.m_run = m.sc + MF_HM * 64;
    m.l_run = m.m_run + MF_HM;
    m.corr = m.l_run + MF_HM;
    return m;
}

/* Lane's four bf16 of the 16 x 16 block at column k0 of a row-major matrix m (row stride ld): row
 * lane % 16, columns k0 + 4 (lane / 16) .. + 3. The a fragment of S = Q K^T and of O += P V (rows are
 * heads); the b fragment of S (K's rows are keys, S's columns). */
MLA_HD void mf_frag_rows(const uint16_t *m, int ld, int k0, int lane, uint16_t f[4])
{
    const uint16_t *p = m + (lane % 16) * ld + k0 + 4 * (lane / 16);
    for (int j = 0; j < 4; j++) f[j] = p[j];
}
/* Lane's four bf16 of the 16 x 16 block of a row-major matrix m whose rows are k: rows k0 + 4 (lane /
 * 16) .. + 3, column c0 + lane % 16. The b fragment of O += P V (V's rows are keys). */
MLA_HD void mf_frag_cols(const uint16_t *m, int ld, int k0, int c0, int lane, uint16_t f[4])
{
    for (int j = 0; j < 4; j++) f[j] = m[(k0 + 4 * (lane / 16) + j) * ld + c0 + lane % 16];
}
/* Row and column of element i (0 .. 3) of lane's c / d fragment. */
MLA_HD int mf_d_row(int lane, int i) { return 4 * (lane / 16) + i; }
MLA_HD int mf_d_col(int lane) { return lane % 16; }

/* Element e of a cache row as bf16 bits: bf16 as stored; e4m3 codes decoded exactly (fn or fnuz) and,
 * in fp8_ds_mla, times their tile scale, rounded once (exact for power-of-two scales); fp8_ds_mla's
 * rope as stored. The per-tensor k_scale is not applied here (s_mul, o_mul). As dm_widen's values. */
MLA_HD uint16_t mf_widen(const mla_kv_codec &k, const uint8_t *row, int e)
{
    if (e >= k.c + k.r) return 0;
    if (k.format == MLA_KV_BF16) return (uint16_t)(row[2 * e] | row[2 * e + 1] << 8);
    if (k.format == MLA_KV_FP8) return gd_f32_to_bf16(gd_e4m3_to_f32(row[e], k.fp8_fnuz));
    const int tiles = (k.c + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE, rope = k.c + 4 * tiles + 2 * (e - k.c);
    if (e >= k.c) return (uint16_t)(row[rope] | row[rope + 1] << 8);
    float s;
    memcpy(&s, row + k.c + 4 * (e / MLA_KV_DS_TILE), 4);
    return gd_f32_to_bf16(gd_e4m3_to_f32(row[e], k.fp8_fnuz) * s);
}

/* Thread tid: Q / q_div in bf16 (bf16 values already, NUMERICS.md; zero past the heads and columns),
 * the running maxima and sums. */
MLA_HD void mf_stage_q(const mf_args &a, const mf_geom &g, const mf_block &b, const mf_smem &sm, int tid)
{
    const int C = a.kv.codec.c, L = C + a.kv.codec.r;
    for (int i = tid; i < MF_HM * g.lp; i += MF_THREADS) {
        const int r = i / g.lp, e = i % g.lp, h = b.h0 + r;
        float v = 0.0f;
        if (h < a.h && e < L)
            v = (e < C ? a.q_abs[((int64_t)b.t * a.h + h) * C + e] : a.q_pe[((int64_t)b.t * a.h + h) * (L - C) + e - C]) / g.q_div;
        sm.Q[r * g.ldk + e] = gd_f32_to_bf16(v);
    }
    if (tid < MF_HM) {
        sm.m_run[tid] = -INFINITY;
        sm.l_run[tid] = 0.0f;
    }
}

/* Thread tid: cache rows [c, c + min(n, MF_KR)) of the block's sequence into K (the rest zero, so P V
 * never meets the pool's NaN poison), 8 threads a row, its address found once. */
MLA_HD void mf_load_rows(const mf_args &a, const mf_geom &g, const mf_block &b, const mf_smem &sm, int c, int n, int tid)
{
    const int T = MF_THREADS / MF_KR, j = tid / T;
    const uint8_t *row = j < n ? kv_row(a.kv, b.slot, c + j) : nullptr;
    for (int e = tid % T; e < g.lp; e += T) sm.K[j * g.ldk + e] = row ? mf_widen(a.kv.codec, row, e) : 0;
}

/* Wave `wave` (0 or 1): S of the chunk's keys 16 wave .. + 15 (chunk rows in K; keys of the tile from
 * key0, the tile's first n valid) into sc, times s_mul, -inf past n. */
template <class W>
MLA_HD void mf_s(W &w, const mf_geom &g, const mf_smem &sm, int wave, int key0, int n)
{
    typename W::acc d = w.zero();
    for (int k0 = 0; k0 < g.lp; k0 += 16) {
        typename W::frag fa, fb;
        w.rows(fa, sm.Q, g.ldk, k0);
        w.rows(fb, sm.K + 16 * wave * g.ldk, g.ldk, k0);
        d = w.mma(fa, fb, d);
    }
    w.each(d, [&](int lane, int i, float v) {
        const int key = key0 + 16 * wave + mf_d_col(lane);
        sm.sc[mf_d_row(lane, i) * 64 + key] = key < n ? v * g.s_mul : -INFINITY;
    });
}

/* Online softmax, thread tid = 16 head + sub over keys sub + 16 j of the tile: mf_sm_max its maximum
 * (then the 16 threads' maximum, mx), mf_sm_p with mn = max(m_run, mx) its P in bf16 and its sum of the
 * fp32 probabilities (then the 16 threads' sum); after a barrier (m_run read by all 16), thread sub 0
 * mf_sm_update. */
MLA_HD float mf_sm_max(const mf_geom &g, const mf_smem &sm, int tid)
{
    float mx = -INFINITY;
    for (int k = tid % 16; k < g.nk; k += 16) mx = fmaxf(mx, sm.sc[tid / 16 * 64 + k]);
    return mx;
}
MLA_HD float mf_sm_p(const mf_geom &g, const mf_smem &sm, int tid, float mn)
{
    float sum = 0.0f;
    for (int k = tid % 16; k < g.nk; k += 16) {
        const float p = exp2f(sm.sc[tid / 16 * 64 + k] - mn);
        sum += p;
        sm.P[tid / 16 * MF_PLD + k] = gd_f32_to_bf16(p);
    }
    return sum;
}
MLA_HD void mf_sm_update(const mf_smem &sm, int hh, float mn, float sum)
{
    const float cr = exp2f(sm.m_run[hh] - mn); /* m_run = -inf on the first tile: 0 */
    sm.m_run[hh] = mn;
    sm.l_run[hh] = sm.l_run[hh] * cr + sum;
    sm.corr[hh] = cr;
}

/* Wave `wave`: its output dims' accumulators o[NB] times the tile's corr, then += P V over the chunk in
 * K (keys key0 .. + 31 of the tile). */
template <int NB, class W> MLA_HD void mf_rescale(W &w, const mf_smem &sm, typename W::acc (&o)[NB])
{
    for (int b = 0; b < NB; b++) w.scale(o[b], [&](int lane, int i) { return sm.corr[mf_d_row(lane, i)]; });
}
template <int NB, class W>
MLA_HD void mf_pv(W &w, const mf_geom &g, const mf_smem &sm, int wave, int key0, typename W::acc (&o)[NB])
{
    for (int kb = 0; kb < MF_KR / 16; kb++) {
        typename W::frag fa;
        w.rows(fa, sm.P, MF_PLD, key0 + 16 * kb);
        for (int b = 0; b < NB; b++) {
            typename W::frag fb;
            w.cols(fb, sm.K, g.ldk, 16 * kb, 16 * (wave + 4 * b));
            o[b] = w.mma(fa, fb, o[b]);
        }
    }
}

/* Wave `wave`: the split's normalized output of its dims; thread tid < 16 (pass lse 1): the LSE. */
template <int NB, class W>
MLA_HD void mf_store(W &w, const mf_args &a, const mf_geom &g, const mf_block &b, const mf_smem &sm, int wave,
                     const typename W::acc (&o)[NB])
{
    const int C = a.kv.codec.c;
    for (int bi = 0; bi < NB; bi++)
        w.each(o[bi], [&](int lane, int i, float v) {
            const int hh = mf_d_row(lane, i), h = b.h0 + hh;
            if (h >= a.h) return;
            const float l = sm.l_run[hh];
            const int64_t pi = ((int64_t)b.t * a.h + h) * a.splits + b.sp;
            a.part_o[pi * C + 16 * (wave + 4 * bi) + mf_d_col(lane)] = l > 0.0f ? v * g.o_mul / l : 0.0f;
        });
}
MLA_HD void mf_store_lse(const mf_args &a, const mf_block &b, const mf_smem &sm, int tid)
{
    if (tid >= MF_HM || b.h0 + tid >= a.h) return;
    const float l = sm.l_run[tid];
    const int64_t pi = ((int64_t)b.t * a.h + b.h0 + tid) * a.splits + b.sp;
    a.part_lse[pi] = l > 0.0f ? (sm.m_run[tid] + log2f(l)) * 0.69314718055994531f : -INFINITY;
}

#endif
