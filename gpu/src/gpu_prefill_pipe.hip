/* gpu_prefill_pipe.hip: the wgmma prefill (gpu_prefill_wg.hip: 128 query rows a block on two
 * warpgroups, 64-key tiles, d_qk 192 = P 128 + R 64, d_v 128) with FlashAttention-3's intra-warpgroup
 * overlap of the softmax and the P V GEMM, and causal tiles split into masked and unmasked ones.
 * MLA_GPU_PREFILL_WS=0 picks it (the default is its warp-specialized form, gpu_prefill_ws.hip);
 * MLA_GPU_PREFILL_PIPE=0 (read once) gives the serial gpu_prefill_wg.hip.
 *
 * Why this step first (of FA3's: (a) intra-warpgroup overlap, (b) warpgroup ping-pong, (c) a producer
 * warp with TMA, (d) causal tile skipping and masked/unmasked loops). The serial kernel runs, per tile
 * and warpgroup, S (12 m64n64k16), then the softmax, then P V (4 m64n128k16), and both warpgroups meet
 * at two __syncthreads a tile, so they run in lockstep: the tensor cores idle through both softmaxes
 * (ncu at 8k: 50.4% of cycles with no eligible warp, 0.50 issued per scheduler). (a) is the change with
 * the most overlap per line: the P V of tile j - 1 is issued right behind the S of tile j, the warps
 * wait for S only (wgmma.wait_group 1) and run tile j's softmax while P V(j - 1) runs (FA3's Algorithm
 * 2: its second S accumulator is not needed because S(j) is waited before the softmax; P of tile j - 1
 * stays in its 16 registers until P V(j - 1) is waited). Registers stay near the serial kernel's (S 32
 * + P 16 + O 64 live across the softmax in both). (d) comes almost free with it: only the last two
 * tiles of a block's new part (and a part's tail tile) need the per-key causal test; the others take
 * pw_softmax<0>, which drops ~4 integer instructions a score. Also one __syncthreads a tile instead of
 * two: a stage is refilled right after the next tile's barrier (which every thread reaches only after
 * waiting for the P V that read it), four stages deep so the copies still run two tiles ahead. (b)
 * needs named barriers between the warpgroups on top of this and (c) an mbarrier pipeline (TMA
 * descriptors for the naive-form workspace): larger changes with more to get wrong unmeasured; they
 * are the next steps, and (b) gains more once (a) is known to hold. (b) is gpu_prefill_pong.hip
 * (2026-12-04: bit-identical, 3-5% slower at these 64-key tiles; off by default).
 *
 * Numerics: bit-identical to gpu_prefill_wg.hip. Both run the same helpers (gpu_prefill_wg.h) in the
 * same order on the same values: per 64-key tile, S from the same wgmmas, scale and mask, the row
 * maximum, corr, l *= corr, p = 2^(s - m) and l += p0 + p1 in the same pair order, P rounded to bf16 per
 * tile (cvt.rn), then O *= corr and O += P V, tile after tile: O_j = O_{j-1} corr_j + P_j V_j as
 * before, only with O *= corr_j issued after P V(j - 1) completes and P V(j) one iteration later. The
 * unmasked softmax differs from the masked one only in dropping a select that is always true there
 * (its product is __fmul_rn, rounded once as the masked form's).
 *
 * Build notes (nvcc 13, sm_90a): 238 registers (255 before c6b1d58), 0 spills, 209 KB of shared
 * memory (one block of 8 warps an SM, as before). ptxas serializes the wgmmas (C7514 / C7520 infos)
 * unless the P V is in straight-line code after the S (tile 0 is peeled off the loop) and O and P are
 * pinned (wg_fence_operand) before the fence that precedes them: keep it so when editing. */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_wg.h"

#define PP_NST 4 /* stages: tile it + 2 is copied while tile it is computed */

/* One part, as gpu_prefill_wg.hip's pw_part, pipelined. Iteration it: wait for tile it's copies, one
 * barrier, issue S(it) and P V(it - 1), refill the stage of tile it - 2 with tile it + PP_NST - 2, wait
 * for S(it), softmax(it) while P V(it - 1) runs, wait for P V(it), O *= corr(it), pack P(it). */
