/* gpu_decode_wt.hip: the absorbed decode on Hopper's wgmma (sm_90a) over DeepSeek's cache rows
 * (kv_lora_rank 512 + rope 64): up to 32 heads (the memory-bound shapes) in bf16, per-tensor fp8 or
 * fp8_ds_mla, and fp8 at any head count (64-head groups above 32; e4m3fn goes to its warp-specialized
 * form, gpu_decode_wf.hip). Transposed: the 64 keys of a cache tile are wgmma's M, the heads
 * its N, so 16 or 32 heads waste no MMA rows (gpu_decode_wg.hip puts 64 heads in M). 64-key tiles, as
 * mla_attn_tc_tile says for these caches (mla_attn_tc_wide).
 *
 * One block of two warpgroups owns one decode token, 2 NW heads and one KV split (dm_grid); warpgroup w owns heads
 * [NW w, NW w + NW) alone, the cache tile is shared. Per tile:
 *   S^T = K Q^T      36 m64nNWk16: the tile K-major as A, the warpgroup's Q (NW x 576) K-major as B
 *   softmax          online, fp32, base 2, per column (head): the maxima of the 4 warps (16 keys each)
 *                    meet in shared memory
 *   O^T += V^T P^T   P^T rounded to bf16 (as every tensor-core decode kernel) into an NW x 64 tile;
 *                    8 chunks of 64 output dims x 4 k16 steps, V^T read M-major (the transpose bit)
 *                    from the same cache tile
 * bf16 tiles land by cp.async in 2 stages; fp8 rows land raw in NST stages and are widened, exactly,
 * into the one bf16 tile (dm_widen_e4m3; e4m3fnuz by dm_widen) before the tile's MMAs, which is what bounds
 * fp8 (gpu/bench/KERNELS.md). MLA_GPU_DECODE_WT_OVL=1 (fp8 up to 32 heads): two bf16 tiles, and tile
 * i + 1 is widened while the wgmmas of tile i run, its first 32 rows during S^T, the rest during PV;
 * raw rows land in a ring of NST half tiles (32 rows), since two bf16 tiles leave no room for full raw
 * stages. Same values either way: only the schedule differs. Output as every decode kernel: the
 * split's normalized fp32 output and LSE, merged by the combine. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if defined(MLA_GPU_HIP)

#else

#include <stdlib.h>
#include <string.h>

#include "gpu_decode_mma.h"

/* Shared memory of one block: alignment slack, the bf16 tiles (NST stages, the one widened tile, or two
 * under ovl), Q and P^T of both warpgroups, the raw stages (of 64 rows; 32 under ovl), the column
 * reductions of both warpgroups. */
static size_t wt_shm(int nw, int raw, int nst, int rb, int ovl)
{
    return 1024 + (size_t)(ovl ? 2 : raw ? 1 : nst) * WD_TILE + 2 * (size_t)nw * WD_L * 2 + 2 * (size_t)nw * WG_ATOM_ROW +
           (raw ? (size_t)nst * (ovl ? WD_NK / 2 : WD_NK) * rb : 0) + 2 * 4 * (size_t)nw * 4;
}

/* Barrier of warpgroup w alone (barrier 0 is __syncthreads'). */
__device__ __forceinline__ void wt_bar(int w) { wg_bar_sync(1 + w, 128); }

/* Column (head, in the warpgroup) of accumulator column slot ci of this thread: m64nN's d[4 j + e] is
 * column 8 j + 2 q + e % 2; slot ci = 2 j + e % 2. */
__device__ __forceinline__ int wt_col(int ci, int tq) { return 8 * (ci / 2) + 2 * tq + ci % 2; }

