/* gpu_prefill_ring.h: the wgmma prefill kernels that track tiles by mbarriers instead of a block
 * barrier a tile (gpu_prefill_pong.hip: the consumers copy too, in turns; gpu_prefill_ws.hip: a
 * producer warpgroup copies): K and V rings (PW_RNK, PW_RNV in gpu_prefill_wg.h), the ring fill, and
 * the consumer's part, one code for both. Phases: t counts the block's tiles over its parts (new
 * tokens, then cached context), so full[t % 4] completes its phase t / 4 when tile t has landed
 * (cp.async.mbarrier.arrive by each copying thread), kfree[t % 4] when every consumer thread has
 * waited S(t), vfree[t % 5] when every one has waited P V(t); each wait names a phase whose
 * predecessor the waiter has already seen complete, so parities never alias. NVIDIA only (sm_90a);
 * include after gpu_prefill_wg.h. */
#ifndef MLA_GPU_PREFILL_RING_H
#define MLA_GPU_PREFILL_RING_H

#include "gpu_prefill_wg.h"

/* The rings' shared addresses from their start kst (right after Q). */
typedef struct pr_ring {
    uint32_t k, v, full, kfree, vfree;
} pr_ring;

__device__ __forceinline__ pr_ring pr_ring_at(uint8_t *kst)
{
    pr_ring r;
    r.k = tc_smem(kst);
    r.v = r.k + PW_RNK * PW_KT;
    r.full = r.k + PW_RBARS;
    r.kfree = r.full + 8 * PW_RNK;
    r.vfree = r.kfree + 8 * PW_RNK;
    return r;
}

/* One thread (the block's first) initializes the barriers: full[] counts full_arrivals (the copying
 * threads), kfree[] and vfree[] the 256 consumer threads. A block barrier must follow before use. */
__device__ __forceinline__ void pr_init(uint8_t *kst, int full_arrivals)
{
    const pr_ring r = pr_ring_at(kst);
    for (int i = 0; i < PW_RNK; i++) wg_mb_init(r.full + 8 * i, full_arrivals);
    for (int i = 0; i < PW_RNK + PW_RNV; i++) wg_mb_init(r.kfree + 8 * i, PW_THREADS);
}

/* 64-key tile k of a part, global tile t, into the rings once K(t - 4) and V(t - 5) are read, then
 * this thread's full[] arrival. ROWS 1: the rows of this thread's index (256 copying threads); 2: rows
 * of lt and lt + 128 (128 copying threads). */
template <int ROWS>
__device__ __forceinline__ void pr_fill(const gpu_prefill_args &a, int h, int base, int nk, int k, int t, uint8_t *kst,
                                        int lt = -1)
{
    const pr_ring r = pr_ring_at(kst);
    if (t >= PW_RNK) wg_mb_wait(r.kfree + 8 * (t % PW_RNK), (t / PW_RNK - 1) & 1);
    if (t >= PW_RNV) wg_mb_wait(r.vfree + 8 * (t % PW_RNV), (t / PW_RNV - 1) & 1);
    uint8_t *kt = kst + (t % PW_RNK) * PW_KT, *vt = kst + PW_RNK * PW_KT + (t % PW_RNV) * PW_VT;
#pragma unroll
    for (int i = 0; i < ROWS; i++) pw_issue(a, h, base, nk, k, kt, vt, -1, ROWS == 1 ? -1 : lt + 128 * i);
    wg_mb_cp_arrive(r.full + 8 * (t % PW_RNK));
}

#define PR_TURN0 1 /* named barriers of the turns: consumer warpgroup 0 may issue */
#define PR_TURN1 2 /* consumer warpgroup 1 may issue */
#define PR_QBAR 3  /* the 256 consumer threads (COPY 0): Q stored */
#define PR_QWG 4   /* 4 + warpgroup: that warpgroup's 128 threads (QWG 1): its Q rows stored, or free */

/* One part of a consumer warpgroup (keys [0, nk) at workspace rows base + key) from global tile t0 on:
 * the pipe kernel's schedule (S(k) and P V(k - 1) issued together, softmax(k) under P V(k - 1)) on the
 * rings. COPY 1: the 256 consumer threads also copy, tile k + 3 after step k (pong); COPY 0: a producer
 * does. TURNS 1: the warpgroups take turns at the tensor cores (warpgroup 0 first; warpgroup 1 hands no
 * turn back after its tail, so each barrier sees as many arrivals as waits). Leaves the normalized
 * output in o and the part's LSE (natural) in lse; numerics as the pipe kernel's, bit for bit. QWG 1: each
 * warpgroup staged its own Q rows (pw_item<1>), so it waits for its own threads only. after_s() runs once
 * this warpgroup's last S of the part has completed (every thread of it calls it: Q is no longer read). */
