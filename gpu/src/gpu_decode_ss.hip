/* gpu_decode_ss.hip: the 64-head wgmma decode (gpu_decode_wg.hip's tiles, shapes and output) in a
 * seesaw schedule, opt-in (MLA_GPU_DECODE_WG_SS=1) until a device run measures it. Why: in wg v1 the two
 * warpgroups run S, the softmax and P V of each tile in lockstep around three block barriers, so the
 * tensor cores idle through every softmax (ncu h128: tensor 35%, barrier and wait stalls first;
 * gpu/bench/KERNELS.md "wg v1", "trims"). FlashMLA's published schedule alternates the tiles instead.
 *
 * Three warpgroups. The producer (threads 256-383, registers given back by setmaxnreg) copies 64-key
 * tiles by cp.async into two stages. Consumer c (threads 128 c ..) holds output columns [256 c, +256) of
 * the 64 heads and owns the tiles j with j % 2 == c (tile j sits in stage j % 2):
 *   own tile j      S = Q K^T over all 64 keys (m64n64k16, issued while the other consumer still works on
 *                   tile j - 1); the row maxima, the running maximum m_j (from m_{j-1}, which it read
 *                   when it followed tile j - 1) published; P = 2^(s - m_j) rounded to bf16 kept in
 *                   registers and written to the one P tile in shared memory; O += P V from registers.
 *   follows tile j  reads m_j (its O and row sums rescaled), O += P V with P from shared memory, then
 *                   issues S of its next tile (j + 1, in the stage of tile j - 1: refilled once both
 *                   consumers' P V of tile j - 1 have completed).
 * So one consumer's softmax runs under the other's P V and S. Hand-offs, none a spin loop on the
 * consumers (ptxas serializes wgmmas around one, gpu_decode_wf.hip): named barriers FULL(c) (ids 6 + c:
 * the producer arrives when tile j of stage c has landed, consumer c syncs), M(c) (1 + c: m_j of c's
 * tile in mx[c]), P(c) (3 + c: P_j in the P tile); the mbarrier empty[b] (256 consumer arrivals once
 * both P V of the tile in stage b have completed; the producer waits on it). Each consumer writes the
 * P tile only after its own P V that read the previous P has completed, so one P tile serves both.
 *
 * Numerics: wg v1's values (the same S sums: wgmma's per-element sums do not depend on N; the same
 * running maxima, P rounded to bf16 the same way, the same P V sums in key order) except the row sums,
 * which each consumer accumulates over its own tiles and the two add at the end (wg v1: per 32-key
 * half over every tile): the output may differ from wg v1's in the last bits of l. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_decode_wg.h"

#define SS_THREADS 384
#define SS_CONS_REG 232 /* consumer registers after setmaxnreg: 2 x 128 x 232 + 128 x 40 <= 65536 */
#define SS_COPY_REG 40
#define SS_BAR_M 1    /* + c */
#define SS_BAR_P 3    /* + c */
#define SS_BAR_END 5  /* both consumers: Q staged, row sums reduced */
#define SS_BAR_FULL 6 /* + stage */

/* Shared memory: alignment slack, Q, the stages, P, mx (2 x 64 running maxima), the row sums (2 x 64),
 * the mbarriers empty[2]. */
#define SS_SHM (1024 + WD_TILE * (1 + WD_NST) + WD_P + 4 * WD_HM * 4 + 2 * 8)

/* Scores of a whole 64-key tile (m64n64's sc[4 j + e]: key 8 j + 2 tq + (e % 2) of row row0 + 8 (e / 2))
 * scaled to base 2 in place, keys at or past n -inf; mx: the row maxima of the thread's two rows. */
__device__ __forceinline__ void ss_max(float (&sc)[32], int tq, int n, float s_mul, float (&mx)[2])
{
    mx[0] = mx[1] = -INFINITY;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const int key = 8 * (i / 4) + 2 * tq + (i % 2);
        sc[i] = key < n ? sc[i] * s_mul : -INFINITY;
        mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], sc[i]);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
}

/* P = 2^(s - m) of the tile into pa (the A fragments of k16 step kk: sc[8 kk .. 8 kk + 7]) and the row
 * sums l (already rescaled), added pair by pair in key order as wd_half_p. */
