/* gpu_decode_wg_ovl.hip: the 64-head wgmma decode (gpu_decode_wg.hip) with the tensor cores kept busy
 * through the softmax and the loads; MLA_GPU_DECODE_WG_OVL=1 selects it (default off, read once).
 *
 * Why this step. In gpu_decode_wg.hip both warpgroups run every step of a tile together: S (each its 32
 * keys), the softmax (row maxima meet in shared memory behind a block barrier), PV (each its 256
 * output columns), then a block barrier and the next tile's copies. The tensor cores idle through the
 * softmax, three block barriers and the copy issue of every tile (ncu, h128: SM throughput 39.9%, 0.41
 * issued warps per scheduler). Of the three candidate steps:
 *   (a) S of tile j + 1 issued before the softmax of tile j: with two 72 KB stages beside Q (231 KB of
 *       227 KB usable; a third does not fit) tile j + 1's stage is refilled only once PV of tile j - 1
 *       is done, so issuing S(j + 1) that early exposes its whole load: no gain without a third stage;
 *   (c) TMA: the cache is paged and the tiles 128-byte swizzled, so it needs a tensor map over the pool
 *       and the block table per 64 rows, a larger change that the lead cannot compare bit for bit;
 *   (b) FlashMLA's division of labour, chosen: warpgroup 0 computes S of all 64 keys (the same two
 *       m64n32k16 chains the two warpgroups ran) and the whole softmax, writes P and the rows' rescale
 *       factors, and runs PV of output columns [0, 256); warpgroup 1 only rescales and runs PV of
 *       [256, 512) and issues every copy. The cross-warpgroup max exchange and all block barriers leave
 *       the loop; warpgroup 0 issues S(j + 1) right behind its PV(j) (tile j + 1 landed during tile j, as
 *       before), so the tensor cores run PV_L(j), PV_R(j) and S(j + 1) back to back and idle only
 *       during warpgroup 0's softmax; the copy issue moves off the critical path into warpgroup 1.
 * Shared memory as the serial kernel's (WD_SHM: the row-maxima slots now carry the rescale factors).
 *
 * Per tile j, named barriers (producer bar.arrive, consumer bar.sync, 256 threads):
 *   warpgroup 0: wait S(j); scale, mask and maxima of both halves; [P_EMPTY(j - 1)]; rescale, P(j) and
 *     the factors to shared memory; its own barrier (P complete for its PV); arrive P_FULL(j); O_L *=
 *     factors; PV_L(j); [TILE_FULL(j + 1), S(j + 1)]; wait PV_L(j); [arrive STAGE_FREE(j)]; wait
 *     S(j + 1) (inside the iteration: no wgmma in flight across the loop's back edge)
 *   warpgroup 1: P_FULL(j); O_R *= factors; PV_R(j); [wait the copies of tile j + 1, arrive
 *     TILE_FULL(j + 1)]; wait PV_R(j); [arrive P_EMPTY(j)]; [STAGE_FREE(j), copies of tile j + 2]
 * (brackets: only where that tile exists). Each barrier's next arrival needs its consumer past the
 * previous one through another barrier, so no generation overruns (comments at each).
 *
 * Numerics: bit-identical to gpu_decode_wg.hip, by construction. Every value is computed by the same
 * helpers (gpu_decode_wg.h) on the same operands in the same order: S of keys [32 h, 32 h + 32) is the
 * same m64n32k16 chain over the same descriptors, held by warpgroup 0's thread of the same lane and warp
 * (so the same rows and keys); the running maximum is fmaxf(m_run, fmaxf(max of half 0, max of half 1))
 * as before; P is exp2(s - m_run) rounded to bf16 per 64-key tile into the same places; the row sums
 * keep one accumulator per half (l0, l1: what warpgroups 0 and 1 held), rescaled and summed in the same
 * order, reduced over the lanes and added half 0 + half 1 at the end as before; warpgroup 1 rescales O_R
 * by the factor warpgroup 0 computed (the value both computed before), and the PV instructions are
 * unchanged. Only the schedule differs. MLA_GPU_DECODE_WG_OVL=2 (a trial) computes S as one m64n64k16
 * chain instead of two m64n32k16 (Q read from shared memory once a k step, not twice): the same k order
 * per element, bit-identical only if the tensor cores' sum for an element does not depend on N, which
 * the bench's check lines against =1 decide. Compiled for sm_90a; not yet run on a GPU (2026-12-02). */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if defined(MLA_GPU_HIP)

#else

#include "gpu_decode_wg.h"

