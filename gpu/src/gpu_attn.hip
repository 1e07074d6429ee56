/* gpu_attn.hip: MLA attention kernels.
 *  - prefill (naive / MHA form): one block per (token, head); online softmax over the cached-context
 *    keys and, separately, over the new keys (causal), then the two parts merged by LSE (mla-spec.md
 *    §g.13) in fp32, as chunked prefill does.
 *  - decode (absorbed / MQA form): one block per (token, head, KV split) over the paged latent cache,
 *    each split writes a normalized partial output and its LSE; a combine kernel merges the splits.
 *    MLA_GPU_DECODE=tiled: one block per (token, 8 heads, split) sharing each cache tile in shared
 *    memory (gpu_decode_tile.h); mma: tensor cores (gpu_decode_mma.hip). Same partial
 *    outputs, same combine.
 *  - prefill, opt-in (MLA_GPU_PREFILL=tiled): one block per (32 query rows, head) sharing each key
 *    tile (gpu_prefill_tile.h), same parts, roundings and merge as the per-token kernel;
 *    MLA_GPU_PREFILL=mma: tensor cores (gpu_prefill_mma.hip), P rounded to bf16.
 * Scores, softmax and P.V are fp32; outputs are rounded to bf16 once. */
#include "gpu_decode_tile.h"
#include "gpu_prefill_tile.h"
#include "gpu_internal.h"
#include "gpu_kv.h"

#define AT_THREADS 128
#define AT_NW (AT_THREADS / MLA_WARP)
#define AT_NK 32   /* keys per chunk */
#define AT_VMAX 2  /* prefill: V <= 256 */
#define AT_CMAX 4  /* decode: C <= 512 */

__device__ __forceinline__ float at_bf16_lse(float x, int on) { return on ? gd_round_bf16(x) : x; }

/* Online softmax over ws rows [j0, j1) of one (token, head); returns m and l, acc unnormalized. */
__device__ void prefill_segment(const gpu_prefill_args &a, const float *q, float *sc, int h, int j0, int j1,
                                float &m, float &l, float *acc)
{
    int lane = threadIdx.x % MLA_WARP, w = threadIdx.x / MLA_WARP;
    int64_t ld = (int64_t)a.h * (a.p + a.v);
    m = -INFINITY;
    l = 0.0f;
    for (int c0 = j0; c0 < j1; c0 += AT_NK) {
        int n = min(AT_NK, j1 - c0);
        for (int jj = w; jj < n; jj += AT_NW) {
            int64_t j = c0 + jj;
            const uint16_t *kn = a.kvx + j * ld + (int64_t)h * (a.p + a.v);
            const uint16_t *kp = a.ws_kpe + j * a.r;
            float d = 0.0f;
            for (int e = lane; e < a.p + a.r; e += MLA_WARP)
                d += q[e] * gd_bf16_to_f32(e < a.p ? kn[e] : kp[e - a.p]);
            d = mla_warp_sum(d);
            if (lane == 0) sc[jj] = d * a.scale;
        }
        __syncthreads();
        float mc = m;
        for (int jj = 0; jj < n; jj++) mc = fmaxf(mc, sc[jj]);
        float corr = expf(m - mc); /* m = -inf on the first chunk: exp(-inf) = 0 */
        l *= corr;
        for (int k = 0; k < AT_VMAX; k++) acc[k] *= corr;
        for (int jj = 0; jj < n; jj++) {
            float p = expf(sc[jj] - mc);
            l += p;
            const uint16_t *vr = a.kvx + (int64_t)(c0 + jj) * ld + (int64_t)h * (a.p + a.v) + a.p;
            for (int k = 0; k < AT_VMAX; k++) {
                int d = threadIdx.x + k * AT_THREADS;
                if (d < a.v) acc[k] += p * gd_bf16_to_f32(vr[d]);
            }
        }
        m = mc;
        __syncthreads();
    }
}