__device__ __forceinline__ void ss_p(const float (&sc)[32], const float (&m)[2], float (&l)[2], uint32_t (&pa)[4][4])
{
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
#pragma unroll
        for (int f = 0; f < 4; f++) {
            const int i = 8 * kk + 2 * f, r = f % 2;
            const float p0 = tc_ex2(sc[i] - m[r]), p1 = tc_ex2(sc[i + 1] - m[r]);
            l[r] += p0 + p1;
            pa[kk][f] = tc_pack(p0, p1);
        }
}

/* pa into the swizzled 64 x 64 P tile at wd_half_p's places (row row0 + 8 (f % 2), key 16 kk + 8 (f / 2) + 2 tq). */
__device__ __forceinline__ void ss_put_p(const uint32_t (&pa)[4][4], uint8_t *ps, int row0, int tq)
{
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
#pragma unroll
        for (int f = 0; f < 4; f++)
            *reinterpret_cast<uint32_t *>(ps + wg_sw128(row0 + 8 * (f % 2), 16 * kk + 8 * (f / 2) + 2 * tq)) = pa[kk][f];
}

/* The producer: tile k into stage k % 2 by cp.async (one commit group a tile), FULL(k % 2) once it has
 * landed; tile k + 2 after both consumers freed tile k's stage. FULL of tile k + 1 is signalled before
 * that wait: the consumers free tile k only once they hold tile k + 1 (the first form waited first and
 * hung, H100 2026-12-07). */
__device__ __forceinline__ void ss_produce(const gpu_decode_args &a, const wd_part &pt, uint8_t *kst, uint32_t empty, int u)
{
    auto issue = [&](int k) {
        dm_load_wide<128>(a.kv, pt.slot, pt.j0 + k * WD_NK, pt.j1, kst + (k % 2) * WD_TILE, u);
        tc_commit();
    };
    if (pt.ntiles < 1) return;
    issue(0);
    if (pt.ntiles > 1) { /* tile 0 has landed (this thread's copies; tile 1's group may be in flight) */
        issue(1);
        tc_wait<1>();
    } else {
        tc_wait<0>();
    }
    wg_proxy_fence(); /* ... visible to wgmma */
    wg_bar_arrive(SS_BAR_FULL, 256);
    for (int k = 0; k + 1 < pt.ntiles; k++) {
        tc_wait<0>(); /* tile k + 1 */
        wg_proxy_fence();
        wg_bar_arrive(SS_BAR_FULL + (k + 1) % 2, 256);
        if (k + 2 < pt.ntiles) {
            wg_mb_wait(empty + 8 * (k % 2), (k / 2) & 1);
            issue(k + 2);
        }
    }
}

