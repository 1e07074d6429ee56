/* gpu_decode_mfma.hip: the tensor-core decode on AMD (CDNA, gfx90a / gfx940: v_mfma_f32_16x16x16
 * bf16, wave64), what MLA_GPU_DECODE=mma and `attn = tc` run in the AMD build; the NVIDIA build has
 * gpu_decode_mma.hip and the wgmma kernels instead. Compiled in CI (gpu/tools/compile_check.sh), its
 * fragment addressing checked on the host against the assumed MFMA layout (gpu_decode_mfma.h,
 * gpu/tests/test_decode_mfma.cpp); never run on an AMD GPU.
 *
 * One block of four waves owns one decode token, 16 heads and one KV split, over key tiles of
 * mla_attn_tc_tile() keys (64, or 32 above 32 heads outside DeepSeek's 512 + 64 rows), the tiles the
 * reference emulates under attn_tc. Shared memory (64 KB on CDNA) holds Q and 32 cache rows, widened
 * to bf16 exactly (fp8 codes times a power-of-two fp8_ds_mla tile scale fit bf16; the per-tensor
 * k_scale and an fp8 query's q_scale multiply the scores and the output instead). Per tile:
 *   S = Q K^T    per 32 rows: waves 0 and 1 one 16-key block each, 36 MFMAs over 576 dims
 *   softmax      online, fp32, base 2, over the tile's keys: 16 threads a head
 *   O += P V     P rounded to bf16 first (as every tensor-core kernel); wave w owns the output dims
 *                16 (w + 4 i) .. + 15; the tile's first 32 rows are read again from the cache for P V
 *                when the tile has 64 keys (their shared memory held the next 32 for S)
 * Output: the split's normalized fp32 output and LSE, merged by the combine as every decode kernel. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#include <math.h>

#if defined(MLA_GPU_HIP)

#include "gpu_decode_mfma.h"

static_assert(MLA_WARP == MF_LANES, "the MFMA decode is written for wave64");

typedef short mf_s4 __attribute__((ext_vector_type(4)));
typedef float mf_f4 __attribute__((ext_vector_type(4)));

/* Shapes every block of one launch shares (host). */
typedef struct mf_geom {
    int lp, ldk, nk; /* C + R rounded up to 16; Q / K row stride; keys a tile */
    float q_div;     /* an fp8 query's q_scale (1 otherwise): Q holds q / q_div, the codes */
    float s_mul;     /* softmax scale x log2(e) x q_div x k_scale: scores in base 2 */
    float o_mul;     /* k_scale of a per-tensor fp8 cache (1 otherwise) */
} mf_geom;

__device__ __forceinline__ mf_f4 mf_mma(const uint16_t (&a)[4], const uint16_t (&b)[4], mf_f4 c)
{
    const mf_s4 va = {(short)a[0], (short)a[1], (short)a[2], (short)a[3]};
    const mf_s4 vb = {(short)b[0], (short)b[1], (short)b[2], (short)b[3]};
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, c, 0, 0, 0);
}

/* Element e of a cache row as bf16 bits: bf16 as stored; e4m3 codes decoded exactly (fn or fnuz) and,
 * in fp8_ds_mla, times their tile scale, rounded once (exact for power-of-two scales); the rope of
 * fp8_ds_mla as stored. The per-tensor k_scale is not applied (g.s_mul, g.o_mul). */
