/* gpu_prefill_wg.h: the steps both wgmma prefill kernels share (gpu_prefill_wg.hip, the serial
 * schedule; gpu_prefill_pipe.hip, the pipelined one), so that the two compute the same thing by the same
 * code: the Q load, a K/V tile's copy, S = Q K^T, the online softmax of a 64-key tile, P packed as the A
 * operand of O += P V, the part's normalization and the block's merge and store. Shapes and layouts:
 * gpu_prefill_wg.hip's header. NVIDIA only (sm_90a); include after gpu_internal.h under !MLA_GPU_HIP. */
#ifndef MLA_GPU_PREFILL_WG_H
#define MLA_GPU_PREFILL_WG_H

#include "gpu_dtype.h"
#include "gpu_mma.h"
#include "gpu_wgmma.h"

#define PW_THREADS 256
#define PW_BM 128 /* query rows a block, 64 a warpgroup */
#define PW_BN 64  /* keys a tile */
#define PW_P 128
#define PW_R 64
#define PW_V 128
#define PW_QK (PW_P + PW_R)
#define PW_QATOM (PW_BM * WG_ATOM_ROW) /* an atom of the Q tile: 128 rows, 16 KB */
#define PW_KATOM (PW_BN * WG_ATOM_ROW) /* an atom of a K or V tile: 64 rows, 8 KB */
#define PW_QT (PW_QK / 64 * PW_QATOM)  /* 48 KB */
#define PW_KT (PW_QK / 64 * PW_KATOM)  /* 24 KB */
#define PW_VT (PW_V / 64 * PW_KATOM)   /* 16 KB */
#define PW_STAGE (PW_KT + PW_VT)       /* a K/V stage, 40 KB */
#define PW_SHM(nst) (1024 + PW_QT + (nst) * PW_STAGE)
/* K and V rings of the kernels that track tiles by mbarriers (gpu_prefill_pong.hip, gpu_prefill_ws.hip):
 * 4 K tiles (24 KB) and 5 V tiles (16 KB), V being read a tile after K; then the mbarriers full[4],
 * kfree[4], vfree[5]; with Q, 225 KB */
#define PW_RNK 4
#define PW_RNV 5
#define PW_RBARS (PW_RNK * PW_KT + PW_RNV * PW_VT) /* offset of the mbarriers from the rings' start */
#define PW_RSHM (1024 + PW_QT + PW_RBARS + 8 * (2 * PW_RNK + PW_RNV))

/* Copies (cp.async, not committed) 64-key tile k of a part (keys [0, nk) at workspace rows base + key):
 * K into the tile at kt, V into the one at vt (a stage's two halves, or separate rings), ATOM bytes
 * between the tiles' 64-column atoms (64-row tiles: PW_KATOM; a 64-row half of a 128-row tile: its
 * atom); nothing for tiles k >= kmax (default: the part's last tile, so a tile past the keys stays as
 * it was; a larger kmax zero-fills it). Row tid / 4 (tid: lt, default threadIdx.x, < 256); chunks
 * q + 4 i (q = tid % 4, i < 10) of its 40 (16 k_nope, 8 k_pe, 16 v); rows past nk are zero-filled
 * (source size 0 from the part's first row). The loop over i is unrolled so that which operand and
 * atom a chunk goes to, and its source offset, are compile-time: ncu (H200 2026-12-03, P1 s 4096)
 * counted ~40 instructions a chunk with the loop starting at tid % 4 (not unrolled, three branches a
 * chunk), a third of the kernel's instructions. */
