/* gpu_prefill_mma.hip: tensor-core prefill, naive (MHA) form (MLA_GPU_PREFILL=mma, opt-in; NVIDIA).
 *
 * FlashAttention-2's shape on mma.sync m16n8k16 (bf16 operands, fp32 accumulation): one block of 4
 * warps owns 64 new-token rows of one sequence and one head; each warp 16 rows. Key tiles of 64 rows
 * (K = [k_nope | k_pe] and V from the naive-form workspace) are copied by cp.async in two stages, a
 * stage refilled as soon as it is used. S = Q K^T stays in registers, the online softmax is per warp
 * (a row lives in 4 lanes), P is rounded to bf16 and fed from registers as the A operand of P V.
 * Parts and merge as the other prefill kernels (reference/NUMERICS.md): the new tokens (causal) first,
 * then the cached context, each part normalized; with context, both parts rounded to bf16 and merged
 * by LSE in fp32. */
#include "gpu_internal.h"

#if defined(MLA_GPU_HIP)

extern "C" int gpu_prefill_mma_fits(int p, int r, int v)
{
    (void)p;
    (void)r;
    (void)v;
    return 0;
}
extern "C" mla_status gpu_attn_prefill_mma(hipStream_t st, const gpu_prefill_args *a)
{
    (void)st;
    (void)a;
    return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: the tensor-core prefill kernel is NVIDIA-only");
}

#else

#include "gpu_dtype.h"
#include "gpu_mma.h"

#define PM_THREADS 128
#define PM_BM 64     /* query rows per block, 16 per warp */
#define PM_BN 64     /* keys per tile */
#define PM_QKMAX 192 /* qk_nope + qk_rope */
#define PM_VMAX 128  /* v_head_dim */

typedef struct pm_geom {
    int lqk, ldk; /* P + R rounded up to 16, row stride of Q and K tiles (8 mod 64: ldmatrix without bank conflicts) */
    int lv, ldv;  /* V rounded up to 16, row stride of V tiles */
    float s_mul;  /* softmax scale x log2(e) */
} pm_geom;

static int pm_stride(int n) { return (n + 55) / 64 * 64 + 8; } /* smallest >= n that is 8 (mod 64) */

/* Rows [c0, c0 + n) of the workspace (ws rows base + c) into K and V tiles; rows at or past n zeroed.
 * Two threads a row, alternate chunks: the row's three sources are addressed once (the first version
 * divided per chunk and spent more issue slots on addresses than on MMAs). */
template <int CH>
__device__ __forceinline__ void pm_load_kv(const gpu_prefill_args &a, const pm_geom &g, int h, int base, int c0, int n,
                                           uint16_t *k, uint16_t *v)
{
    static_assert(PM_THREADS == 2 * PM_BN, "two threads a key row");
    const int cp = a.p * 2 / CH, ckr = cp + a.r * 2 / CH, per = ckr + a.v * 2 / CH;
    const int j = threadIdx.x / 2, ok = j < n, valid = ok ? CH : 0;
    const int64_t row = base + c0 + (ok ? j : 0);
    const uint8_t *sk = reinterpret_cast<const uint8_t *>(a.kvx + row * a.h * (a.p + a.v) + (int64_t)h * (a.p + a.v));
    const uint8_t *sr = reinterpret_cast<const uint8_t *>(a.ws_kpe + row * a.r);
    const uint8_t *sv = sk + a.p * 2;
    const uint32_t dk = tc_smem(k + j * g.ldk), dr = dk + a.p * 2, dv = tc_smem(v + j * g.ldv);
    for (int c = threadIdx.x % 2; c < per; c += 2) {
        if (c < cp)
            tc_cp<CH>(dk + c * CH, sk + c * CH, valid);
        else if (c < ckr)
            tc_cp<CH>(dr + (c - cp) * CH, sr + (c - cp) * CH, valid);
        else
            tc_cp<CH>(dv + (c - ckr) * CH, sv + (c - ckr) * CH, valid);
    }
}

/* One part of a block: keys [0, nk) at workspace rows base + key; causal against the rows' own new
 * index when causal (new part). Leaves the normalized output in o and the part's LSE (natural) in lse. */