__device__ __forceinline__ uint16_t mf_widen(const mla_kv_codec &k, const uint8_t *row, int e)
{
    if (e >= k.c + k.r) return 0;
    if (k.format == MLA_KV_BF16) return (uint16_t)(row[2 * e] | row[2 * e + 1] << 8);
    if (k.format == MLA_KV_FP8) return gd_f32_to_bf16(gd_e4m3_to_f32(row[e], k.fp8_fnuz));
    const int tiles = (k.c + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE;
    if (e >= k.c) return (uint16_t)(row[k.c + 4 * tiles + 2 * (e - k.c)] | row[k.c + 4 * tiles + 2 * (e - k.c) + 1] << 8);
    float s;
    memcpy(&s, row + k.c + 4 * (e / MLA_KV_DS_TILE), 4);
    return gd_f32_to_bf16(gd_e4m3_to_f32(row[e], k.fp8_fnuz) * s);
}

/* Cache rows [c, c + n) of the sequence in slot into the K rows (n <= MF_KR; the rest zero, so P V
 * never meets the pool's NaN poison): 8 threads a row, its address found once. */
__device__ __forceinline__ void mf_load_rows(const gpu_kv_desc &kv, int slot, int c, int n, uint16_t *K, const mf_geom &g)
{
    constexpr int T = MF_THREADS / MF_KR;
    const int j = threadIdx.x / T;
    const uint8_t *row = j < n ? kv_row(kv, slot, c + j) : nullptr;
    for (int e = threadIdx.x % T; e < g.lp; e += T) K[j * g.ldk + e] = row ? mf_widen(kv.codec, row, e) : 0;
}

/* NB: output-dim blocks of 16 a wave (C = 64 NB). */
template <int NB> __global__ void __launch_bounds__(MF_THREADS) k_attn_decode_mfma(gpu_decode_args a, mf_geom g)
{
    extern __shared__ uint16_t mf_mem[];
    uint16_t *Q = mf_mem, *K = mf_mem + mf_off_k(g.ldk), *P = mf_mem + mf_off_p(g.ldk);
    float *sc = reinterpret_cast<float *>(mf_mem) + mf_off_f32(g.ldk), *m_run = sc + MF_HM * 64, *l_run = m_run + MF_HM,
          *corr = l_run + MF_HM;
    const int tid = threadIdx.x, wave = tid / MF_LANES, lane = tid % MF_LANES, C = a.kv.codec.c, L = C + a.kv.codec.r;
    const int t = blockIdx.x, h0 = blockIdx.y * MF_HM, sp = blockIdx.z;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    const int pos = s.n_past + (t - s.tok0);
    const int total = min(pos + 1 + a.causal_plus, s.n_past + s.n_new);
    const int per = (total + a.splits - 1) / a.splits;
    const int j0 = min(sp * per, total), j1 = min(j0 + per, total), ntiles = (j1 - j0 + g.nk - 1) / g.nk;

    for (int i = tid; i < MF_HM * g.lp; i += MF_THREADS) { /* Q / q_div: bf16 values already (NUMERICS.md) */
        const int r = i / g.lp, e = i % g.lp, h = h0 + r;
        float v = 0.0f;
        if (h < a.h && e < L) v = (e < C ? a.q_abs[((int64_t)t * a.h + h) * C + e] : a.q_pe[((int64_t)t * a.h + h) * (L - C) + e - C]) / g.q_div;
        Q[r * g.ldk + e] = gd_f32_to_bf16(v);
    }
    if (tid < MF_HM) {
        m_run[tid] = -INFINITY;
        l_run[tid] = 0.0f;
    }
    mf_f4 o[NB];
#pragma unroll
    for (int b = 0; b < NB; b++) o[b] = mf_f4{0.0f, 0.0f, 0.0f, 0.0f};
    const int nch = g.nk / MF_KR; /* 32-row chunks a tile */

    for (int it = 0; it < ntiles; it++) {
        const int c0 = j0 + it * g.nk, n = min(g.nk, j1 - c0);
        for (int ch = 0; ch < nch; ch++) {
            __syncthreads(); /* the K rows' last readers are done */
            mf_load_rows(a.kv, s.slot, c0 + MF_KR * ch, min(MF_KR, n - MF_KR * ch), K, g);
            __syncthreads();
            if (wave < 2) { /* S of keys 32 ch + 16 wave .. + 15 */
                mf_f4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
                for (int k0 = 0; k0 < g.lp; k0 += 16) {
                    uint16_t fa[4], fb[4];
                    mf_frag_rows(Q, g.ldk, k0, lane, fa);
                    mf_frag_rows(K + 16 * wave * g.ldk, g.ldk, k0, lane, fb);
                    acc = mf_mma(fa, fb, acc);
                }
                const int key = MF_KR * ch + 16 * wave + mf_d_col(lane);
#pragma unroll
                for (int i = 0; i < 4; i++) sc[mf_d_row(lane, i) * 64 + key] = key < n ? acc[i] * g.s_mul : -INFINITY;
            }
        }
        __syncthreads(); /* every score of the tile */
        { /* softmax: head tid / 16, keys tid % 16 + 16 j */
            const int hh = tid / 16, sub = tid % 16;
            float mx = -INFINITY;
            for (int k = sub; k < g.nk; k += 16) mx = fmaxf(mx, sc[hh * 64 + k]);
            for (int msk = 8; msk > 0; msk >>= 1) mx = fmaxf(mx, mla_shfl_xor(mx, msk));
            const float m_old = m_run[hh], mn = fmaxf(m_old, mx), cr = exp2f(m_old - mn); /* m_old = -inf first: 0 */
            float sum = 0.0f;
            for (int k = sub; k < g.nk; k += 16) {
                const float p = exp2f(sc[hh * 64 + k] - mn);
                sum += p;
                P[hh * MF_PLD + k] = gd_f32_to_bf16(p);
            }
            for (int msk = 8; msk > 0; msk >>= 1) sum += mla_shfl_xor(sum, msk);
            __syncthreads(); /* every thread of the head has read m_run */
            if (sub == 0) {
                m_run[hh] = mn;
                l_run[hh] = l_run[hh] * cr + sum;
                corr[hh] = cr;
            }
        }
        __syncthreads(); /* P, corr */
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int i = 0; i < 4; i++) o[b][i] *= corr[mf_d_row(lane, i)];
        for (int ch = nch - 1; ch >= 0; ch--) { /* the last chunk is in shared memory; earlier ones again */
            if (ch != nch - 1) {
                __syncthreads();
                mf_load_rows(a.kv, s.slot, c0 + MF_KR * ch, min(MF_KR, n - MF_KR * ch), K, g);
                __syncthreads();
            }
            for (int kb = 0; kb < MF_KR / 16; kb++) {
                uint16_t fa[4];
                mf_frag_rows(P, MF_PLD, MF_KR * ch + 16 * kb, lane, fa);
#pragma unroll
                for (int b = 0; b < NB; b++) {
                    uint16_t fb[4];
                    mf_frag_cols(K, g.ldk, 16 * kb, 16 * (wave + 4 * b), lane, fb);
                    o[b] = mf_mma(fa, fb, o[b]);
                }
            }
        }
    }
    __syncthreads(); /* l_run, m_run final */
#pragma unroll
    for (int b = 0; b < NB; b++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int hh = mf_d_row(lane, i), h = h0 + hh;
            if (h >= a.h) continue;
            const float l = l_run[hh];
            const int64_t pi = ((int64_t)t * a.h + h) * a.splits + sp;
            a.part_o[pi * C + 16 * (wave + 4 * b) + mf_d_col(lane)] = l > 0.0f ? o[b][i] * g.o_mul / l : 0.0f;
        }
    if (tid < MF_HM && h0 + tid < a.h) {
        const float l = l_run[tid];
        const int64_t pi = ((int64_t)t * a.h + h0 + tid) * a.splits + sp;
        a.part_lse[pi] = l > 0.0f ? (m_run[tid] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

/* C a multiple of 64 up to 512 (8 dim blocks a wave), C + R up to 576: DeepSeek's and the tiny models'
 * caches in every format (e4m3fnuz included). */
extern "C" int gpu_decode_mma_fits(const gpu_kv_desc *kv, int h)
{
    const mla_kv_codec &k = kv->codec;
    return h >= 1 && k.c % 64 == 0 && k.c >= 64 && k.c <= MF_CMAX && k.c + k.r <= MF_LMAX &&
           (k.format == MLA_KV_BF16 || k.format == MLA_KV_FP8 || k.format == MLA_KV_FP8_DS);
}
extern "C" int gpu_decode_mma_heads(int h)
{
    (void)h;
    return MF_HM;
}

template <int NB> static mla_status mf_launch(hipStream_t st, const gpu_decode_args *a, const mf_geom &g)
{
    dim3 grid(a->t, (a->h + MF_HM - 1) / MF_HM, a->splits);
    k_attn_decode_mfma<NB><<<grid, MF_THREADS, mf_shm_bytes(g.ldk), st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_mfma");
    return MLA_OK;
}

extern "C" mla_status gpu_attn_decode_mma(hipStream_t st, const gpu_decode_args *a)
{
    if (!gpu_decode_mma_fits(&a->kv, a->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: MFMA decode: needs kv_lora_rank a multiple of 64 up to %d and "
                          "kv_lora_rank + rope dim up to %d", MF_CMAX, MF_LMAX);
    const mla_kv_codec &k = a->kv.codec;
    const int fp8 = k.format == MLA_KV_FP8 || k.format == MLA_KV_FP8_DS;
    mf_geom g;
    g.lp = (k.c + k.r + 15) / 16 * 16;
    g.ldk = mf_ldk(g.lp);
    g.nk = mla_attn_tc_tile(1, a->h, mla_attn_tc_wide(fp8 ? MLA_PROFILE_FP8KV : MLA_PROFILE_BF16, k.c, k.r, a->h));
    g.q_div = a->q_div > 0.0f ? a->q_div : 1.0f;
    g.o_mul = k.format == MLA_KV_FP8 ? k.k_scale : 1.0f;
    g.s_mul = a->scale * 1.4426950408889634f * g.q_div * g.o_mul;
    switch (k.c / 64) {
    case 1: return mf_launch<1>(st, a, g);
    case 2: return mf_launch<2>(st, a, g);
    case 3: return mf_launch<3>(st, a, g);
    case 4: return mf_launch<4>(st, a, g);
    case 5: return mf_launch<5>(st, a, g);
    case 6: return mf_launch<6>(st, a, g);
    case 7: return mf_launch<7>(st, a, g);
    default: return mf_launch<8>(st, a, g);
    }
}

#endif
