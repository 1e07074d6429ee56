/* gpu_prefill_ws.hip: the pipelined wgmma prefill (gpu_prefill_pipe.hip's schedule: S of tile k and
 * P V of tile k - 1 issued together, the softmax of tile k under P V(k - 1)) with FlashAttention-3's
 * warp specialization: a third warpgroup (threads 256-383) only copies K/V tiles (cp.async into
 * gpu_prefill_wg.h's K and V rings, one mbarrier arrival per thread and tile when its copies land)
 * and gives registers back (setmaxnreg 56), while the two consumer warpgroups (threads 0-255, 64 query
 * rows each) only compute, with 224 registers, and never wait for each other within a part: a tile is
 * ready when its full[] phase completes, and a consumer frees K(t) after S(t) and V(t) after P V(t)
 * (kfree[], vfree[]: 256 arrivals). MLA_GPU_PREFILL_WS=1 picks it; =2 adds gpu_prefill_pong.hip's turns
 * of the consumers at the tensor cores. Off by default: not yet run on a GPU.
 *
 * Why (ncu of the pipe kernel, H200 2026-12-04, P1 s 4096, c6b1d58): tensor pipe 39% busy, 68% of
 * cycles without an eligible warp, the stalls those of one tile's chain (barrier, S, its wait, the
 * softmax, the wait for P V); both warpgroups met at a __syncthreads a tile because each stage's
 * copies were spread over all 256 threads. Here the copies, their address math (~50 instructions a
 * thread a tile) and that barrier leave the consumers, which can run out of step.
 *
 * Phases: t counts the block's tiles over its parts (new tokens, then cached context) in the producer
 * and in the consumers alike, so full[t % 4] completes its phase t / 4 when tile t has landed, and
 * each wait names a phase whose predecessor the waiter has already seen complete (no parity aliasing).
 * The producer waits for kfree(t - 4) and vfree(t - 5) before copying tile t, and drains its copies
 * (cp.async.wait_all) before it leaves. Numerics: the pipe kernel's, bit for bit (the same helpers on
 * the same values in the same order in each consumer).
 *
 * Registers (nvcc 13 -Xptxas -v): launched at 168 a thread (384 threads), then 56 for the producer and
 * 224 for the consumers (2 x 128 x 224 + 128 x 56 = 64,512 of 65,536): no spills; 40 / 232 spilled 16
 * bytes in the producer (its two rows' copy addresses), 24 / 240 spilled 104. */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_wg.h"

#define WS_THREADS (PW_THREADS + 128) /* two consumer warpgroups and the producer */
#define WS_QBAR 1                     /* named barrier of the 256 consumer threads: Q stored */
#define WS_TURN0 2                    /* named barriers of the turns (=2): consumer 0 may issue */
#define WS_TURN1 3                    /* consumer 1 may issue */

/* The producer warpgroup: every tile of the block's parts, in the consumers' order (pw_block's). */
__device__ void ws_produce(const gpu_prefill_args &a, uint8_t *kst)
{
    const int lt = threadIdx.x - PW_THREADS; /* 0 .. 127: rows lt / 4 and 32 + lt / 4 of a tile */
    const gpu_seq s = a.seqs[blockIdx.y];
    const int h = blockIdx.z, row0 = (gridDim.x - 1 - blockIdx.x) * PW_BM;
    if (row0 >= s.n_new) return; /* as pw_block */
    const int last = min(row0 + PW_BM, s.n_new) - 1, nk_new = min(s.n_new, last + 1 + a.causal_plus);
    const uint32_t full = tc_smem(kst) + PW_RBARS, kfree = full + 8 * PW_RNK, vfree = kfree + 8 * PW_RNK;
    int t = 0;
    auto part = [&](int base, int nk) {
        const int ntiles = (nk + PW_BN - 1) / PW_BN;
        for (int k = 0; k < ntiles; k++, t++) {
            if (t >= PW_RNK) wg_mb_wait(kfree + 8 * (t % PW_RNK), (t / PW_RNK - 1) & 1);
            if (t >= PW_RNV) wg_mb_wait(vfree + 8 * (t % PW_RNV), (t / PW_RNV - 1) & 1);
            uint8_t *kt = kst + (t % PW_RNK) * PW_KT, *vt = kst + PW_RNK * PW_KT + (t % PW_RNV) * PW_VT;
            pw_issue(a, h, base, nk, k, kt, vt, -1, lt);
            pw_issue(a, h, base, nk, k, kt, vt, -1, lt + 128);
            wg_mb_cp_arrive(full + 8 * (t % PW_RNK));
        }
    };
    part(s.ws0 + s.n_past, nk_new);
    if (s.n_past > 0) part(s.ws0, s.n_past);
    asm volatile("cp.async.wait_all;\n" ::: "memory"); /* no thread leaves with copies in flight */
}

/* One part of a consumer warpgroup (keys [0, nk) at workspace rows base + key) from global tile t0 on,
 * as pp_part without the copies and the block barriers. */
