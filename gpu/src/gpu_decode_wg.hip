/* gpu_decode_wg.hip: the absorbed decode on Hopper's warpgroup MMA (wgmma, sm_90a) for the
 * compute-bound shapes (more than 32 heads), bf16 cache of C 512 + R 64 (DeepSeek-V2/V3's);
 * gpu_attn_decode_mma chooses it wherever it fits. 64-key tiles (mla_attn_tc_tile's wide).
 *
 * One block of two warpgroups owns one decode token, 64 heads (wgmma's M) and one KV split. A tile of
 * 64 cache rows is copied by cp.async into a 128-byte-swizzled 64 x 576 tile (9 atoms), two stages;
 * Q is staged once the same way. Per tile:
 *   S = Q K^T   warpgroup w: keys [32 w, 32 w + 32), 36 m64n32k16 over C + R
 *   softmax     online, fp32, base 2; row maxima and the final row sums meet in shared memory
 *   O += P V    P rounded to bf16 (as the mma.sync kernel, FlashMLA, FlashAttention 2/3) into a
 *               swizzled 64 x 64 tile; warpgroup w: output columns [256 w, 256 w + 256), 4
 *               m64n256k16 reading V from the same cache tile N-major (its rows are keys)
 * Output as every decode kernel: the split's normalized fp32 output and LSE, merged by the combine.
 * The steps are gpu_decode_wg.h's. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if defined(MLA_GPU_HIP)

#else

#include "gpu_decode_wg.h"

__global__ void __launch_bounds__(WD_THREADS, 1) k_attn_decode_wg(gpu_decode_args a, dm_geom g)
{
    extern __shared__ uint8_t wd_mem[];
    uint8_t *qs = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(wd_mem) + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = qs + WD_TILE, *ps = kst + WD_NST * WD_TILE;
    float *red_m = reinterpret_cast<float *>(ps + WD_P), *red_l = red_m + 2 * WD_HM;

    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32;
    const int wg = wg_index();
    const int gq = lane / 4, tq = lane % 4;
    const wd_part pt = wd_part_of(a);

    auto issue = [&](int k) { /* tile k into stage k % WD_NST, commit group k */
        if (k < pt.ntiles) dm_load_wide(a.kv, pt.slot, pt.j0 + k * WD_NK, pt.j1, kst + (k % WD_NST) * WD_TILE);
    };
#pragma unroll
    for (int k = 0; k < WD_NST; k++) {
        issue(k);
        tc_commit();
    }
    wd_stage_q(a, g, pt, qs);

    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.0f;
    const int row0 = 16 * warp + gq; /* this thread's rows: row0 and row0 + 8 */
    const uint64_t dq = wg_desc_k(tc_smem(qs)), dp = wg_desc_k(tc_smem(ps));

    for (int it = 0; it < pt.ntiles; it++) {
        const int n = min(WD_NK, pt.j1 - (pt.j0 + it * WD_NK));
        tc_wait<WD_NST - 1>(); /* tile it has landed (this thread's copies) */
        wg_proxy_fence();      /* ... and, with Q and P, is visible to wgmma */
        __syncthreads();       /* every thread's copies; everyone is done with tile it - 1 */
        const uint32_t kt = tc_smem(kst + (it % WD_NST) * WD_TILE);
        const uint64_t dk = wg_desc_k(kt + wg * 32 * WG_ATOM_ROW), dv = wg_desc_n(kt + 4 * wg * WD_ATOM, WD_ATOM);

        float sc[16];
        wg_fence();
        wd_s(sc, dq, dk); /* keys [32 wg, 32 wg + 32) */
        wg_commit();
        wg_wait<0>();

        /* online softmax (base 2) over the warpgroup's half; the row maxima meet in shared memory */
        float mx[2];
        wd_half_max(sc, wg, tq, n, g.s_mul, mx);
#pragma unroll
        for (int r = 0; r < 2; r++)
            if (tq == 0) red_m[wg * WD_HM + row0 + 8 * r] = mx[r];
        __syncthreads();
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) corr[r] = wd_rescale(m_run[r], red_m[row0 + 8 * r], red_m[WD_HM + row0 + 8 * r]);
        wd_half_p(sc, wg, m_run, corr, l_run, ps, row0, tq);
        wd_scale_o(o, corr);
        wg_proxy_fence();
        __syncthreads(); /* P of all 64 keys */

        wg_fence();
        wd_pv(o, dp, dv);
        wg_commit();
        wg_wait<0>();
        __syncthreads(); /* stage it % WD_NST and P consumed by both warpgroups */
        issue(it + WD_NST);
        tc_commit();
    }

    /* row sums: over the four lanes of a row, then the two warpgroups */
    wd_put_l(l_run, red_l + wg * WD_HM, row0, tq);
    __syncthreads();
    wd_store(a, g, pt, wg, row0, tq, o, m_run, red_l);
}

/* Above 32 heads only: at 16 and 32 the transposed decode wastes no MMA rows (MLA_GPU_DECODE_WG_ALL, the
 * trial of this kernel padded to 64 rows there, took 426.0 / 436.7 us at h16 / h32, b128 s_k 8192, where
 * gpu_decode_wt.hip took 366.7 / 419.6: H200 2026-12-02, gpu/bench/KERNELS.md). */
int gpu_decode_wg_fits(const gpu_kv_desc *kv, int h)
{
    return h > 32 && kv->codec.format == MLA_KV_BF16 && kv->codec.c == WD_C && kv->codec.c + kv->codec.r == WD_L &&
           kv->row_bytes == 2 * WD_L;
}

mla_status gpu_attn_decode_wg(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    if (!gpu_decode_wg_fits(&a->kv, a->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: wgmma decode: needs a bf16 cache of C 512 + R 64 and > 32 heads");
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_wg),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, WD_SHM));
        attr = 1;
    }
    k_attn_decode_wg<<<dm_grid(a, WD_HM), WD_THREADS, WD_SHM, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_wg");
    return MLA_OK;
}

#endif
