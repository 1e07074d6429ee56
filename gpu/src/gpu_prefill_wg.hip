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
 * the cached context, each normalized; with context, both rounded to bf16 and merged by LSE in fp32.
 * The serial form (MLA_GPU_PREFILL_PIPE=0). Its steps are gpu_prefill_wg.h's, shared with the pipelined
 * default (gpu_prefill_pipe.hip); moving them there left this kernel's PTX with the same arithmetic
 * instructions (the cvt of P now after the row sums, 213 registers against 216). */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_wg.h"

#define PW_NST 3

/* One part: keys [0, nk) at workspace rows base + key, causal against the rows' own new index when
 * causal. Leaves the normalized output in o and the part's LSE (natural) in lse. Per tile, S, the
 * softmax and O += P V one after the other (gpu_prefill_pipe.hip overlaps them). */
__device__ void pw_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
                        uint8_t *qs, uint8_t *kst, float (&o)[64], float (&lse)[2])
{
    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int wg = wg_index();
    const int ntiles = (nk + PW_BN - 1) / PW_BN;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.0f;
    __syncthreads(); /* the previous part is done with the stages */
#pragma unroll
    for (int k = 0; k < PW_NST; k++) {
        pw_issue(a, h, base, nk, k, kst + (k % PW_NST) * PW_STAGE, kst + (k % PW_NST) * PW_STAGE + PW_KT);
        tc_commit();
    }
    const int r0 = row0 + 64 * wg + 16 * warp + gq; /* this thread's rows r0 and r0 + 8 (new-token index) */
    const uint32_t qa = tc_smem(qs) + wg * 64 * WG_ATOM_ROW;
    for (int it = 0; it < ntiles; it++) {
        tc_wait<PW_NST - 1>();
        wg_proxy_fence();
        __syncthreads();
        const uint32_t kt = tc_smem(kst + (it % PW_NST) * PW_STAGE), vt = kt + PW_KT;
        float s[32];
        pw_scores(s, qa, kt);
        wg_wait<0>();

        float corr[2];
        pw_softmax<1>(s, m, l, corr, s_mul, it * PW_BN, r0, tq, nk, causal, a.causal_plus);
        uint32_t pa[PW_BN / 16][4];
        pw_pack(s, pa);
        pw_rescale(o, corr);
        wg_fence();
        pw_pv(o, pa, vt);
        wg_wait<0>();
        __syncthreads(); /* stage it % PW_NST consumed by both warpgroups */
        const int k = it + PW_NST;
        pw_issue(a, h, base, nk, k, kst + (k % PW_NST) * PW_STAGE, kst + (k % PW_NST) * PW_STAGE + PW_KT);
        tc_commit();
    }
    pw_finish(o, m, l, lse);
}

__global__ void __launch_bounds__(PW_THREADS, 1) k_attn_prefill_wg(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t pw_mem[];
    pw_block(a, pw_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst, float(&o)[64],
                            float(&lse)[2]) { pw_part(a, s_mul, h, base, nk, causal, row0, qs, kst, o, lse); });
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
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_SHM(PW_NST)));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_wg<<<grid, PW_THREADS, PW_SHM(PW_NST), st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_wg");
    return MLA_OK;
}

#endif