template <int TURNS>
__device__ void ws_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
                        uint8_t *qs, uint8_t *kst, int t0, float (&o)[64], float (&lse)[2])
{
    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0); /* warp-uniform to the compiler */
    const int ntiles = (nk + PW_BN - 1) / PW_BN;
    const uint32_t kr = tc_smem(kst), vr = kr + PW_RNK * PW_KT, full = kr + PW_RBARS, kfree = full + 8 * PW_RNK,
                   vfree = kfree + 8 * PW_RNK;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.0f;
    wg_proxy_fence();                   /* this thread's Q stores (pw_block) before the wgmmas' reads */
    wg_bar_sync(WS_QBAR, PW_THREADS);   /* ... of both consumer warpgroups */
    auto ready = [&](int t) {           /* tile t copied */
        wg_mb_wait(full + 8 * (t % PW_RNK), (t / PW_RNK) & 1);
        wg_proxy_fence();
    };
    /* the turns (TURNS): as gpu_prefill_pong.hip's, consumer 0 first; consumer 1 hands no turn back
     * after its tail, so each barrier sees as many arrivals as waits */
    auto turn_wait = [&](int k) {
        if (!TURNS) return;
        if (wg == 0) {
            if (k > 0) wg_bar_sync(WS_TURN0, PW_THREADS);
        } else {
            wg_bar_sync(WS_TURN1, PW_THREADS);
        }
    };
    auto turn_pass = [&](int k) {
        if (!TURNS) return;
        if (wg == 0) wg_bar_arrive(WS_TURN1, PW_THREADS);
        else if (k < ntiles) wg_bar_arrive(WS_TURN0, PW_THREADS);
    };
    const int r0 = row0 + 64 * wg + 16 * warp + gq;
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
        pw_scores(s, qa, kr + (t0 % PW_RNK) * PW_KT);
        turn_pass(0);
        wg_wait<0>();
        wg_mb_arrive(kfree + 8 * (t0 % PW_RNK));
        wg_fence_operand(s);
        softmax(0);
        pw_pack(s, pa);
        pw_rescale(o, corr);
    }
    for (int k = 1; k < ntiles; k++) {
        const int t = t0 + k;
        ready(t);
        turn_wait(k);
        wg_fence_operand(o); /* O and P in their registers before pw_scores' wg_fence */
        wg_fence_operand(pa);
        pw_scores(s, qa, kr + (t % PW_RNK) * PW_KT);
        pw_pv(o, pa, vr + ((t - 1) % PW_RNV) * PW_VT);
        turn_pass(k);
        wg_wait<1>(); /* S(k) done, P V(k - 1) runs on */
        wg_mb_arrive(kfree + 8 * (t % PW_RNK));
        wg_fence_operand(s);
        softmax(k);
        wg_wait<0>(); /* P V(k - 1) done: O, the previous P and V(t - 1) are free */
        wg_mb_arrive(vfree + 8 * ((t - 1) % PW_RNV));
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence_operand(s);
        pw_pack(s, pa);
        pw_rescale(o, corr);
    }
    if (ntiles > 0) { /* the tail: P V of the last tile */
        const int t = t0 + ntiles - 1;
        turn_wait(ntiles);
        wg_fence();
        pw_pv(o, pa, vr + (t % PW_RNV) * PW_VT);
        turn_pass(ntiles);
        wg_wait<0>();
        wg_fence_operand(o);
        wg_mb_arrive(vfree + 8 * (t % PW_RNV));
    }
    pw_finish(o, m, l, lse);
}

template <int TURNS> __global__ void __launch_bounds__(WS_THREADS, 1) k_attn_prefill_ws(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t ws_mem[];
    uint8_t *kst = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(ws_mem) + 1023) & ~(uintptr_t)1023) + PW_QT;
    if (threadIdx.x == 0) {
        const uint32_t bars = tc_smem(kst) + PW_RBARS;
        for (int i = 0; i < PW_RNK; i++) wg_mb_init(bars + 8 * i, 128); /* full: the producer's threads */
        for (int i = PW_RNK; i < 2 * PW_RNK + PW_RNV; i++) wg_mb_init(bars + 8 * i, PW_THREADS); /* the consumers' */
    }
    __syncthreads(); /* the barriers initialized, for all three warpgroups */
    if (threadIdx.x >= PW_THREADS) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
        ws_produce(a, kst);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
    int t0 = 0; /* tiles of the block's earlier parts */
    pw_block(a, ws_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst_, float(&o)[64],
                            float(&lse)[2]) {
        ws_part<TURNS>(a, s_mul, h, base, nk, causal, row0, qs, kst_, t0, o, lse);
        t0 += (nk + PW_BN - 1) / PW_BN;
    });
}

/* MLA_GPU_PREFILL_WS=1 (read once): this kernel where the pipe kernel fits; =2 with the turns. */
extern "C" int gpu_prefill_ws_on(void)
{
    static const int on = gpu_env_switch("MLA_GPU_PREFILL_WS", 2);
    return on;
}

template <int TURNS> static mla_status ws_launch(hipStream_t st, const gpu_prefill_args *a)
{
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_ws<TURNS>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_RSHM));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_ws<TURNS><<<grid, WS_THREADS, PW_RSHM, st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_ws");
    return MLA_OK;
}

extern "C" mla_status gpu_attn_prefill_ws(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_wg_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: warp-specialized wgmma prefill: needs P 128, R 64, V 128 (have %d, %d, %d)",
                          a->p, a->r, a->v);
    return gpu_prefill_ws_on() == 2 ? ws_launch<1>(st, a) : ws_launch<0>(st, a);
}

#endif