/* Named barriers (0 is __syncthreads'). */
enum {
    WO_BAR_WG0 = 1,    /* warpgroup 0 alone: its P complete before its PV */
    WO_BAR_TILE,       /* 1 -> 0: a tile's copies landed and are visible to wgmma */
    WO_BAR_P_FULL,     /* 0 -> 1: P and the rescale factors of a tile written */
    WO_BAR_P_EMPTY,    /* 1 -> 0: PV_R of a tile done: P and the factors free */
    WO_BAR_STAGE_FREE, /* 0 -> 1: S and PV_L of a tile done: its stage may be refilled */
};

template <int S64> __global__ void __launch_bounds__(WD_THREADS, 1) k_attn_decode_wg_ovl(gpu_decode_args a, dm_geom g)
{
    extern __shared__ uint8_t wd_mem[];
    uint8_t *qs = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(wd_mem) + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = qs + WD_TILE, *ps = kst + WD_NST * WD_TILE;
    float *corr_s = reinterpret_cast<float *>(ps + WD_P), *red_l = corr_s + 2 * WD_HM;

    /* wg broadcast from lane 0 (CUTLASS's canonical_warp_group_idx): the compiler then knows the role
     * branches are warp-uniform, else ptxas serializes the wgmmas inside them (C7520) */
    const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0), warp = (tid % 128) / 32, lane = tid % 32;
    const int gq = lane / 4, tq = lane % 4;
    const wd_part pt = wd_part_of(a);
    const int row0 = 16 * warp + gq; /* this thread's rows: row0 and row0 + 8 */

    auto issue = [&](int k) { /* warpgroup 1: tile k into stage k % WD_NST, commit group k */
        if (k < pt.ntiles)
            dm_load_wide<128>(a.kv, pt.slot, pt.j0 + k * WD_NK, pt.j1, kst + (k % WD_NST) * WD_TILE, tid - 128);
        tc_commit();
    };
    auto stage = [&](int k) { return tc_smem(kst + (k % WD_NST) * WD_TILE); };
    if (wg == 1) {
        issue(0);
        issue(1);
    }
    wd_stage_q(a, g, pt, qs);
    wg_proxy_fence();
    __syncthreads(); /* Q */

    float m_run[2] = {-INFINITY, -INFINITY}, o[128];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.0f;
    const uint64_t dp = wg_desc_k(tc_smem(ps));

    if (wg == 0) { /* S, softmax, P, PV of columns [0, 256) */
        const uint64_t dq = wg_desc_k(tc_smem(qs));
        float l0[2] = {0.0f, 0.0f}, l1[2] = {0.0f, 0.0f}; /* row sums of keys [0, 32) and [32, 64) */
        float sc[32];                                      /* S of keys [0, 32) in sc[0, 16), [32, 64) in sc[16, 32) */
        float(&s0)[16] = *reinterpret_cast<float(*)[16]>(sc);
        float(&s1)[16] = *reinterpret_cast<float(*)[16]>(sc + 16);
        auto s_issue = [&](int k) { /* S of tile k (landed: TILE_FULL), committed */
            wg_bar_sync(WO_BAR_TILE, WD_THREADS);
            const uint64_t dk = wg_desc_k(stage(k));
#pragma unroll
            for (int i = 0; i < 32; i++) sc[i] = 0.0f;
            wg_fence_operand(sc); /* the zeros in their registers before the fence (else ptxas serializes) */
            wg_fence();
            if constexpr (S64) {
                wd_s(sc, dq, dk);
            } else {
                wd_s(s0, dq, dk);
                wd_s(s1, dq, wg_desc_add(dk, 32 * WG_ATOM_ROW));
            }
            wg_commit();
        };
        if (pt.ntiles > 0) {
            s_issue(0);
            wg_wait<0>();
            wg_fence_operand(sc);
        }
        /* S(it) is complete at the top of iteration it: no wgmma is in flight across the loop's back
         * edge, where the compiler may move the accumulators (ptxas then serializes: C7515) */
        for (int it = 0; it < pt.ntiles; it++) {
            const int n = min(WD_NK, pt.j1 - (pt.j0 + it * WD_NK));
            float mx0[2], mx1[2], corr[2];
            wd_half_max(s0, 0, tq, n, g.s_mul, mx0);
            wd_half_max(s1, 1, tq, n, g.s_mul, mx1);
            /* PV_R(it - 1) done. Warpgroup 1 arrives here after its P_FULL(it - 1),
             * which needed our arrival after P_EMPTY(it - 2): one generation at a time. As a 256-thread
             * barrier it also orders every warp's PV_L(it - 1) before the P writes below. */
            if (it > 0) wg_bar_sync(WO_BAR_P_EMPTY, WD_THREADS);
#pragma unroll
            for (int r = 0; r < 2; r++) corr[r] = wd_rescale(m_run[r], mx0[r], mx1[r]);
            wd_half_p(s0, 0, m_run, corr, l0, ps, row0, tq);
            wd_half_p(s1, 1, m_run, corr, l1, ps, row0, tq);
#pragma unroll
            for (int r = 0; r < 2; r++)
                if (tq == 0) corr_s[row0 + 8 * r] = corr[r];
            wg_proxy_fence();
            wg_bar_sync(WO_BAR_WG0, 128); /* P of all 64 rows, for PV_L */
            wg_bar_arrive(WO_BAR_P_FULL, WD_THREADS);
            wd_scale_o(o, corr);
            wg_fence_operand(o);
            wg_fence();
            wd_pv(o, dp, wg_desc_n(stage(it), WD_ATOM));
            wg_commit();
            if (it + 1 < pt.ntiles) {
                /* TILE_FULL(it + 1): warpgroup 1 arrives after its P_FULL(it), which follows our
                 * TILE_FULL(it) */
                s_issue(it + 1);
                wg_wait<1>(); /* PV_L(it); S(it + 1) may run on */
            } else {
                wg_wait<0>();
            }
            wg_fence_operand(o);
            /* S(it) and PV_L(it) done: stage it % 2 may take tile it + 2. Our next arrival (it + 3 <
             * ntiles) comes after TILE_FULL(it + 2), which warpgroup 1 reaches after this barrier */
            if (it + 2 < pt.ntiles) wg_bar_arrive(WO_BAR_STAGE_FREE, WD_THREADS);
            wg_wait<0>(); /* S(it + 1) */
            wg_fence_operand(sc);
        }
        wd_put_l(l0, red_l, row0, tq);
        wd_put_l(l1, red_l + WD_HM, row0, tq);
    } else { /* copies, PV of columns [256, 512) */
        if (pt.ntiles > 0) {
            tc_wait<1>(); /* tile 0 (this thread's copies) */
            wg_proxy_fence();
            wg_bar_arrive(WO_BAR_TILE, WD_THREADS);
        }
        for (int it = 0; it < pt.ntiles; it++) {
            /* P(it) and its factors; warpgroup 0's next arrival waits for our P_EMPTY(it) */
            wg_bar_sync(WO_BAR_P_FULL, WD_THREADS);
            const float corr[2] = {corr_s[row0], corr_s[row0 + 8]};
            wd_scale_o(o, corr);
            wg_fence_operand(o);
            wg_fence();
            wd_pv(o, dp, wg_desc_n(stage(it) + 4 * WD_ATOM, WD_ATOM));
            wg_commit();
            if (it + 1 < pt.ntiles) { /* tile it + 1, the only copies in flight, while PV_R(it) runs */
                tc_wait<0>();
                wg_proxy_fence();
                wg_bar_arrive(WO_BAR_TILE, WD_THREADS);
            }
            wg_wait<0>();
            wg_fence_operand(o);
            if (it + 1 < pt.ntiles) wg_bar_arrive(WO_BAR_P_EMPTY, WD_THREADS);
            if (it + 2 < pt.ntiles) {
                /* S(it) and PV_L(it) done; as a 256-thread barrier it also orders every warp's PV_R(it)
                 * before the copies */
                wg_bar_sync(WO_BAR_STAGE_FREE, WD_THREADS);
                issue(it + 2);
            }
        }
    }

    __syncthreads(); /* the row sums of both halves */
    wd_store(a, g, pt, wg, row0, tq, o, m_run, red_l);
}

int gpu_decode_wg_ovl(void)
{
    static const int mode = gpu_env_switch("MLA_GPU_DECODE_WG_OVL", 2);
    return mode;
}

template <int S64> static mla_status wo_launch(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    static int attr = 0; /* per instantiation */
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_wg_ovl<S64>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, WD_SHM));
        attr = 1;
    }
    dim3 grid(a->t, (a->h + WD_HM - 1) / WD_HM, a->splits);
    k_attn_decode_wg_ovl<S64><<<grid, WD_THREADS, WD_SHM, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_wg_ovl");
    return MLA_OK;
}

/* Called by gpu_attn_decode_wg (which checked gpu_decode_wg_fits) when gpu_decode_wg_ovl() is set. */
mla_status gpu_attn_decode_wg_ovl(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    return gpu_decode_wg_ovl() == 2 ? wo_launch<1>(st, a, g) : wo_launch<0>(st, a, g);
}

#endif