__global__ void __launch_bounds__(SS_THREADS, 1) k_attn_decode_ss(gpu_decode_args a, dm_geom g)
{
    extern __shared__ uint8_t ss_mem[];
    uint8_t *qs = wg_align1024(ss_mem);
    uint8_t *kst = qs + WD_TILE, *ps = kst + WD_NST * WD_TILE;
    float *mx = reinterpret_cast<float *>(ps + WD_P), *red_l = mx + 2 * WD_HM;
    const uint32_t empty = tc_smem(red_l + 2 * WD_HM);

    const int tid = threadIdx.x, wg = wg_index();
    const wd_part pt = wd_part_of(a);
    if (tid == 0) {
        wg_mb_init(empty, 256);
        wg_mb_init(empty + 8, 256);
    }
    __syncthreads(); /* the mbarriers initialized; the warpgroups part here */
    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(SS_COPY_REG) : "memory");
        ss_produce(a, pt, kst, empty, tid - 256);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(SS_CONS_REG) : "memory");

    const int c = wg, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int row0 = 16 * warp + gq; /* this thread's rows: row0 and row0 + 8 */
    wd_stage_q(a, g, pt, qs);        /* threads 0-255 */
    wg_proxy_fence();
    wg_bar_sync(SS_BAR_END, 256);

    const uint32_t kst_s = tc_smem(kst);
    const uint64_t dq = wg_desc_k(tc_smem(qs)), dp = wg_desc_k(tc_smem(ps));
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    float o[128], sc[32];
    uint32_t pa[4][4];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.0f;
    wg_fence_operand(o); /* else the zeros sink below S's issue, and ptxas serializes every wgmma (C7515) */
    const int nt = pt.ntiles;
    auto dv = [&](int j) { return wg_desc_n(kst_s + (j % 2) * WD_TILE + 4 * c * WD_ATOM, WD_ATOM); };
    auto issue_s = [&](int j) { /* S of own tile j, once it has landed */
        wg_bar_sync(SS_BAR_FULL + c, 256);
        wg_fence();
        wd_s(sc, dq, wg_desc_k(kst_s + (j % 2) * WD_TILE));
        wg_commit();
    };
    /* own tile j; in flight: S_j and (j > 0) P V of tile j - 1 from shared memory */
    auto own = [&](int j) {
        wg_wait<0>();
        wg_fence_operand(sc);
        wg_fence_operand(o);
        if (j > 0) wg_mb_arrive(empty + 8 * ((j - 1) % 2)); /* this consumer's part of tile j - 1 */
        float lm[2], corr[2];
        ss_max(sc, tq, min(WD_NK, pt.j1 - (pt.j0 + j * WD_NK)), g.s_mul, lm);
#pragma unroll
        for (int r = 0; r < 2; r++) {
            corr[r] = wd_rescale(m_run[r], lm[r], -INFINITY);
            if (tq == 0) mx[c * WD_HM + row0 + 8 * r] = m_run[r];
            l_run[r] *= corr[r];
        }
        wg_bar_arrive(SS_BAR_M + c, 256);
        ss_p(sc, m_run, l_run, pa);
        ss_put_p(pa, ps, row0, tq); /* the P tile is free: the P V that read P_{j-1} has completed */
        wg_proxy_fence();
        wg_bar_arrive(SS_BAR_P + c, 256);
        wd_scale_o(o, corr);
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence();
        const uint64_t v = dv(j);
#pragma unroll
        for (int kk = 0; kk < WD_NK / 16; kk++) wg_m64n256_rs_tb(o, pa[kk], wg_desc_add(v, kk * 16 * WG_ATOM_ROW));
        wg_commit();
    };
    /* follows tile j; in flight (j > 0): P V of own tile j - 1, waited before S of tile j + 1, whose
     * stage is tile j - 1's: the producer refills it once both consumers have arrived on empty */
    auto follow = [&](int j) {
        wg_wait<0>(); /* unconditional: ptxas does not know c == 0 never reaches follow(0) */
        wg_fence_operand(o);
        if (j > 0) wg_mb_arrive(empty + 8 * ((j - 1) % 2));
        wg_bar_sync(SS_BAR_M + (1 - c), 256);
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            corr[r] = wd_rescale(m_run[r], mx[(1 - c) * WD_HM + row0 + 8 * r], -INFINITY);
            l_run[r] *= corr[r];
        }
        wd_scale_o(o, corr);
        wg_fence_operand(o);
        wg_bar_sync(SS_BAR_P + (1 - c), 256);
        wg_fence();
        wd_pv(o, dp, dv(j));
        wg_commit();
        if (j + 1 < nt) issue_s(j + 1);
    };
    /* consumer 0: own 0, follow 1, own 2, ...; consumer 1: follow 0, own 1, follow 2, ... (one body a
     * pair, so that every path ptxas sees waits before it touches an accumulator in flight) */
    if (c == 0 && nt > 0) issue_s(0);
    if (c == 1 && nt > 0) follow(0);
    for (int j = c; j < nt; j += 2) {
        own(j);
        if (j + 1 < nt) follow(j + 1);
    }
    wg_wait<0>();
    wg_fence_operand(o);

    wd_put_l(l_run, red_l + c * WD_HM, row0, tq);
    wg_bar_sync(SS_BAR_END, 256);
    wd_store(a, g, pt, c, row0, tq, o, m_run, red_l);
}

mla_status gpu_attn_decode_ss(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    if (!gpu_decode_wg_fits(&a->kv, a->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: seesaw decode: needs a bf16 cache of C 512 + R 64 and > 32 heads");
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_ss),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, SS_SHM));
        attr = 1;
    }
    k_attn_decode_ss<<<dm_grid(a, WD_HM), SS_THREADS, SS_SHM, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_ss");
    return MLA_OK;
}

#endif
