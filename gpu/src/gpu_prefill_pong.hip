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
 * producer warpgroup. The rings and the consumer's part are gpu_prefill_ring.h's (pr_part, COPY 1). */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_ring.h"

__global__ void __launch_bounds__(PW_THREADS, 1) k_attn_prefill_pong(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t pg_mem[];
    uint8_t *kst = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(pg_mem) + 1023) & ~(uintptr_t)1023) + PW_QT;
    if (threadIdx.x == 0) pr_init(kst, PW_THREADS); /* pr_part's first __syncthreads publishes them */
    int t0 = 0;                                      /* tiles of the block's earlier parts */
    pw_block(a, pg_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst_, float(&o)[64],
                            float(&lse)[2]) {
        pr_part<1, 1>(a, s_mul, h, base, nk, causal, row0, qs, kst_, t0, o, lse);
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
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_RSHM));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_pong<<<grid, PW_THREADS, PW_RSHM, st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_pong");
    return MLA_OK;
}

#endif