template <int ATOM = PW_KATOM>
__device__ __forceinline__ void pw_issue(const gpu_prefill_args &a, int h, int base, int nk, int k, uint8_t *kt,
                                         uint8_t *vt, int kmax = -1, int lt = -1)
{
    const int tid = lt >= 0 ? lt : threadIdx.x, ntiles = kmax >= 0 ? kmax : (nk + PW_BN - 1) / PW_BN;
    if (k >= ntiles) return;
    const int c0 = k * PW_BN, j = tid / 4, q = tid % 4, n = j < nk - c0 ? 16 : 0;
    const int64_t row = base + (n ? c0 + j : 0);
    const uint8_t *sk = reinterpret_cast<const uint8_t *>(a.kvx + row * a.h * (PW_P + PW_V) + (int64_t)h * (PW_P + PW_V));
    const uint8_t *sr = reinterpret_cast<const uint8_t *>(a.ws_kpe + row * PW_R), *sv = sk + PW_P * 2;
    /* chunk c of the row: atom c / 8 = i / 2, swizzled 16-byte slot (c % 8) ^ (j % 8), c % 8 = q + 4 (i % 2) */
    const uint32_t dk = tc_smem(kt), dv = tc_smem(vt);
    const uint32_t sw[2] = {(uint32_t)wg_sw128(j, q * 8), (uint32_t)wg_sw128(j, (q + 4) * 8)};
#pragma unroll
    for (int i = 0; i < 10; i++) {
        const int at = i / 2; /* atom: K 0-2 (k_nope 0-1, k_pe 2), V 3-4 */
        if (i < 4) tc_cp<16>(dk + at * ATOM + sw[i % 2], sk + (q + 4 * i) * 16, n);
        else if (i < 6) tc_cp<16>(dk + at * ATOM + sw[i % 2], sr + (q + 4 * i - 16) * 16, n);
        else tc_cp<16>(dv + (at - 3) * ATOM + sw[i % 2], sv + (q + 4 * i - 24) * 16, n);
    }
}

/* Issues S = Q K^T of one warpgroup (its 64 rows of Q at qa) against the K tile at kt and commits it as
 * one wgmma group; the first k16 step writes s without reading it (scale-d 0: what zeroing s and
 * accumulating gave, less 32 moves a tile). */
__device__ __forceinline__ void pw_scores(float (&s)[32], uint32_t qa, uint32_t kt)
{
    wg_fence();
    /* descriptors as one add from the tile's (ncu: ~14 instructions a wgmma with wg_desc each) */
    const uint64_t dq = wg_desc_k(qa), dk = wg_desc_k(kt);
    wg_m64n64_ss<0>(s, dq, dk);
#pragma unroll
    for (int ks = 1; ks < PW_QK / 16; ks++)
        wg_m64n64_ss(s, wg_desc_add(dq, ks / 4 * PW_QATOM + ks % 4 * 32), wg_desc_add(dk, ks / 4 * PW_KATOM + ks % 4 * 32));
    wg_commit();
}

/* Issues O += P V (P as A fragments, the 64 keys of V at vt, ATOM bytes between its two atoms) and
 * commits it as one wgmma group. */
template <int ATOM = PW_KATOM>
__device__ __forceinline__ void pw_pv(float (&o)[64], const uint32_t (&pa)[PW_BN / 16][4], uint32_t vt)
{
    const uint64_t dv = wg_desc_n(vt, ATOM);
#pragma unroll
    for (int kk = 0; kk < PW_BN / 16; kk++) wg_m64n128_rs_tb(o, pa[kk], wg_desc_add(dv, kk * 16 * WG_ATOM_ROW));
    wg_commit();
}

/* The online softmax of one 64-key tile (keys c0 ..) on the S accumulator s, in the order of the first
 * wgmma kernel: scale (and mask), row maxima over the 4 lanes of a row, corr = 2^(m_old - m_new),
 * l *= corr, then p = 2^(s - m) left in s in place while l += p0 + p1 pair by pair (the A fragments'
 * order); a row that sees no key yet takes p = 2^(-inf - 0) = 0 by one select a row, not one a score.
 * s[4 j + e]: key c0 + 8 j + 2 tq + (e % 2) of row r0 + 8 (e / 2). MASK 0 where every key of the tile
 * is visible to every row of the warpgroup (below nk and, causal, at or below its first row +
 * causal_plus): the same values without the per-key test; the product is __fmul_rn there so that it is
 * rounded once as the masked form's (its select keeps the product from fusing into s - m). */
template <int MASK>
__device__ __forceinline__ void pw_softmax(float (&s)[32], float (&m)[2], float (&l)[2], float (&corr)[2], float s_mul,
                                           int c0, int r0, int tq, int nk, int causal, int causal_plus)
{
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int i = 0; i < 32; i++) {
        if (MASK) {
            const int key = c0 + 8 * (i / 4) + 2 * tq + (i % 2), row = r0 + 8 * ((i / 2) % 2);
            const int vis = key < nk && (!causal || key <= row + causal_plus);
            s[i] = vis ? s[i] * s_mul : -INFINITY;
        } else {
            s[i] = __fmul_rn(s[i], s_mul);
        }
        mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], s[i]);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float mn = fmaxf(m[r], mx[r]);
        /* a row that sees no key yet (causal, or a padding row): kept at -inf without NaN */
        corr[r] = mn == -INFINITY ? 1.0f : tc_ex2(m[r] - mn);
        m[r] = mn;
        l[r] *= corr[r];
    }
    const float mu[2] = {m[0] == -INFINITY ? 0.0f : m[0], m[1] == -INFINITY ? 0.0f : m[1]};
    /* P: columns 16 kk .. 16 kk + 15 of the A fragments are s[8 kk .. 8 kk + 7] */