__global__ void __launch_bounds__(AT_THREADS) k_attn_prefill(gpu_prefill_args a)
{
    extern __shared__ float sh[];
    float *q = sh, *sc = sh + a.p + a.r;
    int t = blockIdx.x, h = blockIdx.y;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    int i = t - s.tok0, pos = s.n_past + i;
    for (int e = threadIdx.x; e < a.p + a.r; e += AT_THREADS) {
        const uint16_t *src = e < a.p ? a.q_nope + ((int64_t)t * a.h + h) * a.p + e
                                      : a.q_pe + ((int64_t)t * a.h + h) * a.r + (e - a.p);
        q[e] = gd_bf16_to_f32(*src);
    }
    __syncthreads();
    int total = s.n_past + s.n_new;
    int end = min(pos + 1 + a.causal_plus, total);
    float mb, lb, ab[AT_VMAX] = {0.0f, 0.0f};
    prefill_segment(a, q, sc, h, s.ws0 + s.n_past, s.ws0 + end, mb, lb, ab);
    float lse = mb + logf(lb), o[AT_VMAX];
    for (int k = 0; k < AT_VMAX; k++) o[k] = ab[k] / lb;
    if (s.n_past > 0) {
        float ma, la, aa[AT_VMAX] = {0.0f, 0.0f};
        prefill_segment(a, q, sc, h, s.ws0, s.ws0 + s.n_past, ma, la, aa);
        /* as chunked prefill: each part's output is stored bf16 before the fp32 merge */
        float lse_a = at_bf16_lse(ma + logf(la), a.lse_bf16), lse_b = at_bf16_lse(lse, a.lse_bf16);
        float mm = fmaxf(lse_a, lse_b), wa = expf(lse_a - mm), wb = expf(lse_b - mm);
        float fa = wa / (wa + wb), fb = wb / (wa + wb);
        for (int k = 0; k < AT_VMAX; k++)
            o[k] = gd_round_bf16(aa[k] / la) * fa + gd_round_bf16(o[k]) * fb;
        lse = logf(wa + wb) + mm;
    }
    for (int k = 0; k < AT_VMAX; k++) {
        int d = threadIdx.x + k * AT_THREADS;
        if (d < a.v) a.out[((int64_t)t * a.h + h) * a.v + d] = gd_f32_to_bf16(o[k]);
    }
    if (threadIdx.x == 0) a.lse[(int64_t)t * a.h + h] = lse;
}

/* The query-tiled prefill: gpu_prefill_tile.h's steps with a barrier after each. */
__device__ void pt_run_part(const pt_args &a, pt_block &b, pt_shared &sh, int tid, int ctx, float (&acc)[PT_ACC])
{
    for (int k = 0; k < PT_ACC; k++) acc[k] = 0.0f;
    pt_part_begin(a, b, sh, tid, ctx);
    __syncthreads();
    for (int c0 = b.k0; c0 < b.k1; c0 += PT_NK) {
        int n = min(PT_NK, b.k1 - c0);
        pt_load_kv(a, b, sh, tid, c0, n);
        __syncthreads();
        pt_scores(a, sh, tid, n);
        __syncthreads();
        pt_softmax(a, b, sh, tid, c0, n);
        __syncthreads();
        pt_pv(a, sh, tid, n, acc);
        __syncthreads();
    }
}

__global__ void __launch_bounds__(PT_THREADS) k_attn_prefill_tiled(pt_args a)
{
    __shared__ pt_shared sh;
    pt_block b = pt_block_of(a, blockIdx.x, blockIdx.y, blockIdx.z);
    if (b.rows <= 0) return; /* the whole block: the sequence has fewer new tokens */
    const int tid = threadIdx.x;
    float acc[PT_ACC], keep[PT_ACC];
    pt_load_q(a, b, sh, tid);
    pt_run_part(a, b, sh, tid, 0, acc);
    pt_part_end_new(a, sh, tid, acc, keep);
    __syncthreads();
    if (b.s.n_past > 0) {
        pt_run_part(a, b, sh, tid, 1, acc);
        pt_part_end_ctx(a, sh, tid);
        __syncthreads();
    }
    pt_store(a, b, sh, tid, acc, keep);
}

