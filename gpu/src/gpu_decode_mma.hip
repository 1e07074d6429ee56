/* gpu_decode_mma.hip: the tensor-core absorbed decode (NVIDIA mma.sync m16n8k16, bf16 operands, fp32
 * accumulation); MLA_GPU_DECODE=mma, where it fits (gpu_decode_mma_fits).
 *
 * One block of 8 warps owns one decode token, a group of HM = 16 * MT heads (MT m-tiles of 16 rows)
 * and one KV split. Each tile of NK cache rows is copied into shared memory once, by cp.async in two
 * stages (a stage is refilled as soon as it is used, so two tiles are in flight while a block waits),
 * and serves every head of the group. Per tile:
 *   S = Q K^T   warp (mt, sub): rows of m-tile mt x keys [sub, sub + 1) * NK / WPM, over all C + R dims
 *   softmax     online, fp32, base 2; the row maxima of the WPM warps of an m-tile meet in shared memory
 *   O += P V    P rounded to bf16 first (FlashMLA, FlashAttention 2/3 do the same); warp (mt, sub) owns
 *               output dims [sub, sub + 1) * C / WPM of its rows
 * Row sums are of the fp32 probabilities. Queries hold bf16 values already (NUMERICS.md: q_absorbed and
 * q_pe are stored bf16; an fp8 query is e4m3 codes times q_scale, and the codes are what we load).
 * fp8 rows are staged raw and widened to bf16 in shared memory, exactly: every e4m3 value fits bf16,
 * and so does its product with an fp8_ds_mla tile scale, a power of two; the per-tensor k_scale (and
 * the fp8 query's q_scale) multiply the scores and the output instead of each element.
 * Output: the split's normalized fp32 output and LSE, as the other decode kernels (one combine). */
#include "gpu_internal.h"
#include "gpu_kv.h"

#include <stdlib.h>
#include <string.h>

#if !defined(MLA_GPU_HIP) /* AMD: gpu_decode_mfma.hip */

#include "gpu_decode_mma.h"

#define DM_WARPS 8
#define DM_CMAX 512 /* kv_lora_rank */
#define DM_LMAX 576 /* kv_lora_rank + rope dim, padded to 16 */


/* MT m-tiles of 16 heads, NK-key tiles, RAW: fp8 rows widened in shared memory, NST pipeline stages,
 * QREG: the query's A fragments held in registers for the whole block (16 rows per warp, 144
 * registers at C + R 576) instead of re-read from shared memory for every tile. */