#pragma unroll
    for (int kk = 0; kk < PW_BN / 16; kk++)
#pragma unroll
        for (int f = 0; f < 4; f++) {
            const int i = 8 * kk + 2 * f, r = f % 2;
            const float p0 = tc_ex2(s[i] - mu[r]), p1 = tc_ex2(s[i + 1] - mu[r]);
            l[r] += p0 + p1;
            s[i] = p0;
            s[i + 1] = p1;
        }
}

/* Keys [0, vis_all) of a part are visible to every row of warpgroup wg: below nk and, causal, up to its
 * first row (+ causal_plus). */
__device__ __forceinline__ int pw_vis_all(const gpu_prefill_args &a, int nk, int causal, int row0, int wg)
{
    return causal ? min(nk, row0 + 64 * wg + a.causal_plus + 1) : nk;
}

/* pw_softmax of 64-key tile j of a part, with the per-key test only where a key may be hidden from a
 * row (the tile reaches past vis_all). */
__device__ __forceinline__ void pw_softmax_tile(float (&s)[32], float (&m)[2], float (&l)[2], float (&corr)[2],
                                                float s_mul, int j, int vis_all, int r0, int tq, int nk, int causal,
                                                int causal_plus)
{
    const int c0 = j * PW_BN;
    if (c0 + PW_BN <= vis_all) pw_softmax<0>(s, m, l, corr, s_mul, c0, r0, tq, nk, causal, causal_plus);
    else pw_softmax<1>(s, m, l, corr, s_mul, c0, r0, tq, nk, causal, causal_plus);
}

/* P rounded to bf16 (round to nearest even) and packed as the A fragments of O += P V. */
__device__ __forceinline__ void pw_pack(const float (&s)[32], uint32_t (&pa)[PW_BN / 16][4])
{
#pragma unroll
    for (int kk = 0; kk < PW_BN / 16; kk++)
#pragma unroll
        for (int f = 0; f < 4; f++) pa[kk][f] = tc_pack(s[8 * kk + 2 * f], s[8 * kk + 2 * f + 1]);
}

/* O *= corr, skipped where no row of the warp changed its maximum (corr 1: the same O; later tiles of a
 * long part mostly, ~64 multiplies a thread a tile). */
__device__ __forceinline__ void pw_rescale(float (&o)[64], const float (&corr)[2])
{
    if (__all_sync(0xffffffffu, corr[0] == 1.0f && corr[1] == 1.0f)) return;
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] *= corr[(i / 2) % 2];
}

/* End of a part: row sums over the 4 lanes of a row, o normalized, the part's LSE (natural). */
__device__ __forceinline__ void pw_finish(float (&o)[64], const float (&m)[2], float (&l)[2], float (&lse)[2])
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
        for (int i = 0; i < 64; i++)
            if ((i / 2) % 2 == r) o[i] *= inv;
        lse[r] = l[r] > 0.0f ? (m[r] + log2f(l[r])) * 0.69314718055994531f : -INFINITY;
    }
}

/* Q rows [r0, r0 + n) of the query tile at row0 (sequence s, head h) into the swizzled tile qs, zero past
 * the new tokens, by the nthr threads numbered lt: all of a thread's copies in flight at once (loads then
 * stores kept ~6 global round trips in sequence: 6% of the ws kernel's stall samples at P1 s 4096, ncu
 * 2026-12-04, more of a short sequence's), one commit group. */