template <int CH>
__device__ void pm_part(const gpu_prefill_args &a, const pm_geom &g, int h, int base, int nk, int causal, int row0,
                        const uint16_t *qs, uint16_t *ks, uint16_t *vs, float (&o)[PM_VMAX / 8][4], float (&lse)[2])
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gq = lane / 4, tq = lane % 4;
    const int ntiles = (nk + PM_BN - 1) / PM_BN, nv = g.lv / 8;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < PM_VMAX / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[n][e] = 0.0f;
    auto issue = [&](int k) {
        if (k < ntiles)
            pm_load_kv<CH>(a, g, h, base, k * PM_BN, min(PM_BN, nk - k * PM_BN), ks + (k & 1) * PM_BN * g.ldk,
                           vs + (k & 1) * PM_BN * g.ldv);
    };
    __syncthreads(); /* the previous part is done with the stages */
    issue(0);
    tc_commit();
    issue(1);
    tc_commit();
    const int r0 = row0 + warp * 16 + gq; /* this lane's rows r0 and r0 + 8 (new-token index) */
    const uint32_t qa = tc_smem(qs + (warp * 16 + lane % 16) * g.ldk + (lane / 16) * 8);
    for (int it = 0; it < ntiles; it++) {
        tc_wait_one();
        __syncthreads();
        const uint16_t *kt = ks + (it & 1) * PM_BN * g.ldk, *vt = vs + (it & 1) * PM_BN * g.ldv;
        float s[PM_BN / 8][4];
#pragma unroll
        for (int n = 0; n < PM_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[n][e] = 0.0f;
        for (int k0 = 0; k0 < g.lqk; k0 += 16) {
            uint32_t af[4];
            tc_ldsm4(af, qa + k0 * 2);
#pragma unroll
            for (int np = 0; np < PM_BN / 16; np++) {
                uint32_t bf[4];
                tc_ldsm4(bf, tc_smem(kt + (np * 16 + lane % 8 + (lane / 16) * 8) * g.ldk + k0 + ((lane / 8) % 2) * 8));
                tc_mma(s[2 * np], af, bf[0], bf[1]);
                tc_mma(s[2 * np + 1], af, bf[2], bf[3]);
            }
        }
        const int c0 = it * PM_BN;
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < PM_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int key = c0 + n * 8 + 2 * tq + (e & 1), row = r0 + 8 * (e / 2);
                const int vis = key < nk && (!causal || key <= row + a.causal_plus);
                s[n][e] = vis ? s[n][e] * g.s_mul : -INFINITY;
                mx[e / 2] = fmaxf(mx[e / 2], s[n][e]);
            }
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float mn = fmaxf(m[r], mx[r]);
            /* a row that sees no key of this tile yet (causal, or a padding row): keep it at -inf without NaN */
            corr[r] = mn == -INFINITY ? 1.0f : exp2f(m[r] - mn);
            m[r] = mn;
            l[r] *= corr[r];
        }
        uint32_t pa[PM_BN / 16][4]; /* P as the A operand of P V, straight from the S fragments */
#pragma unroll
        for (int n = 0; n < PM_BN / 8; n++) {
            float p[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float mr = m[e / 2];
                p[e] = mr == -INFINITY ? 0.0f : exp2f(s[n][e] - mr);
                l[e / 2] += p[e];
            }
            pa[n / 2][(n % 2) * 2] = tc_pack(p[0], p[1]);
            pa[n / 2][(n % 2) * 2 + 1] = tc_pack(p[2], p[3]);
        }
#pragma unroll
        for (int n = 0; n < PM_VMAX / 8; n++) {
            o[n][0] *= corr[0];
            o[n][1] *= corr[0];
            o[n][2] *= corr[1];
            o[n][3] *= corr[1];
        }