struct pr_no_hook {
    __device__ void operator()() const {}
};
template <int COPY, int TURNS, int QWG = 0, int SKIP = 0, class Hook = pr_no_hook>
__device__ void pr_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
                        uint8_t *qs, uint8_t *kst, int t0, float (&o)[64], float (&lse)[2], Hook after_s = Hook())
{
    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int wg = wg_index();
    /* ntiles: the part's tiles, every one copied and freed by both warpgroups; ntiles_wg: those this
     * warpgroup's rows can see. Causal, warpgroup 0 (rows 0-63 of the query tile) sees none of the last
     * tile's keys when the tile ends on the diagonal: its S, softmax and P V there would add exact zeros
     * (P = 0, the maxima unchanged), so they are skipped: one of its 9 tiles on average at s 1024, one
     * of 65 at 8k. SKIP 1 only (the ws kernel's default), never with COPY (the consumers share each
     * tile's copies) or TURNS (the turns pair the warpgroups' steps). */
    static_assert(!SKIP || (!COPY && !TURNS), "pr_part: SKIP needs a producer and no turns");
    const int ntiles = (nk + PW_BN - 1) / PW_BN;
    const int ntiles_wg = !SKIP || !causal
                              ? ntiles
                              : (min(nk, row0 + 64 * wg + 64 + a.causal_plus) + PW_BN - 1) / PW_BN;
    const pr_ring r = pr_ring_at(kst);
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.0f;
    wg_proxy_fence(); /* this thread's Q copies (pw_stage_q, waited) before the wgmmas' reads */
    if (COPY) __syncthreads(); /* Q written, the barriers initialized, the previous part's turns done */
    else if (QWG) wg_bar_sync(PR_QWG + wg, 128);
    else wg_bar_sync(PR_QBAR, PW_THREADS); /* Q written by both consumer warpgroups */
    auto issue = [&](int k) {
        if (COPY && k < ntiles) pr_fill<1>(a, h, base, nk, k, t0 + k, kst);
    };
    auto ready = [&](int t) { /* tile t copied (all threads' parts of it) */
        wg_mb_wait(r.full + 8 * (t % PW_RNK), (t / PW_RNK) & 1);
        wg_proxy_fence();
    };
    auto turn_wait = [&](int k) {
        if (!TURNS) return;
        if (wg == 0) {
            if (k > 0) wg_bar_sync(PR_TURN0, PW_THREADS);
        } else {
            wg_bar_sync(PR_TURN1, PW_THREADS);
        }
    };
    auto turn_pass = [&](int k) {
        if (!TURNS) return;
        if (wg == 0) wg_bar_arrive(PR_TURN1, PW_THREADS);
        else if (k < ntiles) wg_bar_arrive(PR_TURN0, PW_THREADS);
    };
    issue(0);
    issue(1);
    issue(2);
    const int r0 = row0 + 64 * wg + 16 * warp + gq; /* this thread's rows r0 and r0 + 8 (new-token index) */
    const int vis_all = pw_vis_all(a, nk, causal, row0, wg);
    const uint32_t qa = tc_smem(qs) + wg * 64 * WG_ATOM_ROW;
    uint32_t pa[PW_BN / 16][4];
    float s[32], corr[2];
    if (ntiles_wg > 0) { /* step 0: S only */
        ready(t0);
        turn_wait(0);
        pw_scores(s, qa, r.k + (t0 % PW_RNK) * PW_KT);
        turn_pass(0);
        wg_wait<0>();
        wg_mb_arrive(r.kfree + 8 * (t0 % PW_RNK));
        if (ntiles_wg == 1) after_s();
        wg_fence_operand(s);
        pw_softmax_tile(s, m, l, corr, s_mul, 0, vis_all, r0, tq, nk, causal, a.causal_plus);
        pw_pack(s, pa);
        pw_rescale(o, corr);
        issue(3);
    }
    for (int k = 1; k < ntiles_wg; k++) {
        const int t = t0 + k;
        ready(t);
        turn_wait(k);
        wg_fence_operand(o); /* O and P in their registers before pw_scores' wg_fence */
        wg_fence_operand(pa);
        pw_scores(s, qa, r.k + (t % PW_RNK) * PW_KT);
        pw_pv(o, pa, r.v + ((t - 1) % PW_RNV) * PW_VT);
        turn_pass(k);
        wg_wait<1>(); /* S(k) done, P V(k - 1) runs on */
        wg_mb_arrive(r.kfree + 8 * (t % PW_RNK));
        if (k == ntiles_wg - 1) after_s();
        wg_fence_operand(s);
        pw_softmax_tile(s, m, l, corr, s_mul, k, vis_all, r0, tq, nk, causal, a.causal_plus);
        wg_wait<0>(); /* P V(k - 1) done: O, the previous P and V(t - 1) are free */
        wg_mb_arrive(r.vfree + 8 * ((t - 1) % PW_RNV));
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence_operand(s);
        pw_pack(s, pa);
        pw_rescale(o, corr);
        issue(k + 3);
    }
    if (ntiles_wg > 0) { /* the tail: P V of the last tile, in turn */
        const int t = t0 + ntiles_wg - 1;
        turn_wait(ntiles);
        wg_fence();
        pw_pv(o, pa, r.v + (t % PW_RNV) * PW_VT);
        turn_pass(ntiles);
        wg_wait<0>();
        wg_fence_operand(o);
        wg_mb_arrive(r.vfree + 8 * (t % PW_RNV));
    }
    for (int k = ntiles_wg; k < ntiles; k++) { /* the skipped tiles: freed. Landed means the producer saw
                                                * kfree(t - 4) and vfree(t - 5) complete, so these arrivals
                                                * cannot count toward an earlier phase */
        ready(t0 + k);
        wg_mb_arrive(r.kfree + 8 * ((t0 + k) % PW_RNK));
        wg_mb_arrive(r.vfree + 8 * ((t0 + k) % PW_RNV));
    }
    pw_finish(o, m, l, lse);
}

#endif