extern "C" mla_status gpu_attn_prefill(hipStream_t st, const gpu_prefill_args *a)
{
    if (a->t <= 0) return MLA_OK;
    if (a->kernel == GPU_PREFILL_MMA && gpu_prefill_mma_fits(a->p, a->r, a->v)) return gpu_attn_prefill_mma(st, a);
    if (a->kernel == GPU_PREFILL_TILED && pt_fits(a->p, a->r, a->v)) {
        const pt_args pa = {.q_nope = a->q_nope, .q_pe = a->q_pe, .kvx = a->kvx, .ws_kpe = a->ws_kpe,
                            .seqs = a->seqs, .out = a->out, .lse = a->lse, .h = a->h, .p = a->p, .r = a->r,
                            .v = a->v, .scale = a->scale, .causal_plus = a->causal_plus, .lse_bf16 = a->lse_bf16};
        dim3 grid((a->max_new + PT_QT - 1) / PT_QT, a->n_seqs, a->h);
        k_attn_prefill_tiled<<<grid, PT_THREADS, 0, st>>>(pa);
        MLA_HIP_LAUNCHED("k_attn_prefill_tiled");
        return MLA_OK;
    }
    dim3 grid(a->t, a->h, 1);
    size_t shm = (size_t)(a->p + a->r + AT_NK) * sizeof(float);
    k_attn_prefill<<<grid, AT_THREADS, shm, st>>>(*a);
    MLA_HIP_LAUNCHED("k_attn_prefill");
    return MLA_OK;
}

__global__ void __launch_bounds__(AT_THREADS) k_attn_decode(gpu_decode_args a)
{
    extern __shared__ float sh[];
    const int c = a.kv.codec.c, r = a.kv.codec.r;
    float *q = sh, *sc = sh + c + r;
    __shared__ const uint8_t *rows[AT_NK];
    int t = blockIdx.x, h = blockIdx.y, sp = blockIdx.z;
    int lane = threadIdx.x % MLA_WARP, w = threadIdx.x / MLA_WARP;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    int j0, j1;
    kv_split_rows(s, t, a.causal_plus, a.splits, a.split_len, sp, &j0, &j1);
    for (int e = threadIdx.x; e < c + r; e += AT_THREADS)
        q[e] = e < c ? a.q_abs[((int64_t)t * a.h + h) * c + e] : a.q_pe[((int64_t)t * a.h + h) * r + e - c];
    __syncthreads();
    float m = -INFINITY, l = 0.0f, acc[AT_CMAX] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int c0 = j0; c0 < j1; c0 += AT_NK) {
        int n = min(AT_NK, j1 - c0);
        if ((int)threadIdx.x < n) rows[threadIdx.x] = kv_row(a.kv, s.slot, c0 + threadIdx.x);
        __syncthreads();
        for (int jj = w; jj < n; jj += AT_NW) {
            float d = 0.0f;
            for (int e = lane; e < c + r; e += MLA_WARP) d += q[e] * kv_load(a.kv, rows[jj], e);
            d = mla_warp_sum(d);
            if (lane == 0) sc[jj] = d * a.scale;
        }
        __syncthreads();
        float mc = m;
        for (int jj = 0; jj < n; jj++) mc = fmaxf(mc, sc[jj]);
        float corr = expf(m - mc);
        l *= corr;
        for (int k = 0; k < AT_CMAX; k++) acc[k] *= corr;
        for (int jj = 0; jj < n; jj++) {
            float p = expf(sc[jj] - mc);
            l += p;
            for (int k = 0; k < AT_CMAX; k++) {
                int e = threadIdx.x + k * AT_THREADS;
                if (e < c) acc[k] += p * kv_load(a.kv, rows[jj], e);
            }
        }
        m = mc;
        __syncthreads();
    }
    int64_t pi = ((int64_t)t * a.h + h) * a.splits + sp;
    for (int k = 0; k < AT_CMAX; k++) {
        int e = threadIdx.x + k * AT_THREADS;
        if (e < c) a.part_o[pi * c + e] = l > 0.0f ? acc[k] / l : 0.0f;
    }
    if (threadIdx.x == 0) a.part_lse[pi] = l > 0.0f ? m + logf(l) : -INFINITY;
}