#pragma unroll
        for (int kk = 0; kk < PM_BN / 16; kk++) {
            const uint16_t *vr = vt + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * g.ldv + (lane / 16) * 8;
#pragma unroll
            for (int np = 0; np < PM_VMAX / 16; np++)
                if (2 * np < nv) {
                    uint32_t bf[4];
                    tc_ldsm4_t(bf, tc_smem(vr + np * 16));
                    tc_mma(o[2 * np], pa[kk], bf[0], bf[1]);
                    tc_mma(o[2 * np + 1], pa[kk], bf[2], bf[3]);
                }
        }
        __syncthreads(); /* stage it & 1 consumed */
        issue(it + 2);
        tc_commit();
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
        for (int n = 0; n < PM_VMAX / 8; n++) {
            o[n][2 * r] *= inv;
            o[n][2 * r + 1] *= inv;
        }
        lse[r] = l[r] > 0.0f ? (m[r] + log2f(l[r])) * 0.69314718055994531f : -INFINITY;
    }
}

template <int CH> __global__ void __launch_bounds__(PM_THREADS) k_attn_prefill_mma(gpu_prefill_args a, pm_geom g)
{
    extern __shared__ __align__(16) uint16_t pm_mem[];
    uint16_t *qs = pm_mem, *ks = qs + PM_BM * g.ldk, *vs = ks + 2 * PM_BN * g.ldk;
    const gpu_seq s = a.seqs[blockIdx.y];
    /* the last query tiles (the most keys under the causal mask) first: a shorter tail */
    const int h = blockIdx.z, row0 = (gridDim.x - 1 - blockIdx.x) * PM_BM;
    if (row0 >= s.n_new) return; /* the whole block: fewer new tokens in this sequence */
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gq = lane / 4, tq = lane % 4, L = a.p + a.r;
    /* Q rows (zero past the sequence's new tokens) and the zero pad columns of Q, K and V */
    for (int i = threadIdx.x; i < PM_BM * g.lqk; i += PM_THREADS) {
        const int row = i / g.lqk, e = i - row * g.lqk, tok = row0 + row;
        uint16_t x = 0;
        if (tok < s.n_new && e < L) {
            const int64_t t = s.tok0 + tok;
            x = e < a.p ? a.q_nope[(t * a.h + h) * a.p + e] : a.q_pe[(t * a.h + h) * a.r + e - a.p];
        }
        qs[row * g.ldk + e] = x;
    }
    for (int i = threadIdx.x; i < 2 * PM_BN * (g.lqk - L); i += PM_THREADS)
        ks[(i / (g.lqk - L)) * g.ldk + L + i % (g.lqk - L)] = 0;
    for (int i = threadIdx.x; i < 2 * PM_BN * (g.lv - a.v); i += PM_THREADS)
        vs[(i / (g.lv - a.v)) * g.ldv + a.v + i % (g.lv - a.v)] = 0;

    /* new part: keys = new tokens up to the block's last row (+ causal_plus) */
    const int last = min(row0 + PM_BM, s.n_new) - 1, nk_new = min(s.n_new, last + 1 + a.causal_plus);
    float ob[PM_VMAX / 8][4], lb[2];
    pm_part<CH>(a, g, h, s.ws0 + s.n_past, nk_new, 1, row0, qs, ks, vs, ob, lb);
    float lse_out[2] = {lb[0], lb[1]};
    if (s.n_past > 0) {
        float oa[PM_VMAX / 8][4], la[2];
        pm_part<CH>(a, g, h, s.ws0, s.n_past, 0, row0, qs, ks, vs, oa, la);
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float xa = a.lse_bf16 ? gd_round_bf16(la[r]) : la[r], xb = a.lse_bf16 ? gd_round_bf16(lb[r]) : lb[r];
            float mm = fmaxf(xa, xb), wa = expf(xa - mm), wb = expf(xb - mm);
            float fa = wa / (wa + wb), fb = wb / (wa + wb);
#pragma unroll
            for (int n = 0; n < PM_VMAX / 8; n++) {
                ob[n][2 * r] = gd_round_bf16(oa[n][2 * r]) * fa + gd_round_bf16(ob[n][2 * r]) * fb;
                ob[n][2 * r + 1] = gd_round_bf16(oa[n][2 * r + 1]) * fa + gd_round_bf16(ob[n][2 * r + 1]) * fb;
            }
            lse_out[r] = logf(wa + wb) + mm;
        }
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int tok = row0 + warp * 16 + gq + 8 * r;
        if (tok >= s.n_new) continue;
        const int64_t t = s.tok0 + tok;
        uint16_t *dst = a.out + (t * a.h + h) * a.v;
#pragma unroll
        for (int n = 0; n < PM_VMAX / 8; n++) {
            const int d = n * 8 + 2 * tq;
            if (d < a.v) {
                uint32_t pk = (uint32_t)gd_f32_to_bf16(ob[n][2 * r]) | (uint32_t)gd_f32_to_bf16(ob[n][2 * r + 1]) << 16;
                *reinterpret_cast<uint32_t *>(dst + d) = pk;
            }
        }
        if (tq == 0) a.lse[t * a.h + h] = lse_out[r];
    }
}

