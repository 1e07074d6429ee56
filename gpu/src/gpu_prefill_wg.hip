/* gpu_prefill_wg.hip: the naive-form (MHA) prefill on Hopper's warpgroup MMA (wgmma, sm_90a), for
 * DeepSeek's d_qk 192 (P 128 + R 64) and d_v 128; gpu_attn_prefill_mma chooses it wherever it fits.
 *
 * FlashAttention-3's consumer shape without its producer warp: one block of two warpgroups owns 128
 * new-token rows of one sequence and one head, 64 rows a warpgroup. Key tiles of 64 rows (K = [k_nope |
 * k_pe], V) are copied by cp.async into 128-byte-swizzled tiles, three stages, and serve both
 * warpgroups. Per tile and warpgroup: S = Q K^T (12 m64n64k16, Q and K from shared memory), the
 * online softmax on the accumulator (a row lives in 4 lanes), P rounded to bf16 and repacked in
 * registers as the A operand of O += P V (4 m64n128k16, V read N-major). 64-key tiles as the mma
 * kernel's, so the reference's attn_tc emulation (mla_attn_tc_tile) holds for both.
 * Parts and merge as the other prefill kernels (reference/NUMERICS.md): new tokens (causal) first, then
 * the cached context, each normalized; with context, both rounded to bf16 and merged by LSE in fp32. */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

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
#define PW_NST 3
#define PW_QATOM (PW_BM * WG_ATOM_ROW) /* an atom of the Q tile: 128 rows, 16 KB */
#define PW_KATOM (PW_BN * WG_ATOM_ROW) /* an atom of a K or V tile: 64 rows, 8 KB */
#define PW_QT (PW_QK / 64 * PW_QATOM)  /* 48 KB */
#define PW_KT (PW_QK / 64 * PW_KATOM)  /* 24 KB */
#define PW_VT (PW_V / 64 * PW_KATOM)   /* 16 KB */
#define PW_SHM (1024 + PW_QT + PW_NST * (PW_KT + PW_VT))

/* One part: keys [0, nk) at workspace rows base + key, causal against the rows' own new index when
 * causal. Leaves the normalized output in o and the part's LSE (natural) in lse. */
__device__ void pw_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
                        uint8_t *qs, uint8_t *kst, float (&o)[64], float (&lse)[2])
{
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int ntiles = (nk + PW_BN - 1) / PW_BN;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.0f;
    /* tile k into stage k % PW_NST: row tid / 4; chunks tid % 4 + 4 i of its 40 (16 k_nope, 8 k_pe, 16 v) */
    auto issue = [&](int k) {
        if (k >= ntiles) return;
        const int c0 = k * PW_BN, j = tid / 4, ok = j < nk - c0;
        const int64_t row = base + c0 + (ok ? j : 0);
        const uint8_t *sk = reinterpret_cast<const uint8_t *>(a.kvx + row * a.h * (PW_P + PW_V) + (int64_t)h * (PW_P + PW_V));
        const uint8_t *sr = reinterpret_cast<const uint8_t *>(a.ws_kpe + row * PW_R), *sv = sk + PW_P * 2;
        uint8_t *kt = kst + (k % PW_NST) * (PW_KT + PW_VT), *vt = kt + PW_KT;
        const uint32_t dk = tc_smem(kt), dv = tc_smem(vt);
        for (int c = tid % 4; c < 40; c += 4) {
            if (c < 24) { /* K columns 8 c .. 8 c + 7 */
                const uint8_t *src = c < 16 ? sk + c * 16 : sr + (c - 16) * 16;
                tc_cp<16>(dk + (c / 8) * PW_KATOM + wg_sw128(j, (c % 8) * 8), ok ? src : sk, ok ? 16 : 0);
            } else {
                const int cv = c - 24;
                tc_cp<16>(dv + (cv / 8) * PW_KATOM + wg_sw128(j, (cv % 8) * 8), ok ? sv + cv * 16 : sk, ok ? 16 : 0);
            }
        }
    };
    __syncthreads(); /* the previous part is done with the stages */
#pragma unroll
    for (int k = 0; k < PW_NST; k++) {
        issue(k);
        tc_commit();
    }
    const int r0 = row0 + 64 * wg + 16 * warp + gq; /* this thread's rows r0 and r0 + 8 (new-token index) */
    const uint32_t qa = tc_smem(qs) + wg * 64 * WG_ATOM_ROW;
    for (int it = 0; it < ntiles; it++) {
        tc_wait<PW_NST - 1>();
        wg_proxy_fence();
        __syncthreads();
        const uint32_t kt = tc_smem(kst + (it % PW_NST) * (PW_KT + PW_VT)), vt = kt + PW_KT;
        float s[32];
#pragma unroll
        for (int i = 0; i < 32; i++) s[i] = 0.0f;
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < PW_QK / 16; ks++)
            wg_m64n64_ss(s, wg_desc_k(qa + ks / 4 * PW_QATOM + ks % 4 * 32), wg_desc_k(kt + ks / 4 * PW_KATOM + ks % 4 * 32));
        wg_commit();
        wg_wait<0>();

        /* s[4 j + e]: key c0 + 8 j + 2 tq + (e % 2) of row r0 + 8 (e / 2) */
        const int c0 = it * PW_BN;
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int i = 0; i < 32; i++) {
            const int key = c0 + 8 * (i / 4) + 2 * tq + (i % 2), row = r0 + 8 * ((i / 2) % 2);
            const int vis = key < nk && (!causal || key <= row + a.causal_plus);
            s[i] = vis ? s[i] * s_mul : -INFINITY;
            mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], s[i]);
        }
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float mn = fmaxf(m[r], mx[r]);
            /* a row that sees no key yet (causal, or a padding row): kept at -inf without NaN */
            corr[r] = mn == -INFINITY ? 1.0f : exp2f(m[r] - mn);
            m[r] = mn;
            l[r] *= corr[r];
        }
        /* P as A fragments: columns 16 kk .. 16 kk + 15 are s[8 kk .. 8 kk + 7] */
        uint32_t pa[PW_BN / 16][4];