/* Merge the splits of one (token, head): fp32, each split's weight exp(lse_s - max) / sum formed before
 * it multiplies that split's output, the terms added in split order; a split of LSE -inf adds nothing
 * (an empty one), a NaN propagates. MLA_GPU_COMBINE=0: the first form (k_attn_combine_serial), which
 * every thread recomputed the weights in, for every output element, and loaded one float a split
 * at a time; this one stages the LSEs and weights in shared memory once and merges four adjacent
 * outputs a thread with float4 loads of eight splits in flight. Same operations on the same values in
 * the same order: bit-identical. */
#define AT_WCH 256 /* splits whose weights are staged at a time (decode picks at most 64) */
__global__ void __launch_bounds__(AT_THREADS) k_attn_combine(gpu_decode_args a)
{
    __shared__ float w_sh[AT_WCH], mw[2];
    const int t = blockIdx.x, h = blockIdx.y, c = a.kv.codec.c, S = a.splits, tid = threadIdx.x;
    const int64_t base = ((int64_t)t * a.h + h) * S;
    const int round = a.lse_bf16 && S > 1, staged = S <= AT_WCH;
    if (staged)
        for (int s = tid; s < S; s += AT_THREADS) w_sh[s] = at_bf16_lse(a.part_lse[base + s], round);
    __syncthreads();
    if (tid == 0) {
        float mm = -INFINITY, wsum = 0.0f;
        for (int s = 0; s < S; s++) mm = fmaxf(mm, staged ? w_sh[s] : at_bf16_lse(a.part_lse[base + s], round));
        for (int s = 0; s < S; s++) {
            const float ls = staged ? w_sh[s] : at_bf16_lse(a.part_lse[base + s], round);
            if (ls != -INFINITY) wsum += expf(ls - mm);
        }
        mw[0] = mm;
        mw[1] = wsum;
    }
    __syncthreads(); /* mw written */
    const float mm = mw[0], wsum = mw[1];
    auto weight = [&](float ls) { return ls == -INFINITY ? -INFINITY : expf(ls - mm) / wsum; }; /* -inf: adds nothing */
    if (staged)
        for (int s = tid; s < S; s += AT_THREADS) w_sh[s] = weight(w_sh[s]);
    const float *po = a.part_o + base * c;
    for (int eb = 0; eb < c; eb += 4 * AT_THREADS) {
        const int e = eb + 4 * tid;
        float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int s0 = 0; s0 < S; s0 += AT_WCH) {
            const int n = min(AT_WCH, S - s0);
            if (!staged) {
                __syncthreads(); /* the last chunk's weights read */
                for (int s = tid; s < n; s += AT_THREADS) w_sh[s] = weight(at_bf16_lse(a.part_lse[base + s0 + s], round));
            }
            __syncthreads();
            if (c % 4 == 0 && e < c) {
#pragma unroll 8
                for (int s = 0; s < n; s++) {
                    const float4 p = *reinterpret_cast<const float4 *>(po + (int64_t)(s0 + s) * c + e);
                    const float w = w_sh[s];
                    if (w != -INFINITY) {
                        o[0] += p.x * w;
                        o[1] += p.y * w;
                        o[2] += p.z * w;
                        o[3] += p.w * w;
                    }
                }
            } else {
                for (int k = 0; k < 4 && e + k < c; k++)
                    for (int s = 0; s < n; s++)
                        if (w_sh[s] != -INFINITY) o[k] += po[(int64_t)(s0 + s) * c + e + k] * w_sh[s];
            }
        }
        for (int k = 0; k < 4 && e + k < c; k++) a.o_lat[((int64_t)t * a.h + h) * c + e + k] = gd_f32_to_bf16(o[k]);
    }
    if (tid == 0) a.lse[(int64_t)t * a.h + h] = logf(mw[1]) + mw[0];
}

