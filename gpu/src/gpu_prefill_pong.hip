/* gpu_prefill_pong.hip: the pipelined wgmma prefill (gpu_prefill_pipe.hip: 128 query rows a block on
 * two warpgroups, 64-key tiles, S of tile k and P V of tile k - 1 issued together, the softmax of tile k
 * under P V(k - 1)) with FlashAttention-3's ping-pong of the two warpgroups: they take turns at the
 * tensor cores (two named barriers), so one warpgroup's softmax runs under the other's wgmmas.
 *
 * Why: ncu of the pipe kernel (H200 2026-12-04, P1 s 4096, c6b1d58): 502 warp instructions a tile, 0.32
 * issued per scheduler, 68% of cycles with no eligible warp, tensor pipe 39% busy. Both warpgroups met
 * at a __syncthreads every tile (a stage's copies are spread over all 256 threads, and a stage is
 * refilled once both are done with it), so they ran in lockstep and the tensor cores idled through
 * both softmaxes at once. Here that barrier is gone: tile readiness and stage reuse are mbarriers with
 * phases, so the warpgroups can run half a tile apart:
 *   full[t % 4]    256 arrivals (each thread's cp.async of tile t landed, cp.async.mbarrier.arrive);
 *   kfree[t % 4]   256 arrivals after S(t) is waited (K of tile t read);
 *   vfree[t % 5]   256 arrivals after P V(t) is waited (V of tile t read).
 * K and V live in separate rings, 4 K tiles (24 KB) and 5 V tiles (16 KB), because V(t) is read a tile
 * later than K(t); with the 48 KB Q tile that is 225 KB, and tile t + 3 is copied at the end of tile t's
 * step (3 tiles ahead, as in the pipe kernel) without waiting for the other warpgroup in the steady
 * state: K(t - 1) and V(t - 2) are the tiles it overwrites, and the lagging warpgroup is done with both
 * by then. t counts tiles over the block's parts (new tokens, then cached context), so the phases run
 * on across them. Turns: warpgroup 0 issues its wgmmas of step k, then lets warpgroup 1 issue its own,
 * which then lets warpgroup 0 issue step k + 1 (bar.sync / bar.arrive on ids 1 and 2, each pairing 128
 * arrivals with 128 waits; the two warpgroups alternate on each so no phase is ever skipped).
 *
 * Numerics: bit-identical to gpu_prefill_pipe.hip (and so to gpu_prefill_wg.hip): each warpgroup runs
 * the same helpers (gpu_prefill_wg.h) on the same values in the same order; only when the wgmmas are
 * issued relative to the other warpgroup's changes. Tile 0 stays peeled off the loop and O and P
 * pinned before the fence, as in the pipe kernel (ptxas serializes the wgmmas otherwise).
 *
 * Result (H200 2026-12-04, 067806e, mla_gpu_bench P1 rows; gpu/bench/KERNELS.md): bit-identical to the
 * pipe kernel on all four rows and in the gpu suite's cases, but 3-5% slower (s 4096 1,930.7 us against
 * 1,872.7; 8192 6,767.1 / 6,479.9; 16384 25,530.3 / 24,389.8; b16 s 1024 equal). ncu at s 4096: 552
 * warp instructions a tile (the mbarrier waits and arrivals; pipe 502), tensor pipe 38% busy (39%),
 * 0.34 issued per scheduler, and warpgroup 0 stalled 5% of samples at its turn: with 64-key tiles a
 * warpgroup's turn of wgmmas (12 m64n64k16 + 4 m64n128k16, ~640 tensor cycles) is shorter than its
 * softmax, so the turns wait on the softmax instead of hiding it. Kept, off by default, as the ring
 * and barrier scheme the next step needs: 128-key tiles (a turn twice as long per barrier), then a
 * producer warpgroup. */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_wg.h"

#define PG_NK PW_RNK /* the rings: gpu_prefill_wg.h */
#define PG_NV PW_RNV
#define PG_BARS PW_RBARS
#define PG_SHM PW_RSHM
#define PG_TURN0 1 /* named barrier: warpgroup 0 may issue */
#define PG_TURN1 2 /* warpgroup 1 may issue */

/* One part (keys [0, nk) at workspace rows base + key) from global tile t0 on; as pp_part, pipelined
 * and in turns. Leaves the normalized output in o and the part's LSE (natural) in lse. */