/* NK raw rows -> rows [0, NK) of the bf16 tile at kb by the cache's codec (e4m3fnuz: dm_widen). */
template <int NK>
__device__ __forceinline__ void wt_widen_any(const gpu_decode_args &a, const dm_geom &g, const uint8_t *rs, uint8_t *kb, int n)
{
    if (a.kv.codec.fp8_fnuz) /* e4m3fnuz (no hardware conversion): the general path */
        dm_widen<NK>(a.kv, g, rs, kb, n, [](int j, int e) { return wd_off(j, e); });
    else if (a.kv.codec.format == MLA_KV_FP8_DS)
        dm_widen_e4m3<1, NK>(rs, g.rb, kb, n);
    else
        dm_widen_e4m3<0, NK>(rs, g.rb, kb, n);
}

/* OVL (fp8 only): NST raw stages of 32 rows and two bf16 tiles, tile i + 1 widened during tile i's wgmmas. */
template <int NW, int RAW, int NST, int OVL>
__global__ void __launch_bounds__(DM_THREADS, 1) k_attn_decode_wt(gpu_decode_args a, dm_geom g)
{
    constexpr int QA = NW * WG_ATOM_ROW; /* one atom of the warpgroup's Q: NW rows x 64 columns */
    constexpr int QW = WD_L / 64 * QA;   /* the warpgroup's Q: 9 atoms */
    constexpr int PW = NW * WG_ATOM_ROW; /* the warpgroup's P^T: NW heads x 64 keys, one atom */
    constexpr int NA = NW / 2, NC = NW / 4; /* accumulator floats of one m64nNW; columns a thread holds */
    extern __shared__ uint8_t wt_mem[];
    uint8_t *kb = wg_align1024(wt_mem);
    constexpr int RN = OVL ? WD_NK / 2 : WD_NK; /* rows of a raw stage */
    uint8_t *qs = kb + (OVL ? 2 : RAW ? 1 : NST) * WD_TILE, *ps = qs + 2 * QW, *raw = ps + 2 * PW;
    float *red = reinterpret_cast<float *>(raw + (RAW ? NST * RN * g.rb : 0));

    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const int gq = lane / 4, tq = lane % 4;
    const dm_heads hb = dm_heads_of<2 * NW>(a.h);
    const int t = hb.t, h0 = hb.h0, sp = blockIdx.z;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    int j0, j1;
    kv_split_rows(s, t, a.causal_plus, a.splits, a.split_len, sp, &j0, &j1);
    const int ntiles = (j1 - j0 + WD_NK - 1) / WD_NK;

    auto issue = [&](int k) { /* tile k into stage k % NST (raw rows, or the bf16 tile), commit group k */
        if (k >= ntiles) return;
        const int c = j0 + k * WD_NK;
        if (RAW)
            dm_load<WD_NK>(a.kv, s.slot, c, min(WD_NK, j1 - c), raw + (k % NST) * WD_NK * g.rb, g.rb);
        else
            dm_load_wide(a.kv, s.slot, c, j1, kb + (k % NST) * WD_TILE);
    };
    /* OVL: half h (rows [32 (h % 2), +32) of tile h / 2) lands in stage h % NST and widens into bf16 tile
     * (h / 2) % 2. step(h) is where everyone reaches before widening half h: half h has landed (the
     * commit groups hold halves up to h + NST - 2), tile h / 2 - 1 is widened and fenced (S^T may read
     * it), tile h / 2 - 2's wgmmas are done in both warpgroups (its bf16 tile is free), and half h - 1 is
     * consumed, so its stage takes half h + NST - 1: NST - 1 halves ahead. */
    auto issue_half = [&](int h) {
        const int c = j0 + h / 2 * WD_NK + h % 2 * RN;
        if (c < j1) dm_load<RN>(a.kv, s.slot, c, min(RN, j1 - c), raw + h % NST * RN * g.rb, g.rb);
    };
    auto step = [&](int h) {
        tc_wait<OVL ? NST - 2 : 0>();
        __syncthreads();
        issue_half(h + NST - 1);
        tc_commit();
    };
    auto widen_half = [&](int h) {
        if (h / 2 < ntiles)
            wt_widen_any<RN>(a, g, raw + h % NST * RN * g.rb, kb + h / 2 % 2 * WD_TILE + h % 2 * RN * WG_ATOM_ROW,
                             min(WD_NK, j1 - (j0 + h / 2 * WD_NK)) - h % 2 * RN);
    };
#pragma unroll
    for (int k = 0; k < (OVL ? NST - 1 : NST); k++) {
        if (OVL)
            issue_half(k);
        else
            issue(k);
        tc_commit();
    }
    for (int i = tid; i < 2 * NW * WD_L / 8; i += DM_THREADS) { /* Q, eight columns at a time */
        const int r = i / (WD_L / 8), e = i % (WD_L / 8) * 8;
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = tc_pack(dm_q(a, g, t, h0 + r, e + 2 * k), dm_q(a, g, t, h0 + r, e + 2 * k + 1));
        *reinterpret_cast<uint4 *>(qs + r / NW * QW + e / 64 * QA + wg_sw128(r % NW, e % 64)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
    if (OVL) { /* tile 0 */
        step(0);
        widen_half(0);
        step(1);
        widen_half(1);
    }

    float m_run[NC], l_run[NC], o[WD_C / 64][NA];
#pragma unroll
    for (int ci = 0; ci < NC; ci++) {
        m_run[ci] = -INFINITY;
        l_run[ci] = 0.0f;
    }
#pragma unroll
    for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
        for (int i = 0; i < NA; i++) o[c][i] = 0.0f;
    const uint64_t dq = wg_desc_k(tc_smem(qs + wg * QW)), dp = wg_desc_k(tc_smem(ps + wg * PW));
    uint8_t *pw = ps + wg * PW;
    float *rw = red + wg * 4 * NW; /* [warp][column] of this warpgroup */

    for (int it = 0; it < ntiles; it++) {
        const int n = min(WD_NK, j1 - (j0 + it * WD_NK));
        if (OVL) {
            wg_proxy_fence(); /* tile it (and Q) visible to wgmma after step's barrier */
            step(2 * it + 2);
        } else if (RAW) {
            tc_wait<NST - 1>(); /* tile it has landed (this thread's copies) */
            __syncthreads(); /* every thread's copies; everyone is done with the bf16 tile of tile it - 1 */
            wt_widen_any<WD_NK>(a, g, raw + (it % NST) * WD_NK * g.rb, kb, n);
            wg_proxy_fence();
            __syncthreads(); /* the widened tile; raw stage it % NST consumed */
            issue(it + NST);
            tc_commit();
        } else {
            tc_wait<NST - 1>(); /* tile it has landed (this thread's copies) ... */
            wg_proxy_fence(); /* ... and, with Q and P^T, is visible to wgmma */
            __syncthreads();  /* every thread's copies; everyone is done with tile it - 1 */
        }
        const uint32_t kt = tc_smem(kb + (OVL ? it % 2 : RAW ? 0 : it % NST) * WD_TILE);
        const uint64_t dk = wg_desc_k(kt), dv = wg_desc_n(kt, WD_ATOM);

        float sc[NA];
#pragma unroll
        for (int i = 0; i < NA; i++) sc[i] = 0.0f;
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < WD_L / 16; ks++)
            wg_m64_ss(sc, wg_desc_add(dk, ks / 4 * WD_ATOM + ks % 4 * 32), wg_desc_add(dq, ks / 4 * QA + ks % 4 * 32));
        wg_commit();
        if (OVL) widen_half(2 * it + 2); /* rows 0-31 of tile it + 1 while S^T runs */
        wg_wait<0>();

        /* online softmax per column: sc[4 j + e] is key 16 warp + gq + 8 (e / 2) of column slot 2 j + e % 2 */
        float mx[NC];
#pragma unroll
        for (int ci = 0; ci < NC; ci++) mx[ci] = -INFINITY;
#pragma unroll
        for (int i = 0; i < NA; i++) {
            const int key = 16 * warp + gq + 8 * ((i % 4) / 2), ci = 2 * (i / 4) + i % 2;
            sc[i] = key < n ? sc[i] * g.s_mul : -INFINITY;
            mx[ci] = fmaxf(mx[ci], sc[i]);
        }
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 4));
            mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 8));
            mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 16));
            if (gq == 0) rw[warp * NW + wt_col(ci, tq)] = mx[ci];
        }
        wt_bar(wg);
        float corr[NC];
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            const int col = wt_col(ci, tq);
            const float mn = fmaxf(fmaxf(m_run[ci], fmaxf(rw[col], rw[NW + col])), fmaxf(rw[2 * NW + col], rw[3 * NW + col]));
            corr[ci] = exp2f(m_run[ci] - mn); /* m_run = -inf on the first tile: 0 */
            m_run[ci] = mn;
            l_run[ci] *= corr[ci];
        }