/* The first combine (MLA_GPU_COMBINE=0): every thread forms the weights again for each of its outputs. */
__global__ void __launch_bounds__(AT_THREADS) k_attn_combine_serial(gpu_decode_args a)
{
    int t = blockIdx.x, h = blockIdx.y, c = a.kv.codec.c;
    int64_t base = ((int64_t)t * a.h + h) * a.splits;
    int round = a.lse_bf16 && a.splits > 1;
    float mm = -INFINITY;
    for (int s = 0; s < a.splits; s++) mm = fmaxf(mm, at_bf16_lse(a.part_lse[base + s], round));
    float wsum = 0.0f;
    for (int s = 0; s < a.splits; s++) {
        float ls = at_bf16_lse(a.part_lse[base + s], round);
        if (ls != -INFINITY) wsum += expf(ls - mm);
    }
    for (int e = threadIdx.x; e < c; e += AT_THREADS) {
        float o = 0.0f;
        for (int s = 0; s < a.splits; s++) {
            float ls = at_bf16_lse(a.part_lse[base + s], round);
            if (ls == -INFINITY) continue;
            o += a.part_o[(base + s) * c + e] * (expf(ls - mm) / wsum);
        }
        a.o_lat[((int64_t)t * a.h + h) * c + e] = gd_f32_to_bf16(o);
    }
    if (threadIdx.x == 0) a.lse[(int64_t)t * a.h + h] = logf(wsum) + mm;
}

/* The head-grouped decode: gpu_decode_tile.h's steps with a barrier after each. */
__global__ void __launch_bounds__(DT_THREADS) k_attn_decode_tiled(dt_args a)
{
    extern __shared__ float dt_mem[];
    dt_shared &sh = *reinterpret_cast<dt_shared *>(dt_mem);
    const dt_block b = dt_block_of(a, blockIdx.x, blockIdx.y, blockIdx.z);
    const int tid = threadIdx.x;
    float acc[DT_HG][DT_CPT];
    for (int hh = 0; hh < DT_HG; hh++)
        for (int k = 0; k < DT_CPT; k++) acc[hh][k] = 0.0f;
    dt_load_q(a, b, sh, tid);
    __syncthreads();
    for (int c0 = b.j0; c0 < b.j1; c0 += DT_NK) {
        int n = min(DT_NK, b.j1 - c0);
        dt_load_tile(a, b, sh, tid, c0, n);
        __syncthreads();
        dt_scores(a, sh, tid, n);
        __syncthreads();
        dt_softmax(a, sh, tid, n);
        __syncthreads();
        dt_pv(a, sh, tid, n, acc);
        __syncthreads(); /* the next tile overwrites k and p */
    }
    dt_store(a, b, sh, tid, acc);
}

extern "C" gpu_decode_kernel gpu_decode_pick(int kernel, const gpu_kv_desc *kv, int h)
{
    if (kernel == GPU_DECODE_MMA && gpu_decode_mma_fits(kv, h)) return GPU_DECODE_MMA;
    if (kernel == GPU_DECODE_TILED && dt_fits(kv->codec.c, kv->codec.r)) return GPU_DECODE_TILED;
    return GPU_DECODE_FIRST;
}

extern "C" int gpu_decode_blocks(int t, int h, gpu_decode_kernel k, const gpu_kv_desc *kv)
{
    if (k == GPU_DECODE_MMA) {
        int hm = gpu_decode_mma_heads(kv, h);
        return t * ((h + hm - 1) / hm);
    }
    return k == GPU_DECODE_TILED ? t * ((h + DT_HG - 1) / DT_HG) : t * h;
}

/* SIMT kernels: enough (token, head, split) blocks for two waves, no split under 64 keys, at most 64
 * splits. The mma kernel runs one block per SM: the split count that minimizes waves x (keys per
 * split + 64), the 64 standing for a block's fixed cost (query load, first tile, output), with at
 * least 256 keys per split (a split is a term of the fp32 LSE combine, and under the lse-bf16 fault a
 * rounding: one split per key made that fault's error 6e-2 on tiny-v3, H200 2026-12-01). */