__device__ void pg_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
                        uint8_t *qs, uint8_t *kst, int t0, float (&o)[64], float (&lse)[2])
{
    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0); /* warp-uniform to the compiler */
    const int ntiles = (nk + PW_BN - 1) / PW_BN;
    const uint32_t kr = tc_smem(kst), vr = kr + PG_NK * PW_KT, full = kr + PG_BARS, kfree = full + 8 * PG_NK,
                   vfree = kfree + 8 * PG_NK;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.0f;
    wg_proxy_fence(); /* this thread's Q stores (pw_block) before the wgmmas' reads */
    __syncthreads();  /* Q written, the barriers initialized, the previous part's turns done */
    /* tile k of this part into the rings once K(t - 4) and V(t - 5) are read; its full[] arrival */
    auto issue = [&](int k) {
        if (k >= ntiles) return;
        const int t = t0 + k;
        if (t >= PG_NK) wg_mb_wait(kfree + 8 * (t % PG_NK), (t / PG_NK - 1) & 1);
        if (t >= PG_NV) wg_mb_wait(vfree + 8 * (t % PG_NV), (t / PG_NV - 1) & 1);
        pw_issue(a, h, base, nk, k, kst + (t % PG_NK) * PW_KT, kst + PG_NK * PW_KT + (t % PG_NV) * PW_VT);
        wg_mb_cp_arrive(full + 8 * (t % PG_NK));
    };
    auto ready = [&](int t) { /* tile t copied (all threads' parts of it) */
        wg_mb_wait(full + 8 * (t % PG_NK), (t / PG_NK) & 1);
        wg_proxy_fence();
    };
    /* turn k of this warpgroup: warpgroup 0 waits for none at k = 0; warpgroup 1 hands no turn back
     * after its last step (the tail), so each barrier sees as many arrivals as waits */
    auto turn_wait = [&](int k) {
        if (wg == 0) {
            if (k > 0) wg_bar_sync(PG_TURN0, PW_THREADS);
        } else {
            wg_bar_sync(PG_TURN1, PW_THREADS);
        }
    };
    auto turn_pass = [&](int k) {
        if (wg == 0) wg_bar_arrive(PG_TURN1, PW_THREADS);
        else if (k < ntiles) wg_bar_arrive(PG_TURN0, PW_THREADS);
    };
    issue(0);
    issue(1);
    issue(2);
    const int r0 = row0 + 64 * wg + 16 * warp + gq; /* this thread's rows r0 and r0 + 8 (new-token index) */
    const int vis_all = causal ? min(nk, row0 + 64 * wg + a.causal_plus + 1) : nk;
    const uint32_t qa = tc_smem(qs) + wg * 64 * WG_ATOM_ROW;
    uint32_t pa[PW_BN / 16][4];
    float s[32], corr[2];
    auto softmax = [&](int k) {
        const int c0 = k * PW_BN;
        if (c0 + PW_BN <= vis_all) pw_softmax<0>(s, m, l, corr, s_mul, c0, r0, tq, nk, causal, a.causal_plus);
        else pw_softmax<1>(s, m, l, corr, s_mul, c0, r0, tq, nk, causal, a.causal_plus);
    };
    if (ntiles > 0) { /* step 0: S only */
        ready(t0);
        turn_wait(0);
        pw_scores(s, qa, kr + (t0 % PG_NK) * PW_KT);
        turn_pass(0);
        wg_wait<0>();
        wg_mb_arrive(kfree + 8 * (t0 % PG_NK));
        wg_fence_operand(s);
        softmax(0);
        pw_pack(s, pa);
        pw_rescale(o, corr);
        issue(3);
    }
    for (int k = 1; k < ntiles; k++) {
        const int t = t0 + k;
        ready(t);
        turn_wait(k);
        wg_fence_operand(o); /* O and P in their registers before pw_scores' wg_fence */
        wg_fence_operand(pa);
        pw_scores(s, qa, kr + (t % PG_NK) * PW_KT);
        pw_pv(o, pa, vr + ((t - 1) % PG_NV) * PW_VT);
        turn_pass(k);
        wg_wait<1>(); /* S(k) done, P V(k - 1) runs on */
        wg_mb_arrive(kfree + 8 * (t % PG_NK));
        wg_fence_operand(s);
        softmax(k);
        wg_wait<0>(); /* P V(k - 1) done: O, the previous P and V(t - 1) are free */
        wg_mb_arrive(vfree + 8 * ((t - 1) % PG_NV));
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence_operand(s);
        pw_pack(s, pa);
        pw_rescale(o, corr);
        issue(k + 3);
    }
    if (ntiles > 0) { /* the tail: P V of the last tile, in turn */
        const int t = t0 + ntiles - 1;
        turn_wait(ntiles);
        wg_fence();
        pw_pv(o, pa, vr + (t % PG_NV) * PW_VT);
        turn_pass(ntiles);
        wg_wait<0>();
        wg_fence_operand(o);
        wg_mb_arrive(vfree + 8 * (t % PG_NV));
    }
    pw_finish(o, m, l, lse);
}

__global__ void __launch_bounds__(PW_THREADS, 1) k_attn_prefill_pong(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t pg_mem[];
    if (threadIdx.x == 0) { /* pg_part's first __syncthreads publishes them */
        const uint32_t bars = tc_smem(reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(pg_mem) + 1023) & ~(uintptr_t)1023) +
                                      PW_QT + PG_BARS);
        for (int i = 0; i < 2 * PG_NK + PG_NV; i++) wg_mb_init(bars + 8 * i, PW_THREADS);
    }
    int t0 = 0; /* tiles of the block's earlier parts */
    pw_block(a, pg_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst, float(&o)[64],
                            float(&lse)[2]) {
        pg_part(a, s_mul, h, base, nk, causal, row0, qs, kst, t0, o, lse);
        t0 += (nk + PW_BN - 1) / PW_BN;
    });
}

/* This kernel where the pipe kernel fits with MLA_GPU_PREFILL_PONG=1 (read once); off by default: it is
 * 3-5% slower than the pipe kernel (above). */
extern "C" int gpu_prefill_pong_on(void)
{
    static const int on = gpu_env_switch("MLA_GPU_PREFILL_PONG", 1);
    return on;
}

extern "C" mla_status gpu_attn_prefill_pong(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_wg_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: ping-pong wgmma prefill: needs P 128, R 64, V 128 (have %d, %d, %d)",
                          a->p, a->r, a->v);
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_pong),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PG_SHM));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_pong<<<grid, PW_THREADS, PG_SHM, st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_pong");
    return MLA_OK;
}

#endif