#pragma unroll
        for (int i = 0; i < NA; i++) {
            const int key = 16 * warp + gq + 8 * ((i % 4) / 2), ci = 2 * (i / 4) + i % 2;
            const float p = exp2f(sc[i] - m_run[ci]);
            l_run[ci] += p;
            *reinterpret_cast<uint16_t *>(pw + wg_sw128(wt_col(ci, tq), key)) = (uint16_t)(tc_pack(p, 0.0f) & 0xffffu);
        }
#pragma unroll
        for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
            for (int i = 0; i < NA; i++) o[c][i] *= corr[2 * (i / 4) + i % 2];
        wg_proxy_fence();
        wt_bar(wg); /* P^T of the warpgroup's columns, all 64 keys */

        wg_fence();
#pragma unroll
        for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
            for (int kk = 0; kk < WD_NK / 16; kk++)
                wg_m64_ss<1>(o[c], wg_desc_add(dv, c * WD_ATOM + kk * 16 * WG_ATOM_ROW), wg_desc_add(dp, kk * 32));
        wg_commit();
        if (OVL) { /* rows 32-63 of tile it + 1 while PV runs */
            step(2 * it + 3);
            widen_half(2 * it + 3);
        }
        wg_wait<0>();
        if (!RAW) {
            __syncthreads(); /* stage it % NST consumed by both warpgroups */
            issue(it + NST);
            tc_commit();
        }
    }

    /* column sums: over the 8 lanes of a column, then the 4 warps */
