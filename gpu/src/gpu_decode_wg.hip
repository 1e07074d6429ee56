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
 * Output as every decode kernel: the split's normalized fp32 output and LSE, merged by the combine. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if defined(MLA_GPU_HIP)

#else

#include "gpu_decode_mma.h"

#define WD_THREADS 256
#define WD_HM 64                    /* heads a block */
#define WD_P (WD_NK / 64 * WD_ATOM) /* P: 64 heads x 64 keys, one atom */
#define WD_NST 2

/* Shared memory: 1024 bytes of alignment slack, Q, the stages, P, row maxima and sums of both
 * warpgroups. */
#define WD_SHM (1024 + WD_TILE * (1 + WD_NST) + WD_P + 2 * 2 * WD_HM * 4)

__global__ void __launch_bounds__(WD_THREADS, 1) k_attn_decode_wg(gpu_decode_args a, dm_geom g)
{
    extern __shared__ uint8_t wd_mem[];
    uint8_t *qs = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(wd_mem) + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = qs + WD_TILE, *ps = kst + WD_NST * WD_TILE;
    float *red_m = reinterpret_cast<float *>(ps + WD_P), *red_l = red_m + 2 * WD_HM;

    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const int gq = lane / 4, tq = lane % 4;
    const int t = blockIdx.x, h0 = blockIdx.y * WD_HM, sp = blockIdx.z;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    const int pos = s.n_past + (t - s.tok0);
    const int total = min(pos + 1 + a.causal_plus, s.n_past + s.n_new);
    const int per = (total + a.splits - 1) / a.splits;
    const int j0 = min(sp * per, total), j1 = min(j0 + per, total), ntiles = (j1 - j0 + WD_NK - 1) / WD_NK;

    auto issue = [&](int k) { /* tile k into stage k % WD_NST, commit group k */
        if (k < ntiles) dm_load_wide(a.kv, s.slot, j0 + k * WD_NK, j1, kst + (k % WD_NST) * WD_TILE);
    };
#pragma unroll
    for (int k = 0; k < WD_NST; k++) {
        issue(k);
        tc_commit();
    }
    for (int i = tid; i < WD_HM * WD_L / 8; i += WD_THREADS) { /* Q, eight columns at a time */
        const int r = i / (WD_L / 8), e = i % (WD_L / 8) * 8;
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = tc_pack(dm_q(a, g, t, h0 + r, e + 2 * k), dm_q(a, g, t, h0 + r, e + 2 * k + 1));
        *reinterpret_cast<uint4 *>(qs + wd_off(r, e)) = make_uint4(w[0], w[1], w[2], w[3]);
    }

    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.0f;
    const int row0 = 16 * warp + gq; /* this thread's rows: row0 and row0 + 8 */
    const uint64_t dq = wg_desc_k(tc_smem(qs)), dp = wg_desc_k(tc_smem(ps));

    for (int it = 0; it < ntiles; it++) {
        const int n = min(WD_NK, j1 - (j0 + it * WD_NK));
        tc_wait<WD_NST - 1>(); /* tile it has landed (this thread's copies) */
        wg_proxy_fence();      /* ... and, with Q and P, is visible to wgmma */
        __syncthreads();       /* every thread's copies; everyone is done with tile it - 1 */
        const uint32_t kt = tc_smem(kst + (it % WD_NST) * WD_TILE);
        const uint64_t dk = wg_desc_k(kt + wg * 32 * WG_ATOM_ROW), dv = wg_desc_n(kt + 4 * wg * WD_ATOM, WD_ATOM);

        float sc[16];
#pragma unroll
        for (int i = 0; i < 16; i++) sc[i] = 0.0f;
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < WD_L / 16; ks++) {
            const uint32_t off = ks / 4 * WD_ATOM + ks % 4 * 32;
            wg_m64_ss(sc, wg_desc_add(dq, off), wg_desc_add(dk, off));
        }
        wg_commit();
        wg_wait<0>();

        /* online softmax (base 2): sc[4 j + e] is key 32 wg + 8 j + 2 tq + (e % 2) of row row0 + 8 (e / 2) */
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int i = 0; i < 16; i++) {
            const int key = 32 * wg + 8 * (i / 4) + 2 * tq + (i % 2);
            sc[i] = key < n ? sc[i] * g.s_mul : -INFINITY;
            mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], sc[i]);
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            if (tq == 0) red_m[wg * WD_HM + row0 + 8 * r] = mx[r];
        }
        __syncthreads();
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const float mn = fmaxf(m_run[r], fmaxf(red_m[row0 + 8 * r], red_m[WD_HM + row0 + 8 * r]));
            corr[r] = exp2f(m_run[r] - mn); /* m_run = -inf on the first tile: 0 */
            m_run[r] = mn;
            l_run[r] *= corr[r];
        }
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const float p0 = exp2f(sc[4 * j + 2 * r] - m_run[r]), p1 = exp2f(sc[4 * j + 2 * r + 1] - m_run[r]);
                l_run[r] += p0 + p1;
                *reinterpret_cast<uint32_t *>(ps + wg_sw128(row0 + 8 * r, 32 * wg + 8 * j + 2 * tq)) = tc_pack(p0, p1);
            }
#pragma unroll
        for (int i = 0; i < 128; i++) o[i] *= corr[(i / 2) % 2];
        wg_proxy_fence();
        __syncthreads(); /* P of all 64 keys */

        wg_fence();
#pragma unroll
        for (int kk = 0; kk < WD_NK / 16; kk++)
            wg_m64n256_ss_tb(o, wg_desc_add(dp, kk * 32), wg_desc_add(dv, kk * 16 * WG_ATOM_ROW));
        wg_commit();
        wg_wait<0>();
        __syncthreads(); /* stage it % WD_NST and P consumed by both warpgroups */
        issue(it + WD_NST);
        tc_commit();
    }

    /* row sums: over the four lanes of a row, then the two warpgroups */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
        l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
        if (tq == 0) red_l[wg * WD_HM + row0 + 8 * r] = l_run[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int h = h0 + row0 + 8 * r;
        if (h >= a.h) continue;
        const float l = red_l[row0 + 8 * r] + red_l[WD_HM + row0 + 8 * r];
        const int64_t pi = ((int64_t)t * a.h + h) * a.splits + sp;
        const float f = l > 0.0f ? g.o_mul / l : 0.0f;
        float *dst = a.part_o + pi * WD_C + 256 * wg;
#pragma unroll
        for (int j = 0; j < 32; j++)
            *reinterpret_cast<float2 *>(dst + 8 * j + 2 * tq) = make_float2(o[4 * j + 2 * r] * f, o[4 * j + 2 * r + 1] * f);
        if (wg == 0 && tq == 0) a.part_lse[pi] = l > 0.0f ? (m_run[r] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
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
    dim3 grid(a->t, (a->h + WD_HM - 1) / WD_HM, a->splits);
    k_attn_decode_wg<<<grid, WD_THREADS, WD_SHM, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_wg");
    return MLA_OK;
}

#endif