__device__ __forceinline__ void pw_issue_q(const gpu_prefill_args &a, const gpu_seq &s, int h, int row0, uint8_t *qs,
                                           int r0, int n, int lt, int nthr)
{
    for (int i = lt; i < n * PW_QK / 8; i += nthr) {
        const int row = r0 + i / (PW_QK / 8), c = i % (PW_QK / 8), tok = row0 + row;
        const int64_t t = s.tok0 + min(tok, s.n_new - 1);
        const uint16_t *src = c < PW_P / 8 ? a.q_nope + (t * a.h + h) * PW_P + c * 8 : a.q_pe + (t * a.h + h) * PW_R + (c - PW_P / 8) * 8;
        tc_cp<16>(tc_smem(qs + c / 8 * PW_QATOM + wg_sw128(row, (c % 8) * 8)), src, tok < s.n_new ? 16 : 0);
    }
    tc_commit();
}
/* ... and waited for */
__device__ __forceinline__ void pw_stage_q(const gpu_prefill_args &a, const gpu_seq &s, int h, int row0, uint8_t *qs,
                                           int r0, int n, int lt, int nthr)
{
    pw_issue_q(a, s, h, row0, qs, r0, n, lt, nthr);
    tc_wait<0>();
}

/* The query tile at row0 (< the sequence's n_new) of sequence y, head h, around a part function
 * part(h, base, nk, causal, row0, qs, kst, o, lse) that attends keys [0, nk) at workspace rows base + key
 * and leaves the normalized output and the LSE: Q into shared memory (QWG 1: each warpgroup its own 64
 * rows, so one may restage while the other still reads its rows; 2: those rows already issued by this
 * thread (pw_issue_q), only waited for; 0: by all 256 threads; no tile copy of the thread pending), the new
 * part (causal), then the cached context and the merge when there is one, then the store. */
template <int QWG, class Part>
__device__ __forceinline__ void pw_item(const gpu_prefill_args &a, uint8_t *qs, int y, int h, int row0, Part part)
{
    uint8_t *kst = qs + PW_QT;
    const gpu_seq s = a.seqs[y];
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    if (QWG == 2) tc_wait<0>();
    else if (QWG) pw_stage_q(a, s, h, row0, qs, 64 * wg, 64, tid % 128, 128);
    else pw_stage_q(a, s, h, row0, qs, 0, PW_BM, tid, PW_THREADS);

    /* new part: keys = new tokens up to the block's last row (+ causal_plus) */
    const int last = min(row0 + PW_BM, s.n_new) - 1, nk_new = min(s.n_new, last + 1 + a.causal_plus);
    float ob[64], lb[2];
    part(h, s.ws0 + s.n_past, nk_new, 1, row0, qs, kst, ob, lb);
    float lse_out[2] = {lb[0], lb[1]};
    if (s.n_past > 0) {
        float oa[64], la[2];
        part(h, s.ws0, s.n_past, 0, row0, qs, kst, oa, la);
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float xa = a.lse_bf16 ? gd_round_bf16(la[r]) : la[r], xb = a.lse_bf16 ? gd_round_bf16(lb[r]) : lb[r];
            float mm = fmaxf(xa, xb), wa = expf(xa - mm), wb = expf(xb - mm);
            float fa = wa / (wa + wb), fb = wb / (wa + wb);
#pragma unroll
            for (int i = 0; i < 64; i++)
                if ((i / 2) % 2 == r) ob[i] = gd_round_bf16(oa[i]) * fa + gd_round_bf16(ob[i]) * fb;
            lse_out[r] = logf(wa + wb) + mm;
        }
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int tok = row0 + 64 * wg + 16 * warp + gq + 8 * r;
        if (tok >= s.n_new) continue;
        const int64_t t = s.tok0 + tok;
        uint16_t *dst = a.out + (t * a.h + h) * PW_V;
#pragma unroll
        for (int j = 0; j < PW_V / 8; j++) {
            const uint32_t pk = (uint32_t)gd_f32_to_bf16(ob[4 * j + 2 * r]) | (uint32_t)gd_f32_to_bf16(ob[4 * j + 2 * r + 1]) << 16;
            *reinterpret_cast<uint32_t *>(dst + 8 * j + 2 * tq) = pk;
        }
        if (tq == 0) a.lse[t * a.h + h] = lse_out[r];
    }
}

/* One block (blockIdx: query tile, sequence, head) of pw_item, the last query tiles (the most keys under
 * the causal mask) first: a shorter tail. */
template <class Part> __device__ __forceinline__ void pw_block(const gpu_prefill_args &a, uint8_t *mem, Part part)
{
    uint8_t *qs = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(mem) + 1023) & ~(uintptr_t)1023);
    const int row0 = (gridDim.x - 1 - blockIdx.x) * PW_BM;
    if (row0 >= a.seqs[blockIdx.y].n_new) return; /* the whole block: fewer new tokens in this sequence */
    pw_item<0>(a, qs, blockIdx.y, blockIdx.z, row0, part);
}

#endif