extern "C" int gpu_prefill_mma_fits(int p, int r, int v)
{
    return p > 0 && r > 0 && v > 0 && p % 2 == 0 && r % 2 == 0 && v % 2 == 0 && p + r <= PM_QKMAX && v <= PM_VMAX;
}

template <int CH> static mla_status pm_launch(hipStream_t st, const gpu_prefill_args *a, const pm_geom &g)
{
    size_t shm = ((size_t)PM_BM * g.ldk + (size_t)2 * PM_BN * g.ldk + (size_t)2 * PM_BN * g.ldv) * 2;
    static size_t attr = 0; /* > 48 KB of dynamic shared memory needs the opt-in */
    if (shm > attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_mma<CH>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
        attr = shm;
    }
    dim3 grid((a->max_new + PM_BM - 1) / PM_BM, a->n_seqs, a->h);
    k_attn_prefill_mma<CH><<<grid, PM_THREADS, shm, st>>>(*a, g);
    MLA_HIP_LAUNCHED("k_attn_prefill_mma");
    return MLA_OK;
}

extern "C" mla_status gpu_attn_prefill_mma(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_mma_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: mma prefill: P %d, R %d, V %d do not fit", a->p, a->r, a->v);
    /* DeepSeek's head sizes: the wgmma kernel (2.3x this one at P1 8k and 16k, H200 2026-12-01,
     * gpu/bench/KERNELS.md; the same 64-key tiles): pipelined with a producer warpgroup (ws) unless
     * MLA_GPU_PREFILL_WS=0 (pipelined, the consumers copy) or MLA_GPU_PREFILL_PIPE=0 (serial); the opt-in
     * variants of the pipelined one first: S over 128 keys (MLA_GPU_PREFILL_WIDE=1), warpgroup turns
     * (MLA_GPU_PREFILL_PONG=1) */
    if (gpu_prefill_wg_fits(a->p, a->r, a->v)) {
        if (!gpu_prefill_pipe_on()) return gpu_attn_prefill_wg(st, a);
        if (gpu_prefill_wide_on()) return gpu_attn_prefill_wide(st, a);
        if (gpu_prefill_pong_on()) return gpu_attn_prefill_pong(st, a);
        return gpu_prefill_ws_on() ? gpu_attn_prefill_ws(st, a) : gpu_attn_prefill_pipe(st, a);
    }
    if (PM_BN != mla_attn_tc_tile(0, a->h, 0)) /* the tiles the reference emulates (attn_tc) */
        return mla_errorf(MLA_ERR_INVALID, "gpu: mma prefill tile disagrees with mla_attn_tc_tile");
    pm_geom g;
    g.lqk = (a->p + a->r + 15) / 16 * 16;
    g.ldk = pm_stride(g.lqk);
    g.lv = (a->v + 15) / 16 * 16;
    g.ldv = pm_stride(g.lv);
    g.s_mul = a->scale * 1.4426950408889634f;
    /* 16-byte copies when every segment (k_nope, k_pe, v) and row start is 16-byte aligned, else 4 */
    const int al16 = a->p % 8 == 0 && a->r % 8 == 0 && a->v % 8 == 0;
    return al16 ? pm_launch<16>(st, a, g) : pm_launch<4>(st, a, g);
}

#endif