extern "C" int gpu_decode_splits(int blocks, int max_kv, int n_sm, gpu_decode_kernel k)
{
    int s = 1;
    if (k != GPU_DECODE_MMA) {
        while (s < 64 && blocks * s < 2 * n_sm && max_kv / (2 * s) >= 64) s *= 2;
        return s;
    }
    long best = -1;
    int most = max_kv / 256 > 1 ? max_kv / 256 : 1; /* >= 256 keys a split: each split costs a combine term */
    for (int c = 1; c <= 64 && c <= most; c++) {
        long waves = ((long)blocks * c + n_sm - 1) / n_sm, cost = waves * ((max_kv + c - 1) / c + 64);
        if (best < 0 || cost < best) {
            best = cost;
            s = c;
        }
    }
    return s;
}

/* MLA_GPU_DECODE_BALANCE=1, read once: the tensor-core kernels may take runs of one length where the tokens'
 * key counts differ (sp_pick says when); unset, gpu_decode_splits' equal runs. Opt-in because it lost at 128 heads where
 * measured (gpu/bench/KERNELS.md, "split plan"). */
extern "C" gpu_split_plan gpu_decode_plan(const int *tot, int n, int groups, int n_sm, gpu_decode_kernel k)
{
    static const int on = gpu_env_switch("MLA_GPU_DECODE_BALANCE", 1);
    int mx = 1;
    for (int i = 0; i < n; i++) mx = tot[i] > mx ? tot[i] : mx;
    const int equal = gpu_decode_splits(n * groups, mx, n_sm, k);
    if (!on || k != GPU_DECODE_MMA) return gpu_split_plan{equal, 0};
    return sp_pick(tot, n, groups, n_sm, equal);
}

extern "C" mla_status gpu_attn_decode(hipStream_t st, const gpu_decode_args *a)
{
    if (a->t <= 0) return MLA_OK;
    const gpu_decode_kernel k = gpu_decode_pick(a->kernel, &a->kv, a->h);
    if (k == GPU_DECODE_MMA) {
        mla_status s = gpu_attn_decode_mma(st, a);
        if (s != MLA_OK) return s;
    } else if (k == GPU_DECODE_TILED) {
        static int attr_set = 0; /* > 48 KB of dynamic shared memory needs the opt-in once */
        if (!attr_set) {
            MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_tiled),
                                              hipFuncAttributeMaxDynamicSharedMemorySize, (int)sizeof(dt_shared)));
            attr_set = 1;
        }
        const dt_args da = {.q_abs = a->q_abs, .q_pe = a->q_pe, .kv = a->kv, .tok_seq = a->tok_seq,
                            .seqs = a->seqs, .part_o = a->part_o, .part_lse = a->part_lse, .t = a->t, .h = a->h,
                            .splits = a->splits, .split_len = a->split_len, .scale = a->scale,
                            .causal_plus = a->causal_plus};
        dim3 grid(a->t, (a->h + DT_HG - 1) / DT_HG, a->splits);
        k_attn_decode_tiled<<<grid, DT_THREADS, sizeof(dt_shared), st>>>(da);
        MLA_HIP_LAUNCHED("k_attn_decode_tiled");
    } else {
        dim3 grid(a->t, a->h, a->splits);
        size_t shm = (size_t)(a->kv.codec.c + a->kv.codec.r + AT_NK) * sizeof(float);
        k_attn_decode<<<grid, AT_THREADS, shm, st>>>(*a);
        MLA_HIP_LAUNCHED("k_attn_decode");
    }
    static const int serial = gpu_env_off("MLA_GPU_COMBINE");
    dim3 g2(a->t, a->h, 1);
    if (serial)
        k_attn_combine_serial<<<g2, AT_THREADS, 0, st>>>(*a);
    else
        k_attn_combine<<<g2, AT_THREADS, 0, st>>>(*a);
    MLA_HIP_LAUNCHED("k_attn_combine");
    return MLA_OK;
}