#pragma unroll
    for (int ci = 0; ci < NC; ci++) {
        l_run[ci] += __shfl_xor_sync(0xffffffffu, l_run[ci], 4);
        l_run[ci] += __shfl_xor_sync(0xffffffffu, l_run[ci], 8);
        l_run[ci] += __shfl_xor_sync(0xffffffffu, l_run[ci], 16);
    }
    __syncthreads(); /* every warp is past its last read of the maxima */
#pragma unroll
    for (int ci = 0; ci < NC; ci++)
        if (gq == 0) rw[warp * NW + wt_col(ci, tq)] = l_run[ci];
    wt_bar(wg);
#pragma unroll
    for (int ci = 0; ci < NC; ci++) {
        const int col = wt_col(ci, tq), h = h0 + wg * NW + col;
        if (h >= a.h) continue;
        const float l = rw[col] + rw[NW + col] + rw[2 * NW + col] + rw[3 * NW + col];
        const int64_t pi = ((int64_t)t * a.h + h) * a.splits + sp;
        const float f = l > 0.0f ? g.o_mul / l : 0.0f;
        float *dst = a.part_o + pi * WD_C + 16 * warp + gq;
#pragma unroll
        for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
            for (int r = 0; r < 2; r++) dst[64 * c + 8 * r] = o[c][4 * (ci / 2) + 2 * r + ci % 2] * f;
        if (warp == 0 && gq == 0) a.part_lse[pi] = l > 0.0f ? (m_run[ci] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

/* MLA_GPU_DECODE_WT=0, read once: the mma.sync kernel instead up to 32 heads (comparisons; fp8 at 33 to
 * 64 heads stays here, where the reference emulates 64-key tiles). bf16 above 32 heads goes to the
 * wgmma decode: this kernel at 64 heads took 594.0 us against its 460.7 (b128 s_k 8192, H200 2026-12-02). */
int gpu_decode_wt_fits(const gpu_kv_desc *kv, int h)
{
    static const int off = gpu_env_off("MLA_GPU_DECODE_WT");
    const mla_kv_codec &k = kv->codec;
    const int fp8 = k.format == MLA_KV_FP8 || k.format == MLA_KV_FP8_DS;
    const int heads_ok = h >= 1 && ((h <= 32 && !off) || fp8);
    return heads_ok && k.c == WD_C &&
           k.c + k.r == WD_L && (fp8 || k.format == MLA_KV_BF16) &&
           kv->row_bytes == (int)mla_kv_row_bytes(k.format, k.c, k.r) && kv->row_bytes % 16 == 0;
}

template <int NW, int RAW, int NST, int OVL = 0>
static mla_status wt_launch(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    const size_t shm = wt_shm(NW, RAW, NST, g.rb, OVL);
    static size_t attr = 0; /* per instantiation: > 48 KB of dynamic shared memory needs the opt-in */
    if (shm > attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_wt<NW, RAW, NST, OVL>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
        attr = shm;
    }
    k_attn_decode_wt<NW, RAW, NST, OVL><<<dm_grid(a, 2 * NW), DM_THREADS, shm, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_wt");
    return MLA_OK;
}

/* MLA_GPU_DECODE_WT_OVL=1, read once: the overlapped fp8 schedule where it fits. */
static int wt_ovl(void)
{
    static const int on = gpu_env_switch("MLA_GPU_DECODE_WT_OVL", 1);
    return on;
}

/* fp8: with MLA_GPU_DECODE_WT_OVL=1, two bf16 tiles and the raw half stages that fit beside them (8 heads
 * a warpgroup: 3, 16: 2; 32: none, so the old schedule); else as many raw stages (3, 2, 1) as shared
 * memory holds beside the one widened tile. e4m3fnuz keeps the old schedule (dm_widen, not timed). */
template <int NW> static mla_status wt_launch_raw(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    if constexpr (NW <= 16) {
        constexpr int NH = NW == 8 ? 3 : 2;
        if (wt_ovl() && !a->kv.codec.fp8_fnuz && wt_shm(NW, 1, NH, g.rb, 1) <= DM_SHM_MAX)
            return wt_launch<NW, 1, NH, 1>(st, a, g);
    }
    if (wt_shm(NW, 1, 3, g.rb, 0) <= DM_SHM_MAX) return wt_launch<NW, 1, 3>(st, a, g);
    if (wt_shm(NW, 1, 2, g.rb, 0) <= DM_SHM_MAX) return wt_launch<NW, 1, 2>(st, a, g);
    return wt_launch<NW, 1, 1>(st, a, g);
}

mla_status gpu_attn_decode_wt(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    if (!gpu_decode_wt_fits(&a->kv, a->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: transposed wgmma decode: needs C 512 + R 64 and at most 32 heads "
                          "over bf16");
    if (mla_attn_tc_tile(1, a->h, dm_tc_wide(a)) != WD_NK) /* the tiles the reference emulates (attn_tc) */
        return mla_errorf(MLA_ERR_INVALID, "gpu: transposed wgmma decode tile disagrees with mla_attn_tc_tile");
    if (gpu_decode_wf_fits(&a->kv, a->h)) return gpu_attn_decode_wf(st, a, g); /* e4m3fn up to 32 heads */
    const int raw = a->kv.codec.format != MLA_KV_BF16;
    if (a->h <= 16) return raw ? wt_launch_raw<8>(st, a, g) : wt_launch<8, 0, 2>(st, a, g);
    if (a->h <= 32) return raw ? wt_launch_raw<16>(st, a, g) : wt_launch<16, 0, 2>(st, a, g);
    return wt_launch_raw<32>(st, a, g); /* above 32 heads only fp8 fits here (gpu_decode_wt_fits): 64-head groups */
}

#endif