template <int MT, int NK, int RAW, int NST, int QREG>
__global__ void __launch_bounds__(DM_THREADS, 1) k_attn_decode_mma(gpu_decode_args a, dm_geom g)
{
    constexpr int HM = 16 * MT, WPM = DM_WARPS / MT, NTS = NK / 8 / WPM, PMAX = DM_CMAX / 16 / WPM, LDP = NK + 8;
    constexpr int KSQ = QREG ? DM_LMAX / 16 : 1;
    static_assert(NTS >= 1 && (NTS == 1 || NTS % 2 == 0), "S n-tiles per warp: 1 or even");
    extern __shared__ __align__(16) uint8_t dm_mem[];
    uint16_t *qs = reinterpret_cast<uint16_t *>(dm_mem);
    uint16_t *kb = qs + (QREG ? 0 : HM * g.ldk);                              /* RAW: one bf16 tile; else NST stages */
    uint8_t *raw = reinterpret_cast<uint8_t *>(kb + (RAW ? 1 : NST) * NK * g.ldk); /* RAW: NST stages */
    uint16_t *ps = reinterpret_cast<uint16_t *>(raw + (RAW ? NST * NK * g.rb : 0)), *ps_lo = ps + HM * LDP;
    float *red_m = reinterpret_cast<float *>(ps_lo + (g.p_split ? HM * LDP : 0)), *red_l = red_m + MT * WPM * 16;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, mt = warp / WPM, sub = warp % WPM;
    const int gq = lane / 4, tq = lane % 4; /* fragment row and column pair */
    const int C = a.kv.codec.c, L = C + a.kv.codec.r, t = blockIdx.x, h0 = blockIdx.y * HM, sp = blockIdx.z;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    int j0, j1;
    kv_split_rows(s, t, a.causal_plus, a.splits, a.split_len, sp, &j0, &j1);
    const int ntiles = (j1 - j0 + NK - 1) / NK;

    /* Tile k goes to stage k % NST (raw rows for fp8, else the bf16 K tile) and is commit group k. A
     * stage is refilled as soon as it is consumed, so while a block waits for tile i + 1, tiles up to
     * i + NST are in flight (the v2 kernel had two stages: one tile in flight during the MMAs). */
    auto issue = [&](int k) {
        if (k >= ntiles) return;
        const int c = j0 + k * NK, st = k % NST;
        uint8_t *dst = RAW ? raw + st * NK * g.rb : reinterpret_cast<uint8_t *>(kb + st * NK * g.ldk);
        dm_load<NK>(a.kv, s.slot, c, min(NK, j1 - c), dst, RAW ? g.rb : g.ldk * 2);
    };
#pragma unroll
    for (int k = 0; k < NST; k++) { /* every stage in flight while Q is converted */
        issue(k);
        tc_commit();
    }
    const int qrow = mt * 16;
    uint32_t qf[KSQ][4];
    if (QREG) {
        const int r0 = h0 + qrow + gq;
#pragma unroll
        for (int ks = 0; ks < KSQ; ks++) {
            const int e = ks * 16 + 2 * tq;
            qf[ks][0] = tc_pack(dm_q(a, g, t, r0, e), dm_q(a, g, t, r0, e + 1));
            qf[ks][1] = tc_pack(dm_q(a, g, t, r0 + 8, e), dm_q(a, g, t, r0 + 8, e + 1));
            qf[ks][2] = tc_pack(dm_q(a, g, t, r0, e + 8), dm_q(a, g, t, r0, e + 9));
            qf[ks][3] = tc_pack(dm_q(a, g, t, r0 + 8, e + 8), dm_q(a, g, t, r0 + 8, e + 9));
        }
    } else {
        for (int i = tid; i < HM * g.lp; i += DM_THREADS) {
            int row = i / g.lp, e = i - row * g.lp;
            qs[row * g.ldk + e] = (uint16_t)(tc_pack(dm_q(a, g, t, h0 + row, e), 0.0f) & 0xffffu);
        }
    }
    if (!RAW) /* pad columns [L, lp) of every K stage: cp.async writes only [0, L) */
        for (int i = tid; i < NST * NK * (g.lp - L); i += DM_THREADS) {
            int row = i / (g.lp - L), e = L + i % (g.lp - L);
            kb[row * g.ldk + e] = 0;
        }

    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    float o[PMAX][2][4];
#pragma unroll
    for (int p = 0; p < PMAX; p++)
#pragma unroll
        for (int k = 0; k < 2; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[p][k][e] = 0.0f;
    const int npair = C / 16, ppw = (npair + WPM - 1) / WPM, p0 = sub * ppw, p1 = min(p0 + ppw, npair);
    const int kbase = sub * NTS * 8;

    for (int it = 0; it < ntiles; it++) {
        const int c0 = j0 + it * NK, n = min(NK, j1 - c0);
        tc_wait<NST - 1>(); /* groups 0 .. it are complete: tile it has landed */
        __syncthreads(); /* ... for every thread's copies; everyone is done with tile it - 1 */
        const uint16_t *kt = kb;
        if (RAW) {
            dm_widen<NK>(a.kv, g, raw + (it % NST) * NK * g.rb, reinterpret_cast<uint8_t *>(kb), n,
                         [&](int j, int e) { return (j * g.ldk + e) * 2; });
            __syncthreads(); /* raw stage it % NST consumed */
            issue(it + NST);
            tc_commit();
        } else {
            kt = kb + (it % NST) * NK * g.ldk;
        }

        /* S = Q K^T for this warp's rows and keys; even and odd k steps in two accumulators, so the
         * MMAs of one n-tile are two dependency chains, not one */
        float sc[NTS][4], sc2[NTS][4];
#pragma unroll
        for (int k = 0; k < NTS; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[k][e] = sc2[k][e] = 0.0f;
        const uint32_t qa = tc_smem(qs + (qrow + lane % 16) * g.ldk + (lane / 16) * 8);
        const uint32_t kaddr = NTS == 1 ? tc_smem(kt + (kbase + lane % 8) * g.ldk + ((lane / 8) % 2) * 8)
                                        : tc_smem(kt + (kbase + lane % 8 + (lane / 16) * 8) * g.ldk + ((lane / 8) % 2) * 8);
        auto step = [&](const uint32_t (&af)[4], int k0, float (&acc)[NTS][4]) {
            if (NTS == 1) {
                uint32_t bf[2];
                tc_ldsm2(bf, kaddr + k0 * 2);
                tc_mma(acc[0], af, bf[0], bf[1]);
            } else {
#pragma unroll
                for (int np = 0; np < NTS / 2; np++) {
                    uint32_t bf[4];
                    tc_ldsm4(bf, kaddr + (np * 16 * g.ldk + k0) * 2);
                    tc_mma(acc[2 * np], af, bf[0], bf[1]);
                    tc_mma(acc[2 * np + 1], af, bf[2], bf[3]);
                }
            }
        };
        if (QREG) {
#pragma unroll
            for (int ks = 0; ks < KSQ; ks++)
                if (ks * 16 < g.lp) step(qf[ks], ks * 16, (ks & 1) ? sc2 : sc);
        } else {
            for (int k0 = 0; k0 < g.lp; k0 += 32) {
                uint32_t af[4];
                tc_ldsm4(af, qa + k0 * 2);
                step(af, k0, sc);
                if (k0 + 16 < g.lp) {
                    tc_ldsm4(af, qa + (k0 + 16) * 2);
                    step(af, k0 + 16, sc2);
                }
            }
        }
#pragma unroll
        for (int k = 0; k < NTS; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[k][e] += sc2[k][e];

        /* online softmax (base 2): masked keys at -inf, row maxima over the m-tile's warps */
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int k = 0; k < NTS; k++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = kbase + k * 8 + 2 * tq + (e & 1);
                sc[k][e] = key < n ? sc[k][e] * g.s_mul : -INFINITY;
                mx[e / 2] = fmaxf(mx[e / 2], sc[k][e]);
            }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        }
        if (tq == 0) {
            red_m[(mt * WPM + sub) * 16 + gq] = mx[0];
            red_m[(mt * WPM + sub) * 16 + gq + 8] = mx[1];
        }
        __syncthreads();
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float mn = m_run[r];
#pragma unroll
            for (int w = 0; w < WPM; w++) mn = fmaxf(mn, red_m[(mt * WPM + w) * 16 + gq + 8 * r]);
            corr[r] = exp2f(m_run[r] - mn); /* m_run = -inf on the first tile: 0 */
            m_run[r] = mn;
            l_run[r] *= corr[r];
        }
#pragma unroll
        for (int k = 0; k < NTS; k++) {
            float p[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                p[e] = exp2f(sc[k][e] - m_run[e / 2]);
                l_run[e / 2] += p[e];
            }
            int col = kbase + k * 8 + 2 * tq;
            uint32_t h01 = tc_pack(p[0], p[1]), h23 = tc_pack(p[2], p[3]);
            *reinterpret_cast<uint32_t *>(ps + (qrow + gq) * LDP + col) = h01;
            *reinterpret_cast<uint32_t *>(ps + (qrow + gq + 8) * LDP + col) = h23;
            if (g.p_split) { /* the remainders p - bf16(p), rounded: P to ~16 bits */
                *reinterpret_cast<uint32_t *>(ps_lo + (qrow + gq) * LDP + col) =
                    tc_pack(p[0] - __uint_as_float(h01 << 16), p[1] - __uint_as_float(h01 & 0xffff0000u));
                *reinterpret_cast<uint32_t *>(ps_lo + (qrow + gq + 8) * LDP + col) =
                    tc_pack(p[2] - __uint_as_float(h23 << 16), p[3] - __uint_as_float(h23 & 0xffff0000u));
            }
        }
#pragma unroll
        for (int pp = 0; pp < PMAX; pp++)
#pragma unroll
            for (int k = 0; k < 2; k++) {
                o[pp][k][0] *= corr[0];
                o[pp][k][1] *= corr[0];
                o[pp][k][2] *= corr[1];
                o[pp][k][3] *= corr[1];
            }
        __syncthreads(); /* P of every key of the tile */

        /* O += P V over this warp's output dims */
#pragma unroll
        for (int kk = 0; kk < NK; kk += 16) {
            uint32_t af[4];
            tc_ldsm4(af, tc_smem(ps + (qrow + lane % 16) * LDP + kk + (lane / 16) * 8));
            const uint16_t *vr = kt + (kk + lane % 8 + ((lane / 8) % 2) * 8) * g.ldk + (lane / 16) * 8;
#pragma unroll
            for (int pp = 0; pp < PMAX; pp++)
                if (p0 + pp < p1) {
                    uint32_t bf[4];
                    tc_ldsm4_t(bf, tc_smem(vr + (p0 + pp) * 16));
                    tc_mma(o[pp][0], af, bf[0], bf[1]);
                    tc_mma(o[pp][1], af, bf[2], bf[3]);
                }
            if (g.p_split) {
                tc_ldsm4(af, tc_smem(ps_lo + (qrow + lane % 16) * LDP + kk + (lane / 16) * 8));
#pragma unroll
                for (int pp = 0; pp < PMAX; pp++)
                    if (p0 + pp < p1) {
                        uint32_t bf[4];
                        tc_ldsm4_t(bf, tc_smem(vr + (p0 + pp) * 16));
                        tc_mma(o[pp][0], af, bf[0], bf[1]);
                        tc_mma(o[pp][1], af, bf[2], bf[3]);
                    }
            }
        }
        if (!RAW) {
            __syncthreads(); /* K stage it % NST consumed */
            issue(it + NST);
            tc_commit();
        }
    }

    /* row sums over the lanes of a row, then over the m-tile's warps */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
        l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
    }
    if (tq == 0) {
        red_l[(mt * WPM + sub) * 16 + gq] = l_run[0];
        red_l[(mt * WPM + sub) * 16 + gq + 8] = l_run[1];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int h = h0 + qrow + gq + 8 * r;
        if (h >= a.h) continue;
        float l = 0.0f;
        for (int w = 0; w < WPM; w++) l += red_l[(mt * WPM + w) * 16 + gq + 8 * r];
        const int64_t pi = ((int64_t)t * a.h + h) * a.splits + sp;
        const float f = l > 0.0f ? g.o_mul / l : 0.0f;
        float *dst = a.part_o + pi * C;
#pragma unroll
        for (int pp = 0; pp < PMAX; pp++)
            if (p0 + pp < p1)
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    int d = (p0 + pp) * 16 + k * 8 + 2 * tq;
                    *reinterpret_cast<float2 *>(dst + d) = make_float2(o[pp][k][2 * r] * f, o[pp][k][2 * r + 1] * f);
                }
        if (sub == 0 && tq == 0) a.part_lse[pi] = l > 0.0f ? (m_run[r] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

/* Heads per block for h query heads: 16, 32 or 64. */
static int dm_mt(int h) { return h <= 16 ? 1 : h <= 32 ? 2 : 4; }

/* Heads a block of the kernel gpu_attn_decode_mma runs: wf's 16 or 32, else 16, 32 or 64 (wt's two
 * warpgroups, wg's 64, mma.sync's 1, 2 or 4 m16 tiles). */
extern "C" int gpu_decode_mma_heads(const gpu_kv_desc *kv, int h)
{
    if (gpu_decode_wf_fits(kv, h)) return h <= 16 ? 16 : 32;
    return 16 * dm_mt(h);
}

/* MLA_GPU_DECODE_WG_HG, read once: 0 the token fastest in a wgmma decode's grid instead of the head
 * groups of a token next to each other (more than one group: wg above 64 heads, wf above 32, wt's fp8
 * above 64). With the token fastest, the second group of each sequence (h 128, b 128: blocks 128-255 of
 * 256 on 132 SMs) runs a wave after the first, when the sequence's cache has long left L2, so the cache
 * is read from DRAM once per group (2 x 1.2 GB at s_k 8192); side by side the groups share each tile in
 * L2. wg off / on, H100 2026-12-06 (results/published/2026-12-06-s19): h128 s_k 8192 923.0 / 885.7 us,
 * s_q 2 s_k 4096 989.5 / 975.5, s_q 2 s_k 8192 1,750.2 / 1,725.6; bit-identical. */
dim3 dm_grid(const gpu_decode_args *a, int hb)
{
    static const int adjacent = !gpu_env_off("MLA_GPU_DECODE_WG_HG");
    const int ng = (a->h + hb - 1) / hb;
    return adjacent ? dim3(a->t * ng, 1, a->splits) : dim3(a->t, ng, a->splits);
}

extern "C" int gpu_decode_mma_fits(const gpu_kv_desc *kv, int h)
{
    int C = kv->codec.c, L = C + kv->codec.r;
    mla_kv_format f = kv->codec.format;
    return h >= 1 && C % 16 == 0 && C <= DM_CMAX && L <= DM_LMAX && kv->row_bytes % 4 == 0 &&
           (f == MLA_KV_BF16 || f == MLA_KV_FP8 || f == MLA_KV_FP8_DS);
}

dm_geom dm_geometry(const gpu_decode_args *a)
{
    const mla_kv_codec &k = a->kv.codec;
    dm_geom g;
    g.lp = (k.c + k.r + 15) / 16 * 16;
    g.ldk = (g.lp + 55) / 64 * 64 + 8; /* smallest stride >= lp that is 8 (mod 64) */
    g.rb = (a->kv.row_bytes + 15) / 16 * 16;
    g.q_div = a->q_div > 0.0f ? a->q_div : 1.0f;
    g.o_mul = k.format == MLA_KV_FP8 ? k.k_scale : 1.0f;
    g.s_mul = a->scale * 1.4426950408889634f * g.q_div * g.o_mul;
    static int p_split = -1; /* MLA_GPU_MMA_P, read once: a diagnostic of how much P's rounding matters */
    if (p_split < 0) {
        const char *pm = getenv("MLA_GPU_MMA_P");
        p_split = pm && !strcmp(pm, "split");
    }
    g.p_split = p_split;
    return g;
}

/* Shared memory of one block: Q (unless in registers), K stages or the bf16 tile and raw stages, P
 * (twice under p_split), the row reductions. */
static size_t dm_shm(int mt, int nk, int raw, int nst, int qreg, const dm_geom &g)
{
    const size_t hm = 16 * (size_t)mt;
    return (qreg ? 0 : hm * g.ldk * 2) + (size_t)(raw ? 1 : nst) * nk * g.ldk * 2 + (raw ? (size_t)nst * nk * g.rb : 0) +
           (size_t)(g.p_split ? 2 : 1) * hm * (nk + 8) * 2 + (size_t)2 * mt * (DM_WARPS / mt) * 16 * 4;
}

template <int MT, int NK, int RAW, int NST> static mla_status dm_launch(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    constexpr int HM = 16 * MT, QREG = MT <= 2;
    const size_t shm = dm_shm(MT, NK, RAW, NST, QREG, g);
    static size_t attr = 0; /* per instantiation: > 48 KB of dynamic shared memory needs the opt-in */
    if (shm > attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_mma<MT, NK, RAW, NST, QREG>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
        attr = shm;
    }
    dim3 grid(a->t, (a->h + HM - 1) / HM, a->splits);
    k_attn_decode_mma<MT, NK, RAW, NST, QREG><<<grid, DM_THREADS, shm, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_mma");
    return MLA_OK;
}

/* The deep pipeline (3 stages of 64 rows, 4 of 32) where it fits in shared memory, else 2 stages. */
template <int MT, int NK, int RAW> static mla_status dm_launch_st(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    constexpr int DEEP = NK == 64 ? 3 : 4;
    if (dm_shm(MT, NK, RAW, DEEP, MT <= 2, g) <= DM_SHM_MAX) return dm_launch<MT, NK, RAW, DEEP>(st, a, g);
    return dm_launch<MT, NK, RAW, 2>(st, a, g);
}

extern "C" mla_status gpu_attn_decode_mma(hipStream_t st, const gpu_decode_args *a)
{
    if (!gpu_decode_mma_fits(&a->kv, a->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: mma decode: C %d, R %d, row %d bytes do not fit", a->kv.codec.c,
                          a->kv.codec.r, a->kv.row_bytes);
    const dm_geom g = dm_geometry(a);
    /* more than 32 heads over DeepSeek's bf16 cache: the wgmma kernel (2.1x this one at 64 and 128 heads,
     * H200 2026-12-01, gpu/bench/KERNELS.md) */
    if (gpu_decode_wg_fits(&a->kv, a->h)) {
        static const int ss = gpu_env_switch("MLA_GPU_DECODE_WG_SS", 1);
        return ss ? gpu_attn_decode_ss(st, a, g) : gpu_attn_decode_wg(st, a, g);
    }
    /* up to 32 heads over it in any format, and fp8 at any head count (gpu_decode_wt.hip, gpu_decode_wf.hip) */
    if (gpu_decode_wt_fits(&a->kv, a->h)) return gpu_attn_decode_wt(st, a, g);
    const int raw = a->kv.codec.format != MLA_KV_BF16, mt = dm_mt(a->h);
    if ((mt == 4 ? 32 : 64) != mla_attn_tc_tile(1, a->h, dm_tc_wide(a))) /* the tiles the reference emulates (attn_tc) */
        return mla_errorf(MLA_ERR_INVALID, "gpu: mma decode tile disagrees with mla_attn_tc_tile");
    if (mt == 1) return raw ? dm_launch_st<1, 64, 1>(st, a, g) : dm_launch_st<1, 64, 0>(st, a, g);
    if (mt == 2) return raw ? dm_launch_st<2, 64, 1>(st, a, g) : dm_launch_st<2, 64, 0>(st, a, g);
    return raw ? dm_launch_st<4, 32, 1>(st, a, g) : dm_launch_st<4, 32, 0>(st, a, g);
}

#endif