#pragma unroll
        for (int kk = 0; kk < PW_BN / 16; kk++)
#pragma unroll
            for (int f = 0; f < 4; f++) {
                const int i = 8 * kk + 2 * f, r = f % 2;
                const float p0 = m[r] == -INFINITY ? 0.0f : exp2f(s[i] - m[r]);
                const float p1 = m[r] == -INFINITY ? 0.0f : exp2f(s[i + 1] - m[r]);
                l[r] += p0 + p1;
                pa[kk][f] = tc_pack(p0, p1);
            }
#pragma unroll
        for (int i = 0; i < 64; i++) o[i] *= corr[(i / 2) % 2];
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < PW_BN / 16; kk++) wg_m64n128_rs_tb(o, pa[kk], wg_desc_n(vt + kk * 16 * WG_ATOM_ROW, PW_KATOM));
        wg_commit();
        wg_wait<0>();
        __syncthreads(); /* stage it % PW_NST consumed by both warpgroups */
        issue(it + PW_NST);
        tc_commit();
    }
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

__global__ void __launch_bounds__(PW_THREADS, 1) k_attn_prefill_wg(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t pw_mem[];
    uint8_t *qs = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(pw_mem) + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = qs + PW_QT;
    const gpu_seq s = a.seqs[blockIdx.y];
    /* the last query tiles (the most keys under the causal mask) first: a shorter tail */
    const int h = blockIdx.z, row0 = (gridDim.x - 1 - blockIdx.x) * PW_BM;
    if (row0 >= s.n_new) return; /* the whole block: fewer new tokens in this sequence */
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    for (int i = tid; i < PW_BM * PW_QK / 8; i += PW_THREADS) { /* Q rows, zero past the new tokens */
        const int row = i / (PW_QK / 8), c = i % (PW_QK / 8), tok = row0 + row;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (tok < s.n_new) {
            const int64_t t = s.tok0 + tok;
            x = c < PW_P / 8 ? *reinterpret_cast<const uint4 *>(a.q_nope + (t * a.h + h) * PW_P + c * 8)
                             : *reinterpret_cast<const uint4 *>(a.q_pe + (t * a.h + h) * PW_R + (c - PW_P / 8) * 8);
        }
        *reinterpret_cast<uint4 *>(qs + c / 8 * PW_QATOM + wg_sw128(row, (c % 8) * 8)) = x;
    }

    /* new part: keys = new tokens up to the block's last row (+ causal_plus) */
    const int last = min(row0 + PW_BM, s.n_new) - 1, nk_new = min(s.n_new, last + 1 + a.causal_plus);
    float ob[64], lb[2];
    pw_part(a, s_mul, h, s.ws0 + s.n_past, nk_new, 1, row0, qs, kst, ob, lb);
    float lse_out[2] = {lb[0], lb[1]};
    if (s.n_past > 0) {
        float oa[64], la[2];
        pw_part(a, s_mul, h, s.ws0, s.n_past, 0, row0, qs, kst, oa, la);
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

extern "C" int gpu_prefill_wg_fits(int p, int r, int v) { return p == PW_P && r == PW_R && v == PW_V; }

extern "C" mla_status gpu_attn_prefill_wg(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_wg_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: wgmma prefill: needs P 128, R 64, V 128 (have %d, %d, %d)", a->p,
                          a->r, a->v);
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_wg),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_SHM));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_wg<<<grid, PW_THREADS, PW_SHM, st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_wg");
    return MLA_OK;
}

#endif