__device__ void pp_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
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
    for (int k = 0; k < PP_NST; k++) {
        pw_issue(a, h, base, nk, k, kst + k * PW_STAGE, kst + k * PW_STAGE + PW_KT);
        tc_commit();
    }
    const int r0 = row0 + 64 * wg + 16 * warp + gq; /* this thread's rows r0 and r0 + 8 (new-token index) */
    const int vis_all = pw_vis_all(a, nk, causal, row0, wg);
    const uint32_t qa = tc_smem(qs) + wg * 64 * WG_ATOM_ROW;
    uint32_t pa[PW_BN / 16][4]; /* P of the previous tile, read by its P V in flight */
    float s[32], corr[2];
    auto softmax = [&](int it) { pw_softmax_tile(s, m, l, corr, s_mul, it, vis_all, r0, tq, nk, causal, a.causal_plus); };
    auto stage = [&](int k) { return tc_smem(kst + (k % PP_NST) * PW_STAGE); };
    if (ntiles > 0) { /* tile 0: S, softmax (no P V before it); an empty copy group keeps the count */
        tc_wait<PP_NST - 1>();
        wg_proxy_fence();
        __syncthreads();
        pw_scores(s, qa, stage(0));
        tc_commit();
        wg_wait<0>();
        wg_fence_operand(s);
        softmax(0);
        pw_pack(s, pa);
        pw_rescale(o, corr);
    }
    for (int it = 1; it < ntiles; it++) {
        /* commit groups: PP_NST (tiles 0 .. PP_NST - 1), then one an iteration (tile it + PP_NST - 2 from
         * it = 2, empty before): tile it is complete with PP_NST - 1 groups pending up to it = PP_NST - 1
         * and PP_NST - 3 after */
        if (it < PP_NST) tc_wait<PP_NST - 1>();
        else tc_wait<PP_NST - 3>();
        wg_proxy_fence();
        __syncthreads(); /* tile it visible to both warpgroups; both are done with tile it - 2 */
        wg_fence_operand(o); /* O and P in their registers before pw_scores' wg_fence */
        wg_fence_operand(pa);
        pw_scores(s, qa, stage(it));
        pw_pv(o, pa, stage(it - 1) + PW_KT);
        if (it >= 2) {
            const int k = it + PP_NST - 2;
            pw_issue(a, h, base, nk, k, kst + (k % PP_NST) * PW_STAGE, kst + (k % PP_NST) * PW_STAGE + PW_KT);
        }
        tc_commit();
        wg_wait<1>(); /* S(it) done, P V(it - 1) runs on */
        wg_fence_operand(s);
        softmax(it);
        wg_wait<0>(); /* P V(it - 1) done: O and the previous P are free */
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence_operand(s);
        pw_pack(s, pa);
        pw_rescale(o, corr); /* the next pw_scores' wg_fence orders these writes before P V(it) */
    }
    if (ntiles > 0) {
        wg_fence();
        pw_pv(o, pa, stage(ntiles - 1) + PW_KT);
        wg_wait<0>();
        wg_fence_operand(o);
    }
    pw_finish(o, m, l, lse);
}

__global__ void __launch_bounds__(PW_THREADS, 1) k_attn_prefill_pipe(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t pp_mem[];
    pw_block(a, pp_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst, float(&o)[64],
                            float(&lse)[2]) { pp_part(a, s_mul, h, base, nk, causal, row0, qs, kst, o, lse); });
}

/* The pipelined schedule (this kernel and its variants) where gpu_prefill_wg.hip's fits: bit-identical to
 * it and 1.05-1.07x faster on P1 (2026-12-03, gpu/bench/KERNELS.md); MLA_GPU_PREFILL_PIPE=0, read once,
 * the serial one. */
extern "C" int gpu_prefill_pipe_on(void)
{
    static const int off = gpu_env_off("MLA_GPU_PREFILL_PIPE");
    return !off;
}

extern "C" mla_status gpu_attn_prefill_pipe(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_wg_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: pipelined wgmma prefill: needs P 128, R 64, V 128 (have %d, %d, %d)",
                          a->p, a->r, a->v);
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_pipe),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_SHM(PP_NST)));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_pipe<<<grid, PW_THREADS, PW_SHM(PP_NST), st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_pipe");
    return MLA_OK;
}

#endif
